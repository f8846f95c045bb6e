// AuthorizationPolicy (DOMAIN §3.1, §7 E14-E16/E21/E22, §8).
//
// `analyzeAuthorizationPolicy` reproduces istiod's ambient conversion (pilot/pkg/serviceregistry/ambient/
// authorization.go) and ztunnel's evaluation (src/rbac.rs) so that the consequences of a policy landing on
// ztunnel are computed clause by clause, not guessed:
// - a rule becomes a list of clauses ANDed together: one `from` clause (a Match per entry, L4 source fields),
//   one `to` clause (a Match per entry, ports only), one clause per `when` (keys outside the L4 set give an
//   empty Match);
// - ALLOW: a rule with any L7 attribute is discarded ("L7 policies never match for ALLOW");
// - DENY: L7 pieces are blanked; ztunnel skips empty Matches, so a clause whose Matches are all empty never
//   matches and its rule never fires;
// - trustDomains/notTrustDomains are neither converted nor flagged (silently dropped);
// - ports that are not numbers in 0-65535 are dropped.
import {finding} from '../findings/finding.js'
import type {ClassifyContext} from '../context.js'
import type {Action, Finding, KubeObject, ObjectRef, Verdict, ZtunnelEffect} from '../model.js'
import type {
  AuthorizationAction,
  AuthorizationCondition,
  AuthorizationOperation,
  AuthorizationPolicySpec,
  AuthorizationRule,
  AuthorizationSource,
  Labels,
  PolicyTargetReference,
} from '../istio-types.js'
import {formatRef} from '../refs.js'
import {
  type Classified,
  type KindClassifier,
  entriesOnlySelector,
  classifiedId,
  istioMinor,
  item,
  list,
  parseBool,
  reason,
  uniqSorted,
} from './results.js'
import {analyzeTargetRefs, targetRefsOf} from './waypoints.js'
import {
  allServices,
  hasLabels,
  isProxyWorkload,
  matchingEntries,
  matchingWorkloads,
  servicesCovering,
  servicesSelectingEntries,
} from './selection.js'
import {isRecord} from '../json.js'
import {itemRef, namespaceOf} from './objects.js'
import {DRY_RUN_ANNOTATION, SECURITY} from '../vocab.js'

export {DRY_RUN_ANNOTATION}

/** `when` keys ztunnel enforces (l4WhenAttributes in istiod's ambient conversion). */
export const L4_WHEN_KEYS = [
  'source.ip',
  'source.namespace',
  'source.principal',
  'destination.ip',
  'destination.port',
] as const

/** How the policy is attached (DOMAIN §3.0/§3.1). */
export type AuthzScope =
  | 'workload' // selector, in the migrated (or another non-root) namespace
  | 'namespace' // no selector, no targetRefs: every workload of the policy's namespace
  | 'mesh' // no selector, in the root namespace: every captured pod of the mesh
  | 'root-selector' // selector in the root namespace: matching pods of every namespace
  | 'targetRefs' // attached to waypoints; ignored by sidecars and ztunnel

/** Where ztunnel stands on one attribute: enforced, needs a waypoint, or silently dropped. */
export type AuthzFieldLayer = 'L4' | 'L7' | 'ignored'

export interface AuthzField {
  /** Exact JSON path; `when` conditions read `spec.rules[i].when[j].key=<key>`. */
  path: string
  /** The API field (`principals`, `methods`, ...) or, for conditions, `when:<key>`. */
  field: string
  layer: AuthzFieldLayer
  why: string
  /** Keyed on the peer's SPIFFE identity (principal, namespace, service account). */
  identity: boolean
  /** Keyed on the direct peer's IP address. */
  peerIp: boolean
  /** A negative match (`notX`, `notValues` only). */
  negative: boolean
  /** ztunnel enforces this field: it is L4 and at least one of its values survives the conversion. */
  enforced: boolean
  /** Values ztunnel drops from an L4 field (non-numeric ports). */
  droppedValues?: string[]
}

/** What ztunnel keeps of one Match relative to what was written. */
export type MatchOutcome = 'same' | 'broader' | 'narrower' | 'mixed' | 'empty'

export interface AuthzMatchAnalysis {
  /** `spec.rules[i].from[j]`, `spec.rules[i].to[j]` or `spec.rules[i].when[j]`. */
  path: string
  clause: 'from' | 'to' | 'when'
  fields: AuthzField[]
  /** `empty`: nothing ztunnel can enforce is left, so ztunnel skips it (it never matches). */
  outcome: MatchOutcome
}

/** What ztunnel makes of one rule. */
export type RuleOutcome =
  | 'as-written'
  | 'dropped' // ALLOW rule with an L7 attribute: discarded
  | 'never-matches' // a clause lost every Match: the rule can never fire
  | 'broadened' // some constraints dropped: matches more requests than written
  | 'narrowed' // some alternatives dropped: matches fewer requests than written
  | 'mixed' // both
  | 'not-sent' // the policy never reaches ztunnel

export interface AuthzRuleAnalysis {
  index: number
  path: string
  from: AuthzMatchAnalysis[]
  to: AuthzMatchAnalysis[]
  when: AuthzMatchAnalysis[]
  fields: AuthzField[]
  hasL7: boolean
  /** `{}`: no from, no to, no when — matches every request. */
  matchesEverything: boolean
  outcome: RuleOutcome
  /** The rule as ztunnel enforces it (L4 fields only, empty Matches removed); absent when it can never fire. */
  ztunnelRule?: AuthorizationRule
}

export interface AuthorizationPolicyAnalysis {
  ref: ObjectRef
  action: AuthorizationAction
  provider?: string
  scope: AuthzScope
  selector?: Labels
  targetRefs: PolicyTargetReference[]
  dryRun: boolean
  /** What ztunnel does with a dry-run policy on this Istio version (undefined when not dry-run). */
  dryRunAtZtunnel?: 'enforced' | 'not-sent' | 'unknown-version'
  /** Whether istiod sends the policy to ztunnel at all. */
  sentToZtunnel: boolean
  /** `spec.rules` is present with at least one rule. */
  hasRules: boolean
  rules: AuthzRuleAnalysis[]
  l4Fields: AuthzField[]
  l7Fields: AuthzField[]
  /** Attributes ztunnel silently drops (trustDomains; serviceAccounts before 1.25). */
  ignoredFields: AuthzField[]
  /** Some attribute (or the action) can only be enforced by a waypoint. */
  needsWaypoint: boolean
  /** The converted policy ztunnel enforces relies on the caller's identity / direct-peer IP. */
  identityKeyed: boolean
  peerIpKeyed: boolean
  /** L4 fields of the converted policy that key on identity or peer IP. */
  identityFields: AuthzField[]
  ztunnelEffect: ZtunnelEffect
  /** ztunnel both drops alternatives and constraints: the effect is `narrowed` or `broadened` but really both. */
  ztunnelMixed: boolean
  /** The policy as ztunnel evaluates it, in API shape (evaluating it with sidecar semantics gives ztunnel's answers). */
  ztunnelPolicy?: {action: 'ALLOW' | 'DENY'; rules: AuthorizationRule[]}
  /** Rules (as written) ztunnel does not enforce as written: what a waypoint copy must carry. */
  l7Rules: AuthorizationRule[]
  /** Workloads of the migrated namespace the policy selects (selector/namespace/mesh scope). */
  workloads: string[]
  /** Services of the migrated namespace the policy applies to. */
  services: string[]
  /** One sentence: what happens to traffic once the selected workloads are ambient. */
  consequence: string
}

