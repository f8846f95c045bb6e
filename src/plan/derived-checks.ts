// Issue 20 §5: an object the plan creates from an original (mesh-migrate.io/copied-from) must be what the planner
// itself derives from that original — never wider. The original is the one the plan stores (the delete of
// delete-sidecar-policies carries it). Each role is recomputed with the planner's own functions:
// - the waypoint copy (`-waypoint`): the original's spec with only the attachment changed to targetRefs;
// - the L4 part (`-l4`): projectAllowRules of an ALLOW, denyRulesSafeAtZtunnel of a DENY (with the waypoint
//   exempted), or the E22 rewrite (rewriteServiceAccountConditions), on the original's selector;
// - the companion (`-ztunnel`): one ALLOW rule admitting only the waypoint's principals, on the original's selector.
// Originals the plan keeps are not stored: the plan records the fingerprint of their rules (spec.observed.keptRules,
// the spec without selector/targetRef), which a waypoint copy's spec without targetRefs must hash to; an L4 part of a
// kept original is derived at apply time from the live original (executor/copy-checks.ts), whose rules must still
// hash to the recorded fingerprint.
// Pure.
import {analyzeAuthorizationPolicy} from '../planner/classify/authz.js'
import {canonicalize, digestOf} from '../planner/canonical.js'
import type {ClassifyContext} from '../planner/context.js'
import type {AuthorizationRule} from '../planner/istio-types.js'
import {isRecord} from '../planner/json.js'
import type {KubeObject} from '../planner/model.js'
import type {MigrationPlan} from '../planner/plan-types.js'
import {groupOf} from '../planner/refs.js'
import {
  denyRulesSafeAtZtunnel,
  exemptPeer,
  onlyServiceAccountConditions,
  type PeerIdentity,
  projectAllowRules,
  rewriteServiceAccountConditions,
} from '../planner/retarget/authz-rules.js'
import {
  companionName,
  copyName,
  COPIED_FROM_ANNOTATION,
  isRetargetable,
  l4PartName,
} from '../planner/retarget/objects.js'
import {GATEWAY_SERVICE_ACCOUNT_ANNOTATION, waypointPrincipal} from '../planner/waypoint.js'

const same = (a: unknown, b: unknown) => JSON.stringify(canonicalize(a)) === JSON.stringify(canonicalize(b))
const brief = (v: unknown) => JSON.stringify(canonicalize(v ?? null))

const isAuthz = (o: KubeObject) => groupOf(o.apiVersion) === 'security.istio.io' && o.kind === 'AuthorizationPolicy'
const actionOf = (o: KubeObject) => (o.spec?.action as string | undefined) ?? 'ALLOW'
const rulesOf = (o: KubeObject): AuthorizationRule[] | undefined =>
  Array.isArray(o.spec?.rules) ? (o.spec.rules as AuthorizationRule[]) : undefined

/** What the checks need from the plan: the waypoint's identity (principals per trust domain) and the namespace. */
export interface DerivationContext {
  namespace: string
  /** The waypoint principals a companion may admit (the trust domain and each alias). */
  waypointPrincipals: string[]
  peers: PeerIdentity[]
  /** One context per Istio version the analysis tells apart (the plan does not record the version). */
  contexts: ClassifyContext[]
  /** The fingerprints of the rules of the originals the plan keeps (spec.observed.keptRules), by copied-from value. */
  keptRules?: Record<string, string>
}

/** `<trust domain>/ns/<namespace>/sa/<name>` as the peer exemptPeer excludes; undefined for another form. */
function peerOf(principal: string, trustDomains: string[]): PeerIdentity | undefined {
  const m = /^([^/]+)\/ns\/([^/]+)\/sa\/([^/]+)$/.exec(principal)
  if (!m) return undefined
  const [, trustDomain, namespace, serviceAccount] = m as unknown as [string, string, string, string]
  return {
    principal,
    namespace,
    serviceAccount: `${namespace}/${serviceAccount}`,
    trustDomain,
    trustDomainAliases: trustDomains.filter((d) => d !== trustDomain),
  }
}

