// Istio 1.31's weighted waypoint canary (issue 21 §10) on the real kube-apiserver: a namespace bound to an older
// waypoint (the primary) is planned with --waypoint-canary 10,50; the canary steps write the namespace label
// istio.io/use-waypoint-canary and the ANNOTATION istio.io/use-waypoint-canary-weight (istio/istio
// releasenotes/notes/60801-weighted-waypoint-canary.yaml; istio.io "Shift traffic between waypoints"), and rollback
// restores exactly what was there. Below 1.31 (the fake istiod's version) the flag is refused with exit 2.
import path from 'node:path'

import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import type {KubeObject} from '../../src/planner/model.js'
import {loadManifestFiles} from '../../src/sources/manifests.js'
import {startTestCluster, type TestCluster} from '../support/cluster.js'
import {cli, REPO, workdir} from './support.js'

const NS = 'bookinfo'
const CANARY = 'istio.io/use-waypoint-canary'
const WEIGHT = 'istio.io/use-waypoint-canary-weight'

/** bookinfo bound to the waypoint "waypoint-old" of its namespace, which exists (the control plane programs it). */
async function fixture(): Promise<KubeObject[]> {
  const {objects} = await loadManifestFiles([path.join(REPO, 'examples/bookinfo')], {defaultNamespace: NS})
  const bound = objects.map((o) =>
    o.kind === 'Namespace'
      ? {...o, metadata: {...o.metadata, labels: {...o.metadata.labels, 'istio.io/use-waypoint': 'waypoint-old'}}}
      : o,
  )
  return [
    ...bound,
    {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'Gateway',
      metadata: {name: 'waypoint-old', namespace: NS, labels: {'istio.io/waypoint-for': 'service'}},
      spec: {gatewayClassName: 'istio-waypoint', listeners: [{name: 'mesh', port: 15008, protocol: 'HBONE'}]},
    },
  ]
}

describe('--waypoint-canary on the real kube-apiserver', () => {
  let cluster: TestCluster
  let cwd: string

  beforeAll(async () => {
    cluster = await startTestCluster({fixture: await fixture(), quiet: true})
    cwd = await workdir()
  }, 120_000)
  afterAll(async () => {
    await cluster?.stop()
  })

  const namespace = async () => (await cluster.client.get({apiVersion: 'v1', kind: 'Namespace', name: NS}))!.metadata

  it('refused with exit 2 when the serving istiod is older than 1.31 (names both versions)', async () => {
    const r = await cli(['plan', NS, '--waypoint-canary', '10,50', '--out', '-'], cwd, cluster.kubeconfigPath)
    expect(r.code, r.stderr).toBe(2)
    expect(r.stderr).toContain('needs Istio >= 1.31')
    expect(r.stderr).toMatch(/found 1\.\d+(\.\d+)? \(the serving istiod\)/)
  }, 60_000)

  it('applies the canary steps (label, then weight 10 and 50) and rolls them back to exactly what was there', async () => {
    const kube = cluster.kubeconfigPath
    const plan = await cli(['plan', NS, '--waypoint-canary', '10,50', '--istio-version', '1.31'], cwd, kube)
    expect(plan.code, plan.stderr).toBe(0)
    expect(plan.stdout).toContain('canary-waypoint-10')
    const before = await namespace()

    const to10 = await cli(['apply', NS, '--to', 'canary-waypoint-10', '--yes', '--timeout', '60s'], cwd, kube)
    expect(to10.code, to10.stderr).toBe(0)
    expect((await namespace()).labels?.[CANARY]).toBe('waypoint')
    expect((await namespace()).annotations?.[WEIGHT]).toBe('10')
    const to50 = await cli(['apply', NS, '--to', 'canary-waypoint-50', '--yes', '--timeout', '60s'], cwd, kube)
    expect(to50.code, to50.stderr).toBe(0)
    expect((await namespace()).annotations?.[WEIGHT]).toBe('50')
    expect((await namespace()).labels?.['istio.io/use-waypoint']).toBe('waypoint-old')

    // bind-waypoint promotes: use-waypoint = the plan's waypoint, the canary label and annotation removed.
    const bind = await cli(['apply', NS, '--to', 'bind-waypoint', '--yes', '--timeout', '60s'], cwd, kube)
    expect(bind.code, bind.stderr).toBe(0)
    const promoted = await namespace()
    expect(promoted.labels?.['istio.io/use-waypoint']).toBe('waypoint')
    expect(promoted.labels?.[CANARY]).toBeUndefined()
    expect(promoted.annotations?.[WEIGHT]).toBeUndefined()

    // rollback --step undoes the last step only: bind-waypoint, back to the canary at 50 on the primary.
    const unbind = await cli(['rollback', NS, '--step', '--confirm', NS, '--timeout', '60s'], cwd, kube)
    expect(unbind.code, unbind.stderr).toBe(0)
    expect((await namespace()).labels?.['istio.io/use-waypoint']).toBe('waypoint-old')
    expect((await namespace()).labels?.[CANARY]).toBe('waypoint')
    expect((await namespace()).annotations?.[WEIGHT]).toBe('50')
    // Then canary-waypoint-50: back to weight 10, the canary label kept.
    const one = await cli(['rollback', NS, '--step', '--confirm', NS, '--timeout', '60s'], cwd, kube)
    expect(one.code, one.stderr).toBe(0)
    expect((await namespace()).annotations?.[WEIGHT]).toBe('10')
    expect((await namespace()).labels?.[CANARY]).toBe('waypoint')

    const all = await cli(['rollback', NS, '--confirm', NS, '--timeout', '60s'], cwd, kube)
    expect(all.code, all.stderr).toBe(0)
    const after = await namespace()
    expect(after.labels?.[CANARY]).toBeUndefined()
    expect(after.annotations?.[WEIGHT]).toBeUndefined()
    expect(after.labels?.['istio.io/use-waypoint']).toBe(before.labels?.['istio.io/use-waypoint'])
  }, 300_000)
})
