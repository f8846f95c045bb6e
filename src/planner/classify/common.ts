// Helpers shared by the per-kind classifiers: object placement relative to the migrated namespace,
// selector coverage, exportTo visibility, host resolution, waypoint bindings, findings.
import type {ClassifyContext} from '../context.js'
import type {Action, Finding, InventoryItem, KubeObject, ObjectRef, ServiceItem, Severity, Verdict, WorkloadItem} from '../model.js'
import type {FindingCode} from '../findings/catalogue.js'
import type {LabelSelector, Labels, PolicyTargetReference} from '../istio-types.js'
import {groupOf, refOf} from '../refs.js'
import {groupBy, isRecord} from '../json.js'
import {selectorMatches} from '../namespace.js'
import {GATEWAY_API_GROUP, NETWORKING, USE_WAYPOINT_LABEL, USE_WAYPOINT_NAMESPACE_LABEL, WAYPOINT_CLASS} from '../vocab.js'

export {isRecord}


/** Kubernetes cluster domain assumed when matching wildcard hosts against Service FQDNs. */
export const CLUSTER_DOMAIN = 'cluster.local'

/** The result of classifying one object. */
export interface Classified {
  item: InventoryItem
  findings: Finding[]
}

/** One module per kind (or family of kinds) implements this. */
export interface KindClassifier {
  /** `<api group>/<Kind>` keys, independent of the served version. */
  kinds: string[]
  /** Whether an object *outside* the migrated namespace bears on it (objects inside always do). */
  relevantElsewhere(obj: KubeObject, ctx: ClassifyContext): boolean
  classify(obj: KubeObject, ctx: ClassifyContext): Classified
}

export function kindKey(obj: Pick<KubeObject, 'apiVersion' | 'kind'>): string {
  return `${groupOf(obj.apiVersion) || 'core'}/${obj.kind}`
}

/** Namespace of an object; manifests without one belong to the migrated namespace (SPEC §3). */
export function namespaceOf(obj: KubeObject, ctx: ClassifyContext): string {
  return obj.metadata.namespace ?? ctx.namespace
}

export function itemRef(obj: KubeObject, ctx: ClassifyContext): ObjectRef {
  return {...refOf(obj), namespace: namespaceOf(obj, ctx)}
}

export function reason(path: string, why: string): string {
  return `${path}: ${why}`
}

export function item(
  ref: ObjectRef,
  verdict: Verdict,
  action: Action,
  reasons: string[],
  extra: Pick<InventoryItem, 'scope' | 'ztunnel' | 'services'> = {},
): InventoryItem {
  const out: InventoryItem = {ref, verdict, action, reasons}
  if (extra.scope !== undefined) out.scope = extra.scope
  if (extra.ztunnel !== undefined) out.ztunnel = extra.ztunnel
  if (extra.services !== undefined) out.services = extra.services
  return out
}

/** A finding with a stable id `<prefix>/<Kind>/<namespace>/<name>[/<topic>]`. */
export function finding(opts: {
  prefix: string
  ref: ObjectRef
  code: FindingCode
  severity: Severity
  message: string
  fix?: string
  topic?: string
}): Finding {
  const id = [opts.prefix, opts.ref.kind, opts.ref.namespace ?? '', opts.ref.name, ...(opts.topic ? [opts.topic] : [])].join('/')
  const f: Finding = {id, code: opts.code, severity: opts.severity, message: opts.message, ref: opts.ref}
  if (opts.fix) f.fix = opts.fix
  return f
}

export function uniqSorted(values: Iterable<string>): string[] {
  return [...new Set(values)].sort()
}

/** Non-empty string array, or undefined. Manifests may carry scalars or nulls where lists belong. */
export function list(value: unknown): string[] | undefined {
  if (!Array.isArray(value) || value.length === 0) return undefined
  return value.map((v) => String(v))
}


/** Go's strconv.ParseBool, which istiod uses for boolean annotations and labels. */
export function parseBool(value: string | undefined): boolean | undefined {
  if (value === undefined) return undefined
  if (['1', 't', 'T', 'true', 'TRUE', 'True'].includes(value)) return true
  if (['0', 'f', 'F', 'false', 'FALSE', 'False'].includes(value)) return false
  return undefined
}

