// Rule-level transformations of AuthorizationPolicies for the migration (DOMAIN §3.1, §7 E15/E21/E22):
// the L4 projection of an ALLOW, the part of a DENY ztunnel enforces without denying more, the E22 rewrite of
// `when: source.serviceAccount`, and whether a rule can match traffic coming from the waypoint.
import type {AuthorizationPolicyAnalysis, AuthzField, AuthzMatchAnalysis} from '../classify/authz.js'
import {stableJson} from '../canonical.js'
import type {
  AuthorizationCondition,
  AuthorizationOperation,
  AuthorizationRule,
  AuthorizationSource,
} from '../istio-types.js'
import {cloneJson} from '../json.js'

// --- L4 projection of an ALLOW -------------------------------------------------------------------

export interface AllowProjection {
  /** The projected rules, de-duplicated; `[{}]` when some rule lost every constraint. */
  rules: AuthorizationRule[]
  /** Some rule projects to `{}`: at ztunnel the policy then allows every request to its workloads. */
  matchAll: boolean
  /** Paths of the constraints the projection drops (L7 fields, fields ztunnel ignores, invalid ports). */
  dropped: string[]
}

function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.map((v) => String(v)) : []
}

/** The fields of one Match ztunnel enforces, with the values it keeps; undefined when none is left. */
function enforcedFields(
  m: AuthzMatchAnalysis,
  written: Record<string, unknown>,
  dropped: string[],
): Record<string, string[]> | undefined {
  const out: Record<string, string[]> = {}
  for (const f of m.fields) {
    if (f.layer !== 'L4' || !f.enforced) {
      dropped.push(f.path)
      continue
    }
    const values = strings(written[f.field]).filter((v) => !(f.droppedValues ?? []).includes(v))
    if ((f.droppedValues ?? []).length > 0) dropped.push(`${f.path} (${f.droppedValues!.join(', ')})`)
    if (values.length > 0) out[f.field] = values
  }
  return Object.keys(out).length > 0 ? out : undefined
}

/**
 * The smallest rule set ztunnel can enforce that allows at least everything `rules` allow (DOMAIN §3.1,
 * E15): every attribute ztunnel cannot see is dropped, which can only widen a rule. Within a `from` or `to`
 * clause the entries are alternatives, so one entry that loses every constraint matches everything and
 * takes the whole clause with it; a `when` condition on a non-L4 key is dropped. A rule reduced to `{}`
 * matches every request — and since ALLOW policies are OR-ed, the projection is then `[{}]`.
 * (ztunnel itself treats an entry without constraints the other way round, as never matching; the
 * projection never writes such an entry.)
 */
export function projectAllowRules(a: AuthorizationPolicyAnalysis, written: AuthorizationRule[]): AllowProjection {
  const dropped: string[] = []
  const out: AuthorizationRule[] = []
  let matchAll = false
  for (const r of a.rules) {
    const rule = written[r.index] ?? {}
    const projected: AuthorizationRule = {}
    const from = r.from.map((m, j) =>
      enforcedFields(m, (rule.from?.[j]?.source ?? {}) as Record<string, unknown>, dropped),
    )
    if (from.length > 0 && from.every((s) => s !== undefined))
      projected.from = from.map((s) => ({source: s as AuthorizationSource}))
    const to = r.to.map((m, j) =>
      enforcedFields(m, (rule.to?.[j]?.operation ?? {}) as Record<string, unknown>, dropped),
    )
    if (to.length > 0 && to.every((o) => o !== undefined))
      projected.to = to.map((o) => ({operation: o as AuthorizationOperation}))
    const when: AuthorizationCondition[] = []
    r.when.forEach((m, j) => {
      const cond = rule.when?.[j] ?? {}
      const f = m.fields[0]
      if (!f || f.layer !== 'L4' || !f.enforced) {
        dropped.push(f?.path ?? `${r.path}.when[${j}]`)
        return
      }
      const keep = (vs: unknown) => strings(vs).filter((v) => !(f.droppedValues ?? []).includes(v))
      const c: AuthorizationCondition = {key: String(cond.key)}
      if (keep(cond.values).length > 0) c.values = keep(cond.values)
      if (keep(cond.notValues).length > 0) c.notValues = keep(cond.notValues)
      when.push(c)
    })
    if (when.length > 0) projected.when = when
    if (Object.keys(projected).length === 0) matchAll = true
    out.push(projected)
  }
  if (matchAll) return {rules: [{}], matchAll, dropped: [...new Set(dropped)]}
  const seen = new Set<string>()
  const rules = out.filter((r) => {
    const key = stableJson(r)
    return seen.has(key) ? false : (seen.add(key), true)
  })
  return {rules, matchAll, dropped: [...new Set(dropped)]}
}

