// Pod verifications must not pass vacuously: a workload that should have pods (replicas > 0) but has
// none running yet is waited for, not counted as "0 pods, all fine".
import {describe, expect, it} from 'vitest'

import {runCheck, waitLine} from '../../src/executor/verify.js'
import type {ApiResource, KubeClient} from '../../src/kube/types.js'
import type {KubeObject, ObjectRef} from '../../src/planner/model.js'
import type {Verification} from '../../src/planner/plan-types.js'

const NS = 'shop'

/** A read-only client over a fixed set of objects (get, resourceFor, list by namespace). */
function fakeClient(objects: KubeObject[]): KubeClient {
  const same = (o: KubeObject, ref: ObjectRef) =>
    o.kind === ref.kind &&
    o.metadata.name === ref.name &&
    (o.metadata.namespace ?? undefined) === (ref.namespace ?? undefined)
  return {
    get: async (ref: ObjectRef) => objects.find((o) => same(o, ref)),
    resourceFor: async (apiVersion: string, kind: string) =>
      ({
        apiVersion,
        kind,
        group: '',
        version: 'v1',
        plural: `${kind.toLowerCase()}s`,
        namespaced: true,
        verbs: ['list'],
        preferred: true,
      }) as ApiResource,
    list: async (resource: ApiResource, opts?: {namespace?: string}) =>
      objects.filter((o) => o.kind === resource.kind && (!opts?.namespace || o.metadata.namespace === opts.namespace)),
  } as unknown as KubeClient
}

const deployment = (name: string, replicas: number): KubeObject => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: {name, namespace: NS, generation: 1},
  spec: {replicas, template: {metadata: {labels: {app: name}}}},
  status: {observedGeneration: 1, replicas, updatedReplicas: replicas, availableReplicas: replicas},
})
const replicaSet = (name: string, owner: string): KubeObject => ({
  apiVersion: 'apps/v1',
  kind: 'ReplicaSet',
  metadata: {
    name,
    namespace: NS,
    ownerReferences: [{apiVersion: 'apps/v1', kind: 'Deployment', name: owner, uid: owner, controller: true}],
  },
})
const ambientPod = (name: string, rs: string, labels: Record<string, string> = {}): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: {
    name,
    namespace: NS,
    labels,
    annotations: {'ambient.istio.io/redirection': 'enabled'},
    ownerReferences: [{apiVersion: 'apps/v1', kind: 'ReplicaSet', name: rs, uid: rs, controller: true}],
  },
  spec: {containers: [{name: 'app', image: 'x'}]},
  status: {phase: 'Running'},
})
const ref = (name: string): ObjectRef => ({apiVersion: 'apps/v1', kind: 'Deployment', namespace: NS, name})

describe('pod verifications over workloads without running pods', () => {
  const checks = (refs: ObjectRef[]): Verification[] => [
    {check: 'pods-without-sidecar', refs},
    {check: 'pods-captured', refs},
    {check: 'pods-opted-out', refs},
  ]

  it('a workload with replicas > 0 and no running pod does not pass: it is waited for', async () => {
    const client = fakeClient([
      deployment('web', 2),
      deployment('api', 1),
      replicaSet('api-1', 'api'),
      ambientPod('api-1-a', 'api-1', {'istio.io/dataplane-mode': 'none'}),
    ])
    for (const v of checks([ref('api'), ref('web')])) {
      const result = await runCheck(v, {client, namespace: NS})
      expect(result.ok, `${v.check}: ${result.detail}`).toBe(false)
      expect(result.detail).toContain(`no running pods yet for Deployment ${NS}/web (2 wanted)`)
    }
  })

  it('a workload scaled to 0, or gone, has no pods to wait for', async () => {
    const client = fakeClient([
      deployment('web', 0),
      deployment('api', 1),
      replicaSet('api-1', 'api'),
      ambientPod('api-1-a', 'api-1', {'istio.io/dataplane-mode': 'none'}),
    ])
    for (const v of checks([ref('api'), ref('web'), ref('gone')])) {
      const result = await runCheck(v, {client, namespace: NS})
      expect(result.ok, `${v.check}: ${result.detail}`).toBe(true)
    }
  })
})

describe('waits say how far along they are (issue 13 §10)', () => {
  const sidecarPod = (name: string, rs: string): KubeObject => ({
    ...ambientPod(name, rs),
    metadata: {
      name,
      namespace: NS,
      annotations: {'sidecar.istio.io/status': '{"containers":["istio-proxy"]}'},
      ownerReferences: [{apiVersion: 'apps/v1', kind: 'ReplicaSet', name: rs, uid: rs, controller: true}],
    },
    spec: {
      containers: [
        {name: 'app', image: 'x'},
        {name: 'istio-proxy', image: 'proxyv2'},
      ],
    },
  })

  it('pods without sidecar: done/total over the pods, naming those left', async () => {
    const client = fakeClient([
      deployment('api', 3),
      replicaSet('api-1', 'api'),
      ambientPod('api-1-a', 'api-1'),
      ambientPod('api-1-b', 'api-1'),
      sidecarPod('api-0-c', 'api-1'),
    ])
    const result = await runCheck({check: 'pods-without-sidecar', refs: [ref('api')]}, {client, namespace: NS})
    expect(result.ok).toBe(false)
    expect(result.progress).toEqual({done: 2, total: 3, state: 'pods without sidecar', waitingFor: ['api-0-c']})
    expect(waitLine(result, 72_000)).toBe('2/3 pods without sidecar, 1m12s (waiting for api-0-c)')
  })
})
