// Gateway API objects (DOMAIN §1.3-§1.6, §1.8, §3.6, §3.13, §7 E1/E8/E26) and the Istio networking Gateway.
// - Gateway of class istio-waypoint: an existing waypoint (keep; check its revision label and, when shared
//   from another namespace, whether its HBONE listener admits this namespace).
// - Other Gateways (ingress/egress classes, networking.istio.io Gateway): unaffected.
// - HTTPRoute/GRPCRoute/TCPRoute/TLSRoute: a Service/ServiceEntry parent needs a waypoint bound to the parent
//   (ResolvedWaypoints; until then client sidecars execute it); a waypoint Gateway parent: keep; an ingress
//   Gateway parent: unaffected. "Consumer" routes in a namespace other than the Service's are converted in
//   the route's namespace and never applied by the destination's waypoint.
import {finding} from '../findings/finding.js'
import type {ClassifyContext} from '../context.js'
import type {Action, Finding, KubeObject, ObjectRef, Verdict} from '../model.js'
import type {GatewayListener, IstioGatewaySpec, KubeGatewaySpec, ParentReference, RouteSpec} from '../istio-types.js'
import {formatRef} from '../refs.js'
import {type Classified, type KindClassifier, classifiedId, item, reason, uniqSorted} from './results.js'
import {allServices, matchesLabelSelector} from './selection.js'
import {findObject, itemRef, objectsOfKind, namespaceLabels, namespaceOf} from './objects.js'
import {hostTarget} from './hosts.js'
import {isRecord} from '../json.js'
import {isWaypointClassGateway, serviceWaypoint, servicesBoundTo} from './waypoints.js'
import {isMeshBound} from './virtual-service.js'
import {
  DATAPLANE_MODE_LABEL,
  GATEWAY_API_GROUP,
  INGRESS_USE_WAYPOINT_LABEL,
  NETWORKING,
  REVISION_LABEL,
  USE_WAYPOINT_LABEL,
  USE_WAYPOINT_NAMESPACE_LABEL,
  WAYPOINT_CLASS,
  WAYPOINT_FOR_LABEL,
} from '../vocab.js'

export const ROUTE_KINDS = ['HTTPRoute', 'GRPCRoute', 'TCPRoute', 'TLSRoute'] as const

/** The listener istiod uses for attachment checks: protocol HBONE on port 15008 (DOMAIN §1.6). */
function hboneListener(spec: KubeGatewaySpec): GatewayListener | undefined {
  return (Array.isArray(spec.listeners) ? spec.listeners : []).find((l) => l?.protocol === 'HBONE' && l.port === 15008)
}

/** Whether a waypoint in another namespace admits bindings from `namespace` (unset allowedRoutes = Same). */
export function waypointAdmits(
  gw: KubeObject,
  namespace: string,
  ctx: ClassifyContext,
): {admitted: boolean; why: string} {
  const listener = hboneListener(isRecord(gw.spec) ? gw.spec : {})
  if (!listener) return {admitted: false, why: 'no HBONE listener on port 15008'}
  const from = listener.allowedRoutes?.namespaces?.from ?? 'Same'
  if (namespaceOf(gw, ctx) === namespace) return {admitted: true, why: 'same namespace'}
  if (from === 'All') return {admitted: true, why: 'allowedRoutes.namespaces.from: All'}
  if (from === 'Selector') {
    const labels = namespaceLabels(ctx, namespace)
    if (!labels)
      return {
        admitted: false,
        why: `allowedRoutes selector cannot be checked: Namespace ${namespace} not in the snapshot`,
      }
    const ok = matchesLabelSelector(listener.allowedRoutes?.namespaces?.selector, labels)
    return {
      admitted: ok,
      why: ok ? 'allowedRoutes selector matches the namespace' : 'allowedRoutes selector does not match the namespace',
    }
  }
  return {admitted: false, why: 'allowedRoutes.namespaces.from is Same (the default)'}
}

