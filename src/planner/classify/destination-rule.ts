// DestinationRule (DOMAIN §3.5, §7 E11/E13, §8).
// ztunnel ignores DestinationRules completely. A waypoint applies the traffic policy of the DR it resolves
// for a Service: DR in the waypoint's namespace → DR exported from the Service's namespace → DR exported
// from the root namespace (first match wins, no merging; a DR in a third namespace is never used).
// What it applies: connection pools, outlier detection, load balancing, TLS origination (SIMPLE/MUTUAL),
// proxyProtocol, portLevelSettings, tunnel, retryBudget; subsets are reachable only through VirtualService
// `subset`. ISTIO_MUTUAL is ignored (HBONE is mTLS anyway) and DISABLE no longer disables mesh mTLS.
// `workloadSelector` DRs apply only to matching sidecars of their own namespace: never to waypoints.
import {finding} from '../findings/finding.js'
import type {ClassifyContext} from '../context.js'
import type {Finding, KubeObject, ObjectRef} from '../model.js'
import type {DestinationRuleSpec, TrafficPolicy, VirtualServiceSpec} from '../istio-types.js'
import {formatRef, refOf} from '../refs.js'
import {stableJson} from '../canonical.js'
import {
  type Classified,
  type KindClassifier,
  classifiedId,
  item,
  list,
  reason,
  uniqSorted,
  workloadNames,
} from './results.js'
import {compareAge, itemRef, memo, objectsOfKind, namespaceOf} from './objects.js'
import {destinationWaypoint, serviceWaypoint} from './waypoints.js'
import {type HostTarget, exportedTo, hostCovers, hostTarget, resolveHost, serviceFqdn} from './hosts.js'
import {hasLabels, isProxyWorkload, noPodSelected, selectorCoverage} from './selection.js'
import {isRecord} from '../json.js'
import {namespaceEgressEntry} from './service-entry.js'
import {destinations, isMeshBound} from './virtual-service.js'
import {NETWORKING, USE_WAYPOINT_NAMESPACE_LABEL} from '../vocab.js'

export interface TrafficPolicyFields {
  /** Fields a waypoint applies (and ztunnel ignores), as reasons. */
  applied: string[]
  /** Fields with no effect in ambient, as reasons. */
  inert: string[]
}

/** The DestinationRule traffic-policy table of DOMAIN §3.5, field by field. */
export function trafficPolicyFields(tp: TrafficPolicy | undefined, path: string): TrafficPolicyFields {
  const out: TrafficPolicyFields = {applied: [], inert: []}
  if (tp === undefined || tp === null || typeof tp !== 'object' || Array.isArray(tp)) return out
  if (tp.connectionPool !== undefined)
    out.applied.push(
      reason(
        `${path}.connectionPool`,
        'connection pool: applied by the waypoint (tcp idleTimeout/maxConnectionDuration also on its TCP proxy), ignored by ztunnel',
      ),
    )
  if (tp.outlierDetection !== undefined)
    out.applied.push(
      reason(`${path}.outlierDetection`, 'outlier detection: applied by the waypoint, ignored by ztunnel'),
    )
  if (tp.loadBalancer !== undefined) {
    out.applied.push(
      reason(
        `${path}.loadBalancer`,
        'load balancing: applied by the waypoint (not for DYNAMIC_DNS services); ztunnel balances per connection',
      ),
    )
    if (isRecord(tp.loadBalancer) && tp.loadBalancer.localityLbSetting !== undefined) {
      out.applied.push(
        reason(
          `${path}.loadBalancer.localityLbSetting`,
          'locality load balancing: applied by the waypoint only; ztunnel prefers locality from Service spec.trafficDistribution / networking.istio.io/traffic-distribution',
        ),
      )
    }
  }
  const mode = tp.tls?.mode
  if (mode === 'SIMPLE' || mode === 'MUTUAL')
    out.applied.push(
      reason(`${path}.tls.mode`, `${mode}: TLS origination, done by the waypoint only (lost for callers without one)`),
    )
  else if (mode === 'ISTIO_MUTUAL')
    out.inert.push(
      reason(
        `${path}.tls.mode`,
        'ISTIO_MUTUAL: ignored at waypoints and by ztunnel; mesh traffic is HBONE (mTLS) anyway',
      ),
    )
  else if (mode === 'DISABLE')
    out.inert.push(reason(`${path}.tls.mode`, 'DISABLE: no-op in ambient — it no longer disables mesh mTLS (HBONE)'))
  if (tp.proxyProtocol !== undefined)
    out.applied.push(reason(`${path}.proxyProtocol`, 'PROXY protocol to the upstream: applied by the waypoint'))
  if (tp.tunnel !== undefined)
    out.applied.push(reason(`${path}.tunnel`, "tunnel settings: applied on the waypoint's TCP proxy"))
  if (tp.retryBudget !== undefined)
    out.applied.push(reason(`${path}.retryBudget`, 'retry budget: applied by the waypoint'))
  ;(Array.isArray(tp.portLevelSettings) ? tp.portLevelSettings : []).forEach((pl, i) => {
    const sub = trafficPolicyFields(pl, `${path}.portLevelSettings[${i}]`)
    out.applied.push(...sub.applied)
    out.inert.push(...sub.inert)
  })
  return out
}

