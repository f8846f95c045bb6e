// istio-cni's enrollment (DOMAIN §2.2, §2.3) observed through the API: the
// ambient.istio.io/redirection annotation follows the labels live, never lands on sidecar pods, and
// depends on the node's istio-cni agent and ztunnel.
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import type {KubeObject} from '../../src/planner/model.js'
import {podProxyState} from '../../src/planner/workloads.js'
import {startTestCluster, type TestCluster} from '../support/cluster.js'
import {create, deployment, labelNamespace, list, namespaceObject, patch, pods, uniqueName} from './helpers.js'

const REDIRECTION = 'ambient.istio.io/redirection'
const redirection = (p: KubeObject) => p.metadata.annotations?.[REDIRECTION]

async function byApp(
  c: TestCluster,
  ns: string,
): Promise<Record<string, {uid?: string; redirection?: string; proxy: string}>> {
  return Object.fromEntries(
    (await pods(c, ns)).map((p) => [
      p.metadata.labels?.app ?? p.metadata.name,
      {uid: p.metadata.uid, redirection: redirection(p), proxy: podProxyState(p)},
    ]),
  )
}

describe('istio-cni enrollment', () => {
  let c: TestCluster
  const ns = uniqueName('cni')
  const other = uniqueName('cni-other')

  beforeAll(async () => {
    c = await startTestCluster({
      quiet: true,
      fixture: [
        namespaceObject(ns, {'istio-injection': 'enabled'}),
        namespaceObject(other),
        deployment(ns, 'sidecar'),
        deployment(ns, 'opted-out', {labels: {'sidecar.istio.io/inject': 'false'}}),
        deployment(ns, 'dataplane-none', {
          labels: {'sidecar.istio.io/inject': 'false', 'istio.io/dataplane-mode': 'none'},
        }),
        deployment(ns, 'host', {labels: {'sidecar.istio.io/inject': 'false'}, podSpec: {hostNetwork: true}}),
        deployment(other, 'pod-ambient', {labels: {'istio.io/dataplane-mode': 'ambient'}}),
        deployment(other, 'plain'),
      ],
    })
  })
  afterAll(() => c?.stop())

  it('captures nothing before any ambient label, except pods labelled ambient themselves', async () => {
    expect(Object.values(await byApp(c, ns)).map((p) => p.redirection)).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
    ])
    expect(await byApp(c, other)).toMatchObject({
      'pod-ambient': {redirection: 'enabled'},
      plain: {redirection: undefined},
    })
  })

  it('captures the running pods without a sidecar when the namespace becomes ambient — live, no restart — and never the sidecar pods', async () => {
    const before = await byApp(c, ns)
    await labelNamespace(c, ns, {'istio.io/dataplane-mode': 'ambient'})
    await c.waitForIdle()
    const after = await byApp(c, ns)
    expect(after).toEqual({
      sidecar: {uid: before.sidecar!.uid, redirection: undefined, proxy: 'sidecar'},
      'opted-out': {uid: before['opted-out']!.uid, redirection: 'enabled', proxy: 'ambient'},
      'dataplane-none': {uid: before['dataplane-none']!.uid, redirection: undefined, proxy: 'none'},
      host: {uid: before.host!.uid, redirection: undefined, proxy: 'none'},
    })
  })

  it('captures new pods of an ambient namespace once injection is gone, and un-enrolls when the label is removed', async () => {
    await labelNamespace(c, ns, {'istio-injection': null})
    await create(c, deployment(ns, 'fresh'))
    await c.waitForIdle()
    expect((await byApp(c, ns)).fresh).toMatchObject({redirection: 'enabled', proxy: 'ambient'})

    await labelNamespace(c, ns, {'istio.io/dataplane-mode': null})
    await c.waitForIdle()
    const after = await byApp(c, ns)
    expect(Object.values(after).map((p) => p.redirection)).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
    ])
    expect(after.fresh!.proxy).toBe('none')
  })

  it('never captures kube-system', async () => {
    await create(c, deployment('kube-system', 'cni-test-system', {labels: {'istio.io/dataplane-mode': 'ambient'}}))
    await c.waitForIdle()
    const [p] = await pods(c, 'kube-system', 'app=cni-test-system')
    expect(redirection(p!)).toBeUndefined()
    await c.api.delete({apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'kube-system', name: 'cni-test-system'})
  })
})

describe('istio-cni and ztunnel health', () => {
  it('marks pods pending while ztunnel is not ready on their node, enabled once it is', async () => {
    const ns = uniqueName('cni-zt')
    const c = await startTestCluster({
      quiet: true,
      install: {ztunnel: 'not-ready'},
      fixture: [namespaceObject(ns, {'istio.io/dataplane-mode': 'ambient'}), deployment(ns, 'web', {replicas: 2})],
    })
    try {
      const zt = await list(c, 'apps/v1', 'DaemonSet', 'istio-system')
      expect(zt.find((d) => d.metadata.name === 'ztunnel')?.status?.numberReady ?? 0).toBe(0)
      expect((await pods(c, ns)).map(redirection)).toEqual(['pending', 'pending'])
      // ztunnel recovers: the node agents finish the enrollment.
      await patch(c, 'apps/v1', 'DaemonSet', 'istio-system', 'ztunnel', {
        spec: {template: {metadata: {annotations: {'test.mesh-migrate.io/never-ready': null}}}},
      })
      await c.waitForIdle()
      expect((await pods(c, ns)).map(redirection)).toEqual(['enabled', 'enabled'])
    } finally {
      await c.stop()
    }
  })

  it('does not start ambient pods on a node whose istio-cni agent is not ready (the CNI plugin fails the sandbox)', async () => {
    const ns = uniqueName('cni-down')
    const c = await startTestCluster({
      quiet: true,
      install: {istioCni: 'not-ready'},
      fixture: [
        namespaceObject(ns, {'istio.io/dataplane-mode': 'ambient'}),
        deployment(ns, 'web'),
        deployment(ns, 'outside', {labels: {'istio.io/dataplane-mode': 'none'}}),
      ],
    })
    try {
      const [web] = await pods(c, ns, 'app=web')
      expect(web!.status?.phase).toBe('Pending')
      expect(redirection(web!)).toBeUndefined()
      const [outside] = await pods(c, ns, 'app=outside')
      expect(outside!.status?.phase).toBe('Running')
    } finally {
      await c.stop()
    }
  })

  it('captures nothing when istio-cni is not installed', async () => {
    const ns = uniqueName('cni-none')
    const c = await startTestCluster({
      quiet: true,
      install: {istioCni: 'absent'},
      fixture: [namespaceObject(ns, {'istio.io/dataplane-mode': 'ambient'}), deployment(ns, 'web')],
    })
    try {
      const [web] = await pods(c, ns)
      expect(web!.status?.phase).toBe('Running')
      expect(redirection(web!)).toBeUndefined()
    } finally {
      await c.stop()
    }
  })
})
