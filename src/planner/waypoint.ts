// Waypoint Gateway generation (DOMAIN §1.1, §1.4, §1.6, §1.8).
import type {KubeObject, NamespaceState} from './model.js'
import type {TrustDomain} from './mesh-config.js'
import {byCodePoint} from './order.js'
import {REVISION_LABEL, WAYPOINT_CLASS, WAYPOINT_FOR_LABEL} from './vocab.js'

export const WAYPOINT_FOR_VALUES = ['service', 'workload', 'all'] as const
export type WaypointFor = (typeof WAYPOINT_FOR_VALUES)[number]

// A Gateway name must be a DNS-1123 subdomain; istiod also names the Deployment/Service/
// ServiceAccount after it (DisableNameSuffix), and Service names must be DNS-1035 labels.
const DNS1035_LABEL = /^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$/

/** Why a waypoint name is unusable, or undefined when it is fine. */
export function waypointNameProblem(name: string): string | undefined {
  // istioctl: "invalid name provided for waypoint, 'none' is a reserved value" — `none` on
  // istio.io/use-waypoint means "no waypoint", so a waypoint called none could never be bound.
  if (name === 'none') return '\'none\' is reserved: istio.io/use-waypoint=none means "no waypoint"'
  if (!DNS1035_LABEL.test(name)) {
    return 'must be a lowercase DNS label (a-z, 0-9, "-", starting with a letter, at most 63 characters), because istiod names the waypoint Service after it'
  }
  return undefined
}

export interface WaypointOptions {
  name: string
  namespace: string
  waypointFor: WaypointFor
  /** istio.io/rev to stamp; see waypointRevision(). */
  revision?: string
}

/**
 * The revision that must own the waypoint. istiod's tag watcher falls back to the *namespace's*
 * istio.io/rev when the Gateway has none, so removing that label in the remove-injection step would
 * silently re-home or orphan an unlabelled waypoint: stamp it explicitly (DOMAIN §1.8, E1).
 */
export function waypointRevision(ns: NamespaceState): string | undefined {
  return ns.revision && ns.revision !== '' ? ns.revision : undefined
}

/**
 * The waypoint Gateway exactly as `istioctl waypoint generate --for <for> [-r <rev>] --name <name> -n <ns>`
 * produces it, except that istio.io/waypoint-for is always explicit.
 */
export function buildWaypoint(opts: WaypointOptions): KubeObject {
  const problem = waypointNameProblem(opts.name)
  if (problem) throw new Error(`invalid waypoint name "${opts.name}": ${problem}`)
  const labels: Record<string, string> = {}
  if (opts.revision) labels[REVISION_LABEL] = opts.revision
  labels[WAYPOINT_FOR_LABEL] = opts.waypointFor
  return {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'Gateway',
    metadata: {name: opts.name, namespace: opts.namespace, labels},
    spec: {
      gatewayClassName: WAYPOINT_CLASS,
      listeners: [{name: 'mesh', port: 15008, protocol: 'HBONE'}],
    },
  }
}

/** The waypoint's SPIFFE principal as AuthorizationPolicies name it (DOMAIN §1.3: SA = Gateway name). */
export function waypointPrincipal(namespace: string, name: string, trustDomain = 'cluster.local'): string {
  return `${trustDomain}/ns/${namespace}/sa/${name}`
}

/** Gateway annotation naming the ServiceAccount istiod deploys the gateway with (annotation.GatewayServiceAccount). */
export const GATEWAY_SERVICE_ACCOUNT_ANNOTATION = 'gateway.istio.io/service-account'
/** Label istiod puts on a gateway's Deployment and pods (label.IoK8sNetworkingGatewayGatewayName). */
export const GATEWAY_NAME_LABEL = 'gateway.networking.k8s.io/gateway-name'

/** Who the waypoint is to the destinations it forwards to: its ServiceAccount in the mesh's trust domain. */
export interface WaypointIdentity {
  namespace: string
  name: string
  serviceAccount: string
  /** Where the ServiceAccount was read, for the plan's reviewers. */
  serviceAccountFrom: string
  trustDomain: TrustDomain
  /** What policies admitting the waypoint name: its principal in the trust domain, then in each alias. */
  principals: string[]
}

/**
 * The waypoint's identity: istiod reads it from the waypoint's pods (`ServiceAccounts from instances of the
 * waypoint`, pilot/pkg/serviceregistry/ambient/waypoints.go gatewayToWaypointTransform), which run as the
 * ServiceAccount the Gateway's gateway.istio.io/service-account annotation names, else one named after the
 * Gateway (pilot/pkg/config/kube/gatewaycommon/deploymentcontroller.go, DisableNameSuffix for istio-waypoint).
 * So: a pod or Deployment of the waypoint in the snapshot, else the annotation, else the name.
 */
export function waypointIdentity(
  objects: KubeObject[],
  waypoint: {namespace: string; name: string},
  trustDomain: TrustDomain,
): WaypointIdentity {
  const ofWaypoint = (o: KubeObject) =>
    o.metadata.namespace === waypoint.namespace && o.metadata.labels?.[GATEWAY_NAME_LABEL] === waypoint.name
  const fromPod = objects
    .filter((o) => o.kind === 'Pod' && o.apiVersion === 'v1' && ofWaypoint(o))
    .sort((a, b) => byCodePoint(a.metadata.name, b.metadata.name))
    .find((o) => typeof o.spec?.serviceAccountName === 'string' && o.spec.serviceAccountName !== '')
  const fromDeployment = objects.find(
    (o) =>
      o.kind === 'Deployment' &&
      ofWaypoint(o) &&
      typeof o.spec?.template?.spec?.serviceAccountName === 'string' &&
      o.spec.template.spec.serviceAccountName !== '',
  )
  const gateway = objects.find(
    (o) => isWaypointGateway(o) && o.metadata.namespace === waypoint.namespace && o.metadata.name === waypoint.name,
  )
  const annotated = gateway?.metadata.annotations?.[GATEWAY_SERVICE_ACCOUNT_ANNOTATION]
  const [serviceAccount, serviceAccountFrom] = fromPod
    ? [fromPod.spec.serviceAccountName as string, `spec.serviceAccountName of its pod ${fromPod.metadata.name}`]
    : fromDeployment
      ? [
          fromDeployment.spec.template.spec.serviceAccountName as string,
          `spec.template.spec.serviceAccountName of its Deployment ${fromDeployment.metadata.name}`,
        ]
      : annotated
        ? [annotated, `the Gateway's ${GATEWAY_SERVICE_ACCOUNT_ANNOTATION} annotation`]
        : [waypoint.name, "the Gateway name (istiod names the waypoint's ServiceAccount after it)"]
  return {
    ...waypoint,
    serviceAccount,
    serviceAccountFrom,
    trustDomain,
    principals: [trustDomain.name, ...(trustDomain.aliases ?? [])].map((td) =>
      waypointPrincipal(waypoint.namespace, serviceAccount, td),
    ),
  }
}

/** Whether an object is a waypoint Gateway. */
export function isWaypointGateway(obj: KubeObject): boolean {
  return (
    obj.kind === 'Gateway' &&
    obj.apiVersion.startsWith('gateway.networking.k8s.io/') &&
    obj.spec?.gatewayClassName === WAYPOINT_CLASS
  )
}
