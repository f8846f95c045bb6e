// istiod's waypoint handling (DOMAIN §1.3–§1.8) observed through the API: the generated objects,
// the Gateway status with readiness delay and failure modes, revision ownership, Service binding
// conditions, and cleanup when the Gateway goes away.
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {runCheck} from '../../src/executor/verify.js'
import type {KubeObject} from '../../src/planner/model.js'
import {buildWaypoint} from '../../src/planner/waypoint.js'
import {startTestCluster, USERS, type TestCluster} from '../support/cluster.js'
import {
  condition,
  create,
  get,
  labelNamespace,
  list,
  mustGet,
  namespaceObject,
  onExternalCluster,
  patch,
  pods,
  uniqueName,
} from './helpers.js'

const GW = 'gateway.networking.k8s.io/v1'

function service(namespace: string, name: string, labels: Record<string, string> = {}): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {name, namespace, labels},
    spec: {selector: {app: name}, ports: [{name: 'http', port: 9080}]},
  }
}

/** A condition of the Gateway's first listener (listener conditions sit on the listener itself). */
function listenerCondition(
  gw: KubeObject,
  type: string,
): {status: string; reason?: string; message?: string} | undefined {
  return (gw.status?.listeners?.[0]?.conditions as {type: string; status: string}[] | undefined)?.find(
    (c) => c.type === type,
  )
}

function waypoint(
  namespace: string,
  name = 'waypoint',
  labels: Record<string, string> = {},
  listener: Record<string, unknown> = {},
): KubeObject {
  const gw = buildWaypoint({name, namespace, waypointFor: 'service'})
  gw.metadata.labels = {...gw.metadata.labels, ...labels}
  gw.spec.listeners[0] = {...gw.spec.listeners[0], ...listener}
  return gw
}

