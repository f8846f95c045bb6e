// Where a waypoint copy attaches, and what that changes compared with the selector it replaces
// (DOMAIN §3.0, §3.1 "Re-targeting rules" non-equivalences (a)-(d), §7 E9).
import type {ServiceItem, WorkloadItem} from '../model.js'
import {groupBy} from '../json.js'
import type {TargetRef} from './types.js'
import {GATEWAY_API_GROUP, USE_WAYPOINT_LABEL} from '../vocab.js'
import {byCodePoint} from '../order.js'

// AuthorizationPolicy, RequestAuthentication, Telemetry and WasmPlugin allow at most 16 targetRefs (CRD maxItems).
export const MAX_TARGET_REFS = 16
const WAYPOINT_SERVICE_MANAGER = 'istio.io-mesh-controller'

export interface TargetPlan {
  /** Empty when no Service a waypoint serves is in front of the selected pods. */
  targetRefs: TargetRef[]
  via: 'services' | 'gateway' | 'none'
  /** Services whose traffic the copy applies to at the waypoint. */
  services: string[]
  /** Services the selector's pods sit behind (before the 16-entry limit turned them into the Gateway). */
  covering: string[]
  /** Targeted Services that also front pods the original did not select: the copy applies to those pods too. */
  partial: {service: string; uncovered: string[]}[]
  /** Selected workloads whose traffic can arrive addressed to their pods (never through a service waypoint). */
  podAddressed: {workload: string; why: string}[]
  /** Why there is no target (via `none`). */
  noTarget?: string
}

/** Services a service-type waypoint is bound for: a selector, a cluster IP, and not a waypoint's own Service. */
export function waypointServable(s: ServiceItem): boolean {
  if (s.headless || s.type === 'ExternalName') return false
  if (!s.selector || Object.keys(s.selector).length === 0) return false
  return s.labels?.['gateway.istio.io/managed'] !== WAYPOINT_SERVICE_MANAGER
}

/**
 * Whether a waypoint can ever serve the Service: servable, and not opted out with istio.io/use-waypoint=none —
 * "a local override here opting out of waypoint" (istio/istio pilot/pkg/serviceregistry/ambient/waypoints.go
 * fetchWaypointForTarget), which the namespace's label does not override.
 */
export function servedByWaypoint(s: ServiceItem): boolean {
  return waypointServable(s) && s.labels?.[USE_WAYPOINT_LABEL] !== 'none'
}

/** Servable Services in front of `workloads` (names) that opt out of every waypoint (istio.io/use-waypoint=none). */
export function optedOutServices(services: ServiceItem[], workloads: string[]): string[] {
  const wanted = new Set(workloads)
  return services
    .filter((s) => waypointServable(s) && !servedByWaypoint(s) && s.workloads.some((w) => wanted.has(w)))
    .map((s) => s.ref.name)
    .sort(byCodePoint)
}

/** Why a policy needing the waypoint cannot be carried for pods behind opted-out Services (inventory and plan say the same). */
export function optedOutWhy(services: string[]): string {
  const one = services.length === 1
  return `Service ${services.join(', ')} in front of its pods ${one ? 'is' : 'are'} labelled ${USE_WAYPOINT_LABEL}=none: no waypoint ever serves ${one ? 'it' : 'them'} (istio/istio waypoints.go: "local override here opting out of waypoint"; the namespace label does not override it), so a targetRefs copy of the policy never applies to traffic addressed to ${one ? 'it' : 'them'}`
}

function gatewayRef(name: string): TargetRef {
  return {group: GATEWAY_API_GROUP, kind: 'Gateway', name}
}

const byName = (a: ServiceItem, b: ServiceItem) => byCodePoint(a.ref.name, b.ref.name)

const SERVICE_INDEX = new WeakMap<ServiceItem[], ReturnType<typeof buildServiceIndex>>()

/** Per Services array, once: the servable ones by name, and which Services front each workload. */
function serviceIndex(services: ServiceItem[]): ReturnType<typeof buildServiceIndex> {
  let index = SERVICE_INDEX.get(services)
  if (!index) SERVICE_INDEX.set(services, (index = buildServiceIndex(services)))
  return index
}

