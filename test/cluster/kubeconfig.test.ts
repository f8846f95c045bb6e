// kubeconfig loading like kubectl (issue 3 item 1): $KUBECONFIG with several files, --kubeconfig,
// --context, no kubeconfig at all, plain http without insecure-skip-tls-verify, --request-timeout.
import {mkdir} from 'node:fs/promises'
import path from 'node:path'

import {stringify} from 'yaml'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {loadKubeConfig, parseRequestTimeout} from '../../src/kube/config.js'
import {KubeConfigError, KubeConnectionError} from '../../src/kube/errors.js'
import {connect, HttpKubeClient} from '../../src/kube/http-client.js'
import {loadLightKubeConfig} from '../../src/kube/light-config.js'
import {envtestKubeconfig, runEnvtest, tokenKubeconfig} from '../support/envtest.js'
import {type ClusterServer, startClusterServer} from './server.js'
import {tempDir, writeText} from './support.js'

function kubeconfig(opts: {
  clusters: [string, string, boolean?][]
  users?: [string, string][]
  contexts: [string, string, string][]
  current?: string
}): string {
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: opts.clusters.map(([name, server, insecure]) => ({
      name,
      cluster: {server, ...(insecure === false ? {} : {'insecure-skip-tls-verify': true})},
    })),
    users: (opts.users ?? [['admin', server.adminToken]]).map(([name, token]) => ({name, user: {token}})),
    contexts: opts.contexts.map(([name, cluster, user]) => ({name, context: {cluster, user}})),
    ...(opts.current ? {'current-context': opts.current} : {}),
  })
}

let server: ClusterServer
let dir: string
beforeAll(async () => {
  server = await startClusterServer({crds: 'none'})
  dir = await tempDir('mesh-migrate-kubeconfig-')
})
afterAll(() => server.close())

describe('$KUBECONFIG with several files', () => {
  it('merges them with the first file winning for duplicate names, like kubectl', async () => {
    const first = await writeText(
      path.join(dir, 'first'),
      kubeconfig({clusters: [['shared', server.url]], contexts: [['dup', 'shared', 'admin']], current: 'dup'}),
    )
    const second = await writeText(
      path.join(dir, 'second'),
      kubeconfig({
        clusters: [
          ['shared', 'https://second.invalid:6443'],
          ['only-second', 'https://only-second.invalid:6443'],
        ],
        users: [
          ['admin', 'wrong-token'],
          ['other', 'other-token'],
        ],
        contexts: [
          ['dup', 'only-second', 'other'],
          ['second-ctx', 'only-second', 'other'],
        ],
        current: 'second-ctx',
      }),
    )
    const kc = await loadKubeConfig({}, {KUBECONFIG: [first, second].join(path.delimiter)})
    expect(kc.getCurrentContext()).toBe('dup') // the first file's current-context
    expect(kc.getCurrentCluster()?.server).toBe(server.url) // the first file's "shared"
    expect(kc.getCurrentUser()?.token).toBe(server.adminToken)
    expect(
      kc
        .getContexts()
        .map((c) => c.name)
        .sort(),
    ).toEqual(['dup', 'second-ctx'])
    // The merged config really talks to the server of the first file.
    expect(await new HttpKubeClient(kc, {retries: 0}).serverVersion()).toBe(server.version)
    // Names only the second file defines are still there.
    const other = await loadKubeConfig({context: 'second-ctx'}, {KUBECONFIG: [first, second].join(path.delimiter)})
    expect(other.getCurrentCluster()?.server).toBe('https://only-second.invalid:6443')
  })

  it('skips files that do not exist and fails when none does', async () => {
    const only = await writeText(
      path.join(dir, 'only'),
      kubeconfig({clusters: [['c', server.url]], contexts: [['ctx', 'c', 'admin']], current: 'ctx'}),
    )
    const kc = await loadKubeConfig({}, {KUBECONFIG: [path.join(dir, 'missing'), only].join(path.delimiter)})
    expect(kc.getCurrentContext()).toBe('ctx')
    const error = await loadKubeConfig({}, {KUBECONFIG: path.join(dir, 'missing')}).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(KubeConfigError)
    expect((error as Error).message).toContain('none of the files in $KUBECONFIG exist')
  })
})

