// The sidecar injection webhook's effect on pods the controllers create (DOMAIN §2.1, §2.4),
// observed through the API.
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import type {KubeObject} from '../../src/planner/model.js'
import {podProxyState} from '../../src/planner/workloads.js'
import {startTestCluster, type TestCluster} from '../support/cluster.js'
import {containerNames, deployment, labelNamespace, namespaceObject, pods, restart, uniqueName} from './helpers.js'

const ISTIO_VOLUMES = [
  'workload-socket',
  'credential-socket',
  'workload-certs',
  'istio-envoy',
  'istio-data',
  'istio-podinfo',
  'istio-token',
  'istiod-ca-cert',
]

function envOf(pod: KubeObject, container: string): Record<string, string | undefined> {
  const all = [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])] as {
    name: string
    env?: {name: string; value?: string}[]
  }[]
  return Object.fromEntries((all.find((c) => c.name === container)?.env ?? []).map((e) => [e.name, e.value]))
}

async function onlyPod(c: TestCluster, ns: string, app: string): Promise<KubeObject> {
  const list = await pods(c, ns, `app=${app}`)
  expect(list).toHaveLength(1)
  return list[0]!
}

describe('injection with the default revision (classic sidecars, HBONE, istio-cni)', () => {
  let c: TestCluster
  const ns = {
    enabled: uniqueName('inj-enabled'),
    disabled: uniqueName('inj-disabled'),
    plain: uniqueName('inj-plain'),
    rev: uniqueName('inj-rev'),
    tag: uniqueName('inj-tag'),
    both: uniqueName('inj-both'),
    unknown: uniqueName('inj-unknown'),
  }

  beforeAll(async () => {
    c = await startTestCluster({
      quiet: true,
      install: {revisions: [{revision: 'default'}, {revision: 'canary', version: '1.31.0'}], tags: {prod: 'canary'}},
      fixture: [
        namespaceObject(ns.enabled, {'istio-injection': 'enabled'}),
        namespaceObject(ns.disabled, {'istio-injection': 'disabled'}),
        namespaceObject(ns.plain),
        namespaceObject(ns.rev, {'istio.io/rev': 'canary'}),
        namespaceObject(ns.tag, {'istio.io/rev': 'prod'}),
        namespaceObject(ns.both, {'istio-injection': 'enabled', 'istio.io/rev': 'canary'}),
        namespaceObject(ns.unknown, {'istio.io/rev': 'nope'}),
        deployment(ns.enabled, 'web', {labels: {version: 'v2'}, annotations: {'sidecar.istio.io/proxyCPU': '200m'}}),
        deployment(ns.enabled, 'opted-out', {labels: {'sidecar.istio.io/inject': 'false'}}),
        deployment(ns.enabled, 'host', {podSpec: {hostNetwork: true}}),
        deployment(ns.enabled, 'native', {annotations: {'sidecar.istio.io/nativeSidecar': 'true'}}),
        deployment(ns.disabled, 'opt-in', {labels: {'sidecar.istio.io/inject': 'true'}}),
        deployment(ns.plain, 'opt-in', {labels: {'sidecar.istio.io/inject': 'true'}}),
        deployment(ns.plain, 'pod-rev', {labels: {'istio.io/rev': 'canary'}}),
        deployment(ns.plain, 'none'),
        deployment(ns.rev, 'web'),
        deployment(ns.tag, 'web'),
        deployment(ns.both, 'web'),
        deployment(ns.unknown, 'web'),
        {
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: {name: 'bare', namespace: ns.enabled, labels: {app: 'bare'}},
          spec: {containers: [{name: 'main', image: 'registry.example/bare:1'}]},
        },
      ],
    })
  })
  afterAll(() => c?.stop())

  it('injects a classic sidecar exactly as the injector does in a namespace with istio-injection=enabled', async () => {
    const pod = await onlyPod(c, ns.enabled, 'web')
    expect(containerNames(pod)).toEqual({containers: ['app', 'istio-proxy'], init: ['istio-validation']})
    expect(podProxyState(pod)).toBe('sidecar')
    const proxy = (pod.spec?.containers as {name: string; image: string; resources: unknown}[]).find(
      (x) => x.name === 'istio-proxy',
    )!
    expect(proxy.image).toBe('docker.io/istio/proxyv2:1.30.3')
    // sidecar.istio.io/proxyCPU on the pod sizes the proxy.
    expect(proxy.resources).toMatchObject({requests: {cpu: '200m', memory: '128Mi'}})
    expect(envOf(pod, 'istio-proxy')).toMatchObject({
      ISTIO_META_ENABLE_HBONE: 'true',
      ISTIO_META_WORKLOAD_NAME: 'web',
      ISTIO_META_APP_CONTAINERS: 'app',
    })
    expect(pod.metadata.labels).toMatchObject({
      'security.istio.io/tlsMode': 'istio',
      'service.istio.io/canonical-name': 'web',
      'service.istio.io/canonical-revision': 'v2',
      'networking.istio.io/tunnel': 'http',
    })
    expect(pod.metadata.annotations).toMatchObject({
      'istio.io/rev': 'default',
      'kubectl.kubernetes.io/default-container': 'app',
    })
    expect(JSON.parse(pod.metadata.annotations!['sidecar.istio.io/status']!)).toEqual({
      initContainers: ['istio-validation'],
      containers: ['istio-proxy'],
      volumes: ISTIO_VOLUMES,
      imagePullSecrets: null,
      revision: 'default',
    })
    expect((pod.spec?.volumes as {name: string}[]).map((v) => v.name)).toEqual(ISTIO_VOLUMES)
  })

  it('puts a native sidecar in initContainers with restartPolicy Always when the pod asks for it', async () => {
    const pod = await onlyPod(c, ns.enabled, 'native')
    expect(containerNames(pod)).toEqual({containers: ['app'], init: ['istio-validation', 'istio-proxy']})
    const proxy = (pod.spec?.initContainers as {name: string; restartPolicy?: string}[]).find(
      (x) => x.name === 'istio-proxy',
    )
    expect(proxy?.restartPolicy).toBe('Always')
    expect(podProxyState(pod)).toBe('sidecar-native')
    expect(JSON.parse(pod.metadata.annotations!['sidecar.istio.io/status']!)).toMatchObject({
      initContainers: ['istio-validation', 'istio-proxy'],
      containers: null,
    })
    // The native sidecar runs and is ready like the app.
    expect(pod.status?.initContainerStatuses.find((s: {name: string}) => s.name === 'istio-proxy')).toMatchObject({
      ready: true,
      started: true,
    })
  })

  it('skips pods that opt out and hostNetwork pods', async () => {
    expect(podProxyState(await onlyPod(c, ns.enabled, 'opted-out'))).toBe('none')
    const host = await onlyPod(c, ns.enabled, 'host')
    expect(podProxyState(host)).toBe('none')
    expect(host.status?.podIP).toBe(host.status?.hostIP)
  })

  it('injects bare pods the harness creates, as the webhook does', async () => {
    const bare = await onlyPod(c, ns.enabled, 'bare')
    expect(podProxyState(bare)).toBe('sidecar')
    expect(bare.spec?.nodeName).toBeTruthy()
    expect(bare.status?.phase).toBe('Running')
  })

  it('follows the webhook selectors: istio-injection=disabled blocks pod opt-in, an unlabelled namespace honours it', async () => {
    expect(podProxyState(await onlyPod(c, ns.disabled, 'opt-in'))).toBe('none')
    expect(podProxyState(await onlyPod(c, ns.plain, 'opt-in'))).toBe('sidecar')
    expect(podProxyState(await onlyPod(c, ns.plain, 'none'))).toBe('none')
  })

  it('injects with the revision the namespace or pod names, a tag resolved to its revision', async () => {
    for (const [namespace, app] of [
      [ns.rev, 'web'],
      [ns.tag, 'web'],
      [ns.plain, 'pod-rev'],
    ] as const) {
      const pod = await onlyPod(c, namespace, app)
      expect(pod.metadata.annotations?.['istio.io/rev']).toBe('canary')
      expect(JSON.parse(pod.metadata.annotations!['sidecar.istio.io/status']!).revision).toBe('canary')
      expect(
        (pod.spec?.containers as {name: string; image: string}[]).find((x) => x.name === 'istio-proxy')?.image,
      ).toBe('docker.io/istio/proxyv2:1.31.0')
    }
    // istio-injection beats istio.io/rev; an unknown revision injects nothing.
    expect((await onlyPod(c, ns.both, 'web')).metadata.annotations?.['istio.io/rev']).toBe('default')
    expect(podProxyState(await onlyPod(c, ns.unknown, 'web'))).toBe('none')
  })

  it('decides at pod creation only: labelling the namespace changes nothing until a restart', async () => {
    const before = await onlyPod(c, ns.plain, 'none')
    await labelNamespace(c, ns.plain, {'istio-injection': 'enabled'})
    await c.waitForIdle()
    const same = await onlyPod(c, ns.plain, 'none')
    expect(same.metadata.uid).toBe(before.metadata.uid)
    expect(podProxyState(same)).toBe('none')
    await restart(c, 'Deployment', ns.plain, 'none')
    await c.waitForIdle()
    expect(podProxyState(await onlyPod(c, ns.plain, 'none'))).toBe('sidecar')
  })
})

