// plan -A judges the routing a namespace defines for its own Services once for the fleet (src/planner/classify/
// own-routing.ts, src/plan/fleet-routing.ts) and leaves it out of every other namespace's snapshot. These tests hold that
// rule to the classifiers it stands for: for every namespace that sees such an object, classifying it there as plan NS
// does gives "lost today" exactly when the rule says so, and "kept" once the owner's waypoint is in place (DOMAIN §3.4,
// §3.5: a waypoint applies the VirtualServices and DestinationRules of its Service's namespace exported to it); and
// leaving the judged objects out of a namespace's snapshot changes nothing else its inventory says.
import {describe, expect, it} from 'vitest'

import {selectNamespaces} from '../../src/plan/fleet.js'
import {judgedObjects, routingCandidates} from '../../src/plan/fleet-routing.js'
import {bearsOn, fleetViews, visible} from '../../src/plan/fleet-visibility.js'
import {ownServiceRouting, type RoutingOwner} from '../../src/planner/classify/own-routing.js'
import {buildInventory, classifySome} from '../../src/planner/inventory.js'
import type {KubeObject, SourceSnapshot} from '../../src/planner/model.js'
import {refKey, refOf} from '../../src/planner/refs.js'
import {ManifestSource} from '../../src/sources/manifests.js'
import {generatedFleet} from '../support/generated-namespace.js'

function fleetSnapshots(objects: KubeObject[]): SourceSnapshot[] {
  const namespaces = [...new Set(objects.flatMap((o) => (o.kind === 'Namespace' ? [o.metadata.name] : [])))].sort()
  return namespaces.map((namespace) => ({
    namespace,
    rootNamespace: 'istio-system',
    target: {manifests: ['generated']},
    objects,
    missingKinds: [],
    findings: [],
  }))
}

const example = async () => {
  const read = await new ManifestSource(['examples/fleet']).fleet({rootNamespace: 'istio-system'})
  const {selected} = selectNamespaces(read.namespaces, {allNamespaces: true}, 'istio-system')
  return Promise.all(selected.map((ns) => read.snapshot(ns)))
}

const FLEETS: [string, () => Promise<SourceSnapshot[]>][] = [
  ['generated, mixed', async () => fleetSnapshots(generatedFleet(15, 'mixed') as unknown as KubeObject[])],
  ['generated, exported to all', async () => fleetSnapshots(generatedFleet(6, 'exported') as unknown as KubeObject[])],
  ['examples/fleet', example],
]

describe.each(FLEETS)('routing judged once for the fleet (%s)', (_, read) => {
  it('is lost today and kept by its own namespace’s waypoint exactly as the classifiers say, for every namespace that sees it', async () => {
    const views = fleetViews(await read())
    const candidates = routingCandidates(views)
    let judged = 0
    for (const view of views) {
      const snapshot = view.source
      for (const [key, k] of candidates.get(snapshot.namespace) ?? []) {
        const isIt = (o: KubeObject) => refKey({...refOf(o), namespace: o.metadata.namespace}) === key
        const [today] = classifySome(snapshot, {waypointFor: 'service'}, isIt)
        const [kept] = classifySome(snapshot, {waypointFor: 'service', earlierWaypoints: {[k.from]: 'waypoint'}}, isIt)
        expect(today, `${key} in ${snapshot.namespace}`).toBeDefined()
        expect(today!.action === 'lost-client-side', `${key} lost in ${snapshot.namespace} today`).toBe(k.lostToday)
        if (!k.lostToday) expect(today!.verdict).toBe('inert')
        expect(kept!.action, `${key} in ${snapshot.namespace} with ${k.from}'s waypoint`).not.toBe('lost-client-side')
        expect(['unaffected', 'inert']).toContain(kept!.verdict)
        judged++
      }
    }
    expect(judged).toBeGreaterThan(0)
  })

  it("changes nothing else a namespace's inventory says when the judged objects are left out of its snapshot", async () => {
    const views = fleetViews(await read())
    const candidates = routingCandidates(views)
    for (const view of views) {
      const left = judgedObjects(candidates.get(view.source.namespace))
      if (left.size === 0) continue
      const whole = buildInventory(view.source, {waypointFor: 'service'}, (o) => !left.has(o))
      const cut = buildInventory(visible(view, left), {waypointFor: 'service'})
      expect(cut.objects, view.source.namespace).toEqual(whole.objects)
      expect(cut.waypointRequired).toBe(whole.waypointRequired)
      expect(cut.findings.map((f) => f.id)).toEqual(whole.findings.map((f) => f.id))
    }
  })
})

/**
 * `a` exports routing for its own Service to all (judged once: `a` is quiet for `b`); `b` names `c` (a principal), and
 * `c` names `a` (a DestinationRule's host): of `a`, `b` sees only its Namespace and Service, in the snapshot's order.
 */
const namedQuiet = async (): Promise<SourceSnapshot[]> => {
  const ns = (name: string): KubeObject => ({apiVersion: 'v1', kind: 'Namespace', metadata: {name}})
  const svc = (namespace: string): KubeObject => ({
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {name: 'api', namespace},
    spec: {selector: {app: 'api'}, ports: [{name: 'http', port: 80}]},
  })
  const objects: KubeObject[] = [
    ns('a'),
    ns('b'),
    svc('b'),
    svc('a'),
    {
      apiVersion: 'networking.istio.io/v1',
      kind: 'VirtualService',
      metadata: {name: 'api', namespace: 'a'},
      spec: {hosts: ['api'], http: [{route: [{destination: {host: 'api'}}], timeout: '3s'}]},
    },
    {
      apiVersion: 'security.istio.io/v1',
      kind: 'AuthorizationPolicy',
      metadata: {name: 'from-c', namespace: 'b'},
      spec: {rules: [{from: [{source: {principals: ['cluster.local/ns/c/sa/web']}}]}]},
    },
    ns('c'),
    {
      apiVersion: 'networking.istio.io/v1',
      kind: 'DestinationRule',
      metadata: {name: 'to-a', namespace: 'c'},
      spec: {host: 'api.a.svc.cluster.local', exportTo: ['.'], trafficPolicy: {tls: {mode: 'ISTIO_MUTUAL'}}},
    },
  ]
  return fleetSnapshots(objects)
}

