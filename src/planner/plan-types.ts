// The plan file (SPEC §5): what `plan` writes, reviewers approve, and `apply`/`rollback` execute.
import type {TrustDomain} from './mesh-config.js'
import type {Finding, InventoryItem, KubeObject, ObjectRef, SourceTarget, WorkloadItem, ZtunnelEffect} from './model.js'

export const PLAN_API_VERSION = 'mesh-migrate.io/v1alpha1'
export const PLAN_KIND = 'MigrationPlan'
/** The fleet overview (plan -A): its kind and its file name in the plans directory (src/plan/fleet.ts). */
export const FLEET_KIND = 'FleetPlan'
export const FLEET_FILE = 'fleet.yaml'

/** Label and annotation the tool puts on every object it creates; rollback deletes only these. */
export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by'
export const MANAGED_BY_VALUE = 'mesh-migrate'
export const PLAN_ANNOTATION = 'mesh-migrate.io/plan'
export const FIELD_MANAGER = 'mesh-migrate'

/**
 * The closed catalogue of step actions (SPEC §6), in the order a plan uses them.
 * The executor runs nothing else; `validate` rejects anything else.
 */
export const STEP_ACTIONS = [
  'preflight',
  'patch-network-policies',
  'create-waypoint',
  'wait-waypoint',
  'create-policies',
  'canary-waypoint',
  'bind-waypoint',
  'swap-routes',
  'opt-out-workloads',
  'enable-ambient',
  'remove-sidecar-injection',
  'restart-workloads',
  'delete-sidecar-policies',
  'verify-dataplane',
  'deny-waypoint-bypass',
] as const

export type StepAction = (typeof STEP_ACTIONS)[number]

/**
 * Primitive writes a step is made of. Every write of the executor is one of these, confined to
 * the plan's namespace (SPEC §6, §7 "Untrusted plans").
 */
export type Operation =
  /** Server-side apply of a full object (created objects get the managed-by label and plan annotation). */
  | {op: 'apply'; object: KubeObject}
  /**
   * Delete an object. In a step's operations `object` is the full copy (without server-set fields)
   * that rollback re-creates; an undo deletes what its step created, which the step's own operations
   * already hold, so it names only the `ref` (each object is stored once).
   */
  | {op: 'delete'; ref: ObjectRef; object?: KubeObject}
  /** Set and/or remove labels on an object with a JSON merge patch; `null` removes. */
  | {op: 'label'; ref: ObjectRef; labels: Record<string, string | null>}
  /** Set and/or remove annotations on an object with a JSON merge patch; `null` removes (e.g. a canary's weight). */
  | {op: 'annotate'; ref: ObjectRef; annotations: Record<string, string | null>}
  /** Rollout restart via the kubectl.kubernetes.io/restartedAt pod-template annotation. */
  | {op: 'restart'; ref: ObjectRef}
  /**
   * Set and/or remove labels of a controller's pod template (merge patch; `null` removes). A template
   * change rolls the workload, so its pods come back with the new labels.
   */
  | {op: 'template-labels'; ref: ObjectRef; labels: Record<string, string | null>}

/** Read-only conditions checked before a step writes (stale-plan detection, SPEC §7). */
export type Precondition =
  /** These namespace labels have exactly these values (`null` = absent). */
  | {check: 'namespace-labels'; labels: Record<string, string | null>}
  /** The object exists and its spec still hashes to `fingerprint`. */
  | {check: 'object-unchanged'; ref: ObjectRef; fingerprint: string}
  /** The object does not exist, or exists and was created by this plan (idempotent re-run). */
  | {check: 'object-absent-or-ours'; ref: ObjectRef}
  /** The object exists (whatever its content). */
  | {check: 'object-present'; ref: ObjectRef}
  /** The waypoint is Programmed, has status.addresses and an available replica (never bind an unready waypoint). */
  | {check: 'waypoint-ready'; ref: ObjectRef}

