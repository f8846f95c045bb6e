// Every permission a plan needs, derived from what its steps and their undos name (SPEC §6 "RBAC", §7). Pure.
//
// The mapping from what a plan can name to the requests the executor sends for it is a set of closed tables, one
// per union of src/planner/plan-types.ts: a kind added to `Operation`, `Precondition`, `Verification` or
// `UndoPrecondition` does not compile until its row here says what it needs (issue 21 §9). Each row mirrors the
// executor code it names:
// - operations (src/executor/operations.ts performOperation, engine.ts undo*): every write reads the object first;
//   apply is server-side apply (PATCH, `create` when the object does not exist yet); label, restart and
//   template-labels are JSON merge patches; an undo runs the same kinds of operations as a step.
// - preconditions (operations.ts stalePreconditions), verifications (verify.ts CHECKS, observe.ts livePods) and
//   undo preconditions (undo-checks.ts): the reads.
// - PLAN_ACCESS: what every plan needs whatever its steps (the lock, the namespace's owner record).
import {lockRef} from '../executor/lock.js'
import {recordRef} from '../executor/record-store.js'
import type {ObjectRef} from '../planner/model.js'
import type {
  MigrationPlan,
  Operation,
  PlanStep,
  Precondition,
  UndoPrecondition,
  Verification,
} from '../planner/plan-types.js'

export type Verb = 'get' | 'list' | 'create' | 'patch' | 'delete'

/** What a verb acts on: an object (get/patch/delete), or a kind in a namespace (create/list). */
export type AccessTarget = Pick<ObjectRef, 'apiVersion' | 'kind'> & {namespace?: string; name?: string}

export interface Access {
  verb: Verb
  target: AccessTarget
}

export interface AccessNeed {
  verb: Verb
  apiVersion: string
  kind: string
  /** Absent for cluster-scoped kinds (Namespace). */
  namespace?: string
  /** The object, when the verb acts on one (get/patch/delete); absent for create and list. */
  name?: string
  /** Why: the steps/purposes that need it (for messages). */
  why: string[]
}

/**
 * A closed table over a union discriminated by `key`: one row per member, typed by that member. A missing member
 * (a kind added to the union) or a stray one is a compile error.
 */
export type AccessTable<U, D extends keyof U> = {
  [K in U[D] & string]: (item: Extract<U, Record<D, K>>, namespace: string) => Access[]
}

const on = (target: AccessTarget, ...verbs: Verb[]): Access[] => verbs.map((verb) => ({verb, target}))

const namespaceRef = (namespace: string): AccessTarget => ({apiVersion: 'v1', kind: 'Namespace', name: namespace})

/** src/executor/observe.ts livePods: pods, and the ReplicaSets and Jobs between them and their workloads. */
const podReads = (namespace: string): Access[] => [
  ...on({apiVersion: 'v1', kind: 'Pod', namespace}, 'list'),
  ...on({apiVersion: 'apps/v1', kind: 'ReplicaSet', namespace}, 'list'),
  ...on({apiVersion: 'batch/v1', kind: 'Job', namespace}, 'list'),
]

/** Pod checks read the pods, and each workload without running pods to learn whether it should have some. */
const podsOf = (refs: ObjectRef[], namespace: string): Access[] => [
  ...podReads(namespace),
  ...refs.flatMap((ref) => on(ref, 'get')),
]

/** verify.ts waypointReady: the Gateway, and the Deployment istiod made for it. */
const waypointReads = (ref: ObjectRef, namespace: string): Access[] => [
  ...on(ref, 'get'),
  ...on({apiVersion: 'apps/v1', kind: 'Deployment', namespace: ref.namespace ?? namespace, name: ref.name}, 'get'),
]

export const OPERATION_ACCESS = {
  apply: ({object}) =>
    on(
      {
        apiVersion: object.apiVersion,
        kind: object.kind,
        name: object.metadata.name,
        ...(object.metadata.namespace ? {namespace: object.metadata.namespace} : {}),
      },
      'get',
      'patch',
      'create',
    ),
  delete: ({ref}) => on(ref, 'get', 'delete'),
  label: ({ref}) => on(ref, 'get', 'patch'),
  // A merge patch of metadata.annotations (the canary weight on the Namespace).
  annotate: ({ref}) => on(ref, 'get', 'patch'),
  restart: ({ref}) => on(ref, 'get', 'patch'),
  // A merge patch of the controller's pod template: Deployments, StatefulSets, DaemonSets, CronJobs, Jobs.
  'template-labels': ({ref}) => on(ref, 'get', 'patch'),
} satisfies AccessTable<Operation, 'op'>

export const PRECONDITION_ACCESS = {
  'namespace-labels': (_p, namespace) => on(namespaceRef(namespace), 'get'),
  'object-unchanged': ({ref}) => on(ref, 'get'),
  'object-absent-or-ours': ({ref}) => on(ref, 'get'),
  'object-present': ({ref}) => on(ref, 'get'),
  'waypoint-ready': ({ref}, namespace) => waypointReads(ref, namespace),
} satisfies AccessTable<Precondition, 'check'>