// --- field table ---------------------------------------------------------------------------------

interface FieldRule {
  layer: AuthzFieldLayer
  why: string
  identity?: boolean
  peerIp?: boolean
  /** Values must be ports (non-numeric ones are dropped). */
  ports?: boolean
  negative?: boolean
}

const SOURCE_FIELDS: Record<keyof AuthorizationSource, FieldRule> = {
  principals: {layer: 'L4', identity: true, why: 'peer identity (SPIFFE principal): L4, enforced by ztunnel'},
  notPrincipals: {
    layer: 'L4',
    identity: true,
    negative: true,
    why: 'negative peer identity match: L4, enforced by ztunnel',
  },
  namespaces: {
    layer: 'L4',
    identity: true,
    why: "source namespace (from the peer's SPIFFE identity): L4, enforced by ztunnel",
  },
  notNamespaces: {
    layer: 'L4',
    identity: true,
    negative: true,
    why: 'negative source namespace match: L4, enforced by ztunnel',
  },
  serviceAccounts: {
    layer: 'L4',
    identity: true,
    why: 'source service account: L4, enforced by ztunnel (Istio >= 1.25)',
  },
  notServiceAccounts: {
    layer: 'L4',
    identity: true,
    negative: true,
    why: 'negative source service account match: L4, enforced by ztunnel (Istio >= 1.25)',
  },
  ipBlocks: {
    layer: 'L4',
    peerIp: true,
    why: "IP of the direct peer: L4, enforced by ztunnel (the waypoint's IP once one is in the path)",
  },
  notIpBlocks: {
    layer: 'L4',
    peerIp: true,
    negative: true,
    why: 'negative direct-peer IP match: L4, enforced by ztunnel',
  },
  trustDomains: {
    layer: 'ignored',
    why: 'silently ignored by ztunnel (neither converted nor reported): the constraint disappears at ztunnel; a waypoint enforces it',
  },
  notTrustDomains: {
    layer: 'ignored',
    negative: true,
    why: 'silently ignored by ztunnel (neither converted nor reported): the exclusion disappears at ztunnel; a waypoint enforces it',
  },
  requestPrincipals: {
    layer: 'L7',
    why: 'JWT request principal: L7, needs a waypoint (with a targetRefs RequestAuthentication)',
  },
  notRequestPrincipals: {
    layer: 'L7',
    negative: true,
    why: 'negative JWT request principal match: L7, needs a waypoint (with a targetRefs RequestAuthentication)',
  },
  remoteIpBlocks: {layer: 'L7', why: 'original client IP (X-Forwarded-For / PROXY protocol): L7, needs a waypoint'},
  notRemoteIpBlocks: {layer: 'L7', negative: true, why: 'negative original client IP match: L7, needs a waypoint'},
}

const OPERATION_FIELDS: Record<keyof AuthorizationOperation, FieldRule> = {
  ports: {layer: 'L4', ports: true, why: 'destination port: L4, enforced by ztunnel'},
  notPorts: {layer: 'L4', ports: true, negative: true, why: 'negative destination port match: L4, enforced by ztunnel'},
  hosts: {layer: 'L7', why: 'HTTP host (authority) match: L7, needs a waypoint'},
  notHosts: {layer: 'L7', negative: true, why: 'negative HTTP host match: L7, needs a waypoint'},
  methods: {layer: 'L7', why: 'HTTP method match: L7, needs a waypoint'},
  notMethods: {layer: 'L7', negative: true, why: 'negative HTTP method match: L7, needs a waypoint'},
  paths: {layer: 'L7', why: 'HTTP path match: L7, needs a waypoint'},
  notPaths: {layer: 'L7', negative: true, why: 'negative HTTP path match: L7, needs a waypoint'},
}

const L4_WHEN: Record<(typeof L4_WHEN_KEYS)[number], FieldRule> = {
  'source.ip': {layer: 'L4', peerIp: true, why: 'direct-peer IP condition: L4, enforced by ztunnel'},
  'source.namespace': {layer: 'L4', identity: true, why: 'source namespace condition: L4, enforced by ztunnel'},
  'source.principal': {layer: 'L4', identity: true, why: 'peer identity condition: L4, enforced by ztunnel'},
  'destination.ip': {layer: 'L4', why: 'destination IP condition: L4, enforced by ztunnel'},
  'destination.port': {layer: 'L4', ports: true, why: 'destination port condition: L4, enforced by ztunnel'},
}

/** Why a non-L4 `when` key needs a waypoint (attribute list of pilot/pkg/security/authz/model/model.go). */
function l7WhenWhy(key: string): string {
  if (key.startsWith('request.headers[')) return 'HTTP header condition: L7, needs a waypoint'
  if (key.startsWith('request.auth.'))
    return 'JWT claim condition: L7, needs a waypoint (with a targetRefs RequestAuthentication)'
  if (key === 'request.regex.headers' || key.startsWith('request.regex.headers'))
    return 'HTTP header regex condition: L7, needs a waypoint'
  if (key === 'remote.ip')
    return 'original client IP condition (X-Forwarded-For / PROXY protocol): L7, needs a waypoint'
  if (key === 'connection.sni') return 'TLS SNI condition: not HTTP, but ztunnel does not support it — needs a waypoint'
  if (key === 'source.serviceAccount')
    return 'service account condition: not supported by ztunnel — needs a waypoint; on Istio >= 1.25 rewrite it as from.source.serviceAccounts, which ztunnel enforces'
  if (key === 'source.trustDomain') return 'trust domain condition: not supported by ztunnel — needs a waypoint'
  if (key.startsWith('experimental.envoy.filters.')) return 'Envoy filter metadata condition: L7, needs a waypoint'
  return 'not one of the L4 condition keys ztunnel knows: treated as an HTTP attribute, needs a waypoint'
}

/** A port as istiod's stringToPort accepts it. */
function validPort(value: string): boolean {
  if (!/^\d+$/.test(value)) return false
  const n = Number(value)
  return n >= 0 && n <= 65535
}

function field(path: string, name: string, rule: FieldRule, values: string[]): AuthzField {
  const f: AuthzField = {
    path,
    field: name,
    layer: rule.layer,
    why: rule.why,
    identity: rule.identity === true,
    peerIp: rule.peerIp === true,
    negative: rule.negative === true,
    enforced: rule.layer === 'L4',
  }
  if (rule.ports) {
    const dropped = values.filter((v) => !validPort(v))
    if (dropped.length > 0) {
      f.droppedValues = dropped
      if (dropped.length === values.length) {
        f.enforced = false
        f.why = `${rule.why}; but no value is a valid port number, so ztunnel drops the whole field`
      } else {
        f.why = `${rule.why}; ztunnel drops the non-numeric value(s) ${dropped.join(', ')}`
      }
    }
  }
  return f
}

