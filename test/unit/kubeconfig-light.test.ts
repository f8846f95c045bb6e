// The light kubeconfig path (issue 11 §3): kubeconfigs with tokens, tokenFile, client certificates and CAs
// are read without @kubernetes/client-node, with kubectl's rules (first file wins, paths relative to the
// kubeconfig's folder, an inline token wins over tokenFile); anything else (exec plugins, auth
// providers, proxies, impersonation, a kubeconfig that does not load cleanly) answers undefined so that
// client-node's loader handles it. That the requests then reach a real kube-apiserver is in
// test/cluster/kubeconfig.test.ts.
import {mkdir, mkdtemp, writeFile} from 'node:fs/promises'
import type https from 'node:https'
import os from 'node:os'
import path from 'node:path'

import {stringify} from 'yaml'
import {describe, expect, it} from 'vitest'

import {loadLightKubeConfig} from '../../src/kube/light-config.js'

async function tempDir(): Promise<string> {
  return mkdtemp(path.join(os.tmpdir(), 'mesh-migrate-light-kubeconfig-'))
}

async function kubeconfigFile(
  dir: string,
  name: string,
  opts: {
    cluster?: Record<string, unknown>
    user?: Record<string, unknown>
    current?: string
    contexts?: Record<string, unknown>[]
  } = {},
): Promise<string> {
  const file = path.join(dir, name)
  await writeFile(
    file,
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        {name: 'c', cluster: opts.cluster ?? {server: 'https://127.0.0.1:6443', 'insecure-skip-tls-verify': true}},
      ],
      users: [{name: 'u', user: opts.user ?? {token: 'abc'}}],
      contexts: opts.contexts ?? [{name: 'ctx', context: {cluster: 'c', user: 'u'}}],
      ...(opts.current === '' ? {} : {'current-context': opts.current ?? 'ctx'}),
    }),
  )
  return file
}

const agentOptions = (agent: unknown) => (agent as https.Agent & {options: https.AgentOptions}).options

