// `preflight` and `census` through the built CLI against the test API server: exit codes, data only
// on stdout, -o json that parses, errors without stack traces.
import path from 'node:path'

import {parse as parseYaml} from 'yaml'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {hasStackTrace, runCli} from '../support/cli.js'
import {type ClusterServer, startClusterServer} from './server.js'
import {daemonSet, daemonSetPods, NAMESPACE, seedAmbientCluster, ZTUNNEL_LABELS} from './ambient-cluster.js'
import {kubeconfigFile, ns, pod, sidecarPod, tempDir} from './support.js'

let server: ClusterServer
let kubeconfig: string
let cwd: string
beforeAll(async () => {
  server = await startClusterServer()
  await seedAmbientCluster(server)
  await server.seed([
    ns('amb', {'istio.io/dataplane-mode': 'ambient'}),
    sidecarPod('stale', 'amb'),
    pod('plain-1', 'default'),
  ])
  kubeconfig = await kubeconfigFile(server)
  // An empty working directory: no plans/ (census shows none, preflight builds the plan in memory).
  cwd = await tempDir('mesh-migrate-cli-cwd-')
})
afterAll(() => server.close())

const cli = (args: string[], env: NodeJS.ProcessEnv = {}) => runCli(args, {cwd, env: {KUBECONFIG: '', ...env}})

describe('mesh-migrate preflight', () => {
  it('exits 0 on a healthy cluster and prints the diagnostics as JSON on stdout only', async () => {
    const r = await cli(['preflight', NAMESPACE, '--kubeconfig', kubeconfig, '-o', 'json'])
    expect(r.stderr).toBe('')
    expect(r.code).toBe(0)
    const result = JSON.parse(r.stdout)
    expect(result).toMatchObject({
      namespace: NAMESPACE,
      context: 'test-apiserver',
      plan: '(built from the cluster)',
      ok: true,
    })
    expect(new Set(result.diagnostics.map((d: {check: string}) => d.check)).size).toBe(10)
    for (const d of result.diagnostics)
      expect(Object.keys(d).sort()).toEqual(
        d.fix === undefined
          ? ['check', 'code', 'message', 'severity']
          : ['check', 'code', 'fix', 'message', 'severity'],
      )
  })

  it('exits 1 when a check fails, and the table names the check, status and fix', async () => {
    await server.seed([
      daemonSet('ztunnel', ZTUNNEL_LABELS, {ready: 1}),
      ...daemonSetPods('ztunnel', ZTUNNEL_LABELS, ['node-b']),
    ])
    try {
      const r = await cli([
        'preflight',
        NAMESPACE,
        '--kubeconfig',
        kubeconfig,
        '--check',
        'ztunnel-ready',
        '--check',
        'istio-version',
      ])
      expect(r.code).toBe(1)
      expect(r.stdout).toMatch(/^CHECK\s+STATUS\s+MESSAGE\s+FIX/)
      expect(r.stdout).toMatch(
        /ztunnel-ready\s+error\s+DaemonSet istio-system\/ztunnel has no ready pod on node\(s\) node-b/,
      )
      expect(r.stdout).toMatch(/istio-version\s+ok\s+/)
      expect(r.stdout).toContain('1 error(s), 0 warning(s)')
      expect(hasStackTrace(r.stdout + r.stderr)).toBe(false)
      const yaml = await cli([
        'preflight',
        NAMESPACE,
        '--kubeconfig',
        kubeconfig,
        '--check',
        'ztunnel-ready',
        '-o',
        'yaml',
      ])
      expect(yaml.code).toBe(1)
      expect(parseYaml(yaml.stdout)).toMatchObject({
        ok: false,
        diagnostics: [{check: 'ztunnel-ready', severity: 'error', code: 'ZtunnelNotReady'}],
      })
    } finally {
      await server.seed([daemonSet('ztunnel', ZTUNNEL_LABELS), ...daemonSetPods('ztunnel', ZTUNNEL_LABELS)])
    }
  })

  it('checks a plan file given with --plan, and refuses one of another namespace (exit 2)', async () => {
    const plan = await cli(['plan', NAMESPACE, '--kubeconfig', kubeconfig, '-o', 'json'])
    expect(plan.code).toBe(0)
    const r = await cli([
      'preflight',
      NAMESPACE,
      '--kubeconfig',
      kubeconfig,
      '--plan',
      NAMESPACE,
      '--check',
      'rbac',
      '-o',
      'json',
    ])
    expect(r.code).toBe(0)
    expect(JSON.parse(r.stdout)).toMatchObject({
      plan: path.join('plans', `${NAMESPACE}.yaml`),
      diagnostics: [{check: 'rbac', severity: 'ok', code: 'RbacAllowed'}],
    })
    const wrong = await cli(['preflight', 'other', '--kubeconfig', kubeconfig, '--plan', NAMESPACE])
    expect(wrong.code).toBe(2)
    expect(wrong.stdout).toBe('')
    expect(wrong.stderr).toContain(`is the plan of namespace ${NAMESPACE}, not other`)
  })

  it('fails clearly without any kubeconfig, and for an unknown context', async () => {
    const home = await tempDir('mesh-migrate-home-')
    const none = await cli(['preflight', NAMESPACE], {HOME: home, KUBERNETES_SERVICE_HOST: ''})
    expect(none.code).toBe(1)
    expect(none.stdout).toBe('')
    expect(none.stderr).toContain('no kubeconfig found')
    expect(hasStackTrace(none.stderr)).toBe(false)
    const context = await cli(['census', '--kubeconfig', kubeconfig, '--context', 'nope'])
    expect(context.code).toBe(1)
    expect(context.stderr).toContain('context "nope" is not in the kubeconfig')
    expect(context.stderr).toContain('Known contexts: test-apiserver.')
  })
})

