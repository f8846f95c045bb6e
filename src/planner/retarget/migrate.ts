// Carrying selector-based policies to the waypoint, exactly (DOMAIN §3.0, §3.1 "Identity seen by each enforcement
// point" and "Re-targeting rules", §3.3, §3.10, §3.11, §4.2, §7 E9/E14/E15/E16/E21/E22).
//
// Who enforces what, once a waypoint fronts the namespace's Services:
// - callers that go through the waypoint (ambient clients addressing a Service): the waypoint applies targetRefs
//   policies with the caller's identity; the destination (sidecar until the restart, then ztunnel) applies
//   selector/namespace policies but sees the *waypoint's* identity and IP;
// - callers that bypass it (sidecar clients, ingress gateways without istio.io/ingress-use-waypoint, traffic
//   addressed to pod IPs): only the destination's selector/namespace policies, with the caller's real identity.
// So every policy ends up as up to three objects: a targetRefs copy with the full rules (waypoint), an ALLOW
// admitting the waypoint at the destination (so what the waypoint authorised passes), and the part the
// destination can enforce for bypassing callers.
import {finding} from '../findings/finding.js'
import {cleanObject, digestOf, toCanonicalYaml} from '../canonical.js'
import {
  analyzeAuthorizationPolicy,
  type AuthorizationPolicyAnalysis,
  carriedRootDeny,
  DRY_RUN_ANNOTATION,
} from '../classify/authz.js'
import {isProxyWorkload, matchingWorkloads} from '../classify/selection.js'
import {memo} from '../classify/objects.js'
import {cloneJson, groupBy, isRecord} from '../json.js'
import type {ClassifyContext} from '../context.js'
import type {AuthorizationRule} from '../istio-types.js'
import type {Finding, InventoryItem, KubeObject, ObjectRef, Severity, WorkloadItem} from '../model.js'
import {gitOpsManager} from '../namespace.js'
import {MANAGED_BY_LABEL, MANAGED_BY_VALUE, PLAN_ANNOTATION} from '../plan-types.js'
import {compareRefs, formatRef, groupOf, refKey} from '../refs.js'
import {waypointPrincipal} from '../waypoint.js'
import {
  type PeerIdentity,
  denyRulesSafeAtZtunnel,
  exemptPeer,
  onlyServiceAccountConditions,
  projectAllowRules,
  rewriteServiceAccountConditions,
  rulesMatchPeer,
  usesRequestAuth,
} from './authz-rules.js'
import {companionName, copyName, derivedObject, isRetargetable, l4PartName} from './objects.js'
import {parseBool} from '../classify/results.js'
import {retargetNoServiceFinding} from '../classify/waypoints.js'
import {
  MAX_TARGET_REFS,
  optedOutServices,
  optedOutWhy,
  planTargets,
  servedByWaypoint,
  type TargetPlan,
} from './targets.js'
import type {
  PolicyDecision,
  PolicyDisposition,
  PolicyMigration,
  PolicyMigrationInput,
  PolicyPlacement,
  PolicyRole,
} from './types.js'
import {GATEWAY_API_GROUP, WAYPOINT_CLASS} from '../vocab.js'
import {byCodePoint} from '../order.js'

const AP = 'security.istio.io/AuthorizationPolicy'
const RA = 'security.istio.io/RequestAuthentication'
const TELEMETRY = 'telemetry.istio.io/Telemetry'
const WASM = 'extensions.istio.io/WasmPlugin'
const ROLE_ORDER: PolicyRole[] = ['original', 'waypoint-copy', 'ztunnel-companion', 'ztunnel-l4']

function kindKeyOf(ref: Pick<ObjectRef, 'apiVersion' | 'kind'>): string {
  return `${groupOf(ref.apiVersion)}/${ref.kind}`
}

function list(names: string[]): string {
  return names.join(', ')
}

function plural(n: number, one: string, many: string): string {
  return n === 1 ? one : many
}

interface Run {
  input: PolicyMigrationInput
  ns: string
  rootNs: string
  waypointNs: string
  waypointPlanned: boolean
  minor: number | undefined
  peer: PeerIdentity
  /** The waypoint's principals the companions admit: in the trust domain and each of its aliases. */
  admitted: string[]
  ctx: ClassifyContext
  /** The objects of the kinds a plan re-targets (the only ones looked up by key), by key. */
  objects: Map<string, KubeObject>
  analyses: Map<string, AuthorizationPolicyAnalysis>
  findings: Finding[]
  /** Namespace-level facts gathered while planning, turned into findings at the end. */
  carriedL7: string[]
  /** Originals whose copies target Services (not the Gateway). */
  serviceTargeted: string[]
  principalUsed: boolean
}

/**
 * What the plan does with every AuthorizationPolicy, RequestAuthentication, Telemetry and WasmPlugin of the
 * inventory: objects created before the waypoint is bound, originals deleted (and L4 projections applied)
 * right after the restart, findings for every non-equivalence, and per policy where it is enforced.
 * Pure and deterministic.
 */
export function planPolicyMigration(input: PolicyMigrationInput): PolicyMigration {
  const ns = input.namespace
  const waypointNs = input.waypointNamespace ?? ns
  const trustDomain = input.trustDomain ?? 'cluster.local'
  // istiod names the waypoint's ServiceAccount after the Gateway unless told otherwise (DOMAIN §1.3).
  const serviceAccount = input.waypointServiceAccount ?? input.waypointName
  const minorMatch = /^v?1\.(\d+)/.exec(input.istioVersion ?? '')
  const ctx: ClassifyContext = {
    namespace: ns,
    rootNamespace: input.rootNamespace ?? 'istio-system',
    namespaceState: {
      name: ns,
      labels: {},
      sidecarLabels: [],
      injection: 'none',
      mode: 'sidecar',
      multipleInjectionLabels: false,
    },
    workloads: input.workloads,
    services: input.services,
    objects: input.objects,
    waypointPlanned: input.waypointPlanned ?? true,
    ...(input.istioVersion ? {istioVersion: input.istioVersion} : {}),
  }
  const run: Run = {
    input,
    ns,
    rootNs: ctx.rootNamespace,
    waypointNs,
    waypointPlanned: ctx.waypointPlanned,
    minor: minorMatch ? Number(minorMatch[1]) : undefined,
    peer: {
      principal: waypointPrincipal(waypointNs, serviceAccount, trustDomain),
      namespace: waypointNs,
      serviceAccount: `${waypointNs}/${serviceAccount}`,
      trustDomain,
      trustDomainAliases: input.trustDomainAliases ?? [],
    },
    // ztunnel compares principals literally: the companions name the waypoint in the trust domain and each alias.
    admitted: [trustDomain, ...(input.trustDomainAliases ?? [])].map((td) =>
      waypointPrincipal(waypointNs, serviceAccount, td),
    ),
    ctx,
    objects: new Map(),
    analyses: new Map(),
    findings: [],
    carriedL7: [],
    serviceTargeted: [],
    principalUsed: false,
  }
  for (const o of input.objects) {
    if (!o || typeof o.kind !== 'string' || typeof o.apiVersion !== 'string' || !o.metadata?.name) continue
    if (!isRetargetable(o)) continue
    const key = refKey({
      apiVersion: o.apiVersion,
      kind: o.kind,
      namespace: o.metadata.namespace ?? ns,
      name: o.metadata.name,
    })
    if (!run.objects.has(key)) run.objects.set(key, o)
  }

  const items = input.items
    .filter((i) => isRetargetable(i.ref) && run.objects.has(refKey(i.ref)))
    .sort((a, b) => compareRefs(a.ref, b.ref))
  for (const i of items) {
    if (kindKeyOf(i.ref) === AP)
      run.analyses.set(refKey(i.ref), analyzeAuthorizationPolicy(run.objects.get(refKey(i.ref))!, ctx))
  }

  const decisions: PolicyDecision[] = []
  for (const item of items) {
    const obj = run.objects.get(refKey(item.ref))!
    decisions.push(
      kindKeyOf(item.ref) === AP ? planAuthorizationPolicy(run, item, obj) : planSelectorKind(run, item, obj),
    )
  }
  completeWaypointAllowSets(run, decisions)
  reuseExistingCopies(run, decisions)

  requestAuthenticationFindings(run, decisions)
  namespaceFindings(run)
  nameFindings(run, decisions)
  gitOpsFindings(run, decisions)

  const findings = dedupe(run.findings)
  const findingsByRef = groupBy(
    findings.filter((f) => f.ref),
    (f) => refKey(f.ref!),
  )
  for (const d of decisions) {
    d.findings = (findingsByRef.get(refKey(d.ref)) ?? []).map((f) => f.id).sort()
    d.created.sort((a, b) => ROLE_ORDER.indexOf(a.role) - ROLE_ORDER.indexOf(b.role) || compareRefs(a.ref, b.ref))
  }

  const created = decisions.flatMap((d) => d.created)
  return {
    createBeforeBind: created.filter((p) => p.createdIn === 'create-policies').map((p) => p.object),
    replaceAfterRestart: {
      delete: decisions.filter((d) => d.original.deletedIn === 'delete-sidecar-policies').map((d) => d.original.object),
      apply: created.filter((p) => p.createdIn === 'delete-sidecar-policies').map((p) => p.object),
    },
    findings,
    decisions,
  }
}