export const VERIFICATION_ACCESS = {
  'waypoint-ready': ({ref}, namespace) => waypointReads(ref, namespace),
  'objects-present': ({refs}) => refs.flatMap((ref) => on(ref, 'get')),
  'objects-absent': ({refs}) => refs.flatMap((ref) => on(ref, 'get')),
  'namespace-labels': (_v, namespace) => on(namespaceRef(namespace), 'get'),
  'rollouts-complete': ({refs}) => refs.flatMap((ref) => on(ref, 'get')),
  'pods-without-sidecar': ({refs}, namespace) => podsOf(refs, namespace),
  'pods-captured': ({refs}, namespace) => podsOf(refs, namespace),
  'pods-opted-out': ({refs}, namespace) => podsOf(refs, namespace),
  'waypoint-bound': ({services}, namespace) =>
    services.flatMap((name) => on({apiVersion: 'v1', kind: 'Service', namespace, name}, 'get')),
  'pods-with-sidecar': ({refs}, namespace) => podsOf(refs, namespace),
  // The preflight checks it runs read with their own requests and report a denied read as CheckForbidden.
  preflight: () => [],
} satisfies AccessTable<Verification, 'check'>

export const UNDO_PRECONDITION_ACCESS = {
  // E1: a webhook of the revision (or tag) still injects (cluster-scoped).
  'revision-injects': () =>
    on({apiVersion: 'admissionregistration.k8s.io/v1', kind: 'MutatingWebhookConfiguration'}, 'list'),
  'pods-stay-in-mesh': (_p, namespace) => [...on(namespaceRef(namespace), 'get'), ...podReads(namespace)],
} satisfies AccessTable<UndoPrecondition, 'check'>

/** What a plan needs whatever its steps: one entry per purpose (e.g. a record the executor keeps in the cluster). */
export interface PlanAccess {
  why: string
  needs: (plan: MigrationPlan, namespace: string) => Access[]
}

const writes = (plan: MigrationPlan) => plan.spec.steps.some((s) => s.operations.length > 0)

export const PLAN_ACCESS: readonly PlanAccess[] = [
  {
    why: 'the namespace lock (one operator at a time)',
    needs: (_p, ns) => on(lockRef(ns), 'create', 'get', 'patch', 'delete'),
  },
  {why: 'reading the namespace labels', needs: (_p, ns) => on(namespaceRef(ns), 'get')},
  // src/executor/ownership.ts: the plan's first write records it on the Namespace; a full rollback removes it.
  {
    why: 'recording the plan as the namespace owner',
    needs: (p, ns) => (writes(p) ? on(namespaceRef(ns), 'patch') : []),
  },
  // Issue 19, src/executor/record-store.ts: the plan's record in the cluster (a ConfigMap), read by apply, rollback
  // and status, created at the first step transition, then patched (JSON merge patch guarded by resourceVersion).
  {
    why: "the plan's record in the cluster (ConfigMap, read and written at every step)",
    // Every step transition is recorded, read-only steps' too: only a plan without steps needs none.
    needs: (p, ns) => (p.spec.steps.length > 0 ? on(recordRef(ns, p.metadata.name), 'get', 'create', 'patch') : []),
  },
]

type Row<T> = (item: T, namespace: string) => Access[]
const row = <T>(table: object, key: string): Row<T> => (table as Record<string, Row<T>>)[key]!

const CLUSTER_SCOPED = new Set(['Namespace', 'MutatingWebhookConfiguration'])

class Needs {
  private readonly byKey = new Map<string, AccessNeed>()

  add({verb, target}: Access, why: string): void {
    const namespace = CLUSTER_SCOPED.has(target.kind) ? undefined : target.namespace
    const name = verb === 'create' || verb === 'list' ? undefined : target.name
    const group = target.apiVersion.includes('/') ? target.apiVersion.slice(0, target.apiVersion.indexOf('/')) : ''
    const key = [verb, group, target.kind, namespace ?? '', name ?? ''].join('|')
    const existing = this.byKey.get(key)
    if (existing) {
      if (!existing.why.includes(why)) existing.why.push(why)
      return
    }
    this.byKey.set(key, {
      verb,
      apiVersion: target.apiVersion,
      kind: target.kind,
      ...(namespace ? {namespace} : {}),
      ...(name ? {name} : {}),
      why: [why],
    })
  }

  all(accesses: Access[], why: string): void {
    for (const access of accesses) this.add(access, why)
  }

  step(step: PlanStep, namespace: string): void {
    const why = `step ${step.id}`
    for (const p of step.preconditions) this.all(row<Precondition>(PRECONDITION_ACCESS, p.check)(p, namespace), why)
    for (const op of step.operations) this.all(row<Operation>(OPERATION_ACCESS, op.op)(op, namespace), why)
    for (const v of step.verify) this.all(row<Verification>(VERIFICATION_ACCESS, v.check)(v, namespace), why)
    const undo = `rollback of ${step.id}`
    for (const p of step.undo.preconditions ?? [])
      this.all(row<UndoPrecondition>(UNDO_PRECONDITION_ACCESS, p.check)(p, namespace), undo)
    for (const op of step.undo.operations) this.all(row<Operation>(OPERATION_ACCESS, op.op)(op, namespace), undo)
    for (const v of step.undo.verify ?? [])
      this.all(row<Verification>(VERIFICATION_ACCESS, v.check)(v, namespace), undo)
  }

  list(): AccessNeed[] {
    return [...this.byKey.values()]
  }
}

/** Every (verb, resource, namespace, name) the plan's apply and rollback need, de-duplicated. */
export function planAccessNeeds(plan: MigrationPlan): AccessNeed[] {
  const namespace = plan.metadata.namespace
  const needs = new Needs()
  for (const entry of PLAN_ACCESS) needs.all(entry.needs(plan, namespace), entry.why)
  for (const step of plan.spec.steps) needs.step(step, namespace)
  return needs.list()
}