// --- Istio version -------------------------------------------------------------------------------

/** Minor version from "1.NN" / "1.NN.P", or undefined when unknown or unparsable. */
export function istioMinor(ctx: Pick<ClassifyContext, 'istioVersion'>): number | undefined {
  const m = /^v?1\.(\d+)/.exec(ctx.istioVersion ?? '')
  return m ? Number(m[1]) : undefined
}

// --- selectors and coverage ----------------------------------------------------------------------

export function hasLabels(labels: Labels | undefined): labels is Labels {
  return isRecord(labels) && Object.keys(labels).length > 0
}

/** Every key of `selector` is in `labels` with the same value (an empty selector matches everything). */
export function labelsSubset(selector: Labels | undefined, labels: Labels | undefined): boolean {
  if (!hasLabels(selector)) return true
  return Object.entries(selector).every(([k, v]) => labels?.[k] === String(v))
}

/** `key=value` → the items carrying that label, in input order: selectors look up candidates instead of scanning. */
function indexByLabel<T>(items: T[], labelsOf: (item: T) => Labels | undefined): Map<string, T[]> {
  const pairs = items.flatMap((item) => Object.entries(labelsOf(item) ?? {}).map(([k, v]) => ({item, key: `${k}=${v}`})))
  return new Map([...groupBy(pairs, (p) => p.key)].map(([key, group]) => [key, group.map((p) => p.item)]))
}

/** Workloads of the namespace a (possibly absent) selector covers. */
export function matchingWorkloads(ctx: ClassifyContext, selector: Labels | undefined): WorkloadItem[] {
  if (!hasLabels(selector)) return [...ctx.workloads]
  const byLabel = memo(ctx, 'workloads-by-label', () => indexByLabel(ctx.workloads, (w) => w.podLabels))
  // Every match carries each of the selector's labels: the smallest bucket holds all candidates.
  let candidates: WorkloadItem[] | undefined
  for (const [k, v] of Object.entries(selector)) {
    const bucket = byLabel.get(`${k}=${String(v)}`) ?? []
    if (!candidates || bucket.length < candidates.length) candidates = bucket
  }
  return (candidates ?? []).filter((w) => labelsSubset(selector, w.podLabels))
}

/** Gateways and waypoints keep an Envoy of their own in ambient: config selecting only them is unaffected. */
export function isProxyWorkload(w: WorkloadItem): boolean {
  return w.traits.some((t) => t === 'injected-gateway' || t === 'kube-gateway' || t === 'waypoint')
}

/** Names of the namespace's Services whose selector covers at least one of the workloads. */
export function servicesCovering(ctx: ClassifyContext, workloads: WorkloadItem[]): string[] {
  // Each Service with a selector is filed under one of its selector labels; a workload can only be
  // covered by the Services filed under one of its own pod labels.
  const byOneLabel = memo(ctx, 'services-by-one-selector-label', () => {
    const withSelector = ctx.services.filter((s): s is ServiceItem & {selector: Labels} => hasLabels(s.selector))
    return groupBy(withSelector, (s) => {
      const [k, v] = Object.entries(s.selector)[0]!
      return `${k}=${String(v)}`
    })
  })
  const names = new Set<string>()
  for (const w of workloads) {
    for (const [k, v] of Object.entries(w.podLabels ?? {})) {
      for (const s of byOneLabel.get(`${k}=${v}`) ?? []) if (labelsSubset(s.selector, w.podLabels)) names.add(s.ref.name)
    }
  }
  return uniqSorted(names)
}

export function allServices(ctx: ClassifyContext): string[] {
  return memo(ctx, 'all-services', () => uniqSorted(ctx.services.map((s) => s.ref.name)))
}

/** Whether the migrated namespace has a Service of that name. */
export function hasOwnService(ctx: ClassifyContext, name: string): boolean {
  return memo(ctx, 'service-names', () => new Set(ctx.services.map((s) => s.ref.name))).has(name)
}