describe('mesh-migrate census', () => {
  it('prints a table by default and JSON with -o json, data on stdout only', async () => {
    // The default table leaves the labels to -o wide (issue 13: it fits 80 columns).
    const table = await cli(['census', '--kubeconfig', kubeconfig])
    expect(table.code).toBe(0)
    expect(table.stdout).toMatch(/^NAMESPACE\s+MODE\s+PODS \(S\/A\/N\)/)
    expect(table.stdout).toMatch(/\namb\s+ambient\s+1 \(1\/0\/0\)\s+0\s+1: stale/)
    const wide = await cli(['census', '--kubeconfig', kubeconfig, '-o', 'wide'])
    expect(wide.code).toBe(0)
    expect(wide.stdout).toMatch(/^NAMESPACE\s+MODE\s+LABELS/)
    expect(wide.stdout).toMatch(/\namb\s+ambient\s+istio.io\/dataplane-mode=ambient\s+1 \(1\/0\/0\)\s+0\s+1: stale/)
    expect(wide.stdout).toMatch(/\nshop\s+sidecar\s+istio-injection=enabled/)
    const json = await cli(['census', '--kubeconfig', kubeconfig, '-o', 'json'])
    expect(json.code).toBe(0)
    const report = JSON.parse(json.stdout)
    expect(report.context).toBe('test-apiserver')
    expect(report.namespaces.find((r: {namespace: string}) => r.namespace === 'amb')).toMatchObject({
      mode: 'ambient',
      sidecarInAmbient: [{name: 'stale'}],
    })
    expect(report.namespaces.find((r: {namespace: string}) => r.namespace === 'default')).toMatchObject({
      mode: 'none',
      pods: {total: 1},
    })
  })

  it('--selector narrows the namespaces', async () => {
    const r = await cli([
      'census',
      '--kubeconfig',
      kubeconfig,
      '--selector',
      'istio.io/dataplane-mode=ambient',
      '-o',
      'json',
    ])
    expect(r.code).toBe(0)
    expect(JSON.parse(r.stdout).namespaces.map((n: {namespace: string}) => n.namespace)).toEqual(['amb'])
  })
})

describe('mesh-migrate inventory and plan on a namespace the cluster does not have', () => {
  it('exit 1 with the context named and what to check, not "nothing to migrate"', async () => {
    for (const cmd of ['inventory', 'plan']) {
      const r = await cli([cmd, 'no-such-ns', '--kubeconfig', kubeconfig])
      expect(r.code, cmd).toBe(1)
      expect(r.stdout).toBe('')
      expect(r.stderr).toContain('namespace "no-such-ns" does not exist in context test-apiserver')
      expect(r.stderr).toContain('--context')
      expect(hasStackTrace(r.stderr)).toBe(false)
    }
  })
})