describe('waypoint Gateways', () => {
  let c: TestCluster
  const ns = uniqueName('wp')

  beforeAll(async () => {
    c = await startTestCluster({
      quiet: true,
      controlPlane: {podStartupMs: 5},
      fixture: [
        namespaceObject(ns, {'istio-injection': 'enabled', 'istio.io/dataplane-mode': 'ambient'}),
        service(ns, 'reviews'),
        service(ns, 'ratings'),
      ],
    })
  })
  afterAll(() => c?.stop())

  it('deploys the ServiceAccount, Deployment and Service istiod deploys, owned by the Gateway', async () => {
    const gw = await create(c, waypoint(ns))
    await c.waitForIdle()
    const owner = {apiVersion: GW, kind: 'Gateway', name: 'waypoint', uid: gw.metadata.uid}
    const labels = {
      'gateway.networking.k8s.io/gateway-name': 'waypoint',
      'gateway.networking.k8s.io/gateway-class-name': 'istio-waypoint',
      'gateway.istio.io/managed': 'istio.io-mesh-controller',
    }
    for (const [apiVersion, kind] of [
      ['v1', 'ServiceAccount'],
      ['apps/v1', 'Deployment'],
      ['v1', 'Service'],
    ]) {
      const obj = await mustGet(c, apiVersion!, kind!, ns, 'waypoint')
      expect(obj.metadata.labels).toMatchObject(labels)
      expect(obj.metadata.ownerReferences).toEqual([expect.objectContaining(owner)])
    }
    const deployment = await mustGet(c, 'apps/v1', 'Deployment', ns, 'waypoint')
    expect(deployment.spec?.template?.metadata?.labels).toMatchObject({
      'sidecar.istio.io/inject': 'false',
      'istio.io/dataplane-mode': 'none',
      ...labels,
    })
    expect(deployment.spec?.template?.metadata?.annotations).toMatchObject({'istio.io/rev': 'default'})
    expect(deployment.spec?.template?.spec?.serviceAccountName).toBe('waypoint')
    const svc = await mustGet(c, 'v1', 'Service', ns, 'waypoint')
    expect(svc.spec?.ports).toEqual(
      expect.arrayContaining([expect.objectContaining({name: 'mesh', port: 15008, appProtocol: 'all'})]),
    )
    // The waypoint's own pod: neither injected (the namespace injects) nor captured (the namespace is ambient).
    const [pod] = await pods(c, ns, 'gateway.networking.k8s.io/gateway-name=waypoint')
    expect(pod!.metadata.annotations?.['sidecar.istio.io/status']).toBeUndefined()
    expect(pod!.metadata.annotations?.['ambient.istio.io/redirection']).toBeUndefined()
    expect(pod!.status?.phase).toBe('Running')
  })

  it('reports Accepted, Programmed and the addresses once the Deployment is available — what apply verifies', async () => {
    const gw = await mustGet(c, GW, 'Gateway', ns, 'waypoint')
    const svc = await mustGet(c, 'v1', 'Service', ns, 'waypoint')
    expect(condition(gw, 'Accepted')).toMatchObject({status: 'True', reason: 'Accepted'})
    expect(condition(gw, 'Programmed')).toMatchObject({
      status: 'True',
      reason: 'Programmed',
      message: `Resource programmed, assigned to service(s) waypoint.${ns}.svc.cluster.local:15008`,
    })
    expect(gw.status?.addresses).toEqual([
      {type: 'IPAddress', value: svc.spec?.clusterIP},
      {type: 'Hostname', value: `waypoint.${ns}.svc.cluster.local`},
    ])
    expect(gw.status?.listeners?.[0]).toMatchObject({name: 'mesh', attachedRoutes: 0})
    expect(listenerCondition(gw, 'Accepted')?.status).toBe('True')
    const verdict = await runCheck(
      {check: 'waypoint-ready', ref: {apiVersion: GW, kind: 'Gateway', namespace: ns, name: 'waypoint'}},
      {client: c.client, namespace: ns},
    )
    expect(verdict.ok).toBe(true)
    expect(condition(await mustGet(c, GW, 'GatewayClass', undefined, 'istio-waypoint'), 'Accepted')).toMatchObject({
      status: 'True',
      reason: 'Accepted',
    })
  })

  it('binds Services through the namespace label, lets a Service opt out or pick another waypoint, and clears the condition when unbound', async () => {
    await create(c, service(ns, 'details', {'istio.io/use-waypoint': 'none'}))
    await create(c, service(ns, 'productpage', {'istio.io/use-waypoint': 'missing'}))
    await labelNamespace(c, ns, {'istio.io/use-waypoint': 'waypoint'})
    await c.waitForIdle()
    const bound = async (name: string) =>
      condition(await mustGet(c, 'v1', 'Service', ns, name), 'istio.io/WaypointBound')
    expect(await bound('reviews')).toMatchObject({
      status: 'True',
      reason: 'WaypointAccepted',
      message: `Successfully attached to waypoint ${ns}/waypoint`,
    })
    expect(await bound('ratings')).toMatchObject({status: 'True'})
    expect(await bound('details')).toBeUndefined()
    expect(await bound('productpage')).toMatchObject({
      status: 'False',
      reason: 'WaypointIsNotReady',
      message: `waypoint "${ns}/missing" is not ready`,
    })
    // The waypoint's own Service is never bound.
    expect(await bound('waypoint')).toBeUndefined()
    const verdict = await runCheck(
      {
        check: 'waypoint-bound',
        ref: {apiVersion: GW, kind: 'Gateway', namespace: ns, name: 'waypoint'},
        services: ['reviews', 'ratings'],
      },
      {client: c.client, namespace: ns},
    )
    expect(verdict.ok).toBe(true)

    await labelNamespace(c, ns, {'istio.io/use-waypoint': null})
    await c.waitForIdle()
    expect(await bound('reviews')).toBeUndefined()
    expect(await bound('productpage')).toMatchObject({reason: 'WaypointIsNotReady'})
  })

  it('refuses bindings the waypoint does not admit: other namespaces without allowedRoutes, workload-only waypoints', async () => {
    const consumer = uniqueName('wp-consumer')
    await c.load([
      namespaceObject(consumer, {'istio.io/use-waypoint': 'waypoint', 'istio.io/use-waypoint-namespace': ns}),
      service(consumer, 'api'),
      service(consumer, 'worker', {'istio.io/use-waypoint': 'workload-only'}),
      waypoint(consumer, 'workload-only', {'istio.io/waypoint-for': 'workload'}),
    ])
    const bound = async (name: string) =>
      condition(await mustGet(c, 'v1', 'Service', consumer, name), 'istio.io/WaypointBound')
    expect(await bound('api')).toMatchObject({
      status: 'False',
      reason: 'AttachmentDenied',
      message: `we are not permitted to attach to waypoint "${ns}/waypoint" (missing allowedRoutes?)`,
    })
    expect(await bound('worker')).toMatchObject({
      status: 'False',
      reason: 'UnsupportedTrafficType',
      message: `attempting to bind to traffic type "service" which the waypoint "${consumer}/workload-only" does not support`,
    })

    await patch(c, GW, 'Gateway', ns, 'waypoint', {
      spec: {listeners: [{name: 'mesh', port: 15008, protocol: 'HBONE', allowedRoutes: {namespaces: {from: 'All'}}}]},
    })
    await c.waitForIdle()
    expect(await bound('api')).toMatchObject({
      status: 'True',
      message: `Successfully attached to waypoint ${ns}/waypoint`,
    })
  })

  it('reports a listener that is not HBONE on 15008', async () => {
    await create(c, waypoint(ns, 'bad-listener', {}, {port: 1234, protocol: 'HTTP'}))
    await c.waitForIdle()
    const gw = await mustGet(c, GW, 'Gateway', ns, 'bad-listener')
    expect(listenerCondition(gw, 'Accepted')).toMatchObject({
      status: 'False',
      reason: 'UnsupportedProtocol',
      message: 'Expected a single listener on port 15008 with protocol "HBONE"',
    })
  })

  it('removes what it deployed when the Gateway is deleted; bound Services then see a waypoint that is not ready', async () => {
    await labelNamespace(c, ns, {'istio.io/use-waypoint': 'waypoint'})
    await c.waitForIdle()
    await c.api.delete({apiVersion: GW, kind: 'Gateway', namespace: ns, name: 'waypoint'})
    await c.waitForIdle()
    for (const [apiVersion, kind] of [
      ['v1', 'ServiceAccount'],
      ['apps/v1', 'Deployment'],
      ['v1', 'Service'],
    ]) {
      expect(await get(c, apiVersion!, kind!, ns, 'waypoint')).toBeUndefined()
    }
    expect(await pods(c, ns, 'gateway.networking.k8s.io/gateway-name=waypoint')).toEqual([])
    expect(condition(await mustGet(c, 'v1', 'Service', ns, 'reviews'), 'istio.io/WaypointBound')).toMatchObject({
      status: 'False',
      reason: 'WaypointIsNotReady',
    })
  })
})

