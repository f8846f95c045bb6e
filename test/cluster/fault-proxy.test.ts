// The fault proxy (test/support/fault-proxy.ts) in front of a real kube-apiserver: it forwards
// requests and watch streams unchanged, logs what it saw (verb, kind from the server's discovery,
// user from a SelfSubjectReview), and injects faults whose effect on the real server is checked by
// reading the server directly — a status fault or a drop before forwarding writes nothing, a drop
// after the write leaves the object created.
import {writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {mkdtemp, rm} from 'node:fs/promises'

import {afterAll, beforeAll, expect, it} from 'vitest'

import {connect} from '../../src/kube/http-client.js'
import type {KubeClient} from '../../src/kube/types.js'
import {type FaultProxy, startFaultProxy} from '../support/fault-proxy.js'
import {
  ADMIN_TOKEN,
  describeWithRealApiServer,
  type RealApiServer,
  realApiServerAssets,
  startRealApiServer,
} from '../support/real-apiserver.js'

const NS = 'proxy-test'

describeWithRealApiServer('fault proxy in front of a real kube-apiserver', () => {
  let server: RealApiServer
  let proxy: FaultProxy
  /** The real server, read directly (not through the proxy). */
  let direct: KubeClient
  let dir: string

  const call = (method: string, p: string, body?: unknown, token: string = ADMIN_TOKEN) =>
    fetch(proxy.url + p, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        accept: 'application/json',
        ...(body ? {'content-type': 'application/json'} : {}),
      },
      ...(body ? {body: JSON.stringify(body)} : {}),
    })
  const configMap = (name: string) => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {name, namespace: NS},
    data: {k: 'v'},
  })
  const createConfigMap = (name: string) => call('POST', `/api/v1/namespaces/${NS}/configmaps`, configMap(name))
  const live = (name: string) => direct.get({apiVersion: 'v1', kind: 'ConfigMap', namespace: NS, name})

  beforeAll(async () => {
    server = await startRealApiServer(realApiServerAssets()!)
    proxy = await startFaultProxy({target: server.url, ca: server.ca})
    dir = await mkdtemp(path.join(os.tmpdir(), 'mesh-migrate-fault-proxy-'))
    await writeFile(path.join(dir, 'direct'), server.kubeconfig())
    direct = await connect({kubeconfig: path.join(dir, 'direct'), env: {}})
    expect(
      (await call('POST', '/api/v1/namespaces', {apiVersion: 'v1', kind: 'Namespace', metadata: {name: NS}})).status,
    ).toBe(201)
  }, 90_000)

  afterAll(async () => {
    await proxy?.close()
    await server?.stop()
    if (dir) await rm(dir, {recursive: true, force: true})
  }, 60_000)

  it('forwards requests and logs verb, resource, kind (from discovery), user (from the server) and status', async () => {
    proxy.resetRequestLog()
    const r = await call('GET', '/api/v1/namespaces/default')
    expect(r.status).toBe(200)
    expect(((await r.json()) as {metadata: {name: string}}).metadata.name).toBe('default')
    const crds = await call('GET', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions?limit=1')
    expect(crds.status).toBe(200)
    expect(proxy.requests.map((e) => [e.verb, e.group, e.resource, e.kind, e.name, e.user, e.status])).toEqual([
      ['get', '', 'namespaces', 'Namespace', 'default', 'admin', 200],
      [
        'list',
        'apiextensions.k8s.io',
        'customresourcedefinitions',
        'CustomResourceDefinition',
        undefined,
        'admin',
        200,
      ],
    ])
    expect(proxy.requestsMatching({kind: 'Namespace', name: 'default', verb: 'get'})).toHaveLength(1)
    expect(proxy.requests[1]!.query).toEqual({limit: '1'})
  })

  it("passes the real server's errors through: its 401 for an unknown token and its 403 for a user without access", async () => {
    proxy.resetRequestLog()
    const unauthorized = await call('GET', '/api/v1/namespaces', undefined, 'no-such-token')
    expect(unauthorized.status).toBe(401)
    const forbidden = await call('GET', `/api/v1/namespaces/${NS}/configmaps`, undefined, 'nobody-token')
    expect(forbidden.status).toBe(403)
    expect(((await forbidden.json()) as {message: string}).message).toBe(
      `configmaps is forbidden: User "nobody" cannot list resource "configmaps" in API group "" in the namespace "${NS}"`,
    )
    expect(proxy.requests.map((e) => [e.user, e.status, e.reason])).toEqual([
      ['', 401, 'Unauthorized'],
      ['nobody', 403, 'Forbidden'],
    ])
  })

  it('a 429 with Retry-After answers in place of the server: nothing is written', async () => {
    const fault = proxy.faults.add({
      match: {verb: 'create', kind: 'ConfigMap', namespace: NS},
      status: 429,
      retryAfterSeconds: 3,
      times: 1,
    })
    try {
      const r = await createConfigMap('throttled')
      expect(r.status).toBe(429)
      expect(r.headers.get('retry-after')).toBe('3')
      expect((await r.json()) as object).toMatchObject({
        kind: 'Status',
        reason: 'TooManyRequests',
        code: 429,
        details: {retryAfterSeconds: 3},
      })
      expect(await live('throttled')).toBeUndefined()
      // times: 1 — the next one goes through.
      expect((await createConfigMap('throttled')).status).toBe(201)
      expect(fault.fired).toBe(1)
    } finally {
      fault.remove()
    }
    expect(
      proxy
        .requestsMatching({verb: 'create', kind: 'ConfigMap', name: undefined, namespace: NS})
        .slice(-2)
        .map((e) => e.status),
    ).toEqual([429, 201])
  })

  it('a connection dropped before forwarding writes nothing; dropped after the write, the object exists', async () => {
    const before = proxy.faults.add({match: {verb: 'create', kind: 'ConfigMap'}, drop: 'before', times: 1})
    await expect(createConfigMap('dropped-before')).rejects.toThrow()
    before.remove()
    expect(await live('dropped-before')).toBeUndefined()

    const after = proxy.faults.add({match: {verb: 'create', kind: 'ConfigMap'}, drop: 'after-write', times: 1})
    await expect(createConfigMap('dropped-after')).rejects.toThrow()
    after.remove()
    expect((await live('dropped-after'))?.data).toEqual({k: 'v'})
    const entries = proxy.requestsMatching({verb: 'create', kind: 'ConfigMap'}).slice(-2)
    expect(entries.map((e) => [e.dropped, e.status])).toEqual([
      [true, undefined],
      [true, undefined],
    ])
  })

  it('holds a request for latencyMs before forwarding it', async () => {
    const fault = proxy.faults.add({
      match: {verb: 'get', kind: 'ConfigMap', name: 'throttled'},
      latencyMs: 700,
      times: 1,
      name: 'slow',
    })
    const r = await call('GET', `/api/v1/namespaces/${NS}/configmaps/throttled`)
    fault.remove()
    expect(r.status).toBe(200)
    const entry = proxy.requests.find((e) => e.fault === 'slow')!
    expect(entry.finishedAt! - entry.startedAt).toBeGreaterThanOrEqual(700)
  })

  it('streams watch events as the server sends them', async () => {
    const abort = new AbortController()
    const r = await fetch(
      `${proxy.url}/api/v1/namespaces/${NS}/configmaps?watch=true&fieldSelector=metadata.name%3Dwatched`,
      {
        headers: {authorization: `Bearer ${ADMIN_TOKEN}`},
        signal: abort.signal,
      },
    )
    expect(r.status).toBe(200)
    const reader = r.body!.getReader()
    // Created directly on the server while the watch is open: the event arrives through the proxy.
    await direct.create(configMap('watched'))
    let text = ''
    while (!text.includes('\n')) text += new TextDecoder().decode((await reader.read()).value)
    expect(JSON.parse(text.split('\n')[0]!)).toMatchObject({type: 'ADDED', object: {metadata: {name: 'watched'}}})
    abort.abort()
    const entry = proxy.requestsMatching({verb: 'watch', kind: 'ConfigMap', namespace: NS}).at(-1)!
    expect([entry.watch, entry.status]).toEqual([true, 200])
  })
})
