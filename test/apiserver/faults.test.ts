import {CoreV1Api, KubernetesObjectApi} from '@kubernetes/client-node'
import {afterAll, afterEach, beforeAll, describe, expect, it} from 'vitest'
import {startApiServer, type TestApiServer} from '../support/apiserver/index.js'
import {kubeConfig, namespace, raw, statusOf} from './helpers.js'

let server: TestApiServer
beforeAll(async () => {
  server = await startApiServer({quiet: true, crdFiles: 'builtin'})
  server.seed(namespace('f'))
})
afterEach(() => server.faults.clear())
afterAll(() => server.close())

const cm = (name: string) => ({apiVersion: 'v1', kind: 'ConfigMap', metadata: {name}, data: {a: '1'}})

describe('fault injection', () => {
  it('answers with a chosen status and the Status body the real server uses for it', async () => {
    const fault = server.faults.add({
      match: {verb: 'list', resource: 'configmaps'},
      status: 503,
      times: 1,
      name: 'apiserver-down',
    })
    const core = kubeConfig(server).makeApiClient(CoreV1Api)
    const err = await core.listNamespacedConfigMap({namespace: 'f'}).catch((e) => e)
    expect(statusOf(err)).toEqual({
      code: 503,
      body: {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message: 'the server is currently unable to handle the request',
        reason: 'ServiceUnavailable',
        details: {},
        code: 503,
      },
    })
    // times: 1 — the next request goes through.
    expect((await core.listNamespacedConfigMap({namespace: 'f'})).items).toEqual([])
    expect(fault.fired).toBe(1)
    const log = server.requestsMatching({verb: 'list', resource: 'configmaps', namespace: 'f'})
    expect(log.map((e) => [e.status, e.fault])).toEqual([
      [503, 'apiserver-down'],
      [200, undefined],
    ])
  })

  it('lets `after` requests through first, then fires', async () => {
    server.faults.add({match: {method: 'POST', path: /\/configmaps$/}, after: 2, status: 429})
    const api = raw(server)
    const codes = []
    for (const n of ['a1', 'a2', 'a3']) codes.push((await api.post('/api/v1/namespaces/f/configmaps', cm(n))).status)
    expect(codes).toEqual([201, 201, 429])
    const limited = server.requestsMatching({status: 429}).at(-1)!
    expect(limited.reason).toBe('TooManyRequests')
  })

  it('adds latency before processing', async () => {
    server.faults.add({match: {verb: 'get', name: 'slow'}, latencyMs: 150})
    server.seed({...cm('slow'), metadata: {name: 'slow', namespace: 'f'}})
    const r = await raw(server).get('/api/v1/namespaces/f/configmaps/slow')
    expect(r.status).toBe(200)
    const entry = server.requestsMatching({verb: 'get', name: 'slow'}).at(-1)!
    expect(entry.finishedAt! - entry.startedAt).toBeGreaterThanOrEqual(150)
  })

  it('drops the connection before processing: the client fails and nothing changes', async () => {
    server.faults.add({match: {verb: 'create', resource: 'configmaps'}, drop: 'before', times: 1})
    await expect(raw(server).post('/api/v1/namespaces/f/configmaps', cm('never'))).rejects.toThrow()
    expect(server.get({apiVersion: 'v1', kind: 'ConfigMap', namespace: 'f', name: 'never'})).toBeUndefined()
    const entry = server.requestsMatching({verb: 'create', resource: 'configmaps'}).at(-1)!
    expect(entry).toMatchObject({dropped: true})
    expect(entry.status).toBeUndefined()
  })

  it('drops the connection after the write: the client fails but the object changed', async () => {
    server.seed({...cm('crashy'), metadata: {name: 'crashy', namespace: 'f', labels: {step: 'before'}}})
    server.faults.add({match: {verb: 'patch', name: 'crashy'}, drop: 'after-write', times: 1})
    const objects = KubernetesObjectApi.makeApiClient(kubeConfig(server))
    const attempt = objects.patch(
      {apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: 'crashy', namespace: 'f', labels: {step: 'after'}}},
      undefined,
      undefined,
      'mesh-migrate',
      undefined,
      'application/merge-patch+json',
    )
    await expect(attempt).rejects.toThrow()
    expect(server.get({apiVersion: 'v1', kind: 'ConfigMap', namespace: 'f', name: 'crashy'})!.metadata.labels).toEqual({
      step: 'after',
    })
    expect(server.requestsMatching({verb: 'patch', name: 'crashy'}).at(-1)).toMatchObject({dropped: true})
    // The retry of an idempotent write succeeds and changes nothing more.
    const retry = await objects.patch(
      {apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: 'crashy', namespace: 'f', labels: {step: 'after'}}},
      undefined,
      undefined,
      'mesh-migrate',
      undefined,
      'application/merge-patch+json',
    )
    expect(retry.metadata?.labels).toEqual({step: 'after'})
  })

  it('can be removed individually', async () => {
    const f = server.faults.add({match: {path: '/api/v1/namespaces/f/configmaps/a1'}, status: 500})
    expect((await raw(server).get('/api/v1/namespaces/f/configmaps/a1')).status).toBe(500)
    f.remove()
    expect((await raw(server).get('/api/v1/namespaces/f/configmaps/a1')).status).toBe(200)
  })
})

describe('request log', () => {
  it('records method, path, query, content type, user, verb, kind and status for counting', async () => {
    server.resetRequestLog()
    const objects = KubernetesObjectApi.makeApiClient(kubeConfig(server))
    await objects.list('v1', 'ConfigMap', 'f', undefined, undefined, undefined, undefined, 'a=b', 10)
    await objects.list('v1', 'Pod', undefined)
    expect(server.requestsMatching({verb: 'list', kind: 'ConfigMap'})).toHaveLength(1)
    expect(server.requestsMatching({verb: 'list', kind: 'Pod'})).toHaveLength(1)
    const entry = server.requestsMatching({verb: 'list', kind: 'ConfigMap'})[0]!
    expect(entry).toMatchObject({
      method: 'GET',
      path: '/api/v1/namespaces/f/configmaps',
      query: {labelSelector: 'a=b', limit: '10'},
      user: 'admin',
      group: '',
      version: 'v1',
      resource: 'configmaps',
      namespace: 'f',
      status: 200,
      dropped: false,
      watch: false,
    })
    expect(entry.finishedAt).toBeGreaterThanOrEqual(entry.startedAt)
    const podList = server.requestsMatching({verb: 'list', kind: 'Pod'})[0]!
    expect(podList.namespace).toBeUndefined()
  })
})
