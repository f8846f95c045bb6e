// Undo guards (issue 12 §2): what a step's undo must check before it writes and wait for after, written in the plan
// by the step kinds (src/steps/) so that a reviewer sees it and rollback runs on the plan's data only. This module
// holds the rule those guards must satisfy, judged from what the undo writes:
//   - restoring istio.io/rev=<r> (namespace or pod template) → revision-injects r (E1: without a webhook for r the
//     restarted pods come back without a sidecar);
//   - removing istio.io/dataplane-mode=ambient from the namespace → pods-stay-in-mesh, allowing only the workloads
//     the step verified as captured without a sidecar before the plan (pods-captured);
//   - restarting or re-templating controllers → rollouts-complete for them, and pods-with-sidecar for those whose
//     pods the step verified lost their sidecar (pods-without-sidecar).
// validate reports a guard the rule asks for and the plan lacks (safetyProblems); for a plan written before guards
// existed (no undo carries any) rollback runs the rule's guards (undoGuardsOf). Pure.
import type {ObjectRef} from '../planner/model.js'
import type {
  MigrationPlan,
  Operation,
  PlanStep,
  StepUndo,
  UndoPrecondition,
  Verification,
} from '../planner/plan-types.js'
import type {PlanProblem} from '../planner/plan-types.js'
import {formatRef, refKey} from '../planner/refs.js'
import {DATAPLANE_MODE_LABEL, REVISION_LABEL} from '../planner/vocab.js'

type Guards = Required<Pick<StepUndo, 'preconditions' | 'verify'>>

/** The controllers an undo rolls (restart or pod-template change); CronJobs have no rollout to wait for. */
export function rolledByUndo(operations: Operation[]): ObjectRef[] {
  return operations.flatMap((o) =>
    (o.op === 'restart' || o.op === 'template-labels') && o.ref.kind !== 'CronJob' ? [o.ref] : [],
  )
}

const refsOf = (checks: Verification[], check: 'pods-captured' | 'pods-without-sidecar'): ObjectRef[] =>
  checks.flatMap((v) => (v.check === check ? v.refs : []))

/** Revisions an undo restores, on the namespace or on pod templates. */
function restoredRevisions(operations: Operation[]): string[] {
  const revisions = operations.flatMap((o) =>
    (o.op === 'label' && o.ref.kind === 'Namespace') || o.op === 'template-labels' ? [o.labels[REVISION_LABEL]] : [],
  )
  return [...new Set(revisions.filter((r): r is string => typeof r === 'string' && r !== ''))]
}

/** Whether the step enrols the namespace in ambient and its undo takes that back. */
function undoesEnrolment(step: PlanStep): boolean {
  const enrols = step.operations.some(
    (o) => o.op === 'label' && o.ref.kind === 'Namespace' && o.labels[DATAPLANE_MODE_LABEL] === 'ambient',
  )
  return (
    enrols &&
    step.undo.operations.some(
      (o) =>
        o.op === 'label' &&
        o.ref.kind === 'Namespace' &&
        DATAPLANE_MODE_LABEL in o.labels &&
        o.labels[DATAPLANE_MODE_LABEL] !== 'ambient',
    )
  )
}

/** The guards the rule asks of a step's undo (see the head of this file). */
export function requiredUndoGuards(step: PlanStep): Guards {
  const preconditions: UndoPrecondition[] = restoredRevisions(step.undo.operations).map((revision) => ({
    check: 'revision-injects',
    revision,
  }))
  if (undoesEnrolment(step))
    preconditions.push({check: 'pods-stay-in-mesh', allowed: refsOf(step.verify, 'pods-captured')})
  const rolled = rolledByUndo(step.undo.operations)
  const lostSidecar = new Set(refsOf(step.verify, 'pods-without-sidecar').map(refKey))
  const returning = rolled.filter((r) => lostSidecar.has(refKey(r)))
  const verify: Verification[] = [
    ...(rolled.length > 0 ? [{check: 'rollouts-complete' as const, refs: rolled}] : []),
    ...(returning.length > 0 ? [{check: 'pods-with-sidecar' as const, refs: returning}] : []),
  ]
  return {preconditions, verify}
}

/** The step's undo with the guards the rule asks for, omitting empty lists (what step kinds write). */
export function guardedUndo(
  step: Omit<PlanStep, 'undo'> & {undo: Pick<StepUndo, 'description' | 'operations'>},
): StepUndo {
  const {preconditions, verify} = requiredUndoGuards(step as PlanStep)
  return {
    description: step.undo.description,
    ...(preconditions.length > 0 ? {preconditions} : {}),
    operations: step.undo.operations,
    ...(verify.length > 0 ? {verify} : {}),
  }
}

const coveredRefs = (checks: Verification[], check: Verification['check']): Set<string> =>
  new Set(checks.flatMap((v) => (v.check === check && 'refs' in v ? v.refs.map(refKey) : [])))

/** What the rule asks of this step's undo and its plan lacks, as validate reports it. */
export function undoGuardProblems(step: PlanStep, path: string): PlanProblem[] {
  const problems: PlanProblem[] = []
  const required = requiredUndoGuards(step)
  const present = step.undo.preconditions ?? []
  const verify = step.undo.verify ?? []
  for (const need of required.preconditions) {
    if (need.check === 'revision-injects') {
      if (!present.some((p) => p.check === 'revision-injects' && p.revision === need.revision))
        problems.push({
          path: `${path}.undo.preconditions`,
          message: `missing "revision-injects ${need.revision}": the undo restores istio.io/rev=${need.revision}, which brings sidecars back only while that revision injects (E1)`,
        })
      continue
    }
    const guard = present.find((p) => p.check === 'pods-stay-in-mesh')
    const captured = new Set(need.allowed.map(refKey))
    if (!guard)
      problems.push({
        path: `${path}.undo.preconditions`,
        message: `missing "pods-stay-in-mesh": the undo removes ${DATAPLANE_MODE_LABEL}=ambient, which takes sidecar-less pods out of the mesh`,
      })
    else
      for (const ref of guard.allowed.filter((r) => !captured.has(refKey(r))))
        problems.push({
          path: `${path}.undo.preconditions`,
          message: `pods-stay-in-mesh allows ${formatRef(ref)}, which the step does not verify as captured before the plan (pods-captured)`,
        })
  }
  for (const need of required.verify) {
    const have = coveredRefs(verify, need.check)
    const missing = (need as {refs: ObjectRef[]}).refs.filter((r) => !have.has(refKey(r)))
    if (missing.length > 0)
      problems.push({
        path: `${path}.undo.verify`,
        message: `missing "${need.check}" for ${missing.map(formatRef).join(', ')}: the undo ${need.check === 'rollouts-complete' ? 'rolls them' : 'restarts them to bring their sidecars back'}`,
      })
  }
  return problems
}

/** Whether the plan carries undo guards (what the planner writes since issue 12). */
export function planHasUndoGuards(plan: MigrationPlan): boolean {
  return plan.spec.steps.some((s) => s.undo.preconditions !== undefined || s.undo.verify !== undefined)
}

/**
 * The guards rollback runs for a step: the plan's own; for a plan written before guards existed (no undo carries
 * any), the rule's, so that rollback checks the same whatever wrote the plan (its spec, and so its digest, stays as
 * it was written).
 */
export function undoGuardsOf(plan: MigrationPlan, step: PlanStep): Guards {
  return planHasUndoGuards(plan)
    ? {preconditions: step.undo.preconditions ?? [], verify: step.undo.verify ?? []}
    : requiredUndoGuards(step)
}