/** Kubernetes LabelSelector evaluation (matchLabels AND matchExpressions). */
export function matchesLabelSelector(selector: LabelSelector | undefined, labels: Labels): boolean {
  return selectorMatches(selector as Parameters<typeof selectorMatches>[0], labels)
}

// --- exportTo ------------------------------------------------------------------------------------

/**
 * Whether a VirtualService / DestinationRule / ServiceEntry in `objectNamespace` is visible to `namespace`.
 * Absent exportTo = `*` (Istio's default); `.` = own namespace; `~` = nobody.
 */
export function exportedTo(exportTo: unknown, objectNamespace: string, namespace: string): boolean {
  const entries = list(exportTo)
  if (!entries) return true
  return entries.some((e) => e === '*' || (e === '.' && objectNamespace === namespace) || e === namespace)
}

// --- hosts ---------------------------------------------------------------------------------------

export interface HostTarget {
  /** As written. */
  host: string
  /** Short names resolved against the object's namespace (Istio's ResolveShortnameToFQDN). */
  fqdn: string
  wildcard: boolean
  /** Namespace and name of the Kubernetes Service the host names, when it names one exactly. */
  serviceNamespace?: string
  serviceName?: string
  /** Services of the migrated namespace this host covers (exactly or by wildcard). */
  ownServices: string[]
}

export function resolveHost(host: string, objectNamespace: string): string {
  if (host === '*' || host.includes('.') || host.includes(':')) return host.toLowerCase()
  return `${host}.${objectNamespace}.svc.${CLUSTER_DOMAIN}`.toLowerCase()
}

export function serviceFqdn(name: string, namespace: string): string {
  return `${name}.${namespace}.svc.${CLUSTER_DOMAIN}`
}

/** Whether a (possibly wildcard) host pattern covers a concrete FQDN. */
export function hostCovers(pattern: string, fqdn: string): boolean {
  if (pattern === '*') return true
  if (pattern.startsWith('*.')) return fqdn.endsWith(pattern.slice(1))
  return pattern === fqdn
}

const SERVICE_FQDN = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?)\.([a-z0-9]([-a-z0-9]*[a-z0-9])?)\.svc(\..+)?$/

/** The namespace of the Kubernetes Service a resolved host names (`name.ns.svc[.domain]`), if it names one. */
export function hostServiceNamespace(fqdn: string): string | undefined {
  return fqdn.startsWith('*') ? undefined : SERVICE_FQDN.exec(fqdn)?.[3]
}

export function hostTarget(host: string, objectNamespace: string, ctx: ClassifyContext): HostTarget {
  const fqdn = resolveHost(host, objectNamespace)
  const wildcard = fqdn.startsWith('*')
  const out: HostTarget = {host, fqdn, wildcard, ownServices: []}
  const m = wildcard ? null : SERVICE_FQDN.exec(fqdn)
  if (m) {
    out.serviceName = m[1]!
    out.serviceNamespace = m[3]!
  }
  if (wildcard) {
    out.ownServices = allServices(ctx).filter((s) => hostCovers(fqdn, serviceFqdn(s, ctx.namespace)))
  } else if (out.serviceNamespace === ctx.namespace && hasOwnService(ctx, out.serviceName!)) {
    out.ownServices = [out.serviceName!]
  }
  return out
}

// --- lookups -------------------------------------------------------------------------------------

// Cross references (VirtualService → DestinationRule subsets, routes → Gateways, ...) would rescan the whole
// snapshot per object; index it by kind once per objects array.
const KIND_INDEX = new WeakMap<KubeObject[], Map<string, KubeObject[]>>()

/** The snapshot's objects of one `<group>/<Kind>` key (`core/Service` for the core group), in input order. */
export function objectsOfKind(ctx: ClassifyContext, key: string): KubeObject[] {
  let index = KIND_INDEX.get(ctx.objects)
  if (!index) {
    index = new Map()
    for (const o of ctx.objects) {
      if (!o || typeof o.kind !== 'string' || typeof o.apiVersion !== 'string' || !isRecord(o.metadata)) continue
      const k = kindKey(o)
      const bucket = index.get(k)
      if (bucket) bucket.push(o)
      else index.set(k, [o])
    }
    KIND_INDEX.set(ctx.objects, index)
  }
  return index.get(key) ?? []
}

