// HTTPRoute rules for one parent Service, from the analysed `http[]` entries of a VirtualService.
import {renderFinding} from '../findings/finding.js'
import {reason} from '../classify/results.js'
import {stableJson} from '../canonical.js'
import {
  LIMITS,
  type BackendObjectReference,
  type HTTPBackendRef,
  type HTTPPathModifier,
  type HTTPRequestRedirect,
  type HTTPRouteFilter,
  type HTTPRouteMatch,
  type HTTPRouteRule,
  type HTTPURLRewrite,
} from './gateway-types.js'
import type {ServiceInfo} from './hosts.js'
import type {HttpDraft, MatchDraft, Note, TargetDraft} from './http.js'
import {effectivePath, precedenceConflicts, type RankedMatch} from './precedence.js'
import type {VersionServices, VersionServiceUse} from './version-services.js'
import {DNS_SUBDOMAIN, mirrorShare} from './values.js'

export interface BuildContext {
  versions: VersionServices
  reasons: string[]
  notes: Note[]
  uses: VersionServiceUse[]
}

/** One HTTPRoute to emit for a parent Service; `port` undefined = every port of the Service. */
export interface ParentRoute {
  port?: number
  rules: HTTPRouteRule[]
}

/**
 * The backend for a destination when the request arrived on `requestPort`: the destination's port,
 * else the Service's only port, else — as Istio does for a multi-port destination without a port —
 * the port of the request.
 */
function backendRef(t: TargetDraft, requestPort: number, ctx: BuildContext): BackendObjectReference | undefined {
  const ports = t.service.ports.map((p) => p.port)
  const port = t.port ?? (ports.length === 1 ? ports[0] : ports.includes(requestPort) ? requestPort : undefined)
  if (port === undefined) {
    ctx.reasons.push(
      reason(
        `${t.path}.port`,
        `Service ${t.service.name} has several ports and none is ${requestPort}, the port of the request: Gateway API needs a backendRef port, and which one Istio would use is not defined`,
      ),
    )
    return undefined
  }
  if (!t.subset) return {name: t.service.name, port}
  const use = ctx.versions.use(t.service, t.subset.name, t.subset.definition.labels, [port])
  if ('problem' in use) {
    ctx.reasons.push(reason(`${t.path}.subset`, use.problem))
    return undefined
  }
  const clash = ctx.uses.find((u) => u.name === use.name && (u.base.name !== use.base.name || u.subset !== use.subset))
  if (clash) {
    ctx.reasons.push(
      reason(
        `${t.path}.subset`,
        `version Service name ${use.name} is also needed for ${clash.base.name} subset ${clash.subset}`,
      ),
    )
    return undefined
  }
  ctx.uses.push(
    t.subset.definition.trafficPolicy ? {...use, trafficPolicyFrom: t.subset.definition.destinationRule} : use,
  )
  return {name: use.name, port}
}

/**
 * The path part of URLRewrite/RequestRedirect for one match. Istio replaces a prefix character for
 * character (`/foo` + rewrite `/bar`: `/foo/x` → `/bar/x`, `/foox` → `/barx`); Gateway API replaces
 * path segments and manages the joining "/" itself (prefix `/foo/` or `/foo`, replacement `/bar`
 * or `/bar/`: `/foo/x` → `/bar/x`). The two agree exactly when the prefix and the replacement both
 * end in "/" or both do not; other pairs would change paths (`/foo` + `/`: Istio `//x`).
 */
function prefixReplacement(
  prefix: string,
  replacement: string,
  where: string,
  ctx: BuildContext,
): HTTPPathModifier | undefined {
  if (prefix.endsWith('/') !== replacement.endsWith('/')) {
    ctx.reasons.push(
      reason(
        where,
        `prefix ${JSON.stringify(prefix)} replaced by ${JSON.stringify(replacement)}: Istio replaces characters, Gateway API whole segments, and for this pair (one ends in "/", the other not) the resulting paths differ`,
      ),
    )
    return undefined
  }
  return {type: 'ReplacePrefixMatch', replacePrefixMatch: replacement}
}