/** Waypoints of other namespaces that this namespace or its Services are labelled to use. */
function sharedWaypointsUsed(ctx: ClassifyContext): {namespace: string; name: string}[] {
  const out: {namespace: string; name: string}[] = []
  for (const svc of allServices(ctx)) {
    const b = serviceWaypoint(ctx, ctx.namespace, svc)
    if (b && b.namespace !== ctx.namespace) out.push({namespace: b.namespace, name: b.name})
  }
  const nsLabels = ctx.namespaceState.labels
  const w = nsLabels[USE_WAYPOINT_LABEL]
  const wns = nsLabels[USE_WAYPOINT_NAMESPACE_LABEL]
  if (w && w !== 'none' && wns && wns !== ctx.namespace) out.push({namespace: wns, name: w})
  return out
}

export function classifyKubeGateway(obj: KubeObject, ctx: ClassifyContext): Classified {
  const ref = itemRef(obj, ctx)
  const ns = ref.namespace!
  const spec: KubeGatewaySpec = isRecord(obj.spec) ? obj.spec : {}
  const labels = obj.metadata.labels ?? {}
  const reasons: string[] = []
  const findings: Finding[] = []
  const klass = String(spec.gatewayClassName ?? '')

  if (klass !== WAYPOINT_CLASS) {
    reasons.push(
      reason('spec.gatewayClassName', `${klass || '(none)'}: not a waypoint; its own proxy keeps working — unaffected`),
    )
    if (klass === 'istio' && ns === ctx.namespace && labels[DATAPLANE_MODE_LABEL] !== 'none') {
      reasons.push(
        reason(
          'metadata.labels',
          `its pods carry sidecar.istio.io/inject=false but not ${DATAPLANE_MODE_LABEL}=none: ztunnel captures them when the namespace goes ambient (E8); label the Gateway ${DATAPLANE_MODE_LABEL}=none (propagated to its pods) unless that is intended`,
        ),
      )
    }
    return {item: item(ref, 'unaffected', 'keep', reasons, {scope: 'gateway'}), findings}
  }

  const waypointFor = labels[WAYPOINT_FOR_LABEL]
  const listener = hboneListener(spec)
  const bound = servicesBoundTo(ctx, ns, ref.name)
  reasons.push(
    reason(
      'spec.gatewayClassName',
      `${WAYPOINT_CLASS}: an existing waypoint${ns === ctx.namespace ? '' : ` in ${ns}`}; keep it`,
    ),
  )
  reasons.push(
    reason(
      `metadata.labels[${WAYPOINT_FOR_LABEL}]`,
      waypointFor ? `${waypointFor}` : 'absent: istiod uses the GatewayClass label or the default, service',
    ),
  )
  if (!listener)
    reasons.push(reason('spec.listeners', 'no HBONE listener on port 15008: istiod does not program it as a waypoint'))
  reasons.push(
    reason(
      'metadata.name',
      bound.length > 0
        ? `Services of ${ctx.namespace} bound to it: ${bound.join(', ')}`
        : `no Service of ${ctx.namespace} is bound to it (istio.io/use-waypoint)`,
    ),
  )

  if (ns === ctx.namespace) {
    if (ctx.namespaceState.revision && labels[REVISION_LABEL] === undefined) {
      reasons.push(
        reason(
          `metadata.labels[${REVISION_LABEL}]`,
          `absent in a namespace labelled ${REVISION_LABEL}=${ctx.namespaceState.revision}: istiod falls back to the namespace's label, so removing it re-homes or orphans this waypoint (E1)`,
        ),
      )
      findings.push(
        finding(
          'WaypointWithoutRevision',
          ref,
          {ref: formatRef(ref), revision: ctx.namespaceState.revision},
          {id: classifiedId('E1', ref), severity: 'warning'},
        ),
      )
    }
    return {item: item(ref, 'L7', 'keep', reasons), findings}
  }

  const admits = waypointAdmits(obj, ctx.namespace, ctx)
  reasons.push(reason('spec.listeners', `shared waypoint used by ${ctx.namespace}: ${admits.why}`))
  if (!admits.admitted) {
    findings.push(
      finding(
        'SharedWaypointDeniesNamespace',
        ref,
        {namespace: ctx.namespace, ref: formatRef(ref), why: admits.why},
        {id: classifiedId('waypoint-attach', ref), severity: 'blocker'},
      ),
    )
    return {item: item(ref, 'blocker', 'blocker', reasons), findings}
  }
  return {item: item(ref, 'L7', 'keep', reasons), findings}
}

