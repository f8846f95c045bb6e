// Waypoint bindings (istio.io/use-waypoint) and how targetRefs policies attach to waypoints.
import {finding} from '../findings/finding.js'
import type {ClassifyContext} from '../context.js'
import type {Finding, InventoryItem, KubeObject, ObjectRef, WorkloadItem} from '../model.js'
import type {PolicyTargetReference} from '../istio-types.js'
import {formatRef, groupOf} from '../refs.js'
import {isRetargetable} from '../retarget/objects.js'
import {optedOutServices, optedOutWhy, planTargets} from '../retarget/targets.js'
import {remoteNamespaceWaypoint} from '../namespace-waypoint.js'
import {isRecord} from '../json.js'
import {
  DRY_RUN_ANNOTATION,
  GATEWAY_API_GROUP,
  NETWORKING,
  USE_WAYPOINT_LABEL,
  USE_WAYPOINT_NAMESPACE_LABEL,
  WAYPOINT_CLASS,
} from '../vocab.js'
import type {HostTarget} from './hosts.js'
import {findObject, namespaceLabels, namespaceOf, objectsOfKind} from './objects.js'
import {type Classified, item, list, parseBool, reason, uniqSorted} from './results.js'
import {allServices, isProxyWorkload, matchingWorkloads} from './selection.js'

export interface WaypointBinding {
  namespace: string
  name: string
  /** Where the binding comes from (fleet-plan: an earlier wave of the fleet plan creates it). */
  via: 'service' | 'namespace' | 'fleet-plan'
}

/**
 * The waypoint a Service is bound to (DOMAIN §1.5): the Service's own istio.io/use-waypoint (value `none` = no
 * waypoint, no fallback), else its Namespace's. Readiness is not checked here.
 */
export function serviceWaypoint(ctx: ClassifyContext, namespace: string, service: string): WaypointBinding | undefined {
  const svc = findObject(ctx, '', 'Service', namespace, service)
  const svcLabels = svc?.metadata.labels ?? {}
  const own = svcLabels[USE_WAYPOINT_LABEL]
  if (own !== undefined) {
    if (own === 'none' || own === '') return undefined
    return {namespace: svcLabels[USE_WAYPOINT_NAMESPACE_LABEL] || namespace, name: own, via: 'service'}
  }
  const nsLabels = namespaceLabels(ctx, namespace) ?? {}
  const nsWaypoint = nsLabels[USE_WAYPOINT_LABEL]
  if (nsWaypoint === undefined || nsWaypoint === 'none' || nsWaypoint === '') return undefined
  return {namespace: nsLabels[USE_WAYPOINT_NAMESPACE_LABEL] || namespace, name: nsWaypoint, via: 'namespace'}
}

/** Services of the migrated namespace bound (by label) to the given waypoint. */
export function servicesBoundTo(ctx: ClassifyContext, waypointNamespace: string, waypointName: string): string[] {
  return allServices(ctx).filter((s) => {
    const b = serviceWaypoint(ctx, ctx.namespace, s)
    return b !== undefined && b.namespace === waypointNamespace && b.name === waypointName
  })
}

/** Services of the migrated namespace that will sit behind a waypoint: all of them when the plan deploys one, else those bound by label. */
export function servicesBehindWaypoints(ctx: ClassifyContext): string[] {
  if (ctx.waypointPlanned) return allServices(ctx)
  return allServices(ctx).filter((s) => serviceWaypoint(ctx, ctx.namespace, s) !== undefined)
}

export function isWaypointClassGateway(obj: KubeObject | undefined): boolean {
  return (
    obj !== undefined &&
    obj.kind === 'Gateway' &&
    groupOf(obj.apiVersion) === GATEWAY_API_GROUP &&
    obj.spec?.gatewayClassName === WAYPOINT_CLASS
  )
}

// --- targetRefs ----------------------------------------------------------------------------------

export interface TargetRefsAnalysis {
  /** At least one reference attaches the object to a waypoint (Service, ServiceEntry, waypoint Gateway, class istio-waypoint). */
  waypoint: boolean
  /** Services of the migrated namespace the references reach. */
  services: string[]
  reasons: string[]
}