/** Postconditions verified after a step's writes (with --timeout). */
export type Verification =
  | {check: 'waypoint-ready'; ref: ObjectRef}
  | {check: 'objects-present'; refs: ObjectRef[]}
  | {check: 'objects-absent'; refs: ObjectRef[]}
  | {check: 'namespace-labels'; labels: Record<string, string | null>}
  | {check: 'rollouts-complete'; refs: ObjectRef[]}
  /** Every pod of these workloads runs without a sidecar (no status annotation, no istio-proxy container, classic or native). */
  | {check: 'pods-without-sidecar'; refs: ObjectRef[]}
  /** Every pod of these workloads has ambient.istio.io/redirection=enabled. */
  | {check: 'pods-captured'; refs: ObjectRef[]}
  /** Every pod of these workloads carries istio.io/dataplane-mode=none (their template rolls have finished). */
  | {check: 'pods-opted-out'; refs: ObjectRef[]}
  /** These Services report istio.io/WaypointBound=True for the waypoint. */
  | {check: 'waypoint-bound'; ref: ObjectRef; services: string[]}
  /** Every pod of these workloads runs with a sidecar (an undo's postcondition: the restart brought them back). */
  | {check: 'pods-with-sidecar'; refs: ObjectRef[]}
  | {check: 'preflight'; checks: string[]}

/**
 * Read-only conditions an undo needs (src/plan/undo-guards.ts): rollback checks all of them before its first
 * write, and each step's again right before that step's undo writes.
 */
export type UndoPrecondition =
  /** E1: restoring istio.io/rev=<revision> brings sidecars back only while a webhook injects for that revision or tag. */
  | {check: 'revision-injects'; revision: string}
  /**
   * Removing istio.io/dataplane-mode=ambient un-enrols every sidecar-less pod at once: refuse while a captured pod
   * without a sidecar would leave the mesh, unless its workload is `allowed` (sidecar-less before the plan).
   */
  | {check: 'pods-stay-in-mesh'; allowed: ObjectRef[]}

export interface StepUndo {
  description: string
  /** What must hold before the undo writes (absent: nothing). */
  preconditions?: UndoPrecondition[]
  operations: Operation[]
  /** What the undo waits for after its writes (absent: nothing). */
  verify?: Verification[]
}

export interface ManualItem {
  ref: ObjectRef
  reason: string
}

export interface PlanStep {
  id: string
  action: StepAction
  description: string
  preconditions: Precondition[]
  operations: Operation[]
  /** Things the step cannot do itself and lists for a person (Jobs, bare Pods, OnDelete StatefulSets). */
  manual?: ManualItem[]
  verify: Verification[]
  undo: StepUndo
}

export interface PlanOptions {
  rootNamespace: string
  waypointName: string
  waypointFor: 'service' | 'workload' | 'all'
  /** virtualservice: keep mesh VirtualServices (applied by the waypoint); httproute: convert them (swap-routes). */
  routes?: 'virtualservice' | 'httproute'
  /** E5: keep pods opted out of injection out of the mesh (istio.io/dataplane-mode=none) or let ztunnel capture them. */
  optedOut?: 'keep-out' | 'enroll'
  /** Add the bypass-prevention DENY once everything else is done (only when every caller is ambient). */
  denyWaypointBypass?: boolean
  /** Istio >= 1.31: shift the namespace's Services from the primary waypoint to the plan's at these weights first. */
  waypointCanary?: number[]
  /** Finding ids of lost client-side behaviour the reviewers accepted (--accept-lost). */
  acceptLost?: string[]
  /** Hazard ids outside documented windows the reviewers accepted (--accept-hazard). */
  acceptHazards?: string[]
}

/** One policy as the step-by-step simulation sees it (inputs of `show --timeline`). */
export interface PolicyTimelineInput {
  /** "Kind/name" (or "Kind/namespace/name" for policies outside the plan's namespace). */
  key: string
  action?: string
  /** ztunnel's effect on the original once its workloads are ambient. */
  ztunnel?: ZtunnelEffect
  /** Workload keys ("Kind/name") the original applies to. */
  workloads: string[]
  /** Step that deletes the original (absent: it stays). */
  deletedIn?: StepAction
  /** Step that creates a waypoint copy (absent: none). */
  waypointCopyIn?: StepAction
  /**
   * The waypoint applies the original itself, as it is, once it is ready and bound (namespace-wide and
   * root Telemetry, DOMAIN §3.11): no copy is needed.
   */
  appliedByWaypoint?: boolean
  /** Step that creates a ztunnel companion admitting the waypoint principal. */
  companionIn?: StepAction
  /** Step that creates the L4 part kept at ztunnel (E15 projection, DENY L4 rules). */
  l4PartIn?: StepAction
  /** Step that creates the E22 rewrite: an exact equivalent ztunnel enforces (from.source.serviceAccounts). */
  rewrittenIn?: StepAction
  /** The original is L4-only and keyed on caller identity/IP (E21): a waypoint in front changes what it sees. */
  identityKeyed?: boolean
  /** istio.io/dry-run: evaluated but not enforced. */
  dryRun?: boolean
  /** An ALLOW without rules: it admits nothing anywhere. */
  allowsNothing?: boolean
  /**
   * An ALLOW the waypoint enforces (its copy, or the policy itself when it has targetRefs): the workloads behind
   * the Services it is attached to. For them the waypoint denies requests that none of its ALLOWs matches.
   */
  waypointAllowFor?: string[]
}

