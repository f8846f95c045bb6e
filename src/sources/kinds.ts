// The kinds a namespace inventory reads, and how widely each is listed. One paginated LIST per kind
// (SPEC §8): config that other namespaces can export to this one is listed cluster-wide once; the
// namespace's own workloads only in the namespace.

export type ListScope =
  /** Only in the migrated namespace (workloads, Services, NetworkPolicies). */
  | 'namespace'
  /** Cluster-wide: Istio and Gateway API config, which other namespaces and the root namespace export to this one. */
  | 'mesh'
  /** Cluster-scoped kinds. */
  | 'cluster'
  /** Only in the Istio root namespace (control-plane objects: istiod, injector ConfigMaps). */
  | 'root'

export interface InventoryKind {
  /** Preferred apiVersion; any served version of the group is accepted. */
  apiVersion: string
  kind: string
  scope: ListScope
  /** Optional label selector for the list (narrows control-plane lists). */
  labelSelector?: string
}

export const ISTIO_CONFIG_KINDS: InventoryKind[] = [
  {apiVersion: 'networking.istio.io/v1', kind: 'VirtualService', scope: 'mesh'},
  {apiVersion: 'networking.istio.io/v1', kind: 'DestinationRule', scope: 'mesh'},
  {apiVersion: 'networking.istio.io/v1', kind: 'ServiceEntry', scope: 'mesh'},
  {apiVersion: 'networking.istio.io/v1', kind: 'Sidecar', scope: 'mesh'},
  {apiVersion: 'networking.istio.io/v1', kind: 'Gateway', scope: 'mesh'},
  {apiVersion: 'networking.istio.io/v1', kind: 'WorkloadEntry', scope: 'mesh'},
  {apiVersion: 'networking.istio.io/v1', kind: 'WorkloadGroup', scope: 'mesh'},
  {apiVersion: 'networking.istio.io/v1alpha3', kind: 'EnvoyFilter', scope: 'mesh'},
  {apiVersion: 'networking.istio.io/v1beta1', kind: 'ProxyConfig', scope: 'mesh'},
  {apiVersion: 'security.istio.io/v1', kind: 'AuthorizationPolicy', scope: 'mesh'},
  {apiVersion: 'security.istio.io/v1', kind: 'PeerAuthentication', scope: 'mesh'},
  {apiVersion: 'security.istio.io/v1', kind: 'RequestAuthentication', scope: 'mesh'},
  {apiVersion: 'telemetry.istio.io/v1', kind: 'Telemetry', scope: 'mesh'},
  {apiVersion: 'extensions.istio.io/v1alpha1', kind: 'WasmPlugin', scope: 'mesh'},
]

export const GATEWAY_API_KINDS: InventoryKind[] = [
  {apiVersion: 'gateway.networking.k8s.io/v1', kind: 'Gateway', scope: 'mesh'},
  {apiVersion: 'gateway.networking.k8s.io/v1', kind: 'HTTPRoute', scope: 'mesh'},
  {apiVersion: 'gateway.networking.k8s.io/v1', kind: 'GRPCRoute', scope: 'mesh'},
  {apiVersion: 'gateway.networking.k8s.io/v1', kind: 'TCPRoute', scope: 'mesh'},
  {apiVersion: 'gateway.networking.k8s.io/v1', kind: 'TLSRoute', scope: 'mesh'},
  {apiVersion: 'gateway.networking.k8s.io/v1', kind: 'GatewayClass', scope: 'cluster'},
]

export const WORKLOAD_KINDS: InventoryKind[] = [
  {apiVersion: 'apps/v1', kind: 'Deployment', scope: 'namespace'},
  {apiVersion: 'apps/v1', kind: 'StatefulSet', scope: 'namespace'},
  {apiVersion: 'apps/v1', kind: 'DaemonSet', scope: 'namespace'},
  {apiVersion: 'apps/v1', kind: 'ReplicaSet', scope: 'namespace'},
  {apiVersion: 'batch/v1', kind: 'Job', scope: 'namespace'},
  {apiVersion: 'batch/v1', kind: 'CronJob', scope: 'namespace'},
  {apiVersion: 'v1', kind: 'Pod', scope: 'namespace'},
  {apiVersion: 'v1', kind: 'Service', scope: 'namespace'},
  {apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', scope: 'namespace'},
]

export const CONTROL_PLANE_KINDS: InventoryKind[] = [
  {apiVersion: 'admissionregistration.k8s.io/v1', kind: 'MutatingWebhookConfiguration', scope: 'cluster'},
  {apiVersion: 'v1', kind: 'ConfigMap', scope: 'root'},
  {apiVersion: 'apps/v1', kind: 'Deployment', scope: 'root', labelSelector: 'app=istiod'},
]

export const NAMESPACE_KIND: InventoryKind = {apiVersion: 'v1', kind: 'Namespace', scope: 'cluster'}

/** Everything a namespace inventory lists, in the order it is listed. */
export const INVENTORY_KINDS: InventoryKind[] = [
  NAMESPACE_KIND,
  ...WORKLOAD_KINDS,
  ...ISTIO_CONFIG_KINDS,
  ...GATEWAY_API_KINDS,
  ...CONTROL_PLANE_KINDS,
]

/** "docker.io/istio/pilot:1.28.1-distroless" → "1.28" */
export function istioMinorFromImage(image: string | undefined): string | undefined {
  if (!image) return undefined
  const tag = image.slice(image.lastIndexOf(':') + 1)
  const match = /^v?(\d+)\.(\d+)/.exec(tag)
  return match ? `${match[1]}.${match[2]}` : undefined
}