interface SubsetUse {
  subset: string
  /** "VirtualService ns/name" */
  by: string
  /** Namespace of the VirtualService. */
  namespace: string
  /** The VirtualService lives in the migrated namespace and routes its own Services (it is what gets converted). */
  converted: boolean
}

interface SubsetReference extends Omit<SubsetUse, 'converted'> {
  /** FQDN of the destination host. */
  fqdn: string
  vs: KubeObject
}

type RuleIndex = Map<string, {exact: Map<string, RuleHost[]>; wildcards: RuleHost[]}>

// Indexes of a snapshot's objects, built once per objects array (and namespace, which objects without one belong to),
// not once per classification context: plan -A builds several contexts per namespace, each seeing hundreds of other
// namespaces' objects.
const SUBSET_REFERENCES = new WeakMap<KubeObject[], {namespace: string; index: Map<string, SubsetReference[]>}>()
const RULES_BY_NAMESPACE = new WeakMap<KubeObject[], {namespace: string; index: RuleIndex}>()

/** Every `destination.subset` of every mesh VirtualService of the snapshot, by destination FQDN. */
function subsetReferences(ctx: ClassifyContext): Map<string, SubsetReference[]> {
  const built = SUBSET_REFERENCES.get(ctx.objects)
  if (built?.namespace === ctx.namespace) return built.index
  const byHost = new Map<string, SubsetReference[]>()
  for (const vs of objectsOfKind(ctx, `${NETWORKING}/VirtualService`)) {
    const vspec: VirtualServiceSpec = isRecord(vs.spec) ? vs.spec : {}
    if (!isMeshBound(vspec)) continue
    const vns = namespaceOf(vs, ctx)
    const by = formatRef({...refOf(vs), namespace: vns})
    for (const d of destinations(vspec)) {
      const subset = d.destination.subset
      if (!subset) continue
      const fqdn = resolveHost(String(d.destination.host ?? ''), vns)
      const refs = byHost.get(fqdn) ?? []
      refs.push({subset: String(subset), by, namespace: vns, fqdn, vs})
      byHost.set(fqdn, refs)
    }
  }
  SUBSET_REFERENCES.set(ctx.objects, {namespace: ctx.namespace, index: byHost})
  return byHost
}

/** The VirtualService lives in the migrated namespace and routes its own Services (it is what gets converted). */
function convertedHere(r: SubsetReference, ctx: ClassifyContext): boolean {
  const hosts = isRecord(r.vs.spec) ? (list(r.vs.spec.hosts) ?? []) : []
  return r.namespace === ctx.namespace && hosts.some((h) => hostTarget(h, r.namespace, ctx).ownServices.length > 0)
}