function pathModifier(draft: HttpDraft, m: MatchDraft | undefined, ctx: BuildContext): HTTPPathModifier | undefined {
  const where = m?.path ?? draft.path
  const prefix = m?.uri === 'prefix' ? m.match.path!.value : m?.uri === undefined ? '/' : undefined
  if (draft.rewrite?.uri !== undefined) {
    const uri = draft.rewrite.uri
    // Envoy's prefix_rewrite replaces the matched part: all of an exact or regex-matched path.
    if (prefix === undefined) return {type: 'ReplaceFullPath', replaceFullPath: uri}
    return prefixReplacement(prefix, uri, `${draft.path}.rewrite.uri`, ctx)
  }
  if (draft.redirect?.prefix !== undefined) {
    if (prefix === undefined) {
      ctx.reasons.push(
        reason(`${draft.path}.redirect.uri`, `%PREFIX()% redirect on ${where}, which is not a prefix match`),
      )
      return undefined
    }
    return prefixReplacement(prefix, draft.redirect.prefix, `${draft.path}.redirect.uri`, ctx)
  }
  return undefined
}

interface RuleParts {
  filters: HTTPRouteFilter[]
  backendRefs?: HTTPBackendRef[]
  timeouts?: {request: string}
}

function ruleParts(draft: HttpDraft, requestPort: number, ctx: BuildContext): RuleParts | undefined {
  const before = ctx.reasons.length
  const filters: HTTPRouteFilter[] = []
  if (draft.requestHeaders) filters.push({type: 'RequestHeaderModifier', requestHeaderModifier: draft.requestHeaders})
  if (draft.responseHeaders)
    filters.push({type: 'ResponseHeaderModifier', responseHeaderModifier: draft.responseHeaders})
  for (const mirror of draft.mirrors) {
    const ref = backendRef(mirror, requestPort, ctx)
    if (!ref) continue
    filters.push({
      type: 'RequestMirror',
      requestMirror: {backendRef: ref, ...(mirror.percentage === undefined ? {} : mirrorShare(mirror.percentage))},
    })
  }
  if (draft.rewrite?.hostname !== undefined && draft.rewrite.uri === undefined) {
    filters.push({type: 'URLRewrite', urlRewrite: {hostname: draft.rewrite.hostname}})
  }
  if (draft.redirect) {
    const r = draft.redirect
    const redirect: HTTPRequestRedirect = {statusCode: r.statusCode}
    if (r.scheme) redirect.scheme = r.scheme
    if (r.hostname) redirect.hostname = r.hostname
    if (r.port !== undefined) redirect.port = r.port
    // With a scheme and no port, Istio derives the scheme's default port; FROM_REQUEST_PORT is then
    // written as the number of the port this route serves.
    else if (r.requestPort && r.scheme) redirect.port = requestPort
    if (r.fullPath !== undefined) redirect.path = {type: 'ReplaceFullPath', replaceFullPath: r.fullPath}
    // A %PREFIX()% redirect gets its path per match (see rulesForPort).
    filters.push({type: 'RequestRedirect', requestRedirect: redirect})
  }
  if (draft.cors) filters.push({type: 'CORS', cors: draft.cors})
  const parts: RuleParts = {filters}
  if (!draft.redirect) {
    parts.backendRefs = []
    for (const d of draft.destinations) {
      const ref = backendRef(d, requestPort, ctx)
      if (!ref) continue
      const b: HTTPBackendRef = {...ref, weight: d.weight}
      const bf: HTTPRouteFilter[] = []
      if (d.requestHeaders) bf.push({type: 'RequestHeaderModifier', requestHeaderModifier: d.requestHeaders})
      if (d.responseHeaders) bf.push({type: 'ResponseHeaderModifier', responseHeaderModifier: d.responseHeaders})
      if (bf.length > 0) b.filters = bf
      parts.backendRefs.push(b)
    }
  }
  if (draft.timeout) parts.timeouts = {request: draft.timeout}
  return ctx.reasons.length === before ? parts : undefined
}

