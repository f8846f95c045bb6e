// Fleet planning (issue 11 §4, §5): the wave computation (a pure function over edges), the dependencies
// derived from what the inventory sees, other namespaces' lost routing grouped by destination namespace
// (E11/destination/<ns>) and kept when an earlier wave's waypoint applies it, and plans/fleet.yaml.
//
// Domain: a waypoint applies only VirtualServices of the Service's (or the waypoint's) namespace, exported
// to the waypoint's namespace; ztunnel ignores VirtualServices and DestinationRules (DOMAIN §0.6, istio
// pilot/pkg/networking/core/listener_waypoint.go); sidecar clients never go through waypoints
// (DOMAIN §0.5, §1.5, pilot/pkg/serviceregistry/ambient/sidecar_interop.go) — so a caller keeps exported
// routing only if the destination's waypoint is in place before the caller turns ambient, and L7 policies
// at a waypoint apply to callers only once those are ambient.
import path from 'node:path'

import {describe, expect, it} from 'vitest'

import {
  computeWaves,
  type FleetEdge,
  type FleetInput,
  namedSourceNamespaces,
  planFleet,
  selectNamespaces,
} from '../../src/plan/fleet.js'
import {checkFleetText, renderFleetFile} from '../../src/plan/fleet-file.js'
import {buildInventory} from '../../src/planner/inventory.js'
import type {KubeObject, SourceSnapshot} from '../../src/planner/model.js'
import {parseLabelSelector, selectorMatches} from '../../src/planner/namespace.js'
import {buildPlan} from '../../src/plan/plan-builder.js'
import type {MigrationPlan, PlanOptions} from '../../src/planner/plan-types.js'
import {checkPlanText, renderPlanFile} from '../../src/plan/planfile.js'
import {ManifestSource} from '../../src/sources/manifests.js'
import {fleetMermaid} from '../../src/ui/fleet-view.js'
import {PLAN_OPTIONS} from '../support/fleet-rig.js'
import {REPO_ROOT} from '../support/shared.js'

const EXAMPLE = path.join(REPO_ROOT, 'examples/fleet')
const OPTIONS = PLAN_OPTIONS

const edge = (from: string, to: string, kind: FleetEdge['kind'] = 'routing'): FleetEdge => ({
  from,
  to,
  kind,
  reason: `${from} before ${to}`,
  refs: [],
})