// --- relation algebra ----------------------------------------------------------------------------

type Relation = 'same' | 'broader' | 'narrower' | 'mixed'

function combine(a: Relation, b: Relation): Relation {
  if (a === 'same') return b
  if (b === 'same' || a === b) return a
  return 'mixed'
}

/**
 * What ztunnel keeps of one Match. Removing a constraint (an L7 field of a DENY, an ignored field, a port
 * list with no valid port) makes it match more; dropping values from a positive port list makes it match
 * less, from a negative list more. No enforceable constraint left → an empty Match, which ztunnel skips.
 */
function matchOutcome(fields: AuthzField[]): MatchOutcome {
  let rel: Relation = 'same'
  let enforced = 0
  for (const f of fields) {
    if (!f.enforced) {
      rel = combine(rel, 'broader')
      continue
    }
    enforced++
    if ((f.droppedValues?.length ?? 0) > 0) rel = combine(rel, f.negative ? 'broader' : 'narrower')
  }
  return enforced === 0 ? 'empty' : rel
}

// --- analysis ------------------------------------------------------------------------------------

function scopeOf(spec: AuthorizationPolicySpec, ns: string, ctx: ClassifyContext): AuthzScope {
  if (targetRefsOf(spec).length > 0) return 'targetRefs'
  const root = ns === ctx.rootNamespace
  if (hasLabels(spec.selector?.matchLabels)) return root ? 'root-selector' : 'workload'
  return root ? 'mesh' : 'namespace'
}

function analyzeRule(
  rule: AuthorizationRule,
  index: number,
  action: AuthorizationAction,
  ctx: ClassifyContext,
): AuthzRuleAnalysis {
  const path = `spec.rules[${index}]`
  const minor = istioMinor(ctx)

  const from = fromMatches(rule, path, minor)
  const to = toMatches(rule, path)
  const when = whenMatches(rule, path)

  const fields = [...from, ...to, ...when].flatMap((m) => m.fields)
  const hasL7 = fields.some((f) => f.layer === 'L7')
  const matchesEverything = from.length === 0 && to.length === 0 && when.length === 0
  const analysis: AuthzRuleAnalysis = {
    index,
    path,
    from,
    to,
    when,
    fields,
    hasL7,
    matchesEverything,
    outcome: 'as-written',
  }

  if (action !== 'ALLOW' && action !== 'DENY') {
    analysis.outcome = 'not-sent'
    return analysis
  }
  if (action === 'ALLOW' && hasL7) {
    analysis.outcome = 'dropped'
    return analysis
  }

  const {never, rel} = ruleRelation(from, to, when)
  if (never) {
    analysis.outcome = 'never-matches'
    return analysis
  }
  analysis.outcome =
    rel === 'same' ? 'as-written' : rel === 'broader' ? 'broadened' : rel === 'narrower' ? 'narrowed' : 'mixed'
  analysis.ztunnelRule = ztunnelRule(rule, analysis)
  return analysis
}

/** The rule's `from` sources, field by field (serviceAccounts are dropped before Istio 1.25). */
function fromMatches(rule: AuthorizationRule, path: string, minor: number | undefined): AuthzMatchAnalysis[] {
  return (Array.isArray(rule?.from) ? rule.from : []).map((entry, j) => {
    const src: Record<string, unknown> = isRecord(entry?.source) ? entry.source : {}
    const fields: AuthzField[] = []
    for (const [name, def] of Object.entries(SOURCE_FIELDS) as [keyof AuthorizationSource, FieldRule][]) {
      const values = list(src[name])
      if (!values) continue
      let effective = def
      if ((name === 'serviceAccounts' || name === 'notServiceAccounts') && minor !== undefined && minor < 25) {
        effective = {
          layer: 'ignored',
          why: `not enforced on Istio 1.${minor}: ztunnel (and the API) know serviceAccounts only since 1.25, so the constraint is dropped; use principals (cluster.local/ns/<ns>/sa/<sa>) instead`,
        }
      }
      fields.push(field(`${path}.from[${j}].source.${name}`, name, effective, values))
    }
    return {path: `${path}.from[${j}]`, clause: 'from' as const, fields, outcome: matchOutcome(fields)}
  })
}

/** The rule's `to` operations, field by field. */
function toMatches(rule: AuthorizationRule, path: string): AuthzMatchAnalysis[] {
  return (Array.isArray(rule?.to) ? rule.to : []).map((entry, j) => {
    const op: Record<string, unknown> = isRecord(entry?.operation) ? entry.operation : {}
    const fields: AuthzField[] = []
    for (const [name, def] of Object.entries(OPERATION_FIELDS) as [keyof AuthorizationOperation, FieldRule][]) {
      const values = list(op[name])
      if (!values) continue
      fields.push(field(`${path}.to[${j}].operation.${name}`, name, def, values))
    }
    return {path: `${path}.to[${j}]`, clause: 'to' as const, fields, outcome: matchOutcome(fields)}
  })
}

/** The rule's `when` conditions: L4 keys ztunnel evaluates, everything else L7. */
function whenMatches(rule: AuthorizationRule, path: string): AuthzMatchAnalysis[] {
  return (Array.isArray(rule?.when) ? rule.when : []).map((cond: AuthorizationCondition, j) => {
    const key = String(cond?.key ?? '')
    const l4 = (L4_WHEN as Record<string, FieldRule>)[key]
    const def: FieldRule = l4 ?? {layer: 'L7', why: l7WhenWhy(key)}
    const values = [...(list(cond?.values) ?? []), ...(list(cond?.notValues) ?? [])]
    const fields: AuthzField[] = []
    const condPath = `${path}.when[${j}].key=${key}`
    const negativeOnly = list(cond?.values) === undefined && list(cond?.notValues) !== undefined
    if (values.length > 0 || def.layer !== 'L4')
      fields.push(field(condPath, `when:${key}`, negativeOnly ? {...def, negative: true} : def, values))
    // A condition with neither values nor notValues is an empty Match even for an L4 key.
    return {path: `${path}.when[${j}]`, clause: 'when' as const, fields, outcome: matchOutcome(fields)}
  })
}

/** How the L4 part relates to the rule as written, and whether an emptied clause makes it never match. */
function ruleRelation(
  from: AuthzMatchAnalysis[],
  to: AuthzMatchAnalysis[],
  when: AuthzMatchAnalysis[],
): {never: boolean; rel: Relation} {
  let never = false
  let rel: Relation = 'same'
  for (const clause of [from, to]) {
    if (clause.length === 0) continue
    const live = clause.filter((m) => m.outcome !== 'empty')
    if (live.length === 0) {
      never = true
      continue
    }
    if (live.length < clause.length) rel = combine(rel, 'narrower')
    for (const m of live) rel = combine(rel, m.outcome as Relation)
  }
  for (const m of when) {
    if (m.outcome === 'empty') never = true
    else rel = combine(rel, m.outcome as Relation)
  }
  return {never, rel}
}

