// VirtualService (DOMAIN §3.4, §7 E11/E12/E26, §8).
// ztunnel ignores VirtualServices: ambient clients lose all client-side routing. A waypoint applies a mesh
// VirtualService only when it lives in the Service's (or the waypoint's) namespace, is exported to the
// waypoint's namespace and names the Service in `hosts` (Alpha; HTTPRoute preferred). On waypoints
// `match[].sourceLabels` matches are dropped and `match[].sourceNamespace` is compared with the waypoint's
// namespace. Gateway-only VirtualServices keep working on their gateways.
import {type FindingArgs, finding} from '../findings/finding.js'
import type {ClassifyContext} from '../context.js'
import type {Finding, KubeObject, ObjectRef} from '../model.js'
import type {Destination, HttpRoute, VirtualServiceSpec} from '../istio-types.js'
import {formatRef} from '../refs.js'
import {type Classified, type KindClassifier, classifiedId, item, list, reason, uniqSorted} from './results.js'
import {type HostTarget, exportedTo, hostTarget} from './hosts.js'
import {destinationWaypoint} from './waypoints.js'
import {isRecord} from '../json.js'
import {itemRef, objectsOfKind, namespaceOf} from './objects.js'
import {namespaceEgressEntry} from './service-entry.js'
import {GATEWAY_API_GROUP, NETWORKING, USE_WAYPOINT_NAMESPACE_LABEL} from '../vocab.js'

/** Bound to the mesh (client sidecars, waypoints): `gateways` absent/empty or containing `mesh`. */
export function isMeshBound(spec: VirtualServiceSpec): boolean {
  const gateways = list(spec.gateways)
  return !gateways || gateways.includes('mesh')
}

/** Every route destination (and mirror) of a VirtualService, with its JSON path. */
export function destinations(spec: VirtualServiceSpec): {path: string; destination: Destination}[] {
  const out: {path: string; destination: Destination}[] = []
  for (const section of ['http', 'tcp', 'tls'] as const) {
    const routes = Array.isArray(spec[section]) ? spec[section]! : []
    routes.forEach((r, i) => {
      const rr = (r ?? {}) as HttpRoute
      ;(Array.isArray(rr.route) ? rr.route : []).forEach((d, k) => {
        if (isRecord(d?.destination))
          out.push({path: `spec.${section}[${i}].route[${k}].destination`, destination: d.destination})
      })
      if (section === 'http' && isRecord(rr.mirror)) out.push({path: `spec.http[${i}].mirror`, destination: rr.mirror})
    })
  }
  return out
}

