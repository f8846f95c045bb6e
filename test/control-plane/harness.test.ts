// The whole harness once with the bookinfo example: the stable state the end-to-end suite starts
// from, seen through the tool's own client and preflight checks; and the control-plane fixture's
// knobs making preflight fail the way a broken installation does.
import {readFile} from 'node:fs/promises'
import path from 'node:path'

import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {rolloutDone} from '../../src/executor/observe.js'
import type {KubeObject} from '../../src/planner/model.js'
import {podProxyState} from '../../src/planner/workloads.js'
import {runPreflight} from '../../src/preflight/runner.js'
import {startTestCluster, USERS, type TestCluster} from '../support/cluster.js'
import {hasShared, REPO_ROOT} from '../support/shared.js'
import {condition, list, onExternalCluster, pods} from './helpers.js'

const BOOKINFO = path.join(REPO_ROOT, 'examples/bookinfo')

describe('the test cluster with the bookinfo example', () => {
  let c: TestCluster

  beforeAll(async () => {
    c = await startTestCluster({quiet: true, fixture: BOOKINFO})
  })
  afterAll(() => c?.stop())

  it('settles with every bookinfo pod running, ready and injected with an HBONE-capable sidecar', async () => {
    const all = await pods(c, 'bookinfo')
    const deployments = await list(c, 'apps/v1', 'Deployment', 'bookinfo')
    expect(deployments.map((d) => d.metadata.name).sort()).toEqual([
      'details-v1',
      'productpage-v1',
      'ratings-v1',
      'reviews-v1',
      'reviews-v2',
      'reviews-v3',
    ])
    expect(all).toHaveLength(deployments.reduce((n, d) => n + (d.spec?.replicas ?? 1), 0))
    for (const p of all) {
      expect(podProxyState(p), p.metadata.name).toBe('sidecar')
      expect(p.metadata.labels?.['networking.istio.io/tunnel']).toBe('http')
      expect(p.status?.phase).toBe('Running')
      expect(condition(p, 'Ready')?.status).toBe('True')
      expect(p.metadata.annotations?.['ambient.istio.io/redirection']).toBeUndefined()
    }
    for (const d of deployments) {
      expect(rolloutDone(d), d.metadata.name).toMatchObject({done: true})
      expect(condition(d, 'Available')?.status).toBe('True')
    }
  })

  it('hands the tool a working kubeconfig and a client with its own identity', async () => {
    // Setting up made no request as the tool: a benchmark can count the tool's requests alone.
    if (!onExternalCluster) {
      expect(c.server!.requestsMatching({user: USERS.tool})).toEqual([])
      const users = new Set(c.server!.requests.map((r) => r.user))
      expect(users).toEqual(new Set([USERS.controlPlane, USERS.harness]))
    }
    expect(await readFile(c.kubeconfigPath, 'utf8')).toContain('current-context')
    const podResource = await c.client.resourceFor('v1', 'Pod')
    const seen = await c.client.list(podResource!, {namespace: 'bookinfo'})
    expect(seen.map((p) => p.metadata.name).sort()).toEqual(
      (await pods(c, 'bookinfo')).map((p) => p.metadata.name).sort(),
    )
    if (!onExternalCluster) expect(c.server!.requestsMatching({user: USERS.tool, resource: 'pods'})).toHaveLength(1)
  })

  it('passes the installation checks of preflight', async () => {
    const checks = [
      'istio-version',
      'ambient-enabled',
      'ztunnel-ready',
      'istio-cni-ready',
      'waypoint-gatewayclass',
      'sidecars-hbone',
      ...(hasShared ? ['gateway-api-crds'] : []),
    ]
    const diagnostics = await runPreflight(c.client, 'bookinfo', {rootNamespace: 'istio-system', checks})
    expect(diagnostics.filter((d) => d.severity === 'error' || d.severity === 'warning')).toEqual([])
    expect(new Set(diagnostics.map((d) => d.check))).toEqual(new Set(checks))
  })
})

describe('a broken installation', () => {
  const failures = async (install: Parameters<typeof startTestCluster>[0], checks: string[]): Promise<string[]> => {
    const c = await startTestCluster({quiet: true, ...install})
    try {
      const diagnostics = await runPreflight(c.client, 'default', {rootNamespace: 'istio-system', checks})
      return diagnostics.filter((d) => d.severity === 'error').map((d) => d.code)
    } finally {
      await c.stop()
    }
  }

  it('fails preflight when ztunnel is not ready, istio-cni is missing, ambient is off, the GatewayClass is missing or Istio is too old', async () => {
    expect(await failures({install: {ztunnel: 'not-ready'}}, ['ztunnel-ready'])).toEqual(['ZtunnelNotReady'])
    expect(await failures({install: {istioCni: 'absent'}}, ['istio-cni-ready'])).toEqual(['IstioCniNotFound'])
    expect(await failures({install: {ambient: false}}, ['ambient-enabled'])).toEqual(['AmbientNotEnabled'])
    expect(await failures({install: {gatewayClasses: false}}, ['waypoint-gatewayclass'])).toEqual([
      'WaypointClassMissing',
    ])
    expect(await failures({install: {version: '1.22.3'}}, ['istio-version'])).toEqual(['IstioTooOld'])
  })

  it('reports ztunnel pods that exist but are not ready', async () => {
    const c = await startTestCluster({quiet: true, install: {ztunnel: 'not-ready'}})
    try {
      const ztunnel: KubeObject[] = await pods(c, 'istio-system', 'app=ztunnel')
      expect(ztunnel.length).toBeGreaterThan(0)
      expect(ztunnel.every((p) => p.status?.phase === 'Running' && condition(p, 'Ready')?.status === 'False')).toBe(
        true,
      )
    } finally {
      await c.stop()
    }
  })
})
