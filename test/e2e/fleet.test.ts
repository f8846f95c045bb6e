// Fleet planning end to end (issue 11 §4, §5): several sidecar namespaces that call each other, including
// a cycle (examples/fleet), on the test cluster. `plan -l` reads the cluster once for the whole set (counted
// with an in-process KubeClient wrapper: the same requests for one namespace as for seven), writes one plan
// per namespace and plans/fleet.yaml (waves, edges with reasons, the cycle with a suggestion); acceptances
// are given once for the fleet; `show --fleet` (table, markdown with Mermaid) and `census` show the waves.
// After wave 1 is applied, the routing it exports is applied by its waypoint today, so planning a caller
// alone no longer loses it.
import {randomBytes} from 'node:crypto'
import {readFile} from 'node:fs/promises'
import path from 'node:path'

import {parse} from 'yaml'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import type {KubeClient} from '../../src/kube/types.js'
import {checkFleetText, type FleetDocument} from '../../src/plan/fleet-file.js'
import type {KubeObject} from '../../src/planner/model.js'
import type {MigrationPlan} from '../../src/planner/plan-types.js'
import {ClusterSource} from '../../src/sources/cluster.js'
import {loadManifestFiles} from '../../src/sources/manifests.js'
import {hasStackTrace, runCli} from '../support/cli.js'
import {startTestCluster, type TestCluster} from '../support/cluster.js'
import {REPO_ROOT} from '../support/shared.js'
import {cli, workdir} from './support.js'

const RUN = randomBytes(3).toString('hex')
const NAMES = ['catalog', 'frontend', 'pay', 'shop'] as const
/** Namespaces of this run (unique, so the test can share a cluster with others). */
const N = Object.fromEntries(NAMES.map((n) => [n, `f${RUN}-${n}`])) as Record<(typeof NAMES)[number], string>
const TEAM = `fleet-e2e-${RUN}`

/** examples/fleet with this run's namespace names and team label. */
async function fleetFixture(): Promise<KubeObject[]> {
  const {objects} = await loadManifestFiles([path.join(REPO_ROOT, 'examples/fleet')])
  let text = JSON.stringify(objects).replaceAll('fleet-demo', TEAM)
  // Whole names only: object names such as shop-timeout stay as they are.
  for (const n of NAMES) text = text.replace(new RegExp(`(?<![\\w-])${n}(?![\\w-])`, 'g'), N[n])
  return JSON.parse(text) as KubeObject[]
}

/** The tool's client, counting the calls that reach the API server. */
function counting(client: KubeClient): {client: KubeClient; calls: string[]} {
  const calls: string[] = []
  const wrapped = new Proxy(client, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver)
      if (typeof value !== 'function') return value
      return (...args: unknown[]) => {
        if (prop === 'list') {
          const opts = (args[1] ?? {}) as {namespace?: string; labelSelector?: string}
          const resource = args[0] as {plural: string; group: string}
          calls.push(
            `list ${resource.plural}${resource.group ? `.${resource.group}` : ''}${opts.namespace ? ` -n ${opts.namespace}` : ''}${opts.labelSelector ? ` -l ${opts.labelSelector}` : ''}`,
          )
        } else if (['get', 'discover', 'resourceFor'].includes(String(prop))) calls.push(String(prop))
        return (value as (...a: unknown[]) => unknown).apply(target, args)
      }
    },
  })
  return {client: wrapped, calls}
}