// --- placements ----------------------------------------------------------------------------------

function refOfObject(o: KubeObject): ObjectRef {
  return {apiVersion: o.apiVersion, kind: o.kind, namespace: o.metadata.namespace!, name: o.metadata.name}
}

function nonProxy(workloads: WorkloadItem[]): WorkloadItem[] {
  return workloads.filter((w) => !isProxyWorkload(w))
}

/** "Kind/name" of each workload: names alone may repeat across kinds. */
function workloadKeys(workloads: WorkloadItem[]): string[] {
  return [...new Set(workloads.map((w) => `${w.ref.kind}/${w.ref.name}`))].sort()
}

function names(workloads: WorkloadItem[]): string[] {
  return [...new Set(workloads.map((w) => w.ref.name))].sort()
}

/** "Kind/name" of the workloads behind these Services of the namespace. */
function workloadsBehind(run: Run, services: string[]): string[] {
  const index = memo(run.ctx, 'retarget:workloads-behind', () => ({
    services: groupBy(run.ctx.services, (s) => s.ref.name),
    workloads: groupBy(nonProxy(run.ctx.workloads), (w) => w.ref.name),
  }))
  const behind = new Set(services.flatMap((name) => index.services.get(name) ?? []).flatMap((s) => s.workloads))
  return workloadKeys([...behind].flatMap((name) => index.workloads.get(name) ?? []))
}

function selectorText(selector: Record<string, string> | undefined, scope: PolicyPlacement['scope']): string {
  if (scope === 'namespace') return 'every workload of the namespace'
  if (scope === 'mesh') return 'every workload (mesh-wide)'
  return `the pods selected by ${Object.entries(selector ?? {})
    .map(([k, v]) => `${k}=${v}`)
    .join(',')}`
}

function targetText(t: TargetPlan): string {
  return t.via === 'gateway'
    ? `Gateway ${t.targetRefs[0]!.name} (every Service bound to it)`
    : `Service ${list(t.services)}`
}

function originalPlacement(item: InventoryItem, obj: KubeObject, extra: Partial<PolicyPlacement>): PolicyPlacement {
  const object = cleanObject(obj)
  object.metadata.namespace = item.ref.namespace
  return {
    ref: item.ref,
    role: 'original',
    scope: extra.scope ?? 'workload',
    workloads: [],
    services: [],
    description: `${formatRef(item.ref)} (original)`,
    object,
    ...extra,
  }
}

function created(
  run: Run,
  original: KubeObject,
  opts: {
    role: Exclude<PolicyRole, 'original'>
    name: string
    spec: Record<string, unknown>
    createdIn: 'create-policies' | 'delete-sidecar-policies'
    selector?: Record<string, string>
    targets?: TargetPlan
    workloads: string[]
    description: string
    keepAnnotations: boolean
  },
): PolicyPlacement {
  const source = opts.keepAnnotations ? original : {...original, metadata: {...original.metadata, annotations: {}}}
  const object = derivedObject(source, {
    name: opts.name,
    namespace: run.ns,
    planName: run.input.planName,
    spec: opts.spec,
  })
  // Created objects live in the migrated namespace: targetRefs, selector, or namespace-wide there.
  const scope: PolicyPlacement['scope'] = opts.targets ? 'targetRefs' : opts.selector ? 'workload' : 'namespace'
  const p: PolicyPlacement = {
    ref: refOfObject(object),
    role: opts.role,
    scope,
    workloads: scope === 'targetRefs' ? [] : opts.workloads,
    services: opts.targets ? opts.targets.services : [],
    createdIn: opts.createdIn,
    description: opts.description,
    object,
  }
  if (opts.selector) p.selector = opts.selector
  if (opts.targets) {
    p.serviceWorkloads = workloadsBehind(run, opts.targets.services)
    p.targetRefs = opts.targets.targetRefs
    if (opts.targets.via === 'services' && !run.serviceTargeted.includes(original.metadata.name))
      run.serviceTargeted.push(original.metadata.name)
  }
  if (kindKeyOf(object) === AP) {
    const a = analyzeAuthorizationPolicy(object, run.ctx)
    p.action = a.action
    p.ztunnel = a.ztunnelEffect
    if (a.dryRun) p.dryRun = true
  }
  return p
}

function decision(
  ref: ObjectRef,
  disposition: PolicyDisposition,
  why: string,
  original: PolicyPlacement,
  createdObjects: PolicyPlacement[] = [],
): PolicyDecision {
  return {ref, disposition, why, original, created: createdObjects, findings: []}
}

// --- findings ------------------------------------------------------------------------------------

/** RetargetL4PartAllowsAll: the L4 part left at ztunnel of an ALLOW whose every rule had L7 content. */
function reportL4PartAllowsAll(
  run: Run,
  ref: ObjectRef,
  p: {dropped: string[]; l4: string; selected: string[]; others: string[]},
): void {
  const others = p.others
  report(
    run,
    finding(
      'RetargetL4PartAllowsAll',
      ref,
      {
        ref: formatRef(ref),
        dropped: list(p.dropped),
        l4: p.l4,
        names: list(p.selected),
        detail: others.length > 0 ? `, which also lifts ${list(others)} for them` : '',
        detail2:
          others.length > 0 ? `limited to what ${list(others)} allow` : 'all denied (only the waypoint is admitted)',
      },
      {id: idFor(ref, 'l4-part-allows-all'), severity: 'error'},
    ),
  )
}

/** Records a finding of the run; returns its id. */
function report(run: Run, f: Finding): string {
  run.findings.push(f)
  return f.id
}

function idFor(ref: ObjectRef, topic: string): string {
  return `retarget/${ref.kind}/${ref.namespace ?? ''}/${ref.name}/${topic}`
}

const SEVERITY_ORDER = {blocker: 0, error: 1, warning: 2, info: 3} as const

function dedupe(findings: Finding[]): Finding[] {
  const byId = new Map<string, Finding>()
  for (const f of findings) if (!byId.has(f.id)) byId.set(f.id, f)
  return [...byId.values()].sort(
    (a, b) => SEVERITY_ORDER[a.severity] - SEVERITY_ORDER[b.severity] || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0),
  )
}

/** RetargetNoService, unless the inventory already made the item a blocker/manual with it (uncarriableBlockers). */
function noServiceFinding(
  run: Run,
  item: InventoryItem,
  why: string,
  severity: 'warning' | 'blocker' = 'blocker',
): void {
  if (item.action === 'retarget') run.findings.push(retargetNoServiceFinding(item.ref, why, severity))
}

