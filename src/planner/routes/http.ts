// One VirtualService `http[]` entry read into what an HTTPRoute rule can carry, with a reason for
// every field that has no (exact) Gateway API v1.6.1 standard-channel equivalent
// (istio/api networking/v1 HTTPRoute; Gateway API config/crd/standard HTTPRoute).
import {renderFinding} from '../findings/finding.js'
import type {FindingCode} from '../findings/catalogue.js'
import {isRecord} from '../json.js'
import {reason} from '../classify/results.js'
import type {KubeObject} from '../model.js'
import {
  HTTP_METHODS,
  LIMITS,
  REDIRECT_STATUS_CODES,
  type HTTPCORS,
  type HTTPHeader,
  type HTTPHeaderModifier,
  type HTTPRouteMatch,
  type HTTPValueMatch,
} from './gateway-types.js'
import {findSubset, resolveHost, type ServiceInfo, type SubsetDefinition} from './hosts.js'
import {DNS_SUBDOMAIN, HEADER_NAME, escapeRe2, gatewayDuration, parseGoDuration, pathValueProblem} from './values.js'

/** A note about a converted VirtualService (or, with `alsoWhenKept`, about any). */
export interface Note {
  code: FindingCode
  severity: 'info' | 'warning' | 'error'
  topic: string
  message: string
  fix?: string
  alsoWhenKept?: boolean
}

export interface AnalysisContext {
  namespace: string
  services: Map<string, ServiceInfo>
  destinationRules: KubeObject[]
  reasons: string[]
  notes: Note[]
}

export type UriKind = 'exact' | 'prefix' | 'regex'

export interface MatchDraft {
  path: string
  /** `match[].port`: restricts the match to one Service port. */
  port?: number
  /** Everything but the port; `{}` matches every request. */
  match: HTTPRouteMatch
  uri?: UriKind
}

export interface TargetDraft {
  path: string
  service: ServiceInfo
  subset?: {name: string; definition: SubsetDefinition}
  /** `destination.port.number`. */
  port?: number
}

export interface DestinationDraft extends TargetDraft {
  weight: number
  requestHeaders?: HTTPHeaderModifier
  responseHeaders?: HTTPHeaderModifier
}

export interface MirrorDraft extends TargetDraft {
  /** Mirrored share in percent; undefined = 100 %. */
  percentage?: number
}

export interface RedirectDraft {
  scheme?: 'http' | 'https'
  hostname?: string
  port?: number
  /** derivePort FROM_REQUEST_PORT: the port of the request, which Gateway API writes only as a number. */
  requestPort?: boolean
  statusCode: number
  /** `uri`: replaces the whole path. */
  fullPath?: string
  /** `uri: "%PREFIX()%/x"`: replaces the matched prefix. */
  prefix?: string
}

export interface HttpDraft {
  index: number
  path: string
  name?: string
  /** undefined: no match (every request). */
  matches?: MatchDraft[]
  destinations: DestinationDraft[]
  redirect?: RedirectDraft
  rewrite?: {uri?: string; hostname?: string}
  requestHeaders?: HTTPHeaderModifier
  responseHeaders?: HTTPHeaderModifier
  mirrors: MirrorDraft[]
  timeout?: string
  cors?: HTTPCORS
}

const HTTP_ROUTE_FIELDS = new Set([
  'name',
  'match',
  'route',
  'redirect',
  'directResponse',
  'delegate',
  'rewrite',
  'timeout',
  'retries',
  'fault',
  'mirror',
  'mirrors',
  'mirrorPercent',
  'mirrorPercentage',
  'mirror_percent',
  'corsPolicy',
  'headers',
])

const MATCH_FIELDS = new Set([
  'name',
  'uri',
  'scheme',
  'method',
  'authority',
  'headers',
  'port',
  'sourceLabels',
  'gateways',
  'queryParams',
  'ignoreUriCase',
  'withoutHeaders',
  'sourceNamespace',
  'statPrefix',
])

type StringMatch = {kind: 'exact' | 'prefix' | 'regex'; value: string} | {kind: 'present'}

/** An Istio StringMatch (`exact` | `prefix` | `regex`, or `{}`), or why it is none. */
function stringMatch(value: unknown): StringMatch | {problem: string} {
  if (!isRecord(value)) return {problem: 'not a string match'}
  const kinds = (['exact', 'prefix', 'regex'] as const).filter((k) => value[k] !== undefined)
  if (kinds.length === 0) return {kind: 'present'}
  if (kinds.length > 1) return {problem: `sets ${kinds.join(' and ')}`}
  const v = value[kinds[0]!]
  if (typeof v !== 'string') return {problem: `${kinds[0]} is not a string`}
  return {kind: kinds[0]!, value: v}
}