describe('fleet plan of several namespaces with cross-namespace calls and a cycle', () => {
  let cluster: TestCluster
  let cwd: string
  let kube: string

  beforeAll(async () => {
    cluster = await startTestCluster({fixture: await fleetFixture(), quiet: true})
    cwd = await workdir()
    kube = cluster.kubeconfigPath
  }, 180_000)
  afterAll(async () => {
    await cluster?.stop()
  })

  it('reads the cluster with one LIST per kind, whatever the number of namespaces', async () => {
    const read = async () => {
      const {client, calls} = counting(cluster.client)
      const source = await ClusterSource.open(client)
      const fleet = await source.fleet({rootNamespace: 'istio-system'})
      const before = calls.length
      const snapshots = []
      for (const ns of Object.values(N)) snapshots.push(await fleet.snapshot(ns))
      // Cutting snapshots out of the read costs no request.
      expect(calls.length).toBe(before)
      // The read's objects are the snapshots' own, each once (what the fleet's views are found from: fleet-visibility.ts).
      const held = new Set(snapshots.flatMap((s) => s.objects))
      const objects = fleet.objects!()
      expect(objects.length).toBe(held.size)
      expect(new Set(objects)).toEqual(held)
      return {calls, namespaces: fleet.namespaces.length}
    }
    const small = await read()
    expect(
      small.calls
        .filter((c) => c.startsWith('list '))
        .every((c) => !Object.values(N).some((ns) => c.endsWith(` -n ${ns}`))),
    ).toBe(true)
    const perKind = small.calls.filter((c) => c.startsWith('list '))
    expect(perKind.filter((c, i) => perKind.indexOf(c) !== i)).toEqual([])

    // Three more namespaces: the same requests.
    await cluster.load(
      ['x', 'y', 'z'].map((s) => ({
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: {name: `f${RUN}-extra-${s}`, labels: {'istio-injection': 'enabled'}},
      })),
    )
    const big = await read()
    expect(big.namespaces).toBe(small.namespaces + 3)
    expect(big.calls).toEqual(small.calls)

    // Planning the namespaces one at a time costs a read each.
    const {client, calls} = counting(cluster.client)
    const single = await ClusterSource.open(client)
    for (const ns of Object.values(N)) await single.snapshot(ns, {rootNamespace: 'istio-system'})
    expect(calls.length).toBeGreaterThan(3 * small.calls.length)
  }, 120_000)

  it('plan -l writes one plan per namespace and plans/fleet.yaml: waves, edges with reasons, the cycle with a suggestion', async () => {
    const r = await cli(['plan', '-l', `team=${TEAM}`], cwd, kube)
    expect(hasStackTrace(r.stderr)).toBe(false)
    // Blockers remain (routing nothing will apply): written anyway, exit 1.
    expect(r.code, r.stderr).toBe(1)
    expect(r.stderr).toContain('Wrote plans/fleet.yaml and 4 plan(s)')
    expect(r.stdout).toContain('Fleet: 4 namespace(s) in 3 wave(s)')

    const text = await readFile(path.join(cwd, 'plans/fleet.yaml'), 'utf8')
    // The file lists catalog's routing once for the three namespaces it is exported to; read back, one edge per pair.
    expect((parse(text) as FleetDocument).spec.edges[0]).toMatchObject({
      from: N.catalog,
      kind: 'routing',
      to: [N.frontend, N.pay, N.shop],
    })
    const fleet = checkFleetText(text).fleet!
    expect(fleet.kind).toBe('FleetPlan')
    expect(fleet.spec.selection).toEqual({selector: `team=${TEAM}`})
    expect(fleet.spec.waves).toEqual([
      {wave: 1, namespaces: [N.catalog]},
      {wave: 2, namespaces: [N.frontend]},
      {wave: 3, namespaces: [N.pay, N.shop]},
    ])
    expect(fleet.spec.edges.map((e) => `${e.from}->${e.to}:${e.kind}`)).toEqual([
      `${N.catalog}->${N.frontend}:routing`,
      `${N.catalog}->${N.pay}:routing`,
      `${N.catalog}->${N.shop}:routing`,
      `${N.frontend}->${N.shop}:authorization`,
      `${N.frontend}->${N.shop}:waypoint-bypass`,
      `${N.pay}->${N.shop}:authorization`,
      `${N.shop}->${N.pay}:authorization`,
    ])
    for (const e of fleet.spec.edges) expect(e.reason.length).toBeGreaterThan(40)
    expect(fleet.spec.cycles).toEqual([
      expect.objectContaining({
        namespaces: [N.pay, N.shop],
        edges: [expect.objectContaining({from: N.pay, to: N.shop}), expect.objectContaining({from: N.shop, to: N.pay})],
      }),
    ])
    expect(fleet.spec.cycles[0]!.suggestion).toContain('together in one wave')

    const plan = async (ns: string) =>
      parse(await readFile(path.join(cwd, `plans/${ns}.yaml`), 'utf8')) as MigrationPlan
    // catalog's exported routing is kept for the later waves (its waypoint, wave 1); frontend's own
    // client-side routing for shop is applied by nothing, so it stays, grouped by destination namespace.
    expect((await plan(N.pay)).spec.blockers.map((b) => b.id)).toEqual([`E11/destination/${N.shop}`])
    expect((await plan(N.pay)).spec.findings.map((f) => f.id)).toEqual(
      expect.arrayContaining(['fleet-order/wave-1', `fleet-cycle/${N.pay}`]),
    )
    expect((await plan(N.frontend)).spec.blockers.map((b) => b.id)).toEqual([
      `E11/VirtualService/${N.frontend}/shop-timeout`,
    ])

    // The files are valid, but plans with blockers do not pass the PR gate (issue 10 point 12): exit 4, each named.
    const valid = await runCli(['validate', 'plans/fleet.yaml'], {cwd})
    expect(valid.code, valid.stderr).toBe(0)
    const gate = await runCli(['validate', ...['fleet', ...Object.values(N)].map((n) => `plans/${n}.yaml`)], {cwd})
    expect(gate.code).toBe(4)
    expect(gate.stderr).toContain(`E11/destination/${N.shop}`)
    expect(gate.stderr).toContain(`E11/VirtualService/${N.frontend}/shop-timeout`)
  }, 120_000)

  it('takes acceptances once for the fleet', async () => {
    const r = await cli(
      [
        'plan',
        '-l',
        `team=${TEAM}`,
        '--accept-lost',
        `E11/destination/${N.shop}`,
        '--accept-lost',
        `*/VirtualService/${N.frontend}/shop-timeout`,
      ],
      cwd,
      kube,
    )
    expect(r.code, r.stderr).toBe(0)
    const fleet = checkFleetText(await readFile(path.join(cwd, 'plans/fleet.yaml'), 'utf8')).fleet!
    expect(fleet.spec.namespaces.map((n) => `${n.wave} ${n.name} ${n.result}`)).toEqual([
      `1 ${N.catalog} ready`,
      `2 ${N.frontend} ready`,
      `3 ${N.pay} ready`,
      `3 ${N.shop} ready`,
    ])
    expect(fleet.spec.options.acceptLost).toEqual([
      `*/VirtualService/${N.frontend}/shop-timeout`,
      `E11/destination/${N.shop}`,
    ])
  }, 120_000)

  it("show --fleet draws the waves; -o markdown as a Mermaid graph; census shows each namespace's wave", async () => {
    const table = await runCli(['show', '--fleet'], {cwd})
    expect(table.code, table.stderr).toBe(0)
    expect(table.stdout).toMatch(new RegExp(`^3\\s+${N.shop}\\s+ready`, 'm'))
    expect(table.stdout).toContain(`Cycle: ${N.pay}, ${N.shop} (same wave)`)
    const md = await runCli(['show', '--fleet', '-o', 'markdown'], {cwd})
    expect(md.stdout).toContain('```mermaid\nflowchart LR')
    expect(md.stdout).toContain('subgraph wave3["Wave 3"]')
    expect(md.stdout).toMatch(/-\.->\|"authorization \(cycle\)"\|/)

    const census = await cli(['census', '-l', `team=${TEAM}`, '-o', 'json'], cwd, kube)
    expect(census.code, census.stderr).toBe(0)
    const rows = (
      JSON.parse(census.stdout) as {namespaces: {namespace: string; wave?: number; plans: {state: string}[]}[]}
    ).namespaces
    expect(rows.map((row) => `${row.namespace}:${row.wave}:${row.plans.map((p) => p.state).join(',')}`)).toEqual([
      `${N.catalog}:1:not-started`,
      `${N.frontend}:2:not-started`,
      `${N.pay}:3:not-started`,
      `${N.shop}:3:not-started`,
    ])
    const human = await cli(['census', '-l', `team=${TEAM}`], cwd, kube)
    expect(human.stdout).toMatch(new RegExp(`^WAVE\\s+NAMESPACE`, 'm'))
  }, 120_000)

  it('once wave 1 is applied, its waypoint applies its exported routing today: a caller planned alone keeps it', async () => {
    const alone = await cli(['plan', N.pay, '--out', '-', '-o', 'json'], cwd, kube)
    expect((JSON.parse(alone.stdout) as MigrationPlan).spec.blockers.map((b) => b.id)).toContain(
      `E11/destination/${N.catalog}`,
    )

    const apply = await cli(['apply', N.catalog, '--all', '--yes', '--timeout', '60s'], cwd, kube)
    expect(apply.code, apply.stderr).toBe(0)
    const after = await cli(['plan', N.pay, '--out', '-', '-o', 'json'], cwd, kube)
    const plan = JSON.parse(after.stdout) as MigrationPlan
    expect(plan.spec.blockers.map((b) => b.id)).not.toContain(`E11/destination/${N.catalog}`)
    expect(
      plan.spec.inventory.find((i) => i.ref.kind === 'VirtualService' && i.ref.namespace === N.catalog),
    ).toMatchObject({verdict: 'unaffected', action: 'keep'})

    const census = await cli(['census', '-l', `team=${TEAM}`, '-o', 'json'], cwd, kube)
    const rows = (
      JSON.parse(census.stdout) as {namespaces: {namespace: string; mode: string; plans: {state: string}[]}[]}
    ).namespaces
    expect(rows.find((row) => row.namespace === N.catalog)).toMatchObject({
      mode: 'ambient',
      plans: [{state: 'applied'}],
    })
  }, 240_000)
})
