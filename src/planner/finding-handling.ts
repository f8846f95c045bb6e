// Messages say who does what (issue 13 §5): a finding about a policy that the plan itself carries to
// the waypoint (or rewrites for ztunnel) says so in `handledBy`, and its `fix` — written by the
// classifier before any plan existed — is dropped, so the reviewer is not told to do by hand what
// create-policies already does. Whatever still needs a person keeps its fix.
import type {Finding} from './model.js'
import {formatRef, refKey} from './refs.js'
import type {PolicyDecision, PolicyPlacement} from './retarget/types.js'

/**
 * Classifier findings whose fix is exactly what the retarget step does when it creates objects for the
 * policy: E21 (identity/IP-keyed policy behind a waypoint: waypoint copy + companion), E16 (CUSTOM/AUDIT
 * stop at ztunnel: waypoint copy), E22 (serviceAccount conditions: rewrite or waypoint copy).
 */
const RESOLVED_BY_CARRYING = new Set([
  'IdentityPolicyBehindWaypoint',
  'CustomAuthorizationStops',
  'AuditPolicyStops',
  'ServiceAccountConditionNeedsWaypoint',
])

const ROLE_TEXT: Record<Exclude<PolicyPlacement['role'], 'original'>, string> = {
  'waypoint-copy': 'to the waypoint as',
  'ztunnel-companion': 'admits the waypoint at ztunnel with',
  'ztunnel-l4': 'keeps the part ztunnel can enforce as',
}

/** "create-policies carries this to the waypoint as AuthorizationPolicy shop/x-waypoint and …; the original stays at ztunnel." */
export function describeHandling(decision: PolicyDecision): string | undefined {
  if (decision.created.length === 0) return undefined
  const byStep = new Map<string, string[]>()
  for (const c of decision.created) {
    if (c.role === 'original' || !c.createdIn) continue
    const parts = byStep.get(c.createdIn) ?? []
    parts.push(`${ROLE_TEXT[c.role]} ${formatRef(c.ref)}`)
    byStep.set(c.createdIn, parts)
  }
  if (byStep.size === 0) return undefined
  const steps = [...byStep].map(([step, parts]) => `${step} carries this ${parts.join(' and ')}`)
  const original = decision.original.deletedIn
    ? `${decision.original.deletedIn} deletes the original once the pods are ambient`
    : 'the original stays at ztunnel for callers that bypass the waypoint'
  return `${steps.join('; ')}; ${original}.`
}

export function markHandledFindings(findings: Finding[], decisions: PolicyDecision[]): Finding[] {
  const byRef = new Map(decisions.map((d) => [refKey(d.ref), d]))
  return findings.map((f) => {
    if (!f.ref || !RESOLVED_BY_CARRYING.has(f.code)) return f
    const decision = byRef.get(refKey(f.ref))
    const handledBy = decision && decision.disposition !== 'blocked' ? describeHandling(decision) : undefined
    if (!handledBy) return f
    const {fix: _dropped, ...rest} = f
    return {...rest, handledBy}
  })
}

/** For show and the PR comment: what the plan takes care of, and what is left to a person (info findings only when they ask for something). */
export function groupFindings(findings: Finding[]): {handled: Finding[]; needsYou: Finding[]} {
  return {
    handled: findings.filter((f) => f.handledBy),
    needsYou: findings.filter((f) => !f.handledBy && (f.severity !== 'info' || f.fix)),
  }
}