export function derivationContext(plan: MigrationPlan): DerivationContext {
  const namespace = plan.metadata.namespace
  const {waypointName, rootNamespace} = plan.spec.options
  const td = plan.spec.observed.trustDomain
  const domains = [td?.name ?? 'cluster.local', ...(td?.aliases ?? [])]
  // Plans written before the principals were recorded: the plan's own waypoint (its Gateway's ServiceAccount).
  const gateway = plan.spec.waypoints.find((w) => w.metadata.name === waypointName)
  const serviceAccount = gateway?.metadata.annotations?.[GATEWAY_SERVICE_ACCOUNT_ANNOTATION] ?? waypointName
  const waypointPrincipals =
    plan.spec.observed.waypointPrincipals ??
    domains.map((d) => waypointPrincipal(gateway?.metadata.namespace ?? namespace, serviceAccount, d))
  const peers = waypointPrincipals.flatMap((p) => peerOf(p, domains) ?? [])
  // Rule-level analysis reads only the Istio version (serviceAccounts are enforced by ztunnel since 1.25), which the
  // plan does not record: the planner's derivation for either answer is accepted. Workloads and Services are not
  // needed for the rules.
  const ctx: ClassifyContext = {
    namespace,
    rootNamespace,
    namespaceState: {
      name: namespace,
      labels: {},
      sidecarLabels: [],
      injection: 'none',
      mode: 'sidecar',
      multipleInjectionLabels: false,
    },
    workloads: [],
    services: [],
    objects: [],
    waypointPlanned: true,
  }
  return {
    namespace,
    waypointPrincipals,
    peers,
    contexts: [ctx, {...ctx, istioVersion: '1.24'}],
    ...(plan.spec.observed.keptRules ? {keptRules: plan.spec.observed.keptRules} : {}),
  }
}

/** The spec keys of a copy that may differ from the original's: only how it attaches. */
function withoutAttachment(spec: unknown): Record<string, unknown> {
  const {selector: _s, targetRef: _t, targetRefs: _r, ...rest} = isRecord(spec) ? spec : {}
  return rest
}

/** What a waypoint copy carries of its original: the spec without how it attaches (an AuthorizationPolicy's action explicit). */
function copiedRules(original: KubeObject): Record<string, unknown> {
  const expected = withoutAttachment(original.spec)
  if (isAuthz(original)) {
    // apSpec writes the action explicitly, and the provider only for CUSTOM.
    expected.action = actionOf(original)
    if (expected.action !== 'CUSTOM') delete expected.provider
  }
  return expected
}

/**
 * The fingerprint of an original's rules (its spec without selector/targetRef(s)), as a waypoint copy of it must carry
 * them: recorded in the plan for the originals it keeps (spec.observed.keptRules), which it does not store in full.
 */
export function rulesFingerprint(original: KubeObject): string {
  return digestOf(copiedRules(original))
}

/** The copy-from value (the copied-from annotation) → the fingerprint of the rules of each original the plan keeps. */
export function keptOriginalRules(
  created: KubeObject[],
  stored: ReadonlySet<string>,
  objects: readonly KubeObject[],
  namespace: string,
): Record<string, string> {
  const byRef = new Map(objects.map((o) => [`${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`, o] as const))
  const out: Record<string, string> = {}
  for (const object of created) {
    const from = object.metadata.annotations?.[COPIED_FROM_ANNOTATION]
    if (from === undefined || stored.has(from) || !isRetargetable(object)) continue
    const [ns, name] = from.includes('/') ? from.split('/', 2) : [namespace, from]
    const original = byRef.get(`${object.kind}/${ns}/${name}`)
    if (original) out[from] = rulesFingerprint(original)
  }
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
}