/** Non-equivalences of a Service/Gateway-targeted copy (DOMAIN §3.1 (a)-(d), E9). */
function coverageFindings(
  run: Run,
  ref: ObjectRef,
  kind: string,
  action: string | undefined,
  t: TargetPlan,
  namespaceWide: boolean,
  podPathsEnforcedAtZtunnel: boolean,
): void {
  const name = formatRef(ref)
  if (t.via === 'gateway' && !namespaceWide) {
    report(
      run,
      finding(
        'RetargetTooManyServices',
        ref,
        {name, length: t.covering.length, services: list(t.services)},
        {id: idFor(ref, 'gateway-target'), severity: 'warning'},
      ),
    )
  }
  for (const p of t.partial) {
    let severity: Severity = 'warning'
    let effect: string
    if (kind === AP && action === 'ALLOW') {
      const guarded = p.uncovered.filter((w) => otherAllowsFor(run, ref, w))
      if (guarded.length > 0) {
        severity = 'error'
        effect = `the waypoint OR-s all ALLOW policies attached to a Service, so requests this policy allows are also let through to ${list(guarded)}, which ${plural(guarded.length, 'has', 'have')} ALLOW policies of ${plural(guarded.length, 'its', 'their')} own that did not allow them (security-relevant widening); ${p.uncovered.filter((w) => !guarded.includes(w)).length > 0 ? `the other uncovered pods are restricted by it` : 'the destination admits the waypoint, so nothing stops them there'}`
      } else {
        effect = `requests to ${list(p.uncovered)} that this ALLOW does not match are now denied at the waypoint (they had no ALLOW policy: everything was allowed)`
      }
    } else if (kind === AP && action === 'DENY') {
      effect = `it also denies the matching requests to ${list(p.uncovered)} (denies more than written)`
    } else if (kind === AP && action === 'CUSTOM') {
      effect = `the external authorizer is also consulted for ${list(p.uncovered)}, and can deny their requests`
    } else if (kind === AP) {
      severity = 'info'
      effect = `requests to ${list(p.uncovered)} are audit-logged too`
    } else if (kind === RA) {
      effect = `requests to ${list(p.uncovered)} carrying an invalid JWT are now rejected too`
    } else if (kind === WASM) {
      effect = `the plugin also runs for requests to ${list(p.uncovered)}`
    } else {
      severity = 'info'
      effect = `its telemetry settings also apply to ${list(p.uncovered)}`
    }
    report(
      run,
      finding(
        'RetargetWidensToService',
        ref,
        {name, service: p.service, effect},
        {id: idFor(ref, `partial-coverage/${p.service}`), severity: severity},
      ),
    )
  }
  if (t.podAddressed.length > 0 && !podPathsEnforcedAtZtunnel) {
    const security = kind === AP && (action === 'DENY' || action === 'CUSTOM')
    report(
      run,
      finding(
        'RetargetMissesPodTraffic',
        ref,
        {
          name,
          podAddressed: t.podAddressed.map((p) => `${p.workload} (${p.why})`),
          detail: kind === AP && action === 'ALLOW' ? ' (the L4 part of the policy)' : '',
          detail2: security ? `: the ${action} no longer applies to it` : '',
        },
        {id: idFor(ref, 'pod-addressed'), severity: security ? 'error' : kind === TELEMETRY ? 'info' : 'warning'},
      ),
    )
  }
  if (t.via === 'services' && t.services.length > 1) {
    report(
      run,
      finding(
        'RetargetSeveralServices',
        ref,
        {name, length: t.services.length, services: list(t.services)},
        {id: idFor(ref, 'several-services'), severity: 'info'},
      ),
    )
  }
}

/** ALLOW policies other than `ref` applying (at the sidecar today) to any of the workloads. */
function otherAllowPolicies(run: Run, ref: ObjectRef, workloads: WorkloadItem[]): string[] {
  const wanted = new Set(workloads.map((w) => w.ref.name))
  const out: string[] = []
  for (const [key, a] of run.analyses) {
    if (key === refKey(ref) || a.action !== 'ALLOW' || a.scope === 'targetRefs' || a.dryRun) continue
    if (a.workloads.some((w) => wanted.has(w))) out.push(formatRef(a.ref))
  }
  return out.sort()
}

/** Whether an ALLOW policy other than `ref` applies to workload `w` (at the sidecar today). */
function otherAllowsFor(run: Run, ref: ObjectRef, w: string): boolean {
  for (const [key, a] of run.analyses) {
    if (key === refKey(ref) || a.action !== 'ALLOW' || a.scope === 'targetRefs' || a.dryRun) continue
    if (a.workloads.includes(w)) return true
  }
  return false
}

// --- the waypoint's ALLOW set ---------------------------------------------------------------------

/**
 * Services for which the waypoint enforces at least one ALLOW policy, with those policies' names. The waypoint
 * evaluates ALLOW like ztunnel and sidecars (DOMAIN §3.1): once an ALLOW applies to a request, a request that
 * no ALLOW matches is denied. So for these Services, whatever another ALLOW admits today is denied at the
 * waypoint unless that ALLOW is attached to the waypoint too. Dry-run policies enforce nothing.
 */
function waypointAllowServices(run: Run, decisions: PolicyDecision[]): Map<string, string[]> {
  const servable = run.ctx.services.filter(servedByWaypoint).map((s) => s.ref.name)
  const out = new Map<string, string[]>()
  const add = (service: string, policy: string) => {
    if (!servable.includes(service)) return
    const list = out.get(service) ?? []
    if (!list.includes(policy)) list.push(policy)
    out.set(service, list)
  }
  for (const d of decisions) {
    if (kindKeyOf(d.ref) !== AP) continue
    for (const c of d.created)
      if (c.role === 'waypoint-copy' && c.action === 'ALLOW' && !c.dryRun)
        for (const svc of c.services) add(svc, c.ref.name)
    const o = d.original
    if (o.scope !== 'targetRefs' || o.action !== 'ALLOW' || o.dryRun) continue
    // A targetRefs ALLOW that exists already: inert for sidecars, enforced by the waypoint once it is bound.
    const targeted = new Set<string>()
    for (const t of o.targetRefs ?? []) {
      if (t.kind === 'Service' && (t.group === '' || t.group === 'core') && d.ref.namespace === run.ns)
        targeted.add(t.name)
      const ownGateway =
        t.kind === 'Gateway' &&
        t.group === GATEWAY_API_GROUP &&
        t.name === run.input.waypointName &&
        d.ref.namespace === run.waypointNs
      const everyWaypoint =
        t.kind === 'GatewayClass' &&
        t.group === GATEWAY_API_GROUP &&
        t.name === WAYPOINT_CLASS &&
        d.ref.namespace === run.rootNs
      if (ownGateway || everyWaypoint) servable.forEach((svc) => targeted.add(svc))
    }
    const name = d.ref.namespace === run.ns ? d.ref.name : `${d.ref.namespace}/${d.ref.name}`
    for (const svc of [...targeted].sort()) add(svc, name)
    const attached = [...targeted].filter((svc) => servable.includes(svc))
    if (attached.length > 0) o.serviceWorkloads = workloadsBehind(run, attached)
  }
  return out
}

/** An ALLOW without rules matches no request (at sidecars, ztunnel and waypoints alike). */
export function allowsNothing(obj: KubeObject): boolean {
  return (writtenRules(obj) ?? []).length === 0
}

/**
 * Completes the waypoint's ALLOW set: every other ALLOW that applies to pods behind such a Service (an L4 ALLOW
 * that otherwise stays at ztunnel only, an E22 rewrite) gets a targetRefs copy on the waypoint for those
 * Services, created with the other copies before the waypoint is bound. The original stays where it is.
 */