function nonEmpty(value: unknown): boolean {
  if (value === undefined || value === null) return false
  if (Array.isArray(value)) return value.length > 0
  if (isRecord(value)) return Object.keys(value).length > 0
  return value !== '' && value !== false
}

function convertUri(
  value: unknown,
  where: string,
  ctx: AnalysisContext,
): {match: HTTPRouteMatch; uri: UriKind} | undefined {
  const sm = stringMatch(value)
  if ('problem' in sm || sm.kind === 'present') {
    ctx.reasons.push(
      reason(where, `URI match ${'problem' in sm ? sm.problem : 'without exact, prefix or regex'}: not convertible`),
    )
    return undefined
  }
  if (sm.kind === 'regex') {
    if (sm.value === '' || sm.value.length > LIMITS.pathValue) {
      ctx.reasons.push(
        reason(where, `regex of ${sm.value.length} characters: an HTTPRoute path value holds 1 to ${LIMITS.pathValue}`),
      )
      return undefined
    }
    return {match: {path: {type: 'RegularExpression', value: sm.value}}, uri: 'regex'}
  }
  const problem = pathValueProblem(sm.value)
  if (problem) {
    ctx.reasons.push(reason(where, `${sm.kind} ${JSON.stringify(sm.value)} is not a valid HTTPRoute path: ${problem}`))
    return undefined
  }
  if (sm.kind === 'exact') return {match: {path: {type: 'Exact', value: sm.value}}, uri: 'exact'}
  if (sm.value !== '/') {
    const trimmed = sm.value.endsWith('/') ? sm.value.slice(0, -1) : sm.value
    const prefix = JSON.stringify(sm.value)
    const args = sm.value.endsWith('/')
      ? ({variant: 'trailingSlash', path: where, prefix, prefixWithoutSlash: JSON.stringify(trimmed)} as const)
      : ({
          variant: 'characters',
          path: where,
          prefix,
          longerPath: JSON.stringify(`${sm.value}x`),
          subPaths: JSON.stringify(`${sm.value}/…`),
        } as const)
    ctx.notes.push({...renderFinding('HTTPRoutePathPrefixSemantics', args, 'warning'), topic: where})
  }
  return {match: {path: {type: 'PathPrefix', value: sm.value}}, uri: 'prefix'}
}

/** Header or query parameter matches; `headers` names compare case-insensitively. */
function convertValueMatches(
  value: unknown,
  where: string,
  what: 'header' | 'query parameter',
  ctx: AnalysisContext,
): HTTPValueMatch[] | undefined {
  if (!isRecord(value)) {
    ctx.reasons.push(reason(where, `${what} matches are not a map`))
    return undefined
  }
  const out: HTTPValueMatch[] = []
  const seen = new Set<string>()
  let ok = true
  for (const name of Object.keys(value).sort()) {
    const p = `${where}.${name}`
    const key = what === 'header' ? name.toLowerCase() : name
    if (!HEADER_NAME.test(name) || name.length > LIMITS.headerName) {
      ctx.reasons.push(
        reason(p, `${what} name ${JSON.stringify(name)} is not an HTTP token: Gateway API cannot match it`),
      )
      ok = false
      continue
    }
    if (seen.has(key)) {
      ctx.reasons.push(
        reason(p, `${what} ${name} is matched twice (names are case-insensitive): Gateway API keeps only the first`),
      )
      ok = false
      continue
    }
    seen.add(key)
    const sm = stringMatch(value[name])
    const maxValue = what === 'header' ? LIMITS.headerValue : LIMITS.queryValue
    if ('problem' in sm) {
      ctx.reasons.push(reason(p, `${sm.problem}: not convertible`))
      ok = false
    } else if (sm.kind === 'present') {
      if (what === 'query parameter') {
        ctx.reasons.push(reason(p, 'query parameter presence match: Gateway API matches query parameter values only'))
        ok = false
      } else {
        out.push({name, type: 'RegularExpression', value: '.*'})
      }
    } else if (sm.kind === 'exact') {
      if (sm.value === '' && what === 'query parameter') {
        ctx.reasons.push(reason(p, 'empty exact query parameter value: Gateway API values are at least one character'))
        ok = false
      } else if (sm.value.length > maxValue) {
        ctx.reasons.push(reason(p, `value longer than ${maxValue} characters`))
        ok = false
      } else {
        // An empty value cannot be an Exact match (minLength 1); the expression "^$" matches exactly it.
        out.push(
          sm.value === '' ? {name, type: 'RegularExpression', value: '^$'} : {name, type: 'Exact', value: sm.value},
        )
      }
    } else if (sm.kind === 'regex') {
      if (sm.value === '' || sm.value.length > maxValue) {
        ctx.reasons.push(reason(p, `regex of ${sm.value.length} characters: Gateway API holds 1 to ${maxValue}`))
        ok = false
      } else {
        out.push({name, type: 'RegularExpression', value: sm.value})
      }
    } else if (what === 'query parameter') {
      ctx.reasons.push(
        reason(p, 'query parameter prefix match: not supported by Istio for query parameters, and not by Gateway API'),
      )
      ok = false
    } else {
      const regex = `${escapeRe2(sm.value)}.*`
      if (regex.length > maxValue) {
        ctx.reasons.push(reason(p, `prefix too long for a regular expression of at most ${maxValue} characters`))
        ok = false
        continue
      }
      out.push({name, type: 'RegularExpression', value: regex})
      ctx.notes.push({
        topic: p,
        ...renderFinding(
          'HTTPRouteHeaderPrefixAsRegex',
          {p, stringify: JSON.stringify(sm.value), stringify2: JSON.stringify(regex)},
          'info',
        ),
      })
    }
  }
  const limit = what === 'header' ? LIMITS.headerMatches : LIMITS.queryParamMatches
  if (out.length > limit) {
    ctx.reasons.push(reason(where, `${out.length} ${what} matches: an HTTPRoute match holds at most ${limit}`))
    ok = false
  }
  return ok ? out : undefined
}