/** A waypoint copy: the original's spec, attached with targetRefs instead of a selector. */
function waypointCopyProblem(object: KubeObject, original: KubeObject): string | undefined {
  const name = `${object.kind} "${object.metadata.name}"`
  if (!Array.isArray(object.spec?.targetRefs) || object.spec.selector !== undefined)
    return `${name} is a waypoint copy, but it is not attached with targetRefs only`
  const copy = withoutAttachment(object.spec)
  const expected = copiedRules(original)
  if (same(copy, expected)) return undefined
  const keys = [...new Set([...Object.keys(copy), ...Object.keys(expected)])].filter((k) => !same(copy[k], expected[k]))
  return `${name} is not ${original.metadata.name} retargeted: ${keys.map((k) => `spec.${k} is ${brief(copy[k])}, the original's is ${brief(expected[k])}`).join('; ')}`
}

/** The rule sets the planner may write as the L4 part of `original` (see the module comment). */
function l4Candidates(original: KubeObject, d: DerivationContext): AuthorizationRule[][] {
  return d.contexts.flatMap((ctx) => l4CandidatesFor(original, d, ctx))
}

function l4CandidatesFor(original: KubeObject, d: DerivationContext, ctx: ClassifyContext): AuthorizationRule[][] {
  const a = analyzeAuthorizationPolicy(original, ctx)
  const written = rulesOf(original) ?? []
  const out: AuthorizationRule[][] = []
  const withExemptions = (rules: AuthorizationRule[]) => [
    rules,
    ...d.peers.map((peer) => exemptPeer(rules, peer, original.metadata.namespace ?? d.namespace)),
  ]
  if (a.action === 'ALLOW') out.push(projectAllowRules(a, written).rules)
  if (a.action === 'DENY') out.push(...withExemptions(denyRulesSafeAtZtunnel(a)))
  // E22: only a policy whose one attribute ztunnel lacks is when: source.serviceAccount is rewritten.
  if (!onlyServiceAccountConditions(a)) return out
  const rewrite = rewriteServiceAccountConditions(written, d.namespace)
  if (rewrite.ok && (a.action === 'ALLOW' || a.action === 'DENY'))
    out.push(...(a.action === 'DENY' ? withExemptions(rewrite.rules) : [rewrite.rules]))
  return out
}

/** The L4 part: the same action and selector, and rules the planner derives from the original's. */
function l4PartProblem(object: KubeObject, original: KubeObject, d: DerivationContext): string | undefined {
  const name = `AuthorizationPolicy "${object.metadata.name}"`
  if (actionOf(object) !== actionOf(original))
    return `${name} is ${actionOf(object)}, but ${original.metadata.name}, whose L4 part it is, is ${actionOf(original)}`
  if (!same(object.spec?.selector ?? null, original.spec?.selector ?? null))
    return `${name} selects ${brief(object.spec?.selector)}, but ${original.metadata.name}, whose L4 part it is, selects ${brief(original.spec?.selector)}`
  const rest = withoutAttachment(object.spec)
  const extra = Object.keys(rest).filter((k) => k !== 'action' && k !== 'rules')
  if (extra.length > 0) return `${name} has ${extra.map((k) => `spec.${k}`).join(', ')}, which an L4 part never has`
  const rules = rulesOf(object) ?? []
  const candidates = l4Candidates(original, d)
  if (candidates.some((c) => same(c, rules))) return undefined
  const derived = [...new Set(candidates.map(brief))].join(' or ')
  return `${name} is not the L4 part of ${original.metadata.name}: its rules ${brief(rules)} are not what the planner derives from the original's (${derived})`
}