/** One reason per routing feature, with its exact path (what a waypoint or an HTTPRoute must reproduce). */
export function featureReasons(spec: VirtualServiceSpec): {reasons: string[]; sourceLabels: string[]} {
  const reasons: string[] = []
  const sourceLabels: string[] = []
  const http = Array.isArray(spec.http) ? spec.http : []
  http.forEach((route, i) => {
    const r = (route ?? {}) as HttpRoute
    const p = `spec.http[${i}]`
    ;(Array.isArray(r.match) ? r.match : []).forEach((m, j) => {
      const mp = `${p}.match[${j}]`
      if (!isRecord(m)) return
      if (m.sourceLabels !== undefined) {
        sourceLabels.push(`${mp}.sourceLabels`)
        reasons.push(
          reason(
            `${mp}.sourceLabels`,
            'source label match: dropped on waypoints ("Source label matching is not supported in ambient mode", #51565); no HTTPRoute equivalent',
          ),
        )
      }
      if (m.sourceNamespace !== undefined)
        reasons.push(
          reason(
            `${mp}.sourceNamespace`,
            `source namespace match (${m.sourceNamespace}): on a waypoint it is compared with the waypoint's namespace, not the caller's`,
          ),
        )
      if (m.gateways !== undefined) {
        const gws = list(m.gateways) ?? []
        reasons.push(
          reason(
            `${mp}.gateways`,
            gws.includes('mesh')
              ? 'match restricted to gateways including mesh: applies on the waypoint'
              : `match restricted to ${gws.join(', ')} (no mesh): never applies to mesh traffic`,
          ),
        )
      }
      const requestKeys = Object.keys(m).filter(
        (k) => !['sourceLabels', 'sourceNamespace', 'gateways', 'name', 'statPrefix'].includes(k),
      )
      if (requestKeys.length > 0)
        reasons.push(
          reason(mp, `HTTP request match (${requestKeys.join(', ')}): L7, applied by a waypoint (HTTPRoute matches)`),
        )
    })
    const routes = Array.isArray(r.route) ? r.route : []
    routes.forEach((d, k) => {
      if (d?.destination?.subset)
        reasons.push(
          reason(
            `${p}.route[${k}].destination.subset`,
            `subset ${d.destination.subset} (DestinationRule subsets): works on waypoints through VirtualService; HTTPRoute needs one Service per version`,
          ),
        )
      if (d?.headers !== undefined)
        reasons.push(
          reason(`${p}.route[${k}].headers`, 'per-destination header manipulation: L7 (HTTPRoute backendRef filters)'),
        )
    })
    if (routes.length > 1 || routes.some((d) => d?.weight !== undefined && d.weight !== 100))
      reasons.push(
        reason(
          `${p}.route`,
          `weighted split across ${routes.length} destinations: L7 per-request split (HTTPRoute backendRefs weights)`,
        ),
      )
    const features: [keyof HttpRoute, string][] = [
      ['timeout', 'request timeout: L7 (HTTPRoute timeouts)'],
      ['retries', 'retries: L7 (HTTPRoute retry, experimental; or keep a VirtualService)'],
      ['fault', 'fault injection: L7, not expressible in Gateway API (keep a VirtualService for it)'],
      ['mirror', 'request mirroring: L7 (HTTPRoute RequestMirror filter)'],
      ['mirrors', 'request mirroring: L7 (HTTPRoute RequestMirror filter)'],
      ['mirrorPercentage', 'mirrored traffic percentage: L7 (HTTPRoute RequestMirror percent)'],
      ['mirrorPercent', 'mirrored traffic percentage: L7 (HTTPRoute RequestMirror percent)'],
      ['headers', 'header manipulation: L7 (HTTPRoute RequestHeaderModifier/ResponseHeaderModifier)'],
      ['rewrite', 'URI/authority rewrite: L7 (HTTPRoute URLRewrite filter)'],
      ['redirect', 'redirect: L7 (HTTPRoute RequestRedirect filter)'],
      ['corsPolicy', 'CORS policy: L7 (HTTPRoute CORS filter, experimental; or keep a VirtualService)'],
      ['directResponse', 'direct response: L7, not expressible in Gateway API (keep a VirtualService for it)'],
      ['delegate', 'delegation to another VirtualService: behaviour on waypoints is unverified'],
    ]
    for (const [key, why] of features) if (r[key] !== undefined) reasons.push(reason(`${p}.${key}`, why))
  })
  ;(['tcp', 'tls'] as const).forEach((section) => {
    const routes = Array.isArray(spec[section]) ? spec[section]! : []
    routes.forEach((r, i) => {
      const n = Array.isArray(r?.route) ? r.route.length : 0
      ;(Array.isArray(r?.match) ? r.match : []).forEach((m, j) => {
        if (isRecord(m) && m.sourceLabels !== undefined) {
          sourceLabels.push(`spec.${section}[${i}].match[${j}].sourceLabels`)
          reasons.push(
            reason(
              `spec.${section}[${i}].match[${j}].sourceLabels`,
              'source label match: not supported in ambient mode',
            ),
          )
        }
      })
      reasons.push(
        reason(
          `spec.${section}[${i}]`,
          section === 'tls'
            ? `TLS route (SNI/port match, ${n} destination(s)): applied on the waypoint's TCP chain; TLSRoute is Alpha`
            : `TCP route (port match, ${n} destination(s)${n > 1 ? ', weighted per connection' : ''}): applied on the waypoint's TCP chain; TCPRoute is Alpha`,
        ),
      )
    })
  })
  return {reasons, sourceLabels}
}

/** The waypoint namespace that would serve the migrated namespace's Services. */
function waypointNamespace(ctx: ClassifyContext): string {
  return ctx.namespaceState.labels[USE_WAYPOINT_NAMESPACE_LABEL] || ctx.namespace
}

/**
 * Whether the destination of a host outside the migrated namespace has a waypoint that applies this
 * VirtualService for ambient callers: the VirtualService must live in the destination's (or the waypoint's)
 * namespace and be exported to the waypoint's namespace.
 */
function appliedByDestinationWaypoint(
  t: HostTarget,
  vsNamespace: string,
  exportTo: unknown,
  ctx: ClassifyContext,
): string | undefined {
  const dest = destinationWaypoint(ctx, t)
  if (!dest) return undefined
  const wp = dest.waypoint
  if (vsNamespace !== dest.namespace && vsNamespace !== wp.namespace) return undefined
  if (!exportedTo(exportTo, vsNamespace, wp.namespace)) return undefined
  return `${wp.namespace}/${wp.name}${wp.via === 'fleet-plan' ? ' (bound by an earlier wave of the fleet plan)' : ''}`
}