function kubeGatewayElsewhere(obj: KubeObject, ctx: ClassifyContext): boolean {
  if (!isWaypointClassGateway(obj)) return false
  const ns = namespaceOf(obj, ctx)
  return sharedWaypointsUsed(ctx).some((w) => w.namespace === ns && w.name === obj.metadata.name)
}

export const kubeGatewayClassifier: KindClassifier = {
  kinds: [`${GATEWAY_API_GROUP}/Gateway`],
  relevantElsewhere: kubeGatewayElsewhere,
  classify: classifyKubeGateway,
}

// --- routes --------------------------------------------------------------------------------------

interface Contribution {
  verdict: Verdict
  action: Action
}

const RANK: string[] = [
  'blocker/blocker',
  'L7/manual',
  'L7/retarget',
  'L7/keep',
  'L7/lost-client-side',
  'unaffected/keep',
  'inert/keep',
]

function strongest(cs: Contribution[]): Contribution {
  const sorted = [...cs].sort((a, b) => rank(a) - rank(b))
  return sorted[0] ?? {verdict: 'unaffected', action: 'keep'}
}

function rank(c: Contribution): number {
  const i = RANK.indexOf(`${c.verdict}/${c.action}`)
  return i === -1 ? RANK.length : i
}

function parentsOf(spec: RouteSpec): ParentReference[] {
  return Array.isArray(spec.parentRefs) ? spec.parentRefs.filter(isRecord) : []
}

function parentKind(p: ParentReference): {group: string; kind: string} {
  return {group: p.group ?? GATEWAY_API_GROUP, kind: p.kind ?? 'Gateway'}
}

function isServiceParent(p: ParentReference): boolean {
  const {group, kind} = parentKind(p)
  return kind === 'Service' && (group === '' || group === 'core')
}

export function classifyRoute(obj: KubeObject, ctx: ClassifyContext): Classified {
  const ref = itemRef(obj, ctx)
  const ns = ref.namespace!
  const spec: RouteSpec = isRecord(obj.spec) ? obj.spec : {}
  const f: RouteFacts = {ref, ns, name: formatRef(ref)}
  const acc: RouteAttachment = {
    reasons: [],
    findings: [],
    contributions: [],
    services: new Set<string>(),
    scope: undefined,
  }
  const {reasons, contributions, services} = acc
  parentsOf(spec).forEach((p, i) => attachParent(p, i, f, ctx, acc))
  if (parentsOf(spec).length === 0) {
    reasons.push(reason('spec.parentRefs', 'no parent: the route attaches to nothing'))
    contributions.push({verdict: 'inert', action: 'keep'})
  }

  // Backends in this namespace reached from a gateway route.
  const backends = uniqSorted(
    (Array.isArray(spec.rules) ? spec.rules : []).flatMap((r) =>
      (Array.isArray(r?.backendRefs) ? r.backendRefs : [])
        .filter(
          (b) =>
            (b?.kind ?? 'Service') === 'Service' && (b?.group ?? '') === '' && (b?.namespace ?? ns) === ctx.namespace,
        )
        .map((b) => String(b.name)),
    ),
  )
  const best = strongest(contributions)
  if (best.verdict === 'unaffected' && backends.length > 0 && acc.scope === 'gateway') {
    reasons.push(
      reason(
        'spec.rules',
        `routes ingress traffic to ${backends.join(', ')}: the gateway reaches ambient pods over HBONE and bypasses their waypoint unless the Service or namespace is labelled ${INGRESS_USE_WAYPOINT_LABEL}=true`,
      ),
    )
    for (const b of backends) services.add(b)
  }
  if ((ref.kind === 'TCPRoute' || ref.kind === 'TLSRoute') && best.verdict === 'L7')
    reasons.push(reason('kind', `${ref.kind} on waypoints is Alpha`))

  vsClash(spec, f, ctx, acc)
  return {
    item: item(ref, best.verdict, best.action, reasons, {
      ...(acc.scope ? {scope: acc.scope} : {}),
      services: uniqSorted(services),
    }),
    findings: acc.findings,
  }
}