/** The converted rule in API shape: only L4 fields with the values ztunnel keeps, empty Matches removed. */
function ztunnelRule(rule: AuthorizationRule, a: AuthzRuleAnalysis): AuthorizationRule {
  const out: AuthorizationRule = {}
  const keep = (f: AuthzField, written: unknown): string[] | undefined => {
    if (f.layer !== 'L4') return undefined
    const values = (list(written) ?? []).filter((v) => !(f.droppedValues ?? []).includes(v))
    return values.length > 0 ? values : undefined
  }
  const from = a.from.filter((m) => m.outcome !== 'empty')
  if (from.length > 0) {
    out.from = from.map((m) => {
      const j = a.from.indexOf(m)
      const written = (rule.from?.[j]?.source ?? {}) as Record<string, unknown>
      const source: Record<string, string[]> = {}
      for (const f of m.fields) {
        const v = keep(f, written[f.field])
        if (v) source[f.field] = v
      }
      return {source: source as AuthorizationSource}
    })
  }
  const to = a.to.filter((m) => m.outcome !== 'empty')
  if (to.length > 0) {
    out.to = to.map((m) => {
      const j = a.to.indexOf(m)
      const written = (rule.to?.[j]?.operation ?? {}) as Record<string, unknown>
      const operation: Record<string, string[]> = {}
      for (const f of m.fields) {
        const v = keep(f, written[f.field])
        if (v) operation[f.field] = v
      }
      return {operation: operation as AuthorizationOperation}
    })
  }
  if (a.when.length > 0) {
    out.when = a.when.map((m) => {
      const cond = rule.when![a.when.indexOf(m)]!
      const dropped = m.fields[0]?.droppedValues ?? []
      const c: AuthorizationCondition = {key: cond.key}
      const values = (list(cond.values) ?? []).filter((v) => !dropped.includes(v))
      const notValues = (list(cond.notValues) ?? []).filter((v) => !dropped.includes(v))
      if (values.length > 0) c.values = values
      if (notValues.length > 0) c.notValues = notValues
      return c
    })
  }
  return out
}

function dryRunMode(ctx: ClassifyContext): 'enforced' | 'not-sent' | 'unknown-version' {
  const minor = istioMinor(ctx)
  if (minor === undefined) return 'unknown-version'
  return minor <= 28 ? 'enforced' : 'not-sent'
}

/** Whether the converted rules match fewer and/or more requests than written (only meaningful when sent and not all lost). */
function directions(rules: AuthzRuleAnalysis[]): {narrower: boolean; broader: boolean} {
  const lost = rules.some((r) => r.outcome === 'dropped' || r.outcome === 'never-matches')
  return {
    narrower: lost || rules.some((r) => r.outcome === 'narrowed' || r.outcome === 'mixed'),
    broader: rules.some((r) => r.outcome === 'broadened' || r.outcome === 'mixed'),
  }
}

function effectOf(
  action: AuthorizationAction,
  sent: boolean,
  hasRules: boolean,
  rules: AuthzRuleAnalysis[],
): ZtunnelEffect {
  if (!sent) return 'ignored'
  if (!hasRules) return 'as-written'
  const lost = rules.filter((r) => r.outcome === 'dropped' || r.outcome === 'never-matches')
  if (lost.length === rules.length) return action === 'ALLOW' ? 'deny-all' : 'no-op'
  const {narrower, broader} = directions(rules)
  // Both at once: report the direction that bites first — an ALLOW that lost rules denies traffic,
  // a DENY enforced on its L4 part denies traffic; the reasons spell out the other direction too.
  if (narrower && broader) return action === 'ALLOW' ? 'narrowed' : 'broadened'
  if (narrower) return 'narrowed'
  if (broader) return 'broadened'
  return 'as-written'
}

function whoText(a: Pick<AuthorizationPolicyAnalysis, 'scope' | 'ref'>): string {
  switch (a.scope) {
    case 'mesh':
      return 'every ambient pod of the mesh'
    case 'namespace':
      return `every workload of namespace ${a.ref.namespace}`
    case 'root-selector':
      return 'the selected pods of every namespace'
    default:
      return 'the selected workloads'
  }
}

function consequenceOf(a: AuthorizationPolicyAnalysis): string {
  const who = whoText(a)
  if (a.scope === 'targetRefs') return 'enforced by the waypoint(s) it targets; sidecars and ztunnel ignore it'
  if (!a.sentToZtunnel) {
    if (a.action === 'CUSTOM')
      return `not sent to ztunnel: the external authorizer${a.provider ? ` ${a.provider}` : ''} is no longer consulted for ${who} (security regression, not fail-closed)`
    if (a.action === 'AUDIT') return `not sent to ztunnel: requests to ${who} are no longer audit-logged`
    return 'not sent to ztunnel (dry-run on Istio >= 1.29 without AMBIENT_ENABLE_DRY_RUN_AUTHORIZATION_POLICY)'
  }
  if (a.ztunnelMixed) {
    return a.action === 'ALLOW'
      ? `ztunnel drops some ALLOW alternatives and some constraints: part of the traffic to ${who} that was allowed is denied, and some that was not allowed is let through`
      : `ztunnel drops some DENY alternatives and enforces others on their L4 part only: it lets through some traffic to ${who} that should be denied, and denies some that should pass`
  }
  switch (a.ztunnelEffect) {
    case 'as-written':
      if (!a.hasRules)
        return a.action === 'ALLOW'
          ? `ALLOW without rules denies all traffic to ${who}, at ztunnel as with sidecars`
          : 'DENY without rules never matches, at ztunnel as with sidecars'
      return 'ztunnel enforces it as written'
    case 'deny-all':
      return `no rule survives at ztunnel: the ALLOW matches nothing, so all traffic to ${who} is denied unless another ALLOW policy matches (fail-closed)`
    case 'no-op':
      return `no rule is enforceable at ztunnel: the DENY never fires for ${who} (fail-open)`
    case 'narrowed':
      return a.action === 'ALLOW'
        ? `ztunnel enforces fewer ALLOW alternatives than written: traffic they allowed to ${who} is denied (stricter than written)`
        : `ztunnel drops DENY alternatives: traffic they denied to ${who} is let through (fail-open for them)`
    case 'broadened':
      return a.action === 'ALLOW'
        ? `ztunnel drops constraints of ALLOW rules: more traffic to ${who} is allowed than written`
        : `ztunnel enforces the DENY on its L4 part only: it denies more traffic to ${who} than written`
    default:
      return 'not sent to ztunnel'
  }
}

/** The workloads a policy selects and the Services in front of them (targetRefs: the Services it attaches to). */
function policyReach(
  obj: KubeObject,
  ctx: ClassifyContext,
  scope: AuthzScope,
  selector: Labels | undefined,
): {workloads: string[]; services: string[]} {
  if (scope === 'targetRefs') return {workloads: [], services: analyzeTargetRefs(obj, ctx).services}
  if (scope === 'workload' || scope === 'root-selector') {
    const ws = matchingWorkloads(ctx, selector)
    return {workloads: uniqSorted(ws.map((w) => w.ref.name)), services: servicesCovering(ctx, ws)}
  }
  return {workloads: uniqSorted(ctx.workloads.map((w) => w.ref.name)), services: allServices(ctx)}
}