function completeWaypointAllowSets(run: Run, decisions: PolicyDecision[]): void {
  if (!run.waypointPlanned) return
  const allowed = waypointAllowServices(run, decisions)
  if (allowed.size === 0) return
  const servable = run.ctx.services.filter(servedByWaypoint).sort((a, b) => byCodePoint(a.ref.name, b.ref.name))
  for (const d of decisions) {
    if (kindKeyOf(d.ref) !== AP || d.disposition === 'blocked') continue
    const o = d.original
    if (
      o.action !== 'ALLOW' ||
      o.dryRun ||
      o.scope === 'targetRefs' ||
      d.created.some((c) => c.role === 'waypoint-copy')
    )
      continue
    const a = run.analyses.get(refKey(d.ref))
    if (!a || (d.ref.namespace !== run.ns && a.scope !== 'mesh' && a.scope !== 'root-selector')) continue
    // An ALLOW without rules admits nothing: the waypoint cannot deny anything it allows.
    if (allowsNothing(run.objects.get(refKey(d.ref))!)) continue
    const selected = selectedWorkloads(run, a)
    if (selected.length === 0) continue
    const selectedNames = new Set(selected.map((w) => w.ref.name))
    const namespaceWide = a.scope === 'namespace' || a.scope === 'mesh'
    const hit = servable.filter(
      (s) => allowed.has(s.ref.name) && (namespaceWide || s.workloads.some((w) => selectedNames.has(w))),
    )
    if (hit.length === 0) continue
    const hitNames = hit.map((s) => s.ref.name)
    const triggers = [...new Set(hitNames.flatMap((svc) => allowed.get(svc) ?? []))].sort()
    const name = formatRef(d.ref)
    if (hit.length > MAX_TARGET_REFS) {
      report(
        run,
        finding(
          'WaypointAllowSetIncomplete',
          d.ref,
          {name, serviceCount: hit.length, triggers: list(triggers), maxTargetRefs: MAX_TARGET_REFS},
          {id: idFor(d.ref, 'waypoint-allow-set'), severity: 'blocker'},
        ),
      )
      continue
    }
    const obj = run.objects.get(refKey(d.ref))!
    const t: TargetPlan = {
      targetRefs: hitNames.map((svc) => ({group: '', kind: 'Service', name: svc})),
      via: 'services',
      services: hitNames,
      covering: hitNames,
      partial: namespaceWide
        ? []
        : hit
            .map((s) => ({service: s.ref.name, uncovered: s.workloads.filter((w) => !selectedNames.has(w)).sort()}))
            .filter((p) => p.uncovered.length > 0),
      podAddressed: [],
    }
    const copy = waypointCopy(run, obj, a, t, writtenRules(obj), true)
    d.created.push(copy)
    if (d.disposition === 'keep') d.disposition = 'keep-copy'
    d.why = `${d.why}; the waypoint enforces ALLOW ${list(triggers)} for Service ${list(hitNames)}, so it denies requests no ALLOW attached to it matches: ${copy.ref.name} attaches this ALLOW there too`
    // The original keeps applying at the destination, so pod-addressed traffic is covered as before.
    coverageFindings(run, d.ref, AP, a.action, t, namespaceWide, true)
    report(
      run,
      finding(
        'WaypointAllowSetCopy',
        d.ref,
        {triggers: list(triggers), hitNames: list(hitNames), name, refName: copy.ref.name},
        {id: idFor(d.ref, 'waypoint-allow-set'), severity: 'info'},
      ),
    )
  }
}

function requestAuthenticationFindings(run: Run, decisions: PolicyDecision[]): void {
  // Services at whose waypoint a RequestAuthentication will apply: the copies made here and existing targetRefs ones.
  const covered = new Set<string>()
  for (const d of decisions) {
    if (kindKeyOf(d.ref) !== RA) continue
    for (const c of d.created) if (c.role === 'waypoint-copy') c.services.forEach((s) => covered.add(s))
    if (d.original.scope === 'targetRefs') d.original.services.forEach((s) => covered.add(s))
  }
  for (const d of decisions) {
    if (kindKeyOf(d.ref) !== AP) continue
    const copy = d.created.find((c) => c.role === 'waypoint-copy')
    if (!copy) continue
    const a = run.analyses.get(refKey(d.ref))
    const paths = a ? usesRequestAuth(a) : []
    if (paths.length === 0) continue
    const missing = copy.services.filter((s) => !covered.has(s))
    if (missing.length === 0) continue
    report(
      run,
      finding(
        'RetargetNeedsRequestAuthentication',
        d.ref,
        {
          ref: formatRef(d.ref),
          paths: list(paths),
          missing: list(missing),
          detail:
            d.original.action === 'DENY'
              ? 'a DENY on notRequestPrincipals denies every request and one on requestPrincipals never fires'
              : 'its JWT rules never match',
          ns: run.ns,
        },
        {id: idFor(d.ref, 'request-authentication'), severity: 'error'},
      ),
    )
  }
}

function namespaceFindings(run: Run): void {
  if (run.carriedL7.length > 0) {
    report(
      run,
      finding(
        'WaypointBypassedBySidecarCallers',
        undefined,
        {carriedL7: list(run.carriedL7), ns: run.ns},
        {id: `retarget/${run.ns}/sidecar-callers`, severity: 'warning'},
      ),
    )
  }
  const waypointFor = run.input.waypointFor ?? 'service'
  const serviceCopies = run.serviceTargeted
  if (waypointFor === 'workload' && serviceCopies.length > 0) {
    report(
      run,
      finding(
        'RetargetNeedsServiceWaypoint',
        undefined,
        {serviceCopies: list(serviceCopies)},
        {id: `retarget/${run.ns}/waypoint-for-workload`, severity: 'blocker'},
      ),
    )
  } else if (waypointFor === 'all' && run.principalUsed) {
    report(
      run,
      finding(
        'RetargetPodTrafficThroughWaypoint',
        undefined,
        {},
        {id: `retarget/${run.ns}/waypoint-for-all`, severity: 'warning'},
      ),
    )
  }
}

function nameFindings(run: Run, decisions: PolicyDecision[]): void {
  const seen = new Map<string, ObjectRef>()
  for (const d of decisions) {
    for (const c of d.created) {
      if (c.reused) continue
      const key = refKey(c.ref)
      const existing = run.objects.get(key)
      const ours =
        existing?.metadata.labels?.[MANAGED_BY_LABEL] === MANAGED_BY_VALUE &&
        existing.metadata.annotations?.[PLAN_ANNOTATION] === run.input.planName
      const clash = seen.get(key)
      if ((existing && !ours) || clash) {
        report(
          run,
          finding(
            'RetargetNameTaken',
            d.ref,
            {
              ref: formatRef(c.ref),
              ref2: formatRef(d.ref),
              detail: clash
                ? `it also creates that object for ${formatRef(clash)}`
                : 'an object of that name exists and was not created by this plan',
            },
            {id: idFor(d.ref, `name-taken/${c.ref.name}`), severity: 'blocker'},
          ),
        )
      }
      seen.set(key, d.ref)
    }
  }
}

function gitOpsFindings(run: Run, decisions: PolicyDecision[]): void {
  for (const d of decisions) {
    if (d.original.deletedIn !== 'delete-sidecar-policies') continue
    const manager = gitOpsManager(run.objects.get(refKey(d.ref))?.metadata ?? {})
    if (!manager) continue
    report(
      run,
      finding(
        'RetargetGitOpsManaged',
        d.ref,
        {ref: formatRef(d.ref), manager, created: list(d.created.map((c) => c.ref.name))},
        {id: idFor(d.ref, 'gitops'), severity: 'warning'},
      ),
    )
  }
}

// --- copies that exist already (issue 21 point 3) --------------------------------------------------

/** What makes two targetRefs policies the same to a waypoint: their targets (a set) and the rest of their spec. */
function copyContent(obj: KubeObject): string {
  const spec: Record<string, unknown> = isRecord(obj.spec) ? {...obj.spec} : {}
  const refs = [
    ...(Array.isArray(spec.targetRefs) ? spec.targetRefs : []),
    ...(isRecord(spec.targetRef) ? [spec.targetRef] : []),
  ]
  delete spec.targetRefs
  delete spec.targetRef
  // An AuthorizationPolicy without an action is an ALLOW (istio/api security/v1/authorization_policy.proto).
  if (kindKeyOf(obj) === AP && spec.action === undefined) spec.action = 'ALLOW'
  const targets = refs
    .filter(isRecord)
    .map((r) => `${r.group === 'core' ? '' : String(r.group ?? '')}/${String(r.kind ?? '')}/${String(r.name ?? '')}`)
  const dryRun = parseBool(obj.metadata.annotations?.[DRY_RUN_ANNOTATION]) === true
  return digestOf({kind: kindKeyOf(obj), targets: [...new Set(targets)].sort(), dryRun, spec})
}

/**
 * The istio.io migration guide's "migrate policies" step creates the targetRefs copies of the selector L7 policies
 * before anything is bound (istio.io content/en/docs/ambient/migrate/migrate-policies, DOMAIN §4.1 step B). A copy
 * the plan would create that exists already — same kind and namespace, same targets and same rules, whatever its
 * name — is used as it is: not created again, not deleted by rollback (it is not the plan's), and no name clash.
 */
