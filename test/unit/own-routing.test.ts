// plan -A judges the routing a namespace defines for its own Services once for the fleet (src/planner/classify/
// own-routing.ts, src/plan/fleet-routing.ts) and leaves it out of every other namespace's snapshot. These tests hold that
// rule to the classifiers it stands for: for every namespace that sees such an object, classifying it there as plan NS
// does gives "lost today" exactly when the rule says so, and "kept" once the owner's waypoint is in place (DOMAIN §3.4,
// §3.5: a waypoint applies the VirtualServices and DestinationRules of its Service's namespace exported to it); and
// leaving the judged objects out of a namespace's snapshot changes nothing else its inventory says.
import {describe, expect, it} from 'vitest'

import {selectNamespaces} from '../../src/plan/fleet.js'
import {judgedObjects, routingCandidates} from '../../src/plan/fleet-routing.js'
import {fleetViews, visible} from '../../src/plan/fleet-visibility.js'
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
