// istiod's waypoint handling, the pure parts: which revision owns a waypoint Gateway (DOMAIN §1.8),
// what it deploys for it (§1.3), its status (§1.7), and which waypoint a Service binds to with the
// istio.io/WaypointBound condition it gets (§1.4, §1.5).
import type {KubeObject, OwnerReference} from '../../../../src/planner/model.js'
import {selectorMatches, type LabelSelector} from '../../../../src/planner/namespace.js'
import {isWaypointGateway} from '../../../../src/planner/waypoint.js'
import type {Condition} from '../meta.js'
import type {InjectorSettings} from './settings.js'
import {REVISION_LABEL, USE_WAYPOINT_LABEL, WAYPOINT_FOR_LABEL} from '../../../../src/planner/vocab.js'

export {isWaypointGateway}

export const WAYPOINT_CONTROLLER_NAME = 'istio.io/mesh-controller'
export const MANAGED_LABEL = 'gateway.istio.io/managed'
export const MANAGED_VALUE = 'istio.io-mesh-controller'
export const GATEWAY_NAME_LABEL = 'gateway.networking.k8s.io/gateway-name'
export const GATEWAY_CLASS_LABEL = 'gateway.networking.k8s.io/gateway-class-name'
export const USE_WAYPOINT_NAMESPACE_LABEL = 'istio.io/use-waypoint-namespace'
export const WAYPOINT_BOUND = 'istio.io/WaypointBound'
/** Field manager istiod writes the generated objects with. */
export const GATEWAY_FIELD_MANAGER = 'istio.io/gateway-controller'

// ---------------------------------------------------------------------------------------------
// Ownership (tag_watcher.IsMine)

/**
 * The revision that manages the Gateway: its own istio.io/rev label, else its namespace's; a tag is
 * resolved to its revision; neither set → the "default" tag's revision, else "default".
 */
export function gatewayOwnerRevision(
  gateway: KubeObject,
  namespace: KubeObject | undefined,
  tags: Record<string, string>,
): string {
  const value = gateway.metadata.labels?.[REVISION_LABEL] ?? namespace?.metadata.labels?.[REVISION_LABEL]
  if (value) return tags[value] ?? value
  return tags.default ?? 'default'
}

// ---------------------------------------------------------------------------------------------
// Generated objects

export interface WaypointObjects {
  serviceAccount: KubeObject
  deployment: KubeObject
  service: KubeObject
}

function ownerReference(gateway: KubeObject): OwnerReference {
  return {apiVersion: gateway.apiVersion, kind: 'Gateway', name: gateway.metadata.name, uid: gateway.metadata.uid!}
}

/** The ServiceAccount, Deployment and Service istiod deploys for a waypoint (waypoint.yaml template). */
export function renderWaypoint(
  gateway: KubeObject,
  revision: string,
  settings: InjectorSettings,
  clusterDomain: string,
): WaypointObjects {
  const name = gateway.metadata.name
  const namespace = gateway.metadata.namespace!
  const labels: Record<string, string> = {
    // The Gateway's labels (or spec.infrastructure.labels) propagate as "infrastructure" labels.
    ...(gateway.spec?.infrastructure?.labels ?? gateway.metadata.labels ?? {}),
    [MANAGED_LABEL]: MANAGED_VALUE,
    [GATEWAY_CLASS_LABEL]: 'istio-waypoint',
    [GATEWAY_NAME_LABEL]: name,
  }
  const metadata = (extra: Record<string, unknown> = {}) => ({
    name,
    namespace,
    labels,
    ownerReferences: [ownerReference(gateway)],
    ...extra,
  })
  const podLabels: Record<string, string> = {
    ...labels,
    'istio.io/dataplane-mode': 'none',
    'service.istio.io/canonical-name': name,
    'service.istio.io/canonical-revision': 'latest',
    'sidecar.istio.io/inject': 'false',
  }
  const serviceAccount: KubeObject = {apiVersion: 'v1', kind: 'ServiceAccount', metadata: metadata()}
  const deployment: KubeObject = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: metadata(),
    spec: {
      selector: {matchLabels: {[GATEWAY_NAME_LABEL]: name}},
      template: {
        metadata: {
          annotations: {
            'istio.io/rev': revision,
            'prometheus.io/path': '/stats/prometheus',
            'prometheus.io/port': '15020',
            'prometheus.io/scrape': 'true',
          },
          labels: podLabels,
        },
        spec: {
          serviceAccountName: name,
          terminationGracePeriodSeconds: 2,
          containers: [
            {
              name: 'istio-proxy',
              image: settings.proxyImage,
              args: [
                'proxy',
                'waypoint',
                '--domain',
                `$(POD_NAMESPACE).svc.${clusterDomain}`,
                '--serviceCluster',
                `${name}.$(POD_NAMESPACE)`,
              ],
              env: [
                {name: 'ISTIO_META_SERVICE_ACCOUNT', valueFrom: {fieldRef: {fieldPath: 'spec.serviceAccountName'}}},
                {name: 'CA_ADDR', value: settings.discoveryAddress},
                {name: 'ISTIO_META_CLUSTER_ID', value: 'Kubernetes'},
                {name: 'ISTIO_META_WORKLOAD_NAME', value: name},
                {
                  name: 'ISTIO_META_OWNER',
                  value: `kubernetes://apis/apps/v1/namespaces/${namespace}/deployments/${name}`,
                },
                {name: 'TRUST_DOMAIN', value: settings.trustDomain},
              ],
              ports: [
                {containerPort: 15020, name: 'metrics', protocol: 'TCP'},
                {containerPort: 15021, name: 'status-port', protocol: 'TCP'},
                {containerPort: 15090, name: 'http-envoy-prom', protocol: 'TCP'},
              ],
              readinessProbe: {
                failureThreshold: 4,
                httpGet: {path: '/healthz/ready', port: 15021, scheme: 'HTTP'},
                periodSeconds: 15,
                successThreshold: 1,
                timeoutSeconds: 1,
              },
            },
          ],
        },
      },
    },
  }
  const service: KubeObject = {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: metadata({annotations: {'networking.istio.io/traffic-distribution': 'PreferClose'}}),
    spec: {
      type: 'ClusterIP',
      selector: {[GATEWAY_NAME_LABEL]: name},
      ports: [
        {name: 'status-port', port: 15021, protocol: 'TCP', appProtocol: 'tcp'},
        {name: 'mesh', port: 15008, protocol: 'TCP', appProtocol: 'all'},
      ],
    },
  }
  return {serviceAccount, deployment, service}
}

