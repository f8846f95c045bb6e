// Fleet planning through the built CLI, offline (issue 11 §4): plan -A / -l / several names on
// examples/fleet, what lands on stdout and stderr, and the usage errors (exit 2, no stack trace).
import {mkdtemp, readFile, readdir, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import {parse} from 'yaml'
import {beforeAll, describe, expect, it} from 'vitest'

import type {FleetPlan} from '../../src/plan/fleet.js'
import {hasStackTrace, runCli} from '../support/cli.js'
import {schemaProblems} from '../support/schemas.js'
import {REPO_ROOT} from '../support/shared.js'

const EXAMPLE = path.join(REPO_ROOT, 'examples/fleet')
const ACCEPT = ['--accept-lost', 'E11/destination/shop', '--accept-lost', '*/VirtualService/frontend/shop-timeout']

const fresh = () => mkdtemp(path.join(os.tmpdir(), 'mesh-migrate-fleet-cli-'))

describe('plan -A / -l / NS1 NS2 offline', () => {
  let cwd: string
  beforeAll(async () => {
    cwd = await fresh()
  })

  it('-A writes a plan per namespace and plans/fleet.yaml; -o json prints the fleet plan, notes go to stderr', async () => {
    const r = await runCli(['plan', '-A', '--manifests', EXAMPLE, ...ACCEPT, '-o', 'json'], {cwd})
    expect(r.code, r.stderr).toBe(0)
    const fleet = JSON.parse(r.stdout) as FleetPlan
    expect(schemaProblems(r.stdout, 'FleetPlan')).toEqual([])
    expect(fleet.spec.waves.map((w) => w.namespaces)).toEqual([['catalog'], ['frontend'], ['pay', 'shop']])
    expect(r.stderr).toContain('Wrote plans/fleet.yaml and 4 plan(s)')
    expect((await readdir(path.join(cwd, 'plans'))).sort()).toEqual([
      'catalog.yaml',
      'fleet.yaml',
      'frontend.yaml',
      'pay.yaml',
      'shop.yaml',
    ])
    // The file and the printed data are the same document.
    expect(parse(await readFile(path.join(cwd, 'plans/fleet.yaml'), 'utf8'))).toEqual(fleet)
    // Regenerating from unchanged input changes nothing.
    const before = await readFile(path.join(cwd, 'plans/fleet.yaml'), 'utf8')
    const again = await runCli(['plan', '-A', '--manifests', EXAMPLE, ...ACCEPT], {cwd})
    expect(again.stderr).toContain('(0 changed, 4 unchanged)')
    expect(await readFile(path.join(cwd, 'plans/fleet.yaml'), 'utf8')).toBe(before)
  }, 120_000)

  it('-l selects by namespace labels, names select exactly those; status and validate handle fleet.yaml', async () => {
    const dir = await fresh()
    const byLabel = await runCli(
      ['plan', '-l', 'kubernetes.io/metadata.name in (pay,shop)', '--manifests', EXAMPLE, '-o', 'json'],
      {cwd: dir},
    )
    expect((JSON.parse(byLabel.stdout) as FleetPlan).spec.namespaces.map((n) => n.name)).toEqual(['pay', 'shop'])
    const named = await runCli(['plan', 'shop', 'catalog', '--manifests', EXAMPLE, '-o', 'json'], {cwd: dir})
    const fleet = JSON.parse(named.stdout) as FleetPlan
    expect(fleet.spec.selection).toEqual({namespaces: ['shop', 'catalog']})
    expect(fleet.spec.waves).toEqual([
      {wave: 1, namespaces: ['catalog']},
      {wave: 2, namespaces: ['shop']},
    ])
    const valid = await runCli(['validate', 'plans/fleet.yaml'], {cwd: dir})
    expect(valid.code, valid.stderr).toBe(0)
    // shop still loses frontend's client-side timeout (E12): a blocked plan does not pass the PR gate (issue 10 point 12).
    const blocked = await runCli(['validate', 'plans/fleet.yaml', 'plans/shop.yaml'], {cwd: dir})
    expect(blocked.code).toBe(4)
    expect(blocked.stderr).toContain('E12/VirtualService/frontend/shop-timeout')
    await writeFile(
      path.join(dir, 'plans/fleet.yaml'),
      (await readFile(path.join(dir, 'plans/fleet.yaml'), 'utf8')).replace(/^( +)wave: 1$/m, '$1wave: one'),
    )
    const invalid = await runCli(['validate', 'plans/fleet.yaml'], {cwd: dir})
    expect(invalid.code).toBe(4)
    expect(invalid.stderr).toContain('spec.namespaces[0]: expected {name, wave, result, ...}')
    const shown = await runCli(['show', '--fleet'], {cwd: dir})
    expect(shown.code).toBe(4)
    expect(hasStackTrace(shown.stderr)).toBe(false)
  }, 120_000)

  it('refuses what it cannot do with a usage error that says what to do (exit 2, no stack trace)', async () => {
    const dir = await fresh()
    const cases: [string[], RegExp][] = [
      [['plan', '--manifests', EXAMPLE], /which namespace\?/],
      [['plan', 'shop', 'pay', '--out', 'x.yaml', '--manifests', EXAMPLE], /--out names one plan file/],
      [['plan', 'shop', '-A', '--manifests', EXAMPLE], /not both/],
      [['plan', '-l', 'team=(x', '--manifests', EXAMPLE], /--selector: "team=\(x" is not a label selector requirement/],
      [['show'], /which plan\?/],
    ]
    for (const [args, message] of cases) {
      const r = await runCli(args, {cwd: dir})
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(2)
      expect(r.stderr).toMatch(message)
      expect(hasStackTrace(r.stderr)).toBe(false)
      expect(r.stdout).toBe('')
    }
    const unknown = await runCli(['plan', 'shop', 'nope', '--manifests', EXAMPLE], {cwd: dir})
    expect(unknown.code).toBe(1)
    expect(unknown.stderr).toContain('namespace(s) nope do not exist in the manifests')
    const none = await runCli(['plan', '-l', 'team=nobody', '--manifests', EXAMPLE], {cwd: dir})
    expect(none.stderr).toContain('no namespace matches the selection')
    const noFile = await runCli(['show', '--fleet'], {cwd: dir})
    expect(noFile.stderr).toContain('plans/fleet.yaml does not exist')
    expect(noFile.stderr).toContain('mesh-migrate plan -A')
  }, 120_000)
})
