// What kube-controller-manager does besides workloads, for a bare kube-apiserver: default
// ServiceAccounts and the namespace controller emptying namespaces that are being deleted.
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {startTestCluster, type TestCluster} from '../support/cluster.js'
import {create, deployment, get, list, namespaceObject, patch, pods, uniqueName} from './helpers.js'

let c: TestCluster
beforeAll(async () => {
  c = await startTestCluster({quiet: true})
})
afterAll(() => c?.stop())

describe('housekeeping controllers', () => {
  it('gives every namespace a default ServiceAccount', async () => {
    const ns = uniqueName('sa')
    await c.load([namespaceObject(ns)])
    expect(await get(c, 'v1', 'ServiceAccount', ns, 'default')).toBeDefined()
  })

  it('empties a namespace that is being deleted, then leaves its removal to the API server', async () => {
    const ns = uniqueName('doomed')
    // A finalizer of our own keeps the namespace Terminating on the test server, which otherwise
    // removes it and its contents at once (a bare kube-apiserver waits for the namespace controller).
    await c.load([
      {...namespaceObject(ns), metadata: {name: ns, finalizers: ['test.mesh-migrate.io/hold']}},
      deployment(ns, 'web', {replicas: 2}),
      {apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: 'settings', namespace: ns}, data: {a: 'b'}},
      {
        apiVersion: 'security.istio.io/v1',
        kind: 'AuthorizationPolicy',
        metadata: {name: 'deny', namespace: ns},
        spec: {},
      },
    ])
    expect(await pods(c, ns)).toHaveLength(2)
    await c.api.delete({apiVersion: 'v1', kind: 'Namespace', name: ns})
    await c.waitForIdle()
    const terminating = await get(c, 'v1', 'Namespace', undefined, ns)
    expect(terminating?.metadata.deletionTimestamp).toBeDefined()
    for (const [apiVersion, kind] of [
      ['apps/v1', 'Deployment'],
      ['apps/v1', 'ReplicaSet'],
      ['v1', 'Pod'],
      ['v1', 'ConfigMap'],
      ['v1', 'ServiceAccount'],
      ['security.istio.io/v1', 'AuthorizationPolicy'],
    ] as const) {
      expect(await list(c, apiVersion, kind, ns), kind).toEqual([])
    }
    // Nothing was re-created into the terminating namespace.
    expect(c.controlPlane.errors.filter((e) => e.message.includes(ns))).toEqual([])
    await patch(c, 'v1', 'Namespace', undefined, ns, {metadata: {finalizers: null}})
    await c.waitForIdle()
    expect(await get(c, 'v1', 'Namespace', undefined, ns)).toBeUndefined()
  })

  it('leaves objects alone whose owners exist', async () => {
    const ns = uniqueName('owned')
    await c.load([namespaceObject(ns), deployment(ns, 'web')])
    const before = await pods(c, ns)
    const owner = {apiVersion: 'v1', kind: 'Pod', name: before[0]!.metadata.name, uid: before[0]!.metadata.uid}
    await create(c, {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: {name: 'owned', namespace: ns, ownerReferences: [owner]},
      spec: {ports: [{port: 80}]},
    })
    await c.waitForIdle()
    expect(await get(c, 'v1', 'Service', ns, 'owned')).toBeDefined()
    expect((await pods(c, ns)).map((p) => p.metadata.uid)).toEqual(before.map((p) => p.metadata.uid))
  })
})