export function findObject(ctx: ClassifyContext, group: string, kind: string, namespace: string, name: string): KubeObject | undefined {
  const key = `${group || 'core'}/${kind}`
  // The first object of a name wins, as a scan would find it.
  const index = memo(ctx, `by-name:${key}`, () => {
    const byName = new Map<string, KubeObject>()
    for (const o of objectsOfKind(ctx, key)) {
      const k = `${o.metadata.namespace ?? ctx.namespace}/${o.metadata.name}`
      if (!byName.has(k)) byName.set(k, o)
    }
    return byName
  })
  return index.get(`${namespace}/${name}`)
}

/** Labels of a namespace: the migrated one from its analysed state, others from Namespace objects in the snapshot. */
export function namespaceLabels(ctx: ClassifyContext, namespace: string): Labels | undefined {
  if (namespace === ctx.namespace) return {'kubernetes.io/metadata.name': namespace, ...ctx.namespaceState.labels}
  const ns = objectsOfKind(ctx, 'core/Namespace').find((o) => o.metadata.name === namespace)
  return ns ? {'kubernetes.io/metadata.name': namespace, ...(ns.metadata.labels ?? {})} : undefined
}

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
  return obj !== undefined && obj.kind === 'Gateway' && groupOf(obj.apiVersion) === GATEWAY_API_GROUP && obj.spec?.gatewayClassName === WAYPOINT_CLASS
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
export function targetRefsOf(spec: {targetRef?: PolicyTargetReference; targetRefs?: PolicyTargetReference[]} | undefined): {path: string; ref: PolicyTargetReference}[] {
  const out: {path: string; ref: PolicyTargetReference}[] = []
  if (Array.isArray(spec?.targetRefs)) spec!.targetRefs!.forEach((ref, i) => out.push({path: `spec.targetRefs[${i}]`, ref: ref ?? {}}))
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
      out.reasons.push(reason(`${path}.namespace`, `points at namespace ${ref.namespace}: a targetRef outside the policy's namespace never attaches`))
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
            (bound ? ` — bound to waypoint ${bound.namespace}/${bound.name}` : ctx.waypointPlanned ? ' — the plan binds it to a waypoint' : ' — the Service is not bound to a waypoint yet'),
        ),
      )
    } else if (kind === 'ServiceEntry' && group === NETWORKING) {
      out.waypoint = true
      out.reasons.push(reason(path, `attached to the (egress) waypoint of ServiceEntry ${name}; enforced only when the ServiceEntry is bound to a waypoint`))
    } else if (kind === 'Gateway' && group === GATEWAY_API_GROUP) {
      const gw = findObject(ctx, GATEWAY_API_GROUP, 'Gateway', policyNs, name)
      if (gw && !isWaypointClassGateway(gw)) {
        out.reasons.push(reason(path, `attached to Gateway ${name} of class ${gw.spec?.gatewayClassName ?? '(none)'}, not a waypoint: applies to that gateway's own proxy`))
        continue
      }
      out.waypoint = true
      for (const s of servicesBoundTo(ctx, policyNs, name)) services.add(s)
      if (policyNs === ctx.namespace && ctx.waypointPlanned && !gw) for (const s of allServices(ctx)) services.add(s)
      out.reasons.push(
        reason(path, gw ? `attached to waypoint ${policyNs}/${name}; enforced by the waypoint only` : `attached to Gateway ${name} (not in the snapshot; assumed to be a waypoint); enforced by that waypoint only`),
      )
    } else if (kind === 'GatewayClass' && group === GATEWAY_API_GROUP) {
      if (name !== WAYPOINT_CLASS) {
        out.reasons.push(reason(path, `attached to GatewayClass ${name}: applies to gateways of that class, not to waypoints`))
      } else if (policyNs !== ctx.rootNamespace) {
        out.reasons.push(reason(path, `GatewayClass ${WAYPOINT_CLASS} is only honoured for policies in the root namespace ${ctx.rootNamespace} (status Invalid)`))
      } else {
        out.waypoint = true
        for (const s of servicesBehindWaypoints(ctx)) services.add(s)
        out.reasons.push(reason(path, `attached to every ${WAYPOINT_CLASS} waypoint of the mesh, including the ones serving ${ctx.namespace}`))
      }
    } else {
      out.reasons.push(reason(path, `targetRef kind ${group ? `${group}/` : ''}${kind} is not one waypoints attach to`))
    }
  }
  out.services = uniqSorted(services)
  return out
}