function buildServiceIndex(services: ServiceItem[]) {
  const servable = services.filter(servedByWaypoint).sort(byName)
  const fronting = (list: ServiceItem[]) =>
    groupBy(
      list.flatMap((s) => [...new Set(s.workloads)].map((w) => ({w, s}))),
      (e) => e.w,
    )
  const servableByWorkload = new Map([...fronting(servable)].map(([w, entries]) => [w, entries.map((e) => e.s)]))
  const headlessByWorkload = new Map(
    [...fronting(services.filter((s) => s.headless))].map(([w, entries]) => [w, entries.map((e) => e.s)]),
  )
  return {servable, servableByWorkload, headlessByWorkload}
}

/**
 * Targets for the copy of an object applying to `selected` (all workloads for a namespace-wide object).
 * One `Service` entry per Service in front of the selected pods; more than 16 → the waypoint Gateway
 * (only when the waypoint lives in the policy's namespace: a Gateway targetRef must name a Gateway of the
 * policy's own namespace, DOMAIN §1.6). Namespace-wide objects target the Gateway (every Service bound to it).
 */
export function planTargets(opts: {
  namespaceWide: boolean
  selected: WorkloadItem[]
  workloads: WorkloadItem[]
  services: ServiceItem[]
  waypointName: string
  gatewayInNamespace: boolean
}): TargetPlan {
  const selectedNames = new Set(opts.selected.map((w) => w.ref.name))
  const {servable, servableByWorkload, headlessByWorkload} = serviceIndex(opts.services)
  const covering = opts.namespaceWide
    ? servable
    : [...new Set(opts.selected.flatMap((w) => servableByWorkload.get(w.ref.name) ?? []))].sort(byName)
  const coveringNames = covering.map((s) => s.ref.name)

  const podAddressed: {workload: string; why: string}[] = []
  for (const w of [...opts.selected].sort((a, b) => byCodePoint(a.ref.name, b.ref.name))) {
    const headless = (headlessByWorkload.get(w.ref.name) ?? []).map((s) => s.ref.name).sort()
    const behind = servableByWorkload.has(w.ref.name)
    if (headless.length > 0) podAddressed.push({workload: w.ref.name, why: `headless Service ${headless.join(', ')}`})
    else if (w.ref.kind === 'StatefulSet')
      podAddressed.push({workload: w.ref.name, why: 'StatefulSet (peers address its pods directly)'})
    else if (!behind) podAddressed.push({workload: w.ref.name, why: 'no Service with a cluster IP in front of it'})
  }

  const base = {covering: coveringNames, podAddressed}
  if (covering.length === 0) {
    return {
      ...base,
      targetRefs: [],
      via: 'none',
      services: [],
      partial: [],
      noTarget: 'no Service with a selector and a cluster IP is in front of the selected pods',
    }
  }
  const useGateway = opts.namespaceWide || covering.length > MAX_TARGET_REFS
  if (useGateway && !opts.gatewayInNamespace) {
    if (covering.length > MAX_TARGET_REFS) {
      return {
        ...base,
        targetRefs: [],
        via: 'none',
        services: [],
        partial: [],
        noTarget: `${covering.length} Services are in front of the selected pods (targetRefs allows ${MAX_TARGET_REFS}) and the waypoint is in another namespace, so its Gateway cannot be targeted`,
      }
    }
    // A waypoint of another namespace: Service targetRefs in the Service's namespace still attach (DOMAIN §1.6).
  }
  const targeted = useGateway && opts.gatewayInNamespace ? servable : covering
  const partial = targeted
    .map((s) => ({service: s.ref.name, uncovered: s.workloads.filter((w) => !selectedNames.has(w)).sort()}))
    .filter((p) => p.uncovered.length > 0)
  return {
    ...base,
    targetRefs:
      useGateway && opts.gatewayInNamespace
        ? [gatewayRef(opts.waypointName)]
        : covering.map((s) => ({group: '', kind: 'Service', name: s.ref.name})),
    via: useGateway && opts.gatewayInNamespace ? 'gateway' : 'services',
    services: targeted.map((s) => s.ref.name),
    partial,
  }
}
