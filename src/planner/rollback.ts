// The safe rollback order (DOMAIN §4.3, SPEC §6): never a blind reverse.
// Pure: from the plan and its status, which steps to undo and in which order.
import type {MigrationPlan, PlanStep, StepAction, StepPhase} from './plan-types.js'

/**
 * Undo order by action. Restore the injection label and restart (pods get sidecars back, which
 * istio-cni skips) before removing istio.io/dataplane-mode: removing it first would un-enrol running
 * sidecar-less pods at once and leave them outside the mesh. Deleted sidecar policies come back
 * before that restart completes, so the returning sidecars enforce them. The waypoint is unbound before
 * its companion policies go, and deleted last; the NetworkPolicy allowances go after the last HBONE traffic.
 */
export const UNDO_ORDER: StepAction[] = [
  'deny-waypoint-bypass',
  'verify-dataplane',
  'delete-sidecar-policies',
  'remove-sidecar-injection',
  'restart-workloads',
  'enable-ambient',
  'opt-out-workloads',
  'swap-routes',
  // Unbind before deleting the companions: while bound, still-sidecar destinations see the waypoint's
  // identity, which only the companions admit.
  'bind-waypoint',
  'create-policies',
  'wait-waypoint',
  'create-waypoint',
  'patch-network-policies',
  'preflight',
]

/**
 * Steps that must be undone together. Re-created L7 selector policies are deny-all/no-op at ztunnel
 * while pods are still ambient, a restart without the injection label brings pods back without
 * sidecars, and restoring the label alone changes nothing for running pods: only the whole tail
 * returns pods to a consistent, enforced state.
 */
const UNDO_UNITS: StepAction[][] = [['remove-sidecar-injection', 'restart-workloads', 'delete-sidecar-policies', 'verify-dataplane']]

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
        note = `${last.id} is undone together with ${selected.filter((s) => s !== last).map((s) => s.id).join(', ')}: the injection label, the restart and the sidecar policies only return pods to an enforced state as one unit`
      }
    } else {
      selected = [last]
    }
  }
  const order = (s: PlanStep) => UNDO_ORDER.indexOf(s.action)
  return {steps: [...selected].sort((a, b) => order(a) - order(b)), ...(note ? {note} : {})}
}
