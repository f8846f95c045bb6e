// Fault injection and the request log.
//
// A fault rule matches requests (method, path regex, verb, group/resource/kind, namespace,
// name, subresource, user), skips the first `after` matches, fires `times` times (default:
// forever) and then applies its effect: latency, a status response with the body the real
// server would send for that code, or a dropped connection before processing or after the
// write has been applied (the client sees a reset; the object changed anyway).

export type Verb =
  'get' | 'list' | 'watch' | 'create' | 'update' | 'patch' | 'delete' | 'deletecollection' | 'discovery' | 'other'

export interface RequestDescription {
  method: string
  path: string
  verb: Verb
  group?: string
  version?: string
  resource?: string
  subresource?: string
  kind?: string
  namespace?: string
  name?: string
  user: string
}

export interface FaultMatch {
  method?: string | string[]
  /** Matched against the path (without query). A string is a substring match. */
  path?: RegExp | string
  verb?: Verb | Verb[]
  group?: string
  resource?: string
  kind?: string
  subresource?: string
  namespace?: string
  name?: string
  user?: string
}

export interface FaultEffect {
  /** Delay before the request is processed (and before any other effect). */
  latencyMs?: number
  /** Respond with this status instead of processing the request. */
  status?: number
  message?: string
  retryAfterSeconds?: number
  /**
   * 'before': reset the connection without processing.
   * 'after-write': process the request (writes are applied and persisted), then reset the
   * connection instead of sending the response.
   */
  drop?: 'before' | 'after-write'
}

export interface FaultRule extends FaultEffect {
  match?: FaultMatch
  /** How many matching requests to let through untouched first. */
  after?: number
  /** How many times the fault fires; unlimited when absent. */
  times?: number
  /** Free-form label, copied into the request log. */
  name?: string
}

export interface ActiveFault {
  readonly rule: FaultRule
  /** Requests that matched (including the ones let through by `after`). */
  readonly matched: number
  /** Times the effect was applied. */
  readonly fired: number
  remove(): void
}

const asList = <T>(v: T | T[] | undefined): T[] | undefined =>
  v === undefined ? undefined : Array.isArray(v) ? v : [v]

function matches(m: FaultMatch | undefined, r: RequestDescription): boolean {
  if (!m) return true
  const methods = asList(m.method)
  if (methods && !methods.map((x) => x.toUpperCase()).includes(r.method)) return false
  if (m.path !== undefined) {
    if (typeof m.path === 'string' ? !r.path.includes(m.path) : !m.path.test(r.path)) return false
  }
  const verbs = asList(m.verb)
  if (verbs && !verbs.includes(r.verb)) return false
  if (m.group !== undefined && m.group !== r.group) return false
  if (m.resource !== undefined && m.resource !== r.resource) return false
  if (m.kind !== undefined && m.kind !== r.kind) return false
  if (m.subresource !== undefined && m.subresource !== (r.subresource ?? '')) return false
  if (m.namespace !== undefined && m.namespace !== r.namespace) return false
  if (m.name !== undefined && m.name !== r.name) return false
  if (m.user !== undefined && m.user !== r.user) return false
  return true
}

class Fault implements ActiveFault {
  matched = 0
  fired = 0
  constructor(
    readonly rule: FaultRule,
    private readonly owner: Faults,
  ) {}
  remove(): void {
    this.owner.remove(this)
  }
}

export class Faults {
  private rules: Fault[] = []

  /** Adds a rule; rules are tried in the order added and the first that fires wins. */
  add(rule: FaultRule): ActiveFault {
    const f = new Fault(rule, this)
    this.rules.push(f)
    return f
  }

  remove(f: ActiveFault): void {
    this.rules = this.rules.filter((x) => x !== f)
  }

  clear(): void {
    this.rules = []
  }

  get active(): ActiveFault[] {
    return [...this.rules]
  }

  /** The effects that apply to this request (counting it against the rules). */
  pick(r: RequestDescription): {effect: FaultEffect; name?: string} | undefined {
    for (const f of this.rules) {
      if (!matches(f.rule.match, r)) continue
      f.matched++
      if (f.matched <= (f.rule.after ?? 0)) continue
      if (f.rule.times !== undefined && f.fired >= f.rule.times) continue
      f.fired++
      const {match: _m, after: _a, times: _t, name, ...effect} = f.rule
      return {effect, ...(name !== undefined ? {name} : {})}
    }
    return undefined
  }
}

export interface RequestLogEntry extends RequestDescription {
  id: number
  /** Decoded query parameters (last value wins for repeated ones). */
  query: Record<string, string>
  contentType?: string
  userAgent?: string
  /** True for ?watch=true requests. */
  watch: boolean
  dryRun: boolean
  /** HTTP status sent; undefined when the connection was dropped before a response. */
  status?: number
  /** The Status reason of an error response. */
  reason?: string
  startedAt: number
  finishedAt?: number
  dropped: boolean
  /** Name of the fault rule that fired, if any (or "fault" when unnamed). */
  fault?: string
}

export interface RequestFilter {
  verb?: Verb | Verb[]
  method?: string
  group?: string
  resource?: string
  kind?: string
  namespace?: string
  name?: string
  subresource?: string
  status?: number
  user?: string
}

export function filterRequests(log: readonly RequestLogEntry[], f: RequestFilter = {}): RequestLogEntry[] {
  const verbs = asList(f.verb)
  return log.filter(
    (e) =>
      (!verbs || verbs.includes(e.verb)) &&
      (f.method === undefined || e.method === f.method.toUpperCase()) &&
      (f.group === undefined || e.group === f.group) &&
      (f.resource === undefined || e.resource === f.resource) &&
      (f.kind === undefined || e.kind === f.kind) &&
      (f.namespace === undefined || e.namespace === f.namespace) &&
      (f.name === undefined || e.name === f.name) &&
      (f.subresource === undefined || (e.subresource ?? '') === f.subresource) &&
      (f.status === undefined || e.status === f.status) &&
      (f.user === undefined || e.user === f.user),
  )
}