/** The `targetRefs` (or deprecated `targetRef`) list of a policy spec. */
export function targetRefsOf(
  spec: {targetRef?: PolicyTargetReference; targetRefs?: PolicyTargetReference[]} | undefined,
): {path: string; ref: PolicyTargetReference}[] {
  const out: {path: string; ref: PolicyTargetReference}[] = []
  if (Array.isArray(spec?.targetRefs))
    spec!.targetRefs!.forEach((ref, i) => out.push({path: `spec.targetRefs[${i}]`, ref: ref ?? {}}))
  if (isRecord(spec?.targetRef)) out.push({path: 'spec.targetRef', ref: spec!.targetRef!})
  return out
}

/**
 * How waypoints attach a targetRefs policy (DOMAIN §3.0, policyattachment.go): Service and ServiceEntry in the
 * policy's namespace, a Gateway in the policy's namespace (a waypoint, or an ingress gateway), the GatewayClass
 * istio-waypoint from the root namespace. A targetRef naming another namespace never matches. Sidecars and
 * ztunnel ignore targetRefs policies.
 */
export function analyzeTargetRefs(obj: KubeObject, ctx: ClassifyContext): TargetRefsAnalysis {
  const policyNs = namespaceOf(obj, ctx)
  const out: TargetRefsAnalysis = {waypoint: false, services: [], reasons: []}
  const services = new Set<string>()
  for (const {path, ref} of targetRefsOf(obj.spec)) {
    const kind = ref.kind ?? ''
    const group = ref.group ?? ''
    const name = ref.name ?? ''
    if (ref.namespace && ref.namespace !== policyNs) {
      out.reasons.push(
        reason(
          `${path}.namespace`,
          `points at namespace ${ref.namespace}: a targetRef outside the policy's namespace never attaches`,
        ),
      )
      continue
    }
    if (kind === 'Service' && (group === '' || group === 'core')) {
      out.waypoint = true
      if (policyNs === ctx.namespace) services.add(name)
      const bound = policyNs === ctx.namespace ? serviceWaypoint(ctx, policyNs, name) : undefined
      out.reasons.push(
        reason(
          path,
          `attached to the waypoint of Service ${name}; enforced only by that waypoint (sidecars and ztunnel ignore targetRefs)` +
            (bound
              ? ` — bound to waypoint ${bound.namespace}/${bound.name}`
              : ctx.waypointPlanned
                ? ' — the plan binds it to a waypoint'
                : ' — the Service is not bound to a waypoint yet'),
        ),
      )
    } else if (kind === 'ServiceEntry' && group === NETWORKING) {
      out.waypoint = true
      out.reasons.push(
        reason(
          path,
          `attached to the (egress) waypoint of ServiceEntry ${name}; enforced only when the ServiceEntry is bound to a waypoint`,
        ),
      )
    } else if (kind === 'Gateway' && group === GATEWAY_API_GROUP) {
      const gw = findObject(ctx, GATEWAY_API_GROUP, 'Gateway', policyNs, name)
      if (gw && !isWaypointClassGateway(gw)) {
        out.reasons.push(
          reason(
            path,
            `attached to Gateway ${name} of class ${gw.spec?.gatewayClassName ?? '(none)'}, not a waypoint: applies to that gateway's own proxy`,
          ),
        )
        continue
      }
      out.waypoint = true
      for (const s of servicesBoundTo(ctx, policyNs, name)) services.add(s)
      if (policyNs === ctx.namespace && ctx.waypointPlanned && !gw) for (const s of allServices(ctx)) services.add(s)
      out.reasons.push(
        reason(
          path,
          gw
            ? `attached to waypoint ${policyNs}/${name}; enforced by the waypoint only`
            : `attached to Gateway ${name} (not in the snapshot; assumed to be a waypoint); enforced by that waypoint only`,
        ),
      )
    } else if (kind === 'GatewayClass' && group === GATEWAY_API_GROUP) {
      if (name !== WAYPOINT_CLASS) {
        out.reasons.push(
          reason(path, `attached to GatewayClass ${name}: applies to gateways of that class, not to waypoints`),
        )
      } else if (policyNs !== ctx.rootNamespace) {
        out.reasons.push(
          reason(
            path,
            `GatewayClass ${WAYPOINT_CLASS} is only honoured for policies in the root namespace ${ctx.rootNamespace} (status Invalid)`,
          ),
        )
      } else {
        out.waypoint = true
        for (const s of servicesBehindWaypoints(ctx)) services.add(s)
        out.reasons.push(
          reason(
            path,
            `attached to every ${WAYPOINT_CLASS} waypoint of the mesh, including the ones serving ${ctx.namespace}`,
          ),
        )
      }
    } else {
      out.reasons.push(reason(path, `targetRef kind ${group ? `${group}/` : ''}${kind} is not one waypoints attach to`))
    }
  }
  out.services = uniqSorted(services)
  return out
}