function reuseExistingCopies(run: Run, decisions: PolicyDecision[]): void {
  const existing = new Map<string, KubeObject[]>()
  for (const o of run.objects.values()) {
    if ((o.metadata.namespace ?? run.ns) !== run.ns || !isRetargetable(o)) continue
    const ours =
      o.metadata.labels?.[MANAGED_BY_LABEL] === MANAGED_BY_VALUE &&
      o.metadata.annotations?.[PLAN_ANNOTATION] === run.input.planName
    if (ours || !(isRecord(o.spec) && (Array.isArray(o.spec.targetRefs) || isRecord(o.spec.targetRef)))) continue
    const key = copyContent(o)
    existing.set(key, [...(existing.get(key) ?? []), o])
  }
  if (existing.size === 0) return
  for (const d of decisions) {
    d.created = d.created.map((c) => {
      if (c.role !== 'waypoint-copy' || c.createdIn === undefined) return c
      const same = (existing.get(copyContent(c.object)) ?? []).sort((a, b) =>
        // The copy's own name first, then by name: one choice, the same on every run.
        a.metadata.name === c.ref.name
          ? -1
          : b.metadata.name === c.ref.name
            ? 1
            : byCodePoint(a.metadata.name, b.metadata.name),
      )[0]
      if (!same) return c
      const object = cleanObject(same)
      object.metadata.namespace = run.ns
      const reused: PolicyPlacement = {
        ...c,
        ref: refOfObject(object),
        object,
        reused: true,
        description: `${same.metadata.name} (exists already): the waypoint copy of ${d.ref.name}, same targets and rules — used as it is`,
      }
      delete reused.createdIn
      report(
        run,
        finding(
          'WaypointCopyReused',
          d.ref,
          {ref: formatRef(reused.ref), ref2: formatRef(d.ref), refName: c.ref.name},
          {id: idFor(d.ref, `copy-reused/${same.metadata.name}`), severity: 'info'},
        ),
      )
      return reused
    })
  }
}

// --- AuthorizationPolicy -------------------------------------------------------------------------

function apScope(a: AuthorizationPolicyAnalysis): PolicyPlacement['scope'] {
  return a.scope === 'root-selector' ? 'workload' : a.scope
}

function selectedWorkloads(run: Run, a: AuthorizationPolicyAnalysis): WorkloadItem[] {
  if (a.scope === 'targetRefs') return []
  return nonProxy(
    a.scope === 'workload' || a.scope === 'root-selector' ? matchingWorkloads(run.ctx, a.selector) : run.ctx.workloads,
  )
}

function apSpec(
  obj: KubeObject,
  a: AuthorizationPolicyAnalysis,
  rules: AuthorizationRule[] | undefined,
  attach: {selector?: Record<string, string>; targetRefs?: TargetPlan['targetRefs']},
  action = a.action,
): Record<string, unknown> {
  const spec: Record<string, unknown> = {}
  if (attach.selector) spec.selector = {matchLabels: {...attach.selector}}
  if (attach.targetRefs) spec.targetRefs = attach.targetRefs.map((t) => ({...t}))
  spec.action = action
  if (action === 'CUSTOM' && obj.spec?.provider) spec.provider = cloneJson(obj.spec.provider)
  if (rules !== undefined) spec.rules = cloneJson(rules)
  return spec
}

function writtenRules(obj: KubeObject): AuthorizationRule[] | undefined {
  return Array.isArray(obj.spec?.rules) ? (obj.spec.rules as AuthorizationRule[]) : undefined
}

function planAuthorizationPolicy(run: Run, item: InventoryItem, obj: KubeObject): PolicyDecision {
  const a = run.analyses.get(refKey(item.ref))!
  const ref = item.ref
  const local = ref.namespace === run.ns
  const root = a.scope === 'mesh' || a.scope === 'root-selector'
  const selected = selectedWorkloads(run, a)
  const scope = apScope(a)
  const original = originalPlacement(item, obj, {
    scope,
    ...(a.selector ? {selector: a.selector} : {}),
    ...(a.scope === 'targetRefs'
      ? {targetRefs: a.targetRefs.map((t) => ({group: t.group ?? '', kind: t.kind ?? '', name: t.name ?? ''}))}
      : {}),
    workloads: workloadKeys(selected),
    services: a.scope === 'targetRefs' ? a.services : [],
    action: a.action,
    ztunnel: a.ztunnelEffect,
    ...(a.dryRun ? {dryRun: true} : {}),
  })
  const keep = (why: string) => decision(ref, 'keep', why, original)
  const blocked = (why: string) => decision(ref, 'blocked', why, original)

  if (a.scope === 'targetRefs') return keep('already attached with targetRefs: enforced by the waypoint only')
  if (!local && !root) return keep(`lives in ${ref.namespace}: not applied to ${run.ns}`)
  if (selected.length === 0) return keep(`applies to no workload of ${run.ns} that becomes ambient`)

  const namespaceWide = a.scope === 'namespace' || a.scope === 'mesh'
  const targetsFor = () =>
    planTargets({
      namespaceWide,
      selected,
      workloads: run.ctx.workloads,
      services: run.ctx.services,
      waypointName: run.input.waypointName,
      gatewayInNamespace: run.waypointNs === run.ns,
    })
  const rules = writtenRules(obj)

  // E16: dry-run.
  if (a.dryRun) {
    if (a.dryRunAtZtunnel !== 'not-sent')
      return blocked(
        `dry-run policy that ztunnel ${a.dryRunAtZtunnel === 'enforced' ? 'enforces' : 'may enforce (unknown Istio version)'}: it must be removed or made targetRefs before the namespace goes ambient (E16)`,
      )
    if (!run.waypointPlanned || !local)
      return keep('dry-run policy not sent to ztunnel (Istio >= 1.29): its evaluation stops for ambient pods')
    const t = targetsFor()
    if (t.via === 'none') {
      noServiceFinding(run, item, t.noTarget!, 'warning')
      return blocked(`dry-run policy: ${t.noTarget}`)
    }
    const copy = waypointCopy(run, obj, a, t, rules, true)
    original.deletedIn = 'delete-sidecar-policies'
    coverageFindings(run, ref, AP, a.action, t, namespaceWide, false)
    return decision(
      ref,
      'carry',
      'dry-run policy: the waypoint honours dry-run like sidecars, ztunnel (>= 1.29) does not receive it — copied with the annotation, original deleted after the restart',
      original,
      [copy],
    )
  }

  // E22: the only attribute ztunnel lacks is when: source.serviceAccount.
  if (
    local &&
    (a.action === 'ALLOW' || a.action === 'DENY') &&
    onlyServiceAccountConditions(a) &&
    (run.minor === undefined || run.minor >= 25)
  ) {
    const rewrite = rewriteServiceAccountConditions(rules ?? [], run.ns)
    if (rewrite.ok) return planServiceAccountRewrite(run, item, obj, a, original, rewrite.rules, selected, targetsFor)
    report(
      run,
      finding(
        'ServiceAccountConditionNotRewritten',
        ref,
        {ref: formatRef(ref), why: rewrite.why},
        {id: idFor(ref, 'e22-not-rewritten'), severity: 'info'},
      ),
    )
  }

  if (a.needsWaypoint) {
    if (root) {
      const carried = carriedRootDeny(a) && run.waypointPlanned
      rootBlocker(run, obj, a, selected, carried)
      if (carried) return planRootDenyCopy(run, obj, a, original, targetsFor())
      return blocked(
        `root-namespace policy with attributes ztunnel cannot enforce (E14): only the mesh administrator can split it`,
      )
    }
    if (!run.waypointPlanned) return keep('needs a waypoint, but none is planned for the namespace')
    // Issue 21 point 1: L7 rules cannot be carried for pods behind a Service that opts out of waypoints (the
    // inventory's blocker, RetargetServiceOptedOut, says the same: src/planner/inventory.ts).
    const optedOut = optedOutServices(run.ctx.services, names(selected))
    if (optedOut.length > 0) return blocked(optedOutWhy(optedOut))
    const t = targetsFor()
    if (t.via === 'none') {
      noServiceFinding(run, item, t.noTarget!)
      return blocked(t.noTarget!)
    }
    return planWaypointPolicy(run, item, obj, a, original, t, selected, namespaceWide)
  }

  // L4 at ztunnel. Identity/IP-keyed ones see the waypoint instead of the caller for proxied traffic (E21).
  if (!run.waypointPlanned || !(a.identityKeyed || a.peerIpKeyed) || !a.sentToZtunnel)
    return keep('enforced by ztunnel as written')
  const t = targetsFor()
  if (t.via === 'none')
    return keep(`keyed on the caller's identity, but ${t.noTarget}: no traffic to these pods goes through the waypoint`)
  return planIdentityPolicy(run, item, obj, a, original, t, selected, namespaceWide)
}