describe('computeWaves', () => {
  it('puts each namespace one wave after the latest it depends on (longest path), names sorted within a wave', () => {
    const edges = [edge('a', 'b'), edge('b', 'c'), edge('a', 'c'), edge('d', 'c')]
    const {waves, cycles} = computeWaves(['c', 'e', 'b', 'd', 'a'], edges)
    expect(waves).toEqual([['a', 'd', 'e'], ['b'], ['c']])
    expect(cycles).toEqual([])
  })

  it('gives the same waves whatever the order of namespaces and edges (ties broken by name)', () => {
    const edges = [edge('x', 'y'), edge('m', 'y'), edge('b', 'x'), edge('a', 'm')]
    const one = computeWaves(['y', 'x', 'm', 'b', 'a', 'z'], edges)
    const two = computeWaves(['a', 'b', 'm', 'x', 'y', 'z'], [...edges].reverse())
    expect(two).toEqual(one)
    expect(one.waves).toEqual([['a', 'b', 'z'], ['m', 'x'], ['y']])
  })

  it('reports a cycle with the edges that form it, puts its namespaces in one wave, and orders the rest around it', () => {
    const edges = [
      edge('up', 'p', 'shared-waypoint'),
      edge('p', 'q', 'authorization'),
      edge('q', 'r', 'authorization'),
      edge('r', 'p', 'routing'),
      edge('r', 'down', 'authorization'),
    ]
    const {waves, cycles} = computeWaves(['down', 'p', 'q', 'r', 'up'], edges)
    expect(waves).toEqual([['up'], ['p', 'q', 'r'], ['down']])
    expect(cycles).toHaveLength(1)
    expect(cycles[0]!.namespaces).toEqual(['p', 'q', 'r'])
    expect(cycles[0]!.edges.map((e) => `${e.from}->${e.to}`).sort()).toEqual(['p->q', 'q->r', 'r->p'])
    // The suggestion names what to do: one wave, waypoints first — which apply keeps for the routing part, so nothing
    // of it is to be accepted as lost.
    expect(cycles[0]!.suggestion).toContain('together in one wave')
    expect(cycles[0]!.suggestion).toContain('--to bind-waypoint')
    expect(cycles[0]!.suggestion).toContain('Apply keeps that order')
    expect(cycles[0]!.suggestion).not.toContain('--accept-lost')
  })

  it('ignores self edges and edges to namespaces outside the fleet', () => {
    const {waves, cycles} = computeWaves(['a', 'b'], [edge('a', 'a'), edge('zz', 'a'), edge('b', 'zz')])
    expect(waves).toEqual([['a', 'b']])
    expect(cycles).toEqual([])
  })

  it('reports two separate cycles separately', () => {
    const {waves, cycles} = computeWaves(
      ['a', 'b', 'c', 'd'],
      [edge('a', 'b'), edge('b', 'a'), edge('c', 'd'), edge('d', 'c'), edge('b', 'c')],
    )
    expect(cycles.map((c) => c.namespaces)).toEqual([
      ['a', 'b'],
      ['c', 'd'],
    ])
    expect(waves).toEqual([
      ['a', 'b'],
      ['c', 'd'],
    ])
  })
})

describe('namespaces an AuthorizationPolicy names', () => {
  const fleet = ['pay', 'payroll', 'shop', 'web']
  it('reads namespaces (with prefix/suffix patterns), principals, serviceAccounts and when conditions; * names none', () => {
    const spec = {
      rules: [
        {
          from: [
            {source: {namespaces: ['shop', 'pay*']}},
            {source: {principals: ['cluster.local/ns/web/sa/frontend', '*']}},
          ],
        },
        {from: [{source: {serviceAccounts: ['shop/api']}}], when: [{key: 'source.namespace', values: ['*eb']}]},
        {from: [{source: {namespaces: ['*']}}]},
      ],
    }
    expect(namedSourceNamespaces(spec, fleet).map((n) => `${n.namespace}@${n.path}`)).toEqual([
      'shop@spec.rules[0].from[0].source.namespaces',
      'pay@spec.rules[0].from[0].source.namespaces',
      'payroll@spec.rules[0].from[0].source.namespaces',
      'web@spec.rules[0].from[1].source.principals',
      'shop@spec.rules[1].from[0].source.serviceAccounts',
      'web@spec.rules[1].when[0]',
    ])
  })
})

describe('label selectors (-l)', () => {
  it('reads kubectl syntax', () => {
    const sel = parseLabelSelector('team=payments,env!=dev,tier in (a, b),!legacy,owner')
    expect(selectorMatches(sel, {team: 'payments', env: 'prod', tier: 'b', owner: 'x'})).toBe(true)
    expect(selectorMatches(sel, {team: 'payments', env: 'dev', tier: 'b', owner: 'x'})).toBe(false)
    expect(selectorMatches(sel, {team: 'payments', tier: 'c', owner: 'x'})).toBe(false)
    expect(selectorMatches(sel, {team: 'payments', tier: 'a', owner: 'x', legacy: 'y'})).toBe(false)
    expect(selectorMatches(sel, {team: 'payments', tier: 'a'})).toBe(false)
    expect(() => parseLabelSelector('team=(x')).toThrow(/cannot read "team=\(x"/)
  })

  it('-A leaves out Kubernetes namespaces and the root namespace; names must exist', () => {
    const nsObj = (name: string, labels: Record<string, string> = {}): KubeObject => ({
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: {name, labels},
    })
    const all = [
      nsObj('kube-system'),
      nsObj('istio-system'),
      nsObj('shop', {team: 'a'}),
      nsObj('pay', {team: 'b'}),
      nsObj('kube-public'),
    ]
    expect(selectNamespaces(all, {allNamespaces: true}, 'istio-system').selected).toEqual(['pay', 'shop'])
    expect(selectNamespaces(all, {selector: 'team=a'}, 'istio-system').selected).toEqual(['shop'])
    expect(selectNamespaces(all, {selector: 'kubernetes.io/metadata.name in (pay)'}, 'istio-system').selected).toEqual([
      'pay',
    ])
    expect(selectNamespaces(all, {namespaces: ['shop', 'nope']}, 'istio-system')).toEqual({
      selected: ['shop'],
      unknown: ['nope'],
    })
  })
})