/**
 * Everything later modules need to re-target an AuthorizationPolicy and simulate its enforcement:
 * attachment, dry-run handling, per-rule and per-field L4/L7 split, the converted policy ztunnel sees and
 * its effect, identity dependence, and the L7 part a waypoint copy must carry.
 */
export function analyzeAuthorizationPolicy(obj: KubeObject, ctx: ClassifyContext): AuthorizationPolicyAnalysis {
  const spec: AuthorizationPolicySpec = isRecord(obj.spec) ? obj.spec : {}
  const ns = namespaceOf(obj, ctx)
  const ref = itemRef(obj, ctx)
  const rawAction = String(spec.action ?? 'ALLOW').toUpperCase()
  const action: AuthorizationAction =
    (['ALLOW', 'DENY', 'AUDIT', 'CUSTOM'] as const).find((a) => a === rawAction) ?? 'ALLOW'
  const scope = scopeOf(spec, ns, ctx)
  const dryRun = parseBool(obj.metadata.annotations?.[DRY_RUN_ANNOTATION]) === true
  const rulesIn: AuthorizationRule[] = Array.isArray(spec.rules) ? spec.rules : []
  const hasRules = rulesIn.length > 0

  // Only ALLOW/DENY selector or selector-less policies are candidates for ztunnel; dry-run only matters for them.
  const ztunnelCandidate = scope !== 'targetRefs' && (action === 'ALLOW' || action === 'DENY')
  const dryRunAtZtunnel = dryRun && ztunnelCandidate ? dryRunMode(ctx) : undefined
  const sentToZtunnel = ztunnelCandidate && dryRunAtZtunnel !== 'not-sent'

  const rules = rulesIn.map((r, i) => {
    const a = analyzeRule(r ?? {}, i, action, ctx)
    if (!sentToZtunnel && a.outcome !== 'not-sent') {
      a.outcome = 'not-sent'
      delete a.ztunnelRule
    }
    return a
  })

  const allFields = rules.flatMap((r) => r.fields)
  const l4Fields = allFields.filter((f) => f.layer === 'L4')
  const l7Fields = allFields.filter((f) => f.layer === 'L7')
  const ignoredFields = allFields.filter((f) => f.layer === 'ignored')
  const keptRules = rules.filter((r) => r.ztunnelRule !== undefined)
  const identityFields = keptRules.flatMap((r) => r.fields).filter((f) => f.layer === 'L4' && (f.identity || f.peerIp))

  const selector = hasLabels(spec.selector?.matchLabels) ? spec.selector!.matchLabels! : undefined
  const {workloads, services} = policyReach(obj, ctx, scope, selector)

  const analysis: AuthorizationPolicyAnalysis = {
    ref,
    action,
    scope,
    targetRefs: targetRefsOf(spec).map((t) => t.ref),
    dryRun,
    sentToZtunnel,
    hasRules,
    rules,
    l4Fields,
    l7Fields,
    ignoredFields,
    needsWaypoint: l7Fields.length > 0 || ignoredFields.length > 0 || action === 'CUSTOM' || action === 'AUDIT',
    identityKeyed: identityFields.some((f) => f.identity),
    peerIpKeyed: identityFields.some((f) => f.peerIp),
    identityFields,
    ztunnelEffect: effectOf(action, sentToZtunnel, hasRules, rules),
    ztunnelMixed: false,
    l7Rules: rules.filter((r) => r.outcome !== 'as-written').map((r) => rulesIn[r.index]!),
    workloads,
    services,
    consequence: '',
  }
  if (spec.provider?.name) analysis.provider = String(spec.provider.name)
  if (selector) analysis.selector = selector
  if (dryRunAtZtunnel) analysis.dryRunAtZtunnel = dryRunAtZtunnel
  if (analysis.ztunnelEffect === 'narrowed' || analysis.ztunnelEffect === 'broadened') {
    const d = directions(rules)
    analysis.ztunnelMixed = d.narrower && d.broader
  }
  if (sentToZtunnel)
    analysis.ztunnelPolicy = {action: action as 'ALLOW' | 'DENY', rules: keptRules.map((r) => r.ztunnelRule!)}
  analysis.consequence = consequenceOf(analysis)
  return analysis
}

// --- classification ------------------------------------------------------------------------------

function ruleReason(a: AuthorizationPolicyAnalysis, r: AuthzRuleAnalysis): string | undefined {
  switch (r.outcome) {
    case 'dropped':
      return reason(r.path, 'ALLOW rule with L7 attributes: ztunnel drops the whole rule (it never matches)')
    case 'never-matches': {
      const lost = [...r.from, ...r.to, ...r.when].filter((m) => m.outcome === 'empty').map((m) => m.path)
      return reason(
        r.path,
        `${a.action} rule can never fire at ztunnel: nothing enforceable is left of ${lost.join(', ')}, and ztunnel skips empty matches` +
          (a.action === 'DENY' ? ' (fail-open)' : ' (the traffic it allowed is denied)'),
      )
    }
    case 'broadened':
      return reason(
        r.path,
        `ztunnel enforces this ${a.action} rule without its L7/ignored constraints: it matches more requests than written${a.action === 'DENY' ? ' (denies more)' : ' (allows more)'}`,
      )
    case 'narrowed':
      return reason(
        r.path,
        `ztunnel drops some alternatives of this ${a.action} rule: it matches fewer requests than written${a.action === 'DENY' ? ' (denies less: fail-open for them)' : ' (allows less)'}`,
      )
    case 'mixed':
      return reason(
        r.path,
        `ztunnel both drops constraints and alternatives of this ${a.action} rule: it matches some requests it should not and misses some it should`,
      )
    case 'as-written':
      return r.matchesEverything
        ? reason(r.path, `empty rule matches every request, at ztunnel as with sidecars`)
        : undefined
    default:
      return undefined
  }
}

/**
 * Why ztunnel never sees a policy: istiod converts only ALLOW and DENY for ztunnel (CUSTOM and AUDIT get
 * ZtunnelAccepted=False), and on >= 1.29 not dry-run ones (istio/istio pilot/pkg/serviceregistry/ambient/authorization.go).
 */
function notSentText(a: AuthorizationPolicyAnalysis): string {
  return a.action === 'CUSTOM' || a.action === 'AUDIT'
    ? `action ${a.action} is never sent to ztunnel`
    : 'dry-run policies are not sent to ztunnel on this Istio version'
}

function fieldReasons(a: AuthorizationPolicyAnalysis): string[] {
  const unsent = a.scope !== 'targetRefs' && !a.sentToZtunnel
  return a.rules.flatMap((r) =>
    r.fields.map((f) => {
      // An L4 attribute is only "enforced by ztunnel" when the policy reaches ztunnel at all.
      if (!unsent || f.layer !== 'L4') return reason(f.path, f.why)
      return reason(
        f.path,
        `${f.why.split(': L4')[0]}: an L4 attribute, but ${notSentText(a)}: not enforced by ztunnel`,
      )
    }),
  )
}

