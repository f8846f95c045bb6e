// Every permission a plan needs, derived from its operations (SPEC §6 "RBAC", §7). Pure.
//
// What the executor sends (src/executor/operations.ts, engine.ts, lock.ts, verify.ts):
// - apply  = server-side apply (PATCH): `patch`, and `create` when the object does not exist yet; it
//   reads the object first (`get`) to refuse overwriting someone else's.
// - delete = `get` then `delete`;  label and restart = `get` then `patch` (JSON merge patch).
// - every step's undo operations the same way (rollback must be possible too);
// - the namespace Lease lock: `create`, `get`, `patch`, `delete` on leases.coordination.k8s.io;
// - reads of preconditions and verifications: `get` of the namespace and of every object named,
//   `list` of pods, replicasets and jobs (pods per workload), `get` of the waypoint Deployment and
//   of the Services bound to it.
import {LOCK_NAME} from '../executor/lock.js'
import type {ObjectRef} from '../planner/model.js'
import type {MigrationPlan, Operation, PlanStep, Verification} from '../planner/plan-types.js'

export interface AccessNeed {
  verb: string
  apiVersion: string
  kind: string
  /** Absent for cluster-scoped kinds (Namespace). */
  namespace?: string
  /** The object, when the verb acts on one (get/patch/delete); absent for create and list. */
  name?: string
  /** Why: the steps/purposes that need it (for messages). */
  why: string[]
}

const CLUSTER_SCOPED = new Set(['Namespace'])

function opRef(op: Operation): ObjectRef {
  return op.op === 'apply'
    ? {
        apiVersion: op.object.apiVersion,
        kind: op.object.kind,
        name: op.object.metadata.name,
        ...(op.object.metadata.namespace ? {namespace: op.object.metadata.namespace} : {}),
      }
    : op.ref
}

class Needs {
  private readonly byKey = new Map<string, AccessNeed>()

  add(
    verb: string,
    ref: Pick<ObjectRef, 'apiVersion' | 'kind'> & {namespace?: string; name?: string},
    why: string,
  ): void {
    const namespace = CLUSTER_SCOPED.has(ref.kind) ? undefined : ref.namespace
    const name = verb === 'create' || verb === 'list' ? undefined : ref.name
    const group = ref.apiVersion.includes('/') ? ref.apiVersion.slice(0, ref.apiVersion.indexOf('/')) : ''
    const key = [verb, group, ref.kind, namespace ?? '', name ?? ''].join('|')
    const existing = this.byKey.get(key)
    if (existing) {
      if (!existing.why.includes(why)) existing.why.push(why)
      return
    }
    this.byKey.set(key, {
      verb,
      apiVersion: ref.apiVersion,
      kind: ref.kind,
      ...(namespace ? {namespace} : {}),
      ...(name ? {name} : {}),
      why: [why],
    })
  }

  operation(op: Operation, why: string): void {
    const ref = opRef(op)
    this.add('get', ref, why)
    switch (op.op) {
      case 'apply':
        this.add('patch', ref, why)
        this.add('create', ref, why)
        break
      case 'delete':
        this.add('delete', ref, why)
        break
      case 'label':
      case 'restart':
        this.add('patch', ref, why)
        break
    }
  }

  verification(v: Verification, namespace: string, why: string): void {
    const podReads = () => {
      for (const [apiVersion, kind] of [
        ['v1', 'Pod'],
        ['apps/v1', 'ReplicaSet'],
        ['batch/v1', 'Job'],
      ] as const)
        this.add('list', {apiVersion, kind, namespace}, why)
    }
    switch (v.check) {
      case 'objects-present':
      case 'objects-absent':
      case 'rollouts-complete':
        for (const ref of v.refs) this.add('get', ref, why)
        if (v.check === 'rollouts-complete') podReads()
        break
      case 'waypoint-ready':
        this.add('get', v.ref, why)
        this.add(
          'get',
          {apiVersion: 'apps/v1', kind: 'Deployment', namespace: v.ref.namespace ?? namespace, name: v.ref.name},
          why,
        )
        break
      case 'waypoint-bound':
        for (const name of v.services) this.add('get', {apiVersion: 'v1', kind: 'Service', namespace, name}, why)
        break
      case 'namespace-labels':
        this.add('get', {apiVersion: 'v1', kind: 'Namespace', name: namespace}, why)
        break
      case 'pods-without-sidecar':
      case 'pods-captured':
        podReads()
        break
      case 'preflight':
        break
    }
  }

  step(step: PlanStep, namespace: string): void {
    const why = `step ${step.id}`
    for (const p of step.preconditions) {
      if (p.check === 'namespace-labels') this.add('get', {apiVersion: 'v1', kind: 'Namespace', name: namespace}, why)
      else this.add('get', p.ref, why)
    }
    for (const op of step.operations) this.operation(op, why)
    for (const v of step.verify) this.verification(v, namespace, why)
    const undo = `rollback of ${step.id}`
    for (const op of step.undo.operations) this.operation(op, undo)
  }

  list(): AccessNeed[] {
    return [...this.byKey.values()]
  }
}

/** Every (verb, resource, namespace, name) the plan's apply and rollback need, de-duplicated. */
export function planAccessNeeds(plan: MigrationPlan): AccessNeed[] {
  const namespace = plan.metadata.namespace
  const needs = new Needs()
  const lease = {apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', namespace, name: LOCK_NAME}
  for (const verb of ['create', 'get', 'patch', 'delete'])
    needs.add(verb, lease, 'the namespace lock (one operator at a time)')
  needs.add('get', {apiVersion: 'v1', kind: 'Namespace', name: namespace}, 'reading the namespace labels')
  for (const step of plan.spec.steps) needs.step(step, namespace)
  return needs.list()
}