// --- the example fleet (examples/fleet) -------------------------------------------------------------

async function exampleSnapshots(): Promise<{snapshots: SourceSnapshot[]; source: ManifestSource}> {
  const source = new ManifestSource([EXAMPLE])
  const read = await source.fleet({rootNamespace: 'istio-system'})
  const {selected} = selectNamespaces(read.namespaces, {allNamespaces: true}, 'istio-system')
  return {snapshots: await Promise.all(selected.map((ns) => read.snapshot(ns))), source}
}

function fleetInput(snapshots: SourceSnapshot[], options: Partial<PlanOptions> = {}): FleetInput {
  return {
    snapshots,
    selection: {allNamespaces: true},
    options: {...OPTIONS, ...options},
    inventory: {waypointFor: 'service'},
    generator: 'mesh-migrate/test',
    planPath: (ns) => `plans/${ns}.yaml`,
    fleetPath: 'plans/fleet.yaml',
    keepEmpty: false,
  }
}

const planOf = (plans: MigrationPlan[], ns: string) => plans.find((p) => p.metadata.namespace === ns)!
const ids = (plan: MigrationPlan) => ({
  blockers: plan.spec.blockers.map((b) => b.id),
  findings: plan.spec.findings.map((f) => f.id),
})

function singlePlan(snapshot: SourceSnapshot, options: Partial<PlanOptions> = {}): MigrationPlan {
  return buildPlan({
    inventory: buildInventory(snapshot, {waypointFor: 'service'}),
    snapshot,
    options: {...OPTIONS, ...options},
    generator: 'mesh-migrate/test',
  })
}