// ---------------------------------------------------------------------------------------------
// Gateway status

export function waypointHostname(gateway: KubeObject, clusterDomain: string): string {
  return `${gateway.metadata.name}.${gateway.metadata.namespace}.svc.${clusterDomain}`
}

/** A waypoint must have exactly one listener, HBONE on 15008 (istiod's check). */
export function listenerProblem(gateway: KubeObject): string | undefined {
  const listeners: {port?: number; protocol?: string}[] = gateway.spec?.listeners ?? []
  const ok = listeners.some((l) => l.port === 15008 && l.protocol === 'HBONE')
  return ok ? undefined : 'Expected a single listener on port 15008 with protocol "HBONE"'
}

export type WaypointPhase = {ready: true; clusterIP: string} | {ready: false; reason: string; message: string}

/** Gateway status as istiod writes it for a waypoint it manages (timestamps filled by the caller). */
export function waypointStatus(
  gateway: KubeObject,
  phase: WaypointPhase,
  clusterDomain: string,
): {conditions: Condition[]; addresses?: {type: string; value: string}[]; listeners: unknown[]} {
  const generation = gateway.metadata.generation
  const hostname = waypointHostname(gateway, clusterDomain)
  const gen = generation === undefined ? {} : {observedGeneration: generation}
  const programmed: Condition = phase.ready
    ? {
        type: 'Programmed',
        status: 'True',
        reason: 'Programmed',
        message: `Resource programmed, assigned to service(s) ${hostname}:15008`,
        ...gen,
      }
    : {type: 'Programmed', status: 'False', reason: phase.reason, message: phase.message, ...gen}
  const listenerIssue = listenerProblem(gateway)
  const listeners = ((gateway.spec?.listeners ?? []) as {name: string; port?: number; protocol?: string}[]).map((l) => {
    const accepted = l.port === 15008 && l.protocol === 'HBONE'
    return {
      name: l.name,
      attachedRoutes: 0,
      supportedKinds: [],
      conditions: [
        accepted
          ? {type: 'Accepted', status: 'True', reason: 'Accepted', message: 'No errors found', ...gen}
          : {
              type: 'Accepted',
              status: 'False',
              reason: 'UnsupportedProtocol',
              message: listenerIssue ?? 'Unsupported listener',
              ...gen,
            },
        {type: 'Conflicted', status: 'False', reason: 'NoConflicts', message: 'No errors found', ...gen},
        {type: 'Programmed', status: 'True', reason: 'Programmed', message: 'No errors found', ...gen},
        {type: 'ResolvedRefs', status: 'True', reason: 'ResolvedRefs', message: 'No errors found', ...gen},
      ],
    }
  })
  return {
    conditions: [
      {type: 'Accepted', status: 'True', reason: 'Accepted', message: 'Resource accepted', ...gen},
      programmed,
      {type: 'ResolvedRefs', status: 'True', reason: 'ResolvedRefs', message: 'All references resolved', ...gen},
    ],
    ...(phase.ready
      ? {
          addresses: [
            {type: 'IPAddress', value: phase.clusterIP},
            {type: 'Hostname', value: hostname},
          ],
        }
      : {}),
    listeners,
  }
}