export interface PlanHazard {
  id: string
  kind: string
  phase: 'apply' | 'rollback'
  from: string
  until: string
  window?: string
  policy?: string
  workloads: string[]
  message: string
  /** Accepted by the reviewers with --accept-hazard (only for hazards without a documented window). */
  accepted?: boolean
}

export interface PlanSummary {
  from: string
  to: 'ambient'
  waypointRequired: boolean
  blockers: number
  steps: number
}

export interface PlanSpec {
  target: SourceTarget
  options: PlanOptions
  observed: {
    namespaceLabels: Record<string, string>
    /** sha256 over the inventory inputs: changes when anything the plan was computed from changes. */
    fingerprint: string
    /**
     * The mesh's trust domain the principals the plan writes are in, and where it was read (`--trust-domain`,
     * `ConfigMap <root>/istio[-<rev>]`, or `default`): issue 21 point 8. Present when the plan needs a waypoint.
     */
    trustDomain?: TrustDomain
    /**
     * The waypoint principals the plan's companions may admit (the plan's waypoint in the trust domain and each
     * alias, then the waypoints Services are bound to by their own label): validate checks every companion against
     * it (issue 20 point 5). Present when the plan needs a waypoint.
     */
    waypointPrincipals?: string[]
    /**
     * The fingerprint (objectFingerprint, cut to 64 bits: plan-builder.ts shortFingerprint) of each inventory object whose verdict is neither unaffected nor inert, by refKey: before
     * the first step that changes the data plane, apply re-reads the inventory and stops on an object that is not
     * here or whose fingerprint differs (issue 19 §1, src/plan/inventory-drift.ts).
     */
    objects?: Record<string, string>
    /**
     * For each original the plan keeps and derives a policy from (a waypoint copy, an L4 part): the fingerprint of its
     * rules (its spec without selector/targetRef), by the copies' copied-from value. validate checks a waypoint copy
     * against it; apply checks the live original against it before creating a copy (issue 20 §5).
     */
    keptRules?: Record<string, string>
  }
  summary: PlanSummary
  blockers: Finding[]
  findings: Finding[]
  inventory: InventoryItem[]
  workloads: WorkloadItem[]
  waypoints: KubeObject[]
  /** The policies the simulation follows step by step (show --timeline). */
  policies: PolicyTimelineInput[]
  /** What the simulation found: intervals where a pod leaves the mesh or a policy is degraded/not enforced. */
  hazards: PlanHazard[]
  steps: PlanStep[]
}

export type StepPhase = 'Pending' | 'Running' | 'Applied' | 'Failed' | 'Interrupted' | 'RolledBack'

export interface StepStatus {
  id: string
  phase: StepPhase
  at: string
  /** The Kubernetes identity the API server saw (SelfSubjectReview), or the local user when it could not be read. */
  by: string
  /** The local user and host that ran the command (user@host). */
  localUser?: string
  /** What the step saw before it wrote: previous label values, objects as they were. */
  observed?: Record<string, unknown>
  message?: string
  attempts?: number
}

/** `apply --ignore-fleet-order` (issue 22): who applied this plan ahead of earlier-wave namespaces of the fleet. */
export interface FleetOrderOverride {
  at: string
  by: string
  localUser?: string
  /** The fleet file whose order was overridden. */
  fleet: string
  /** The earlier-wave namespaces not fully applied then: "fa (wave 1: 3 of 14 steps applied)". */
  pending: string[]
}

export interface PlanStatus {
  specDigest: string
  /**
   * The digest of the plan this one re-planned (plan --keep-progress / --force): its record in the cluster is
   * taken over by this plan's first write (src/plan/record.ts).
   */
  replaces?: string
  steps: StepStatus[]
  fleetOrderOverrides?: FleetOrderOverride[]
}

export interface MigrationPlan {
  apiVersion: typeof PLAN_API_VERSION
  kind: typeof PLAN_KIND
  metadata: {name: string; namespace: string; generator: string}
  spec: PlanSpec
  status?: PlanStatus
}

/** A problem found in a plan file: what and where. */
export interface PlanProblem {
  /** JSON path inside the plan ("spec.steps[2].operations[0]"), or "" for the whole file. */
  path: string
  message: string
  /** Where in the file, when known. */
  line?: number
}
