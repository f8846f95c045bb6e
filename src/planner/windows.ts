// Hazard windows open at a stop: the simulation records, for each hazard, the step after which it
// opens and the step that closes it. Stopping an apply between the two leaves it open (issue 10,
// point 15): apply warns and status shows it, naming the policy and the step that ends it.
import type {MigrationPlan, PlanHazard, StepPhase} from './plan-types.js'

export interface OpenWindow {
  hazard: PlanHazard
  /** The step whose apply closes the window. */
  until: string
}

/**
 * The apply-phase hazards open once the plan's applied prefix ends where it does now: opened by a step
 * in the prefix, closed by a step after it. Hazards that last to the end are not windows of a stop.
 */
export function openWindows(plan: MigrationPlan, phaseOf: (stepId: string) => StepPhase): OpenWindow[] {
  const steps = plan.spec.steps
  const firstPending = steps.findIndex((s) => phaseOf(s.id) !== 'Applied')
  if (firstPending <= 0) return []
  const index = (id: string) => steps.findIndex((s) => s.id === id)
  return plan.spec.hazards
    .filter((h) => h.phase === 'apply' && h.until !== 'end')
    .filter((h) => {
      const from = index(h.from)
      const until = index(h.until)
      return from !== -1 && until !== -1 && from < firstPending && until >= firstPending
    })
    .map((hazard) => ({hazard, until: hazard.until}))
}

/** One line per open window, for apply's warning and status. */
export function describeWindow(w: OpenWindow): string {
  return `${w.hazard.policy ?? w.hazard.kind}: ${w.hazard.message} — until step ${w.until} is applied`
}
