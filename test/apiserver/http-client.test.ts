// The mesh-migrate Kubernetes client (src/kube/http-client.ts) against the test API server: which
// failed requests it resends, credential refresh on 401, and the served-version fallback.
import {readFile, writeFile} from 'node:fs/promises'
import path from 'node:path'

import {stringify} from 'yaml'
import {afterAll, afterEach, beforeAll, describe, expect, it} from 'vitest'

import {NamespaceLock} from '../../src/executor/lock.js'
import {KubeApiError, KubeConnectionError} from '../../src/kube/errors.js'
import {loadKubeConfig} from '../../src/kube/config.js'
import {connect, HttpKubeClient} from '../../src/kube/http-client.js'
import type {KubeClient} from '../../src/kube/types.js'
import type {KubeObject} from '../../src/planner/model.js'
import {startApiServer, type TestApiServer} from '../support/apiserver/index.js'
import {clientFor, tempDir} from '../cluster/support.js'

let server: TestApiServer
beforeAll(async () => {
  server = await startApiServer({quiet: true, crdFiles: 'builtin'})
  server.seed({apiVersion: 'v1', kind: 'Namespace', metadata: {name: 'hc'}})
})
afterEach(() => server.faults.clear())
afterAll(() => server.close())

const configMap = (name: string): KubeObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: {name, namespace: 'hc'},
  data: {a: '1'},
})
const outcomes = (filter: Parameters<TestApiServer['requestsMatching']>[0]) =>
  server.requestsMatching(filter).map((e) => (e.dropped ? 'dropped' : e.status))

describe('resending failed requests', () => {
  it.each([500, 502, 503, 504])(
    'does not resend a create answered %i (it may have been applied): the caller gets the error',
    async (status) => {
      const client = await clientFor(server, undefined, {retries: 3})
      const name = `create-${status}`
      server.faults.add({match: {verb: 'create', resource: 'configmaps'}, status, times: 1})
      server.resetRequestLog()
      const error = await client.create(configMap(name)).catch((e: unknown) => e)
      expect(error).toBeInstanceOf(KubeApiError)
      expect((error as KubeApiError).status).toBe(status)
      expect(outcomes({verb: 'create', resource: 'configmaps'})).toEqual([status])
    },
  )

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
    expect((await client.get({apiVersion: 'v1', kind: 'ConfigMap', namespace: 'hc', name: 'applied'}))?.data).toEqual({
      a: '1',
    })
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
        throw new KubeApiError(
          504,
          {reason: 'Timeout', message: 'the server was unable to return a response in the time allotted'},
          {method: 'POST', verb: 'create', group: 'coordination.k8s.io', resource: 'leases', what: 'create lease'},
          'test',
        )
      }
    },
  })
}

describe('the namespace Lease', () => {
  it.each(['504-after-write', 'resent'] as const)(
    'counts as acquired when its create was applied but answered %s, since the Lease names us',
    async (mode) => {
      const namespace = `lease-${mode}`
      server.seed({apiVersion: 'v1', kind: 'Namespace', metadata: {name: namespace}})
      const client = ambiguousCreates(await clientFor(server), mode)
      const lock = await NamespaceLock.acquire(client, {namespace, command: 'apply', plan: 'p.yaml', timeoutMs: 300})
      const lease = server.get({
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        namespace,
        name: 'mesh-migrate-lock',
      })
      expect(lease?.spec?.holderIdentity).toBe(lock.info.holder)
      lock.assertHeld()
      await lock.release()
      expect(
        server.get({apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', namespace, name: 'mesh-migrate-lock'}),
      ).toBeUndefined()
    },
  )
})

// An exec credential plugin that hands out the Nth line of `tokens` on its Nth run (the last line after
// that) with an expiry an hour ahead, so client-node caches it; `runs` counts its runs.
const PLUGIN = `
import {readFileSync, writeFileSync} from 'node:fs'
const dir = process.argv[2]
let runs = 0
try { runs = Number(readFileSync(dir + '/runs', 'utf8')) } catch {}
runs++
writeFileSync(dir + '/runs', String(runs))
const tokens = readFileSync(dir + '/tokens', 'utf8').trim().split('\\n')
const token = tokens[Math.min(runs, tokens.length) - 1]
process.stdout.write(JSON.stringify({apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential', status: {token, expirationTimestamp: new Date(Date.now() + 3600_000).toISOString()}}))
`

async function kubeconfigWith(dir: string, user: Record<string, unknown>): Promise<string> {
  const file = path.join(dir, 'config')
  await writeFile(
    file,
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{name: 'c', cluster: {server: server.url, 'insecure-skip-tls-verify': true}}],
      users: [{name: 'the-user', user}],
      contexts: [{name: 'ctx', context: {cluster: 'c', user: 'the-user'}}],
      'current-context': 'ctx',
    }),
  )
  return file
}

async function execPluginClient(tokens: string[]): Promise<{client: HttpKubeClient; runs: () => Promise<number>}> {
  const dir = await tempDir('mesh-migrate-exec-')
  await writeFile(path.join(dir, 'plugin.mjs'), PLUGIN)
  await writeFile(path.join(dir, 'tokens'), tokens.join('\n'))
  const file = await kubeconfigWith(dir, {
    exec: {
      apiVersion: 'client.authentication.k8s.io/v1',
      command: process.execPath,
      args: [path.join(dir, 'plugin.mjs'), dir],
      interactiveMode: 'Never',
    },
  })
  const client = new HttpKubeClient(await loadKubeConfig({kubeconfig: file}, {}), {retries: 0})
  return {client, runs: async () => Number(await readFile(path.join(dir, 'runs'), 'utf8'))}
}

