// `mesh-migrate --help` prints the root help oclif rendered at build time without loading oclif (issue 11
// §3, bin/run.js): it must be byte for byte what oclif prints, with and without colour, and oclif must
// still render it whenever something could change it (another width, a theme, user plugins).
import {mkdir, mkdtemp, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import {describe, expect, it} from 'vitest'

import {runCli} from '../support/cli.js'

// oclif's debug output (DEBUG=*) shows whether oclif was loaded: it logs its config loading on stderr.
const loadedOclif = (stderr: string) => /config/.test(stderr)

describe('root help without oclif', () => {
  it('is what oclif renders, without and with colour, for --help and -h', async () => {
    for (const env of [{NO_COLOR: '1'}, {NO_COLOR: '', FORCE_COLOR: '1'}]) {
      for (const flag of ['--help', '-h']) {
        const fast = await runCli([flag], {env: {...env, DEBUG: '*'}})
        // OCLIF_COLUMNS=80 is the same width, and sends the help through oclif.
        const oclif = await runCli([flag], {env: {...env, DEBUG: '*', OCLIF_COLUMNS: '80'}})
        expect(fast.code).toBe(0)
        expect(loadedOclif(fast.stderr), fast.stderr).toBe(false)
        expect(loadedOclif(oclif.stderr)).toBe(true)
        expect(fast.stdout).toBe(oclif.stdout)
        expect(fast.stdout).toMatch(/VERSION(\u001B\[22m)?\n {2}mesh-migrate\/0\.\d+\.\d+ \S+ node-v/)
        expect(fast.stdout).toContain('inventory')
        if (env.FORCE_COLOR) expect(fast.stdout).toContain('\u001B[1mCOMMANDS\u001B[22m')
        else expect(fast.stdout).not.toContain('\u001B[')
      }
    }
  })

  it('leaves the help to oclif when a theme or user plugins could change it, or another width is asked for', async () => {
    const home = await mkdtemp(path.join(os.tmpdir(), 'mesh-migrate-help-home-'))
    await mkdir(path.join(home, 'config', 'mesh-migrate'), {recursive: true})
    await writeFile(path.join(home, 'config', 'mesh-migrate', 'theme.json'), '{}')
    await mkdir(path.join(home, 'data', 'mesh-migrate'), {recursive: true})
    await writeFile(path.join(home, 'data', 'mesh-migrate', 'package.json'), '{}')
    for (const env of [
      {XDG_CONFIG_HOME: path.join(home, 'config')},
      {XDG_DATA_HOME: path.join(home, 'data')},
      {OCLIF_COLUMNS: '120'},
    ]) {
      const r = await runCli(['--help'], {env: {...env, DEBUG: '*'}})
      expect(r.code).toBe(0)
      expect(loadedOclif(r.stderr), JSON.stringify(env)).toBe(true)
    }
    // Help of a command, or anything else, is oclif's as before.
    expect(loadedOclif((await runCli(['inventory', '--help'], {env: {DEBUG: '*'}})).stderr)).toBe(true)
  })
})
