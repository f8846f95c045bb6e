// The data model shared by sources, planner, executor and commands.
// Everything here is plain data (JSON-serialisable): the planner is pure functions over it.

import type {FindingCode, Severity} from './findings/catalogue.js'

/** Any Kubernetes object as read from a manifest or the API server. */
export interface KubeObject {
  apiVersion: string
  kind: string
  metadata: ObjectMeta
  // Istio/Kubernetes specs are deeply nested and versioned; classifiers read them through
  // small typed views (see istio-types.ts) rather than a full generated model.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the typed views above are the boundary
  spec?: any
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- as spec
  status?: any
  [key: string]: unknown
}

export interface OwnerReference {
  apiVersion: string
  kind: string
  name: string
  uid?: string
  controller?: boolean
}

export interface ObjectMeta {
  name: string
  namespace?: string
  labels?: Record<string, string>
  annotations?: Record<string, string>
  uid?: string
  resourceVersion?: string
  generation?: number
  creationTimestamp?: string
  ownerReferences?: OwnerReference[]
  [key: string]: unknown
}

/** Identifies one object. `namespace` is absent for cluster-scoped kinds. */
export interface ObjectRef {
  apiVersion: string
  kind: string
  namespace?: string
  name: string
}

/** Where an object can be enforced once the namespace is ambient (SPEC §4). */
export type Verdict = 'L4' | 'L7' | 'inert' | 'unaffected' | 'blocker'

/** What the plan does with an object (SPEC §4, DOMAIN §8 classes). */
export type Action = 'keep' | 'keep-verify' | 'retarget' | 'lost-client-side' | 'no-effect' | 'manual' | 'blocker'

export type {Severity} from './findings/catalogue.js'

/**
 * A diagnostic about the namespace or one object. `id` is stable across runs for the same
 * input (it is what `--accept-lost` / `--accept-hazard` name), `code` groups findings of one kind.
 */
export interface Finding {
  id: string
  /** A code of the finding catalogue (src/planner/findings/catalogue.ts, docs/findings.md). */
  code: FindingCode
  severity: Severity
  message: string
  ref?: ObjectRef
  /** What the user can do about it (absent when the plan already does it: see handledBy). */
  fix?: string
  /** What the plan itself does about it, naming the step and the objects (e.g. "create-policies carries this to the waypoint as …"). */
  handledBy?: string
}

/** How an enforcement point treats an AuthorizationPolicy once its workloads are ambient (DOMAIN §3.1). */
export type ZtunnelEffect =
  | 'as-written' // L4-only: enforced unchanged
  | 'deny-all' // ALLOW whose every rule had L7 content: nothing matches, workload fail-closed
  | 'narrowed' // ALLOW with some rules dropped (allows less), or DENY with alternatives dropped (denies less: fail-open for them)
  | 'broadened' // DENY enforced on its L4 part only: denies more than written
  | 'no-op' // DENY made only of L7 attributes: never fires (fail-open)
  | 'ignored' // not sent to ztunnel (CUSTOM/AUDIT, targetRefs, dry-run on >=1.29)

/** One classified object of the inventory. */
export interface InventoryItem {
  ref: ObjectRef
  verdict: Verdict
  action: Action
  /** Field-level reasons: "<JSON path>: <why>". */
  reasons: string[]
  /** For policies: how it is attached (DOMAIN §3.0). */
  scope?: 'workload' | 'namespace' | 'mesh' | 'targetRefs' | 'gateway' | 'mesh-routing' | 'client-side'
  /** For AuthorizationPolicies: what ztunnel will make of it. */
  ztunnel?: ZtunnelEffect
  /** Services (in the migrated namespace) this object applies to, when known. */
  services?: string[]
}

export type ProxyState = 'sidecar' | 'sidecar-native' | 'ambient' | 'none'

export interface LostAnnotation {
  key: string
  /** What replaces it in ambient, or why nothing does. */
  replacement: string
}

/** A workload (controller or bare Pod) of the migrated namespace and its data-plane state. */
export interface WorkloadItem {
  ref: ObjectRef
  proxy: ProxyState
  /** true when derived from the pod template and namespace labels rather than observed pods. */
  predicted?: boolean
  /** Pods observed for this workload (cluster source), by proxy state. */
  pods?: {total: number; sidecar: number; ambient: number; none: number}
  lostAnnotations: LostAnnotation[]
  /** Traits that change how the migration treats the workload. */
  traits: WorkloadTrait[]
  serviceAccount?: string
  /** Pod template labels (or pod labels for bare Pods): what selectors are matched against. */
  podLabels: Record<string, string>
}

