// A step stopped part-way (Ctrl+C, a failure, a crash while Running) leaves some of its writes done and others not
// (issue 19 §6): which, from the record's `observed.done` (engine.ts applyStep records each operation as it completes),
// and the hazard window that leaves, derived from the step's kind (its role in the simulation) and the hazards the
// plan already names for the step. Pure.
import {formatRef, operationRef} from '../planner/refs.js'
import type {MigrationPlan, Operation, PlanStep, StepStatus} from '../planner/plan-types.js'
import {stepKind} from '../steps/index.js'
import {doneEntry} from './status-checks.js'

/** The phases of a step that may have written only part of its operations. */
const PART_WAY = new Set<StepStatus['phase']>(['Interrupted', 'Failed', 'Running'])

export interface PartialProgress {
  step: string
  phase: StepStatus['phase']
  /** Each operation the step completed / has not, as `<op> <object>` ("restart Deployment bookinfo/reviews-v1"). */
  done: string[]
  notDone: string[]
  /** The hazard windows left open by stopping here (one line each). */
  hazards: string[]
}

const describeOp = (op: Operation) =>
  `${op.op === 'template-labels' ? 'pod-template labels of' : op.op} ${formatRef(operationRef(op))}`
const workloadOf = (op: Operation) => {
  const ref = operationRef(op)
  return `${ref.kind}/${ref.name}`
}

/** The hazards of a restart stopped part-way: the restarted workloads run without sidecars beside the rest. */
function restartHazards(plan: MigrationPlan, step: PlanStep, done: Operation[], notDone: Operation[]): string[] {
  const rolled = new Set(done.map(workloadOf))
  const total = new Set(step.operations.map(workloadOf)).size
  const stepAfter = plan.spec.steps[plan.spec.steps.indexOf(step) + 1]?.id
  const lines = [
    `${rolled.size} of ${total} workloads restarted (${[...rolled].join(', ') || 'none'}) run without sidecars, in ambient mode, while ${notDone.length === 0 ? 'their rollouts finish' : `${new Set(notDone.map(workloadOf)).size} (${[...new Set(notDone.map(workloadOf))].join(', ')}) still run with sidecars`} in a namespace no longer injected: callers that still have sidecars bypass the waypoint, so the L7 policies carried to it do not apply to them (istio/istio#51445), and a pod of those that restarts for any reason comes back without its sidecar — until step ${step.id} is finished (re-run the same apply) or rolled back`,
  ]
  // What the plan says this step opens, for the workloads already restarted.
  for (const h of plan.spec.hazards)
    if (h.phase === 'apply' && h.from === step.id && h.workloads.some((w) => rolled.has(w)))
      lines.push(
        `${h.policy ?? h.kind}: ${h.message} — open for ${h.workloads.filter((w) => rolled.has(w)).join(', ')} until step ${h.until === 'end' ? (stepAfter ?? step.id) : h.until} is applied`,
      )
  return lines
}

/** Any other step stopped part-way: the hazards the plan names as opened by it, with what it did and did not write. */
function otherHazards(plan: MigrationPlan, step: PlanStep, done: Operation[]): string[] {
  if (done.length === 0) return []
  return plan.spec.hazards
    .filter((h) => h.phase === 'apply' && h.from === step.id)
    .map((h) => `${h.policy ?? h.kind}: ${h.message} — may be open until step ${step.id} is finished or rolled back`)
}

/** The progress of a step that may have written part of its operations; undefined for any other step. */
export function partialProgress(
  plan: MigrationPlan,
  step: PlanStep,
  status: StepStatus | undefined,
): PartialProgress | undefined {
  if (!status || !PART_WAY.has(status.phase) || step.operations.length === 0) return undefined
  const recorded = new Set(Array.isArray(status.observed?.done) ? (status.observed.done as string[]) : [])
  const done = step.operations.filter((op) => recorded.has(doneEntry(op)))
  const notDone = step.operations.filter((op) => !recorded.has(doneEntry(op)))
  const restarts = stepKind(step.action).simulation?.role === 'restarts-pods'
  return {
    step: step.id,
    phase: status.phase,
    done: done.map(describeOp),
    notDone: notDone.map(describeOp),
    hazards: restarts ? restartHazards(plan, step, done, notDone) : otherHazards(plan, step, done),
  }
}