export function classifyVirtualService(obj: KubeObject, ctx: ClassifyContext): Classified {
  const ref = itemRef(obj, ctx)
  const ns = ref.namespace!
  const spec: VirtualServiceSpec = isRecord(obj.spec) ? obj.spec : {}
  const hosts = (list(spec.hosts) ?? []).map((h) => hostTarget(h, ns, ctx))
  const dests = destinations(spec).map((d) => ({...d, target: hostTarget(String(d.destination.host ?? ''), ns, ctx)}))
  const f: VirtualServiceFacts = {
    ref,
    ns,
    spec,
    local: ns === ctx.namespace,
    name: formatRef(ref),
    hosts,
    ownHostServices: uniqSorted(hosts.flatMap((h) => h.ownServices)),
    dests,
    ownDestServices: uniqSorted(dests.flatMap((d) => d.target.ownServices)),
    features: featureReasons(spec),
    hostText: (list(spec.hosts) ?? []).join(', ') || '(none)',
  }
  if (!isMeshBound(spec)) return gatewayOnlyVirtualService(f)
  if (hosts.length === 0) {
    const reasons = [
      reason(
        'spec.hosts',
        'empty: the VirtualService names no host, so it routes nothing (upstream validation rejects it)',
      ),
    ]
    return {
      item: item(ref, 'inert', f.local ? 'no-effect' : 'keep', reasons, {
        scope: f.local ? 'mesh-routing' : 'client-side',
        services: [],
      }),
      findings: [],
    }
  }
  if (f.local && f.ownHostServices.length > 0) return ownServiceRouting(f, ctx)
  if (!f.local && f.ownHostServices.length > 0) return foreignServiceRouting(f, ctx)
  return clientSideRouting(f, ctx)
}

/** What the VirtualService classifiers read, computed once. */
interface VirtualServiceFacts {
  ref: ObjectRef
  ns: string
  spec: VirtualServiceSpec
  local: boolean
  name: string
  hosts: HostTarget[]
  ownHostServices: string[]
  dests: Array<ReturnType<typeof destinations>[number] & {target: HostTarget}>
  ownDestServices: string[]
  features: ReturnType<typeof featureReasons>
  hostText: string
}

/** Bound to gateways only (no mesh): applied by those gateways, unaffected. */
function gatewayOnlyVirtualService(f: VirtualServiceFacts): Classified {
  const {ref, spec, dests, ownDestServices} = f
  const reasons: string[] = []
  const findings: Finding[] = []
  reasons.push(
    reason(
      'spec.gateways',
      `bound to gateway(s) ${(list(spec.gateways) ?? []).join(', ')} only (no mesh): applied by those gateways, not by sidecars or waypoints — unaffected`,
    ),
  )
  for (const d of dests.filter((x) => x.target.ownServices.length > 0)) {
    reasons.push(
      reason(
        `${d.path}.host`,
        `routes ingress traffic to ${d.target.ownServices.join(', ')}: the gateway reaches ambient pods over HBONE and bypasses their waypoint unless the Service or namespace is labelled istio.io/ingress-use-waypoint=true`,
      ),
    )
  }
  return {item: item(ref, 'unaffected', 'keep', reasons, {scope: 'gateway', services: ownDestServices}), findings}
}

