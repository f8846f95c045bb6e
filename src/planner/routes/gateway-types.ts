import {GATEWAY_API_GROUP} from '../vocab.js'
// The parts of Gateway API v1 HTTPRoute (standard channel, v1.6.1) that the VirtualService conversion
// writes. Field names and shapes follow config/crd/standard/gateway.networking.k8s.io_httproutes.yaml.

export const HTTPROUTE_API_VERSION = `${GATEWAY_API_GROUP}/v1`

export type PathMatchType = 'Exact' | 'PathPrefix' | 'RegularExpression'
export type ValueMatchType = 'Exact' | 'RegularExpression'

export interface HTTPPathMatch {
  type: PathMatchType
  value: string
}

/** A header or query parameter match. */
export interface HTTPValueMatch {
  name: string
  type: ValueMatchType
  value: string
}

export interface HTTPRouteMatch {
  path?: HTTPPathMatch
  headers?: HTTPValueMatch[]
  queryParams?: HTTPValueMatch[]
  method?: string
}

export interface HTTPHeader {
  name: string
  value: string
}

export interface HTTPHeaderModifier {
  set?: HTTPHeader[]
  add?: HTTPHeader[]
  remove?: string[]
}

export interface BackendObjectReference {
  name: string
  port: number
}

export interface HTTPPathModifier {
  type: 'ReplaceFullPath' | 'ReplacePrefixMatch'
  replaceFullPath?: string
  replacePrefixMatch?: string
}

export interface HTTPRequestRedirect {
  scheme?: 'http' | 'https'
  hostname?: string
  path?: HTTPPathModifier
  port?: number
  statusCode?: number
}

export interface HTTPURLRewrite {
  hostname?: string
  path?: HTTPPathModifier
}

export interface HTTPRequestMirror {
  backendRef: BackendObjectReference
  percent?: number
  fraction?: {numerator: number; denominator: number}
}

export interface HTTPCORS {
  allowOrigins?: string[]
  allowCredentials?: boolean
  allowMethods?: string[]
  allowHeaders?: string[]
  exposeHeaders?: string[]
  maxAge?: number
}

export type HTTPRouteFilter =
  | {type: 'RequestHeaderModifier'; requestHeaderModifier: HTTPHeaderModifier}
  | {type: 'ResponseHeaderModifier'; responseHeaderModifier: HTTPHeaderModifier}
  | {type: 'RequestMirror'; requestMirror: HTTPRequestMirror}
  | {type: 'RequestRedirect'; requestRedirect: HTTPRequestRedirect}
  | {type: 'URLRewrite'; urlRewrite: HTTPURLRewrite}
  | {type: 'CORS'; cors: HTTPCORS}

export interface HTTPBackendRef extends BackendObjectReference {
  weight: number
  filters?: HTTPRouteFilter[]
}

export interface HTTPRouteRule {
  name?: string
  matches?: HTTPRouteMatch[]
  filters?: HTTPRouteFilter[]
  backendRefs?: HTTPBackendRef[]
  timeouts?: {request?: string}
}

export interface ServiceParentRef {
  group: ''
  kind: 'Service'
  name: string
  port?: number
}

/** Limits of the v1.6.1 CRD (maxItems and the rules' total-matches CEL rule). */
export const LIMITS = {
  rules: 16,
  matchesPerRule: 64,
  totalMatches: 128,
  backendRefs: 16,
  filters: 16,
  headerMatches: 16,
  queryParamMatches: 16,
  headerModifierEntries: 16,
  corsList: 64,
  pathValue: 1024,
  headerValue: 4096,
  queryValue: 1024,
  headerName: 256,
  name: 253,
} as const

/** Enum of HTTPRouteMatch.method. */
export const HTTP_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'CONNECT', 'OPTIONS', 'TRACE', 'PATCH'])

/** Enum of HTTPRequestRedirectFilter.statusCode. */
export const REDIRECT_STATUS_CODES = new Set([301, 302, 303, 307, 308])
