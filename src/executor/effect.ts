// Is a step's effect live in the cluster, whoever wrote it? (`status --by-effect`, issue 22 §4). A GitOps engine
// syncs the plan's overlay and records nothing: the verification gate judges each step by its after-state (objects
// created with the plan's content, labels and annotations set or removed, objects deleted) and by its verification
// (waypoint Programmed, pods without sidecars and captured, Services bound), never by the record. Read-only: GETs
// and LISTs of the objects the plan names and of the namespace's pods, ReplicaSets and Jobs.
import type {KubeClient} from '../kube/types.js'
import type {PlanStep, Verification} from '../planner/plan-types.js'
import {operationRef, refKey} from '../planner/refs.js'
import {EFFECT_WORDING, operationDifferences, withoutSuperseded} from './drift.js'
import {runCheck} from './verify.js'

export interface StepEffect {
  /** What of the step's after-state and verification the cluster does not show (empty: live and verified). */
  missing: string[]
  /** How many operations and checks were judged (0: the step has nothing to show in the cluster, e.g. preflight). */
  judged: number
}

/** The refs later steps apply and delete: an object's last write is the one whose effect must be live. */
function laterWrites(later: PlanStep[]): {applied: Set<string>; deleted: Set<string>} {
  const ops = later.flatMap((s) => s.operations)
  return {
    applied: new Set(ops.flatMap((o) => (o.op === 'apply' ? [refKey(operationRef(o))] : []))),
    deleted: new Set(ops.flatMap((o) => (o.op === 'delete' ? [refKey(o.ref)] : []))),
  }
}

/**
 * The step's verification as it must hold at the end of the plan: what a later step rewrites (a namespace label, an
 * object it deletes or re-creates) is that step's to verify. Preflight checks preconditions, not an effect: skipped.
 */
function endStateCheck(
  v: Verification,
  later: PlanStep[],
  {applied, deleted}: ReturnType<typeof laterWrites>,
): Verification | undefined {
  switch (v.check) {
    case 'preflight':
      return undefined
    case 'namespace-labels': {
      const taken = new Set(
        later
          .flatMap((s) => s.operations)
          .flatMap((o) => (o.op === 'label' && o.ref.kind === 'Namespace' ? Object.keys(o.labels) : [])),
      )
      const labels = Object.fromEntries(Object.entries(v.labels).filter(([k]) => !taken.has(k)))
      return Object.keys(labels).length > 0 ? {...v, labels} : undefined
    }
    case 'objects-present':
      return {...v, refs: v.refs.filter((r) => !deleted.has(refKey(r)))}
    case 'objects-absent':
      return {...v, refs: v.refs.filter((r) => !applied.has(refKey(r)))}
    default:
      return v
  }
}

/** Whether the effect of `steps[index]` is live in `namespace` as the plan's end state has it (read-only). */
export async function stepEffect(
  client: KubeClient,
  namespace: string,
  steps: PlanStep[],
  index: number,
): Promise<StepEffect> {
  const step = steps[index]!
  const later = steps.slice(index + 1)
  const writes = laterWrites(later)
  const {applied, deleted} = writes
  const missing: string[] = []
  let judged = 0
  for (const op of step.operations) {
    // An object a later step writes again (or deletes) is judged by that step.
    if (op.op === 'apply' || op.op === 'delete') {
      const key = refKey(operationRef(op))
      if (applied.has(key) || deleted.has(key)) continue
    }
    const current = withoutSuperseded(op, later)
    if (!current || current.op === 'restart') continue
    judged++
    missing.push(...(await operationDifferences(client, current, {wording: EFFECT_WORDING})))
  }
  for (const v of step.verify) {
    const check = endStateCheck(v, later, writes)
    if (!check) continue
    judged++
    const result = await runCheck(check, {client, namespace})
    if (!result.ok) missing.push(`${check.check}: ${result.detail}`)
  }
  return {missing, judged}
}