/** Mesh VirtualServices that route to this DR's host with one of its subsets. */
function subsetUses(obj: KubeObject, spec: DestinationRuleSpec, ctx: ClassifyContext): SubsetUse[] {
  const ns = namespaceOf(obj, ctx)
  const names = new Set((Array.isArray(spec.subsets) ? spec.subsets : []).map((s) => String(s?.name ?? '')))
  if (names.size === 0 || !spec.host) return []
  const drHost = hostTarget(String(spec.host), ns, ctx).fqdn
  const refs = subsetReferences(ctx)
  const candidates = drHost.startsWith('*')
    ? [...refs.values()].flat().filter((r) => hostCovers(drHost, r.fqdn))
    : (refs.get(drHost) ?? [])
  const out: SubsetUse[] = []
  for (const r of candidates) {
    if (!names.has(r.subset) || out.some((u) => u.subset === r.subset && u.by === r.by)) continue
    out.push({subset: r.subset, by: r.by, namespace: r.namespace, converted: convertedHere(r, ctx)})
  }
  return out
}

/** How specific a DR host is for a Service: exact beats wildcard, longer wildcard beats shorter. */
function specificity(pattern: string): number {
  return pattern.startsWith('*') ? pattern.length : Number.MAX_SAFE_INTEGER
}

interface RuleHost {
  obj: KubeObject
  /** The DR's host as an FQDN (possibly a wildcard). */
  pattern: string
}

/** DestinationRules without workloadSelector, by namespace, split into exact hosts (by FQDN) and wildcards; input order kept. */
function rulesByNamespace(ctx: ClassifyContext): RuleIndex {
  const built = RULES_BY_NAMESPACE.get(ctx.objects)
  if (built?.namespace === ctx.namespace) return built.index
  const index: RuleIndex = new Map()
  for (const o of objectsOfKind(ctx, `${NETWORKING}/DestinationRule`)) {
    if (hasLabels(o.spec?.workloadSelector?.matchLabels) || typeof o.spec?.host !== 'string') continue
    const namespace = namespaceOf(o, ctx)
    const pattern = resolveHost(o.spec.host, namespace)
    let entry = index.get(namespace)
    if (!entry) index.set(namespace, (entry = {exact: new Map(), wildcards: []}))
    if (pattern.startsWith('*')) entry.wildcards.push({obj: o, pattern})
    else entry.exact.set(pattern, [...(entry.exact.get(pattern) ?? []), {obj: o, pattern}])
  }
  RULES_BY_NAMESPACE.set(ctx.objects, {namespace: ctx.namespace, index})
  return index
}

/** DestinationRules (without workloadSelector) in `namespace` whose host covers the FQDN and that are exported to `to`. */
function rulesFor(namespace: string, fqdn: string, to: string, ctx: ClassifyContext): RuleHost[] {
  const entry = rulesByNamespace(ctx).get(namespace)
  if (!entry) return []
  return [...(entry.exact.get(fqdn) ?? []), ...entry.wildcards.filter((r) => hostCovers(r.pattern, fqdn))]
    .filter((r) => exportedTo(r.obj.spec?.exportTo, namespace, to))
    .sort((a, b) => specificity(b.pattern) - specificity(a.pattern) || compareAge(a.obj, b.obj))
}

/**
 * For each of the migrated namespace's Services the DR's host covers: does the waypoint resolve this DR?
 * Namespaces are tried in order waypoint namespace → Service namespace → root namespace (first namespace
 * with a matching DR wins; within it the most specific host).
 */
/** The DestinationRule the waypoint resolves for a Service: the first namespace in `order` with one wins. */
function ruleWinner(fqdn: string, order: string[], wns: string, ctx: ClassifyContext): KubeObject | undefined {
  const winners = memo(ctx, 'dr:winners', () => new Map<string, KubeObject | undefined>())
  const key = `${fqdn} ${order.join(',')} ${wns}`
  if (!winners.has(key)) {
    let winner: KubeObject | undefined
    for (const candidateNs of order) {
      const found = rulesFor(candidateNs, fqdn, wns, ctx)
      if (found.length > 0) {
        winner = found[0]!.obj
        break
      }
    }
    winners.set(key, winner)
  }
  return winners.get(key)
}