function convertMatch(m: unknown, where: string, ctx: AnalysisContext): MatchDraft | undefined {
  if (!isRecord(m)) {
    ctx.reasons.push(reason(where, 'not an object'))
    return undefined
  }
  const before = ctx.reasons.length
  for (const key of Object.keys(m)) {
    if (!MATCH_FIELDS.has(key)) ctx.reasons.push(reason(`${where}.${key}`, 'unknown match field: not converted'))
  }
  const draft: MatchDraft = {path: where, match: {}}
  if (m.uri !== undefined) {
    const uri = convertUri(m.uri, `${where}.uri`, ctx)
    if (uri) {
      draft.match.path = uri.match.path!
      draft.uri = uri.uri
    }
  }
  if (m.ignoreUriCase === true)
    ctx.reasons.push(
      reason(`${where}.ignoreUriCase`, 'case-insensitive URI match: Gateway API paths are case-sensitive'),
    )
  if (m.headers !== undefined) {
    const headers = convertValueMatches(m.headers, `${where}.headers`, 'header', ctx)
    if (headers && headers.length > 0) draft.match.headers = headers
  }
  if (m.queryParams !== undefined) {
    const qp = convertValueMatches(m.queryParams, `${where}.queryParams`, 'query parameter', ctx)
    if (qp && qp.length > 0) draft.match.queryParams = qp
  }
  if (m.method !== undefined) {
    const sm = stringMatch(m.method)
    if (!('problem' in sm) && sm.kind === 'exact' && HTTP_METHODS.has(sm.value)) draft.match.method = sm.value
    else
      ctx.reasons.push(
        reason(
          `${where}.method`,
          `method match ${JSON.stringify(m.method)}: Gateway API matches one of ${[...HTTP_METHODS].join(', ')} exactly`,
        ),
      )
  }
  if (m.port !== undefined) {
    if (Number.isInteger(m.port) && (m.port as number) > 0 && (m.port as number) < 65536) draft.port = m.port as number
    else ctx.reasons.push(reason(`${where}.port`, 'not a port number'))
  }
  if (nonEmpty(m.withoutHeaders))
    ctx.reasons.push(reason(`${where}.withoutHeaders`, 'negative header match: Gateway API has none'))
  if (nonEmpty(m.sourceLabels)) {
    ctx.reasons.push(
      reason(
        `${where}.sourceLabels`,
        'source label match: Gateway API has none, and waypoints drop it ("Source label matching is not supported in ambient mode", DOMAIN §3.4)',
      ),
    )
  }
  if (nonEmpty(m.sourceNamespace))
    ctx.reasons.push(
      reason(
        `${where}.sourceNamespace`,
        'source namespace match: Gateway API has none (a waypoint compares it with its own namespace, DOMAIN §3.4)',
      ),
    )
  if (Array.isArray(m.gateways) && m.gateways.some((g) => g !== 'mesh')) {
    ctx.reasons.push(
      reason(
        `${where}.gateways`,
        `match restricted to gateways ${m.gateways.join(', ')}: an HTTPRoute with a Service parent serves mesh traffic only`,
      ),
    )
  }
  if (nonEmpty(m.authority))
    ctx.reasons.push(
      reason(`${where}.authority`, 'authority match: an HTTPRoute with a Service parent cannot match the Host header'),
    )
  if (nonEmpty(m.scheme)) ctx.reasons.push(reason(`${where}.scheme`, 'scheme match: Gateway API has none'))
  if (nonEmpty(m.statPrefix))
    ctx.reasons.push(reason(`${where}.statPrefix`, 'route statistics prefix: Gateway API has none'))
  return ctx.reasons.length === before ? draft : undefined
}