interface RouteFacts {
  ref: ObjectRef
  ns: string
  name: string
}

/** What the route's parents and backends contribute, gathered in parentRef order. */
interface RouteAttachment {
  reasons: string[]
  findings: Finding[]
  contributions: Contribution[]
  services: Set<string>
  scope: 'mesh-routing' | 'gateway' | 'client-side' | undefined
}

function attachParent(p: ParentReference, i: number, f: RouteFacts, ctx: ClassifyContext, acc: RouteAttachment): void {
  const path = `spec.parentRefs[${i}]`
  const pns = p.namespace ?? f.ns
  const pname = String(p.name ?? '')
  if (isServiceParent(p)) serviceParent(path, i, pns, pname, f, ctx, acc)
  else otherParent(p, path, pns, pname, ctx, acc)
}

/** A Service parent: producer route (GAMMA), consumer route, or another namespace's route. */
function serviceParent(
  path: string,
  i: number,
  pns: string,
  pname: string,
  f: RouteFacts,
  ctx: ClassifyContext,
  acc: RouteAttachment,
): void {
  const {ref, ns, name} = f
  const {reasons, findings, contributions, services} = acc
  if (pns === ns && ns === ctx.namespace) {
    services.add(pname)
    acc.scope = 'mesh-routing'
    const bound = serviceWaypoint(ctx, pns, pname)
    reasons.push(
      reason(
        path,
        `Service ${pname} (GAMMA producer route): honoured in ambient only through the waypoint bound to ${pname}` +
          (bound
            ? ` (bound to ${bound.namespace}/${bound.name})`
            : ctx.waypointPlanned
              ? ' (the plan binds one)'
              : ' — not bound yet: status ResolvedWaypoints=False, MissingUseWaypointLabel') +
          '; sidecar callers execute it client-side',
      ),
    )
    contributions.push({verdict: 'L7', action: 'keep'})
  } else if (pns !== ns && ns === ctx.namespace) {
    acc.scope = acc.scope ?? 'client-side'
    reasons.push(
      reason(
        path,
        `Service ${pns}/${pname}: consumer route for ${ctx.namespace}'s callers; ztunnel ignores routes and the destination's waypoint never applies routes from another namespace — lost once ${ctx.namespace} is ambient (E11)`,
      ),
    )
    contributions.push({verdict: 'L7', action: 'lost-client-side'})
    findings.push(
      finding(
        'ClientSideRoutingLost',
        ref,
        {variant: 'serviceParent', name, pns, pname, namespace: ctx.namespace},
        {id: classifiedId('E11', ref, `parent-${i}`), severity: 'error'},
      ),
    )
  } else if (pns === ctx.namespace) {
    acc.scope = acc.scope ?? 'client-side'
    services.add(pname)
    reasons.push(
      reason(
        path,
        `Service ${pname} of ${ctx.namespace}: consumer route defined in ${ns}, applied only by that namespace's sidecar callers; the waypoint of ${pname} never applies it (E12)`,
      ),
    )
    contributions.push({verdict: 'L7', action: 'lost-client-side'})
    findings.push(
      finding(
        'ClientSideRoutingLost',
        ref,
        {variant: 'serviceParent2', name, ns, namespace: ctx.namespace, pname},
        {id: classifiedId('E12', ref, `parent-${i}`), severity: 'error'},
      ),
    )
  } else {
    reasons.push(reason(path, `Service ${pns}/${pname}: route of another namespace, unaffected by this migration`))
    contributions.push({verdict: 'unaffected', action: 'keep'})
  }
}