describe('injection of a pre-ambient control plane on Kubernetes 1.33 nodes', () => {
  let c: TestCluster
  const ns = {plain: uniqueName('pre-plain'), enabled: uniqueName('pre-enabled')}

  beforeAll(async () => {
    c = await startTestCluster({
      quiet: true,
      install: {ambient: false, kubeletVersion: 'v1.33.2', enableNamespacesByDefault: true},
      fixture: [
        namespaceObject(ns.plain),
        namespaceObject(ns.enabled, {'istio-injection': 'enabled'}),
        deployment(ns.plain, 'web'),
        deployment(ns.enabled, 'classic', {annotations: {'sidecar.istio.io/nativeSidecar': 'false'}}),
      ],
    })
  })
  afterAll(() => c?.stop())

  it('injects native sidecars (ENABLE_NATIVE_SIDECARS=auto on ≥ 1.33 nodes), with istio-init and without HBONE', async () => {
    // enableNamespacesByDefault: the auto webhook injects a namespace without labels (E3).
    const pod = await onlyPod(c, ns.plain, 'web')
    expect(containerNames(pod)).toEqual({containers: ['app'], init: ['istio-init', 'istio-proxy']})
    expect(podProxyState(pod)).toBe('sidecar-native')
    expect(envOf(pod, 'istio-proxy').ISTIO_META_ENABLE_HBONE).toBeUndefined()
    expect(pod.metadata.labels?.['networking.istio.io/tunnel']).toBeUndefined()
  })

  it('lets the pod annotation override the native default', async () => {
    const pod = await onlyPod(c, ns.enabled, 'classic')
    expect(containerNames(pod)).toEqual({containers: ['app', 'istio-proxy'], init: ['istio-init']})
  })

  it('installs no ambient components', async () => {
    const all = await pods(c, 'istio-system')
    expect(all.map((p) => p.metadata.labels?.app ?? p.metadata.labels?.['k8s-app'])).toEqual(['istiod'])
  })
})