function headerList(value: unknown, where: string, ctx: AnalysisContext): HTTPHeader[] | undefined {
  if (value === undefined) return undefined
  if (!isRecord(value)) {
    ctx.reasons.push(reason(where, 'not a map of header names to values'))
    return undefined
  }
  const out: HTTPHeader[] = []
  const seen = new Set<string>()
  for (const name of Object.keys(value).sort()) {
    const v = value[name]
    const p = `${where}.${name}`
    if (!HEADER_NAME.test(name) || name.length > LIMITS.headerName)
      ctx.reasons.push(
        reason(
          p,
          `header name ${JSON.stringify(name)} (pseudo-headers such as :authority included) cannot be written by Gateway API header modifiers`,
        ),
      )
    else if (seen.has(name.toLowerCase()))
      ctx.reasons.push(reason(p, 'header named twice (names are case-insensitive)'))
    else if (typeof v !== 'string' || v === '' || v.length > LIMITS.headerValue)
      ctx.reasons.push(reason(p, `header value must be 1 to ${LIMITS.headerValue} characters for Gateway API`))
    else out.push({name, value: v})
    seen.add(name.toLowerCase())
  }
  if (out.length > LIMITS.headerModifierEntries)
    ctx.reasons.push(
      reason(where, `${out.length} headers: a header modifier holds at most ${LIMITS.headerModifierEntries}`),
    )
  return out
}

/** Istio HeaderOperations (`set`, `add`, `remove`) as a Gateway API header modifier. */
function headerModifier(value: unknown, where: string, ctx: AnalysisContext): HTTPHeaderModifier | undefined {
  if (value === undefined) return undefined
  if (!isRecord(value)) {
    ctx.reasons.push(reason(where, 'not header operations'))
    return undefined
  }
  for (const key of Object.keys(value))
    if (!['set', 'add', 'remove'].includes(key)) ctx.reasons.push(reason(`${where}.${key}`, 'unknown header operation'))
  const out: HTTPHeaderModifier = {}
  const set = headerList(value.set, `${where}.set`, ctx)
  const add = headerList(value.add, `${where}.add`, ctx)
  if (set && set.length > 0) out.set = set
  if (add && add.length > 0) out.add = add
  if (value.remove !== undefined) {
    const remove = Array.isArray(value.remove) ? value.remove : []
    const names = [...new Set(remove.map(String))].sort()
    const bad = names.filter((n) => !HEADER_NAME.test(n))
    if (!Array.isArray(value.remove) || bad.length > 0)
      ctx.reasons.push(
        reason(`${where}.remove`, `cannot remove ${bad.join(', ') || 'a non-list'} with a Gateway API header modifier`),
      )
    else if (names.length > LIMITS.headerModifierEntries)
      ctx.reasons.push(
        reason(
          `${where}.remove`,
          `${names.length} headers: a header modifier removes at most ${LIMITS.headerModifierEntries}`,
        ),
      )
    else if (names.length > 0) out.remove = names
  }
  return Object.keys(out).length > 0 ? out : undefined
}

function headersOf(
  value: unknown,
  where: string,
  ctx: AnalysisContext,
): {request?: HTTPHeaderModifier; response?: HTTPHeaderModifier} {
  if (value === undefined) return {}
  if (!isRecord(value)) {
    ctx.reasons.push(reason(where, 'not header operations'))
    return {}
  }
  for (const key of Object.keys(value))
    if (!['request', 'response'].includes(key)) ctx.reasons.push(reason(`${where}.${key}`, 'unknown field'))
  const out: {request?: HTTPHeaderModifier; response?: HTTPHeaderModifier} = {}
  const request = headerModifier(value.request, `${where}.request`, ctx)
  const response = headerModifier(value.response, `${where}.response`, ctx)
  if (request) out.request = request
  if (response) out.response = response
  return out
}