describe('light kubeconfig', () => {
  it('reads a token and insecure-skip-tls-verify', async () => {
    const file = await kubeconfigFile(await tempDir(), 'config')
    const light = await loadLightKubeConfig({kubeconfig: file}, {})
    expect(light).toMatchObject({context: 'ctx', server: 'https://127.0.0.1:6443', userName: 'u', token: 'abc'})
    expect(agentOptions(light!.agent).rejectUnauthorized).toBe(false)
  })

  it('reads tokenFile, CA and client certificate files relative to the kubeconfig; an inline token wins over tokenFile', async () => {
    const dir = await tempDir()
    await mkdir(path.join(dir, 'pki'))
    await writeFile(path.join(dir, 'pki', 'ca.crt'), 'CA PEM')
    await writeFile(path.join(dir, 'pki', 'token'), 'from-file\n')
    const file = await kubeconfigFile(dir, 'config', {
      cluster: {
        server: 'https://example.invalid:6443/',
        'certificate-authority': 'pki/ca.crt',
        'tls-server-name': 'kubernetes',
      },
      user: {
        tokenFile: 'pki/token',
        'client-certificate-data': Buffer.from('CERT PEM').toString('base64'),
        'client-key-data': Buffer.from('KEY PEM').toString('base64'),
      },
    })
    const light = await loadLightKubeConfig({kubeconfig: file}, {})
    expect(light?.server).toBe('https://example.invalid:6443')
    expect(light?.token).toBe('from-file')
    const options = agentOptions(light!.agent)
    expect(String(options.ca)).toBe('CA PEM')
    expect(String(options.cert)).toBe('CERT PEM')
    expect(String(options.key)).toBe('KEY PEM')
    expect(options.servername).toBe('kubernetes')
    expect(options.rejectUnauthorized).toBe(true)

    const inline = await kubeconfigFile(dir, 'inline', {user: {token: 'inline', tokenFile: '/nonexistent'}})
    expect((await loadLightKubeConfig({kubeconfig: inline}, {}))?.token).toBe('inline')
  })

  it('merges $KUBECONFIG with the first file winning, and honours --context', async () => {
    const dir = await tempDir()
    const first = await kubeconfigFile(dir, 'first', {
      cluster: {server: 'https://first.invalid', 'insecure-skip-tls-verify': true},
    })
    const second = await kubeconfigFile(dir, 'second', {
      cluster: {server: 'https://second.invalid', 'insecure-skip-tls-verify': true},
      contexts: [
        {name: 'ctx', context: {cluster: 'c', user: 'u'}},
        {name: 'other', context: {cluster: 'c'}},
      ],
      current: 'other',
    })
    const merged = await loadLightKubeConfig(
      {},
      {KUBECONFIG: [path.join(dir, 'missing'), first, second].join(path.delimiter)},
    )
    expect(merged).toMatchObject({context: 'ctx', server: 'https://first.invalid', token: 'abc'})
    const other = await loadLightKubeConfig({context: 'other'}, {KUBECONFIG: [first, second].join(path.delimiter)})
    expect(other).toMatchObject({context: 'other', server: 'https://first.invalid'})
    expect(other?.token).toBeUndefined()
  })

  it('leaves exec plugins, auth providers, proxies, impersonation and client-node-only keys to client-node', async () => {
    const dir = await tempDir()
    const cases: Parameters<typeof kubeconfigFile>[2][] = [
      {user: {exec: {apiVersion: 'client.authentication.k8s.io/v1', command: 'gke-gcloud-auth-plugin'}}},
      {user: {'auth-provider': {name: 'oidc'}}},
      {user: {token: 'abc', as: 'someone'}},
      {user: {username: 'admin', password: 'secret'}},
      {user: {'token-file': '/tmp/token'}},
      {cluster: {server: 'https://127.0.0.1:6443', 'proxy-url': 'http://proxy:3128'}},
    ]
    for (const [i, opts] of cases.entries()) {
      expect(
        await loadLightKubeConfig({kubeconfig: await kubeconfigFile(dir, `case-${i}`, opts)}, {}),
        JSON.stringify(opts),
      ).toBeUndefined()
    }
  })

  it('leaves every kubeconfig that does not load cleanly to client-node, which says what is wrong', async () => {
    const dir = await tempDir()
    expect(await loadLightKubeConfig({kubeconfig: path.join(dir, 'missing')}, {})).toBeUndefined()
    expect(await loadLightKubeConfig({}, {HOME: dir})).toBeUndefined() // no ~/.kube/config: in-cluster or an error
    expect(
      await loadLightKubeConfig({kubeconfig: await kubeconfigFile(dir, 'no-current', {current: ''})}, {}),
    ).toBeUndefined()
    expect(
      await loadLightKubeConfig({kubeconfig: await kubeconfigFile(dir, 'ctx', {}), context: 'unknown'}, {}),
    ).toBeUndefined()
    expect(
      await loadLightKubeConfig(
        {kubeconfig: await kubeconfigFile(dir, 'plain-http', {cluster: {server: 'http://127.0.0.1:8080'}})},
        {},
      ),
    ).toBeUndefined()
    expect(
      await loadLightKubeConfig(
        {kubeconfig: await kubeconfigFile(dir, 'token-missing', {user: {tokenFile: 'missing'}})},
        {},
      ),
    ).toBeUndefined()
    await writeFile(path.join(dir, 'garbage'), 'clusters: [oops')
    expect(await loadLightKubeConfig({kubeconfig: path.join(dir, 'garbage')}, {})).toBeUndefined()
    // Plain http is accepted with insecure-skip-tls-verify, as the client-node path accepts it.
    const http = await loadLightKubeConfig(
      {
        kubeconfig: await kubeconfigFile(dir, 'http-insecure', {
          cluster: {server: 'http://127.0.0.1:8080', 'insecure-skip-tls-verify': true},
        }),
      },
      {},
    )
    expect(http?.server).toBe('http://127.0.0.1:8080')
  })
})
