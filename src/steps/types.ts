// What a step kind is: one module per action (src/steps/<action>.ts) owns how the step is planned, what it may
// write, how it is undone and what it does in the simulation. The planner, validate, rollback and the simulation
// read these modules through the registry (src/steps/index.ts); nothing else switches on an action name. Pure.
import type {
  Finding,
  Inventory,
  KubeObject,
  ObjectRef,
  ServiceItem,
  SourceSnapshot,
  WorkloadItem,
} from '../planner/model.js'
import type {Operation, PlanOptions, PlanStep, StepAction} from '../planner/plan-types.js'
import type {PolicyMigration} from '../planner/retarget.js'
import type {SimState, SimulationInput} from '../planner/simulation-state.js'
import type {WaypointIdentity} from '../planner/waypoint.js'

/** What a step may write (SPEC §6, §7), as group/kind keys ("" is core: "/Namespace"). validate checks every operation. */
/** What labelling the namespace istio.io/use-waypoint=<waypoint> binds (DOMAIN §1.5). */
export interface NamespaceBinding {
  /** Services the waypoint will serve: servable (cluster IP, selector, not a waypoint's own) and not labelled for another waypoint. */
  bound: ServiceItem[]
  /** Services with an istio.io/use-waypoint of their own that is not this waypoint: the namespace label does not bind them. */
  ownLabel: {service: ServiceItem; target: string}[]
}

export interface WriteRule {
  apply?: string[]
  delete?: string[]
  /** Object labels of these kinds, these keys only. */
  label?: {kinds: string[]; keys: string[]}
  /** Object annotations of these kinds, these keys only. */
  annotate?: {kinds: string[]; keys: string[]}
  restart?: string[]
  /** Pod-template labels of these controllers, these keys only. */
  templateLabels?: {kinds: string[]; keys: string[]}
}

/** Workloads whose sidecars the plan drops by a restart, and those a person must handle. */
export interface RestartDecision {
  restart: WorkloadItem[]
  manual: {ref: ObjectRef; reason: string}[]
  /** Workloads that end up ambient once the plan is done: what verify-dataplane checks. */
  expectAmbient: WorkloadItem[]
}

/** Template-label writes of one concern (E4 opt-ins, E7 pins) with their undo and the workloads they touch. */
export interface TemplateWrites {
  ops: Operation[]
  undo: Operation[]
  workloads: WorkloadItem[]
}

/** What the planner decides once, before any step is built; every step kind plans from this. */
export interface StepContext {
  inventory: Inventory
  snapshot: SourceSnapshot
  options: PlanOptions
  ns: string
  nsRef: ObjectRef
  /** The namespace's labels as observed. */
  labels: Record<string, string>
  /** The namespace has something to migrate (sidecar labels or sidecars). */
  migrating: boolean
  waypointRequired: boolean
  /** E3: the injector injects unlabelled namespaces, and no injected gateway needs that (E7). */
  injectionByDefault: boolean
  istioVersion?: string
  /**
   * The waypoint the plan uses (generated), and whether a waypoint of that name exists already; `remote`: the
   * namespace is bound already to this waypoint of another namespace, which the plan neither creates nor binds.
   */
  waypoint?: {object: KubeObject; ref: ObjectRef; exists: boolean; remote?: boolean}
  /** Who the waypoint is to the destinations (its ServiceAccount in the mesh's trust domain). */
  waypointIdentity?: WaypointIdentity
  policies: PolicyMigration
  optOut: {step?: PlanStep; optedOut: WorkloadItem[]}
  optedOutKeys: Set<string>
  optIns: TemplateWrites
  restarts: RestartDecision
  /** Services bound by labelling the namespace for the waypoint, and those whose own label keeps them elsewhere. */
  binding: NamespaceBinding
}

/** The outcome of planning one step kind: the step, if the namespace needs it, and findings about it. */
export interface Planned {
  step?: PlanStep
  /** Several steps of the same action, in plan order (canary-waypoint: one per weight). */
  steps?: PlanStep[]
  findings?: Finding[]
}

/**
 * Where a step stands in the simulation's documented windows: the restart window opens at the step that
 * restarts pods and closes at the one that replaces the degraded sidecar policies; binding starts the
 * waypoint-identity and sidecar-callers hazards.
 */
export type SimulationRole = 'binds-waypoint' | 'restarts-pods' | 'replaces-sidecar-policies'

export interface StepSimulation {
  /** The step's effect when applied. */
  forward?(step: PlanStep, input: SimulationInput, state: SimState): void
  /** The step's effect when undone. */
  undo?(step: PlanStep, state: SimState): void
  /** Rollback replays steps that wrote something; this one also when it wrote nothing (its undo changes the state). */
  replayUndoWhenReadOnly?: boolean
  role?: SimulationRole
}

export interface StepKind {
  action: StepAction
  /** One line for the step tables (docs, --help). */
  summary: string
  writes: WriteRule
  /** Steps sharing a unit are undone together even with `rollback --step`. */
  undoUnit?: string
  /**
   * Its writes move no traffic: they prepare what a later step switches on (a waypoint nothing is bound to, policy
   * copies inert until bound, NetworkPolicy allowances for HBONE). Every other step that writes changes the data
   * plane: apply re-reads the namespace's inventory before the first of them (issue 19 §1).
   */
  preparesOnly?: true
  simulation?: StepSimulation
  plan(ctx: StepContext): Planned
}