function resolvedFor(
  obj: KubeObject,
  target: HostTarget,
  ctx: ClassifyContext,
): {used: string[]; shadowed: {service: string; by: string; byNamespace?: string}[]} {
  const ns = namespaceOf(obj, ctx)
  const wns = ctx.namespaceState.labels[USE_WAYPOINT_NAMESPACE_LABEL] || ctx.namespace
  const order = [wns, ctx.namespace, ctx.rootNamespace].filter((n, i, a) => a.indexOf(n) === i)
  const used: string[] = []
  const shadowed: {service: string; by: string; byNamespace?: string}[] = []
  for (const svc of target.ownServices) {
    const fqdn = serviceFqdn(svc, ctx.namespace)
    const winner = ruleWinner(fqdn, order, wns, ctx)
    if (winner && winner.metadata.name === obj.metadata.name && namespaceOf(winner, ctx) === ns) used.push(svc)
    else if (winner)
      shadowed.push({
        service: svc,
        by: formatRef({...refOf(winner), namespace: namespaceOf(winner, ctx)}),
        byNamespace: namespaceOf(winner, ctx),
      })
    else shadowed.push({service: svc, by: `no DestinationRule visible from ${wns}`})
  }
  return {used, shadowed}
}

/** Whether the host (outside the migrated namespace) has a waypoint that resolves this DR for ambient callers. */
function destinationWaypointApplies(
  target: HostTarget,
  drNamespace: string,
  exportTo: unknown,
  ctx: ClassifyContext,
): string | undefined {
  const dest = destinationWaypoint(ctx, target)
  if (!dest) return undefined
  const wp = dest.waypoint
  if (![wp.namespace, dest.namespace, ctx.rootNamespace].includes(drNamespace)) return undefined
  if (!exportedTo(exportTo, drNamespace, wp.namespace)) return undefined
  return `${wp.namespace}/${wp.name}${wp.via === 'fleet-plan' ? ' (bound by an earlier wave of the fleet plan)' : ''}`
}

/**
 * Whether the namespace's own waypoint applies this DestinationRule as the egress waypoint of an external host
 * (DOMAIN §3.5): a ServiceEntry of the namespace declares the host and is served by that waypoint
 * (namespaceEgressEntry), and the rule is the one the waypoint resolves for it (waypoint = ServiceEntry namespace
 * → root namespace, most specific host first). `served: false` with the reason when the entry exists but the
 * waypoint cannot serve it, or another rule wins.
 */
function namespaceEgress(
  obj: KubeObject,
  target: HostTarget,
  ctx: ClassifyContext,
): {served: boolean; why: string; shadowedLocally?: boolean} | undefined {
  if (target.wildcard || target.serviceName) return undefined
  const egress = namespaceEgressEntry(target.fqdn, ctx)
  if (!egress || !egress.served) return egress
  let winner: KubeObject | undefined
  for (const n of [ctx.namespace, ctx.rootNamespace]) {
    winner = rulesFor(n, target.fqdn, ctx.namespace, ctx)[0]?.obj
    if (winner) break
  }
  if (winner && winner.metadata.name === obj.metadata.name && namespaceOf(winner, ctx) === namespaceOf(obj, ctx))
    return egress
  const by = winner
    ? formatRef({...refOf(winner), namespace: namespaceOf(winner, ctx)})
    : 'no rule it can see (exportTo)'
  // A winner in this namespace also won for its sidecar callers (client namespace first): this rule never applied to them.
  return {
    served: false,
    why: `${egress.why}, but it resolves ${by} for ${target.fqdn} (DestinationRules are not merged)`,
    shadowedLocally: winner !== undefined && namespaceOf(winner, ctx) === ctx.namespace,
  }
}

export function classifyDestinationRule(obj: KubeObject, ctx: ClassifyContext): Classified {
  const ref = itemRef(obj, ctx)
  const ns = ref.namespace!
  const spec: DestinationRuleSpec = isRecord(obj.spec) ? obj.spec : {}
  const local = ns === ctx.namespace
  const host = String(spec.host ?? '')
  const target = hostTarget(host, ns, ctx)
  const inertAction = local ? 'no-effect' : 'keep'

  if (hasLabels(spec.workloadSelector?.matchLabels)) return selectorRule(obj, spec, ref, target, ctx)

  const f: DestinationRuleFacts = {
    ref,
    ns,
    spec,
    local,
    root: ns === ctx.rootNamespace,
    name: formatRef(ref),
    host,
    target,
    inertAction,
    ...policyFacts(obj, spec, ctx),
  }
  if (target.ownServices.length > 0) return ownServicesRule(obj, f, ctx)
  return externalHostRule(obj, f, ctx)
}