function describeMatch(m: HTTPRouteMatch): string {
  const p = effectivePath(m)
  const bits = [`${p.type} ${p.value}`]
  if (m.method) bits.push(`method ${m.method}`)
  if (m.headers?.length) bits.push(`${m.headers.length} header match(es)`)
  if (m.queryParams?.length) bits.push(`${m.queryParams.length} query match(es)`)
  return bits.join(', ')
}

/** The rules for requests arriving on `port` of the parent, in VirtualService order. */
export function rulesForPort(drafts: HttpDraft[], port: number, ctx: BuildContext): HTTPRouteRule[] {
  const rules: HTTPRouteRule[] = []
  const ranked: RankedMatch[] = []
  const usedNames = new Set<string>()
  for (const draft of drafts) {
    let matches: MatchDraft[] | undefined
    if (draft.matches !== undefined) {
      const applicable = draft.matches.filter((m) => m.port === undefined || m.port === port)
      if (applicable.length === 0) continue
      // A match left empty once its port is taken by the parentRef matches every request.
      matches = applicable.some((m) => Object.keys(m.match).length === 0) ? undefined : applicable
    }
    const parts = ruleParts(draft, port, ctx)
    if (!parts) continue
    const pathDependent = draft.rewrite?.uri !== undefined || draft.redirect?.prefix !== undefined
    // ReplacePrefixMatch requires a rule with exactly one PathPrefix match (CEL rule), and the path
    // modifier depends on each match's type: such rules are split into one rule per match.
    const groups: (MatchDraft[] | undefined)[] =
      pathDependent && matches !== undefined ? matches.map((m) => [m]) : [matches]
    groups.forEach((group, k) => {
      const filters = [...parts.filters]
      let gwMatches = group?.map((m) => m.match)
      if (pathDependent) {
        const m = group?.[0]
        const modifier = pathModifier(draft, m, ctx)
        if (!modifier) return
        // Header-only and catch-all matches get their implicit PathPrefix "/" written out, which the
        // ReplacePrefixMatch CEL rule checks.
        if (modifier.type === 'ReplacePrefixMatch' && !m?.match.path)
          gwMatches = [{path: {type: 'PathPrefix', value: '/'}, ...(m?.match ?? {})}]
        if (draft.redirect) {
          const i = filters.findIndex((f) => f.type === 'RequestRedirect')
          const f = filters[i]
          if (f?.type === 'RequestRedirect')
            filters[i] = {type: 'RequestRedirect', requestRedirect: {...f.requestRedirect, path: modifier}}
        } else {
          const rewrite: HTTPURLRewrite = {path: modifier}
          if (draft.rewrite?.hostname !== undefined) rewrite.hostname = draft.rewrite.hostname
          filters.push({type: 'URLRewrite', urlRewrite: rewrite})
        }
      }
      const rule: HTTPRouteRule = {}
      if (draft.name !== undefined) {
        const name = groups.length > 1 ? `${draft.name}-${k}` : draft.name
        if (DNS_SUBDOMAIN.test(name) && name.length <= LIMITS.name && !usedNames.has(name)) {
          rule.name = name
          usedNames.add(name)
        }
      }
      if (gwMatches !== undefined) rule.matches = gwMatches
      if (filters.length > 0) rule.filters = filters
      if (parts.backendRefs) rule.backendRefs = parts.backendRefs
      if (parts.timeouts) rule.timeouts = parts.timeouts
      const actionKey = stableJson({filters: rule.filters, backendRefs: rule.backendRefs, timeouts: rule.timeouts})
      const rankedMatches = gwMatches ?? [{}]
      rankedMatches.forEach((match, j) =>
        ranked.push({origin: draft.index, path: group?.[j]?.path ?? draft.path, match, actionKey}),
      )
      rules.push(rule)
    })
  }

  for (const c of precedenceConflicts(ranked)) {
    ctx.reasons.push(
      reason(
        c.overtaking.path,
        `Gateway API precedence (Istio: Exact, then longest PathPrefix, then RegularExpression; then method, header and query match counts) evaluates this match (${describeMatch(c.overtaking.match)}) before ${c.first.path} (${describeMatch(c.first.match)}), which the VirtualService evaluates first; a request matching both would take a different route`,
      ),
    )
  }
  const totalMatches = rules.reduce((n, r) => n + (r.matches?.length ?? 0), 0)
  if (rules.length > LIMITS.rules)
    ctx.reasons.push(
      reason('spec.http', `${rules.length} rules for port ${port}: an HTTPRoute holds at most ${LIMITS.rules}`),
    )
  if (totalMatches > LIMITS.totalMatches)
    ctx.reasons.push(
      reason(
        'spec.http',
        `${totalMatches} matches for port ${port}: an HTTPRoute holds at most ${LIMITS.totalMatches}`,
      ),
    )
  rules.forEach((r, i) => {
    if ((r.matches?.length ?? 0) > LIMITS.matchesPerRule)
      ctx.reasons.push(
        reason(`spec.http`, `rule ${i} has ${r.matches!.length} matches: at most ${LIMITS.matchesPerRule}`),
      )
    if ((r.filters?.length ?? 0) > LIMITS.filters)
      ctx.reasons.push(reason(`spec.http`, `rule ${i} has ${r.filters!.length} filters: at most ${LIMITS.filters}`))
  })
  return rules
}