describe('the injection decision itself', () => {
  it('creates pods from the DaemonSet template through the webhook too', async () => {
    const ns = uniqueName('inj-ds')
    const c = await startTestCluster({
      quiet: true,
      fixture: [
        namespaceObject(ns, {'istio-injection': 'enabled'}),
        {
          apiVersion: 'apps/v1',
          kind: 'DaemonSet',
          metadata: {name: 'agent', namespace: ns},
          spec: {
            selector: {matchLabels: {app: 'agent'}},
            template: {
              metadata: {labels: {app: 'agent'}},
              spec: {containers: [{name: 'agent', image: 'registry.example/agent:1'}]},
            },
          },
        },
      ],
    })
    try {
      const agents = await pods(c, ns, 'app=agent')
      expect(agents.length).toBeGreaterThan(0)
      expect(agents.every((p) => podProxyState(p) === 'sidecar')).toBe(true)
    } finally {
      await c.stop()
    }
  })

  it('needs no Istio installation to follow the chart’s selector table', async () => {
    const ns = uniqueName('inj-table')
    const c = await startTestCluster({
      quiet: true,
      install: {revisions: [], ztunnel: 'absent', istioCni: 'absent'},
      fixture: [namespaceObject(ns, {'istio-injection': 'enabled'}), deployment(ns, 'web')],
    })
    try {
      // No webhooks: predicted from the chart's table; no injector ConfigMap: chart defaults.
      const pod = await onlyPod(c, ns, 'web')
      expect(podProxyState(pod)).toBe('sidecar')
      expect(containerNames(pod).init).toEqual(['istio-init'])
    } finally {
      await c.stop()
    }
  })
})