/** What the DestinationRule classifiers read, computed once. */
interface DestinationRuleFacts extends ReturnType<typeof policyFacts> {
  ref: ObjectRef
  ns: string
  spec: DestinationRuleSpec
  local: boolean
  root: boolean
  name: string
  host: string
  target: HostTarget
  inertAction: 'no-effect' | 'keep'
}

/** The traffic-policy fields (top level and per subset) and who uses the subsets. */
function policyFacts(obj: KubeObject, spec: DestinationRuleSpec, ctx: ClassifyContext) {
  const top = trafficPolicyFields(spec.trafficPolicy, 'spec.trafficPolicy')
  const applied = [...top.applied]
  const inertFields = [...top.inert]
  ;(Array.isArray(spec.subsets) ? spec.subsets : []).forEach((s, i) => {
    const sub = trafficPolicyFields(s?.trafficPolicy, `spec.subsets[${i}].trafficPolicy`)
    applied.push(...sub.applied)
    inertFields.push(...sub.inert)
  })
  const uses = subsetUses(obj, spec, ctx)
  const subsetNames = (Array.isArray(spec.subsets) ? spec.subsets : []).map((s) => String(s?.name ?? ''))
  const subsetReasons = subsetNames.map((s, i) => {
    const u = uses.filter((x) => x.subset === s)
    return reason(
      `spec.subsets[${i}]`,
      u.length === 0
        ? `subset ${s}: not referenced by any mesh VirtualService — no effect`
        : `subset ${s}: used by ${u.map((x) => x.by).join(', ')}${u.some((x) => x.converted) ? '; HTTPRoute cannot reference subsets: create one Service per version' : ''}`,
    )
  })
  return {applied, inertFields, uses, subsetReasons}
}

/** DestinationRule for Services of the migrated namespace: what its waypoint resolves (E13). */
function ownServicesRule(obj: KubeObject, f: DestinationRuleFacts, ctx: ClassifyContext): Classified {
  const {ref, ns, local, root, name, host, target, inertAction, applied, inertFields, uses, subsetReasons} = f
  const reasons: string[] = []
  const findings: Finding[] = []
  const {used, shadowed} = resolvedFor(obj, target, ctx)
  reasons.push(
    reason(
      'spec.host',
      `${host}: Services ${target.ownServices.join(', ')} of ${ctx.namespace}; ztunnel ignores DestinationRules, a waypoint applies the one it resolves (waypoint ns → service ns → root ns)`,
    ),
  )
  for (const s of shadowed)
    reasons.push(
      reason(
        'spec.host',
        `not used for ${s.service}: the waypoint resolves ${s.by} first (DRs are not merged across namespaces, E13)`,
      ),
    )
  if (!local && !root)
    reasons.push(
      reason(
        'metadata.namespace',
        `in ${ns}, a third namespace: applied only by the sidecar clients there; a waypoint never uses it`,
      ),
    )
  reasons.push(...applied, ...inertFields, ...subsetReasons)
  const services = used.length > 0 ? used : target.ownServices

  // E13: a root DR shadowed by a DR of the Service's own namespace (the waypoint's too) was shadowed for the
  // namespace's sidecar clients as well (client ns → Service ns → root): the migration loses nothing.
  const wns = ctx.namespaceState.labels[USE_WAYPOINT_NAMESPACE_LABEL] || ctx.namespace
  if (
    root &&
    used.length === 0 &&
    wns === ctx.namespace &&
    shadowed.length > 0 &&
    shadowed.every((s) => s.byNamespace === ctx.namespace)
  ) {
    reasons.push(
      reason(
        'spec.host',
        `sidecar clients of ${ctx.namespace} resolve ${uniqSorted(shadowed.map((s) => s.by)).join(', ')} first too (client namespace → Service namespace → root): this rule does not apply to them today, so nothing is lost`,
      ),
    )
    return {item: item(ref, 'inert', inertAction, reasons, {scope: 'mesh-routing', services}), findings}
  }
  if (used.length === 0 && (applied.length > 0 || uses.length > 0)) {
    findings.push(
      finding(
        'DestinationRuleNotUsedByWaypoint',
        ref,
        {
          name,
          ownServices: target.ownServices,
          namespace: ctx.namespace,
          shadowed: shadowed.map((s) => `${s.service}: ${s.by}`).join('; '),
        },
        {id: classifiedId('E13', ref), severity: 'error'},
      ),
    )
    return {item: item(ref, 'L7', 'lost-client-side', reasons, {scope: 'client-side', services}), findings}
  }
  if (uses.some((u) => u.converted))
    return {item: item(ref, 'L7', 'retarget', reasons, {scope: 'mesh-routing', services}), findings}
  if (used.length > 0 && applied.length > 0) {
    reasons.push(
      reason(
        'spec.trafficPolicy',
        `only a waypoint applies this traffic policy for ${used.join(', ')}: it needs one in front of the Services`,
      ),
    )
    return {item: item(ref, 'L7', 'keep', reasons, {scope: 'mesh-routing', services}), findings}
  }
  if (uses.length > 0)
    return {item: item(ref, 'unaffected', 'keep', reasons, {scope: 'mesh-routing', services}), findings}
  return {item: item(ref, 'inert', inertAction, reasons, {scope: 'mesh-routing', services}), findings}
}