describe('the fleet plan of examples/fleet', () => {
  it('orders catalog (exports L7 routing) first, then frontend, then the pay/shop cycle — every edge with its reason', async () => {
    const {snapshots} = await exampleSnapshots()
    expect(snapshots.map((s) => s.namespace)).toEqual(['catalog', 'frontend', 'pay', 'shop'])
    const {fleet} = planFleet(fleetInput(snapshots))
    expect(fleet.spec.waves).toEqual([
      {wave: 1, namespaces: ['catalog']},
      {wave: 2, namespaces: ['frontend']},
      {wave: 3, namespaces: ['pay', 'shop']},
    ])
    expect(fleet.spec.edges.map((e) => `${e.from}->${e.to}:${e.kind}`)).toEqual([
      'catalog->frontend:routing',
      'catalog->pay:routing',
      'catalog->shop:routing',
      'frontend->shop:authorization',
      'frontend->shop:waypoint-bypass',
      'pay->shop:authorization',
      'shop->pay:authorization',
    ])
    const routing = fleet.spec.edges.find((e) => e.kind === 'routing' && e.to === 'shop')!
    expect(routing.refs).toEqual(['VirtualService catalog/catalog'])
    expect(routing.reason).toContain("only catalog's waypoint applies it (E11)")
    const bypass = fleet.spec.edges.find((e) => e.kind === 'waypoint-bypass')!
    expect(bypass.refs).toEqual(['VirtualService frontend/shop-timeout'])
    expect(bypass.reason).toContain('AuthorizationPolicy shop/shop-from-pay')
    expect(fleet.spec.cycles).toHaveLength(1)
    expect(fleet.spec.cycles[0]!.namespaces).toEqual(['pay', 'shop'])
    expect(fleet.spec.cycles[0]!.edges.map((e) => `${e.from}->${e.to}`)).toEqual(['pay->shop', 'shop->pay'])
    expect(fleet.spec.cycles[0]!.edges.find((e) => e.from === 'shop')!.reason).toContain(
      'spec.rules[0].from[0].source.principals',
    )
  })

  it("keeps catalog's exported routing for callers of a later wave, and groups what nothing will apply by destination namespace", async () => {
    const {snapshots} = await exampleSnapshots()
    const shop = snapshots.find((s) => s.namespace === 'shop')!
    const pay = snapshots.find((s) => s.namespace === 'pay')!
    // Planned alone, shop and pay lose catalog's routing: one grouped finding per destination namespace.
    expect(ids(singlePlan(shop)).blockers).toEqual([
      'E11/destination/catalog',
      'E12/VirtualService/frontend/shop-timeout',
    ])
    const alone = singlePlan(pay)
    expect(ids(alone).blockers).toEqual(['E11/destination/catalog', 'E11/destination/shop'])
    const grouped = alone.spec.blockers.find((b) => b.id === 'E11/destination/shop')!
    expect(grouped.message).toContain('shop.shop.svc.cluster.local')
    expect(grouped.message).toContain('VirtualService frontend/shop-timeout')
    expect(grouped.fix).toContain('--accept-lost E11/destination/shop')

    const {plans} = planFleet(fleetInput(snapshots))
    // In the fleet, catalog's waypoint (wave 1) applies it: not lost, the item says by which waypoint.
    expect(ids(planOf(plans, 'shop')).blockers).toEqual(['E12/VirtualService/frontend/shop-timeout'])
    expect(ids(planOf(plans, 'pay')).blockers).toEqual(['E11/destination/shop'])
    // catalog's routing for its own Services is catalog's waypoint's: pay's plan lists it in what it counts on, not
    // in its inventory (judged once for the fleet: src/plan/fleet-routing.ts).
    const listed = (ns: string) => planOf(plans, ns).spec.inventory.filter((i) => i.ref.namespace === 'catalog')
    expect(listed('pay')).toEqual([])
    expect(listed('shop')).toEqual([])
    const order = planOf(plans, 'pay').spec.findings.find((f) => f.id === 'fleet-order/wave-1')!
    expect(order.message).toContain('counts on namespace catalog being migrated first (wave 1 of the fleet plan')
    expect(order.message).toContain(
      "VirtualService catalog/catalog is exported to pay and applied by its sidecars today; once pay is ambient only catalog's waypoint applies it (E11)",
    )
    expect(order.fix).toBe('Apply plans/catalog.yaml before this one (mesh-migrate show --fleet).')
    expect(ids(planOf(plans, 'pay')).findings).toEqual(
      expect.arrayContaining(['fleet-order/wave-1', 'fleet-cycle/pay']),
    )
    expect(planOf(plans, 'shop').spec.findings.find((f) => f.id === 'fleet-order/wave-2')!.message).toContain(
      'counts on namespace frontend being migrated first (wave 2',
    )
    // frontend's own client-side routing for shop: nothing will ever apply it, so it stays a blocker.
    expect(ids(planOf(plans, 'frontend')).blockers).toEqual(['E11/VirtualService/frontend/shop-timeout'])
  })

  it('takes acceptances once for the fleet, and writes plans identical to single plans where nothing orders them', async () => {
    const {snapshots} = await exampleSnapshots()
    const acceptLost = ['*/VirtualService/frontend/shop-timeout', 'E11/destination/shop']
    const {fleet, plans} = planFleet(fleetInput(snapshots, {acceptLost}))
    expect(fleet.spec.namespaces.map((n) => `${n.wave}:${n.name}:${n.result}`)).toEqual([
      '1:catalog:ready',
      '2:frontend:ready',
      '3:pay:ready',
      '3:shop:ready',
    ])
    for (const plan of plans) {
      expect(plan.spec.options.acceptLost).toEqual(acceptLost)
      expect(checkPlanText(renderPlanFile(plan)).problems).toEqual([])
    }
    expect(
      planOf(plans, 'frontend').spec.findings.find((f) => f.id === 'E11/VirtualService/frontend/shop-timeout')!.message,
    ).toMatch(/accepted with --accept-lost/)
    // catalog is in wave 1 with nothing before it: the same bytes as `plan catalog`.
    const catalog = snapshots.find((s) => s.namespace === 'catalog')!
    expect(renderPlanFile(planOf(plans, 'catalog'))).toBe(renderPlanFile(singlePlan(catalog, {acceptLost})))
  })

  it('writes a fleet file that reads back, is byte-deterministic, and draws waves and edges as Mermaid', async () => {
    const {snapshots} = await exampleSnapshots()
    const one = renderFleetFile(planFleet(fleetInput(snapshots)).fleet)
    const two = renderFleetFile(planFleet(fleetInput([...snapshots].reverse())).fleet)
    expect(two).toBe(one)
    expect(one).toContain('#   wave 3: pay, shop')
    const checked = checkFleetText(one)
    expect(checked.problems).toEqual([])
    expect(checked.fleet!.spec.summary).toEqual({namespaces: 4, waves: 3, edges: 7, cycles: 1, blocked: 4})
    const mermaid = fleetMermaid(checked.fleet!)
    expect(mermaid).toContain('subgraph wave3["Wave 3"]')
    expect(mermaid).toMatch(/ns0 -->\|"routing"\| ns3/)
    expect(mermaid).toMatch(/ns2 -\.->\|"authorization \(cycle\)"\| ns3/)
    expect(checkFleetText(one.replace('kind: FleetPlan', 'kind: MigrationPlan')).problems[0]).toMatchObject({
      path: 'kind',
    })
    // A namespace with nothing to migrate and no edge is in the table, not in the graph.
    const quiet = structuredClone(checked.fleet!)
    quiet.spec.namespaces.push({
      name: 'idle',
      wave: 1,
      result: 'nothing-to-migrate',
      from: 'none',
      waypointRequired: false,
      steps: 0,
      blockers: [],
    })
    quiet.spec.waves[0]!.namespaces.push('idle')
    expect(fleetMermaid(quiet)).not.toContain('idle')
    expect(fleetMermaid(quiet)).toContain('ns0["catalog (blocked)"]')
  })
})