/**
 * The rules of a DENY that ztunnel enforces without denying more than written: rules it keeps as written,
 * and rules from which it only drops alternatives (they deny a subset). Rules it would broaden (an L7
 * constraint stripped from an L4 one) are left to the waypoint.
 */
export function denyRulesSafeAtZtunnel(a: AuthorizationPolicyAnalysis): AuthorizationRule[] {
  return a.rules
    .filter((r) => (r.outcome === 'as-written' || r.outcome === 'narrowed') && r.ztunnelRule !== undefined)
    .map((r) => r.ztunnelRule!)
}

// --- E22: when source.serviceAccount → from.source.serviceAccounts -------------------------------

export const SERVICE_ACCOUNT_KEY = 'source.serviceAccount'

// CRD limits (security.istio.io AuthorizationPolicy v1): at most 16 serviceAccounts per source, and
// serviceAccounts cannot be combined with principals or namespaces in one source (CEL rule).
const MAX_SERVICE_ACCOUNTS = 16
const IDENTITY_FIELDS_EXCLUSIVE_WITH_SA = ['principals', 'notPrincipals', 'namespaces', 'notNamespaces'] as const

/** `ns/sa`, with a bare `sa` taken in the policy's namespace (DOMAIN §3.1). */
export function qualifiedServiceAccount(value: string, policyNamespace: string): string {
  return value.includes('/') ? value : `${policyNamespace}/${value}`
}

function intersect(lists: string[][]): string[] {
  return lists.reduce((acc, l) => acc.filter((v) => l.includes(v)))
}

export type ServiceAccountRewrite = {ok: true; rules: AuthorizationRule[]} | {ok: false; why: string}

/**
 * Rewrites `when: source.serviceAccount` conditions (ANDed with their rule) into `from.source.serviceAccounts` /
 * `notServiceAccounts` on every `from` entry (entries are alternatives, so each must carry the constraint).
 * Several conditions in one rule intersect (values) or add up (notValues). A rule whose service-account
 * constraints cannot all hold never matches and is dropped.
 */