/** The waypoint an earlier wave of the fleet plan binds the Service to (not a Service that opts out with use-waypoint: none). */
function plannedWaypoint(ctx: ClassifyContext, namespace: string, service: string): WaypointBinding | undefined {
  if (namespace === ctx.namespace) return undefined
  ctx.waypointsAsked?.add(namespace)
  const name = ctx.earlierWaypoints?.[namespace]
  if (!name) return undefined
  // A cluster read of one namespace has no other namespace's Services: only a label seen opts one out.
  const svc = findObject(ctx, '', 'Service', namespace, service)
  if (svc?.metadata.labels?.[USE_WAYPOINT_LABEL] !== undefined) return undefined
  return {namespace, name, via: 'fleet-plan'}
}

/**
 * The waypoint that serves a destination host outside the migrated namespace: a Kubernetes Service's binding,
 * or a ServiceEntry (with that host) labelled istio.io/use-waypoint. `namespace` is the destination's namespace.
 */
export function destinationWaypoint(
  ctx: ClassifyContext,
  target: HostTarget,
): {waypoint: WaypointBinding; namespace: string} | undefined {
  if (target.serviceNamespace && target.serviceName) {
    const wp =
      serviceWaypoint(ctx, target.serviceNamespace, target.serviceName) ??
      plannedWaypoint(ctx, target.serviceNamespace, target.serviceName)
    return wp ? {waypoint: wp, namespace: target.serviceNamespace} : undefined
  }
  if (target.wildcard) return undefined
  for (const se of objectsOfKind(ctx, `${NETWORKING}/ServiceEntry`)) {
    const hosts = (list(se.spec?.hosts) ?? []).map((h) => h.toLowerCase())
    if (!hosts.includes(target.fqdn)) continue
    const labels = se.metadata.labels ?? {}
    const w = labels[USE_WAYPOINT_LABEL]
    if (!w || w === 'none') continue
    const ns = namespaceOf(se, ctx)
    return {waypoint: {namespace: labels[USE_WAYPOINT_NAMESPACE_LABEL] || ns, name: w, via: 'service'}, namespace: ns}
  }
  return undefined
}

/**
 * A policy attached by targetRefs is the waypoints' (sidecars and ztunnel ignore it): L7 when one of its targets is
 * enforced by a waypoint, unaffected otherwise; `note` adds what the kind says about itself on a waypoint.
 */
export function classifyByTargetRefs(
  obj: KubeObject,
  ctx: ClassifyContext,
  ref: ObjectRef,
  reasons: string[],
  note?: string,
): Classified {
  const t = analyzeTargetRefs(obj, ctx)
  reasons.push(...t.reasons)
  if (t.waypoint && note) reasons.push(note)
  return {
    item: item(ref, t.waypoint ? 'L7' : 'unaffected', 'keep', reasons, {scope: 'targetRefs', services: t.services}),
    findings: [],
  }
}

// --- Policies whose waypoint copy could never attach (issue 21 point 1, E9) -----------------------

const TELEMETRY_KIND = 'Telemetry'

/**
 * A policy of the namespace the plan would carry to the waypoint with a targetRefs copy (verdict L7, action
 * retarget) cannot be carried when that copy would never attach. Two reasons, checked in this order by the inventory
 * here and by src/planner/retarget/migrate.ts (which calls the same optedOutServices and planTargets, and blocks the
 * same policies without a copy):
 * - pods behind a Service labelled istio.io/use-waypoint=none: istiod binds no waypoint for it ("local override here
 *   opting out of waypoint", istio/istio pilot/pkg/serviceregistry/ambient/waypoints.go fetchWaypointForTarget),
 *   RetargetServiceOptedOut;
 * - no Service a waypoint serves in front of the selected pods (E9; a service waypoint only sees traffic addressed
 *   to a Service bound to it), RetargetNoService.
 * Such items become blockers (manual for a Telemetry or a dry-run policy, whose loss is a warning) with that reason.
 * `rewritable`: E22 policies stay at ztunnel rewritten and need no waypoint.
 */
