// Rule order: a VirtualService evaluates `http[]` top to bottom and the first match wins; an
// HTTPRoute orders its matches by precedence instead (Gateway API HTTPRouteRule: Exact path, then
// the longest PathPrefix, then method, then the most header matches, then the most query
// parameter matches; list order only breaks ties). RegularExpression precedence is
// implementation-specific: Istio — the implementation that serves these routes — splits every rule
// into one route per match and stable-sorts them by (Exact > PathPrefix > RegularExpression, path
// length, method, header count, query count), with PathPrefix values compared after dropping a
// trailing "/" (pilot/pkg/config/kube/gateway/conversion.go sortHTTPRoutes, createURIMatch). So a
// RegularExpression path match ranks below every PathPrefix match, even `/`.
//
// A conversion keeps the VirtualService's meaning only if no request would be served by a
// different rule: for every pair of matches that Istio's order evaluates one way and the
// HTTPRoute's precedence the other way, the two must be unable to match the same request, or lead
// to the same action.
import type {HTTPPathMatch, HTTPRouteMatch, HTTPValueMatch} from './gateway-types.js'
import {regexFullMatch} from './values.js'

export interface RankedMatch {
  /** Index of the VirtualService `http[]` entry the match comes from. */
  origin: number
  /** JSON path of the VirtualService match (or route, for a catch-all). */
  path: string
  match: HTTPRouteMatch
  /** Equal keys = same action (backends, filters, timeouts). */
  actionKey: string
}

export interface PrecedenceConflict {
  /** Evaluated first by the VirtualService. */
  first: RankedMatch
  /** Evaluated first by the HTTPRoute. */
  overtaking: RankedMatch
}

/** The path a match has once defaulted by the API server (HTTPRouteMatch.path defaults to PathPrefix "/"). */
export function effectivePath(match: HTTPRouteMatch): HTTPPathMatch {
  return match.path ?? {type: 'PathPrefix', value: '/'}
}

/** PathPrefix values are compared without a trailing "/" ("/foo/" and "/foo" are the same prefix). */
function trimmedPrefix(value: string): string {
  return value !== '/' && value.endsWith('/') ? value.slice(0, -1) : value
}

const RANK: Record<HTTPPathMatch['type'], number> = {Exact: 3, PathPrefix: 2, RegularExpression: 1}

function pathLength(path: HTTPPathMatch): number {
  return path.type === 'PathPrefix' ? trimmedPrefix(path.value).length : path.value.length
}

/** Negative when `a` is evaluated before `b` by Istio's HTTPRoute ordering. */
export function comparePrecedence(a: HTTPRouteMatch, b: HTTPRouteMatch): number {
  const pa = effectivePath(a)
  const pb = effectivePath(b)
  return (
    RANK[pb.type] - RANK[pa.type] ||
    pathLength(pb) - pathLength(pa) ||
    (b.method ? 1 : 0) - (a.method ? 1 : 0) ||
    (b.headers?.length ?? 0) - (a.headers?.length ?? 0) ||
    (b.queryParams?.length ?? 0) - (a.queryParams?.length ?? 0)
  )
}

/** Whether a PathPrefix (segment-wise, as Gateway API defines it) covers a concrete path. */
export function prefixCovers(prefix: string, path: string): boolean {
  const p = trimmedPrefix(prefix)
  if (p === '/') return true
  return path === p || path.startsWith(`${p}/`)
}

function pathsMayOverlap(a: HTTPPathMatch, b: HTTPPathMatch): boolean {
  if (a.type === 'RegularExpression' && b.type === 'Exact') return regexFullMatch(a.value, b.value) ?? true
  if (b.type === 'RegularExpression' && a.type === 'Exact') return regexFullMatch(b.value, a.value) ?? true
  // A regular expression against a prefix or another expression: not decided here.
  if (a.type === 'RegularExpression' || b.type === 'RegularExpression') return true
  if (a.type === 'Exact' && b.type === 'Exact') return a.value === b.value
  if (a.type === 'Exact') return prefixCovers(b.value, a.value)
  if (b.type === 'Exact') return prefixCovers(a.value, b.value)
  return prefixCovers(a.value, trimmedPrefix(b.value)) || prefixCovers(b.value, trimmedPrefix(a.value))
}

function valueMatchesMayOverlap(
  a: HTTPValueMatch[] | undefined,
  b: HTTPValueMatch[] | undefined,
  caseInsensitiveNames: boolean,
): boolean {
  const key = (name: string): string => (caseInsensitiveNames ? name.toLowerCase() : name)
  for (const x of a ?? []) {
    for (const y of b ?? []) {
      if (key(x.name) !== key(y.name)) continue
      if (x.type === 'Exact' && y.type === 'Exact' && x.value !== y.value) return false
      if (x.type === 'Exact' && y.type === 'RegularExpression' && regexFullMatch(y.value, x.value) === false)
        return false
      if (y.type === 'Exact' && x.type === 'RegularExpression' && regexFullMatch(x.value, y.value) === false)
        return false
    }
  }
  return true
}

/** Whether some request could satisfy both matches (conservative: true unless provably disjoint). */
export function mayOverlap(a: HTTPRouteMatch, b: HTTPRouteMatch): boolean {
  if (a.method && b.method && a.method !== b.method) return false
  return (
    pathsMayOverlap(effectivePath(a), effectivePath(b)) &&
    valueMatchesMayOverlap(a.headers, b.headers, true) &&
    valueMatchesMayOverlap(a.queryParams, b.queryParams, false)
  )
}

/**
 * Pairs of matches whose order the HTTPRoute's precedence reverses while they may match the same
 * request and lead to different actions. `matches` are in the VirtualService's evaluation order.
 */
export function precedenceConflicts(matches: RankedMatch[]): PrecedenceConflict[] {
  const routeOrder = matches
    .map((m, i) => ({m, i}))
    .sort((x, y) => comparePrecedence(x.m.match, y.m.match) || x.i - y.i)
  const position = new Map(routeOrder.map((x, pos) => [x.i, pos]))
  const conflicts: PrecedenceConflict[] = []
  for (let i = 0; i < matches.length; i++) {
    for (let j = i + 1; j < matches.length; j++) {
      const first = matches[i]!
      const later = matches[j]!
      if (position.get(j)! > position.get(i)!) continue
      if (first.origin === later.origin || first.actionKey === later.actionKey) continue
      if (!mayOverlap(first.match, later.match)) continue
      conflicts.push({first, overtaking: later})
    }
  }
  return conflicts
}
