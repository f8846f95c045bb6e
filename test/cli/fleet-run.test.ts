// Running a fleet (issue 22) through the built CLI, offline: what is refused before any cluster is contacted —
// the fleet's order (exit 5, naming the wave, the namespace and the edge), apply --fleet without --yes and no
// terminal (exit 2), bad --wave, rollback --fleet without --confirm fleet, a tampered fleet file (exit 4) — and
// what needs no cluster: status --fleet --offline, show --fleet -o flux / -o argocd with their overlays.
import {mkdtemp, readFile, readdir, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import {parse, parseAllDocuments} from 'yaml'
import {beforeAll, describe, expect, it} from 'vitest'

import type {KubeObject} from '../../src/planner/model.js'
import {hasStackTrace, runCli} from '../support/cli.js'
import {schemaProblems} from '../support/schemas.js'
import {REPO_ROOT} from '../support/shared.js'

const EXAMPLE = path.join(REPO_ROOT, 'examples/fleet')
const ACCEPT = ['--accept-lost', 'E11/destination/shop', '--accept-lost', '*/VirtualService/frontend/shop-timeout']
// Nothing listens there: a command that tried to reach the cluster would fail differently (exit 1).
const NO_CLUSTER = {KUBECONFIG: '/nonexistent/kubeconfig'}

describe('fleet runs, offline', () => {
  let cwd: string
  beforeAll(async () => {
    cwd = await mkdtemp(path.join(os.tmpdir(), 'mesh-migrate-fleet-run-'))
    const r = await runCli(['plan', '-A', '--manifests', EXAMPLE, ...ACCEPT], {cwd})
    expect(r.code, r.stderr).toBe(0)
  })

  it('apply of a later wave is refused before the cluster is contacted: exit 5, the wave, the namespace, the edge', async () => {
    const r = await runCli(['apply', 'shop', '--all', '--yes'], {cwd, env: NO_CLUSTER})
    expect(hasStackTrace(r.stderr)).toBe(false)
    expect(r.code, r.stderr).toBe(5)
    expect(r.stderr).toContain('shop is in wave 3 of plans/fleet.yaml')
    expect(r.stderr).toContain('catalog (wave 1, plans/catalog.yaml: 0 of')
    expect(r.stderr).toContain('frontend (wave 2, plans/frontend.yaml: 0 of')
    expect(r.stderr).toMatch(/frontend → shop \(waypoint-bypass\): frontend calls shop/)
    // The cycle's other member is in the same wave: not an earlier wave, not named.
    expect(r.stderr).not.toContain('pay (wave')
    expect(r.stderr).toContain(
      'Next: Apply the earlier wave(s) first: `mesh-migrate apply --fleet plans/fleet.yaml --to-wave 2`',
    )
    const json = await runCli(['apply', 'shop', '--all', '--yes', '-o', 'json'], {cwd, env: NO_CLUSTER})
    expect(json.code).toBe(5)
    expect(schemaProblems(json.stdout, 'Error')).toEqual([])
    expect(JSON.parse(json.stdout).error.name).toBe('FleetOrderError')
  })

  it('apply --fleet asks once, so without a terminal it needs --yes (exit 2); --wave must exist', async () => {
    const noYes = await runCli(['apply', '--fleet', '--all'], {cwd, env: NO_CLUSTER})
    expect(noYes.code, noYes.stderr).toBe(2)
    expect(noYes.stderr).toContain(
      'apply --fleet asks before it starts, but there is no terminal to ask on (CI is set)',
    )
    const wave = await runCli(['apply', '--fleet', '--wave', '9', '--yes'], {cwd, env: NO_CLUSTER})
    expect(wave.code).toBe(2)
    expect(wave.stderr).toContain('--wave 9: plans/fleet.yaml has waves 1 to 3')
    const notFleet = await runCli(['apply', 'catalog', '--wave', '1', '--yes'], {cwd, env: NO_CLUSTER})
    expect(notFleet.code).toBe(2)
    expect(notFleet.stderr).toContain('--wave is for --fleet')
    // A dry run writes nothing: it asks nobody (no --yes needed) and goes to the cluster — here none.
    const dry = await runCli(['apply', '--fleet', '--all', '--dry-run=server'], {cwd, env: NO_CLUSTER})
    expect(dry.code, dry.stderr).toBe(1)
    expect(dry.stdout).toContain('Server dry run of wave(s) 1, 2, 3 of plans/fleet.yaml: failed in wave 1.')
    expect(dry.stdout).toContain('catalog failed: none of the files in $KUBECONFIG exist')
  })

  it('rollback --fleet is confirmed with the word fleet', async () => {
    for (const args of [[], ['--confirm', 'catalog']]) {
      const r = await runCli(['rollback', '--fleet', ...args], {cwd, env: NO_CLUSTER})
      expect(r.code, r.stderr).toBe(2)
      expect(r.stderr).toContain('Pass --confirm fleet.')
    }
  })

  it('a fleet file naming a path instead of a namespace is refused (exit 4) before it becomes a file name', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'mesh-migrate-fleet-tampered-'))
    const text = await readFile(path.join(cwd, 'plans/fleet.yaml'), 'utf8')
    await writeFile(path.join(dir, 'fleet.yaml'), text.replace('- name: catalog', '- name: ../../etc/catalog'))
    const r = await runCli(['apply', '--fleet', path.join(dir, 'fleet.yaml'), '--all', '--yes'], {cwd, env: NO_CLUSTER})
    expect(hasStackTrace(r.stderr)).toBe(false)
    expect(r.code, r.stderr).toBe(4)
    expect(r.stderr).toMatch(/spec\.namespaces\[0\]\.name: not a namespace name/)
  })

  it('status --fleet --offline: every plan by wave; pending is exit 10 with --detailed-exitcode', async () => {
    const r = await runCli(['status', '--fleet', '--offline', '--detailed-exitcode', '-o', 'json'], {cwd})
    expect(r.code, r.stderr).toBe(10)
    expect(schemaProblems(r.stdout, 'StatusReport')).toEqual([])
    const report = JSON.parse(r.stdout) as {fleet: string; plans: {wave: number; namespace: string; state: string}[]}
    expect(report.fleet).toBe('plans/fleet.yaml')
    expect(report.plans.map((p) => `${p.wave} ${p.namespace} ${p.state}`)).toEqual([
      '1 catalog not-started',
      '2 frontend not-started',
      '3 pay not-started',
      '3 shop not-started',
    ])
    const human = await runCli(['status', '--fleet', '--offline'], {cwd})
    expect(human.stdout).toMatch(/^WAVE\s+NAMESPACE\s+STATE\s+APPLIED\s+DRIFTED\s+LOCK\s+PLAN$/m)
    // --offline reads no cluster: drift is unknown, never a reassuring 0 (issue 19 §3).
    expect(human.stdout).toMatch(/^3\s+shop\s+not-started\s+0\/\d+\s+unknown\s+-\s+plans\/shop\.yaml$/m)
  })

  it('show --fleet -o flux / -o argocd: the engine objects on stdout, one overlay per namespace in step order', async () => {
    const flux = await runCli(['show', '--fleet', '-o', 'flux', '--overlay-dir', 'deploy/mesh'], {cwd})
    expect(flux.code, flux.stderr).toBe(0)
    const ks = parseAllDocuments(flux.stdout).map((d) => d.toJS() as KubeObject)
    expect(
      ks.map((k) => [k.metadata.name, k.spec.path, (k.spec.dependsOn ?? []).map((d: {name: string}) => d.name)]),
    ).toEqual([
      ['mesh-migrate-catalog', './deploy/mesh/catalog', []],
      ['mesh-migrate-frontend', './deploy/mesh/frontend', ['mesh-migrate-catalog']],
      ['mesh-migrate-pay', './deploy/mesh/pay', ['mesh-migrate-frontend']],
      ['mesh-migrate-shop', './deploy/mesh/shop', ['mesh-migrate-frontend']],
    ])
    // frontend needs no waypoint: its health checks are the restarted workloads only.
    expect(ks[1]!.spec.healthChecks.map((h: {kind: string}) => h.kind)).toEqual(['Deployment'])
    expect(ks[0]!.spec.healthChecks.map((h: {kind: string}) => h.kind).sort()).toEqual(['Deployment', 'Gateway'])

    const files = (await readdir(path.join(cwd, 'deploy/mesh/shop'))).sort()
    expect(files[0]).toBe('001-create-waypoint-add-gateway-waypoint.yaml')
    const kustomization = parse(await readFile(path.join(cwd, 'deploy/mesh/shop/kustomization.yaml'), 'utf8'))
    expect([...kustomization.resources, ...kustomization.patches.map((p: {path: string}) => p.path)].sort()).toEqual(
      files.filter((f) => f !== 'kustomization.yaml'),
    )

    const noRepo = await runCli(['show', '--fleet', '-o', 'argocd'], {cwd})
    expect(noRepo.code).toBe(2)
    expect(noRepo.stderr).toContain('Pass --repo-url URL.')
    const outside = await runCli(['show', '--fleet', '-o', 'flux', '--overlay-dir', '../elsewhere'], {cwd})
    expect(outside.code).toBe(2)
    const onePlan = await runCli(['show', 'catalog', '-o', 'argocd'], {cwd})
    expect(onePlan.code).toBe(2)
  })
})
