// The machine-readable outputs of every command (`-o json`, `-o yaml`, `--json`): one document per run,
// each with apiVersion and kind, Kubernetes-style (docs/contract.md). These types are the normative
// reference: `npm run schemas` generates schemas/*.json from them (scripts/generate-schemas.ts), and a
// test checks that the committed schemas are up to date and that every command's output validates.
import type {CensusPlan, CensusReport} from '../census/census.js'
import type {StepManifestChanges} from '../plan/gitops.js'
import type {Inventory} from '../planner/model.js'
import type {PlanHazard, StepAction, StepPhase} from '../planner/plan-types.js'
import type {BoundaryState} from '../plan/simulate.js'
import type {PlanProblem} from '../plan/planfile.js'
import type {PreflightDiagnostic} from '../preflight/types.js'

export const OUTPUT_API_VERSION = 'mesh-migrate.io/v1alpha1'

interface Typed<K extends string> {
  apiVersion: 'mesh-migrate.io/v1alpha1'
  kind: K
}

/** `inventory -o json` */
export interface InventoryDocument extends Typed<'Inventory'>, Inventory {}

/** `plan -A` / `plan -l SELECTOR` / `plan NS1 NS2… -o json`, `show --fleet -o json`: the fleet overview (plans/fleet.yaml). */
export type {FleetDocument} from '../plan/fleet-file.js'

/** `census -o json` */
export interface CensusDocument extends Typed<'Census'>, CensusReport {}

/** `preflight -o json` */
export interface PreflightReport extends Typed<'PreflightReport'> {
  namespace: string
  context: string
  /** Where the checked plan came from: a file, or built in memory from the cluster. */
  plan: string
  ok: boolean
  diagnostics: PreflightDiagnostic[]
}

export interface StatusStep {
  id: string
  action: StepAction
  phase: StepPhase
  at?: string
  by?: string
  message?: string
  /** Does the cluster still show what the step did? `unknown`: the cluster could not be read. Absent when not checked (--offline). */
  drift?: 'in-sync' | 'drifted' | 'n/a' | 'unknown'
  driftDetail?: string
  /**
   * `status --by-effect`: is the step's after-state in the cluster and does its verification hold, whoever wrote it
   * (a GitOps engine records nothing)? `n/a`: nothing to show (preflight); `unknown`: the cluster could not be read.
   */
  effect?: 'live' | 'missing' | 'n/a' | 'unknown'
  /** What of the step's effect is missing: the object and the label key or field, or the check that does not hold. */
  effectDetail?: string
  /**
   * A step stopped part-way (Interrupted, Failed, or Running with no live holder): each of its operations it
   * completed and has not (`restart Deployment ns/name`), from its record; the windows this leaves open are in
   * the plan's `openWindows`.
   */
  progress?: {done: string[]; notDone: string[]}
}

export interface PlanStatus {
  plan: string
  namespace: string
  /** `status --fleet`: the namespace's wave in the fleet file. */
  wave?: number
  /** As census shows it: blocked, not-started, in-progress, applied, failed, interrupted, rolled-back. */
  state: CensusPlan['state']
  pending: number
  /** Steps whose writes the cluster no longer shows; null when not known (the cluster could not be read, or --offline). */
  drifted: number | null
  /**
   * `status --by-effect`: steps whose effect is not live in the cluster (whatever the record says); null when not
   * known (the cluster could not be read, or it is not the plan's).
   */
  notLive?: number | null
  /**
   * Where the progress shown comes from: `cluster`, the plan's record in the namespace (ConfigMap
   * mesh-migrate-record-<plan name>); `file`, the plan file's status (--offline, no record yet, or the cluster unread).
   */
  progressFrom: 'cluster' | 'file'
  /** Why the cluster was not read (status exits 1 then, unless --offline). */
  clusterUnread?: string
  /**
   * The plan file's problems when its spec was edited after the first apply: its progress is still shown (from the
   * record in the cluster, else the file's status), it cannot be applied, and status exits 4.
   */
  invalid?: string[]
  /** Hazard windows the plan is stopped inside (policies degraded until a later step is applied). */
  openWindows: string[]
  /** Set when the current context is not the plan's cluster (no drift is reported then). */
  otherCluster?: string
  lock?: string
  steps: StatusStep[]
}

/** `status -o json`: one entry per plan read (unreadable plans are reported on stderr). */
export interface StatusReport extends Typed<'StatusReport'> {
  /** `status --fleet`: the fleet file whose plans these are, in wave order. */
  fleet?: string
  plans: PlanStatus[]
}

export interface FileValidation {
  file: string
  /** No problem and no blocker. */
  valid: boolean
  problems: PlanProblem[]
  /** Ids of the plan's blockers: a blocked plan cannot be applied, so it does not pass the gate (exit 4). */
  blockers: string[]
}

