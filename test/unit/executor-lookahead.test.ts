// The executor's read-ahead (src/executor/projection.ts): later steps' preconditions judged on the
// cluster as the earlier steps will leave it (issue 10, points 9 and 13); the lock's dead-holder check
// on this host (point 17); drift lines naming the object and the label key or field (point 14).
import {spawnSync} from 'node:child_process'
import os from 'node:os'

import {describe, expect, it} from 'vitest'

import {stepDrift} from '../../src/executor/drift.js'
import {holderAlive, holderProcessGone, LOCK_INFO_ANNOTATION} from '../../src/executor/lock.js'
import {firstDifference, performOperation} from '../../src/executor/operations.js'
import {KubeApiError} from '../../src/kube/errors.js'
import {laterStepProblems, ProjectedCluster, projectablePreconditions} from '../../src/executor/projection.js'
import type {KubeClient} from '../../src/kube/types.js'
import {objectFingerprint} from '../../src/planner/canonical.js'
import type {KubeObject, ObjectRef} from '../../src/planner/model.js'
import type {PlanStep} from '../../src/planner/plan-types.js'
import {refKey} from '../../src/planner/refs.js'

const NS = 'shop'
const nsRef = {apiVersion: 'v1', kind: 'Namespace', name: NS}
const policyRef = {apiVersion: 'security.istio.io/v1', kind: 'AuthorizationPolicy', namespace: NS, name: 'no-delete'}
const waypointRef = {apiVersion: 'gateway.networking.k8s.io/v1', kind: 'Gateway', namespace: NS, name: 'waypoint'}
const policy: KubeObject = {
  ...policyRef,
  metadata: {name: 'no-delete', namespace: NS},
  spec: {action: 'DENY', rules: [{to: [{operation: {methods: ['DELETE']}}]}]},
}
const waypoint: KubeObject = {
  ...waypointRef,
  metadata: {
    name: 'waypoint',
    namespace: NS,
    labels: {'app.kubernetes.io/managed-by': 'mesh-migrate'},
    annotations: {'mesh-migrate.io/plan': NS},
  },
  spec: {gatewayClassName: 'istio-waypoint'},
}

/** Reads from a map; writes are not expected (the projection only reads). */
function mapClient(objects: KubeObject[]): KubeClient & {gets: number} {
  const byKey = new Map(
    objects.map((o) => [
      refKey({apiVersion: o.apiVersion, kind: o.kind, namespace: o.metadata.namespace, name: o.metadata.name}),
      o,
    ]),
  )
  const c = {
    gets: 0,
    context: 'test',
    server: 'https://127.0.0.1',
    get: async (ref: ObjectRef) => {
      c.gets++
      return structuredClone(byKey.get(refKey(ref)))
    },
  }
  return c as unknown as KubeClient & {gets: number}
}

const step = (id: string, rest: Partial<PlanStep>): PlanStep => ({
  id,
  action: id as PlanStep['action'],
  description: id,
  preconditions: [],
  operations: [],
  verify: [],
  undo: {description: '', operations: []},
  ...rest,
})

// The shape of a plan with an L7 policy: created copy, bind, switch, delete the original.
const steps: PlanStep[] = [
  step('create-waypoint', {
    preconditions: [{check: 'object-absent-or-ours', ref: waypointRef}],
    operations: [{op: 'apply', object: waypoint}],
  }),
  step('create-policies', {
    preconditions: [{check: 'object-unchanged', ref: policyRef, fingerprint: objectFingerprint(policy)}],
  }),
  step('bind-waypoint', {
    preconditions: [
      {check: 'namespace-labels', labels: {'istio.io/use-waypoint': null}},
      {check: 'waypoint-ready', ref: waypointRef},
    ],
    operations: [{op: 'label', ref: nsRef, labels: {'istio.io/use-waypoint': 'waypoint'}}],
  }),
  step('enable-ambient', {
    preconditions: [{check: 'namespace-labels', labels: {'istio.io/dataplane-mode': null}}],
    operations: [{op: 'label', ref: nsRef, labels: {'istio.io/dataplane-mode': 'ambient'}}],
  }),
  step('remove-sidecar-injection', {
    preconditions: [{check: 'namespace-labels', labels: {'istio-injection': 'enabled'}}],
    operations: [{op: 'label', ref: nsRef, labels: {'istio-injection': null}}],
  }),
  step('delete-sidecar-policies', {
    preconditions: [
      {check: 'object-unchanged', ref: policyRef, fingerprint: objectFingerprint(policy)},
      {check: 'waypoint-ready', ref: waypointRef},
    ],
    operations: [{op: 'delete', ref: policyRef, object: policy}],
  }),
]
const ctx = {namespace: NS, planName: NS, stored: new Map([[refKey(policyRef), policy]]), fromManifests: false}
const namespace = (labels: Record<string, string>): KubeObject => ({...nsRef, metadata: {name: NS, labels}})

