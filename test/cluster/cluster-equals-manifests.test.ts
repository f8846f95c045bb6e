// Loading the same objects from manifests and from a cluster gives the same inventory and plan (issue 3 item 1).
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {buildInventory} from '../../src/planner/inventory.js'
import {buildPlan} from '../../src/plan/plan-builder.js'
import {refKey} from '../../src/planner/refs.js'
import {ClusterSource} from '../../src/sources/cluster.js'
import {loadManifestFiles, ManifestSource} from '../../src/sources/manifests.js'
import {type ClusterServer, startClusterServer} from './server.js'
import {clientFor} from './support.js'

let server: ClusterServer
beforeAll(async () => {
  server = await startClusterServer()
  const {objects} = await loadManifestFiles(['examples/bookinfo'], {defaultNamespace: 'bookinfo'})
  await server.seed(objects as never)
})
afterAll(() => server.close())

describe('examples/bookinfo from manifests and from a cluster', () => {
  it('gives the same verdicts, actions and reasons, the same workloads and the same plan steps', async () => {
    const options = {rootNamespace: 'istio-system', waypointName: 'waypoint', waypointFor: 'service' as const}
    const fromFiles = await new ManifestSource(['examples/bookinfo']).snapshot('bookinfo', {
      rootNamespace: 'istio-system',
    })
    const cluster = await ClusterSource.open(await clientFor(server))
    const fromCluster = await cluster.snapshot('bookinfo', {rootNamespace: 'istio-system'})

    const a = buildInventory(fromFiles, {waypointFor: 'service'})
    const b = buildInventory(fromCluster, {waypointFor: 'service'})
    const view = (inv: typeof a) =>
      inv.objects.map((o) => ({
        key: refKey(o.ref),
        verdict: o.verdict,
        action: o.action,
        reasons: o.reasons,
        scope: o.scope,
        ztunnel: o.ztunnel,
      }))
    expect(view(b)).toEqual(view(a))
    expect(b.objects.length).toBeGreaterThan(5)
    expect(b.workloads.map((w) => ({key: refKey(w.ref), proxy: w.proxy, traits: w.traits}))).toEqual(
      a.workloads.map((w) => ({key: refKey(w.ref), proxy: w.proxy, traits: w.traits})),
    )
    expect(b.waypointRequired).toBe(a.waypointRequired)
    // The API server labels every Namespace with kubernetes.io/metadata.name (since 1.21); manifests do not carry it.
    const {labels: labelsB, ...stateB} = b.namespaceState
    const {labels: labelsA, ...stateA} = a.namespaceState
    expect(stateB).toEqual(stateA)
    expect(labelsB).toEqual({...labelsA, 'kubernetes.io/metadata.name': 'bookinfo'})
    // The cluster reports which CRDs it lacks; the findings otherwise agree.
    expect(b.findings.filter((f) => f.code !== 'MissingKind').map((f) => f.id)).toEqual(a.findings.map((f) => f.id))

    const planA = buildPlan({inventory: a, snapshot: fromFiles, options, generator: 'test'})
    const planB = buildPlan({inventory: b, snapshot: fromCluster, options, generator: 'test'})
    expect(planA.spec.steps.length).toBeGreaterThan(3)
    expect(planB.spec.steps).toEqual(planA.spec.steps)
    const {target: targetA, ...restA} = planA.spec
    const {target: targetB, ...restB} = planB.spec
    expect(targetA).toEqual({manifests: ['examples/bookinfo']})
    expect(targetB).toMatchObject({context: 'test-apiserver', server: server.url})
    // spec.observed is what the plan was computed from, so it records the cluster's own additions: the
    // kubernetes.io/metadata.name label the API server puts on every Namespace, and (in the fingerprint) the
    // fields it defaults in Deployments and Services (replicas, dnsPolicy, clusterIP…). Everything else is equal.
    const {observed: observedA, findings: findingsA, ...otherA} = restA
    const {observed: observedB, findings: findingsB, ...otherB} = restB
    expect(otherB).toEqual(otherA)
    // Neither source has a mesh ConfigMap, so both assume cluster.local; a cluster without one is worth a warning
    // (istiod's ConfigMap should be there), manifests without one only an info (issue 21 §8). Otherwise equal.
    const trustDomain = (f: {code: string}) => f.code === 'TrustDomainAssumed'
    expect(findingsB.filter((f) => !trustDomain(f))).toEqual(findingsA.filter((f) => !trustDomain(f)))
    expect(findingsA.filter(trustDomain).map((f) => f.severity)).toEqual(['info'])
    expect(findingsB.filter(trustDomain).map((f) => f.severity)).toEqual(['warning'])
    expect(observedB.namespaceLabels).toEqual({...observedA.namespaceLabels, 'kubernetes.io/metadata.name': 'bookinfo'})
  })
})
