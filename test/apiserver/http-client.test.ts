// The mesh-migrate Kubernetes client (src/kube/http-client.ts) against the test API server: which
// failed requests it resends, credential refresh on 401, and the served-version fallback.
import {afterAll, afterEach, beforeAll, describe, expect, it} from 'vitest'

import {NamespaceLock} from '../../src/executor/lock.js'
import {KubeApiError, KubeConnectionError} from '../../src/kube/errors.js'
import type {KubeClient} from '../../src/kube/types.js'
import type {KubeObject} from '../../src/planner/model.js'
import {startApiServer, type TestApiServer} from '../support/apiserver/index.js'
import {clientFor} from '../cluster/support.js'

let server: TestApiServer
beforeAll(async () => {
  server = await startApiServer({quiet: true, crdFiles: 'builtin'})
  server.seed({apiVersion: 'v1', kind: 'Namespace', metadata: {name: 'hc'}})
})
afterEach(() => server.faults.clear())
afterAll(() => server.close())

const configMap = (name: string): KubeObject => ({apiVersion: 'v1', kind: 'ConfigMap', metadata: {name, namespace: 'hc'}, data: {a: '1'}})
const outcomes = (filter: Parameters<TestApiServer['requestsMatching']>[0]) => server.requestsMatching(filter).map((e) => (e.dropped ? 'dropped' : e.status))

describe('resending failed requests', () => {
  it.each([500, 502, 503, 504])('does not resend a create answered %i (it may have been applied): the caller gets the error', async (status) => {
    const client = await clientFor(server, undefined, {retries: 3})
    const name = `create-${status}`
    server.faults.add({match: {verb: 'create', resource: 'configmaps'}, status, times: 1})
    server.resetRequestLog()
    const error = await client.create(configMap(name)).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(KubeApiError)
    expect((error as KubeApiError).status).toBe(status)
    expect(outcomes({verb: 'create', resource: 'configmaps'})).toEqual([status])
  })

  it('does not resend a create after a dropped connection', async () => {
    const client = await clientFor(server, undefined, {retries: 3})
    server.faults.add({match: {verb: 'create', resource: 'configmaps'}, drop: 'after-write', times: 1})
    server.resetRequestLog()
    const error = await client.create(configMap('dropped-create')).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(KubeConnectionError)
    expect(outcomes({verb: 'create', resource: 'configmaps'})).toEqual(['dropped'])
    // It was applied anyway: resending would have answered 409 AlreadyExists.
    expect(server.get({apiVersion: 'v1', kind: 'ConfigMap', namespace: 'hc', name: 'dropped-create'})).toBeDefined()
  })

  it('resends a create answered 429 (the server did not process it)', async () => {
    const client = await clientFor(server, undefined, {retries: 3})
    server.faults.add({match: {verb: 'create', resource: 'configmaps'}, status: 429, times: 1})
    server.resetRequestLog()
    const created = await client.create(configMap('throttled-create'))
    expect(created.metadata.name).toBe('throttled-create')
    expect(outcomes({verb: 'create', resource: 'configmaps'})).toEqual([429, 201])
  })

  it('keeps resending idempotent requests after a 5xx or a dropped connection', async () => {
    const client = await clientFor(server, undefined, {retries: 3})
    server.faults.add({match: {verb: 'patch', name: 'applied'}, status: 503, times: 1})
    server.faults.add({match: {verb: 'patch', name: 'applied'}, drop: 'after-write', times: 1})
    server.faults.add({match: {verb: 'get', name: 'applied'}, status: 500, times: 1})
    server.resetRequestLog()
    await client.apply(configMap('applied'))
    expect(outcomes({verb: 'patch', name: 'applied'})).toEqual([503, 'dropped', 200])
    expect((await client.get({apiVersion: 'v1', kind: 'ConfigMap', namespace: 'hc', name: 'applied'}))?.data).toEqual({a: '1'})
    expect(outcomes({verb: 'get', name: 'applied'})).toEqual([500, 200])
  })
})

/** A client whose create fails after the server applied it, or is sent twice (a resending proxy). */
function ambiguousCreates(inner: KubeClient, mode: '504-after-write' | 'resent'): KubeClient {
  return new Proxy(inner, {
    get(target, prop, receiver) {
      if (prop !== 'create') {
        const value = Reflect.get(target, prop, receiver)
        return typeof value === 'function' ? value.bind(target) : value
      }
      return async (obj: KubeObject) => {
        await target.create(obj)
        if (mode === 'resent') return target.create(obj)
        throw new KubeApiError(504, {reason: 'Timeout', message: 'the server was unable to return a response in the time allotted'}, {method: 'POST', verb: 'create', group: 'coordination.k8s.io', resource: 'leases', what: 'create lease'}, 'test')
      }
    },
  })
}

describe('the namespace Lease', () => {
  it.each(['504-after-write', 'resent'] as const)('counts as acquired when its create was applied but answered %s, since the Lease names us', async (mode) => {
    const namespace = `lease-${mode}`
    server.seed({apiVersion: 'v1', kind: 'Namespace', metadata: {name: namespace}})
    const client = ambiguousCreates(await clientFor(server), mode)
    const lock = await NamespaceLock.acquire(client, {namespace, command: 'apply', plan: 'p.yaml', timeoutMs: 300})
    const lease = server.get({apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', namespace, name: 'mesh-migrate-lock'})
    expect(lease?.spec?.holderIdentity).toBe(lock.info.holder)
    lock.assertHeld()
    await lock.release()
    expect(server.get({apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', namespace, name: 'mesh-migrate-lock'})).toBeUndefined()
  })
})
