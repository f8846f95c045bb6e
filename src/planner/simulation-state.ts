// What the step-by-step simulation (src/plan/simulate.ts) reads and tracks: its input and the state between
// boundaries. Apart from the simulation itself because each step kind's hooks (src/steps/) change this state,
// and the steps sit below the code that folds over them (docs/architecture.md, Layers).
import type {WorkloadItem} from './model.js'
import type {PlanStep, PolicyTimelineInput, StepAction} from './plan-types.js'

/**
 * A policy as the simulator sees it: the plan records exactly this (spec.policies), so `show --timeline`
 * and the end-to-end tests replay the simulation from the plan file alone.
 */
export type SimPolicy = PolicyTimelineInput

export interface SimulationInput {
  namespace: string
  workloads: WorkloadItem[]
  steps: PlanStep[]
  policies: SimPolicy[]
  /** istio.io/dataplane-mode=ambient already on the namespace before the plan. */
  ambientAtStart: boolean
  /**
   * The namespace is bound, before the plan, to a waypoint of another namespace that the plan keeps (no
   * bind-waypoint step): bound from the start, and ready as far as the plan can tell (wait-waypoint checks it).
   */
  waypointBoundAtStart?: boolean
}

export const workloadKey = (w: {ref: {kind: string; name: string}}) => `${w.ref.kind}/${w.ref.name}`

/** What the simulation tracks between boundaries; each step kind's `simulation` hooks change it (src/steps/). */
export interface SimState {
  ambientLabel: boolean
  injection: boolean
  waypointReady: boolean
  bound: boolean
  sidecar: Map<string, boolean>
  optedOut: Set<string>
  /** Steps whose effects are in place. */
  applied: Set<StepAction>
}