describe('--kubeconfig and --context', () => {
  it('--kubeconfig wins over $KUBECONFIG', async () => {
    const explicit = await writeText(
      path.join(dir, 'explicit'),
      kubeconfig({clusters: [['c', server.url]], contexts: [['explicit-ctx', 'c', 'admin']], current: 'explicit-ctx'}),
    )
    const env = await writeText(
      path.join(dir, 'env'),
      kubeconfig({clusters: [['c', 'https://env.invalid']], contexts: [['env-ctx', 'c', 'admin']], current: 'env-ctx'}),
    )
    const kc = await loadKubeConfig({kubeconfig: explicit}, {KUBECONFIG: env})
    expect(kc.getCurrentContext()).toBe('explicit-ctx')
    const missing = await loadKubeConfig({kubeconfig: path.join(dir, 'nope')}, {}).catch((e: unknown) => e)
    expect((missing as Error).message).toBe(`kubeconfig ${path.join(dir, 'nope')} does not exist`)
  })

  it('an unknown --context is an error that lists the known contexts', async () => {
    const file = await writeText(
      path.join(dir, 'two-contexts'),
      kubeconfig({
        clusters: [['c', server.url]],
        contexts: [
          ['alpha', 'c', 'admin'],
          ['beta', 'c', 'admin'],
        ],
        current: 'alpha',
      }),
    )
    const error = await loadKubeConfig({kubeconfig: file, context: 'gamma'}, {}).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(KubeConfigError)
    expect((error as KubeConfigError).message).toBe('context "gamma" is not in the kubeconfig')
    expect((error as KubeConfigError).suggestion).toBe('Known contexts: alpha, beta.')
    expect((await loadKubeConfig({kubeconfig: file, context: 'beta'}, {})).getCurrentContext()).toBe('beta')
  })

  it('a kubeconfig without a current context is an error naming --context', async () => {
    const file = await writeText(
      path.join(dir, 'no-current'),
      kubeconfig({clusters: [['c', server.url]], contexts: [['alpha', 'c', 'admin']]}),
    )
    const error = await loadKubeConfig({kubeconfig: file}, {}).catch((e: unknown) => e)
    expect((error as KubeConfigError).message).toBe('the kubeconfig has no current context')
    expect((error as KubeConfigError).suggestion).toContain('--context')
  })
})

describe('no kubeconfig, plain http, request timeout', () => {
  it('no kubeconfig anywhere is a clear error, not a silent localhost:8080', async () => {
    const home = await tempDir('mesh-migrate-home-')
    const error = await loadKubeConfig({}, {HOME: home}).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(KubeConfigError)
    expect((error as KubeConfigError).message).toContain('no kubeconfig found')
    expect((error as KubeConfigError).message).not.toContain('localhost')
    expect((error as KubeConfigError).suggestion).toContain('--kubeconfig')
  })

  it('~/.kube/config is read when nothing else is given', async () => {
    const home = await tempDir('mesh-migrate-home-')
    await mkdir(path.join(home, '.kube'))
    await writeText(
      path.join(home, '.kube', 'config'),
      kubeconfig({clusters: [['c', server.url]], contexts: [['home-ctx', 'c', 'admin']], current: 'home-ctx'}),
    )
    expect((await loadKubeConfig({}, {HOME: home})).getCurrentContext()).toBe('home-ctx')
  })

  it('refuses a plain-http server unless insecure-skip-tls-verify is set', async () => {
    const file = await writeText(
      path.join(dir, 'http'),
      kubeconfig({clusters: [['plain', server.url, false]], contexts: [['ctx', 'plain', 'admin']], current: 'ctx'}),
    )
    const error = await loadKubeConfig({kubeconfig: file}, {}).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(KubeConfigError)
    expect((error as KubeConfigError).message).toBe(
      `cluster "plain" uses plain http (${server.url}), which is only allowed with insecure-skip-tls-verify`,
    )
  })

  it('parses --request-timeout like kubectl', () => {
    expect(parseRequestTimeout(undefined)).toBeUndefined()
    expect(parseRequestTimeout('0')).toBeUndefined()
    expect(parseRequestTimeout('30')).toBe(30_000)
    expect(parseRequestTimeout('500ms')).toBe(500)
    expect(parseRequestTimeout('2m')).toBe(120_000)
    expect(parseRequestTimeout('1h')).toBe(3_600_000)
    expect(() => parseRequestTimeout('soon')).toThrow(KubeConfigError)
  })
})

// Issue 11 §3: kubeconfigs that need no client-node feature are sent over node:https without importing
// client-node (src/kube/light-config.ts); TLS is still verified against the kubeconfig's CA.
describe('the light kubeconfig path against the real server', () => {
  const envtest = runEnvtest()
  it.skipIf(!envtest)('verifies the server against certificate-authority-data and sends the token', async () => {
    const file = await writeText(path.join(dir, 'light-ca'), envtestKubeconfig(envtest!))
    expect(await loadLightKubeConfig({kubeconfig: file}, {})).toBeDefined()
    const client = await connect({kubeconfig: file, env: {}})
    expect(await client.serverVersion()).toBe(envtest!.version)
    expect((await client.get({apiVersion: 'v1', kind: 'Namespace', name: 'kube-system'}))?.metadata.uid).toBeTruthy()
  })

  it.skipIf(!envtest)('refuses a server whose certificate the kubeconfig CA did not sign', async () => {
    const otherCa = (await import('node:tls')).rootCertificates[0]!
    const file = await writeText(
      path.join(dir, 'light-wrong-ca'),
      tokenKubeconfig(envtest!.url, envtest!.tokens.admin, {caPem: otherCa}),
    )
    const client = await connect({kubeconfig: file, requestTimeout: '5s', env: {}})
    const error = await client.serverVersion().catch((e: unknown) => e)
    expect(error).toBeInstanceOf(KubeConnectionError)
  })
})
