// The registry of step kinds: one module per action. The order of STEP_KINDS is the order a plan uses them
// (plan-types.ts STEP_ACTIONS; validate rejects anything else); UNDO_KINDS is the safe rollback order. Everything
// that used to switch on an action name reads these: buildPlan folds over STEP_KINDS, validate takes each step's
// write rule from here, rollback its order and unit, the simulation its effects. Adding a step kind: write its
// module, add it here (both lists) and its action to STEP_ACTIONS.
import type {StepAction} from '../planner/plan-types.js'
import {bindWaypoint} from './bind-waypoint.js'
import {canaryWaypoint} from './canary-waypoint.js'
import {createPolicies} from './create-policies.js'
import {createWaypoint} from './create-waypoint.js'
import {deleteSidecarPolicies} from './delete-sidecar-policies.js'
import {denyWaypointBypass} from './deny-waypoint-bypass.js'
import {enableAmbient} from './enable-ambient.js'
import {optOutWorkloads} from './opt-out-workloads.js'
import {patchNetworkPolicies} from './patch-network-policies.js'
import {preflight} from './preflight.js'
import {removeSidecarInjection} from './remove-sidecar-injection.js'
import {restartWorkloads} from './restart-workloads.js'
import {swapRoutes} from './swap-routes.js'
import type {StepKind, WriteRule} from './types.js'
import {verifyDataplane} from './verify-dataplane.js'
import {waitWaypoint} from './wait-waypoint.js'

/** Apply order. */
export const STEP_KINDS: readonly StepKind[] = [
  preflight,
  patchNetworkPolicies,
  createWaypoint,
  waitWaypoint,
  createPolicies,
  canaryWaypoint,
  bindWaypoint,
  swapRoutes,
  optOutWorkloads,
  enableAmbient,
  removeSidecarInjection,
  restartWorkloads,
  deleteSidecarPolicies,
  verifyDataplane,
  denyWaypointBypass,
]

/**
 * Undo order (DOMAIN §4.3, SPEC §6): never a blind reverse. Restore the injection label and restart (pods get
 * sidecars back, which istio-cni skips) before removing istio.io/dataplane-mode: removing it first would un-enrol
 * running sidecar-less pods at once and leave them outside the mesh. Deleted sidecar policies come back before that
 * restart completes, so the returning sidecars enforce them. The waypoint is unbound before its companion policies
 * go (while bound, still-sidecar destinations see the waypoint's identity, which only the companions admit), and
 * deleted last; the NetworkPolicy allowances go after the last HBONE traffic.
 */
export const UNDO_KINDS: readonly StepKind[] = [
  denyWaypointBypass,
  verifyDataplane,
  deleteSidecarPolicies,
  removeSidecarInjection,
  restartWorkloads,
  enableAmbient,
  optOutWorkloads,
  swapRoutes,
  bindWaypoint,
  canaryWaypoint,
  createPolicies,
  waitWaypoint,
  createWaypoint,
  patchNetworkPolicies,
  preflight,
]

const byAction = new Map(STEP_KINDS.map((k) => [k.action, k]))

/** The module of an action; every action of STEP_ACTIONS has one (test/unit/steps-registry.test.ts). */
export function stepKind(action: StepAction): StepKind {
  const kind = byAction.get(action)
  if (!kind) throw new Error(`no step kind for action "${action}"`)
  return kind
}

/** What each action may write (SPEC §6, §7): validate judges every operation and undo operation against it. */
export const WRITE_RULES = Object.fromEntries(STEP_KINDS.map((k) => [k.action, k.writes])) as Record<
  StepAction,
  WriteRule
>

/** Whether applying this step changes the data plane: it writes, and not only to prepare (StepKind.preparesOnly). */
export function changesDataPlane(step: {action: StepAction; operations: readonly unknown[]}): boolean {
  return step.operations.length > 0 && !stepKind(step.action).preparesOnly
}

/** The undo order by action. */
export const UNDO_ORDER: StepAction[] = UNDO_KINDS.map((k) => k.action)

/** Actions undone together even with `rollback --step`, one list per unit, in apply order. */
export const UNDO_UNITS: StepAction[][] = [...new Set(STEP_KINDS.flatMap((k) => (k.undoUnit ? [k.undoUnit] : [])))].map(
  (unit) => STEP_KINDS.filter((k) => k.undoUnit === unit).map((k) => k.action),
)

export type {Planned, StepContext, StepKind, WriteRule} from './types.js'