describe('waypoint readiness delay and failures', () => {
  let c: TestCluster
  const ns = uniqueName('wp-delay')

  beforeAll(async () => {
    c = await startTestCluster({
      quiet: true,
      controlPlane: {podStartupMs: 5, waypoint: {readyDelayMs: 'never'}},
      fixture: [namespaceObject(ns)],
    })
  })
  afterAll(() => c?.stop())

  it('keeps a waypoint unprogrammed (no addresses) while its readiness is withheld, then programs it', async () => {
    await create(c, waypoint(ns))
    await c.waitForIdle()
    let gw = await mustGet(c, GW, 'Gateway', ns, 'waypoint')
    expect((await mustGet(c, 'apps/v1', 'Deployment', ns, 'waypoint')).status?.availableReplicas).toBe(1)
    expect(condition(gw, 'Accepted')?.status).toBe('True')
    expect(condition(gw, 'Programmed')).toMatchObject({status: 'False', reason: 'AddressNotUsable'})
    expect(gw.status?.addresses).toBeUndefined()
    const verdict = await runCheck(
      {check: 'waypoint-ready', ref: {apiVersion: GW, kind: 'Gateway', namespace: ns, name: 'waypoint'}},
      {client: c.client, namespace: ns},
    )
    expect(verdict.ok).toBe(false)

    c.controlPlane.configure({waypoint: {readyDelayMs: 30}})
    await c.waitForIdle()
    gw = await mustGet(c, GW, 'Gateway', ns, 'waypoint')
    expect(condition(gw, 'Programmed')?.status).toBe('True')
    expect(gw.status?.addresses).toHaveLength(2)
  })

  it('reports the configured failure reason and recovers when the failure is cleared', async () => {
    c.controlPlane.configure({waypoint: {readyDelayMs: 0, failure: {reason: 'AddressNotAssigned'}}})
    await c.waitForIdle()
    let gw = await mustGet(c, GW, 'Gateway', ns, 'waypoint')
    expect(condition(gw, 'Programmed')).toMatchObject({
      status: 'False',
      reason: 'AddressNotAssigned',
      message: expect.stringContaining(`waypoint.${ns}.svc.cluster.local`),
    })
    expect(gw.status?.addresses).toBeUndefined()

    c.controlPlane.configure({waypoint: {failure: {reason: 'UnsupportedAddress', message: 'custom message'}}})
    await c.waitForIdle()
    gw = await mustGet(c, GW, 'Gateway', ns, 'waypoint')
    expect(condition(gw, 'Programmed')).toMatchObject({
      status: 'False',
      reason: 'UnsupportedAddress',
      message: 'custom message',
    })

    c.controlPlane.configure({waypoint: {failure: undefined}})
    await c.waitForIdle()
    gw = await mustGet(c, GW, 'Gateway', ns, 'waypoint')
    expect(condition(gw, 'Programmed')?.status).toBe('True')
  })

  it.skipIf(onExternalCluster)('writes the status through the status subresource with its own identity', async () => {
    const writes = c.server!.requestsMatching({resource: 'gateways', subresource: 'status', verb: 'patch'})
    expect(writes.length).toBeGreaterThan(0)
    expect(new Set(writes.map((w) => w.user))).toEqual(new Set([USERS.controlPlane]))
  })
})

