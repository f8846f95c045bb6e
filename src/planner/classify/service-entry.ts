// ServiceEntry, WorkloadEntry, WorkloadGroup (DOMAIN §3.7, §8).
// ServiceEntries are published to ztunnel as services (VIPs; DNS capture resolves them): keep. exportTo is
// ignored by ztunnel and waypoints (read as "*"). Wildcard hosts are not supported by ztunnel or waypoints,
// except DYNAMIC_DNS + MESH_EXTERNAL bound to an (egress) waypoint. VM workloads (a WorkloadEntry with a sidecar
// identity, WorkloadGroups) cannot join an ambient mesh: hard blocker; a WorkloadEntry without a proxy is an
// endpoint ztunnel reaches as sidecars did (issue 21 §6).
import {type FindingArgs, finding} from '../findings/finding.js'
import type {ClassifyContext} from '../context.js'
import type {Finding, KubeObject, ObjectRef} from '../model.js'
import type {ServiceEntrySpec} from '../istio-types.js'
import {formatRef} from '../refs.js'
import {
  type Classified,
  type KindClassifier,
  classifiedId,
  istioMinor,
  item,
  list,
  reason,
  workloadNames,
} from './results.js'
import {exportedTo} from './hosts.js'
import {hasLabels, labelsSubset, selectorCoverage} from './selection.js'
import {entryNames, fromWorkloadEntry, workloadEntryLabels} from '../workload-entries.js'
import {isRecord} from '../json.js'
import {itemRef, objectsOfKind, namespaceOf} from './objects.js'
import {NETWORKING, USE_WAYPOINT_LABEL, USE_WAYPOINT_NAMESPACE_LABEL} from '../vocab.js'

/** ServiceEntry label that opts out of istiod's IP auto-allocation (`"false"`). */
export const AUTOALLOCATE_LABEL = 'networking.istio.io/enable-autoallocate-ip'

/**
 * Whether ztunnel gets a VIP for one host of a ServiceEntry: only then can it recognise traffic to the host and
 * send it to the entry's waypoint. Explicit `spec.addresses` are used as they are; otherwise istiod auto-allocates
 * one (PILOT_ENABLE_IP_AUTOALLOCATE, on by default since Istio 1.25) unless the resolution is NONE, the entry opts
 * out with networking.istio.io/enable-autoallocate-ip=false, or the host is a wildcard without DYNAMIC_DNS.
 * Sources: istio/istio pilot/pkg/serviceregistry/ambient (ServiceEntry → workloadapi.Service: auto-assigned
 * addresses only when `Resolution != NONE`, wildcards only with DYNAMIC_DNS) and
 * pilot/pkg/serviceregistry/serviceentry (shouldV2AutoAllocateIPFromPieces); DOMAIN §3.7.
 */
export function serviceEntryVip(
  obj: KubeObject,
  host: string,
  ctx: Pick<ClassifyContext, 'istioVersion'>,
): {vip: boolean; why: string} {
  const spec: ServiceEntrySpec = isRecord(obj.spec) ? obj.spec : {}
  const resolution = spec.resolution ?? 'NONE'
  if ((list(spec.addresses) ?? []).length > 0)
    return {vip: true, why: `VIP ${list(spec.addresses)!.join(', ')} (spec.addresses)`}
  if (resolution === 'NONE')
    return {
      vip: false,
      why: 'no VIP: resolution NONE without spec.addresses is never auto-allocated one, so ztunnel cannot tell its traffic from traffic to any other IP (plain passthrough, never sent to a waypoint)',
    }
  if (obj.metadata.labels?.[AUTOALLOCATE_LABEL]?.toLowerCase() === 'false')
    return {
      vip: false,
      why: `no VIP: ${AUTOALLOCATE_LABEL}=false opts out of auto-allocation and spec.addresses is empty (plain passthrough, never sent to a waypoint)`,
    }
  if (host.startsWith('*') && resolution !== 'DYNAMIC_DNS')
    return {vip: false, why: 'no VIP: wildcard hosts are auto-allocated an address only with resolution DYNAMIC_DNS'}
  const minor = istioMinor(ctx)
  if (minor !== undefined && minor < 25)
    return {
      vip: false,
      why: `no VIP unless istiod runs with PILOT_ENABLE_IP_AUTOALLOCATE=true (off by default on Istio ${ctx.istioVersion}) and spec.addresses is empty`,
    }
  return {
    vip: true,
    why: 'VIP auto-allocated by istiod (PILOT_ENABLE_IP_AUTOALLOCATE, on by default since Istio 1.25; ambient DNS capture resolves the host to it)',
  }
}

