import {Watch} from '@kubernetes/client-node'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {startApiServer, type TestApiServer} from '../support/apiserver/index.js'
import {kubeConfig, namespace, raw} from './helpers.js'

let server: TestApiServer
beforeAll(async () => {
  server = await startApiServer({quiet: true, crdFiles: 'builtin', historyLimit: 50})
  server.seed(namespace('w'))
})
afterAll(() => server.close())

interface Event {
  type: string
  object: any
}

/** Opens a watch and hands out its events one at a time. */
async function openWatch(path: string) {
  const controller = new AbortController()
  const res = await fetch(server.url + path, {
    headers: {Authorization: 'Bearer admin-token'},
    signal: controller.signal,
  })
  expect(res.status).toBe(200)
  expect(res.headers.get('content-type')).toBe('application/json')
  const reader = res.body!.getReader()
  const decoder = new TextDecoder()
  let buffer = ''
  const queue: Event[] = []
  let ended = false
  const pump = async (): Promise<void> => {
    const {done, value} = await reader.read()
    if (done) {
      ended = true
      return
    }
    buffer += decoder.decode(value, {stream: true})
    let nl: number
    while ((nl = buffer.indexOf('\n')) >= 0) {
      queue.push(JSON.parse(buffer.slice(0, nl)))
      buffer = buffer.slice(nl + 1)
    }
  }
  return {
    async next(): Promise<Event> {
      while (queue.length === 0) {
        if (ended) throw new Error('watch ended')
        await pump()
      }
      return queue.shift()!
    },
    async untilEnd(): Promise<Event[]> {
      while (!ended) await pump()
      return queue.splice(0)
    },
    close: () => controller.abort(),
  }
}

const cm = (name: string, labels: Record<string, string> = {}, data: Record<string, string> = {}) => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: {name, namespace: 'w', labels},
  data,
})

describe('watch', () => {
  it('starts with the current state and then streams changes as they happen', async () => {
    server.seed(cm('existing'))
    const w = await openWatch('/api/v1/namespaces/w/configmaps?watch=true')
    const first = await w.next()
    expect(first).toMatchObject({
      type: 'ADDED',
      object: {kind: 'ConfigMap', apiVersion: 'v1', metadata: {name: 'existing'}},
    })
    const api = raw(server)
    await api.post('/api/v1/namespaces/w/configmaps', cm('new'))
    expect(await w.next()).toMatchObject({type: 'ADDED', object: {metadata: {name: 'new'}}})
    await api.patch('/api/v1/namespaces/w/configmaps/new', {data: {a: '1'}}, 'application/merge-patch+json')
    const mod = await w.next()
    expect(mod).toMatchObject({type: 'MODIFIED', object: {data: {a: '1'}}})
    await api.delete('/api/v1/namespaces/w/configmaps/new')
    const del = await w.next()
    expect(del.type).toBe('DELETED')
    expect(Number(del.object.metadata.resourceVersion)).toBeGreaterThan(Number(mod.object.metadata.resourceVersion))
    w.close()
  })

  it('resumes from a resourceVersion without replaying older state', async () => {
    const api = raw(server)
    const list = (await api.get('/api/v1/namespaces/w/configmaps')).body
    await api.post('/api/v1/namespaces/w/configmaps', cm('after-list'))
    const w = await openWatch(
      `/api/v1/namespaces/w/configmaps?watch=1&resourceVersion=${list.metadata.resourceVersion}`,
    )
    expect(await w.next()).toMatchObject({type: 'ADDED', object: {metadata: {name: 'after-list'}}})
    w.close()
  })

  it('turns objects entering or leaving a label selection into ADDED and DELETED', async () => {
    const api = raw(server)
    const w = await openWatch('/api/v1/namespaces/w/configmaps?watch=true&labelSelector=tier%3Dfront')
    await api.post('/api/v1/namespaces/w/configmaps', cm('mover'))
    await api.patch(
      '/api/v1/namespaces/w/configmaps/mover',
      {metadata: {labels: {tier: 'front'}}},
      'application/merge-patch+json',
    )
    expect(await w.next()).toMatchObject({type: 'ADDED', object: {metadata: {name: 'mover'}}})
    await api.patch(
      '/api/v1/namespaces/w/configmaps/mover',
      {metadata: {labels: {tier: 'back'}}},
      'application/merge-patch+json',
    )
    expect(await w.next()).toMatchObject({type: 'DELETED', object: {metadata: {name: 'mover', labels: {tier: 'back'}}}})
    w.close()
  })

  it('sends a 410 Expired ERROR event for a resourceVersion older than the kept history', async () => {
    for (let i = 0; i < 60; i++) server.seed(cm(`churn-${i}`))
    const w = await openWatch('/api/v1/namespaces/w/configmaps?watch=true&resourceVersion=2')
    const events = await w.untilEnd()
    expect(events).toHaveLength(1)
    expect(events[0]).toMatchObject({
      type: 'ERROR',
      object: {kind: 'Status', status: 'Failure', reason: 'Expired', code: 410},
    })
    expect(events[0]!.object.message).toMatch(/^too old resource version: 2 \(\d+\)$/)
  })

  it('ends the stream after timeoutSeconds', async () => {
    const w = await openWatch('/api/v1/namespaces/kube-public/configmaps?watch=true&timeoutSeconds=1')
    expect(await w.untilEnd()).toEqual([])
  })

  it('sends initial events and the initial-events-end bookmark when asked', async () => {
    const w = await openWatch(
      '/api/v1/namespaces/w/configmaps?watch=true&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&labelSelector=tier%3Dback',
    )
    expect(await w.next()).toMatchObject({type: 'ADDED', object: {metadata: {name: 'mover'}}})
    const bookmark = await w.next()
    expect(bookmark).toMatchObject({
      type: 'BOOKMARK',
      object: {kind: 'ConfigMap', metadata: {annotations: {'k8s.io/initial-events-end': 'true'}}},
    })
    w.close()
  })

  it('works with client-node Watch and is counted in the request log', async () => {
    const watch = new Watch(kubeConfig(server))
    const seen: string[] = []
    let resolveSeen: () => void
    const gotIt = new Promise<void>((r) => (resolveSeen = r))
    const req = await watch.watch(
      '/api/v1/namespaces/w/configmaps',
      {labelSelector: 'via=client-node'},
      (type, obj: any) => {
        seen.push(`${type} ${obj.metadata.name}`)
        if (type === 'MODIFIED') resolveSeen()
      },
      () => {},
    )
    await raw(server).post('/api/v1/namespaces/w/configmaps', cm('cn', {via: 'client-node'}))
    await raw(server).patch('/api/v1/namespaces/w/configmaps/cn', {data: {x: 'y'}}, 'application/merge-patch+json')
    await gotIt
    req.abort()
    expect(seen).toEqual(['ADDED cn', 'MODIFIED cn'])
    expect(server.requestsMatching({verb: 'watch', resource: 'configmaps', namespace: 'w'}).length).toBeGreaterThan(0)
  })

  it('closes open watches when the server closes', async () => {
    const other = await startApiServer({quiet: true, crdFiles: 'builtin'})
    const res = await fetch(`${other.url}/api/v1/namespaces?watch=true`, {
      headers: {Authorization: 'Bearer admin-token'},
    })
    const reader = res.body!.getReader()
    while (other.openWatches === 0) await new Promise((r) => setImmediate(r))
    await other.close()
    let done = false
    while (!done) done = (await reader.read().catch(() => ({done: true}))).done
    expect(other.openWatches).toBe(0)
  })
})