describe('401 Unauthorized', () => {
  it('loads the credentials again once (concurrent requests share the refresh) and resends each request once', async () => {
    const {client, runs} = await execPluginClient(['revoked-token', 'admin-token'])
    server.resetRequestLog()
    const versions = await Promise.all([1, 2, 3, 4, 5].map(() => client.serverVersion()))
    expect(versions).toEqual(Array(5).fill('v1.32.0'))
    // One plugin run for the rejected token, one for the refresh; not one per request.
    expect(await runs()).toBe(2)
    const statuses = server.requests.filter((e) => e.path === '/version').map((e) => e.status)
    expect(statuses.filter((s) => s === 401)).toHaveLength(5)
    expect(statuses.filter((s) => s === 200)).toHaveLength(5)
    // Later requests use the refreshed credentials without another plugin run.
    expect((await client.get({apiVersion: 'v1', kind: 'Namespace', name: 'hc'}))?.metadata.name).toBe('hc')
    expect(await runs()).toBe(2)
  })

  it('a second 401 is an error saying the credentials were rejected and what to do', async () => {
    const {client, runs} = await execPluginClient(['revoked-token'])
    server.resetRequestLog()
    const error = (await client.serverVersion().catch((e: unknown) => e)) as KubeApiError
    expect(error).toBeInstanceOf(KubeApiError)
    expect(error.status).toBe(401)
    expect(error.message).toBe(
      'read the server version failed: 401 Unauthorized: the API server rejected the credentials of context "ctx" (user "the-user"), also after loading them again from the kubeconfig',
    )
    expect(error.suggestion).toContain('Log in again')
    expect(error.suggestion).toContain('kubectl config view --minify --context ctx')
    expect(await runs()).toBe(2)
    expect(server.requests.filter((e) => e.path === '/version').map((e) => e.status)).toEqual([401, 401])
  })

  it('picks up a kubeconfig rewritten by a re-login (connect reloads the file)', async () => {
    const dir = await tempDir('mesh-migrate-relogin-')
    const file = await kubeconfigWith(dir, {token: 'expired-token'})
    const client = await connect({kubeconfig: file, env: {}})
    await kubeconfigWith(dir, {token: 'admin-token'})
    server.resetRequestLog()
    expect((await client.get({apiVersion: 'v1', kind: 'Namespace', name: 'hc'}))?.metadata.name).toBe('hc')
    expect(server.requests.filter((e) => e.path === '/api').map((e) => e.status)).toEqual([401, 200])
  })

  it('re-reads a token file after a 401', async () => {
    const dir = await tempDir('mesh-migrate-token-file-')
    await writeFile(path.join(dir, 'token'), 'rotated-away')
    const client = await connect({
      kubeconfig: await kubeconfigWith(dir, {'token-file': path.join(dir, 'token')}),
      env: {},
    })
    await writeFile(path.join(dir, 'token'), 'admin-token')
    server.resetRequestLog()
    expect((await client.get({apiVersion: 'v1', kind: 'Namespace', name: 'hc'}))?.metadata.name).toBe('hc')
    expect(server.requests.filter((e) => e.path === '/api').map((e) => e.status)).toEqual([401, 200])
  })
})

describe('a kind whose requested apiVersion is not served', () => {
  it('is written at the version the server serves, with the body apiVersion rewritten to match', async () => {
    const admin = await clientFor(server)
    await admin.create({
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: {name: 'widgets.example.org'},
      spec: {
        group: 'example.org',
        names: {kind: 'Widget', listKind: 'WidgetList', plural: 'widgets', singular: 'widget'},
        scope: 'Namespaced',
        versions: [
          {
            name: 'v1beta1',
            served: true,
            storage: true,
            schema: {openAPIV3Schema: {type: 'object', 'x-kubernetes-preserve-unknown-fields': true}},
          },
        ],
      },
    })
    // A fresh client, so its discovery sees the CRD.
    const client = await clientFor(server)
    expect((await client.resourceFor('example.org/v1', 'Widget'))?.apiVersion).toBe('example.org/v1beta1')
    const widget = (name: string): KubeObject => ({
      apiVersion: 'example.org/v1',
      kind: 'Widget',
      metadata: {name, namespace: 'hc'},
      spec: {size: 1},
    })
    server.resetRequestLog()
    const applied = await client.apply(widget('applied'))
    const created = await client.create(widget('created'))
    const patched = await client.mergePatch(
      {apiVersion: 'example.org/v1', kind: 'Widget', namespace: 'hc', name: 'created'},
      {apiVersion: 'example.org/v1', kind: 'Widget', spec: {size: 2}},
    )
    expect([applied.apiVersion, created.apiVersion, patched.apiVersion]).toEqual([
      'example.org/v1beta1',
      'example.org/v1beta1',
      'example.org/v1beta1',
    ])
    expect(patched.spec).toEqual({size: 2})
    expect(server.requestsMatching({group: 'example.org'}).map((e) => [e.verb, e.version, e.status])).toEqual([
      ['patch', 'v1beta1', 201],
      ['create', 'v1beta1', 201],
      ['patch', 'v1beta1', 200],
    ])
  })
})
