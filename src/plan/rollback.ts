// The safe rollback order (DOMAIN §4.3, SPEC §6): never a blind reverse.
// Pure: from the plan and its status, which steps to undo and in which order.
import {UNDO_ORDER, UNDO_UNITS} from '../steps/index.js'
import type {MigrationPlan, PlanStep, StepPhase} from '../planner/plan-types.js'

// The undo order and the units of steps undone together are declared by the step kinds (src/steps/index.ts).
export {UNDO_ORDER}

/** A step whose writes may have happened (fully or partly) and therefore needs undoing. */
export function mayHaveWritten(phase: StepPhase | undefined): boolean {
  return phase === 'Applied' || phase === 'Failed' || phase === 'Interrupted' || phase === 'Running'
}

export function phaseOf(plan: MigrationPlan, step: PlanStep): StepPhase {
  return plan.status?.steps.find((s) => s.id === step.id)?.phase ?? 'Pending'
}

export interface RollbackSelection {
  /** Steps to undo, in execution order. */
  steps: PlanStep[]
  /** Why more than one step is undone for `--step`, if so. */
  note?: string
}

/** The steps to undo, in the safe order: all touched steps, or (`lastOnly`) the last one with its unit. */
export function rollbackSequence(plan: MigrationPlan, opts: {lastOnly?: boolean} = {}): RollbackSelection {
  const touched = plan.spec.steps.filter((s) => mayHaveWritten(phaseOf(plan, s)))
  if (touched.length === 0) return {steps: []}
  let selected = touched
  let note: string | undefined
  if (opts.lastOnly) {
    const last = touched[touched.length - 1]!
    const unit = UNDO_UNITS.find((u) => u.includes(last.action))
    if (unit) {
      selected = touched.filter((s) => unit.includes(s.action))
      if (selected.length > 1) {
        note = `${last.id} is undone together with ${selected
          .filter((s) => s !== last)
          .map((s) => s.id)
          .join(
            ', ',
          )}: the injection label, the restart and the sidecar policies only return pods to an enforced state as one unit`
      }
    } else {
      selected = [last]
    }
  }
  const order = (s: PlanStep) => UNDO_ORDER.indexOf(s.action)
  // Steps of one action (canary-waypoint, one per weight) are undone last first: each restores what the one before left.
  const position = new Map(selected.map((s, i) => [s, i]))
  return {
    steps: [...selected].sort((a, b) => order(a) - order(b) || position.get(b)! - position.get(a)!),
    ...(note ? {note} : {}),
  }
}