describe('laterStepProblems: every remaining step judged before the first one writes', () => {
  it('a fresh namespace passes: each later step sees the labels the steps before it write, not the live ones', async () => {
    expect(await laterStepProblems(mapClient([namespace({'istio-injection': 'enabled'}), policy]), steps, ctx)).toEqual(
      [],
    )
  })

  it('an L7 policy edited after create-policies is caught before bind-waypoint, naming the later step', async () => {
    const edited = {...policy, spec: {...policy.spec, rules: [{to: [{operation: {methods: ['DELETE', 'PUT']}}]}]}}
    const found = await laterStepProblems(
      mapClient([namespace({'istio-injection': 'enabled'}), edited, waypoint]),
      steps.slice(2),
      ctx,
    )
    expect(found.map((f) => [f.step.id, f.problems])).toEqual([
      ['delete-sidecar-policies', [`AuthorizationPolicy ${NS}/no-delete changed since the plan was made`]],
    ])
  })

  it('a label set by someone else that a later step expects absent is caught before the earlier steps write', async () => {
    const found = await laterStepProblems(
      mapClient([namespace({'istio-injection': 'enabled', 'istio.io/dataplane-mode': 'none'}), policy, waypoint]),
      steps.slice(2),
      ctx,
    )
    expect(found.map((f) => [f.step.id, f.problems])).toEqual([
      ['enable-ambient', ['namespace label istio.io/dataplane-mode is "none", the plan expected it absent']],
    ])
  })

  it('reads each live object once per check', async () => {
    const client = mapClient([namespace({'istio-injection': 'enabled'}), policy])
    await laterStepProblems(client, steps, ctx)
    // The namespace and the policy: the waypoint is created by the first step, so it is never read.
    expect(client.gets).toBe(2)
  })
})

describe('ProjectedCluster: dry-run objects of earlier steps', () => {
  it('an object an earlier step creates exists in the projection, labels are merged, deletes vanish', async () => {
    const projection = new ProjectedCluster(mapClient([namespace({'istio-injection': 'enabled'}), policy]))
    for (const s of steps) projection.addStep(s)
    expect((await projection.get(waypointRef))?.spec).toEqual({gatewayClassName: 'istio-waypoint'})
    expect((await projection.get(nsRef))?.metadata.labels).toEqual({
      'istio.io/use-waypoint': 'waypoint',
      'istio.io/dataplane-mode': 'ambient',
    })
    expect(await projection.get(policyRef)).toBeUndefined()
  })

  it('the readiness of a waypoint that only exists in the projection is not judged, and says why', () => {
    const projection = new ProjectedCluster(mapClient([]))
    projection.addStep(steps[0]!)
    const {checks, skipped} = projectablePreconditions(steps[2]!, projection)
    expect(checks.map((c) => c.check)).toEqual(['namespace-labels'])
    expect(skipped).toEqual([
      `Gateway ${NS}/waypoint ready: it is created by an earlier step of this run, and only istiod can program it`,
    ])
    // A waypoint that exists for real is judged as usual.
    expect(projectablePreconditions(steps[2]!, new ProjectedCluster(mapClient([]))).checks.map((c) => c.check)).toEqual(
      ['namespace-labels', 'waypoint-ready'],
    )
  })
})

describe('lock holder liveness on this host', () => {
  const lease = (holder: string): KubeObject => ({
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: {
      name: 'mesh-migrate-lock',
      namespace: NS,
      annotations: {
        [LOCK_INFO_ANNOTATION]: JSON.stringify({
          holder,
          who: holder.split('/')[0],
          command: 'apply',
          plan: 'p',
          startedAt: '',
        }),
      },
    },
    spec: {holderIdentity: holder, leaseDurationSeconds: 60, renewTime: new Date().toISOString()},
  })

  it('a renewed Lease whose process on this host has exited is not alive; a running one is', () => {
    const child = spawnSync(process.execPath, ['-e', 'console.log(process.pid)'])
    const deadPid = Number(child.stdout.toString().trim())
    const here = `me@${os.hostname()}`
    expect(holderProcessGone(lease(`${here}/${deadPid}/abc`))).toEqual({pid: deadPid})
    expect(holderAlive(lease(`${here}/${deadPid}/abc`))).toBe(false)
    expect(holderAlive(lease(`${here}/${process.pid}/abc`))).toBe(true)
  })

  it('a holder on another host is judged by its renewals only', () => {
    expect(holderProcessGone(lease('alice@elsewhere-host/999999/abc'))).toBeUndefined()
    expect(holderAlive(lease('alice@elsewhere-host/999999/abc'))).toBe(true)
  })
})