/**
 * The ServiceEntry of the migrated namespace declaring an external host, and whether the namespace's own
 * waypoint will serve it once bind-waypoint labels the namespace istio.io/use-waypoint: the entry has no
 * istio.io/use-waypoint of its own (which would beat the namespace's) and ztunnel has a VIP for the host.
 * For such hosts the namespace waypoint is the egress waypoint (https://istio.io/latest/docs/ambient/usage/egress-gateway/).
 */
export function namespaceEgressEntry(
  fqdn: string,
  ctx: ClassifyContext,
): {entry: KubeObject; served: boolean; why: string} | undefined {
  const entry = objectsOfKind(ctx, `${NETWORKING}/ServiceEntry`).find(
    (se) =>
      namespaceOf(se, ctx) === ctx.namespace && (list(se.spec?.hosts) ?? []).some((h) => h.toLowerCase() === fqdn),
  )
  if (!entry) return undefined
  const own = entry.metadata.labels?.[USE_WAYPOINT_LABEL]
  const name = `ServiceEntry ${entry.metadata.name}`
  if (own === 'none')
    return {entry, served: false, why: `${name} is labelled ${USE_WAYPOINT_LABEL}=none: no waypoint serves it`}
  if (own) return undefined // bound to a waypoint of its own: destinationWaypoint() answers for it
  const vip = serviceEntryVip(entry, fqdn, ctx)
  if (!vip.vip) return {entry, served: false, why: `${name} has ${vip.why}`}
  return {
    entry,
    served: true,
    why: `${name} (${vip.why.split(' (')[0]}) is bound to the waypoint of ${ctx.namespace} by the namespace's ${USE_WAYPOINT_LABEL} (bind-waypoint): that waypoint is its egress waypoint`,
  }
}