/** A destination (or mirror) host of the VirtualService as a Service of the namespace. */
function target(dest: unknown, where: string, ctx: AnalysisContext): TargetDraft | undefined {
  if (!isRecord(dest) || typeof dest.host !== 'string' || dest.host === '') {
    ctx.reasons.push(reason(`${where}.host`, 'missing destination host'))
    return undefined
  }
  const resolved = resolveHost(dest.host, ctx.namespace)
  const service = resolved.service !== undefined ? ctx.services.get(resolved.service) : undefined
  if (!service) {
    ctx.reasons.push(
      reason(
        `${where}.host`,
        `${dest.host} is not a Service of ${ctx.namespace}: a backendRef to another namespace needs a ReferenceGrant there, and ServiceEntry hosts need Istio-specific backendRefs (kind Hostname) — not converted`,
      ),
    )
    return undefined
  }
  if (service.type === 'ExternalName') {
    ctx.reasons.push(
      reason(
        `${where}.host`,
        `Service ${service.name} is of type ExternalName: Gateway API implementations should not route to it`,
      ),
    )
    return undefined
  }
  if (resolved.partial) {
    ctx.notes.push({
      topic: `${where}.host`,
      ...renderFinding(
        'HTTPRoutePartialHost',
        {variant: 'host', where, host: dest.host, serviceName: service.name},
        'warning',
      ),
    })
  }
  const out: TargetDraft = {path: where, service}
  if (dest.port !== undefined) {
    const n = isRecord(dest.port) ? dest.port.number : undefined
    if (!Number.isInteger(n) || (n as number) < 1 || (n as number) > 65535) {
      ctx.reasons.push(reason(`${where}.port`, 'destination port without a number'))
      return undefined
    }
    if (!service.ports.some((p) => p.port === n)) {
      ctx.reasons.push(reason(`${where}.port`, `Service ${service.name} has no port ${n}`))
      return undefined
    }
    out.port = n as number
  }
  if (dest.subset !== undefined) {
    const subset = String(dest.subset)
    const definition = findSubset(service.name, subset, ctx.namespace, ctx.destinationRules)
    if (!definition) {
      ctx.reasons.push(
        reason(
          `${where}.subset`,
          `no DestinationRule defines subset ${subset} for ${service.name}: no version Service can stand for it`,
        ),
      )
      ctx.notes.push({
        ...renderFinding('VirtualServiceSubsetUnknown', {path: where, subset, service: service.name}, 'error'),
        topic: `${where}.subset`,
        alsoWhenKept: true,
      })
      return undefined
    }
    out.subset = {name: subset, definition}
  }
  return out
}

function percentage(value: unknown, where: string, ctx: AnalysisContext): number | undefined {
  const v = isRecord(value) ? value.value : value
  if (typeof v !== 'number' || !(v >= 0 && v <= 100)) {
    ctx.reasons.push(reason(where, 'mirror percentage outside 0–100'))
    return undefined
  }
  return v
}

function convertMirrors(r: Record<string, unknown>, where: string, ctx: AnalysisContext): MirrorDraft[] {
  const out: MirrorDraft[] = []
  if (r.mirror !== undefined) {
    const t = target(r.mirror, `${where}.mirror`, ctx)
    if (t) {
      const m: MirrorDraft = {...t}
      // mirrorPercentage wins over the deprecated integer mirrorPercent, as in Istio.
      if (r.mirrorPercentage !== undefined)
        m.percentage = percentage(r.mirrorPercentage, `${where}.mirrorPercentage`, ctx)
      else if (r.mirrorPercent !== undefined) m.percentage = percentage(r.mirrorPercent, `${where}.mirrorPercent`, ctx)
      else if (r.mirror_percent !== undefined)
        m.percentage = percentage(r.mirror_percent, `${where}.mirror_percent`, ctx)
      out.push(m)
    }
  }
  const mirrors = Array.isArray(r.mirrors) ? r.mirrors : []
  mirrors.forEach((entry, k) => {
    const p = `${where}.mirrors[${k}]`
    if (!isRecord(entry)) {
      ctx.reasons.push(reason(p, 'not a mirror policy'))
      return
    }
    const t = target(entry.destination, `${p}.destination`, ctx)
    if (!t) return
    const m: MirrorDraft = {...t}
    if (entry.percentage !== undefined) m.percentage = percentage(entry.percentage, `${p}.percentage`, ctx)
    out.push(m)
  })
  return out
}