describe('dependencies beyond the example', () => {
  const ns = (name: string, labels: Record<string, string> = {}): KubeObject => ({
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: {name, labels: {'istio-injection': 'enabled', ...labels}},
  })
  const app = (namespace: string, name: string, labels: Record<string, string> = {}): KubeObject[] => [
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: {name, namespace, labels},
      spec: {selector: {app: name}, ports: [{name: 'http', port: 80}]},
    },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: {name, namespace},
      spec: {
        selector: {matchLabels: {app: name}},
        template: {metadata: {labels: {app: name}}, spec: {containers: [{name, image: 'x'}]}},
      },
    },
  ]
  const snapshotsOf = (objects: KubeObject[], names: string[], opts: {clusterCut?: boolean} = {}): SourceSnapshot[] =>
    names.map((namespace) => ({
      namespace,
      rootNamespace: 'istio-system',
      target: {manifests: ['test']},
      // A cluster read keeps workloads and Services of the planned namespace only (src/sources/kinds.ts scope "namespace").
      objects: opts.clusterCut
        ? objects.filter((o) => !['Service', 'Deployment'].includes(o.kind) || o.metadata.namespace === namespace)
        : objects,
      missingKinds: [],
      findings: [],
    }))

  it('a namespace using a waypoint of another (istio.io/use-waypoint-namespace) goes after it', () => {
    const objects = [
      ns('infra'),
      ...app('infra', 'tools'),
      ns('team', {'istio.io/use-waypoint': 'shared', 'istio.io/use-waypoint-namespace': 'infra'}),
      ...app('team', 'web'),
      ns('solo'),
      ...app('solo', 'api', {'istio.io/use-waypoint': 'shared', 'istio.io/use-waypoint-namespace': 'infra'}),
    ]
    const {fleet} = planFleet(fleetInput(snapshotsOf(objects, ['infra', 'solo', 'team'])))
    expect(fleet.spec.edges.map((e) => `${e.from}->${e.to}:${e.kind}:${e.refs.join(',')}`)).toEqual([
      'infra->solo:shared-waypoint:Service solo/api',
      'infra->team:shared-waypoint:Namespace team',
    ])
    expect(fleet.spec.waves).toEqual([
      {wave: 1, namespaces: ['infra']},
      {wave: 2, namespaces: ['solo', 'team']},
    ])
  })

  it('an L4-only policy naming another namespace orders nothing (ztunnel enforces it for sidecar and ambient callers alike)', () => {
    const objects = [
      ns('a'),
      ...app('a', 'x'),
      ns('b'),
      ...app('b', 'y'),
      {
        apiVersion: 'security.istio.io/v1',
        kind: 'AuthorizationPolicy',
        metadata: {name: 'from-b', namespace: 'a'},
        spec: {action: 'ALLOW', rules: [{from: [{source: {namespaces: ['b']}}]}]},
      },
    ]
    const {fleet} = planFleet(fleetInput(snapshotsOf(objects, ['a', 'b'])))
    expect(fleet.spec.edges).toEqual([])
    expect(fleet.spec.waves).toEqual([{wave: 1, namespaces: ['a', 'b']}])
  })

  it("a DestinationRule exported by a namespace with a waypoint orders its callers after it, like a VirtualService — also from a cluster read, which has no other namespace's Services", () => {
    const objects = [
      ns('db'),
      ...app('db', 'pg'),
      {
        apiVersion: 'networking.istio.io/v1',
        kind: 'DestinationRule',
        metadata: {name: 'pg', namespace: 'db'},
        spec: {
          host: 'pg',
          trafficPolicy: {
            connectionPool: {http: {http1MaxPendingRequests: 10}},
            loadBalancer: {simple: 'LEAST_REQUEST'},
          },
        },
      },
      ns('api'),
      ...app('api', 'web'),
    ]
    for (const clusterCut of [false, true]) {
      const single = singlePlan(snapshotsOf(objects, ['api'], {clusterCut})[0]!)
      expect(ids(single).blockers).toEqual(['E11/destination/db'])
      const {fleet, plans} = planFleet(fleetInput(snapshotsOf(objects, ['api', 'db'], {clusterCut})))
      expect(fleet.spec.edges.map((e) => `${e.from}->${e.to}:${e.kind}`)).toEqual(['db->api:routing'])
      expect(ids(planOf(plans, 'api')).blockers).toEqual([])
    }
  })

  it('a destination Service labelled istio.io/use-waypoint=none keeps no waypoint: its routing stays lost', () => {
    const objects = [
      ns('db'),
      ...app('db', 'pg', {'istio.io/use-waypoint': 'none'}),
      {
        apiVersion: 'networking.istio.io/v1',
        kind: 'VirtualService',
        metadata: {name: 'pg', namespace: 'db'},
        spec: {hosts: ['pg'], http: [{timeout: '1s', route: [{destination: {host: 'pg'}}]}]},
      },
      ns('api'),
      ...app('api', 'web'),
    ]
    const {fleet, plans} = planFleet(fleetInput(snapshotsOf(objects, ['api', 'db'])))
    expect(fleet.spec.edges.filter((e) => e.kind === 'routing')).toEqual([])
    expect(ids(planOf(plans, 'api')).blockers).toEqual(['E11/destination/db'])
  })
})