function waypointCopy(
  run: Run,
  obj: KubeObject,
  a: AuthorizationPolicyAnalysis,
  t: TargetPlan,
  rules: AuthorizationRule[] | undefined,
  keepAnnotations: boolean,
): PolicyPlacement {
  return created(run, obj, {
    role: 'waypoint-copy',
    name: copyName(obj.metadata.name),
    spec: apSpec(obj, a, rules, {targetRefs: t.targetRefs}),
    createdIn: 'create-policies',
    targets: t,
    workloads: [],
    description: `${copyName(obj.metadata.name)}: copy of ${obj.metadata.name} (${a.action}, same rules${a.provider ? `, provider ${a.provider}` : ''}) on the waypoint, targetRefs ${targetText(t)} — the waypoint sees the caller's real identity`,
    keepAnnotations,
  })
}

function companion(
  run: Run,
  obj: KubeObject,
  a: AuthorizationPolicyAnalysis,
  selected: WorkloadItem[],
  why: string,
): PolicyPlacement {
  run.principalUsed = true
  const admitted = companionPrincipals(run, selected)
  return created(run, obj, {
    role: 'ztunnel-companion',
    name: companionName(obj.metadata.name),
    spec: apSpec(
      obj,
      a,
      [{from: [{source: {principals: admitted}}]}],
      a.selector ? {selector: a.selector} : {},
      'ALLOW',
    ),
    createdIn: 'create-policies',
    ...(a.selector ? {selector: a.selector} : {}),
    workloads: workloadKeys(selected),
    description: `${companionName(obj.metadata.name)}: ALLOW ${list(admitted)} at ${selectorText(a.selector, a.selector ? 'workload' : 'namespace')} — ${why}`,
    keepAnnotations: false,
  })
}

/**
 * The waypoints' principals a companion admits: the plan's waypoint, and the waypoint of every Service in front of
 * the selected pods that its own istio.io/use-waypoint binds elsewhere (the Service-targeted copy applies there).
 */
function companionPrincipals(run: Run, selected: WorkloadItem[]): string[] {
  const elsewhere = run.input.serviceWaypoints ?? {}
  const wanted = new Set(selected.map((w) => w.ref.name))
  const extra = run.ctx.services
    .filter((s) => Object.hasOwn(elsewhere, s.ref.name) && s.workloads.some((w) => wanted.has(w)))
    .flatMap((s) => elsewhere[s.ref.name]!)
  return [...new Set([...run.admitted, ...extra])]
}

function planWaypointPolicy(
  run: Run,
  item: InventoryItem,
  obj: KubeObject,
  a: AuthorizationPolicyAnalysis,
  original: PolicyPlacement,
  t: TargetPlan,
  selected: WorkloadItem[],
  namespaceWide: boolean,
): PolicyDecision {
  const ref = item.ref
  const rules = writtenRules(obj)
  const out: PolicyPlacement[] = [waypointCopy(run, obj, a, t, rules, true)]
  original.deletedIn = 'delete-sidecar-policies'
  run.carriedL7.push(obj.metadata.name)
  let why: string
  switch (a.action) {
    case 'ALLOW': {
      out.push(
        companion(
          run,
          obj,
          a,
          selected,
          'the destination sees the waypoint, not the caller, for proxied traffic; the waypoint already enforced the full rules',
        ),
      )
      const projection = projectAllowRules(a, rules ?? [])
      out.push(
        created(run, obj, {
          role: 'ztunnel-l4',
          name: l4PartName(obj.metadata.name),
          spec: apSpec(obj, a, projection.rules, a.selector ? {selector: a.selector} : {}),
          createdIn: 'delete-sidecar-policies',
          ...(a.selector ? {selector: a.selector} : {}),
          workloads: workloadKeys(selected),
          description: projection.matchAll
            ? `${l4PartName(obj.metadata.name)}: the L4 part of ${obj.metadata.name} — nothing of it is L4, so an ALLOW of every request (callers that bypass the waypoint are not restricted by it)`
            : `${l4PartName(obj.metadata.name)}: the L4 part of ${obj.metadata.name} (without ${list(projection.dropped)}), for callers that bypass the waypoint`,
          keepAnnotations: true,
        }),
      )
      if (projection.matchAll) {
        const l4 = l4PartName(obj.metadata.name)
        const others = otherAllowPolicies(run, ref, selected)
        reportL4PartAllowsAll(run, ref, {dropped: projection.dropped, l4, selected: names(selected), others})
      }
      why = `L7 ALLOW (${a.ztunnelEffect} at ztunnel): full rules on the waypoint; a companion admits the waypoint at the destination before it is bound; after the restart the original is deleted and ${projection.matchAll ? 'its L4 part allows every request (no rule has an L4 constraint)' : 'its L4 part keeps restricting callers that bypass the waypoint'}`
      break
    }
    case 'DENY': {
      const l4 = exemptWaypointIfMatched(run, denyRulesSafeAtZtunnel(a), ref)
      if (l4.length > 0) {
        out.push(
          created(run, obj, {
            role: 'ztunnel-l4',
            name: l4PartName(obj.metadata.name),
            spec: apSpec(obj, a, l4, a.selector ? {selector: a.selector} : {}),
            createdIn: 'create-policies',
            ...(a.selector ? {selector: a.selector} : {}),
            workloads: workloadKeys(selected),
            description: `${l4PartName(obj.metadata.name)}: the rules of ${obj.metadata.name} ztunnel enforces without denying more than written, for callers that bypass the waypoint`,
            keepAnnotations: true,
          }),
        )
      }
      windowDenyCheck(run, ref, rules ?? [])
      why = `L7 DENY (${a.ztunnelEffect} at ztunnel): full rules on the waypoint; original deleted after the restart${l4.length > 0 ? '; its L4-enforceable rules stay at ztunnel' : ''}`
      break
    }
    case 'CUSTOM':
      report(
        run,
        finding(
          'RetargetCustomProvider',
          ref,
          {
            ref: formatRef(ref),
            value: a.provider ?? '(none)',
            waypointNs: run.waypointNs,
            waypointName: run.input.waypointName,
          },
          {id: idFor(ref, 'custom-provider'), severity: 'warning'},
        ),
      )
      why =
        'CUSTOM is not sent to ztunnel (ext_authz would silently stop): copy on the waypoint, original deleted after the restart'
      break
    default:
      report(
        run,
        finding(
          'RetargetAuditProvider',
          ref,
          {ref: formatRef(ref)},
          {id: idFor(ref, 'audit-provider'), severity: 'info'},
        ),
      )
      why = 'AUDIT is not sent to ztunnel: copy on the waypoint, original deleted after the restart'
  }
  coverageFindings(run, ref, AP, a.action, t, namespaceWide, false)
  return decision(ref, 'carry', why, original, out)
}

function planIdentityPolicy(
  run: Run,
  item: InventoryItem,
  obj: KubeObject,
  a: AuthorizationPolicyAnalysis,
  original: PolicyPlacement,
  t: TargetPlan,
  selected: WorkloadItem[],
  namespaceWide: boolean,
): PolicyDecision {
  const ref = item.ref
  const keyed = a.identityKeyed
    ? `the caller's identity (${list([...new Set(a.identityFields.filter((f) => f.identity).map((f) => f.field))])})`
    : `the peer's IP (${list([...new Set(a.identityFields.map((f) => f.field))])})`
  const out: PolicyPlacement[] = [waypointCopy(run, obj, a, t, writtenRules(obj), true)]
  if (a.action === 'ALLOW') {
    out.push(
      companion(
        run,
        obj,
        a,
        selected,
        `proxied traffic arrives with the waypoint's identity and IP; the waypoint copy already checked ${keyed}`,
      ),
    )
  } else {
    permanentDenyCheck(run, ref, obj, a.ztunnelPolicy?.rules ?? [])
  }
  coverageFindings(run, ref, AP, a.action, t, namespaceWide, true)
  const where = ref.namespace === run.ns ? '' : ` (copies in ${run.ns}; the original in ${ref.namespace} is unchanged)`
  return decision(
    ref,
    'carry-keep',
    a.action === 'ALLOW'
      ? `L4 ALLOW keyed on ${keyed} (E21): the waypoint enforces it with the caller's identity; the original stays at ztunnel for callers that bypass the waypoint, plus a companion admitting the waypoint${where}`
      : `L4 DENY keyed on ${keyed} (E21): at ztunnel it stops firing for proxied traffic, so the waypoint enforces it too; the original stays for callers that bypass the waypoint${where}`,
    original,
    out,
  )
}

