// The in-memory KubeClient the executor's unit tests run on: the shared contract (also run against the test
// cluster's API server in test/cluster/kube-contract.test.ts), and what only the in-memory client offers.
import {describe, expect, it} from 'vitest'

import {KubeConnectionError} from '../../src/kube/errors.js'
import {rejection, kubeClientContract} from '../support/kube-contract.js'
import {MemoryKube} from '../support/memory-kube.js'

describe('MemoryKube: the KubeClient contract', () => {
  const kube = new MemoryKube()
  kubeClientContract(() => kube)
})

describe('MemoryKube: faults, RBAC and other actors', () => {
  const cm = {apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: 'cm', namespace: 'ns', labels: {a: '1'}}}
  const ref = {apiVersion: 'v1', kind: 'ConfigMap', namespace: 'ns', name: 'cm'}
  const seeded = () => new MemoryKube().seed({apiVersion: 'v1', kind: 'Namespace', metadata: {name: 'ns'}}, cm)

  it('failNext fails the next matching call before the write; with afterWrite, after storing it (an answer lost after the write)', async () => {
    const kube = seeded().failNext({verb: 'patch', status: 409})
    const error = await rejection(kube.mergePatch(ref, {metadata: {labels: {a: '2'}}}))
    expect(error.status).toBe(409)
    expect(kube.peek(ref)?.metadata.labels).toEqual({a: '1'})
    kube.failNext({verb: 'patch', connection: true, afterWrite: true})
    await expect(kube.mergePatch(ref, {metadata: {labels: {a: '3'}}})).rejects.toBeInstanceOf(KubeConnectionError)
    expect(kube.peek(ref)?.metadata.labels).toEqual({a: '3'})
    // The fault is used up.
    expect((await kube.mergePatch(ref, {metadata: {labels: {a: '4'}}})).metadata.labels).toEqual({a: '4'})
  })

  it("forbid: the verb is refused with the API server's 403 message and canI says no", async () => {
    const kube = seeded().forbid('patch', '', 'configmaps', 'ns')
    const error = await rejection(kube.mergePatch(ref, {metadata: {labels: {a: '2'}}}))
    expect(error.status).toBe(403)
    expect(error.message).toContain(
      'User "memory-user" cannot patch resource "configmaps" in API group "" in the namespace "ns"',
    )
    expect(error.suggestion).toContain('Grant "patch" on configmaps in namespace ns')
    expect(await kube.canI({verb: 'patch', group: '', resource: 'configmaps', namespace: 'ns'})).toMatchObject({
      allowed: false,
    })
    expect(await kube.canI({verb: 'get', group: '', resource: 'configmaps', namespace: 'ns'})).toEqual({allowed: true})
  })

  it('an edit by another actor bumps the resourceVersion, so a patch guarded by the old one is a 409', async () => {
    const kube = seeded()
    const before = await kube.get(ref)
    kube.edit(ref, (o) => {
      o.metadata.labels = {a: 'theirs'}
    })
    const error = await rejection(
      kube.mergePatch(ref, {metadata: {labels: {a: 'ours'}, resourceVersion: before!.metadata.resourceVersion}}),
    )
    expect(error.reason).toBe('Conflict')
    expect(kube.peek(ref)?.metadata.labels).toEqual({a: 'theirs'})
  })

  it('an API that is not served is a 404 naming the missing CRD, before any request', async () => {
    const kube = new MemoryKube({resources: []})
    const error = await rejection(
      kube.get({apiVersion: 'security.istio.io/v1', kind: 'AuthorizationPolicy', namespace: 'ns', name: 'x'}),
    )
    expect(error.status).toBe(404)
    expect(error.suggestion).toContain(
      'CustomResourceDefinition for AuthorizationPolicy in API group security.istio.io is not installed',
    )
    expect(kube.requests).toEqual([])
  })

  it('server-side apply without force does not take over a field another writer set', async () => {
    const kube = seeded()
    const error = await rejection(kube.apply({...cm, metadata: {...cm.metadata, labels: {a: 'mine'}}}))
    expect(error.reason).toBe('Conflict')
    expect(
      (await kube.apply({...cm, metadata: {...cm.metadata, labels: {a: 'mine'}}}, {force: true})).metadata.labels,
    ).toEqual({a: 'mine'})
  })

  it('objects are copies: changing what get returned changes nothing stored', async () => {
    const kube = seeded()
    const got = await kube.get(ref)
    got!.metadata.labels!.a = 'changed'
    expect(kube.peek(ref)?.metadata.labels).toEqual({a: '1'})
  })
})