function dryRunReason(a: AuthorizationPolicyAnalysis): string {
  const path = `metadata.annotations[${DRY_RUN_ANNOTATION}]`
  switch (a.dryRunAtZtunnel) {
    case 'enforced':
      return reason(
        path,
        'ztunnel on Istio <= 1.28 does not read the dry-run annotation: the policy is ENFORCED once the pods are ambient',
      )
    case 'not-sent':
      return reason(
        path,
        'Istio >= 1.29 does not send dry-run policies to ztunnel unless istiod runs with AMBIENT_ENABLE_DRY_RUN_AUTHORIZATION_POLICY=true (then ztunnel only logs): no effect at ztunnel',
      )
    default:
      return reason(
        path,
        'Istio version unknown: on <= 1.28 ztunnel ENFORCES dry-run policies; on >= 1.29 they are not sent unless AMBIENT_ENABLE_DRY_RUN_AUTHORIZATION_POLICY=true — pass --istio-version',
      )
  }
}

/** Code of the finding about a mesh-wide L7 DENY that the plan carries into the namespace only (acceptable with --accept-lost). */
export const ROOT_DENY_CODE = 'RootL7DenyOutsideWaypoint'

/**
 * A mesh-wide (root namespace, no selector) L7 DENY: besides the mesh administrator's fix, the plan can keep it for
 * the migrated namespace's traffic through its own waypoint with a copy there targeting the waypoint Gateway
 * (waypoints apply only targetRefs policies: istio/istio pilot/pkg/model/policyattachment.go; DOMAIN §3.0, E14).
 * ALLOWs cannot be split that way (ztunnel makes the root ALLOW deny-all), nor can root selector policies.
 */
export function carriedRootDeny(a: Pick<AuthorizationPolicyAnalysis, 'scope' | 'action' | 'needsWaypoint'>): boolean {
  return a.scope === 'mesh' && a.action === 'DENY' && a.needsWaypoint
}

function verdictFor(
  a: AuthorizationPolicyAnalysis,
  ctx: ClassifyContext,
  local: boolean,
  proxiesOnly: boolean,
  unmatched: boolean,
  atWaypoint: boolean,
): {verdict: Verdict; action: Action} {
  // targetRefs policies attached to a waypoint are already in ambient form; others (an ingress Gateway) are not ours.
  if (a.scope === 'targetRefs')
    return atWaypoint ? {verdict: 'L7', action: 'keep'} : {verdict: 'unaffected', action: 'keep'}
  if (proxiesOnly) return {verdict: 'unaffected', action: 'keep'}
  if (unmatched) return {verdict: 'inert', action: local ? 'no-effect' : 'keep'}
  const root = a.scope === 'mesh' || a.scope === 'root-selector'
  if (a.dryRun && a.dryRunAtZtunnel === 'enforced') return {verdict: 'blocker', action: 'blocker'}
  if (a.dryRun && a.dryRunAtZtunnel === 'unknown-version') return {verdict: 'blocker', action: 'manual'}
  if (a.dryRun && a.dryRunAtZtunnel === 'not-sent') return {verdict: 'inert', action: local ? 'no-effect' : 'keep'}
  if (a.needsWaypoint)
    return root && !carriedRootDeny(a) ? {verdict: 'blocker', action: 'blocker'} : {verdict: 'L7', action: 'retarget'}
  if (a.ztunnelEffect !== 'as-written') return {verdict: 'L4', action: 'keep-verify'}
  if (ctx.waypointPlanned && (a.identityKeyed || a.peerIpKeyed)) return {verdict: 'L4', action: 'keep-verify'}
  return {verdict: 'L4', action: 'keep'}
}

export function classifyAuthorizationPolicy(obj: KubeObject, ctx: ClassifyContext): Classified {
  const a = analyzeAuthorizationPolicy(obj, ctx)
  const ref = a.ref
  const local = ref.namespace === ctx.namespace
  const selected = a.scope === 'workload' || a.scope === 'root-selector' ? matchingWorkloads(ctx, a.selector) : []
  const proxiesOnly = selected.length > 0 && selected.every(isProxyWorkload)
  // Issue 21 §5: a selector that matches WorkloadEntries/WorkloadGroups (VMs) matches workloads too.
  const entries = a.scope === 'workload' && selected.length === 0 ? matchingEntries(ctx, a.selector) : []
  if (entries.length > 0)
    return entriesOnlySelector(
      'spec.selector',
      ref,
      local,
      [...actionReasons(a)],
      {scope: 'workload', services: servicesSelectingEntries(ctx, entries)},
      entries,
    )
  const unmatched = a.scope === 'workload' && selected.length === 0
  const targets = a.scope === 'targetRefs' ? analyzeTargetRefs(obj, ctx) : undefined
  const affected = !proxiesOnly && !unmatched && a.scope !== 'targetRefs'
  const {verdict, action} = verdictFor(a, ctx, local, proxiesOnly, unmatched, targets?.waypoint === true)
  const reasons = [
    ...attachmentReasons(a, ctx, targets, unmatched, proxiesOnly),
    ...actionReasons(a),
    ...ruleReasons(a, affected),
    ...consequenceReasons(a, ctx, verdict, action, affected),
  ]
  const findings = findingsFor(a, ctx, verdict, affected)

  const scope = a.scope === 'root-selector' ? 'workload' : a.scope
  return {item: item(ref, verdict, action, reasons, {scope, ztunnel: a.ztunnelEffect, services: a.services}), findings}
}

/** Where the policy attaches: targetRefs, a workload selector, the namespace or the whole mesh. */
function attachmentReasons(
  a: AuthorizationPolicyAnalysis,
  ctx: ClassifyContext,
  targets: ReturnType<typeof analyzeTargetRefs> | undefined,
  unmatched: boolean,
  proxiesOnly: boolean,
): string[] {
  const ref = a.ref
  const reasons: string[] = []
  if (targets) {
    reasons.push(...targets.reasons)
  } else if (a.scope === 'workload') {
    reasons.push(
      reason(
        'spec.selector',
        unmatched
          ? 'matches no workload of the namespace: no effect now (re-run plan if such pods are added)'
          : proxiesOnly
            ? `matches only gateway/waypoint pods (${a.workloads.join(', ')}), which keep their own proxy: unaffected by the migration`
            : a.sentToZtunnel
              ? `workload scope: enforced by the destination ztunnel for ${a.workloads.join(', ')}; waypoints ignore selector policies`
              : `workload scope (${a.workloads.join(', ')}), but ${notSentText(a)}; waypoints ignore selector policies`,
      ),
    )
  } else {
    // Who would enforce it: ztunnel only when istiod sends it there (ALLOW/DENY, DOMAIN §3.1).
    const byZtunnel = a.sentToZtunnel ? 'enforced by ztunnel' : `not enforced by ztunnel (${notSentText(a)})`
    if (a.scope === 'root-selector') {
      reasons.push(
        reason(
          'spec.selector',
          `root-namespace selector: matches pods of every namespace, here ${a.workloads.join(', ')}; ${byZtunnel}, never by waypoints`,
        ),
      )
    } else if (a.scope === 'namespace') {
      reasons.push(
        reason(
          'spec',
          `no selector: namespace scope, ${byZtunnel}${a.sentToZtunnel ? ` for every captured workload of ${ref.namespace} (including pod-IP traffic)` : ''}; never applied by waypoints`,
        ),
      )
    } else {
      reasons.push(
        reason(
          'spec',
          `no selector in the root namespace ${ctx.rootNamespace}: GLOBAL scope, ${byZtunnel}${a.sentToZtunnel ? ' for every captured pod of the mesh' : ''}; never applied by waypoints`,
        ),
      )
    }
  }
  return reasons
}