export function classifyServiceEntry(obj: KubeObject, ctx: ClassifyContext): Classified {
  const ref = itemRef(obj, ctx)
  const spec: ServiceEntrySpec = isRecord(obj.spec) ? obj.spec : {}
  const local = ref.namespace === ctx.namespace
  const reasons: string[] = []
  const findings: Finding[] = []
  const hosts = list(spec.hosts) ?? []
  const wildcards = hosts.filter((h) => h.startsWith('*'))
  const location = spec.location ?? 'MESH_EXTERNAL'
  const resolution = spec.resolution ?? 'NONE'
  const labels = obj.metadata.labels ?? {}
  // Its own label beats the namespace's; without one, the namespace's istio.io/use-waypoint binds it (DOMAIN §1.5).
  const nsWaypoint = ctx.waypointPlanned
    ? 'the waypoint of the namespace'
    : ctx.namespaceState.useWaypoint && ctx.namespaceState.useWaypoint !== 'none'
      ? `${ctx.namespace}/${ctx.namespaceState.useWaypoint}`
      : undefined
  const own = labels[USE_WAYPOINT_LABEL]
  const waypoint =
    own && own !== 'none'
      ? `${labels[USE_WAYPOINT_NAMESPACE_LABEL] || ref.namespace}/${own}`
      : !own && local
        ? nsWaypoint
        : undefined
  const scope = local ? undefined : 'client-side'

  // Point 4 of issue 10: ztunnel only captures hosts it has a VIP for; say which, and why not.
  const vips = hosts.map((h) => ({host: h, ...serviceEntryVip(obj, h, ctx)}))
  const whys = [...new Set(vips.map((v) => v.why))]
  reasons.push(
    reason(
      'spec.hosts',
      `${hosts.join(', ') || '(none)'} (${location}, resolution ${resolution}): published to ztunnel as a service; ${whys.length <= 1 ? (whys[0] ?? 'no host') : vips.map((v) => `${v.host}: ${v.why}`).join('; ')}` +
        (local ? '' : `; defined in ${ref.namespace} and used by ${ctx.namespace}'s clients`),
    ),
  )
  const exportTo = list(spec.exportTo)
  if (exportTo && !exportTo.includes('*')) {
    reasons.push(
      reason(
        'spec.exportTo',
        `[${exportTo.join(', ')}] is ignored by ztunnel and waypoints (read as "*"): the entry becomes visible to every namespace`,
      ),
    )
  }
  if (hasLabels(spec.workloadSelector?.labels) && local) {
    const cov = selectorCoverage(ctx, spec.workloadSelector!.labels)
    const selected = [
      ...(cov.workloads.length > 0 ? [workloadNames(cov.workloads)] : []),
      ...(cov.entries.length > 0 ? [entryNames(cov.entries)] : []),
    ]
    reasons.push(
      reason(
        'spec.workloadSelector',
        `selects ${selected.join(', ') || 'no workload of the namespace (no pod, WorkloadEntry or WorkloadGroup)'}: endpoints are kept for ambient pods`,
      ),
    )
  }
  if (waypoint && own)
    reasons.push(
      reason(
        `metadata.labels[${USE_WAYPOINT_LABEL}]`,
        `bound to waypoint ${waypoint}: L7 (egress) policy and routes apply there`,
      ),
    )
  else if (waypoint) {
    const served = vips.filter((v) => v.vip).map((v) => v.host)
    reasons.push(
      reason(
        'metadata.labels',
        served.length > 0
          ? `no ${USE_WAYPOINT_LABEL} of its own: bound to ${waypoint} by the namespace's label, which serves ambient callers' traffic to ${served.join(', ')} as their egress waypoint (DestinationRules and targetRefs policies for the host apply there)`
          : `no ${USE_WAYPOINT_LABEL} of its own, so the namespace's label binds it to ${waypoint}, but without a VIP ztunnel never sends its traffic there`,
      ),
    )
  }

  if (wildcards.length > 0) {
    const supported = resolution === 'DYNAMIC_DNS' && location === 'MESH_EXTERNAL'
    if (supported && waypoint) {
      reasons.push(
        reason(
          'spec.hosts',
          `wildcard host(s) ${wildcards.join(', ')}: supported in ambient only as DYNAMIC_DNS MESH_EXTERNAL bound to a waypoint — which this entry is`,
        ),
      )
      return {item: item(ref, 'L7', 'keep', reasons, scope ? {scope} : {}), findings}
    }
    reasons.push(
      reason(
        'spec.hosts',
        `wildcard host(s) ${wildcards.join(', ')}: ztunnel and waypoints do not support wildcard hosts (status istio.io/WaypointMissing, NoWaypointForWildcardService); ${supported ? 'bind it to an egress waypoint' : 'needs resolution DYNAMIC_DNS, location MESH_EXTERNAL and an egress waypoint'} — until then ambient clients reach these hosts as plain passthrough TCP`,
      ),
    )
    findings.push(
      finding(
        'WildcardServiceEntryNeedsEgressWaypoint',
        ref,
        {ref: formatRef(ref), wildcards, namespace: ctx.namespace},
        {id: classifiedId('E11', ref), severity: 'error'},
      ),
    )
    return {item: item(ref, 'L7', 'lost-client-side', reasons, scope ? {scope} : {}), findings}
  }
  if (resolution === 'DYNAMIC_DNS') {
    reasons.push(
      reason(
        'spec.resolution',
        'DYNAMIC_DNS is supported in ambient only for MESH_EXTERNAL entries bound to a waypoint',
      ),
    )
    if (!(location === 'MESH_EXTERNAL' && waypoint))
      return {item: item(ref, 'L7', 'manual', reasons, scope ? {scope} : {}), findings}
  }
  return {item: item(ref, 'L4', 'keep', reasons, scope ? {scope} : {}), findings}
}

/** ServiceEntries of other namespaces that this namespace's clients see today (exportTo). */
function serviceEntryElsewhere(obj: KubeObject, ctx: ClassifyContext): boolean {
  const spec: ServiceEntrySpec = isRecord(obj.spec) ? obj.spec : {}
  return exportedTo(spec.exportTo, namespaceOf(obj, ctx), ctx.namespace)
}

export const serviceEntryClassifier: KindClassifier = {
  kinds: [`${NETWORKING}/ServiceEntry`],
  relevantElsewhere: serviceEntryElsewhere,
  classify: classifyServiceEntry,
}

