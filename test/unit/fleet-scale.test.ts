// plan -A at scale (issue 22 §5): each namespace's plan is computed from only the namespaces that can bear on it
// (src/plan/fleet-visibility.ts), and that cut changes no plan. The generated fleet mixes the shapes the cut has to
// keep: routing exported to every namespace (absent exportTo, Istio's default: DOMAIN §0.6), exported to one other
// namespace, a route and a policy naming another namespace, a wildcard host over another namespace's Services and a
// waypoint of another namespace.
import {describe, expect, it} from 'vitest'

import {type FleetInput, planFleet} from '../../src/plan/fleet.js'
import {visibleSnapshots} from '../../src/plan/fleet-visibility.js'
import {buildPlan} from '../../src/plan/plan-builder.js'
import {renderPlanFile} from '../../src/plan/planfile.js'
import {buildInventory, classifySome} from '../../src/planner/inventory.js'
import type {KubeObject, SourceSnapshot} from '../../src/planner/model.js'
import type {PlanOptions} from '../../src/planner/plan-types.js'
import {generatedFleet} from '../support/generated-namespace.js'

const OPTIONS: PlanOptions = {
  rootNamespace: 'istio-system',
  waypointName: 'waypoint',
  waypointFor: 'service',
  routes: 'virtualservice',
  optedOut: 'keep-out',
}

/** Every namespace's snapshot of a fleet read: all objects, as plan NS sees them. */
function fleetSnapshots(objects: KubeObject[], n: number): SourceSnapshot[] {
  return Array.from({length: n}, (_, i) => ({
    namespace: `fleet-${i}`,
    rootNamespace: 'istio-system',
    target: {manifests: ['generated']},
    objects,
    missingKinds: [],
    findings: [],
  }))
}

function plan(snapshot: SourceSnapshot, earlierWaypoints?: Record<string, string>): string {
  const inventory = buildInventory(snapshot, {waypointFor: 'service', ...(earlierWaypoints ? {earlierWaypoints} : {})})
  return renderPlanFile(buildPlan({inventory, snapshot, options: OPTIONS, generator: 'mesh-migrate/test'}))
}

const N = 10
const objects = generatedFleet(N, 'mixed') as unknown as KubeObject[]
const full = fleetSnapshots(objects, N)
const cut = visibleSnapshots(full)
const namespacesIn = (s: SourceSnapshot) => [...new Set(s.objects.map((o) => o.metadata.namespace ?? ''))].sort()

describe('plan -A of a generated fleet: the cut of each snapshot', () => {
  it('leaves out the namespaces that cannot bear on a namespace', () => {
    // fleet-1 keeps its routing to itself; fleet-6 too, and neither names the other: neither sees the other.
    expect(namespacesIn(cut[1]!)).not.toContain('fleet-6')
    expect(namespacesIn(cut[6]!)).not.toContain('fleet-1')
    // Every namespace sees those whose routing is exported to every namespace (fleet-0, fleet-5).
    for (const s of cut) expect(namespacesIn(s)).toEqual(expect.arrayContaining(['fleet-0', 'fleet-5']))
    // fleet-2 exports to fleet-3; fleet-3 routes to fleet-2's Service and names fleet-7's principal; fleet-4's wildcard
    // host covers fleet-6 and it uses fleet-7's waypoint.
    expect(namespacesIn(cut[3]!)).toEqual(expect.arrayContaining(['fleet-2', 'fleet-7']))
    expect(namespacesIn(cut[4]!)).toEqual(expect.arrayContaining(['fleet-6', 'fleet-7']))
    expect(namespacesIn(cut[6]!)).toContain('fleet-4')
  })

  it('changes no namespace’s plan, alone or after every other namespace’s waypoint', () => {
    for (const [i, snapshot] of full.entries()) {
      const others = Object.fromEntries(full.filter((_, j) => j !== i).map((s) => [s.namespace, 'waypoint']))
      expect(plan(cut[i]!)).toEqual(plan(snapshot))
      expect(plan(cut[i]!, others)).toEqual(plan(snapshot, others))
    }
  })

  it('classifies the objects it picks as the whole inventory does (routing edges re-classify only lost routing)', () => {
    const lost = {before: 0, after: 0}
    for (const [i, snapshot] of cut.entries()) {
      const others = Object.fromEntries(full.filter((_, j) => j !== i).map((s) => [s.namespace, 'waypoint']))
      // Other namespaces' objects (the routing edges' case) and its own policies (classified knowing the waypoint).
      const picked = (o: KubeObject) =>
        (o.metadata.namespace ?? snapshot.namespace) !== snapshot.namespace || o.kind === 'AuthorizationPolicy'
      for (const options of [
        {waypointFor: 'service' as const},
        {waypointFor: 'service' as const, earlierWaypoints: others},
      ]) {
        const whole = buildInventory(snapshot, options).objects.filter(
          (o) => o.ref.namespace !== snapshot.namespace || o.ref.kind === 'AuthorizationPolicy',
        )
        const some = classifySome(snapshot, options, picked)
        expect(some).toEqual(whole)
        lost[options.earlierWaypoints ? 'after' : 'before'] += some.filter(
          (o) => o.action === 'lost-client-side',
        ).length
      }
    }
    // Routing lost today, and kept by the other namespaces' waypoints: what the routing edges compare.
    expect(lost.before).toBeGreaterThan(lost.after)
  })

  it('plans the fleet as planned namespace by namespace where nothing orders them', () => {
    const input: FleetInput = {
      snapshots: full,
      selection: {allNamespaces: true},
      options: OPTIONS,
      inventory: {waypointFor: 'service'},
      generator: 'mesh-migrate/test',
      planPath: (ns) => `plans/${ns}.yaml`,
      fleetPath: 'plans/fleet.yaml',
      keepEmpty: true,
    }
    const {fleet, plans} = planFleet(input)
    expect(plans).toHaveLength(N)
    // The small known case: the exported namespaces' routing orders every other namespace after them (routing
    // edges), fleet-2's reaches fleet-3 only.
    const edges = fleet.spec.edges.map((e) => `${e.from}->${e.to}:${e.kind}`)
    expect(edges).toEqual(expect.arrayContaining(['fleet-0->fleet-1:routing', 'fleet-5->fleet-6:routing']))
    expect(edges.filter((e) => e.startsWith('fleet-2->') && e.endsWith(':routing'))).toEqual([
      'fleet-2->fleet-3:routing',
    ])
    // A namespace no edge reaches is planned exactly as plan NS plans it.
    const alone = fleet.spec.namespaces.filter((ns) => !fleet.spec.edges.some((e) => e.to === ns.name))
    for (const ns of alone)
      expect(renderPlanFile(plans.find((p) => p.metadata.namespace === ns.name)!)).toEqual(
        plan(full.find((s) => s.namespace === ns.name)!),
      )
  })
})