/**
 * The HTTPRoute(s) for one parent Service. VirtualService `http` routes apply on the Service's
 * HTTP ports (including sniffed ones); a match with `port` applies on that port only; a destination
 * without a port on a multi-port Service goes to the port of the request. Hence:
 * - one HTTP port: one route whose parentRef names that port (as the istio.io migration docs do);
 * - several, and the same rules for each: one route without port, covering every port of the
 *   Service as the VirtualService did;
 * - several with different rules: one route per port.
 */
export function routesForParent(
  parent: ServiceInfo,
  drafts: HttpDraft[],
  hostPath: string,
  ctx: BuildContext,
): ParentRoute[] {
  const httpPorts = parent.ports.filter((p) => p.http).map((p) => p.port)
  if (httpPorts.length === 0) {
    ctx.reasons.push(
      reason(
        hostPath,
        `Service ${parent.name} has no port Istio treats as HTTP (by name, appProtocol or sniffing): the http routes never applied to it`,
      ),
    )
    return []
  }
  for (const d of drafts) {
    for (const m of d.matches ?? []) {
      if (m.port !== undefined && !httpPorts.includes(m.port)) {
        ctx.notes.push({
          topic: `${m.path}.port`,
          ...renderFinding('HTTPRouteMatchNeverApplied', {path: m.path, port: m.port, parentName: parent.name}, 'info'),
        })
      }
    }
  }
  const before = ctx.reasons.length
  const perPort = httpPorts.map((port) => ({port, rules: rulesForPort(drafts, port, ctx)}))
  if (ctx.reasons.length > before) return []
  const withRules = perPort.filter((p) => p.rules.length > 0)
  if (withRules.length === 0) {
    ctx.reasons.push(reason(hostPath, `no http route applies to any HTTP port of Service ${parent.name}`))
    return []
  }
  if (httpPorts.length === 1) return [{port: httpPorts[0]!, rules: perPort[0]!.rules}]
  const first = stableJson(perPort[0]!.rules)
  if (withRules.length === perPort.length && perPort.every((p) => stableJson(p.rules) === first))
    return [{rules: perPort[0]!.rules}]
  ctx.notes.push({
    topic: `${hostPath}/ports`,
    ...renderFinding('HTTPRoutePerPort', {parentName: parent.name, withRules: withRules.map((p) => p.port)}, 'info'),
  })
  return withRules.map((p) => ({port: p.port, rules: p.rules}))
}
