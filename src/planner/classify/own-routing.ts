// Routing a namespace defines for its own Services, as the other namespaces of a fleet see it (issue 22 §5).
// A VirtualService or DestinationRule of namespace X whose every host is a Service of X, exported to X, is applied
// today by the sidecars of every namespace it is exported to; once a caller is ambient only X's waypoint applies it
// (DOMAIN §3.4, §3.5). So for every other namespace of a fleet in which X gets a waypoint of its own, it is the same
// fact: kept when X's waypoint is bound first. plan -A judges it once per object, here, instead of classifying it
// again for each of the hundreds of namespaces it is exported to, and leaves it out of their snapshots: it routes
// within X only and names none of their Services, so no classification of theirs looks at it (only their own
// waypoint namespace's DestinationRules are, and those stay). The rule is the classifiers' own
// (virtual-service.ts clientSideRouting → appliedByDestinationWaypoint, destination-rule.ts externalHostRule →
// destinationWaypointApplies, waypoints.ts plannedWaypoint), and test/unit/own-routing.test.ts holds them to it.
import type {DestinationRuleSpec, VirtualServiceSpec} from '../istio-types.js'
import {isRecord} from '../json.js'
import type {KubeObject} from '../model.js'
import {groupOf} from '../refs.js'
import {NETWORKING, USE_WAYPOINT_LABEL} from '../vocab.js'
import {trafficPolicyFields} from './destination-rule.js'
import {exportedTo, resolveHost, serviceOfHost} from './hosts.js'
import {hasLabels} from './selection.js'
import {list} from './results.js'
import {destinations, isMeshBound} from './virtual-service.js'

/** What a fleet knows of the namespace an object belongs to. */
export interface RoutingOwner {
  /** The labels of its Namespace object. */
  namespaceLabels: Record<string, string>
  /** The labels of its Service `name`, when it has that Service. */
  serviceLabels: (name: string) => Record<string, string> | undefined
}

/** Own-service routing, and what a caller namespace loses of it today. */
export interface OwnRouting {
  /** VirtualServices always (ztunnel ignores them); DestinationRules with traffic settings. */
  lostToday: boolean
  /** The Service FQDN a DestinationRule names (a caller whose VirtualServices use its subsets loses those too). */
  ruleHost?: string
}

/**
 * Whether the object is routing its namespace's planned waypoint will apply for every other namespace's ambient
 * callers; undefined when it is anything else (those are classified in each namespace as usual).
 */
export function ownServiceRouting(obj: KubeObject, owner: RoutingOwner): OwnRouting | undefined {
  const namespace = obj.metadata.namespace
  if (!namespace || groupOf(obj.apiVersion) !== NETWORKING || !isRecord(obj.spec)) return undefined
  // The waypoint a plan gives the namespace serves only Services that are bound to no other (plannedWaypoint).
  const nsBinding = owner.namespaceLabels[USE_WAYPOINT_LABEL]
  if (nsBinding !== undefined && nsBinding !== '' && nsBinding !== 'none') return undefined
  const ownService = (host: unknown) => {
    if (typeof host !== 'string') return undefined
    const fqdn = resolveHost(host, namespace)
    const service = serviceOfHost(fqdn)
    if (!service || service.namespace !== namespace) return undefined
    return owner.serviceLabels(service.name)?.[USE_WAYPOINT_LABEL] === undefined ? fqdn : undefined
  }
  // The planned waypoint is the namespace's own, so the object must be exported to it.
  if (!exportedTo(obj.spec.exportTo, namespace, namespace)) return undefined
  if (obj.kind === 'VirtualService') {
    const spec = obj.spec as VirtualServiceSpec
    const hosts = list(spec.hosts) ?? []
    if (!isMeshBound(spec) || hosts.length === 0 || !hosts.every((h) => ownService(h))) return undefined
    // Routing to its own namespace only: it uses no other namespace's DestinationRule subsets, so the other
    // namespaces' classifications never look at it.
    const inside = (d: {destination: {host?: unknown}}) =>
      serviceOfHost(resolveHost(String(d.destination.host ?? ''), namespace))?.namespace === namespace
    if (!destinations(spec).every(inside)) return undefined
    return {lostToday: true}
  }
  if (obj.kind === 'DestinationRule') {
    const spec = obj.spec as DestinationRuleSpec
    if (hasLabels(spec.workloadSelector?.matchLabels)) return undefined
    const host = ownService(spec.host)
    if (!host) return undefined
    const applied = [
      spec.trafficPolicy,
      ...(Array.isArray(spec.subsets) ? spec.subsets.map((s) => s?.trafficPolicy) : []),
    ].some((tp) => trafficPolicyFields(tp, '').applied.length > 0)
    return {lostToday: applied, ruleHost: host}
  }
  return undefined
}