describe('plan -A of a generated fleet: what each plan says of the fleet', () => {
  /** Each plan's FleetCycle text and how many edges of its cycle touch its namespace, for a mixed fleet of n. */
  function cycleTexts(n: number) {
    const objects = generatedFleet(n, 'mixed') as unknown as KubeObject[]
    const {fleet, plans} = planFleet({
      snapshots: fleetSnapshots(objects, n),
      selection: {allNamespaces: true},
      options: OPTIONS,
      inventory: {waypointFor: 'service'},
      generator: 'mesh-migrate/test',
      planPath: (ns) => `plans/${ns}.yaml`,
      fleetPath: 'plans/fleet.yaml',
      keepEmpty: true,
    })
    const texts = plans.flatMap((p) => {
      const ns = p.metadata.namespace
      const cycle = fleet.spec.cycles.find((c) => c.namespaces.includes(ns))
      const f = p.spec.findings.find((x) => x.code === 'FleetCycle')
      if (!cycle || !f) return []
      const own = cycle.edges.filter((e) => e.from === ns || e.to === ns).length
      return [{ns, own, cycleEdges: cycle.edges.length, size: f.message.length + (f.fix ?? '').length, finding: f}]
    })
    return {fleet, texts}
  }

  it("names only the namespace's own edges of a cycle, however many edges the cycle has", () => {
    const small = cycleTexts(20)
    const large = cycleTexts(40)
    // The cycles do grow with the fleet (the exported namespaces reach each other; next/cross chain round it) …
    const most = (t: typeof small.texts) => Math.max(...t.map((x) => x.cycleEdges))
    expect(most(large.texts)).toBeGreaterThan(2 * most(small.texts))
    expect(small.texts.length).toBeGreaterThan(4)
    // … but a plan's text is a constant plus its own edges, at 20 as at 40 namespaces.
    // (Every edge of the cycle in every plan, as before, fails this already at 20 namespaces: 1,299 characters for 3 edges.)
    // (An own edge costs up to ~110 characters: "fleet-10 → fleet-0 (routing)", and, coming in, the routing it names;
    // the constant is the protocol, which apply keeps for the routing.)
    for (const {texts} of [small, large]) for (const x of texts) expect(x.size).toBeLessThan(1100 + 110 * x.own)
    // A namespace with the same own edges says as much in either fleet (only the counts differ).
    const sameOwn = small.texts.filter((s) => large.texts.some((l) => l.ns === s.ns && l.own === s.own))
    expect(sameOwn.length).toBeGreaterThan(0)
    for (const s of sameOwn) {
      const l = large.texts.find((x) => x.ns === s.ns)!
      expect(Math.abs(l.size - s.size)).toBeLessThan(20)
    }
    // Readable on its own: what the cycle means for this namespace, and where the whole cycle is listed once.
    const {finding: f, ns} = large.texts.find((x) => !x.finding.message.includes('fleet-0 '))!
    expect(f.message).toMatch(/^This namespace and \d+ other namespace\(s\) depend on each other in a cycle/)
    expect(f.message).toContain('listed once, in plans/fleet.yaml (spec.cycles[')
    expect(f.message).toContain(ns)
    expect(f.fix).toContain('mesh-migrate apply NS --to bind-waypoint')
    // The fleet file lists every cycle's namespaces and edges, once.
    const index = Number(/spec\.cycles\[(\d+)\]/.exec(f.message)![1])
    expect(large.fleet.spec.cycles[index]!.namespaces).toContain(ns)
    expect(f.id).toBe(`fleet-cycle/${large.fleet.spec.cycles[index]!.namespaces[0]}`)
  })
})