/** The companion: an ALLOW of the waypoint's principals only, on the original's selector when it is known. */
function companionProblem(
  object: KubeObject,
  original: KubeObject | undefined,
  d: DerivationContext,
): string | undefined {
  const name = `AuthorizationPolicy "${object.metadata.name}"`
  const expected = {
    action: 'ALLOW',
    rules: [{from: [{source: {principals: ['…']}}]}],
  }
  const rules = rulesOf(object)
  const principals = rules?.[0]?.from?.[0]?.source?.principals
  const shape = {...withoutAttachment(object.spec), rules: [{from: [{source: {principals: ['…']}}]}]}
  if (
    actionOf(object) !== 'ALLOW' ||
    object.spec?.targetRefs !== undefined ||
    rules?.length !== 1 ||
    !Array.isArray(principals) ||
    !same(shape, expected) ||
    !same(rules, [{from: [{source: {principals}}]}])
  )
    return `${name} is a companion, but not one ALLOW rule admitting principals (from.source.principals) only: ${brief(withoutAttachment(object.spec))}`
  const others = principals.filter((p) => !d.waypointPrincipals.includes(String(p)))
  if (others.length > 0)
    return `${name} admits ${others.join(', ')}, which ${others.length === 1 ? 'is' : 'are'} not the waypoint's principal (${d.waypointPrincipals.join(', ')}): a companion admits the waypoint only`
  if (original && !same(object.spec?.selector ?? null, original.spec?.selector ?? null))
    return `${name} selects ${brief(object.spec?.selector)}, but ${original.metadata.name}, whose companion it is, selects ${brief(original.spec?.selector)}`
  return undefined
}

/**
 * Whether `object`, created by the plan with a copied-from annotation, is what the planner derives from its
 * original; `originals` are the objects the plan stores, by the name copied-from gives.
 */
export function derivationProblem(
  object: KubeObject,
  originals: Map<string, KubeObject>,
  d: DerivationContext,
): string | undefined {
  const from = object.metadata.annotations?.[COPIED_FROM_ANNOTATION]
  if (from === undefined) return undefined
  const original = originals.get(from)
  const base = from.includes('/') ? from.slice(from.indexOf('/') + 1) : from
  const name = object.metadata.name
  if (original && (original.kind !== object.kind || groupOf(original.apiVersion) !== groupOf(object.apiVersion)))
    return `${object.kind} "${name}" says it is copied from ${from}, which is a ${original.kind}`
  // An original the plan keeps is not stored: only the fingerprint of its rules (spec.observed.keptRules).
  const kept = original ? undefined : d.keptRules?.[from]
  const unrecorded = `${object.kind} "${name}" is derived from ${from}, which the plan keeps without recording the fingerprint of its rules (spec.observed.keptRules): it cannot be checked`
  if (name === copyName(base)) {
    if (original) return waypointCopyProblem(object, original)
    if (!Array.isArray(object.spec?.targetRefs) || object.spec.selector !== undefined)
      return `${object.kind} "${name}" is a waypoint copy, but it is not attached with targetRefs only`
    // A plan written before keptRules (v1alpha2) has none: its copies are judged at apply time (copy-checks.ts).
    if (kept === undefined) return d.keptRules ? unrecorded : undefined
    return digestOf(withoutAttachment(object.spec)) === kept
      ? undefined
      : `${object.kind} "${name}" is not ${from} retargeted: its spec (without targetRefs) is not the rules of the original the plan recorded (spec.observed.keptRules["${from}"]): a copy carries the original's rules, nothing wider`
  }
  if (isAuthz(object) && name === companionName(base)) return companionProblem(object, original, d)
  if (isAuthz(object) && name === l4PartName(base) && original) return l4PartProblem(object, original, d)
  // The L4 part of a kept original is derived from its rules at apply time, against the live original (copy-checks.ts).
  if (isAuthz(object) && name === l4PartName(base)) return kept === undefined && d.keptRules ? unrecorded : undefined
  return `${object.kind} "${name}" says it is copied from ${from}, but the planner derives only ${copyName(base)}${isAuthz(object) ? `, ${companionName(base)} and ${l4PartName(base)}` : ''} from it`
}