function convertRedirect(value: unknown, where: string, ctx: AnalysisContext): RedirectDraft | undefined {
  if (!isRecord(value)) {
    ctx.reasons.push(reason(where, 'not a redirect'))
    return undefined
  }
  const before = ctx.reasons.length
  for (const key of Object.keys(value)) {
    if (!['uri', 'authority', 'port', 'derivePort', 'scheme', 'redirectCode'].includes(key))
      ctx.reasons.push(reason(`${where}.${key}`, 'unknown redirect field'))
  }
  const code = value.redirectCode === undefined ? 301 : Number(value.redirectCode)
  // Istio's default is 301 and Gateway API's 302: the status is always written out.
  if (!REDIRECT_STATUS_CODES.has(code))
    ctx.reasons.push(
      reason(`${where}.redirectCode`, `status ${code}: Gateway API redirects with 301, 302, 303, 307 or 308 only`),
    )
  const out: RedirectDraft = {statusCode: code}
  if (value.scheme !== undefined) {
    if (value.scheme === 'http' || value.scheme === 'https') out.scheme = value.scheme
    else ctx.reasons.push(reason(`${where}.scheme`, 'scheme other than http or https'))
  }
  if (value.authority !== undefined) {
    const authority = String(value.authority).toLowerCase()
    const colon = authority.lastIndexOf(':')
    const host = colon >= 0 ? authority.slice(0, colon) : authority
    const port = colon >= 0 ? Number(authority.slice(colon + 1)) : undefined
    if (!DNS_SUBDOMAIN.test(host) || host.length > 253)
      ctx.reasons.push(
        reason(`${where}.authority`, `${value.authority} is not a DNS name Gateway API accepts as redirect hostname`),
      )
    else out.hostname = host
    if (port !== undefined) {
      if (!Number.isInteger(port) || port < 1 || port > 65535 || value.port !== undefined)
        ctx.reasons.push(reason(`${where}.authority`, 'authority port cannot be expressed'))
      else out.port = port
    }
  }
  if (value.port !== undefined) {
    if (Number.isInteger(value.port) && (value.port as number) > 0 && (value.port as number) < 65536)
      out.port = value.port as number
    else ctx.reasons.push(reason(`${where}.port`, 'not a port number'))
  } else if (value.derivePort === 'FROM_REQUEST_PORT' && out.port === undefined) {
    out.requestPort = true
  }
  // derivePort FROM_PROTOCOL_DEFAULT (also Istio's behaviour when no port is set) is what Istio
  // makes of a Gateway API redirect that sets a scheme and no port; without a scheme, Istio uses the
  // request's port, which for in-mesh plain-HTTP traffic names the same authority.
  if (value.uri !== undefined) {
    const uri = String(value.uri)
    if (uri.startsWith('%PREFIX()%')) out.prefix = uri.slice('%PREFIX()%'.length)
    else if (uri === '' || uri.length > LIMITS.pathValue)
      ctx.reasons.push(reason(`${where}.uri`, `redirect path must be 1 to ${LIMITS.pathValue} characters`))
    else out.fullPath = uri
  }
  return ctx.reasons.length === before ? out : undefined
}

function convertRewrite(value: unknown, where: string, ctx: AnalysisContext): HttpDraft['rewrite'] {
  if (!isRecord(value)) {
    ctx.reasons.push(reason(where, 'not a rewrite'))
    return undefined
  }
  const out: NonNullable<HttpDraft['rewrite']> = {}
  for (const key of Object.keys(value))
    if (!['uri', 'authority', 'uriRegexRewrite'].includes(key))
      ctx.reasons.push(reason(`${where}.${key}`, 'unknown rewrite field'))
  if (value.uriRegexRewrite !== undefined)
    ctx.reasons.push(
      reason(
        `${where}.uriRegexRewrite`,
        'regex path rewrite: Gateway API URLRewrite replaces a full path or a matched prefix only',
      ),
    )
  if (value.uri !== undefined) {
    const uri = String(value.uri)
    if (uri === '' || uri.length > LIMITS.pathValue)
      ctx.reasons.push(reason(`${where}.uri`, `rewrite path must be 1 to ${LIMITS.pathValue} characters`))
    else out.uri = uri
  }
  if (value.authority !== undefined) {
    const authority = String(value.authority).toLowerCase()
    if (!DNS_SUBDOMAIN.test(authority) || authority.length > 253)
      ctx.reasons.push(
        reason(
          `${where}.authority`,
          `${value.authority} is not a DNS name (a port or an IP cannot be a URLRewrite hostname)`,
        ),
      )
    else out.hostname = authority
  }
  return out
}

const CORS_ORIGIN = /(^\*$)|(^(http(s)?):\/\/(((\*\.)?([a-zA-Z0-9-]+\.)*[a-zA-Z0-9-]+|\*)(:([0-9]{1,5}))?)$)/
const CORS_METHODS = new Set([...HTTP_METHODS, '*'])

