// The waypoint a plan works with when the namespace is bound already to a waypoint of another namespace, the
// identity every created policy names it by, and the trust domain that identity is in (issue 21 points 2 and 8).
// Pure.
import {finding} from './findings/finding.js'
import {isRecord} from './json.js'
import type {TrustDomain} from './mesh-config.js'
import type {Finding, KubeObject, SourceSnapshot} from './model.js'
import {formatRef, refOf} from './refs.js'
import {matchesLabelSelector} from './classify/selection.js'
import {MANAGED_BY_LABEL} from './plan-types.js'
import {USE_WAYPOINT_LABEL, USE_WAYPOINT_NAMESPACE_LABEL, WAYPOINT_FOR_LABEL} from './vocab.js'
import {isWaypointGateway, type WaypointIdentity, waypointNameProblem} from './waypoint.js'

/** A Kubernetes namespace name (DNS-1123 label). */
const NAMESPACE_NAME = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/

/**
 * The waypoint of another namespace the namespace's own labels bind it to (istio.io/use-waypoint with
 * istio.io/use-waypoint-namespace, GetUseWaypoint in pilot/pkg/serviceregistry/ambient/waypoints.go). The plan
 * then binds nothing new: its Services reach that waypoint already.
 */
export function remoteNamespaceWaypoint(
  labels: Record<string, string>,
  namespace: string,
): {namespace: string; name: string} | undefined {
  const name = labels[USE_WAYPOINT_LABEL]
  const waypointNs = labels[USE_WAYPOINT_NAMESPACE_LABEL]
  if (!name || name === 'none' || !waypointNs || waypointNs === namespace) return undefined
  if (waypointNameProblem(name) !== undefined || !NAMESPACE_NAME.test(waypointNs)) return undefined
  return {namespace: waypointNs, name}
}

/** The waypoint Gateway of the snapshot, if it is there. */
export function findWaypointGateway(
  objects: KubeObject[],
  waypoint: {namespace: string; name: string},
): KubeObject | undefined {
  return objects.find(
    (o) => isWaypointGateway(o) && o.metadata.namespace === waypoint.namespace && o.metadata.name === waypoint.name,
  )
}

/** The traffic type istiod gives the waypoint: its own istio.io/waypoint-for, else its class's, else service (waypoints.go). */
export function effectiveWaypointFor(gateway: KubeObject, objects: KubeObject[]): {value: string; fromClass?: string} {
  const own = gateway.metadata.labels?.[WAYPOINT_FOR_LABEL]
  if (own !== undefined) return {value: own}
  const klass = objects.find(
    (o) =>
      o.kind === 'GatewayClass' &&
      o.apiVersion.startsWith('gateway.networking.k8s.io/') &&
      o.metadata.name === gateway.spec?.gatewayClassName,
  )
  const fromClass = klass?.metadata.labels?.[WAYPOINT_FOR_LABEL]
  return fromClass !== undefined ? {value: fromClass, fromClass: klass!.metadata.name} : {value: 'service'}
}

/**
 * Whether the waypoint admits Services of `namespace`: the allowedRoutes of its HBONE listener on 15008 (no such
 * listener, or no allowedRoutes: Same), as AllowsAttachmentFromNamespace and makeAllowedRoutes (waypoints.go) read it.
 */
export function admitsNamespace(gateway: KubeObject, namespace: string, nsLabels: Record<string, string>): boolean {
  const listeners: unknown[] = Array.isArray(gateway.spec?.listeners) ? gateway.spec.listeners : []
  const hbone = listeners.filter(isRecord).find((l) => l.protocol === 'HBONE' && Number(l.port) === 15008)
  const allowed =
    isRecord(hbone?.allowedRoutes) && isRecord(hbone.allowedRoutes.namespaces) ? hbone.allowedRoutes.namespaces : {}
  switch (allowed.from) {
    case 'All':
      return true
    case 'Selector':
      return isRecord(allowed.selector) && matchesLabelSelector(allowed.selector, nsLabels)
    default:
      return gateway.metadata.namespace === namespace
  }
}

/** What the plan says about a waypoint of another namespace it relies on: who owns it, and whether it can serve. */
export function remoteWaypointFindings(
  snapshot: SourceSnapshot,
  identity: WaypointIdentity,
  nsLabels: Record<string, string>,
): Finding[] {
  const ns = snapshot.namespace
  const wp = `${identity.namespace}/${identity.name}`
  const id = (topic: string) => `remote-waypoint/${topic}/${ns}/${identity.namespace}/${identity.name}`
  const gateway = findWaypointGateway(snapshot.objects, identity)
  const findings: Finding[] = []
  const manager =
    gateway?.metadata.labels?.[MANAGED_BY_LABEL] ?? gateway?.metadata.labels?.['app.kubernetes.io/managed-by']
  const owner = {
    ns,
    waypoint: wp,
    name: identity.name,
    namespace: identity.namespace,
    principals: identity.principals,
    serviceAccountFrom: identity.serviceAccountFrom,
  }
  findings.push(
    gateway
      ? finding(
          'WaypointInAnotherNamespace',
          refOf(gateway),
          manager ? {...owner, variant: 'readManaged', manager} : {...owner, variant: 'read'},
          {id: id('owner'), severity: 'info'},
        )
      : finding(
          'WaypointInAnotherNamespace',
          undefined,
          {...owner, variant: 'manifests' in snapshot.target ? 'notInManifests' : 'notInCluster'},
          {id: id('owner'), severity: 'warning'},
        ),
  )
  if (!gateway) return findings
  const waypointFor = effectiveWaypointFor(gateway, snapshot.objects)
  if (waypointFor.value !== 'service' && waypointFor.value !== 'all') {
    findings.push(
      finding(
        'ExistingWaypointTrafficType',
        refOf(gateway),
        {
          variant: 'remoteWaypointFindings',
          wp,
          value: waypointFor.value,
          detail: waypointFor.fromClass ? ` (from GatewayClass ${waypointFor.fromClass})` : '',
          namespace: identity.namespace,
          ns,
        },
        {id: id('waypoint-for'), severity: 'blocker'},
      ),
    )
  }
  if (!admitsNamespace(gateway, ns, nsLabels)) {
    findings.push(
      finding(
        'WaypointAttachmentDenied',
        refOf(gateway),
        {wp, ns, namespace: identity.namespace, refOf: formatRef(refOf(gateway))},
        {id: id('attachment'), severity: 'blocker'},
      ),
    )
  }
  return findings
}

/** Trust-domain findings: a mesh ConfigMap that could not be read, or a trust domain nobody told the plan. */
export function trustDomainFindings(
  snapshot: SourceSnapshot,
  trustDomain: TrustDomain & {problem?: string},
): Finding[] {
  if (trustDomain.source !== 'default') return []
  const cluster = !('manifests' in snapshot.target)
  const at = {
    id: `trust-domain/${snapshot.namespace}`,
    severity: trustDomain.problem || cluster ? 'warning' : 'info',
  } as const
  const {problem} = trustDomain
  const args = problem
    ? ({variant: cluster ? 'unusableInCluster' : 'unusableInManifests', problem} as const)
    : cluster
      ? ({variant: 'noMeshConfigInCluster', rootNamespace: snapshot.rootNamespace} as const)
      : ({variant: 'noMeshConfigInManifests'} as const)
  return [finding('TrustDomainAssumed', undefined, args, at)]
}