/** ServiceEntries of the WorkloadEntry's namespace whose workloadSelector (`labels`: networking's WorkloadSelector) picks it. */
function selectingEntries(obj: KubeObject, ctx: ClassifyContext): KubeObject[] {
  const ns = namespaceOf(obj, ctx)
  const labels = workloadEntryLabels(obj)
  return objectsOfKind(ctx, `${NETWORKING}/ServiceEntry`).filter(
    (o) =>
      namespaceOf(o, ctx) === ns &&
      hasLabels(o.spec?.workloadSelector?.labels) &&
      labelsSubset(o.spec.workloadSelector.labels, labels),
  )
}

/**
 * Issue 21 §6: the VM blocker is for VMs with a sidecar. Whether a WorkloadEntry has one is what istiod derives its
 * TLS mode from (security.istio.io/tlsMode, else a serviceAccount: pilot/pkg/serviceregistry/serviceentry/conversion.go
 * getTLSModeFromWorkloadEntry). One without is an endpoint — of a MESH_EXTERNAL ServiceEntry typically — that
 * sidecars reach in plain TCP and ztunnel reaches the same way (no HBONE: pilot/pkg/serviceregistry/ambient/workloads.go
 * setTunnelProtocol), so ambient handles it.
 */
export function classifyWorkloadEntry(obj: KubeObject, ctx: ClassifyContext): Classified {
  const ref = itemRef(obj, ctx)
  const entry = fromWorkloadEntry(obj, ref.namespace!)
  const reasons: string[] = []
  const address = entry.address ?? '(no address)'
  const entries = selectingEntries(obj, ctx)
  const external = entries.filter((e) => (e.spec?.location ?? 'MESH_EXTERNAL') === 'MESH_EXTERNAL')
  const services = ctx.services.filter((s) => s.entryWorkloads?.includes(`WorkloadEntry/${ref.name}`))
  const of = [
    ...entries.map(
      (e) =>
        `${(e.spec?.location ?? 'MESH_EXTERNAL') === 'MESH_EXTERNAL' ? 'MESH_EXTERNAL' : 'MESH_INTERNAL'} ServiceEntry ${e.metadata.name}`,
    ),
    ...services.map((s) => `Service ${s.ref.name}`),
  ]
  if (!entry.sidecar) {
    reasons.push(
      reason(
        'spec.address',
        `${address}: ${entry.identity}${of.length > 0 ? `; endpoint of ${of.join(', ')}` : ''} — not a mesh workload: sidecars reach it in plain TCP today, and so does ztunnel (kept as a service endpoint)`,
      ),
    )
    return {item: item(ref, 'L4', 'keep', reasons), findings: []}
  }
  reasons.push(
    reason(
      'spec.address',
      `${address}: a non-Kubernetes (VM) mesh workload with a sidecar (${entry.identity}); VM workloads cannot join an ambient mesh`,
    ),
  )
  if (of.length > 0)
    reasons.push(
      reason(
        'spec.labels',
        `endpoint of ${of.join(', ')}${external.length > 0 ? ': a MESH_EXTERNAL entry does not make a VM with a sidecar an external endpoint' : ''}`,
      ),
    )
  return vmBlocker(ref, reasons, {variant: 'workloadEntry', object: formatRef(ref), address})
}

/** VM workloads cannot join an ambient mesh: the object is a blocker, with the finding that says so. */
function vmBlocker(ref: ObjectRef, reasons: string[], args: FindingArgs<'VmWorkloadUnsupported'>): Classified {
  return {
    item: item(ref, 'blocker', 'blocker', reasons),
    findings: [finding('VmWorkloadUnsupported', ref, args, {id: classifiedId('vm', ref)})],
  }
}

export function classifyWorkloadGroup(obj: KubeObject, ctx: ClassifyContext): Classified {
  const ref = itemRef(obj, ctx)
  const reasons = [
    reason(
      'spec.template',
      'template for VM auto-registration (WorkloadEntries are created from it); VM workloads cannot join an ambient mesh',
    ),
  ]
  return vmBlocker(ref, reasons, {
    variant: 'workloadGroup',
    object: formatRef(ref),
    namespace: ref.namespace ?? ctx.namespace,
  })
}

export const workloadEntryClassifier: KindClassifier = {
  kinds: [`${NETWORKING}/WorkloadEntry`],
  relevantElsewhere: () => false,
  classify: classifyWorkloadEntry,
}

export const workloadGroupClassifier: KindClassifier = {
  kinds: [`${NETWORKING}/WorkloadGroup`],
  relevantElsewhere: () => false,
  classify: classifyWorkloadGroup,
}