/** A ServiceEntry, Gateway (waypoint or not) or unknown parent. */
function otherParent(
  p: ParentReference,
  path: string,
  pns: string,
  pname: string,
  ctx: ClassifyContext,
  acc: RouteAttachment,
): void {
  const {group, kind} = parentKind(p)
  const {reasons, contributions, services} = acc
  if (kind === 'ServiceEntry' && group === NETWORKING) {
    const se = findObject(ctx, NETWORKING, 'ServiceEntry', pns, pname)
    const wp = se?.metadata.labels?.[USE_WAYPOINT_LABEL]
    acc.scope = acc.scope ?? 'mesh-routing'
    reasons.push(
      reason(
        path,
        `ServiceEntry ${pns}/${pname}: honoured only through the (egress) waypoint bound to it` +
          (wp && wp !== 'none' ? ` (bound to ${wp})` : ' — not bound (istio.io/use-waypoint)'),
      ),
    )
    contributions.push({verdict: 'L7', action: 'keep'})
  } else if (kind === 'Gateway' && group === GATEWAY_API_GROUP) {
    const gw = findObject(ctx, GATEWAY_API_GROUP, 'Gateway', pns, pname)
    if (isWaypointClassGateway(gw)) {
      acc.scope = acc.scope ?? 'mesh-routing'
      for (const s of pns === ctx.namespace ? servicesBoundTo(ctx, pns, pname) : []) services.add(s)
      reasons.push(reason(path, `waypoint ${pns}/${pname}: applied by that waypoint for the traffic it serves — keep`))
      contributions.push({verdict: 'L7', action: 'keep'})
    } else {
      acc.scope = acc.scope ?? 'gateway'
      reasons.push(
        reason(
          path,
          gw
            ? `Gateway ${pns}/${pname} of class ${gw.spec?.gatewayClassName}: ingress/egress gateway route — unaffected`
            : `Gateway ${pns}/${pname} (not in the snapshot): not a known waypoint — treated as a gateway route, unaffected`,
        ),
      )
      contributions.push({verdict: 'unaffected', action: 'keep'})
    }
  } else {
    const hint =
      kind === 'Service' && p.group === undefined
        ? ' (parentRef group defaults to gateway.networking.k8s.io; a Kubernetes Service needs group: "")'
        : ''
    reasons.push(
      reason(
        path,
        `parent ${group}/${kind} ${pns}/${pname}: not something waypoints or sidecars attach routes to${hint}`,
      ),
    )
    contributions.push({verdict: 'unaffected', action: 'keep'})
  }
}

/** E26: a VirtualService of this namespace for the same Services. */
function vsClash(spec: RouteSpec, f: RouteFacts, ctx: ClassifyContext, acc: RouteAttachment): void {
  const {ref, ns, name} = f
  const {reasons, findings} = acc
  if (ns !== ctx.namespace) return
  const own = parentsOf(spec)
    .filter((p) => isServiceParent(p) && (p.namespace ?? ns) === ns)
    .map((p) => String(p.name))
  const clashing = virtualServicesFor(ctx, own)
  if (clashing.length > 0) {
    reasons.push(
      reason(
        'spec.parentRefs',
        `${clashing.map((v) => v.name).join(', ')} also route ${own.join(', ')}: mixing VirtualService and HTTPRoute for one host is undefined (E26)`,
      ),
    )
    findings.push(
      finding(
        'VirtualServiceAndRouteForSameHost',
        ref,
        {name, clashing: clashing.map((v) => formatRef(v)), own},
        {id: classifiedId('E26', ref), severity: 'warning'},
      ),
    )
  }
}