export interface SelectorCoverage {
  /** Workloads of the namespace the selector covers (all of them when there is no selector). */
  workloads: WorkloadItem[]
  /** There is a selector and it covers only gateway/waypoint pods (which keep their own proxy). */
  proxiesOnly: boolean
  /** There is a selector and it covers no workload of the namespace. */
  unmatched: boolean
  services: string[]
}

export function selectorCoverage(ctx: ClassifyContext, selector: Labels | undefined): SelectorCoverage {
  const workloads = matchingWorkloads(ctx, selector)
  const selective = hasLabels(selector)
  return {
    workloads,
    proxiesOnly: selective && workloads.length > 0 && workloads.every(isProxyWorkload),
    unmatched: selective && workloads.length === 0,
    services: servicesCovering(ctx, workloads.filter((w) => !isProxyWorkload(w))),
  }
}

export function workloadNames(workloads: WorkloadItem[]): string {
  return uniqSorted(workloads.map((w) => w.ref.name)).join(', ')
}

/** creationTimestamp order, oldest first, then name — how istiod picks "the oldest" of competing policies. */
export function compareAge(a: KubeObject, b: KubeObject): number {
  const ta = a.metadata.creationTimestamp ?? ''
  const tb = b.metadata.creationTimestamp ?? ''
  if (ta !== tb) return ta === '' ? 1 : tb === '' ? -1 : ta < tb ? -1 : 1
  return a.metadata.name.localeCompare(b.metadata.name)
}

/**
 * The waypoint that serves a destination host outside the migrated namespace: a Kubernetes Service's binding,
 * or a ServiceEntry (with that host) labelled istio.io/use-waypoint. `namespace` is the destination's namespace.
 */
/** The waypoint an earlier wave of the fleet plan binds the Service to (not a Service that opts out with use-waypoint: none). */
function plannedWaypoint(ctx: ClassifyContext, namespace: string, service: string): WaypointBinding | undefined {
  const name = ctx.earlierWaypoints?.[namespace]
  if (!name || namespace === ctx.namespace) return undefined
  // A cluster read of one namespace has no other namespace's Services: only a label seen opts one out.
  const svc = findObject(ctx, '', 'Service', namespace, service)
  if (svc?.metadata.labels?.[USE_WAYPOINT_LABEL] !== undefined) return undefined
  return {namespace, name, via: 'fleet-plan'}
}

export function destinationWaypoint(ctx: ClassifyContext, target: HostTarget): {waypoint: WaypointBinding; namespace: string} | undefined {
  if (target.serviceNamespace && target.serviceName) {
    const wp = serviceWaypoint(ctx, target.serviceNamespace, target.serviceName) ?? plannedWaypoint(ctx, target.serviceNamespace, target.serviceName)
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

// Per-context memo for derived tables that several objects of one classification run share
// (PeerAuthentication resolution, VirtualService subset references). Keyed by the context object, so a
// second run with another context (e.g. waypointPlanned: true) recomputes.
const MEMO = new WeakMap<ClassifyContext, Map<string, unknown>>()

export function memo<T>(ctx: ClassifyContext, key: string, compute: () => T): T {
  let m = MEMO.get(ctx)
  if (!m) {
    m = new Map()
    MEMO.set(ctx, m)
  }
  if (!m.has(key)) m.set(key, compute())
  return m.get(key) as T
}