describe('waypoint revision ownership', () => {
  let c: TestCluster
  const ns = {plain: uniqueName('wp-rev-plain'), canary: uniqueName('wp-rev-canary')}

  beforeAll(async () => {
    c = await startTestCluster({
      quiet: true,
      install: {
        revisions: [{revision: 'default'}, {revision: 'canary'}, {revision: 'broken', istiod: 'not-ready'}],
        tags: {prod: 'canary'},
      },
      fixture: [
        namespaceObject(ns.plain),
        namespaceObject(ns.canary, {'istio.io/rev': 'canary'}),
        waypoint(ns.plain, 'default-wp'),
        waypoint(ns.plain, 'canary-wp', {'istio.io/rev': 'canary'}),
        waypoint(ns.plain, 'tagged-wp', {'istio.io/rev': 'prod'}),
        waypoint(ns.plain, 'orphan-wp', {'istio.io/rev': 'gone'}),
        waypoint(ns.plain, 'broken-wp', {'istio.io/rev': 'broken'}),
        waypoint(ns.canary, 'inherits-wp'),
      ],
    })
  })
  afterAll(() => c?.stop())

  const owner = async (namespace: string, name: string) =>
    (await get(c, 'apps/v1', 'Deployment', namespace, name))?.spec?.template?.metadata?.annotations?.['istio.io/rev']

  it('is reconciled by the revision of its istio.io/rev label, a tag, or its namespace', async () => {
    expect(await owner(ns.plain, 'default-wp')).toBe('default')
    expect(await owner(ns.plain, 'canary-wp')).toBe('canary')
    expect(await owner(ns.plain, 'tagged-wp')).toBe('canary')
    expect(await owner(ns.canary, 'inherits-wp')).toBe('canary')
    for (const [namespace, name] of [
      [ns.plain, 'default-wp'],
      [ns.plain, 'tagged-wp'],
      [ns.canary, 'inherits-wp'],
    ] as const) {
      expect(condition(await mustGet(c, GW, 'Gateway', namespace, name), 'Programmed')?.status).toBe('True')
    }
  })

  it('is left alone when its revision does not run (absent, or istiod not ready)', async () => {
    for (const name of ['orphan-wp', 'broken-wp']) {
      expect(await get(c, 'apps/v1', 'Deployment', ns.plain, name)).toBeUndefined()
      expect((await mustGet(c, GW, 'Gateway', ns.plain, name)).status?.conditions ?? []).not.toContainEqual(
        expect.objectContaining({type: 'Programmed', status: 'True'}),
      )
    }
  })

  it('changes hands when the namespace label it inherits is removed (the E1 trap)', async () => {
    await labelNamespace(c, ns.canary, {'istio.io/rev': null})
    await c.waitForIdle()
    expect(await owner(ns.canary, 'inherits-wp')).toBe('default')
    const deployments = await list(c, 'apps/v1', 'Deployment', ns.canary)
    expect(deployments.map((d) => d.metadata.name)).toEqual(['inherits-wp'])
  })
})