function convertCors(value: unknown, where: string, ctx: AnalysisContext): HTTPCORS | undefined {
  if (!isRecord(value)) {
    ctx.reasons.push(reason(where, 'not a CORS policy'))
    return undefined
  }
  const known = [
    'allowOrigins',
    'allowOrigin',
    'allowMethods',
    'allowHeaders',
    'exposeHeaders',
    'maxAge',
    'allowCredentials',
    'unmatchedPreflights',
  ]
  for (const key of Object.keys(value))
    if (!known.includes(key)) ctx.reasons.push(reason(`${where}.${key}`, 'unknown CORS field'))
  const out: HTTPCORS = {}
  const origins: string[] = []
  ;(Array.isArray(value.allowOrigins) ? value.allowOrigins : []).forEach((o, k) => {
    const sm = stringMatch(o)
    // Istio turns Gateway API origins back into exact matches only, so exact is all that maps.
    if ('problem' in sm || sm.kind !== 'exact')
      ctx.reasons.push(
        reason(
          `${where}.allowOrigins[${k}]`,
          'origin prefix or regex match: Gateway API CORS lists exact origins (or "*")',
        ),
      )
    else origins.push(sm.value)
  })
  for (const o of Array.isArray(value.allowOrigin) ? value.allowOrigin : []) origins.push(String(o))
  const badOrigins = origins.filter((o) => !CORS_ORIGIN.test(o) || o.length > 253)
  if (badOrigins.length > 0)
    ctx.reasons.push(
      reason(
        `${where}.allowOrigins`,
        `origin(s) ${badOrigins.join(', ')} not of the form scheme://host[:port] that Gateway API CORS accepts`,
      ),
    )
  const listRule = (list: string[], field: string): boolean => {
    if (list.includes('*') && list.length > 1) {
      ctx.reasons.push(reason(`${where}.${field}`, '"*" alongside other values: Gateway API rejects it'))
      return false
    }
    if (list.length > LIMITS.corsList) {
      ctx.reasons.push(reason(`${where}.${field}`, `more than ${LIMITS.corsList} entries`))
      return false
    }
    return true
  }
  const uniq = (v: unknown): string[] => [...new Set((Array.isArray(v) ? v : []).map(String))]
  if (origins.length > 0 && listRule(origins, 'allowOrigins')) out.allowOrigins = [...new Set(origins)]
  const methods = uniq(value.allowMethods)
  const badMethods = methods.filter((m) => !CORS_METHODS.has(m))
  if (badMethods.length > 0)
    ctx.reasons.push(reason(`${where}.allowMethods`, `method(s) ${badMethods.join(', ')} outside Gateway API's list`))
  else if (methods.length > 0 && listRule(methods, 'allowMethods')) out.allowMethods = methods
  for (const field of ['allowHeaders', 'exposeHeaders'] as const) {
    const names = uniq(value[field])
    const bad = names.filter((n) => !HEADER_NAME.test(n))
    if (bad.length > 0)
      ctx.reasons.push(reason(`${where}.${field}`, `header name(s) ${bad.join(', ')} are not HTTP tokens`))
    else if (names.length > 0 && (field === 'exposeHeaders' || listRule(names, field))) out[field] = names
  }
  if (value.maxAge !== undefined) {
    const ns = parseGoDuration(String(value.maxAge))
    if (ns === undefined || ns <= 0n || ns % 1_000_000_000n !== 0n || ns / 1_000_000_000n > 2_147_483_647n) {
      ctx.reasons.push(
        reason(`${where}.maxAge`, `${value.maxAge}: Gateway API CORS maxAge is a whole number of seconds, at least 1`),
      )
    } else {
      out.maxAge = Number(ns / 1_000_000_000n)
    }
  }
  // Without maxAge, Gateway API defaults to 5 s, which is also the Fetch standard's default when
  // Access-Control-Max-Age is absent: browsers behave the same.
  if (value.allowCredentials === true) out.allowCredentials = true
  if (value.unmatchedPreflights === 'IGNORE')
    ctx.reasons.push(
      reason(
        `${where}.unmatchedPreflights`,
        'IGNORE: Gateway API always forwards preflight requests that do not match',
      ),
    )
  return out
}

