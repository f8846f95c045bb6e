// What the policy migration produces (DOMAIN §3.1 "Re-targeting rules", §4.2, §7 E14-E16/E21/E22).
import type {Finding, InventoryItem, KubeObject, ObjectRef, ServiceItem, WorkloadItem, ZtunnelEffect} from '../model.js'

/** One `targetRefs` entry as the copies write it. */
export interface TargetRef {
  group: string
  kind: string
  name: string
}

/**
 * What one object is in the migration:
 * - `original`: the user's policy as it is;
 * - `waypoint-copy`: `<name>-waypoint`, targetRefs, the full original rules — enforced by the waypoint only,
 *   which sees the client's real identity;
 * - `ztunnel-companion`: `<name>-ztunnel`, same selector/scope as the original, ALLOW for the waypoint's
 *   principal — lets traffic the waypoint already authorised pass the destination (sidecar or ztunnel);
 * - `ztunnel-l4`: `<name>-l4`, same selector/scope, the part of the original ztunnel can enforce: the L4
 *   projection of an L7 ALLOW (E15 split), the as-written L4 rules of a DENY, or the E22 rewrite.
 */
export type PolicyRole = 'original' | 'waypoint-copy' | 'ztunnel-companion' | 'ztunnel-l4'

/** Where and when one object (original or created) is enforced — what a step-by-step simulation needs. */
export interface PolicyPlacement {
  ref: ObjectRef
  role: PolicyRole
  /**
   * How it attaches (DOMAIN §3.0): `workload` (selector) and `namespace`/`mesh` (no selector) objects are
   * enforced by sidecars and, once the pods are ambient, by ztunnel; `targetRefs` objects only by the waypoint.
   */
  scope: 'workload' | 'namespace' | 'mesh' | 'targetRefs'
  selector?: Record<string, string>
  targetRefs?: TargetRef[]
  /** Workloads ("Kind/name") of the migrated namespace a selector/namespace/mesh-scoped object applies to (none for targetRefs). */
  workloads: string[]
  /** Services whose traffic the waypoint applies a targetRefs object to (none for the other scopes). */
  services: string[]
  /** Workloads ("Kind/name") behind `services`: whose Service-addressed traffic the waypoint applies it to. */
  serviceWorkloads?: string[]
  /** AuthorizationPolicy action. */
  action?: 'ALLOW' | 'DENY' | 'CUSTOM' | 'AUDIT'
  /** AuthorizationPolicy: what ztunnel makes of it once its workloads are ambient (`ignored` for targetRefs). */
  ztunnel?: ZtunnelEffect
  dryRun?: boolean
  /** An original the waypoint applies as it is once bound (namespace-wide and root Telemetry, DOMAIN §3.11). */
  appliedByWaypoint?: boolean
  /** The step that creates it; absent for originals and reused copies. */
  createdIn?: 'create-policies' | 'delete-sidecar-policies'
  /** A waypoint copy that exists already (same targets and rules): the plan uses it, neither creates nor deletes it. */
  reused?: boolean
  /** The step that deletes it; absent when it outlives the plan. */
  deletedIn?: 'delete-sidecar-policies'
  /** One line for the plan's step descriptions. */
  description: string
  /** The object as it is (original) or as the plan writes it (created). */
  object: KubeObject
}

/**
 * - `carry`: created objects replace the original, which `delete-sidecar-policies` deletes;
 * - `carry-keep`: identity/IP-keyed L4 policy (E21): waypoint copy (and companion), the original stays at ztunnel;
 * - `rewrite`: E22 rewrite at ztunnel replaces the original (plus E21 objects when a waypoint fronts it);
 * - `keep`: nothing to do (L4 as written, already targetRefs, not affected, or no waypoint);
 * - `keep-copy`: an ALLOW kept as written at ztunnel that the waypoint must also apply, because the waypoint
 *   enforces other ALLOW policies for its Services and denies what none of them matches (DOMAIN §3.1);
 * - `copy-root`: a mesh-wide L7 DENY of the root namespace: a waypoint copy in the namespace, the original stays;
 * - `blocked`: the plan cannot carry it; a blocker finding (or the classifier's) says why.
 */
export type PolicyDisposition = 'carry' | 'carry-keep' | 'rewrite' | 'keep' | 'keep-copy' | 'copy-root' | 'blocked'

export interface PolicyDecision {
  ref: ObjectRef
  disposition: PolicyDisposition
  /** Why, in one sentence. */
  why: string
  original: PolicyPlacement
  created: PolicyPlacement[]
  /** Ids of the findings about this policy. */
  findings: string[]
}

export interface PolicyMigration {
  /** create-policies: waypoint copies, ztunnel companions, DENY L4 parts and E22 rewrites. */
  createBeforeBind: KubeObject[]
  /** delete-sidecar-policies, one step right after the restart. */
  replaceAfterRestart: {
    /** Originals, clean copies (cleanObject): stored in full for rollback. */
    delete: KubeObject[]
    /**
     * The L4 projections (`<name>-l4`) of L7 ALLOWs. They are separate objects rather than a second content of
     * the companion: ALLOW policies are OR-ed, so the union is the same, and rollback can then delete them
     * (the executor's undo re-creates only absent objects, so it could not restore a companion's first content).
     */
    apply: KubeObject[]
  }
  findings: Finding[]
  /** Per original policy: what the plan does with it and where it is enforced before/after. */
  decisions: PolicyDecision[]
}

export interface PolicyMigrationInput {
  namespace: string
  planName: string
  waypointName: string
  /** Namespace of the waypoint (default: `namespace`). */
  waypointNamespace?: string
  /** Mesh trust domain for the waypoint principal (default cluster.local; meshConfig.trustDomain, issue 21 point 8). */
  trustDomain?: string
  /** meshConfig.trustDomainAliases: the companions admit the waypoint in each of them too (ztunnel matches literally). */
  trustDomainAliases?: string[]
  /** The waypoint's ServiceAccount (default: the waypoint's name, istiod's convention; DOMAIN §1.3). */
  waypointServiceAccount?: string
  /**
   * Services of the namespace bound by their own istio.io/use-waypoint to another waypoint than the plan's, with
   * that waypoint's principals: the Service-targeted copies apply there (policyattachment.go), so the companions of
   * the pods behind them admit that waypoint too (issue 21 point 2).
   */
  serviceWaypoints?: Record<string, string[]>
  /** "1.NN" when known. */
  istioVersion?: string
  /** istio.io/waypoint-for of the waypoint (default service): the copies target Services, which only a service/all waypoint serves. */
  waypointFor?: 'service' | 'workload' | 'all'
  /** Istio root namespace (default istio-system). */
  rootNamespace?: string
  /**
   * Whether the plan puts a waypoint in front of the namespace (default true). Without one only the E22
   * rewrites apply: everything else needs a waypoint to be carried to.
   */
  waypointPlanned?: boolean
  items: InventoryItem[]
  objects: KubeObject[]
  workloads: WorkloadItem[]
  services: ServiceItem[]
}