/** `validate -o json` */
export interface ValidationReport extends Typed<'ValidationReport'> {
  valid: boolean
  files: FileValidation[]
}

/** `show --timeline -o json`: the step-by-step simulation and the plan's hazards. */
export interface Timeline extends Typed<'Timeline'> {
  plan: string
  namespace: string
  apply: BoundaryState[]
  rollback: BoundaryState[]
  hazards: PlanHazard[]
}

/** `show -o patches --json` */
export interface ManifestChanges extends Typed<'ManifestChanges'> {
  plan: string
  steps: StepManifestChanges[]
}

export interface StepOutcome {
  id: string
  action: StepAction
  /**
   * applied | already-in-place (nothing written, verified) | verified (read-only step) | accepted (dry run:
   * the server accepted the writes, nothing persisted) | not-sent (dry run of a read-only step: nothing sent)
   */
  outcome: 'applied' | 'already-in-place' | 'verified' | 'accepted' | 'not-sent'
  details: string[]
}

/** `apply -o json` */
export interface ApplyResult extends Typed<'ApplyResult'> {
  plan: string
  namespace: string
  dryRun: boolean
  applied: StepOutcome[]
  /** Step ids not applied yet, in order. */
  remaining: string[]
  /** The command to run next, when there is one. */
  next?: string
}

/** What became of one namespace of an `apply --fleet` / `rollback --fleet` run. */
export interface FleetNamespaceRun {
  namespace: string
  wave: number
  plan: string
  /**
   * applied (every step, verified) | up-to-date (nothing to do) | partly-applied (up to bind-waypoint: a cycle's first
   * pass) | rolled-back | failed | interrupted (Ctrl+C, recorded) | stopped (after its step in progress, another
   * failed) | not-started (another failed first) | no-plan (nothing to migrate)
   */
  state:
    | 'applied'
    | 'up-to-date'
    | 'partly-applied'
    | 'rolled-back'
    | 'failed'
    | 'interrupted'
    | 'stopped'
    | 'not-started'
    | 'no-plan'
  /** Step ids applied (or undone) by this run, in order. */
  steps: string[]
  /** Step ids of the plan not Applied after the run. */
  remaining: string[]
  startedAt?: string
  finishedAt?: string
  /** Why it failed, at which step, and what to run. */
  error?: {message: string; exitCode: number; step?: string; next?: string}
}

/** `apply --fleet -o json`, `rollback --fleet -o json` */
export interface FleetApplyResult extends Typed<'FleetApplyResult'> {
  fleet: string
  operation: 'apply' | 'rollback'
  /** --dry-run=server: every write was sent with dryRun=All; nothing was persisted or recorded. */
  dryRun: boolean
  /** The waves this run covered, in the order it ran them. */
  waves: number[]
  parallel: number
  /** complete: every covered wave done | incomplete: a later wave remains (run again) | failed | interrupted */
  result: 'complete' | 'incomplete' | 'failed' | 'interrupted'
  namespaces: FleetNamespaceRun[]
  /** The command to run next, when there is one. */
  next?: string
}

/** `rollback -o json` */
export interface RollbackResult extends Typed<'RollbackResult'> {
  plan: string
  namespace: string
  dryRun: boolean
  rolledBack: {id: string; action: StepAction; details: string[]}[]
}

/** `unlock -o json` */
export interface UnlockResult extends Typed<'UnlockResult'> {
  namespace: string
  /** Who held the lock that was broken; absent when the namespace was not locked. */
  released?: string
}

/** `version -o json` */
export interface VersionDocument extends Typed<'Version'> {
  client: {version: string}
  /** process.version of the Node.js running the CLI. */
  node: {version: string}
  /** The cluster of the context, when one is configured: absent fields were not readable. */
  cluster: {
    context?: string
    server?: string
    /** The API server's gitVersion. */
    kubernetes?: string
    /** The Istio version plans are made for (the default revision's istiod), when istiod is installed. */
    istio?: {version: string; revision: string; image: string}
    /** Why there is no cluster version (no kubeconfig, unreachable, forbidden). */
    error?: string
  }
}

/** Any command's failure under `-o json` / `--json` (also printed on stderr for people). */
export interface ErrorDocument extends Typed<'Error'> {
  error: {
    name: string
    message: string
    exitCode: number
    /** The next thing to try. */
    suggestion?: string
    /** Plan problems, for an invalid plan. */
    problems?: PlanProblem[]
  }
}

/** Puts apiVersion and kind first, as Kubernetes objects have them. */
export function typed<K extends string, T extends object>(kind: K, data: T): Typed<K> & T {
  return {apiVersion: OUTPUT_API_VERSION, kind, ...data}
}