export function rewriteServiceAccountConditions(
  rules: AuthorizationRule[],
  policyNamespace: string,
): ServiceAccountRewrite {
  const out: AuthorizationRule[] = []
  for (const [i, rule] of rules.entries()) {
    const conditions = (rule.when ?? []).filter((c) => c?.key === SERVICE_ACCOUNT_KEY)
    if (conditions.length === 0) {
      out.push(cloneJson(rule))
      continue
    }
    if (conditions.some((c) => strings(c.values).length === 0 && strings(c.notValues).length === 0)) {
      return {ok: false, why: `spec.rules[${i}].when: a source.serviceAccount condition without values or notValues`}
    }
    const positive = conditions
      .filter((c) => strings(c.values).length > 0)
      .map((c) => strings(c.values).map((v) => qualifiedServiceAccount(v, policyNamespace)))
    const negative = [
      ...new Set(
        conditions.flatMap((c) => strings(c.notValues).map((v) => qualifiedServiceAccount(v, policyNamespace))),
      ),
    ].sort()
    const entries = rule.from && rule.from.length > 0 ? rule.from : [{source: {}}]
    const from: {source: AuthorizationSource}[] = []
    for (const [j, entry] of entries.entries()) {
      const source: AuthorizationSource = cloneJson(entry?.source ?? {})
      const clash = IDENTITY_FIELDS_EXCLUSIVE_WITH_SA.find((k) => strings(source[k]).length > 0)
      if (clash) {
        return {
          ok: false,
          why: `spec.rules[${i}].from[${j}].source.${clash}: serviceAccounts cannot be combined with principals or namespaces in one source (CRD rule), so the condition cannot move there`,
        }
      }
      const own = strings(source.serviceAccounts).map((v) => qualifiedServiceAccount(v, policyNamespace))
      const lists = [...positive, ...(own.length > 0 ? [own] : [])]
      if (lists.length > 0) {
        const allowed = [...new Set(intersect(lists))].sort()
        if (allowed.length === 0) continue // this alternative can never match
        source.serviceAccounts = allowed
      }
      const not = [
        ...new Set([
          ...strings(source.notServiceAccounts).map((v) => qualifiedServiceAccount(v, policyNamespace)),
          ...negative,
        ]),
      ].sort()
      if (not.length > 0) source.notServiceAccounts = not
      for (const k of ['serviceAccounts', 'notServiceAccounts'] as const) {
        if ((source[k]?.length ?? 0) > MAX_SERVICE_ACCOUNTS)
          return {
            ok: false,
            why: `spec.rules[${i}]: more than ${MAX_SERVICE_ACCOUNTS} service accounts in one source (CRD limit)`,
          }
      }
      from.push({source})
    }
    if (from.length === 0) continue // no alternative can match: the rule never fires
    const rewritten: AuthorizationRule = {...cloneJson(rule), from}
    const when = (rule.when ?? []).filter((c) => c?.key !== SERVICE_ACCOUNT_KEY)
    if (when.length > 0) rewritten.when = cloneJson(when)
    else delete rewritten.when
    out.push(rewritten)
  }
  return {ok: true, rules: out}
}

/** The policy's only attributes ztunnel cannot enforce are `when: source.serviceAccount` conditions. */
export function onlyServiceAccountConditions(a: AuthorizationPolicyAnalysis): boolean {
  return (
    a.l7Fields.length > 0 &&
    a.ignoredFields.length === 0 &&
    a.l7Fields.every((f: AuthzField) => f.field === `when:${SERVICE_ACCOUNT_KEY}`)
  )
}

// --- does a rule match traffic from the waypoint? ------------------------------------------------

/** `yes`: some request from the peer matches; `no`: none; `maybe`: depends on what the plan cannot know (IPs, JWTs). */
export type Tri = 'yes' | 'no' | 'maybe'

export interface PeerIdentity {
  /** SPIFFE principal without `spiffe://`, in the mesh's trust domain (what its certificate says). */
  principal: string
  /**
   * Trust domains sidecars and waypoints read as the mesh's own in a policy's principals: cluster.local and
   * meshConfig.trustDomainAliases (pilot/pkg/security/trustdomain/bundle.go ReplaceTrustDomainAliases).
   */
  trustDomainAliases?: string[]
  namespace: string
  /** `ns/sa`. */
  serviceAccount: string
  trustDomain: string
}

function and(values: Tri[]): Tri {
  if (values.includes('no')) return 'no'
  return values.includes('maybe') ? 'maybe' : 'yes'
}

function or(values: Tri[]): Tri {
  if (values.includes('yes')) return 'yes'
  return values.includes('maybe') ? 'maybe' : 'no'
}

/** Istio string match (principals, namespaces, when values): `*` = present, `x*` prefix, `*x` suffix, else exact. */
export function istioStringMatch(pattern: string, value: string): boolean {
  if (pattern === '*') return value !== ''
  if (pattern.endsWith('*')) return value.startsWith(pattern.slice(0, -1))
  if (pattern.startsWith('*')) return value.endsWith(pattern.slice(1))
  return pattern === value
}

function anyMatch(patterns: string[], value: string): boolean {
  return patterns.some((p) => istioStringMatch(p, value))
}

/**
 * A principal of a policy as sidecars and waypoints read it: written in cluster.local or an alias of the mesh's trust
 * domain, it names the identity in the trust domain itself (bundle.go). Others, and patterns, are kept as written.
 */