/** The action (CUSTOM, AUDIT), rules-less ALLOW/DENY, dry-run and the fields ztunnel reads differently. */
function actionReasons(a: AuthorizationPolicyAnalysis): string[] {
  const reasons: string[] = []
  if (a.action === 'CUSTOM') {
    reasons.push(
      reason(
        'spec.action',
        a.scope === 'targetRefs'
          ? `CUSTOM (ext_authz${a.provider ? ` provider ${a.provider}` : ''}) at the waypoint; the provider must be reachable from the waypoint`
          : `CUSTOM is not sent to ztunnel (ZtunnelAccepted=False): ext_authz${a.provider ? ` provider ${a.provider}` : ''} silently stops being consulted — a security regression, not a fail-closed`,
      ),
    )
  } else if (a.action === 'AUDIT') {
    reasons.push(
      reason(
        'spec.action',
        a.scope === 'targetRefs'
          ? 'AUDIT at the waypoint'
          : 'AUDIT is not sent to ztunnel (ZtunnelAccepted=False): audit logging of these requests silently stops',
      ),
    )
  }
  if (!a.hasRules && (a.action === 'ALLOW' || a.action === 'DENY') && a.scope !== 'targetRefs') {
    reasons.push(
      reason(
        'spec.rules',
        a.action === 'ALLOW'
          ? 'ALLOW without rules: deny-all, enforced the same way by ztunnel as by sidecars'
          : 'DENY without rules never matches (same as with sidecars)',
      ),
    )
  }
  if (a.dryRunAtZtunnel) reasons.push(dryRunReason(a))
  else if (a.dryRun && a.scope === 'targetRefs')
    reasons.push(
      reason(
        `metadata.annotations[${DRY_RUN_ANNOTATION}]`,
        'waypoints honour dry-run like sidecars: evaluated and logged, not enforced',
      ),
    )

  reasons.push(...fieldReasons(a))
  return reasons
}

/** Per-rule reasons of a policy the migration moves to ztunnel. */
function ruleReasons(a: AuthorizationPolicyAnalysis, affected: boolean): string[] {
  const reasons: string[] = []
  if (affected && a.sentToZtunnel) {
    for (const r of a.rules) {
      const why = ruleReason(a, r)
      if (why) reasons.push(why)
    }
  }
  return reasons
}

/** What enforcement at ztunnel does to the policy, and what the plan does about it. */
function consequenceReasons(
  a: AuthorizationPolicyAnalysis,
  ctx: ClassifyContext,
  verdict: Verdict,
  action: Action,
  affected: boolean,
): string[] {
  const reasons: string[] = []
  if (affected && a.sentToZtunnel && (a.ztunnelEffect !== 'as-written' || a.needsWaypoint)) {
    const tag =
      a.ztunnelEffect === 'deny-all'
        ? 'fail-closed'
        : a.ztunnelEffect === 'no-op'
          ? 'fail-open'
          : a.ztunnelMixed
            ? 'narrowed and broadened'
            : a.ztunnelEffect
    reasons.push(reason('spec.rules', `${a.consequence} [${tag}]`))
  } else if (affected && !a.sentToZtunnel && a.scope !== 'targetRefs') {
    reasons.push(reason('spec', a.consequence))
  }
  if (affected && a.needsWaypoint && (verdict === 'L7' || verdict === 'blocker')) {
    if (a.scope === 'mesh' || a.scope === 'root-selector') {
      reasons.push(
        reason(
          'metadata.namespace',
          `in the root namespace: the degradation applies to every namespace whose pods become ambient (E14); retarget it with targetRefs GatewayClass ${'istio-waypoint'} in ${ctx.rootNamespace} and an L4-only selector policy`,
        ),
      )
      if (carriedRootDeny(a)) reasons.push(reason('spec', `for ${ctx.namespace}: ${rootDenyCarry(a, ctx)}`))
    } else {
      reasons.push(
        reason(
          'spec',
          a.scope === 'namespace'
            ? 'must be carried to the waypoint with targetRefs (the Gateway) before the pods restart, and the original deleted right after'
            : `must be carried to the waypoint with targetRefs (${a.services.length > 0 ? `Service ${a.services.join(', ')}` : 'no Service selects these pods'}) before the pods restart, and the original deleted right after`,
        ),
      )
    }
  }
  if (verdict === 'L4' && action === 'keep-verify' && ctx.waypointPlanned && (a.identityKeyed || a.peerIpKeyed)) {
    reasons.push(
      reason(
        a.identityFields[0]!.path,
        `keyed on the caller's ${a.identityKeyed ? 'identity' : 'IP'}: once a waypoint fronts ${a.services.length > 0 ? a.services.join(', ') : 'the destination'}, the destination ztunnel sees the waypoint's ${a.identityKeyed ? 'identity' : 'IP'} for proxied traffic (waypoints do not impersonate clients, E21)`,
      ),
    )
  }
  return reasons
}

/** What the plan does with a mesh-wide L7 DENY inside the namespace, and exactly what stays unenforced (issue 10 point 8). */
function rootDenyCarry(a: AuthorizationPolicyAnalysis, ctx: ClassifyContext): string {
  const atZtunnel =
    a.ztunnelEffect === 'no-op'
      ? 'nothing of it (its L7-only rules never fire at ztunnel)'
      : 'only its L4 part at ztunnel (denying more than written)'
  return (
    `deploys the namespace's waypoint and copies the DENY into ${ctx.namespace} with targetRefs Gateway (the waypoint), so requests through the waypoint (Service-addressed calls from ambient clients) stay denied; ` +
    `still unenforced for ${ctx.namespace}'s pods: requests that bypass the waypoint — callers that still have sidecars, traffic addressed to pod IPs, ingress gateways without istio.io/ingress-use-waypoint — get ${atZtunnel}`
  )
}

/** What the AuthorizationPolicy finding analyzers read. */
interface AuthzFindingFacts {
  a: AuthorizationPolicyAnalysis
  ctx: ClassifyContext
  verdict: Verdict
  ref: ObjectRef
  name: string
  /** Mesh-wide or a root-namespace selector policy. */
  root: boolean
}