/** The default failure message istiod uses for a reason. */
export function failureMessage(reason: string, gateway: KubeObject, clusterDomain: string): string {
  const hostname = waypointHostname(gateway, clusterDomain)
  switch (reason) {
    case 'AddressNotUsable':
      return `Failed to assign to any requested addresses: hostname "${hostname}" not found`
    case 'AddressNotAssigned':
      return `Failed to assign to any requested addresses: no address assigned to service "${hostname}"`
    case 'UnsupportedAddress':
      return 'Only Hostname and IPAddress address types are supported'
    default:
      return `Waypoint ${gateway.metadata.namespace}/${gateway.metadata.name} is not programmed (${reason})`
  }
}

// ---------------------------------------------------------------------------------------------
// Binding Services to waypoints (waypoints.go fetchWaypointForTarget)

/** The effective istio.io/waypoint-for: the Gateway's label, else its class's, else "service". */
export function waypointTrafficType(gateway: KubeObject, gatewayClass: KubeObject | undefined): string {
  return (
    gateway.metadata.labels?.[WAYPOINT_FOR_LABEL] ?? gatewayClass?.metadata.labels?.[WAYPOINT_FOR_LABEL] ?? 'service'
  )
}

/** Whether the waypoint's HBONE listener admits routes/attachments from `namespace` (unset = Same). */
export function allowsAttachmentFrom(
  gateway: KubeObject,
  namespace: KubeObject | undefined,
  namespaceName: string,
): boolean {
  const listeners: {
    port?: number
    protocol?: string
    allowedRoutes?: {namespaces?: {from?: string; selector?: LabelSelector}}
  }[] = gateway.spec?.listeners ?? []
  const hbone = listeners.find((l) => l.port === 15008 && l.protocol === 'HBONE')
  const from = hbone?.allowedRoutes?.namespaces?.from ?? 'Same'
  if (from === 'All') return true
  if (from === 'Selector')
    return selectorMatches(hbone?.allowedRoutes?.namespaces?.selector, {
      'kubernetes.io/metadata.name': namespaceName,
      ...(namespace?.metadata.labels ?? {}),
    })
  return gateway.metadata.namespace === namespaceName
}

export interface WaypointBinding {
  waypoint: {namespace: string; name: string}
  condition: {status: 'True' | 'False'; reason: string; message: string}
}

/**
 * The waypoint a Service binds to and the WaypointBound condition it gets, or undefined when it is
 * not bound at all (no label, `none`, or the Service is itself a waypoint): the Service's own
 * istio.io/use-waypoint wins over the namespace's, without fallback when its waypoint is unusable.
 */
export function serviceWaypointBinding(
  service: KubeObject,
  namespace: KubeObject | undefined,
  lookup: {
    gateway(namespace: string, name: string): KubeObject | undefined
    gatewayClass(name: string): KubeObject | undefined
    namespace(name: string): KubeObject | undefined
  },
): WaypointBinding | undefined {
  const svcLabels = service.metadata.labels ?? {}
  if (svcLabels[MANAGED_LABEL] === MANAGED_VALUE) return undefined
  const nsName = service.metadata.namespace!
  const source = svcLabels[USE_WAYPOINT_LABEL] !== undefined ? svcLabels : (namespace?.metadata.labels ?? {})
  const value = source[USE_WAYPOINT_LABEL]
  if (value === undefined || value === '' || value === 'none') return undefined
  const waypoint = {namespace: source[USE_WAYPOINT_NAMESPACE_LABEL] || nsName, name: value}
  const ref = `${waypoint.namespace}/${waypoint.name}`
  const gateway = lookup.gateway(waypoint.namespace, waypoint.name)
  const notReady = {
    waypoint,
    condition: {status: 'False' as const, reason: 'WaypointIsNotReady', message: `waypoint "${ref}" is not ready`},
  }
  if (!gateway || !isWaypointGateway(gateway)) return notReady
  const addresses: unknown[] = gateway.status?.addresses ?? []
  if (addresses.length === 0) return notReady
  if (!allowsAttachmentFrom(gateway, lookup.namespace(nsName), nsName)) {
    return {
      waypoint,
      condition: {
        status: 'False',
        reason: 'AttachmentDenied',
        message: `we are not permitted to attach to waypoint "${ref}" (missing allowedRoutes?)`,
      },
    }
  }
  const traffic = waypointTrafficType(gateway, lookup.gatewayClass(gateway.spec?.gatewayClassName))
  if (traffic !== 'service' && traffic !== 'all') {
    return {
      waypoint,
      condition: {
        status: 'False',
        reason: 'UnsupportedTrafficType',
        message: `attempting to bind to traffic type "service" which the waypoint "${ref}" does not support`,
      },
    }
  }
  return {
    waypoint,
    condition: {status: 'True', reason: 'WaypointAccepted', message: `Successfully attached to waypoint ${ref}`},
  }
}