function planServiceAccountRewrite(
  run: Run,
  item: InventoryItem,
  obj: KubeObject,
  a: AuthorizationPolicyAnalysis,
  original: PolicyPlacement,
  rewrittenRules: AuthorizationRule[],
  selected: WorkloadItem[],
  targetsFor: () => TargetPlan,
): PolicyDecision {
  let rewritten = rewrittenRules
  const ref = item.ref
  const waypointTargets = run.waypointPlanned ? targetsFor() : undefined
  // Behind a waypoint, a DENY kept at the destination must not match the waypoint: the waypoint copy enforces it.
  if (a.action === 'DENY' && waypointTargets && waypointTargets.via !== 'none')
    rewritten = exemptWaypointIfMatched(run, rewritten, ref)
  const l4 = created(run, obj, {
    role: 'ztunnel-l4',
    name: l4PartName(obj.metadata.name),
    spec: apSpec(obj, a, rewritten, a.selector ? {selector: a.selector} : {}),
    createdIn: 'create-policies',
    ...(a.selector ? {selector: a.selector} : {}),
    workloads: workloadKeys(selected),
    description: `${l4PartName(obj.metadata.name)}: ${obj.metadata.name} with when source.serviceAccount rewritten as from.source.serviceAccounts, which ztunnel enforces (E22)`,
    keepAnnotations: true,
  })
  original.deletedIn = 'delete-sidecar-policies'
  const out = [l4]
  if (run.minor === undefined) {
    report(
      run,
      finding(
        'ServiceAccountRewriteAssumesVersion',
        ref,
        {ref: formatRef(ref)},
        {id: idFor(ref, 'e22-version'), severity: 'warning'},
      ),
    )
  }
  let why =
    'E22: when source.serviceAccount rewritten as from.source.serviceAccounts (enforced by ztunnel since 1.25); the rewrite is created before the switch, the original deleted after the restart'
  const t = waypointTargets
  if (t && t.via !== 'none') {
    const rewrittenAnalysis = analyzeAuthorizationPolicy(l4.object, run.ctx)
    if (rewrittenAnalysis.identityKeyed || rewrittenAnalysis.peerIpKeyed) {
      out.push(waypointCopy(run, obj, a, t, writtenRules(obj), true))
      if (a.action === 'ALLOW')
        out.push(
          companion(
            run,
            obj,
            a,
            selected,
            "proxied traffic arrives with the waypoint's identity; the waypoint copy already checked the service account",
          ),
        )
      coverageFindings(run, ref, AP, a.action, t, a.scope === 'namespace', true)
      why += '; a waypoint fronts these pods, so the service-account rule is also enforced there (E21)'
    }
  }
  return decision(ref, 'rewrite', why, original, out)
}

/**
 * The L4 part of a DENY that the plan creates next to a waypoint copy: where it could match the waypoint, the
 * waypoint is excluded — the copy enforces the DENY on proxied traffic with the caller's identity, and at the
 * destination the waypoint is the peer of every request it forwards.
 */
function exemptWaypointIfMatched(run: Run, rules: AuthorizationRule[], ref: ObjectRef): AuthorizationRule[] {
  if (rules.length === 0 || rulesMatchPeer(rules, run.peer, ref.namespace ?? run.ns) === 'no') return rules
  run.principalUsed = true
  return exemptPeer(rules, run.peer, ref.namespace ?? run.ns)
}

/** A DENY kept at the destination that matches the waypoint denies everything the waypoint forwards. */
function permanentDenyCheck(run: Run, ref: ObjectRef, obj: KubeObject, enforced: AuthorizationRule[]): void {
  const name = formatRef(ref)
  const match = rulesMatchPeer(enforced, run.peer, ref.namespace ?? run.ns)
  if (match === 'no') return
  const exempted: KubeObject = {
    apiVersion: obj.apiVersion,
    kind: obj.kind,
    metadata: {name: obj.metadata.name, namespace: ref.namespace ?? run.ns},
    spec: {
      ...cloneJson(obj.spec ?? {}),
      rules: exemptPeer(writtenRules(obj) ?? [], run.peer, ref.namespace ?? run.ns),
    },
  }
  run.principalUsed = true
  const outside = ref.namespace !== run.ns
  const args = {
    name,
    principal: run.peer.principal,
    namespace: ref.namespace ?? run.ns,
    exemptedPolicy: toCanonicalYaml(exempted),
  }
  const at = {id: idFor(ref, 'deny-matches-waypoint')}
  report(
    run,
    match === 'yes'
      ? finding(
          'DenyMatchesWaypoint',
          ref,
          {...args, variant: outside ? 'matchesOutsidePlan' : 'matches'},
          {...at, severity: 'blocker'},
        )
      : finding(
          'DenyMatchesWaypoint',
          ref,
          {...args, variant: outside ? 'mayMatchOutsidePlan' : 'mayMatch'},
          {...at, severity: 'warning'},
        ),
  )
}

/** Between bind-waypoint and the restart, destination sidecars evaluate the original with the waypoint as peer. */
function windowDenyCheck(run: Run, ref: ObjectRef, rules: AuthorizationRule[]): void {
  const match = rulesMatchPeer(rules, run.peer, ref.namespace ?? run.ns)
  if (match === 'no') return
  report(
    run,
    finding(
      'DenyMatchesWaypointDuringSwitch',
      ref,
      {ref: formatRef(ref), detail: match === 'yes' ? 'matches' : 'may match'},
      {id: idFor(ref, 'deny-window'), severity: 'warning'},
    ),
  )
}

/**
 * Issue 10 point 8: a mesh-wide L7 DENY the plan cannot change (it lives in the root namespace) is copied into the
 * namespace with targetRefs Gateway, so the namespace's waypoint denies what it proxies; the original stays and
 * ztunnel keeps doing what it can with it. The classifier's E14 finding says what remains unenforced.
 */
function planRootDenyCopy(
  run: Run,
  obj: KubeObject,
  a: AuthorizationPolicyAnalysis,
  original: PolicyPlacement,
  t: TargetPlan,
): PolicyDecision {
  if (t.via === 'none') {
    // A root-namespace DENY is not the namespace's inventory item to judge: the plan alone says it.
    run.findings.push(retargetNoServiceFinding(a.ref, t.noTarget!, 'blocker'))
    return decision(a.ref, 'blocked', t.noTarget!, original)
  }
  const rules = writtenRules(obj)
  const copy = waypointCopy(run, obj, a, t, rules, true)
  // What ztunnel enforces of the original (its L4 part) also meets the waypoint as the peer of proxied requests.
  permanentDenyCheck(run, a.ref, obj, a.ztunnelPolicy?.rules ?? [])
  windowDenyCheck(run, a.ref, rules ?? [])
  run.carriedL7.push(obj.metadata.name)
  return decision(
    a.ref,
    'copy-root',
    `mesh-wide L7 DENY (${a.ztunnelEffect} at ztunnel): copied onto ${run.ns}'s waypoint; the original stays in ${run.rootNs} (outside the plan)`,
    original,
    [copy],
  )
}