function findingsFor(
  a: AuthorizationPolicyAnalysis,
  ctx: ClassifyContext,
  verdict: Verdict,
  affected: boolean,
): Finding[] {
  // Every finding here is about a policy the migration changes the enforcement of.
  if (!affected) return []
  const facts: AuthzFindingFacts = {
    a,
    ctx,
    verdict,
    ref: a.ref,
    name: formatRef(a.ref),
    root: a.scope === 'mesh' || a.scope === 'root-selector',
  }
  return AUTHZ_FINDING_ANALYZERS.flatMap((analyze) => analyze(facts))
}

/** E14: a mesh-wide or root-namespace policy ztunnel cannot enforce. */
function rootPolicyBeyondZtunnel({a, ctx, ref, name, root}: AuthzFindingFacts): Finding[] {
  const out: Finding[] = []
  if (carriedRootDeny(a) && !a.dryRun) {
    out.push(
      finding(
        ROOT_DENY_CODE,
        ref,
        {
          name,
          consequence: a.consequence,
          namespace: ctx.namespace,
          carry: rootDenyCarry(a, ctx),
          rootNamespace: ctx.rootNamespace,
          rootFinding: `retarget-root/${ref.kind}/${ref.namespace}/${ref.name}`,
        },
        {id: classifiedId('E14', ref), severity: 'error'},
      ),
    )
  } else if (root && a.needsWaypoint && !(a.dryRun && a.dryRunAtZtunnel === 'not-sent')) {
    out.push(
      finding(
        'RootNamespaceL7Policy',
        ref,
        {
          name,
          detail: a.scope === 'mesh' ? 'mesh-wide' : 'root-namespace selector',
          consequence: a.consequence,
          namespace: ctx.namespace,
          rootNamespace: ctx.rootNamespace,
        },
        {id: classifiedId('E14', ref), severity: 'blocker'},
      ),
    )
  }
  return out
}

/** E16: what ztunnel does with a dry-run policy. */
function dryRunAtZtunnel({a, ctx, ref, name}: AuthzFindingFacts): Finding[] {
  const out: Finding[] = []
  if (a.dryRunAtZtunnel) {
    const sev = a.dryRunAtZtunnel === 'not-sent' ? 'warning' : 'blocker'
    out.push(
      finding(
        'DryRunPolicyAtZtunnel',
        ref,
        {
          variant: a.dryRunAtZtunnel,
          name,
          istioVersion: ctx.istioVersion ?? 'unknown',
          consequence: a.consequence,
        },
        {id: classifiedId('E16', ref, 'dry-run'), severity: sev},
      ),
    )
  }
  return out
}

/** E16: CUSTOM and AUDIT policies are not sent to ztunnel. */
function notSentToZtunnel({a, ref, name, root}: AuthzFindingFacts): Finding[] {
  const out: Finding[] = []
  if (!a.sentToZtunnel && a.action === 'CUSTOM') {
    out.push(
      finding(
        'CustomAuthorizationStops',
        ref,
        {name, detail: a.provider ? ` provider ${a.provider}` : ''},
        {id: classifiedId('E16', ref, 'custom'), severity: root ? 'blocker' : 'error'},
      ),
    )
  }
  if (!a.sentToZtunnel && a.action === 'AUDIT') {
    out.push(finding('AuditPolicyStops', ref, {name}, {id: classifiedId('E16', ref, 'audit'), severity: 'warning'}))
  }
  return out
}

/** E21: identity- or IP-keyed policies see the waypoint, not the caller. */
function identityBehindWaypoint({a, ctx, verdict, ref, name}: AuthzFindingFacts): Finding[] {
  const out: Finding[] = []
  if (verdict === 'L4' && ctx.waypointPlanned && (a.identityKeyed || a.peerIpKeyed)) {
    out.push(
      finding(
        'IdentityPolicyBehindWaypoint',
        ref,
        {
          variant: a.action === 'ALLOW' ? 'allow' : 'deny',
          name,
          fields: a.identityFields.map((f) => f.field),
          services: a.services.length > 0 ? a.services : 'these workloads',
        },
        {id: classifiedId('E21', ref)},
      ),
    )
  }
  return out
}

/** E22: when: source.serviceAccount is not supported by ztunnel. */
function serviceAccountCondition({a, ctx, ref, name}: AuthzFindingFacts): Finding[] {
  const out: Finding[] = []
  const saConditions = a.rules.flatMap((r) => r.fields).filter((f) => f.field === 'when:source.serviceAccount')
  if (saConditions.length > 0) {
    const minor = istioMinor(ctx)
    out.push(
      finding(
        'ServiceAccountConditionNeedsWaypoint',
        ref,
        minor !== undefined && minor < 25
          ? {variant: 'beforeIstio125', name, paths: saConditions.map((f) => f.path), minor}
          : {variant: 'rewritable', name, paths: saConditions.map((f) => f.path)},
        {id: classifiedId('E22', ref, 'source-service-account')},
      ),
    )
  }
  return out
}

/** E22: ztunnel ignores trustDomains / notTrustDomains. */
function trustDomainsIgnored({a, ref, name}: AuthzFindingFacts): Finding[] {
  const out: Finding[] = []
  const trustDomainFields = a.ignoredFields.filter((f) => f.field === 'trustDomains' || f.field === 'notTrustDomains')
  if (trustDomainFields.length > 0) {
    out.push(
      finding(
        'TrustDomainsIgnoredAtZtunnel',
        ref,
        {
          name,
          trustDomainFields: uniqSorted(trustDomainFields.map((f) => f.field)).join('/'),
          trustDomainFields2: trustDomainFields.map((f) => f.path),
          consequence: a.consequence,
        },
        {id: classifiedId('E22', ref, 'trust-domains'), severity: 'warning'},
      ),
    )
  }
  return out
}

/** The AuthorizationPolicy finding analyzers, in the order their findings appear in the plan. */
const AUTHZ_FINDING_ANALYZERS: Array<(facts: AuthzFindingFacts) => Finding[]> = [
  rootPolicyBeyondZtunnel,
  dryRunAtZtunnel,
  notSentToZtunnel,
  identityBehindWaypoint,
  serviceAccountCondition,
  trustDomainsIgnored,
]

/** AuthorizationPolicies of the root namespace apply to this namespace when they are mesh-wide or select its pods; GatewayClass-attached ones apply at its waypoints. */
function relevantElsewhere(obj: KubeObject, ctx: ClassifyContext): boolean {
  if (namespaceOf(obj, ctx) !== ctx.rootNamespace) return false
  const spec: AuthorizationPolicySpec = isRecord(obj.spec) ? obj.spec : {}
  const refs = targetRefsOf(spec)
  if (refs.length > 0) return refs.some(({ref}) => ref.kind === 'GatewayClass' && ref.name === 'istio-waypoint')
  const selector = spec.selector?.matchLabels
  if (!hasLabels(selector)) return true
  return matchingWorkloads(ctx, selector).length > 0
}

export const authorizationPolicyClassifier: KindClassifier = {
  kinds: [`${SECURITY}/AuthorizationPolicy`],
  relevantElsewhere,
  classify: classifyAuthorizationPolicy,
}