export function uncarriableBlockers(
  ctx: ClassifyContext,
  classified: {items: InventoryItem[]; findings: Finding[]},
  rewritable: (item: InventoryItem) => boolean,
): {items: InventoryItem[]; findings: Finding[]} {
  const findings = [...classified.findings]
  const items = classified.items.map((i) => {
    if (i.action !== 'retarget' || i.verdict !== 'L7' || i.ref.namespace !== ctx.namespace) return i
    if (!isRetargetable(i.ref) || (i.scope !== 'workload' && i.scope !== 'namespace') || rewritable(i)) return i
    const obj = findObject(ctx, groupOf(i.ref.apiVersion), i.ref.kind, i.ref.namespace, i.ref.name)
    if (!obj) return i
    const matchLabels = obj.spec?.selector?.matchLabels
    const selected = matchingWorkloads(ctx, isRecord(matchLabels) ? (matchLabels as Record<string, string>) : undefined)
    const blocker = optedOutBlocker(ctx, i, selected) ?? noServiceBlocker(ctx, i, obj, selected)
    if (!blocker) return i
    findings.push(blocker.finding)
    return {...i, action: blocker.action, reasons: [...i.reasons, reason('spec', blocker.why)]}
  })
  return {items, findings}
}

interface UncarriableBlocker {
  action: 'blocker' | 'manual'
  why: string
  finding: Finding
}

function optedOutBlocker(
  ctx: ClassifyContext,
  i: InventoryItem,
  selected: WorkloadItem[],
): UncarriableBlocker | undefined {
  const optedOut = optedOutServices(
    ctx.services,
    uniqSorted(selected.filter((w) => !isProxyWorkload(w)).map((w) => w.ref.name)),
  )
  if (optedOut.length === 0) return undefined
  const why = optedOutWhy(optedOut)
  return {
    action: 'blocker',
    why,
    finding: finding(
      'RetargetServiceOptedOut',
      i.ref,
      {ref: formatRef(i.ref), why, optedOut: optedOut[0], namespace: ctx.namespace},
      {id: `retarget/${i.ref.kind}/${i.ref.namespace}/${i.ref.name}/service-opted-out`, severity: 'blocker'},
    ),
  }
}

/** E9: the copy would have no target (planTargets, as the plan computes it; the waypoint's name plays no part here). */
function noServiceBlocker(
  ctx: ClassifyContext,
  i: InventoryItem,
  obj: KubeObject,
  selected: WorkloadItem[],
): UncarriableBlocker | undefined {
  const nonProxy = selected.filter((w) => !isProxyWorkload(w))
  if (nonProxy.length === 0) return undefined
  const t = planTargets({
    namespaceWide: i.scope === 'namespace',
    selected: nonProxy,
    workloads: ctx.workloads,
    services: ctx.services,
    waypointName: 'waypoint',
    gatewayInNamespace: remoteNamespaceWaypoint(ctx.namespaceState.labels, ctx.namespace) === undefined,
  })
  if (t.via !== 'none') return undefined
  const warning = i.ref.kind === TELEMETRY_KIND || parseBool(obj.metadata.annotations?.[DRY_RUN_ANNOTATION]) === true
  return {
    action: warning ? 'manual' : 'blocker',
    why: t.noTarget!,
    finding: retargetNoServiceFinding(i.ref, t.noTarget!, warning ? 'warning' : 'blocker'),
  }
}

/** RetargetNoService: the inventory's, and the plan's for what only the plan carries (root-namespace DENY copies). */
export function retargetNoServiceFinding(
  ref: ObjectRef,
  why: string,
  severity: 'warning' | 'error' | 'blocker',
): Finding {
  return finding(
    'RetargetNoService',
    ref,
    {ref: formatRef(ref), why},
    {id: `no-service/${ref.kind}/${ref.namespace}/${ref.name}`, severity},
  )
}
