import {describe, expect, it} from 'vitest'
import type {Finding, KubeObject, OwnerReference, WorkloadItem} from '../../src/planner/model.js'
import {analyzeInjectionWebhooks, analyzeNamespace} from '../../src/planner/namespace.js'
import {analyzeWorkloads} from '../../src/planner/workloads.js'

const NS = 'shop'

function nsState(labels: Record<string, string> = {}, name = NS) {
  return analyzeNamespace(name, {apiVersion: 'v1', kind: 'Namespace', metadata: {name, labels}}).state
}

interface PodOpts {
  labels?: Record<string, string>
  annotations?: Record<string, string>
  spec?: Record<string, unknown>
}

const app = {name: 'app', image: 'registry.example/app:1'}
const proxy = {name: 'istio-proxy', image: 'docker.io/istio/proxyv2:1.24.0'}
const nativeProxy = {...proxy, restartPolicy: 'Always'}

function template(o: PodOpts = {}) {
  return {
    metadata: {labels: {app: 'web', ...(o.labels ?? {})}, annotations: o.annotations ?? {}},
    spec: {containers: [app], ...(o.spec ?? {})},
  }
}

function controller(
  kind: string,
  name: string,
  o: PodOpts & {meta?: Record<string, unknown>; extraSpec?: Record<string, unknown>; apiVersion?: string} = {},
): KubeObject {
  const apiVersion = o.apiVersion ?? (kind === 'Job' || kind === 'CronJob' ? 'batch/v1' : 'apps/v1')
  const spec =
    kind === 'CronJob'
      ? {schedule: '* * * * *', jobTemplate: {spec: {template: template(o)}}, ...(o.extraSpec ?? {})}
      : {selector: {matchLabels: {app: 'web', ...(o.labels ?? {})}}, template: template(o), ...(o.extraSpec ?? {})}
  return {apiVersion, kind, metadata: {name, namespace: NS, ...(o.meta ?? {})}, spec}
}

function owner(kind: string, name: string, apiVersion = 'apps/v1'): OwnerReference {
  return {apiVersion, kind, name, controller: true, uid: `${kind}-${name}`}
}

function pod(
  name: string,
  o: PodOpts & {owners?: OwnerReference[]; phase?: string; namespace?: string} = {},
): KubeObject {
  const obj: KubeObject = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: o.namespace ?? NS,
      labels: o.labels ?? {},
      annotations: o.annotations ?? {},
      ...(o.owners ? {ownerReferences: o.owners} : {}),
    },
    spec: {containers: [app], ...(o.spec ?? {})},
  }
  if (o.phase) obj.status = {phase: o.phase}
  return obj
}

const STATUS = {'sidecar.istio.io/status': '{"containers":["istio-proxy"],"revision":"default"}'}
const sidecarPod = (name: string, o: PodOpts & {owners?: OwnerReference[]} = {}) =>
  pod(name, {
    ...o,
    annotations: {...STATUS, ...(o.annotations ?? {})},
    spec: {containers: [app, proxy], ...(o.spec ?? {})},
  })

function run(
  objects: KubeObject[],
  labels: Record<string, string> = {},
  webhooks?: ReturnType<typeof analyzeInjectionWebhooks>['webhooks'],
) {
  return analyzeWorkloads(objects, nsState(labels), webhooks ? {webhooks} : {})
}

const one = (r: {workloads: WorkloadItem[]}, name: string) => {
  const w = r.workloads.find((x) => x.ref.name === name)
  if (!w) throw new Error(`no workload ${name} in ${r.workloads.map((x) => x.ref.name).join(',')}`)
  return w
}
const codes = (findings: Finding[], name?: string) =>
  findings.filter((f) => name === undefined || f.ref?.name === name).map((f) => f.code)

describe('proxy state detection, in the order of DOMAIN §2.4', () => {
  const bare = (p: KubeObject) => one(run([p], {'istio-injection': 'enabled'}), p.metadata.name)

  it('status annotation first: classic or native by where istio-proxy sits', () => {
    expect(bare(sidecarPod('a')).proxy).toBe('sidecar')
    expect(bare(pod('b', {annotations: STATUS, spec: {containers: [app], initContainers: [nativeProxy]}})).proxy).toBe(
      'sidecar-native',
    )
    // Annotation present but containers not visible: say classic.
    expect(bare(pod('c', {annotations: STATUS, spec: {}})).proxy).toBe('sidecar')
    // The annotation wins over the ambient one (istio-cni never captures such a pod).
    expect(bare(pod('d', {annotations: {...STATUS, 'ambient.istio.io/redirection': 'enabled'}, spec: {}})).proxy).toBe(
      'sidecar',
    )
  })

  it('then istio-proxy in containers, then a native init container', () => {
    expect(bare(pod('a', {spec: {containers: [app, proxy]}})).proxy).toBe('sidecar')
    expect(bare(pod('b', {spec: {containers: [app], initContainers: [nativeProxy]}})).proxy).toBe('sidecar-native')
    // An istio-proxy init container that lost its restartPolicy (stripped export) still is the injected native sidecar.
    expect(bare(pod('c', {spec: {containers: [app], initContainers: [proxy]}})).proxy).toBe('sidecar-native')
    // Another init container is no sidecar.
    expect(
      bare(pod('d', {spec: {containers: [app], initContainers: [{name: 'istio-init', image: 'proxyv2'}]}})).proxy,
    ).toBe('none')
  })

  it('then ambient.istio.io/redirection: enabled; pending is not yet ambient and says so', () => {
    expect(bare(pod('a', {annotations: {'ambient.istio.io/redirection': 'enabled'}})).proxy).toBe('ambient')
    const r = run([pod('b', {annotations: {'ambient.istio.io/redirection': 'pending'}})], {
      'istio.io/dataplane-mode': 'ambient',
    })
    expect(one(r, 'b').proxy).toBe('none')
    const f = r.findings.find((x) => x.code === 'AmbientRedirectionPending')!
    expect(f).toMatchObject({id: 'ambient-pending/Pod/b', severity: 'warning'})
    expect(f.message).toMatch(/pass no traffic/)
  })

  it('else none', () => {
    expect(bare(pod('a')).proxy).toBe('none')
    expect(bare(pod('a')).predicted).toBeUndefined()
  })
})