describe('drift names the object and the label key or field', () => {
  it('firstDifference gives the JSON path of the first departure', () => {
    expect(firstDifference({spec: {rules: [{a: 1}, {a: 2}]}, extra: true}, {spec: {rules: [{a: 1}, {a: 3}]}})).toBe(
      'spec.rules[1].a',
    )
    expect(firstDifference({spec: {action: 'DENY', x: 1}}, {spec: {action: 'DENY'}})).toBeUndefined()
  })

  it('a namespace label changed since the step set it, and a created object edited', async () => {
    const bind = steps[2]!
    expect(await stepDrift(mapClient([namespace({'istio.io/use-waypoint': 'other'})]), bind, NS)).toEqual([
      `Namespace ${NS}: label istio.io/use-waypoint changed since the step set it: "waypoint" → "other"`,
    ])
    const edited = {...waypoint, spec: {gatewayClassName: 'istio'}}
    expect(await stepDrift(mapClient([edited]), steps[0]!, NS)).toEqual([
      `Gateway ${NS}/waypoint: field spec.gatewayClassName changed since the step wrote it: "istio-waypoint" → "istio"`,
    ])
    expect(await stepDrift(mapClient([]), steps[0]!, NS)).toEqual([`Gateway ${NS}/waypoint is missing`])
  })
})

describe('a 409 on a namespace label patch from an unrelated writer (point 17)', () => {
  const attempt = {method: 'PATCH', verb: 'patch', group: '', resource: 'namespaces', what: `patch namespaces/${NS}`}
  const conflict = () =>
    new KubeApiError(
      409,
      {
        reason: 'Conflict',
        message: 'the object has been modified; please apply your changes to the latest version and try again',
      },
      attempt,
      'test',
    )

  /** A namespace another controller keeps annotating: the first patch conflicts, the state then is `after`. */
  function racingClient(after: Record<string, string>): KubeClient & {patches: Record<string, unknown>[]} {
    let rv = 1
    let labels: Record<string, string> = {'istio-injection': 'enabled'}
    const c = {
      patches: [] as Record<string, unknown>[],
      get: async () => ({...nsRef, metadata: {name: NS, labels: {...labels}, resourceVersion: String(rv)}}),
      mergePatch: async (
        _ref: ObjectRef,
        patch: {metadata: {labels: Record<string, string | null>; resourceVersion: string}},
      ) => {
        c.patches.push(patch)
        if (c.patches.length === 1) {
          // The unrelated write lands between our read and our patch.
          rv++
          labels = after
          throw conflict()
        }
        if (patch.metadata.resourceVersion !== String(rv)) throw conflict()
        labels = Object.fromEntries(
          Object.entries({...labels, ...patch.metadata.labels}).filter(([, v]) => v !== null),
        ) as Record<string, string>
        rv++
        return {...nsRef, metadata: {name: NS, labels}}
      },
    }
    return c as unknown as KubeClient & {patches: Record<string, unknown>[]}
  }
  const op = {op: 'label' as const, ref: nsRef, labels: {'istio.io/dataplane-mode': 'ambient'}}

  it('re-reads and retries on the fresh resourceVersion when the labels the step needs are unchanged', async () => {
    const client = racingClient({'istio-injection': 'enabled'})
    const result = await performOperation(client, op, {planName: NS, dryRun: false, restartStamp: ''})
    expect(result.before).toEqual({labels: {'istio.io/dataplane-mode': null}})
    expect(client.patches.map((p) => (p as {metadata: {resourceVersion: string}}).metadata.resourceVersion)).toEqual([
      '1',
      '2',
    ])
    expect((await client.get(nsRef))?.metadata.labels).toEqual({
      'istio-injection': 'enabled',
      'istio.io/dataplane-mode': 'ambient',
    })
  })

  it('a conflict on the label the step writes (someone set it meanwhile) is not retried over', async () => {
    const client = racingClient({'istio-injection': 'enabled', 'istio.io/dataplane-mode': 'none'})
    await expect(performOperation(client, op, {planName: NS, dryRun: false, restartStamp: ''})).rejects.toMatchObject({
      status: 409,
    })
    expect(client.patches).toHaveLength(1)
  })
})