/** An external host declared by a ServiceEntry of this namespace: the namespace's waypoint is its egress waypoint. Otherwise: Client-side DestinationRule for other namespaces' or external hosts, seen by this namespace's callers (E11). */
function externalHostRule(obj: KubeObject, f: DestinationRuleFacts, ctx: ClassifyContext): Classified {
  const {ref, ns, spec, local, name, host, target, inertAction, applied, inertFields, uses, subsetReasons} = f
  const reasons: string[] = []
  const findings: Finding[] = []
  const egress = namespaceEgress(obj, target, ctx)
  if (egress?.served && (local || ctx.waypointPlanned)) {
    reasons.push(
      reason(
        'spec.host',
        `${host}: ${egress.why}; it applies this DestinationRule for the host to every ambient caller (callers that still have sidecars keep applying it themselves)`,
      ),
    )
    reasons.push(...applied, ...inertFields, ...subsetReasons)
    if (applied.length === 0)
      return {item: item(ref, 'inert', inertAction, reasons, {scope: 'mesh-routing', services: []}), findings}
    return {item: item(ref, 'L7', 'keep', reasons, {scope: 'mesh-routing', services: []}), findings}
  }

  if (egress?.shadowedLocally) {
    reasons.push(
      reason(
        'spec.host',
        `${host}: not applied to ${ctx.namespace}'s callers before or after the migration: ${egress.why}, and its sidecars resolve that one first too — nothing is lost`,
      ),
    )
    reasons.push(...applied, ...inertFields, ...subsetReasons)
    return {item: item(ref, 'inert', inertAction, reasons, {scope: 'client-side', services: []}), findings}
  }

  const wp = destinationWaypointApplies(target, ns, spec.exportTo, ctx)
  reasons.push(
    reason(
      'spec.host',
      `${host}: ${target.serviceNamespace && target.serviceName ? `Service ${target.serviceNamespace}/${target.serviceName}` : target.wildcard ? 'wildcard host' : 'external host'}; applied client-side by ${ctx.namespace}'s sidecars today, ignored by ztunnel` +
        (wp ? `; the destination's waypoint ${wp} applies it for ambient callers` : ''),
    ),
  )
  if (egress) reasons.push(reason('spec.host', `not served by the waypoint of ${ctx.namespace}: ${egress.why}`))
  reasons.push(...applied, ...inertFields, ...subsetReasons)
  if (applied.length === 0 && !uses.some((u) => u.namespace === ctx.namespace)) {
    return {item: item(ref, 'inert', inertAction, reasons, {scope: 'client-side', services: []}), findings}
  }
  if (wp) return {item: item(ref, 'unaffected', 'keep', reasons, {scope: 'client-side', services: []}), findings}
  findings.push(
    finding(
      'ClientSideTrafficPolicyLost',
      ref,
      {
        name,
        detail: local ? '' : ` (in ${ns})`,
        host,
        detail2: [
          applied.length > 0 ? `${applied.length} traffic setting(s)` : '',
          uses.length > 0 ? `subsets used by ${uniqSorted(uses.map((u) => u.by)).join(', ')}` : '',
        ]
          .filter(Boolean)
          .join('; '),
        detail3:
          spec.trafficPolicy?.tls?.mode === 'SIMPLE' || spec.trafficPolicy?.tls?.mode === 'MUTUAL'
            ? ', including TLS origination'
            : '',
        namespace: ctx.namespace,
        detail4: egress ? ` (${egress.why})` : '',
      },
      {id: classifiedId('E11', ref), severity: 'error'},
    ),
  )
  return {item: item(ref, 'L7', 'lost-client-side', reasons, {scope: 'client-side', services: []}), findings}
}

