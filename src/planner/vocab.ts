// The Istio and Kubernetes vocabulary the planner, executor, preflight and census share (issue 12): label
// and annotation keys, API groups, kind sets and the small helpers over them, each defined here once.
// Pure constants and functions (no I/O), so every layer may import it.
import type {KubeObject, ProxyState, WorkloadItem} from './model.js'

// ── API groups ──
export const NETWORKING = 'networking.istio.io'
export const SECURITY = 'security.istio.io'
export const TELEMETRY = 'telemetry.istio.io'
export const EXTENSIONS = 'extensions.istio.io'
export const GATEWAY_API_GROUP = 'gateway.networking.k8s.io'

// ── namespace / pod labels that select the data plane (DOMAIN §2) ──
export const INJECTION_LABEL = 'istio-injection'
export const REVISION_LABEL = 'istio.io/rev'
export const TAG_LABEL = 'istio.io/tag'
export const DATAPLANE_MODE_LABEL = 'istio.io/dataplane-mode'
/** Pod label (or annotation, for older injectors) that opts a pod in or out of sidecar injection. */
export const SIDECAR_INJECT = 'sidecar.istio.io/inject'
export const NAMESPACE_NAME_LABEL = 'kubernetes.io/metadata.name'

// ── what injection and capture leave on pods ──
export const SIDECAR_STATUS = 'sidecar.istio.io/status'
export const AMBIENT_REDIRECTION = 'ambient.istio.io/redirection'
/** Set by the injector on HBONE-capable sidecars. */
export const TUNNEL_LABEL = 'networking.istio.io/tunnel'
export const TLS_MODE_LABEL = 'security.istio.io/tlsMode'
export const GATEWAY_MANAGED = 'gateway.istio.io/managed'

// ── waypoints (DOMAIN §1) ──
export const WAYPOINT_CLASS = 'istio-waypoint'
export const WAYPOINT_FOR_LABEL = 'istio.io/waypoint-for'
export const USE_WAYPOINT_LABEL = 'istio.io/use-waypoint'
export const USE_WAYPOINT_NAMESPACE_LABEL = 'istio.io/use-waypoint-namespace'
/** An AuthorizationPolicy evaluated and logged, not enforced (E16). */
export const DRY_RUN_ANNOTATION = 'istio.io/dry-run'
/**
 * Istio >= 1.31 (Alpha) weighted waypoint canary, on Service, ServiceEntry and Namespace: a second waypoint (label, and
 * its namespace when not the resource's) takes the share of new connections in the ANNOTATION (0-100, missing = 0).
 * Source: istio/istio releasenotes/notes/60801-weighted-waypoint-canary.yaml; istio.io ambient waypoint page,
 * "Shift traffic between waypoints".
 */
export const USE_WAYPOINT_CANARY_LABEL = 'istio.io/use-waypoint-canary'
export const USE_WAYPOINT_CANARY_NAMESPACE_LABEL = 'istio.io/use-waypoint-canary-namespace'
export const USE_WAYPOINT_CANARY_WEIGHT_ANNOTATION = 'istio.io/use-waypoint-canary-weight'
/** The first Istio minor version with the weighted waypoint canary. */
export const WAYPOINT_CANARY_MIN_ISTIO = '1.31'
export const INGRESS_USE_WAYPOINT_LABEL = 'istio.io/ingress-use-waypoint'
export const GATEWAY_NAME_LABEL = 'gateway.networking.k8s.io/gateway-name'
export const GATEWAY_CLASS_NAME_LABEL = 'gateway.networking.k8s.io/gateway-class-name'

// ── kinds ──
/** Controllers `kubectl rollout restart` works on: restarting them re-creates the pods (DOMAIN E9/E10). */
export const ROLLOUT_RESTART_KINDS: ReadonlySet<string> = new Set(['Deployment', 'StatefulSet', 'DaemonSet'])

export function isRolloutRestartable(kind: string): boolean {
  return ROLLOUT_RESTART_KINDS.has(kind)
}

// ── helpers ──
/** A proxy state with a sidecar (classic or native). */
export function isSidecar(proxy: ProxyState | undefined): proxy is 'sidecar' | 'sidecar-native' {
  return proxy === 'sidecar' || proxy === 'sidecar-native'
}

/** A workload with a sidecar today: by its predicted proxy, or because some observed pod still has one. */
export function workloadHasSidecar(w: Pick<WorkloadItem, 'proxy' | 'pods'>): boolean {
  return isSidecar(w.proxy) || (w.pods?.sidecar ?? 0) > 0
}

export interface PodTemplate {
  metadata?: {labels?: Record<string, string>; annotations?: Record<string, string>}
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- as KubeObject.spec: a pod spec read field by field
  spec?: any
}

/** A controller's pod template (CronJobs nest it in their job template). */
export function podTemplateOf(obj: KubeObject | undefined): PodTemplate | undefined {
  if (!obj) return undefined
  return obj.kind === 'CronJob' ? obj.spec?.jobTemplate?.spec?.template : obj.spec?.template
}

/** What a workload's pods are made from: a controller's pod template, or a bare Pod itself. */
export function podTemplateOrPod(obj: KubeObject): PodTemplate | undefined {
  return obj.kind === 'Pod' ? {metadata: obj.metadata, spec: obj.spec} : podTemplateOf(obj)
}

// ── preflight ──
/** The preflight checks, in the order they run (src/preflight/checks/ has one file per id). */
export const PREFLIGHT_CHECKS = [
  'istio-version',
  'ambient-enabled',
  'ztunnel-ready',
  'istio-cni-ready',
  'gateway-api-crds',
  'waypoint-gatewayclass',
  'sidecars-hbone',
  'blockers',
  'network-policies',
  'rbac',
] as const