/** Read `http[index]` of a VirtualService; problems go to `ctx.reasons`. */
export function analyzeHttpRoute(raw: unknown, index: number, ctx: AnalysisContext): HttpDraft {
  const path = `spec.http[${index}]`
  const draft: HttpDraft = {index, path, destinations: [], mirrors: []}
  if (!isRecord(raw)) {
    ctx.reasons.push(reason(path, 'not an HTTP route'))
    return draft
  }
  for (const key of Object.keys(raw))
    if (!HTTP_ROUTE_FIELDS.has(key)) ctx.reasons.push(reason(`${path}.${key}`, 'unknown field: not converted'))
  if (typeof raw.name === 'string' && raw.name !== '') draft.name = raw.name

  if (raw.delegate !== undefined)
    ctx.reasons.push(
      reason(
        `${path}.delegate`,
        'delegation to another VirtualService: Gateway API has no route delegation for Service parents',
      ),
    )
  if (raw.fault !== undefined)
    ctx.reasons.push(reason(`${path}.fault`, 'fault injection (delay/abort): Gateway API has none'))
  if (raw.directResponse !== undefined)
    ctx.reasons.push(reason(`${path}.directResponse`, 'direct response: Gateway API has none'))
  if (raw.retries !== undefined) {
    ctx.reasons.push(
      reason(
        `${path}.retries`,
        'retry policy: HTTPRoute `retry` is not in the v1.6.1 standard-channel CRD (experimental only), and an HTTPRoute without it gets the mesh default retry policy (meshConfig.defaultHttpRetryPolicy; built in: 2 attempts on connect-failure, refused-stream, unavailable, cancelled, 503) — neither the attempts, retryOn, perTryTimeout nor a disabled policy (attempts 0) can be written (timeouts.backendRequest is no perTryTimeout here: without a retry stanza istiod applies it as the whole route timeout)',
      ),
    )
  }

  // Matches: several entries are alternatives (OR), as several HTTPRoute matches are.
  const matches = Array.isArray(raw.match) ? raw.match : raw.match === undefined || raw.match === null ? [] : undefined
  if (matches === undefined) ctx.reasons.push(reason(`${path}.match`, 'not a list'))
  else if (matches.length > 0) {
    const drafts = matches.map((m, j) => convertMatch(m, `${path}.match[${j}]`, ctx))
    draft.matches = drafts.filter((d): d is MatchDraft => d !== undefined)
  }

  const {route, destinations} = convertDestinations(raw, path, ctx)
  draft.destinations.push(...destinations)

  if (raw.redirect !== undefined) {
    const redirect = convertRedirect(raw.redirect, `${path}.redirect`, ctx)
    if (redirect) draft.redirect = redirect
    if (route.length > 0) ctx.reasons.push(reason(`${path}.redirect`, 'redirect together with route destinations'))
  } else if (route.length === 0 && raw.delegate === undefined && raw.directResponse === undefined) {
    ctx.reasons.push(reason(path, 'neither route, redirect, direct response nor delegate'))
  }
  if (raw.rewrite !== undefined) {
    const rewrite = convertRewrite(raw.rewrite, `${path}.rewrite`, ctx)
    if (rewrite && (rewrite.uri !== undefined || rewrite.hostname !== undefined)) draft.rewrite = rewrite
    if (raw.redirect !== undefined)
      ctx.reasons.push(reason(`${path}.rewrite`, 'rewrite together with redirect: Gateway API allows only one of them'))
  }
  const headers = headersOf(raw.headers, `${path}.headers`, ctx)
  if (headers.request) draft.requestHeaders = headers.request
  if (headers.response) draft.responseHeaders = headers.response
  draft.mirrors = convertMirrors(raw, path, ctx)
  if (raw.timeout !== undefined) {
    const ns = parseGoDuration(String(raw.timeout))
    const d = ns === undefined ? undefined : gatewayDuration(ns)
    if (d === undefined)
      ctx.reasons.push(
        reason(
          `${path}.timeout`,
          `${raw.timeout}: not a duration Gateway API can write (whole milliseconds, at most 99999h)`,
        ),
      )
    // 0s disables Istio's route timeout, which is also what an HTTPRoute without timeouts gets.
    else if (d !== '0s') draft.timeout = d
  }
  if (raw.corsPolicy !== undefined) {
    const cors = convertCors(raw.corsPolicy, `${path}.corsPolicy`, ctx)
    if (cors) draft.cors = cors
  }
  return draft
}

/** `route`: the weighted destinations (the weight is always written, and never 0 for a lone backend). */
function convertDestinations(
  raw: Record<string, unknown>,
  path: string,
  ctx: AnalysisContext,
): {route: unknown[]; destinations: DestinationDraft[]} {
  const destinations: DestinationDraft[] = []
  const route = Array.isArray(raw.route) ? raw.route : []
  if (raw.route !== undefined && !Array.isArray(raw.route)) ctx.reasons.push(reason(`${path}.route`, 'not a list'))
  const weights = route.map((d) => (isRecord(d) && Number.isInteger(d.weight) ? (d.weight as number) : 0))
  route.forEach((d, k) => {
    const p = `${path}.route[${k}]`
    if (!isRecord(d)) {
      ctx.reasons.push(reason(p, 'not a destination'))
      return
    }
    for (const key of Object.keys(d))
      if (!['destination', 'weight', 'headers'].includes(key)) ctx.reasons.push(reason(`${p}.${key}`, 'unknown field'))
    if (
      d.weight !== undefined &&
      (!Number.isInteger(d.weight) || (d.weight as number) < 0 || (d.weight as number) > 1_000_000)
    ) {
      ctx.reasons.push(reason(`${p}.weight`, 'weight must be a whole number from 0 to 1000000 in Gateway API'))
    }
    const t = target(d.destination, `${p}.destination`, ctx)
    const headers = headersOf(d.headers, `${p}.headers`, ctx)
    if (!t) return
    // Istio sends all traffic to a lone destination whatever its weight; Gateway API sends none to
    // weight 0, so the weight is always written, and never 0 for a single backend.
    const weight = route.length === 1 ? (weights[0]! > 0 ? weights[0]! : 1) : weights[k]!
    const dest: DestinationDraft = {...t, weight}
    if (headers.request) dest.requestHeaders = headers.request
    if (headers.response) dest.responseHeaders = headers.response
    destinations.push(dest)
  })
  if (route.length > 1 && weights.every((w) => w === 0)) {
    ctx.reasons.push(
      reason(
        `${path}.route`,
        `${route.length} destinations without weights: invalid in Istio ("total destination weight = 0"), nothing to convert`,
      ),
    )
  }
  if (route.length > LIMITS.backendRefs)
    ctx.reasons.push(
      reason(
        `${path}.route`,
        `${route.length} destinations: an HTTPRoute rule holds at most ${LIMITS.backendRefs} backendRefs`,
      ),
    )
  return {route, destinations}
}