/**
 * Issue 21 §4: a DestinationRule with a workloadSelector applies only to the outbound traffic of the proxies of its
 * own namespace whose labels it matches (istio/istio pilot/pkg/model/sidecar.go SidecarScope.DestinationRule: same
 * namespace, TrafficDirectionOutbound, selector ⊆ proxy labels) and is never exported (push_context.go
 * setDestinationRules: visibility.Private). Waypoints resolve only rules without one (DOMAIN §3.5). So once the
 * selected pods are ambient nothing applies it: client-side traffic policy, lost unless the destination's waypoint
 * applies the same settings with a rule of its own (for every caller, not only the selected ones).
 */
function selectorRule(
  obj: KubeObject,
  spec: DestinationRuleSpec,
  ref: ObjectRef,
  target: HostTarget,
  ctx: ClassifyContext,
): Classified {
  const reasons = [
    reason(
      'spec.workloadSelector',
      `applies only to the outbound traffic of the proxies of ${ref.namespace} it selects (never exported, never used by waypoints or ztunnel)`,
    ),
  ]
  const services = target.ownServices
  const cov = selectorCoverage(ctx, spec.workloadSelector!.matchLabels)
  const extra = {scope: 'client-side' as const, services}
  const noPod = noPodSelected(ctx, cov, 'spec.workloadSelector', ref, reasons, extra)
  if (noPod) return noPod
  if (cov.proxiesOnly) {
    reasons.push(
      reason(
        'spec.workloadSelector',
        `selects only gateway/waypoint pods (${workloadNames(cov.workloads)}), which keep their Envoy and keep applying it: unaffected`,
      ),
    )
    return {item: item(ref, 'unaffected', 'keep', reasons, extra), findings: []}
  }
  const {applied, inertFields, uses, subsetReasons} = policyFacts(obj, spec, ctx)
  const clients = workloadNames(cov.workloads.filter((w) => !isProxyWorkload(w)))
  reasons.push(
    reason('spec.host', `${target.host}: the sidecars of ${clients} apply it to their traffic to this host today`),
    ...applied,
    ...inertFields,
    ...subsetReasons,
  )
  if (applied.length === 0 && uses.length === 0) {
    reasons.push(reason('spec', 'sets nothing a proxy would apply for ambient callers: nothing is lost'))
    return {item: item(ref, 'inert', 'no-effect', reasons, extra), findings: []}
  }
  const destination = selectorRuleDestination(spec, target, ctx)
  if (destination.carriedBy) {
    reasons.push(reason('spec.host', destination.carriedBy))
    return {item: item(ref, 'unaffected', 'keep', reasons, extra), findings: []}
  }
  reasons.push(reason('spec.host', `lost once ${clients} are ambient: ${destination.need}`))
  const name = formatRef(ref)
  const what = [
    applied.length > 0 ? `${applied.length} traffic setting(s)` : '',
    uses.length > 0 ? `subsets used by ${uniqSorted(uses.map((u) => u.by)).join(', ')}` : '',
  ]
  return {
    item: item(ref, 'L7', 'lost-client-side', reasons, extra),
    findings: [
      finding(
        'SelectorDestinationRuleLost',
        ref,
        {name, host: target.host, what: what.filter(Boolean).join('; '), clients, need: destination.need},
        {id: classifiedId('E11', ref), severity: 'error'},
      ),
    ],
  }
}

/**
 * What the destination's waypoint would need to apply a workloadSelector rule's settings, and whether it already does:
 * the rule it resolves for the host (waypoint namespace → Service namespace → root, DOMAIN §3.5) has the same traffic
 * policy and subsets.
 */