function localPrincipal(pattern: string, peer: PeerIdentity): string {
  const slash = pattern.indexOf('/')
  if (slash <= 0) return pattern
  const td = pattern.slice(0, slash)
  return td === 'cluster.local' || (peer.trustDomainAliases ?? []).includes(td)
    ? `${peer.trustDomain}${pattern.slice(slash)}`
    : pattern
}

function sourceMatches(source: AuthorizationSource, peer: PeerIdentity, policyNamespace: string): Tri {
  const parts: Tri[] = []
  const s = source as Record<string, unknown>
  const check = (field: string, value: string, positive: boolean) => {
    const patterns = strings(s[field])
    if (patterns.length === 0) return
    const hit = anyMatch(patterns, value)
    parts.push(positive === hit ? 'yes' : 'no')
  }
  const principals = (field: string, positive: boolean) => {
    const patterns = strings(s[field]).map((p) => localPrincipal(p, peer))
    if (patterns.length > 0) parts.push(positive === anyMatch(patterns, peer.principal) ? 'yes' : 'no')
  }
  principals('principals', true)
  principals('notPrincipals', false)
  check('namespaces', peer.namespace, true)
  check('notNamespaces', peer.namespace, false)
  const accounts = (field: string) => strings(s[field]).map((v) => qualifiedServiceAccount(v, policyNamespace))
  if (accounts('serviceAccounts').length > 0)
    parts.push(accounts('serviceAccounts').includes(peer.serviceAccount) ? 'yes' : 'no')
  if (accounts('notServiceAccounts').length > 0)
    parts.push(accounts('notServiceAccounts').includes(peer.serviceAccount) ? 'no' : 'yes')
  check('trustDomains', peer.trustDomain, true)
  check('notTrustDomains', peer.trustDomain, false)
  // The peer's IP (the waypoint pod's), the client IP it forwards and the JWT it forwards are unknown here.
  for (const f of [
    'ipBlocks',
    'notIpBlocks',
    'remoteIpBlocks',
    'notRemoteIpBlocks',
    'requestPrincipals',
    'notRequestPrincipals',
  ]) {
    if (strings(s[f]).length > 0) parts.push('maybe')
  }
  return and(parts)
}

function conditionMatches(cond: AuthorizationCondition, peer: PeerIdentity, policyNamespace: string): Tri {
  const key = String(cond?.key ?? '')
  const values = strings(cond?.values)
  const notValues = strings(cond?.notValues)
  const against = (value: string, normalize: (v: string) => string = (v) => v): Tri =>
    and([
      ...(values.length > 0
        ? [values.some((p) => istioStringMatch(normalize(p), value)) ? ('yes' as const) : ('no' as const)]
        : []),
      ...(notValues.length > 0
        ? [notValues.some((p) => istioStringMatch(normalize(p), value)) ? ('no' as const) : ('yes' as const)]
        : []),
    ])
  switch (key) {
    case 'source.principal':
      return against(peer.principal, (v) => localPrincipal(v, peer))
    case 'source.namespace':
      return against(peer.namespace)
    case SERVICE_ACCOUNT_KEY:
      return against(peer.serviceAccount, (v) => qualifiedServiceAccount(v, policyNamespace))
    case 'source.trustDomain':
      return against(peer.trustDomain)
    case 'source.ip':
    case 'remote.ip':
      return 'maybe'
    default:
      // Destination and request attributes: some request through the waypoint can carry them.
      return key.startsWith('request.auth.') ? 'maybe' : 'yes'
  }
}

/** Whether some request whose direct peer is `peer` matches the rule (destination/request attributes assumed satisfiable). */
export function ruleMatchesPeer(rule: AuthorizationRule, peer: PeerIdentity, policyNamespace: string): Tri {
  const parts: Tri[] = []
  if (Array.isArray(rule?.from) && rule.from.length > 0)
    parts.push(or(rule.from.map((e) => sourceMatches(e?.source ?? {}, peer, policyNamespace))))
  for (const c of Array.isArray(rule?.when) ? rule.when : []) parts.push(conditionMatches(c, peer, policyNamespace))
  return and(parts)
}