/** A VirtualService of this namespace for this namespace's Services: what the waypoint would apply. */
function ownServiceRouting(f: VirtualServiceFacts, ctx: ClassifyContext): Classified {
  const {ref, ns, spec, name, hosts, ownHostServices, features, hostText} = f
  const reasons: string[] = []
  const findings: Finding[] = []
  const wns = waypointNamespace(ctx)
  const otherHosts = hosts.filter((h) => h.ownServices.length === 0)
  if (!exportedTo(spec.exportTo, ns, wns)) {
    reasons.push(
      reason(
        'spec.exportTo',
        `not exported to ${wns}, the waypoint's namespace: the waypoint ignores it, so its routing for ${ownHostServices.join(', ')} stops for ambient callers (E12)`,
      ),
    )
    reasons.push(...features.reasons)
    findings.push(
      lostFinding('E12', ref, {
        variant: 'notExportedToWaypoint',
        name,
        services: ownHostServices,
        waypointNamespace: wns,
        ns,
      }),
    )
    return {
      item: item(ref, 'L7', 'lost-client-side', reasons, {scope: 'mesh-routing', services: ownHostServices}),
      findings,
    }
  }
  reasons.push(
    reason(
      'spec.hosts',
      `${hostText}: routing for ${ownHostServices.join(', ')} of this namespace — sidecar callers apply it client-side today; after the migration only a waypoint applies it (VirtualService on waypoints is Alpha): ${rewriteAdvice(spec)}, and never keep both for the same host`,
    ),
  )
  for (const h of otherHosts)
    reasons.push(
      reason(
        'spec.hosts',
        `${h.host}: not a Service of ${ctx.namespace}; client-side routing for it is lost for ambient callers (E11)`,
      ),
    )
  reasons.push(...features.reasons)
  const routes = gammaRoutesFor(ctx, ownHostServices)
  if (routes.length > 0)
    reasons.push(
      reason(
        'spec.hosts',
        `HTTPRoute(s) ${routes.join(', ')} also route ${ownHostServices.join(', ')}: mixing VirtualService and HTTPRoute for one host is undefined (E26)`,
      ),
    )
  if (features.sourceLabels.length > 0) {
    findings.push(
      finding(
        'VirtualServiceSourceLabelsDropped',
        ref,
        {name, sourceLabels: features.sourceLabels},
        {id: classifiedId('vs-source-labels', ref), severity: 'warning'},
      ),
    )
    return {item: item(ref, 'L7', 'manual', reasons, {scope: 'mesh-routing', services: ownHostServices}), findings}
  }
  return {item: item(ref, 'L7', 'retarget', reasons, {scope: 'mesh-routing', services: ownHostServices}), findings}
}

/** Another namespace's VirtualService naming this namespace's Services: never applied by their waypoint. */
function foreignServiceRouting(f: VirtualServiceFacts, ctx: ClassifyContext): Classified {
  const {ref, ns, name, ownHostServices, features, hostText} = f
  const reasons: string[] = []
  const findings: Finding[] = []
  const where = ns === ctx.rootNamespace ? `the root namespace ${ns} (#58747)` : `namespace ${ns}`
  reasons.push(
    reason(
      'spec.hosts',
      `${hostText}: routing for ${ownHostServices.join(', ')} of ${ctx.namespace} defined in ${where}: applied only by sidecar clients that see it; a waypoint applies VirtualServices of the Service's own namespace only, so ambient callers never get it (E12)`,
    ),
  )
  reasons.push(...features.reasons)
  findings.push(
    lostFinding('E12', ref, {
      variant: 'foreignServiceRouting',
      name,
      ns,
      services: ownHostServices,
      namespace: ctx.namespace,
    }),
  )
  return {
    item: item(ref, 'L7', 'lost-client-side', reasons, {scope: 'client-side', services: ownHostServices}),
    findings,
  }
}

/** Client-side routing for other namespaces' or external hosts, applying to this namespace's callers. */
function clientSideRouting(f: VirtualServiceFacts, ctx: ClassifyContext): Classified {
  const {ref, ns, spec, local, name, hosts, features, hostText} = f
  const reasons: string[] = []
  const findings: Finding[] = []
  // External hosts of this namespace's ServiceEntries: its own waypoint is their egress waypoint and applies a
  // VirtualService of its namespace exported to it (DOMAIN §3.4, §3.5; istio.io ambient egress-gateway).
  const egressOf = (h: HostTarget) =>
    local && !h.wildcard && !h.serviceName && exportedTo(spec.exportTo, ns, ns)
      ? namespaceEgressEntry(h.fqdn, ctx)
      : undefined
  const covered = hosts.map((h) => ({
    h,
    waypoint: appliedByDestinationWaypoint(h, ns, spec.exportTo, ctx),
    egress: egressOf(h),
  }))
  for (const {h, waypoint, egress} of covered) {
    reasons.push(
      reason(
        'spec.hosts',
        waypoint
          ? `${h.host}: applied for ambient callers by the destination's waypoint ${waypoint} (VirtualService in the destination's namespace)`
          : egress?.served
            ? `${h.host}: ${egress.why}; it applies this VirtualService (Alpha on waypoints) for every ambient caller`
            : `${h.host}: routing applied client-side by ${ctx.namespace}'s sidecars today; ztunnel ignores VirtualServices, so ${ctx.namespace}'s ambient pods lose it unless the destination's waypoint applies an equivalent (E11)${egress ? `; not served by the waypoint of ${ctx.namespace}: ${egress.why}` : ''}`,
      ),
    )
  }
  reasons.push(...features.reasons)
  if (covered.length > 0 && covered.every((c) => c.waypoint || c.egress?.served)) {
    // Counted by needsWaypoint when the namespace's own waypoint must apply it.
    const needsOwn = covered.some((c) => !c.waypoint)
    return {
      item: item(ref, needsOwn ? 'L7' : 'unaffected', 'keep', reasons, {
        scope: needsOwn ? 'mesh-routing' : 'client-side',
        services: [],
      }),
      findings,
    }
  }
  findings.push(
    lostFinding('E11', ref, {
      variant: local ? 'clientSide' : 'clientSideElsewhere',
      name,
      ns,
      hosts: hostText,
      namespace: ctx.namespace,
      featureCount: features.reasons.length,
    }),
  )
  return {item: item(ref, 'L7', 'lost-client-side', reasons, {scope: 'client-side', services: []}), findings}
}

