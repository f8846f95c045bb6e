// Issue 20 §1, §7: names and files from input are checked before they become paths or requests, and reading is
// bounded; each refusal is a usage/input error (exit 2) within seconds, and nothing is written outside plans/.
import {execFileSync} from 'node:child_process'
import {copyFile, mkdir, mkdtemp, readdir, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import {describe, expect, it} from 'vitest'

import {hasStackTrace, runCli} from '../support/cli.js'

const tmp = () => mkdtemp(path.join(os.tmpdir(), 'mesh-migrate-untrusted-'))

describe('untrusted names and files', () => {
  it('plan ../../etc and unlock ../x are usage errors (exit 2), before any file or request', async () => {
    const cwd = await tmp()
    for (const args of [
      ['plan', '../../etc', '--manifests', 'nowhere'],
      ['unlock', '../x', '--confirm', '../x', '--kubeconfig', 'nowhere'],
      ['inventory', 'a/b', '--manifests', 'nowhere'],
    ]) {
      const r = await runCli(args, {cwd})
      expect(r.code, r.stderr).toBe(2)
      expect(hasStackTrace(r.stderr)).toBe(false)
      expect(r.stderr).toMatch(/NAMESPACE: ".*" is not an RFC 1123 label/)
    }
    expect(await readdir(cwd)).toEqual([])
  })

  it('plan -A of a repository with a Namespace named ../../x/pwned writes nothing (exit 2, the name reported)', async () => {
    const cwd = await tmp()
    const repo = path.join(cwd, 'repo')
    await mkdir(repo)
    await writeFile(
      path.join(repo, 'ns.yaml'),
      'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ../../x/pwned\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: ../../x/pwned\nspec: {}\n',
    )
    const r = await runCli(['plan', '-A', '--manifests', 'repo'], {cwd})
    expect(r.code, r.stderr).toBe(2)
    expect(r.stderr).toContain('repo/ns.yaml:1: Namespace name "../../x/pwned" is not an RFC 1123 label')
    expect(await readdir(cwd)).toEqual(['repo'])
    expect(await readdir(path.dirname(cwd))).not.toContain('pwned.yaml')
  })

  it('--manifests /dev/zero and a FIFO are refused at once (exit 2)', async () => {
    const cwd = await tmp()
    const fifo = path.join(cwd, 'fifo.yaml')
    execFileSync('mkfifo', [fifo])
    for (const source of ['/dev/zero', fifo]) {
      const r = await runCli(['plan', 'bookinfo', '--manifests', source], {cwd})
      expect(r.code, r.stderr).toBe(2)
      expect(r.stderr).toMatch(/is not a regular file \((a device|a FIFO)\)/)
    }
    const r = await runCli(['validate', fifo], {cwd})
    expect(r.code, r.stderr).toBe(4)
    expect(r.stderr).toContain('is not a regular file')
  })

  it('a manifest over MESH_MIGRATE_MAX_INPUT_BYTES is refused (exit 2), naming the limit and how to raise it', async () => {
    const cwd = await tmp()
    await writeFile(path.join(cwd, 'big.yaml'), `# ${'x'.repeat(2000)}\n`)
    const r = await runCli(['plan', 'bookinfo', '--manifests', 'big.yaml'], {
      cwd,
      env: {MESH_MIGRATE_MAX_INPUT_BYTES: '1000'},
    })
    expect(r.code, r.stderr).toBe(2)
    expect(r.stderr).toContain('over the input limit of 1000 bytes (set MESH_MIGRATE_MAX_INPUT_BYTES to raise it)')
  })

  it('a plan file over the limit is an invalid plan for apply, rollback and validate (exit 4, InvalidPlanError)', async () => {
    const cwd = await tmp()
    await mkdir(path.join(cwd, 'plans'))
    await copyFile('plans/examples/bookinfo.yaml', path.join(cwd, 'plans', 'bookinfo.yaml'))
    const env = {MESH_MIGRATE_MAX_INPUT_BYTES: '1000', KUBECONFIG: '/nonexistent/kubeconfig'}
    for (const args of [
      ['apply', 'bookinfo', '--step', '--yes'],
      ['rollback', 'bookinfo', '--confirm', 'bookinfo'],
    ]) {
      const r = await runCli(args, {cwd, env})
      expect(r.code, `${args[0]}: ${r.stderr}`).toBe(4)
      expect(hasStackTrace(r.stderr)).toBe(false)
      expect(r.stderr).toMatch(
        /plans\/bookinfo\.yaml is not a valid plan \(1 problem\):\n {2}- plans\/bookinfo\.yaml is \d+ bytes, over the input limit of 1000 bytes \(set MESH_MIGRATE_MAX_INPUT_BYTES to raise it\)/,
      )
    }
    // validate lists it as it lists any invalid plan's problems.
    const validate = await runCli(['validate', 'bookinfo'], {cwd, env})
    expect(validate.code, validate.stderr).toBe(4)
    expect(validate.stderr).toMatch(
      /^invalid plans\/bookinfo\.yaml: plans\/bookinfo\.yaml is \d+ bytes, over the input limit/m,
    )
    const json = await runCli(['apply', 'bookinfo', '--step', '--yes', '-o', 'json'], {cwd, env})
    expect(json.code).toBe(4)
    expect(JSON.parse(json.stdout).error).toMatchObject({name: 'InvalidPlanError', exitCode: 4})
    expect(JSON.parse(json.stdout).error.problems).toEqual([
      {path: '', message: expect.stringMatching(/over the input limit of 1000 bytes/)},
    ])
  })
})