const PEER_SOURCE_FIELDS = [
  'principals',
  'notPrincipals',
  'namespaces',
  'notNamespaces',
  'serviceAccounts',
  'notServiceAccounts',
  'ipBlocks',
  'notIpBlocks',
  'trustDomains',
  'notTrustDomains',
]
const PEER_WHEN_KEYS = ['source.principal', 'source.namespace', 'source.ip', SERVICE_ACCOUNT_KEY, 'source.trustDomain']

/**
 * Whether what the rule matches depends on who the direct peer is (identity or IP). Only such rules change
 * meaning when the waypoint becomes the peer: a rule without them matches the request the waypoint forwards
 * exactly as it matched the caller's.
 */
export function ruleDependsOnPeer(rule: AuthorizationRule): boolean {
  const fromDepends = (rule?.from ?? []).some((e) =>
    PEER_SOURCE_FIELDS.some((f) => strings((e?.source as Record<string, unknown> | undefined)?.[f]).length > 0),
  )
  return fromDepends || (rule?.when ?? []).some((c) => PEER_WHEN_KEYS.includes(String(c?.key)))
}

/** Whether some peer-dependent rule matches requests whose peer is `peer`. */
export function rulesMatchPeer(rules: AuthorizationRule[], peer: PeerIdentity, policyNamespace: string): Tri {
  return or(rules.filter(ruleDependsOnPeer).map((r) => ruleMatchesPeer(r, peer, policyNamespace)))
}

/**
 * The rules with the peer excluded from every peer-dependent rule that can match it: a `notPrincipals` (or, next
 * to serviceAccounts, `notServiceAccounts`) entry on each `from` alternative, or a new `from` when the rule has
 * none. For a DENY that would otherwise fire for the requests the waypoint forwards.
 */
export function exemptPeer(
  rules: AuthorizationRule[],
  peer: PeerIdentity,
  policyNamespace: string,
): AuthorizationRule[] {
  return rules.map((rule) => {
    const out = cloneJson(rule)
    if (!ruleDependsOnPeer(rule) || ruleMatchesPeer(rule, peer, policyNamespace) === 'no') return out
    if (!out.from || out.from.length === 0) {
      out.from = [{source: {notPrincipals: [peer.principal]}}]
      return out
    }
    out.from = out.from.map((entry) => {
      const source: AuthorizationSource = {...(entry?.source ?? {})}
      if (strings(source.serviceAccounts).length > 0 || strings(source.notServiceAccounts).length > 0) {
        source.notServiceAccounts = [...new Set([...strings(source.notServiceAccounts), peer.serviceAccount])]
      } else {
        source.notPrincipals = [...new Set([...strings(source.notPrincipals), peer.principal])]
      }
      return {source}
    })
    return out
  })
}

/** Whether a rule reads the JWT request principal or claims (needs a RequestAuthentication where it is enforced). */
export function usesRequestAuth(a: AuthorizationPolicyAnalysis): string[] {
  return a.l7Fields
    .filter(
      (f) =>
        f.field === 'requestPrincipals' ||
        f.field === 'notRequestPrincipals' ||
        f.field.startsWith('when:request.auth.'),
    )
    .map((f) => f.path)
}

/**
 * E22: the policy's only attribute ztunnel lacks is `when: source.serviceAccount`, and it can be rewritten
 * as `from.source.serviceAccounts` (Istio >= 1.25, or unknown: assumed) — then ztunnel keeps enforcing it
 * and it needs no waypoint.
 */
export function serviceAccountRewritable(
  a: AuthorizationPolicyAnalysis,
  rules: AuthorizationRule[],
  policyNamespace: string,
  istioMinor: number | undefined,
): boolean {
  if (a.action !== 'ALLOW' && a.action !== 'DENY') return false
  if (istioMinor !== undefined && istioMinor < 25) return false
  return onlyServiceAccountConditions(a) && rewriteServiceAccountConditions(rules, policyNamespace).ok
}