describe('ownership and aggregation', () => {
  it('pods of a Deployment (through its ReplicaSet) count under the Deployment and decide its proxy', () => {
    const d = controller('Deployment', 'web')
    const rs = controller('ReplicaSet', 'web-7d9f', {
      meta: {ownerReferences: [owner('Deployment', 'web')], labels: {'pod-template-hash': '7d9f'}},
    })
    const pods = [
      sidecarPod('web-7d9f-a', {
        owners: [owner('ReplicaSet', 'web-7d9f')],
        labels: {app: 'web', 'networking.istio.io/tunnel': 'http'},
      }),
      sidecarPod('web-7d9f-b', {
        owners: [owner('ReplicaSet', 'web-7d9f')],
        labels: {app: 'web', 'networking.istio.io/tunnel': 'http'},
      }),
      pod('web-7d9f-c', {owners: [owner('ReplicaSet', 'web-7d9f')], labels: {app: 'web'}}),
    ]
    const r = run([d, rs, ...pods], {'istio-injection': 'enabled'})
    expect(r.workloads.map((w) => `${w.ref.kind}/${w.ref.name}`)).toEqual(['Deployment/web'])
    const w = one(r, 'web')
    expect(w).toMatchObject({
      proxy: 'sidecar',
      pods: {total: 3, sidecar: 2, ambient: 0, none: 1},
      ref: {apiVersion: 'apps/v1', kind: 'Deployment', namespace: NS, name: 'web'},
    })
    expect(w.predicted).toBeUndefined()
    expect(codes(r.findings, 'web')).toEqual(expect.arrayContaining(['PodsWithoutProxy', 'MixedProxyPods']))
    expect(r.findings.find((f) => f.code === 'PodsWithoutProxy')!.message).toMatch(/^1 of 3 pod/)
  })

  it('all-native sidecars make the workload sidecar-native; any classic one makes it sidecar', () => {
    const d = controller('Deployment', 'web')
    const p = (n: string, init: boolean) =>
      pod(n, {
        owners: [owner('Deployment', 'web')],
        annotations: STATUS,
        spec: init ? {containers: [app], initContainers: [nativeProxy]} : {containers: [app, proxy]},
      })
    expect(one(run([d, p('a', true), p('b', true)]), 'web').proxy).toBe('sidecar-native')
    expect(one(run([d, p('a', true), p('b', false)]), 'web').proxy).toBe('sidecar')
  })

  it('ReplicaSets without a Deployment and Jobs without a CronJob are workloads; owned ones are not', () => {
    const r = run([
      controller('ReplicaSet', 'lonely'),
      controller('CronJob', 'nightly'),
      controller('Job', 'nightly-28000000', {meta: {ownerReferences: [owner('CronJob', 'nightly', 'batch/v1')]}}),
      controller('Job', 'once'),
    ])
    expect(r.workloads.map((w) => `${w.ref.kind}/${w.ref.name}`)).toEqual([
      'CronJob/nightly',
      'Job/once',
      'ReplicaSet/lonely',
    ])
  })

  it('StatefulSet, DaemonSet and Job pods count under their controllers (and CronJob through Job)', () => {
    const r = run([
      controller('StatefulSet', 'db'),
      sidecarPod('db-0', {owners: [owner('StatefulSet', 'db')]}),
      controller('DaemonSet', 'agent'),
      pod('agent-x', {owners: [owner('DaemonSet', 'agent')], annotations: {'ambient.istio.io/redirection': 'enabled'}}),
      controller('CronJob', 'nightly'),
      controller('Job', 'nightly-1', {meta: {ownerReferences: [owner('CronJob', 'nightly', 'batch/v1')]}}),
      sidecarPod('nightly-1-abc', {owners: [owner('Job', 'nightly-1', 'batch/v1')]}),
    ])
    expect(r.workloads.map((w) => `${w.ref.kind}/${w.ref.name}:${w.proxy}:${w.pods?.total}`)).toEqual([
      'CronJob/nightly:sidecar:1',
      'DaemonSet/agent:ambient:1',
      'StatefulSet/db:sidecar:1',
    ])
  })

  it('falls back on pod-template-hash when the ReplicaSet is missing, and says so', () => {
    const r = run([
      controller('Deployment', 'web'),
      sidecarPod('web-5c6d-x', {
        owners: [owner('ReplicaSet', 'web-5c6d')],
        labels: {app: 'web', 'pod-template-hash': '5c6d'},
      }),
    ])
    expect(r.workloads.map((w) => w.ref.name)).toEqual(['web'])
    expect(one(r, 'web').pods?.total).toBe(1)
    expect(r.findings.find((f) => f.code === 'OwnerInferred')!.message).toMatch(/pod-template-hash/)
  })

  it('an owner missing from the snapshot becomes the workload, described by its pods', () => {
    const r = run([sidecarPod('x-abc', {owners: [owner('ReplicaSet', 'x-5c6d')], labels: {app: 'x'}})])
    const w = one(r, 'x-5c6d')
    expect(w.ref).toEqual({apiVersion: 'apps/v1', kind: 'ReplicaSet', namespace: NS, name: 'x-5c6d'})
    expect(w.proxy).toBe('sidecar')
    // The pod stands in for the missing template: injected, but not manual injection.
    expect(w.traits).not.toContain('manual-injection')
    expect(codes(r.findings)).toContain('OwnerInferred')
  })

  it('a pod without ownerReferences but with controller labels is matched by selector', () => {
    const r = run([
      controller('Deployment', 'web'),
      sidecarPod('web-1', {labels: {app: 'web', 'pod-template-hash': 'abc'}}),
    ])
    expect(r.workloads.map((w) => w.ref.name)).toEqual(['web'])
    expect(r.findings.find((f) => f.code === 'OwnerInferred')!.message).toMatch(/no ownerReferences/)
  })

  it('treats mirror pods (owned by a Node) as bare pods', () => {
    const r = run([
      sidecarPod('static-web-node1', {owners: [{apiVersion: 'v1', kind: 'Node', name: 'node1', controller: true}]}),
    ])
    expect(r.workloads.map((w) => `${w.ref.kind}/${w.ref.name}`)).toEqual(['Pod/static-web-node1'])
    expect(r.workloads[0]!.traits).toContain('bare-pod')
  })

  it('ignores terminated pods and objects of other namespaces', () => {
    const r = run([
      controller('Job', 'done'),
      sidecarPod('done-1', {owners: [owner('Job', 'done', 'batch/v1')]}),
      pod('done-2', {
        owners: [owner('Job', 'done', 'batch/v1')],
        phase: 'Succeeded',
        spec: {containers: [app, proxy]},
        annotations: STATUS,
      }),
      pod('elsewhere', {namespace: 'other'}),
    ])
    expect(r.workloads.map((w) => w.ref.name)).toEqual(['done'])
    expect(one(r, 'done').pods).toEqual({total: 1, sidecar: 1, ambient: 0, none: 0})
  })

  it('Argo Rollouts own their ReplicaSets and need their own restart', () => {
    const rollout = controller('Rollout', 'canary', {apiVersion: 'argoproj.io/v1alpha1'})
    const rs = controller('ReplicaSet', 'canary-1', {
      meta: {ownerReferences: [owner('Rollout', 'canary', 'argoproj.io/v1alpha1')]},
    })
    const p = sidecarPod('canary-1-x', {owners: [owner('ReplicaSet', 'canary-1')]})
    const r = run([rollout, rs, p], {'istio-injection': 'enabled'})
    expect(r.workloads.map((w) => `${w.ref.kind}/${w.ref.name}`)).toEqual(['Rollout/canary'])
    expect(r.findings.find((f) => f.id === 'E10/Rollout/canary')!.fix).toMatch(/argo rollouts restart/)
  })
})