export type WorkloadTrait =
  | 'host-network' // never injected, never captured (E6)
  | 'inject-opt-out' // sidecar.istio.io/inject=false: captured as soon as the namespace is ambient (E5)
  | 'pod-opt-in' // pod-level sidecar.istio.io/inject=true or istio.io/rev: keeps a sidecar (E4)
  | 'manual-injection' // istio-proxy in the controller's template (kube-inject) (E4)
  | 'dataplane-none' // istio.io/dataplane-mode=none on the pod: stays out of ambient
  | 'injected-gateway' // inject.istio.io/templates=gateway (E7)
  | 'kube-gateway' // Gateway API class istio gateway (E8)
  | 'waypoint' // a waypoint's own pods
  | 'job' // Job/CronJob: no rollout restart (E10)
  | 'bare-pod' // no controller: must be recreated by its owner (E10)
  | 'on-delete' // StatefulSet/DaemonSet OnDelete update strategy (E9)
  | 'partitioned' // StatefulSet RollingUpdate partition > 0 (E9)
  | 'proxyless-grpc' // inject.istio.io/templates=grpc-agent
  | 'hbone-capable' // sidecar pods labelled networking.istio.io/tunnel=http
  | 'quitquitquit' // scripts that call the sidecar's quitquitquit/healthz endpoints (E10)
  | 'gitops-managed' // labels of Argo CD / Flux / Helm (E23)

export interface ServicePortItem {
  name?: string
  port: number
  /** As written (number or named container port); defaults to `port`. */
  targetPort?: number | string
  protocol: string
  appProtocol?: string
  /** Protocol as Istio resolves it (DOMAIN §5). `auto` = sniffed. */
  istioProtocol: string
}

export interface ServiceItem {
  ref: ObjectRef
  /** spec.type (ClusterIP, NodePort, LoadBalancer, ExternalName). */
  type?: string
  /** Service labels (istio.io/use-waypoint, gateway.istio.io/managed, istio/release for the control plane…). */
  labels?: Record<string, string>
  selector?: Record<string, string>
  headless: boolean
  ports: ServicePortItem[]
  /** Workloads whose pods this Service selects. */
  workloads: string[]
  /**
   * WorkloadEntries ("WorkloadEntry/name") its selector selects too, and WorkloadGroups whose entries it will
   * (VMs, external endpoints: PILOT_ENABLE_K8S_SELECT_WORKLOAD_ENTRIES, on by default).
   */
  entryWorkloads?: string[]
}

export interface NamespaceLabel {
  key: string
  value: string
}

/** The namespace's labels that decide its data plane (DOMAIN §2.1–§2.3). */
export interface NamespaceState {
  name: string
  labels: Record<string, string>
  /** istio-injection and/or istio.io/rev, exactly as set. */
  sidecarLabels: NamespaceLabel[]
  /** Effective injection per the webhook selectors (istio-injection beats istio.io/rev; disabled matches nothing). */
  injection: 'enabled' | 'disabled' | 'none'
  /** istio.io/rev on the namespace (governs waypoint ownership even when istio-injection wins). */
  revision?: string
  /** istio.io/dataplane-mode value, if any. */
  dataplaneMode?: string
  useWaypoint?: string
  mode: 'sidecar' | 'ambient' | 'both' | 'none'
  /** istioctl analyze IST0123 (NamespaceMultipleInjectionLabels) would fire. */
  multipleInjectionLabels: boolean
}

/** What `inventory` produces and `plan` builds on. `-o json` prints exactly this. */
export interface Inventory {
  namespace: string
  rootNamespace: string
  namespaceState: NamespaceState
  waypointRequired: boolean
  /** E3: the injector injects namespaces without labels (auto webhook / enableNamespacesByDefault). */
  injectionByDefault?: boolean
  objects: InventoryItem[]
  workloads: WorkloadItem[]
  services: ServiceItem[]
  findings: Finding[]
}

/** Where the objects came from. */
export type SourceTarget = {manifests: string[]} | {context: string; server: string; clusterID: string}

/** A kind the source could not read (missing CRD, forbidden). */
export interface MissingKind {
  apiVersion: string
  kind: string
  reason: 'not-installed' | 'forbidden' | 'version-not-served'
}

/**
 * What a source hands to the planner: every object that may affect the namespace
 * (its own, the root namespace's, other namespaces' exported config) plus the
 * Namespace objects it saw.
 */
export interface SourceSnapshot {
  namespace: string
  rootNamespace: string
  target: SourceTarget
  objects: KubeObject[]
  missingKinds: MissingKind[]
  findings: Finding[]
  /** Istio minor version ("1.28") when the source can tell (the cluster's istiod image). */
  istioVersion?: string
}