/** E14: root-namespace policies the waypoints never see; the carry is outside the plan's namespace (SPEC §6). */
function rootBlocker(
  run: Run,
  obj: KubeObject,
  a: AuthorizationPolicyAnalysis,
  selected: WorkloadItem[],
  carriedHere = false,
): void {
  const ref = a.ref
  const rules = writtenRules(obj)
  const manifests: KubeObject[] = []
  let how: string
  if (a.scope === 'mesh') {
    manifests.push({
      apiVersion: obj.apiVersion,
      kind: obj.kind,
      metadata: {
        name: copyName(obj.metadata.name),
        namespace: run.rootNs,
        ...(a.dryRun ? {annotations: {'istio.io/dry-run': 'true'}} : {}),
      },
      spec: apSpec(obj, a, rules, {
        targetRefs: [{group: GATEWAY_API_GROUP, kind: 'GatewayClass', name: WAYPOINT_CLASS}],
      }),
    })
    if (a.action === 'ALLOW') {
      const projection = projectAllowRules(a, rules ?? [])
      run.principalUsed = true
      manifests.push({
        apiVersion: obj.apiVersion,
        kind: obj.kind,
        metadata: {name: obj.metadata.name, namespace: run.rootNs},
        spec: apSpec(obj, a, [...projection.rules, {from: [{source: {principals: [run.peer.principal]}}]}], {}),
      })
      how = `apply the GatewayClass ${WAYPOINT_CLASS} copy (every waypoint of the mesh enforces it, with the caller's identity), then replace the original with its L4 part plus an ALLOW for the waypoints' principals (this plan's: ${run.peer.principal}; add the other namespaces' waypoints)${projection.matchAll ? ' — the L4 part allows every request, since no rule has an L4 constraint' : ''}`
    } else if (a.action === 'DENY') {
      const l4 = denyRulesSafeAtZtunnel(a)
      if (l4.length > 0)
        manifests.push({
          apiVersion: obj.apiVersion,
          kind: obj.kind,
          metadata: {name: obj.metadata.name, namespace: run.rootNs},
          spec: apSpec(obj, a, l4, {}),
        })
      how = `apply the GatewayClass ${WAYPOINT_CLASS} copy, then ${l4.length > 0 ? 'replace the original with the rules ztunnel enforces as written' : 'delete the original (ztunnel cannot enforce any of it)'} once no namespace relies on sidecars for it`
    } else {
      how = `apply the GatewayClass ${WAYPOINT_CLASS} copy; the original keeps applying to sidecars until no namespace relies on them`
    }
  } else {
    // A root selector matches pods of every namespace; a GatewayClass copy would apply to all traffic of every
    // waypoint, far beyond the selector. For this namespace the equivalent is a Service-targeted copy here.
    const t = planTargets({
      namespaceWide: false,
      selected,
      workloads: run.ctx.workloads,
      services: run.ctx.services,
      waypointName: run.input.waypointName,
      gatewayInNamespace: run.waypointNs === run.ns,
    })
    if (t.via !== 'none') {
      manifests.push({
        apiVersion: obj.apiVersion,
        kind: obj.kind,
        metadata: {name: copyName(obj.metadata.name), namespace: run.ns},
        spec: apSpec(obj, a, rules, {targetRefs: t.targetRefs}),
      })
    }
    how = `a GatewayClass ${WAYPOINT_CLASS} copy would apply to every waypoint's traffic, not only to the selected pods; carry it per namespace instead${t.via !== 'none' ? ` (for ${run.ns}: the Service-targeted copy below)` : ''} and make the root policy L4-only`
  }
  report(
    run,
    finding(
      'RootPolicyNeedsWaypointCopy',
      ref,
      {
        ref: formatRef(ref),
        detail: a.scope === 'mesh' ? 'mesh-wide' : 'root-namespace selector',
        action: a.action,
        rootNs: run.rootNs,
        detail2: carriedHere
          ? ` for the mesh; for ${run.ns} it creates ${copyName(obj.metadata.name)} on the namespace's waypoint`
          : '',
        how,
        manifests: manifests.map((m) => toCanonicalYaml(m)).join('---\n'),
      },
      {id: `retarget-root/${ref.kind}/${ref.namespace}/${ref.name}`, severity: carriedHere ? 'warning' : 'blocker'},
    ),
  )
}

// --- RequestAuthentication, WasmPlugin, Telemetry ------------------------------------------------

/**
 * Namespace-wide and root Telemetry: waypoints apply it as it is (pilot/pkg/model/telemetry.go), ztunnel not at
 * all. With the namespace's waypoint bound it keeps applying to the traffic the waypoint proxies; one that only
 * switches Envoy telemetry off (verdict inert) loses nothing without a waypoint, so there is nothing to simulate.
 */
function namespaceTelemetry(run: Run, item: InventoryItem, original: PolicyPlacement): PolicyDecision {
  if (item.verdict === 'inert') {
    original.workloads = []
    return decision(
      item.ref,
      'keep',
      'only switches Envoy telemetry off: without a waypoint there is none to switch off',
      original,
    )
  }
  if (!run.waypointPlanned)
    return decision(item.ref, 'keep', 'needs a waypoint, but none is planned for the namespace', original)
  original.appliedByWaypoint = true
  return decision(
    item.ref,
    'keep',
    `${original.scope === 'mesh' ? 'root' : 'namespace-wide'} Telemetry: the waypoint of ${run.ns} applies it as it is once bound`,
    original,
  )
}

function planSelectorKind(run: Run, item: InventoryItem, obj: KubeObject): PolicyDecision {
  const ref = item.ref
  const kind = kindKeyOf(ref)
  const spec: Record<string, unknown> = obj.spec && typeof obj.spec === 'object' ? obj.spec : {}
  const selectorLabels = (spec.selector as {matchLabels?: Record<string, string>} | undefined)?.matchLabels
  const selector = selectorLabels && Object.keys(selectorLabels).length > 0 ? selectorLabels : undefined
  const hasTargetRefs = Array.isArray(spec.targetRefs) || (spec.targetRef !== undefined && spec.targetRef !== null)
  const scope: PolicyPlacement['scope'] = hasTargetRefs
    ? 'targetRefs'
    : selector
      ? 'workload'
      : ref.namespace === run.rootNs
        ? 'mesh'
        : 'namespace'
  const selected =
    scope === 'targetRefs' ? [] : nonProxy(selector ? matchingWorkloads(run.ctx, selector) : run.ctx.workloads)
  const original = originalPlacement(item, obj, {
    scope,
    ...(selector ? {selector} : {}),
    workloads: workloadKeys(selected),
    services: scope === 'targetRefs' ? (item.services ?? []) : [],
  })
  if (hasTargetRefs) return decision(ref, 'keep', 'already attached with targetRefs: applied by the waypoint', original)
  if (item.action === 'manual' || item.action === 'blocker')
    return decision(
      ref,
      'blocked',
      item.reasons[item.reasons.length - 1] ?? 'needs a person (see the inventory)',
      original,
    )
  if (kind === TELEMETRY && !selector && !hasTargetRefs) return namespaceTelemetry(run, item, original)
  if (item.action !== 'retarget' || ref.namespace !== run.ns) return decision(ref, 'keep', 'nothing to carry', original)
  if (!run.waypointPlanned)
    return decision(ref, 'keep', 'needs a waypoint, but none is planned for the namespace', original)
  if (selected.length === 0)
    return decision(ref, 'keep', `applies to no workload of ${run.ns} that becomes ambient`, original)

  const namespaceWide = selector === undefined
  const t = planTargets({
    namespaceWide,
    selected,
    workloads: run.ctx.workloads,
    services: run.ctx.services,
    waypointName: run.input.waypointName,
    gatewayInNamespace: run.waypointNs === run.ns,
  })
  if (t.via === 'none') {
    noServiceFinding(run, item, t.noTarget!, kind === TELEMETRY ? 'warning' : 'blocker')
    return decision(ref, 'blocked', t.noTarget!, original)
  }
  const copySpec: Record<string, unknown> = cloneJson(spec)
  delete copySpec.selector
  delete copySpec.targetRef
  copySpec.targetRefs = t.targetRefs.map((r) => ({...r}))
  const what = kind === RA ? 'JWT validation' : kind === WASM ? 'the Wasm plugin' : 'the telemetry settings'
  const copy = created(run, obj, {
    role: 'waypoint-copy',
    name: copyName(obj.metadata.name),
    spec: copySpec,
    createdIn: 'create-policies',
    targets: t,
    workloads: [],
    description: `${copyName(obj.metadata.name)}: copy of ${obj.metadata.name} on the waypoint, targetRefs ${targetText(t)}`,
    keepAnnotations: true,
  })
  original.deletedIn = 'delete-sidecar-policies'
  coverageFindings(run, ref, kind, undefined, t, namespaceWide, false)
  return decision(
    ref,
    'carry',
    `${selector ? 'selector' : 'namespace-wide'} ${ref.kind}: ztunnel ignores it and waypoints apply only targetRefs ones, so ${what} moves to the waypoint; the original is deleted after the restart`,
    original,
    [copy],
  )
}