/**
 * What a mesh VirtualService becomes in Gateway API, by route section: `http` → HTTPRoute, `tcp` → TCPRoute,
 * `tls` → TLSRoute (both Alpha in ambient, experimental-channel CRDs) — or it stays a VirtualService, which the
 * waypoint applies on its TCP chain for tcp/tls routes (istio/istio pilot/pkg/networking/core/listener_waypoint.go;
 * https://istio.io/latest/docs/ambient/overview/APIs/; DOMAIN §3.4, §3.6). `--routes httproute` converts only
 * `http` routes and keeps the others as VirtualServices (routes.ts).
 */
export function rewriteAdvice(spec: VirtualServiceSpec): string {
  const has = (section: 'http' | 'tcp' | 'tls') => Array.isArray(spec[section]) && spec[section]!.length > 0
  const layer4 = [...(has('tcp') ? ['TCPRoute'] : []), ...(has('tls') ? ['TLSRoute'] : [])]
  if (layer4.length === 0) return 'rewrite as HTTPRoute'
  const others = `${layer4.join(' / ')} (Alpha, experimental-channel CRDs), not HTTPRoute, for its ${[has('tcp') ? 'tcp' : '', has('tls') ? 'tls' : ''].filter(Boolean).join(' and ')} routes`
  return has('http')
    ? `rewrite its http routes as HTTPRoute and ${others} — or keep it a VirtualService on the waypoint`
    : `rewrite as ${others} — or keep it a VirtualService on the waypoint`
}

function lostFinding(prefix: string, ref: ObjectRef, args: FindingArgs<'ClientSideRoutingLost'>): Finding {
  return finding('ClientSideRoutingLost', ref, args, {id: classifiedId(prefix, ref), severity: 'error'})
}

/** HTTPRoute/GRPCRoute names of the migrated namespace whose parent is one of the given Services. */
export function gammaRoutesFor(ctx: ClassifyContext, services: string[]): string[] {
  return uniqSorted(
    [...objectsOfKind(ctx, `${GATEWAY_API_GROUP}/HTTPRoute`), ...objectsOfKind(ctx, `${GATEWAY_API_GROUP}/GRPCRoute`)]
      .filter((o) => namespaceOf(o, ctx) === ctx.namespace)
      .filter((o) =>
        (Array.isArray(o.spec?.parentRefs) ? o.spec.parentRefs : []).some(
          // parentRef group defaults to gateway.networking.k8s.io: a Kubernetes Service needs group "" explicitly.
          (p: {group?: string; kind?: string; name?: string; namespace?: string} | null) =>
            p?.kind === 'Service' &&
            (p.group === '' || p.group === 'core') &&
            (p.namespace ?? ctx.namespace) === ctx.namespace &&
            services.includes(String(p.name)),
        ),
      )
      .map((o) => `${o.kind} ${o.metadata.name}`),
  )
}

/**
 * VirtualServices elsewhere bear on this namespace when its clients see them (mesh-bound, exported here: E11),
 * when they name its Services (E12), or when gateways route to its Services.
 */
function relevantElsewhere(obj: KubeObject, ctx: ClassifyContext): boolean {
  const spec: VirtualServiceSpec = isRecord(obj.spec) ? obj.spec : {}
  const ns = namespaceOf(obj, ctx)
  if (isMeshBound(spec) && exportedTo(spec.exportTo, ns, ctx.namespace)) return true
  if ((list(spec.hosts) ?? []).some((h) => hostTarget(h, ns, ctx).ownServices.length > 0)) return true
  // Gateway routes to this namespace's Services: ingress traffic to it (unaffected, but worth knowing).
  return (
    !isMeshBound(spec) &&
    destinations(spec).some((d) => hostTarget(String(d.destination.host ?? ''), ns, ctx).ownServices.length > 0)
  )
}

export const virtualServiceClassifier: KindClassifier = {
  kinds: [`${NETWORKING}/VirtualService`],
  relevantElsewhere,
  classify: classifyVirtualService,
}