function selectorRuleDestination(
  spec: DestinationRuleSpec,
  target: HostTarget,
  ctx: ClassifyContext,
): {need: string; carriedBy?: string} {
  const waypoint = selectorRuleWaypoint(target, ctx)
  if (!waypoint)
    return {
      need: `${target.host} has no waypoint${target.wildcard ? ' (a wildcard host)' : ''}: it would need one (istio.io/use-waypoint on its Service, ServiceEntry or namespace) and a DestinationRule without workloadSelector for it there, which would apply to every caller through that waypoint.`,
    }
  const order = [waypoint.namespace, waypoint.hostNamespace, ctx.rootNamespace].filter((n, i, a) => a.indexOf(n) === i)
  const winner = target.wildcard ? undefined : ruleWinner(target.fqdn, order, waypoint.namespace, ctx)
  const winnerName = winner ? formatRef({...refOf(winner), namespace: namespaceOf(winner, ctx)}) : undefined
  if (winner && sameSettings(winner.spec, spec))
    return {
      need: '',
      carriedBy: `carried: ${waypoint.text} resolves ${winnerName} for ${target.fqdn}, with the same traffic policy and subsets, for every caller`,
    }
  return {
    need: `To keep it, ${waypoint.text} would need these settings in a DestinationRule for ${target.fqdn} without workloadSelector, in ${waypoint.namespace === waypoint.hostNamespace ? waypoint.namespace : `${waypoint.namespace} or ${waypoint.hostNamespace}`}${winnerName ? ` (it resolves ${winnerName} today, which that rule would have to replace: DestinationRules are not merged)` : ''}; it then applies to every caller through the waypoint, not only the selected ones.`,
  }
}

/** The waypoint that serves the host of a workloadSelector rule, if any. */
function selectorRuleWaypoint(
  target: HostTarget,
  ctx: ClassifyContext,
): {namespace: string; hostNamespace: string; text: string} | undefined {
  if (target.ownServices.length > 0) {
    if (ctx.waypointPlanned)
      return {
        namespace: ctx.namespace,
        hostNamespace: ctx.namespace,
        text: `the waypoint this plan deploys in ${ctx.namespace}`,
      }
    const bound = target.ownServices.map((s) => serviceWaypoint(ctx, ctx.namespace, s)).find((w) => w !== undefined)
    return bound
      ? {namespace: bound.namespace, hostNamespace: ctx.namespace, text: `waypoint ${bound.namespace}/${bound.name}`}
      : undefined
  }
  const egress = target.wildcard || target.serviceName ? undefined : namespaceEgressEntry(target.fqdn, ctx)
  if (egress?.served && ctx.waypointPlanned)
    return {
      namespace: ctx.namespace,
      hostNamespace: ctx.namespace,
      text: `the waypoint of ${ctx.namespace} (its egress waypoint)`,
    }
  const dest = destinationWaypoint(ctx, target)
  if (!dest) return undefined
  return {
    namespace: dest.waypoint.namespace,
    hostNamespace: dest.namespace,
    text: `waypoint ${dest.waypoint.namespace}/${dest.waypoint.name}`,
  }
}

/** Same traffic policy and subsets (what a proxy applies), compared as canonical JSON. */
function sameSettings(a: DestinationRuleSpec | undefined, b: DestinationRuleSpec): boolean {
  const settings = (s: DestinationRuleSpec | undefined) =>
    stableJson({trafficPolicy: s?.trafficPolicy ?? null, subsets: s?.subsets ?? null})
  return settings(a) === settings(b)
}

/** DestinationRules elsewhere: those this namespace's sidecars see (exportTo), and those for its Services (root: E13). */
function relevantElsewhere(obj: KubeObject, ctx: ClassifyContext): boolean {
  const spec: DestinationRuleSpec = isRecord(obj.spec) ? obj.spec : {}
  const ns = namespaceOf(obj, ctx)
  if (hasLabels(spec.workloadSelector?.matchLabels)) return false
  if (exportedTo(spec.exportTo, ns, ctx.namespace)) return true
  return typeof spec.host === 'string' && hostTarget(spec.host, ns, ctx).ownServices.length > 0
}

export const destinationRuleClassifier: KindClassifier = {
  kinds: [`${NETWORKING}/DestinationRule`],
  relevantElsewhere,
  classify: classifyDestinationRule,
}