describe.each([...FLEETS, ['a quiet namespace named by a seen one', namedQuiet] as const])(
  'a namespace’s view with the judged routing left out (%s)',
  (_, read) => {
    it('holds, in the snapshot’s order, what the whole snapshot cut object by object holds', async () => {
      const views = fleetViews(await read())
      const candidates = routingCandidates(views)
      let broadcast = 0
      for (const view of views) {
        const judged = judgedObjects(candidates.get(view.source.namespace))
        const cut = visible(view, judged)
        // The rule, object by object (what `visible` found from the objects it collected in one pass): what bears on all
        // is seen only where it may bear; of a namespace seen only for such objects, once none of them bears (judged, or
        // bearing on this namespace at all), only the Services and Namespace another seen namespace's objects name.
        const home = (o: KubeObject) => (o.kind === 'Namespace' ? o.metadata.name : o.metadata.namespace)
        const quiet = [...view.broadcast]
          .filter(
            ([ns, objects]) =>
              judged.size > 0 && objects.every((o) => judged.has(o) || !bearsOn(o, ns, view.source.namespace)),
          )
          .map(([ns]) => ns)
        const named = new Set([...view.seen].filter(([ns]) => !quiet.includes(ns)).flatMap(([, names]) => [...names]))
        const expected = view.source.objects.filter((o) => {
          const ns = home(o)
          if (ns === undefined) return true
          if (!view.keep!.has(ns) || judged.has(o)) return false
          return (
            !quiet.includes(ns) || (named.has(ns) && o.apiVersion === 'v1' && ['Service', 'Namespace'].includes(o.kind))
          )
        })
        expect(cut.objects, view.source.namespace).toEqual(expected)
        broadcast += quiet.length
      }
      expect(broadcast).toBeGreaterThan(0)
    })
  },
)

describe('what is not judged once for the fleet (classified in each namespace as usual)', () => {
  const owner: RoutingOwner = {
    namespaceLabels: {},
    serviceLabels: (name): Record<string, string> => (name === 'bound' ? {'istio.io/use-waypoint': 'w'} : {}),
  }
  const vs = (spec: Record<string, unknown>): KubeObject => ({
    apiVersion: 'networking.istio.io/v1',
    kind: 'VirtualService',
    metadata: {name: 'r', namespace: 'x'},
    spec,
  })
  const route = (host: string, subset?: string) => [{route: [{destination: {host, ...(subset ? {subset} : {})}}]}]

  it('takes routing within the namespace for its own Services, exported to it', () => {
    expect(ownServiceRouting(vs({hosts: ['api'], http: route('api', 'v1')}), owner)).toEqual({lostToday: true})
    expect(ownServiceRouting(vs({hosts: ['api.x.svc.cluster.local'], http: route('api')}), owner)).toEqual({
      lostToday: true,
    })
  })

  it('leaves the rest', () => {
    // Not exported to its own namespace: its waypoint never applies it (E12 for its callers).
    expect(ownServiceRouting(vs({hosts: ['api'], exportTo: ['y'], http: route('api')}), owner)).toBeUndefined()
    // A host of another namespace, a wildcard, an external host.
    expect(ownServiceRouting(vs({hosts: ['api.y.svc.cluster.local'], http: route('api')}), owner)).toBeUndefined()
    expect(ownServiceRouting(vs({hosts: ['*.x.svc.cluster.local'], http: route('api')}), owner)).toBeUndefined()
    expect(ownServiceRouting(vs({hosts: ['example.com'], http: route('api')}), owner)).toBeUndefined()
    // Routing to another namespace: its subsets are that namespace's rules' (their classification looks at it).
    expect(ownServiceRouting(vs({hosts: ['api'], http: route('db.y.svc.cluster.local', 'v1')}), owner)).toBeUndefined()
    // Bound to gateways only, or a Service already bound to a waypoint of its own (no planned waypoint for it).
    expect(ownServiceRouting(vs({hosts: ['api'], gateways: ['gw'], http: route('api')}), owner)).toBeUndefined()
    expect(ownServiceRouting(vs({hosts: ['bound'], http: route('bound')}), owner)).toBeUndefined()
    const nsBound = {...owner, namespaceLabels: {'istio.io/use-waypoint': 'w'}}
    expect(ownServiceRouting(vs({hosts: ['api'], http: route('api')}), nsBound)).toBeUndefined()
    // A DestinationRule with a workloadSelector is never exported.
    const rule: KubeObject = {
      apiVersion: 'networking.istio.io/v1',
      kind: 'DestinationRule',
      metadata: {name: 'r', namespace: 'x'},
      spec: {host: 'api', workloadSelector: {matchLabels: {app: 'a'}}, trafficPolicy: {connectionPool: {}}},
    }
    expect(ownServiceRouting(rule, owner)).toBeUndefined()
    expect(ownServiceRouting({...rule, spec: {host: 'api', trafficPolicy: {connectionPool: {}}}}, owner)).toEqual({
      lostToday: true,
      ruleHost: 'api.x.svc.cluster.local',
    })
  })
})