/** Mesh VirtualServices of the migrated namespace whose hosts name one of the Services. */
function virtualServicesFor(ctx: ClassifyContext, services: string[]): ObjectRef[] {
  if (services.length === 0) return []
  return objectsOfKind(ctx, `${NETWORKING}/VirtualService`)
    .filter((o) => namespaceOf(o, ctx) === ctx.namespace && isMeshBound(isRecord(o.spec) ? o.spec : {}))
    .filter((o) =>
      (Array.isArray(o.spec?.hosts) ? o.spec.hosts : []).some((h: unknown) =>
        hostTarget(String(h), ctx.namespace, ctx).ownServices.some((s) => services.includes(s)),
      ),
    )
    .map((o) => ({apiVersion: o.apiVersion, kind: o.kind, namespace: ctx.namespace, name: o.metadata.name}))
}

/** Routes elsewhere that attach to this namespace's Services or waypoints, or send gateway traffic to its Services. */
function routeElsewhere(obj: KubeObject, ctx: ClassifyContext): boolean {
  const spec: RouteSpec = isRecord(obj.spec) ? obj.spec : {}
  const ns = namespaceOf(obj, ctx)
  for (const p of parentsOf(spec)) {
    const pns = p.namespace ?? ns
    if (pns !== ctx.namespace) continue
    if (isServiceParent(p)) return true
    const {group, kind} = parentKind(p)
    if (
      kind === 'Gateway' &&
      group === GATEWAY_API_GROUP &&
      isWaypointClassGateway(findObject(ctx, GATEWAY_API_GROUP, 'Gateway', pns, String(p.name ?? '')))
    )
      return true
  }
  return (Array.isArray(spec.rules) ? spec.rules : []).some((r) =>
    (Array.isArray(r?.backendRefs) ? r.backendRefs : []).some(
      (b) => (b?.kind ?? 'Service') === 'Service' && (b?.group ?? '') === '' && b?.namespace === ctx.namespace,
    ),
  )
}

export const routeClassifier: KindClassifier = {
  kinds: ROUTE_KINDS.map((k) => `${GATEWAY_API_GROUP}/${k}`),
  relevantElsewhere: routeElsewhere,
  classify: classifyRoute,
}

// --- networking.istio.io Gateway -----------------------------------------------------------------

export function classifyIstioGateway(obj: KubeObject, ctx: ClassifyContext): Classified {
  const ref = itemRef(obj, ctx)
  const spec: IstioGatewaySpec = isRecord(obj.spec) ? obj.spec : {}
  const selector = isRecord(spec.selector)
    ? Object.entries(spec.selector)
        .map(([k, v]) => `${k}=${String(v)}`)
        .join(',')
    : '(none)'
  const servers = Array.isArray(spec.servers) ? spec.servers.length : 0
  const reasons = [
    reason(
      'spec.selector',
      `${selector}: configures gateway pods, which keep their own proxy (injected gateways are never captured) — unchanged in ambient`,
    ),
    reason(
      'spec.servers',
      `${servers} server(s): traffic from the gateway to ambient backends uses HBONE and bypasses their waypoint unless the Service or namespace is labelled ${INGRESS_USE_WAYPOINT_LABEL}=true`,
    ),
  ]
  return {item: item(ref, 'unaffected', 'keep', reasons, {scope: 'gateway'}), findings: []}
}

export const istioGatewayClassifier: KindClassifier = {
  kinds: [`${NETWORKING}/Gateway`],
  relevantElsewhere: () => false,
  classify: classifyIstioGateway,
}