describe('prediction from the pod template and the namespace labels', () => {
  it('injected namespace: predicted sidecar, native unknown reported once', () => {
    const r = run([controller('Deployment', 'a'), controller('Deployment', 'b')], {'istio-injection': 'enabled'})
    expect(r.workloads.map((w) => [w.proxy, w.predicted])).toEqual([
      ['sidecar', true],
      ['sidecar', true],
    ])
    expect(r.findings.filter((f) => f.code === 'NativeSidecarUnknown')).toEqual([
      expect.objectContaining({id: `native-sidecar-unknown/${NS}`, severity: 'info'}),
    ])
    expect(one(r, 'a').pods).toBeUndefined()
  })

  it('sidecar.istio.io/nativeSidecar decides native vs classic', () => {
    const r = run(
      [
        controller('Deployment', 'n', {annotations: {'sidecar.istio.io/nativeSidecar': 'true'}}),
        controller('Deployment', 'c', {annotations: {'sidecar.istio.io/nativeSidecar': 'false'}}),
      ],
      {
        'istio-injection': 'enabled',
      },
    )
    expect(one(r, 'n').proxy).toBe('sidecar-native')
    expect(one(r, 'c').proxy).toBe('sidecar')
    expect(codes(r.findings)).not.toContain('NativeSidecarUnknown')
  })

  it('ambient namespace: predicted ambient; a pod-level dataplane-mode=ambient is captured anywhere', () => {
    expect(one(run([controller('Deployment', 'a')], {'istio.io/dataplane-mode': 'ambient'}), 'a').proxy).toBe('ambient')
    expect(one(run([controller('Deployment', 'a', {labels: {'istio.io/dataplane-mode': 'ambient'}})]), 'a').proxy).toBe(
      'ambient',
    )
    expect(one(run([controller('Deployment', 'a')]), 'a').proxy).toBe('none')
    // The sidecar wins when both labels are there.
    expect(
      one(
        run([controller('Deployment', 'a')], {'istio-injection': 'enabled', 'istio.io/dataplane-mode': 'ambient'}),
        'a',
      ).proxy,
    ).toBe('sidecar')
  })

  it('inject=false: not injected, opt-out trait, captured at once when ambient is set (E5)', () => {
    const r = run([controller('Deployment', 'legacy', {labels: {'sidecar.istio.io/inject': 'false'}})], {
      'istio-injection': 'enabled',
    })
    const w = one(r, 'legacy')
    expect(w).toMatchObject({proxy: 'none', predicted: true})
    expect(w.traits).toContain('inject-opt-out')
    const e5 = r.findings.find((f) => f.code === 'OptedOutWorkloadCaptured')!
    expect(e5.id).toBe('E5/Deployment/legacy')
    expect(e5.message).toMatch(/sidecar\.istio\.io\/inject=false/)
    expect(e5.fix).toMatch(/istio\.io\/dataplane-mode: none/)
    // The deprecated annotation counts too, the label wins over it.
    expect(
      one(
        run([controller('Deployment', 'x', {annotations: {'sidecar.istio.io/inject': 'false'}})], {
          'istio-injection': 'enabled',
        }),
        'x',
      ).traits,
    ).toContain('inject-opt-out')
    expect(
      one(
        run(
          [
            controller('Deployment', 'y', {
              labels: {'sidecar.istio.io/inject': 'true'},
              annotations: {'sidecar.istio.io/inject': 'false'},
            }),
          ],
          {'istio-injection': 'enabled'},
        ),
        'y',
      ).proxy,
    ).toBe('sidecar')
  })

  it('no E5 once the namespace is already ambient, for dataplane-mode=none, hostNetwork or waypoints', () => {
    expect(
      codes(
        run([controller('Deployment', 'a', {labels: {'sidecar.istio.io/inject': 'false'}})], {
          'istio.io/dataplane-mode': 'ambient',
        }).findings,
      ),
    ).not.toContain('OptedOutWorkloadCaptured')
    const none = run(
      [
        controller('Deployment', 'a', {
          labels: {'sidecar.istio.io/inject': 'false', 'istio.io/dataplane-mode': 'none'},
        }),
      ],
      {'istio-injection': 'enabled'},
    )
    expect(codes(none.findings)).not.toContain('OptedOutWorkloadCaptured')
    expect(one(none, 'a').traits).toContain('dataplane-none')
    expect(codes(none.findings)).toContain('DataplaneModeNone')
    const host = run([controller('DaemonSet', 'node-agent', {spec: {hostNetwork: true}})], {
      'istio-injection': 'enabled',
    })
    expect(one(host, 'node-agent')).toMatchObject({proxy: 'none', traits: ['host-network']})
    expect(codes(host.findings)).toEqual(['HostNetworkWorkload'])
  })

  it('plain workloads in an unlabelled namespace are captured at once too (E5)', () => {
    const r = run([controller('Deployment', 'plain')])
    expect(r.findings.find((f) => f.id === 'E5/Deployment/plain')!.message).toMatch(
      /gets no sidecar \(no injection webhook matches/,
    )
  })

  it('pod-level opt-in (E4) by label only', () => {
    const byLabel = run([controller('Deployment', 'a', {labels: {'sidecar.istio.io/inject': 'true'}})])
    expect(one(byLabel, 'a')).toMatchObject({proxy: 'sidecar', predicted: true})
    expect(one(byLabel, 'a').traits).toContain('pod-opt-in')
    expect(byLabel.findings.find((f) => f.code === 'PodLevelInjection')!.message).toMatch(
      /label sidecar\.istio\.io\/inject=true/,
    )
    const byRev = run([controller('Deployment', 'b', {labels: {'istio.io/rev': 'canary'}})])
    expect(one(byRev, 'b').traits).toContain('pod-opt-in')
    expect(byRev.findings.find((f) => f.code === 'PodLevelInjection')!.message).toMatch(/istio\.io\/rev=canary/)
    const byAnnotation = run([controller('Deployment', 'c', {annotations: {'sidecar.istio.io/inject': 'true'}})])
    expect(one(byAnnotation, 'c').traits).not.toContain('pod-opt-in')
    expect(one(byAnnotation, 'c').proxy).toBe('none')
  })

  it('uses the installed webhooks when given', () => {
    const mwc: KubeObject = {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'MutatingWebhookConfiguration',
      metadata: {name: 'istio-sidecar-injector', labels: {'istio.io/rev': 'default'}},
      webhooks: [
        {name: 'namespace.sidecar-injector.istio.io', namespaceSelector: {matchLabels: {'istio-injection': 'enabled'}}},
      ],
    }
    const {webhooks} = analyzeInjectionWebhooks([mwc])
    // istio.io/rev=canary is served by no webhook here.
    expect(one(run([controller('Deployment', 'a')], {'istio.io/rev': 'canary'}, webhooks), 'a').proxy).toBe('none')
    expect(one(run([controller('Deployment', 'a')], {'istio.io/rev': 'canary'}), 'a').proxy).toBe('sidecar')
  })
})

describe('manual injection, HBONE, gateways, waypoints', () => {
  it('a template with istio-proxy is manual injection (E4): predicted from where it sits', () => {
    const r = run([
      controller('Deployment', 'classic', {annotations: STATUS, spec: {containers: [app, proxy]}}),
      controller('Deployment', 'native', {
        spec: {
          containers: [app],
          initContainers: [{...nativeProxy, env: [{name: 'ISTIO_META_ENABLE_HBONE', value: 'true'}]}],
        },
      }),
    ])
    expect(one(r, 'classic')).toMatchObject({proxy: 'sidecar', predicted: true})
    expect(one(r, 'classic').traits).toEqual(['manual-injection'])
    expect(one(r, 'native').proxy).toBe('sidecar-native')
    expect(one(r, 'native').traits).toEqual(['hbone-capable', 'manual-injection'])
    expect(r.findings.find((f) => f.id === 'E4/manual/Deployment/classic')!.fix).toMatch(/kube-inject/)
    expect(r.findings.map((f) => f.id)).toContain('HBONE/Deployment/classic')
    expect(r.findings.map((f) => f.id)).not.toContain('HBONE/Deployment/native')
  })

  it('observed sidecars: HBONE-capable by the tunnel label or the env var, else a warning', () => {
    const d = controller('Deployment', 'web')
    const ok = run([
      d,
      sidecarPod('a', {owners: [owner('Deployment', 'web')], labels: {'networking.istio.io/tunnel': 'http'}}),
    ])
    expect(one(ok, 'web').traits).toContain('hbone-capable')
    expect(codes(ok.findings)).not.toContain('SidecarsNotHboneCapable')
    const env = run([
      d,
      pod('a', {
        owners: [owner('Deployment', 'web')],
        annotations: STATUS,
        spec: {containers: [app, {...proxy, env: [{name: 'ISTIO_META_ENABLE_HBONE', value: 'true'}]}]},
      }),
    ])
    expect(one(env, 'web').traits).toContain('hbone-capable')
    const old = run([d, sidecarPod('a', {owners: [owner('Deployment', 'web')]})])
    expect(one(old, 'web').traits).not.toContain('hbone-capable')
    const f = old.findings.find((x) => x.code === 'SidecarsNotHboneCapable')!
    expect(f).toMatchObject({id: 'HBONE/Deployment/web', severity: 'warning'})
    expect(f.message).toMatch(/cannot tunnel/)
  })

  const gateway = (name: string, labels: Record<string, string> = {'sidecar.istio.io/inject': 'true'}) =>
    controller('Deployment', name, {
      labels: {istio: 'ingressgateway', ...labels},
      annotations: {'inject.istio.io/templates': 'gateway'},
      spec: {containers: [{name: 'istio-proxy', image: 'auto'}]},
    })

  it('injected gateways (E7): no opt-in/manual traits, no lost annotations; still injected after the labels go', () => {
    const r = run([gateway('ingress')], {'istio-injection': 'enabled'})
    const w = one(r, 'ingress')
    expect(w.traits).toEqual(['injected-gateway'])
    expect(w.lostAnnotations).toEqual([])
    expect(w.proxy).toBe('sidecar')
    const e7 = r.findings.find((f) => f.code === 'InjectedGateway')!
    expect(e7).toMatchObject({id: 'E7/Deployment/ingress', severity: 'info'})
    expect(e7.message).toMatch(/still injected/)
    expect(e7.fix).toMatch(/Never set istio-injection=disabled/)
    expect(codes(r.findings)).not.toContain('NotRestartable')
  })

  it('E7 warns when removing istio.io/rev moves the gateway to the default revision, or stops its injection', () => {
    const moved = run([gateway('ingress')], {'istio.io/rev': 'canary'}).findings.find(
      (f) => f.code === 'InjectedGateway',
    )!
    expect(moved.severity).toBe('warning')
    expect(moved.message).toMatch(/default revision instead of canary/)
    const lost = run([gateway('ingress', {})], {'istio-injection': 'enabled'}).findings.find(
      (f) => f.code === 'InjectedGateway',
    )!
    expect(lost.severity).toBe('warning')
    expect(lost.message).toMatch(/NOT injected/)
  })

  it('image: auto that no webhook injects: IST0146 for controllers, IST0147 (error) for pods', () => {
    const r = run([gateway('gw', {}), pod('raw', {spec: {containers: [{name: 'istio-proxy', image: 'auto'}]}})])
    expect(r.findings.find((f) => f.code === 'GatewayImageAutoNotInjected')).toMatchObject({
      id: 'IST0146/Deployment/gw',
      severity: 'warning',
    })
    expect(r.findings.find((f) => f.code === 'GatewayPodImageAutoNotInjected')).toMatchObject({
      id: 'IST0147/Pod/raw',
      severity: 'error',
    })
    expect(one(r, 'raw').proxy).toBe('none')
    expect(codes(run([gateway('gw')]).findings)).not.toContain('GatewayImageAutoNotInjected')
  })

  it('Gateway-API gateways of class istio are captured at once (E8), not E5', () => {
    const d = controller('Deployment', 'gateway-istio', {
      meta: {labels: {'gateway.istio.io/managed': 'istio.io-gateway-controller'}},
      labels: {'sidecar.istio.io/inject': 'false', 'gateway.networking.k8s.io/gateway-name': 'gateway'},
    })
    const r = run([d], {'istio-injection': 'enabled'})
    expect(one(r, 'gateway-istio').traits).toEqual(['inject-opt-out', 'kube-gateway'])
    expect(codes(r.findings)).toEqual(['GatewayApiGatewayCaptured'])
    expect(r.findings[0]!.fix).toMatch(/Label the Gateway istio\.io\/dataplane-mode=none/)
  })

  it('waypoints are recognised and left alone', () => {
    const d = controller('Deployment', 'waypoint', {
      meta: {labels: {'gateway.istio.io/managed': 'istio.io-mesh-controller'}},
      labels: {
        'sidecar.istio.io/inject': 'false',
        'istio.io/dataplane-mode': 'none',
        'gateway.istio.io/managed': 'istio.io-mesh-controller',
      },
      annotations: {'proxy.istio.io/config': '{}'},
    })
    const r = run([d], {'istio-injection': 'enabled'})
    const w = one(r, 'waypoint')
    expect(w.traits).toEqual(['dataplane-none', 'inject-opt-out', 'waypoint'])
    expect(w.lostAnnotations).toEqual([])
    expect(r.findings).toEqual([])
  })

  it('proxyless gRPC is a trait', () => {
    expect(
      one(
        run([controller('Deployment', 'g', {annotations: {'inject.istio.io/templates': 'grpc-agent'}})], {
          'istio-injection': 'enabled',
        }),
        'g',
      ).traits,
    ).toContain('proxyless-grpc')
  })
})

describe('restarts and lifecycle (E9, E10), GitOps (E23)', () => {
  const injected = {'istio-injection': 'enabled'}

  it('Jobs, CronJobs and bare pods with sidecars need turnover / re-creation (E10); bare pods without one do not', () => {
    const r = run([controller('Job', 'j'), controller('CronJob', 'c'), sidecarPod('p')], injected)
    expect(one(r, 'j').traits).toContain('job')
    expect(one(r, 'c').traits).toContain('job')
    expect(one(r, 'p').traits).toContain('bare-pod')
    expect(r.findings.filter((f) => f.code === 'NotRestartable').map((f) => f.id)).toEqual([
      'E10/CronJob/c',
      'E10/Job/j',
      'E10/Pod/p',
    ])
    expect(codes(run([pod('q')], injected).findings)).not.toContain('NotRestartable')
    expect(codes(run([controller('ReplicaSet', 'rs')], injected).findings)).toContain('NotRestartable')
    expect(codes(run([controller('Deployment', 'd')], injected).findings)).not.toContain('NotRestartable')
  })

  it('OnDelete and partitioned StatefulSets/DaemonSets (E9)', () => {
    const r = run(
      [
        controller('StatefulSet', 'ondelete', {extraSpec: {updateStrategy: {type: 'OnDelete'}}}),
        controller('StatefulSet', 'part', {
          extraSpec: {updateStrategy: {type: 'RollingUpdate', rollingUpdate: {partition: 2}}},
        }),
        controller('StatefulSet', 'zero', {
          extraSpec: {updateStrategy: {type: 'RollingUpdate', rollingUpdate: {partition: 0}}},
        }),
        controller('DaemonSet', 'ds', {extraSpec: {updateStrategy: {type: 'OnDelete'}}}),
      ],
      injected,
    )
    expect(one(r, 'ondelete').traits).toEqual(['on-delete'])
    expect(one(r, 'part').traits).toEqual(['partitioned'])
    expect(one(r, 'zero').traits).toEqual([])
    expect(one(r, 'ds').traits).toEqual(['on-delete'])
    expect(r.findings.filter((f) => f.code === 'StatefulRestartLimits').map((f) => f.id)).toEqual([
      'E9/DaemonSet/ds',
      'E9/StatefulSet/ondelete',
      'E9/StatefulSet/part',
    ])
    expect(r.findings.find((f) => f.id === 'E9/StatefulSet/part')!.message).toMatch(/ordinal below 2/)
  })

  it('finds quitquitquit / healthz calls in commands, args and hooks of app containers only (E10)', () => {
    const r = run(
      [
        controller('Job', 'migrate', {
          spec: {
            containers: [
              {
                name: 'main',
                image: 'x',
                command: ['sh', '-c'],
                args: ['run && curl -X POST localhost:15020/quitquitquit'],
              },
            ],
          },
        }),
        controller('Job', 'waiter', {
          spec: {
            containers: [
              {
                name: 'main',
                image: 'x',
                command: ['sh', '-c', 'until curl -s localhost:15021/healthz/ready; do sleep 1; done; run'],
              },
            ],
          },
        }),
        controller('Deployment', 'hook', {
          spec: {
            containers: [
              {
                name: 'main',
                image: 'x',
                lifecycle: {preStop: {exec: {command: ['curl', 'http://127.0.0.1:15000/quitquitquit']}}},
              },
            ],
          },
        }),
        controller('Deployment', 'clean', {spec: {containers: [app, {...proxy, args: ['15020/quitquitquit']}]}}),
      ],
      injected,
    )
    for (const n of ['migrate', 'waiter', 'hook']) expect(one(r, n).traits).toContain('quitquitquit')
    expect(one(r, 'clean').traits).not.toContain('quitquitquit')
    const f = r.findings.find((x) => x.id === 'E10-quitquitquit/Job/migrate')!
    expect(f.message).toMatch(/Container\(s\) main/)
  })

  it('GitOps labels/annotations on the controller (E23), not our own managed-by', () => {
    const r = run([
      controller('Deployment', 'argo', {meta: {labels: {'argocd.argoproj.io/instance': 'shop'}}}),
      controller('Deployment', 'flux', {meta: {labels: {'kustomize.toolkit.fluxcd.io/name': 'apps'}}}),
      controller('Deployment', 'helm', {meta: {annotations: {'meta.helm.sh/release-name': 'shop'}}}),
      controller('Deployment', 'ours', {meta: {labels: {'app.kubernetes.io/managed-by': 'mesh-migrate'}}}),
    ])
    expect(['argo', 'flux', 'helm'].map((n) => one(r, n).traits.includes('gitops-managed'))).toEqual([true, true, true])
    expect(one(r, 'ours').traits).not.toContain('gitops-managed')
    expect(r.findings.find((f) => f.id === 'E23/Deployment/argo')!.message).toMatch(
      /Argo CD \(argocd\.argoproj\.io\/instance=shop\)/,
    )
  })
})

describe('IST0103 (pods outside the mesh in an injected namespace)', () => {
  it('fires for observed pods without a proxy, not for opt-outs, hostNetwork or non-injected namespaces', () => {
    const pods = [
      pod('plain'),
      pod('optout', {labels: {'sidecar.istio.io/inject': 'false'}}),
      pod('optout-anno', {annotations: {'sidecar.istio.io/inject': 'false'}}),
      pod('host', {spec: {containers: [app], hostNetwork: true}}),
      sidecarPod('ok'),
    ]
    expect(
      run(pods, {'istio-injection': 'enabled'})
        .findings.filter((f) => f.code === 'PodsWithoutProxy')
        .map((f) => f.id),
    ).toEqual(['IST0103/Pod/plain'])
    expect(
      run(pods, {'istio.io/rev': 'canary'})
        .findings.filter((f) => f.code === 'PodsWithoutProxy')
        .map((f) => f.id),
    ).toEqual(['IST0103/Pod/plain'])
    expect(codes(run(pods, {'istio-injection': 'disabled'}).findings)).not.toContain('PodsWithoutProxy')
    expect(codes(run(pods, {}).findings)).not.toContain('PodsWithoutProxy')
  })
})

describe('lost sidecar annotations (DOMAIN §2.6)', () => {
  it('reports every sidecar knob with its ambient replacement, and nothing else', () => {
    const d = controller('Deployment', 'web', {
      labels: {'sidecar.istio.io/inject': 'false'},
      annotations: {
        'sidecar.istio.io/proxyCPU': '100m',
        'sidecar.istio.io/proxyMemoryLimit': '1Gi',
        'sidecar.istio.io/logLevel': 'debug',
        'traffic.sidecar.istio.io/excludeOutboundIPRanges': '10.0.0.0/8',
        'traffic.sidecar.istio.io/excludeInboundPorts': '9090',
        'traffic.sidecar.istio.io/kubevirtInterfaces': 'net1',
        'prometheus.istio.io/merge-metrics': 'false',
        'proxy.istio.io/config':
          '{"proxyMetadata":{"ISTIO_META_DNS_CAPTURE":"true"},"holdApplicationUntilProxyStarts":true}',
        'sidecar.istio.io/nativeSidecar': 'true',
        'readiness.status.sidecar.istio.io/initialDelaySeconds': '5',
        'sidecar.istio.io/somethingNew': 'x',
        'prometheus.io/scrape': 'true',
        'kubectl.kubernetes.io/default-container': 'app',
      },
    })
    const r = run([d], {'istio-injection': 'enabled'})
    const lost = one(r, 'web').lostAnnotations
    expect(lost.map((a) => a.key)).toEqual([
      'sidecar.istio.io/inject',
      'prometheus.istio.io/merge-metrics',
      'proxy.istio.io/config',
      'readiness.status.sidecar.istio.io/initialDelaySeconds',
      'sidecar.istio.io/logLevel',
      'sidecar.istio.io/nativeSidecar',
      'sidecar.istio.io/proxyCPU',
      'sidecar.istio.io/proxyMemoryLimit',
      'sidecar.istio.io/somethingNew',
      'traffic.sidecar.istio.io/excludeInboundPorts',
      'traffic.sidecar.istio.io/excludeOutboundIPRanges',
      'traffic.sidecar.istio.io/kubevirtInterfaces',
    ])
    const text = (k: string) => lost.find((a) => a.key === k)!.replacement
    expect(text('sidecar.istio.io/inject')).toMatch(/istio\.io\/dataplane-mode: none/)
    expect(text('sidecar.istio.io/proxyCPU')).toMatch(/waypoint.*ztunnel is sized per node/)
    expect(text('sidecar.istio.io/logLevel')).toMatch(/waypoint Gateway/)
    expect(text('traffic.sidecar.istio.io/excludeOutboundIPRanges')).toMatch(
      /No per-port\/CIDR equivalent.*semantic change/,
    )
    expect(text('traffic.sidecar.istio.io/excludeInboundPorts')).toMatch(/bypass-inbound-capture/)
    expect(text('traffic.sidecar.istio.io/kubevirtInterfaces')).toMatch(/istio\.io\/reroute-virtual-interfaces/)
    expect(text('prometheus.istio.io/merge-metrics')).toMatch(/scrape the application directly/)
    expect(text('proxy.istio.io/config')).toMatch(/DNS capture is on by default/)
    expect(text('sidecar.istio.io/nativeSidecar')).toMatch(/Irrelevant/)
    expect(text('readiness.status.sidecar.istio.io/initialDelaySeconds')).toMatch(/probes/)
    const f = r.findings.find((x) => x.code === 'TrafficExclusionsLost')!
    expect(f.id).toBe('traffic-exclusions/Deployment/web')
    expect(f.message).toContain('traffic.sidecar.istio.io/excludeOutboundIPRanges')
  })

  it('inject=true label and pod istio.io/rev are reported as opt-ins to remove', () => {
    const lost = one(
      run([controller('Deployment', 'a', {labels: {'sidecar.istio.io/inject': 'true', 'istio.io/rev': 'canary'}})]),
      'a',
    ).lostAnnotations
    expect(lost.map((a) => a.key)).toEqual(['sidecar.istio.io/inject', 'istio.io/rev'])
    expect(lost[0]!.replacement).toMatch(/opt-in/)
    expect(lost[1]!.replacement).toMatch(/revision canary/)
  })

  // Issue 21 §7. istio/istio pkg/kube/inject/validate.go validateInterceptionMode: REDIRECT and TPROXY are the
  // sidecar's capture modes, NONE turns capture off. In ambient istio-cni sets up ztunnel's in-pod capture for every
  // pod, TPROXY-style (cni/pkg/iptables/iptables_linux.go; istio.io docs/ambient/architecture/traffic-redirection).
  it('interceptionMode TPROXY/REDIRECT is a capture mode, inert in ambient, not a traffic exclusion', () => {
    for (const mode of ['TPROXY', 'REDIRECT']) {
      const r = run([controller('Deployment', 'd', {annotations: {'sidecar.istio.io/interceptionMode': mode}})])
      const lost = one(r, 'd').lostAnnotations
      expect(lost.map((a) => a.key)).toEqual(['sidecar.istio.io/interceptionMode'])
      expect(lost[0]!.replacement).toMatch(/capture mode .*not a traffic exclusion\. Inert in ambient/)
      expect(lost[0]!.replacement).toMatch(/ztunnel's in-pod capture/)
      expect(lost[0]!.replacement).not.toMatch(/No per-port\/CIDR equivalent/)
      expect(r.findings.filter((f) => f.code === 'TrafficExclusionsLost')).toEqual([])
    }
  })

  it('interceptionMode NONE excludes all traffic from the sidecar: ztunnel captures it, a traffic exclusion lost', () => {
    const r = run([controller('Deployment', 'd', {annotations: {'sidecar.istio.io/interceptionMode': 'NONE'}})])
    expect(one(r, 'd').lostAnnotations[0]!.replacement).toMatch(/captures nothing today; ztunnel captures all TCP/)
    expect(r.findings.find((f) => f.code === 'TrafficExclusionsLost')!.message).toContain(
      'sidecar.istio.io/interceptionMode',
    )
  })

  it('on injected pods, skips what the injector writes itself but keeps user values', () => {
    const p = sidecarPod('p', {
      annotations: {
        'sidecar.istio.io/interceptionMode': 'REDIRECT',
        'traffic.sidecar.istio.io/includeInboundPorts': '*',
        'traffic.sidecar.istio.io/includeOutboundIPRanges': '*',
        'traffic.sidecar.istio.io/excludeInboundPorts': '15020,15021,15090',
        'traffic.sidecar.istio.io/excludeOutboundPorts': '5432',
      },
    })
    expect(one(run([p]), 'p').lostAnnotations.map((a) => a.key)).toEqual([
      'traffic.sidecar.istio.io/excludeOutboundPorts',
    ])
    // The same values on a template are the user's own.
    const d = controller('Deployment', 'd', {annotations: {'traffic.sidecar.istio.io/excludeInboundPorts': '15020'}})
    expect(one(run([d]), 'd').lostAnnotations.map((a) => a.key)).toEqual([
      'traffic.sidecar.istio.io/excludeInboundPorts',
    ])
  })
})

describe('other fields', () => {
  it('podLabels are the template labels, serviceAccount defaults to default', () => {
    const r = run([
      controller('Deployment', 'a', {labels: {version: 'v1'}, spec: {serviceAccountName: 'web-sa'}}),
      controller('Deployment', 'b'),
    ])
    expect(one(r, 'a')).toMatchObject({podLabels: {app: 'web', version: 'v1'}, serviceAccount: 'web-sa'})
    expect(one(r, 'b').serviceAccount).toBe('default')
  })

  it('is deterministic, sorted, with stable ids, and JSON-serialisable', () => {
    const objs = [
      controller('StatefulSet', 'b'),
      controller('Deployment', 'z'),
      controller('Deployment', 'a', {labels: {'sidecar.istio.io/inject': 'false'}}),
    ]
    const first = run(objs, {'istio-injection': 'enabled'})
    const second = run([...objs].reverse(), {'istio-injection': 'enabled'})
    expect(first.workloads.map((w) => `${w.ref.kind}/${w.ref.name}`)).toEqual([
      'Deployment/a',
      'Deployment/z',
      'StatefulSet/b',
    ])
    expect(second).toEqual(first)
    expect(JSON.parse(JSON.stringify(first))).toEqual(first)
    for (const f of first.findings) expect(f.ref?.namespace ?? NS).toBe(NS)
  })

  it('does not modify its input', () => {
    const objs = [controller('Deployment', 'a', {annotations: {'sidecar.istio.io/proxyCPU': '1'}})]
    const copy = structuredClone(objs)
    run(objs, {'istio-injection': 'enabled'})
    expect(objs).toEqual(copy)
  })
})
