// URL → request attributes, as k8s.io/apiserver/pkg/endpoints/request.RequestInfoFactory
// derives them (namespace, resource, name, subresource, verb).
import type {IncomingHttpHeaders} from 'node:http'

import type {RequestLogEntry, Verb} from '../faults.js'

export interface RequestInfo {
  /** The HTTP method, upper case. */
  method: string
  resourceRequest: boolean
  path: string
  verb: Verb
  /** The authorization verb (watch, list, get, create, update, patch, delete, deletecollection, or the HTTP verb). */
  authVerb: string
  /** For discovery paths: which document. */
  discovery?: {kind: 'version' | 'api' | 'apiv1' | 'apis' | 'group' | 'groupVersion'; group?: string; version?: string}
  apiPrefix?: 'api' | 'apis'
  group: string
  version: string
  namespace: string
  resource: string
  name: string
  subresource: string
  /** Extra path parts after the subresource (never valid here). */
  extra: string[]
}

const NAMESPACE_SUBRESOURCES = new Set(['status', 'finalize'])

export function parseRequestInfo(method: string, pathname: string, query: URLSearchParams): RequestInfo {
  const parts = pathname
    .split('/')
    .filter((p) => p !== '')
    .map(decodeURIComponent)
  const base: RequestInfo = {
    method,
    resourceRequest: false,
    path: pathname,
    verb: 'other',
    authVerb: method.toLowerCase(),
    group: '',
    version: '',
    namespace: '',
    resource: '',
    name: '',
    subresource: '',
    extra: [],
  }
  if (parts[0] === 'version' && parts.length === 1) return {...base, verb: 'discovery', discovery: {kind: 'version'}}
  if (parts[0] !== 'api' && parts[0] !== 'apis') return base
  let rest: string[]
  let group = ''
  let version: string
  if (parts[0] === 'api') {
    if (parts.length === 1) return {...base, verb: 'discovery', discovery: {kind: 'api'}, apiPrefix: 'api'}
    version = parts[1]!
    if (parts.length === 2)
      return {...base, verb: 'discovery', discovery: {kind: 'apiv1', version}, apiPrefix: 'api', version}
    rest = parts.slice(2)
  } else {
    if (parts.length === 1) return {...base, verb: 'discovery', discovery: {kind: 'apis'}, apiPrefix: 'apis'}
    group = parts[1]!
    if (parts.length === 2)
      return {...base, verb: 'discovery', discovery: {kind: 'group', group}, apiPrefix: 'apis', group}
    version = parts[2]!
    if (parts.length === 3)
      return {
        ...base,
        verb: 'discovery',
        discovery: {kind: 'groupVersion', group, version},
        apiPrefix: 'apis',
        group,
        version,
      }
    rest = parts.slice(3)
  }
  const info: RequestInfo = {...base, resourceRequest: true, apiPrefix: parts[0] as 'api' | 'apis', group, version}
  let cur = rest
  if (cur[0] === 'namespaces' && cur.length > 1) {
    info.namespace = cur[1]!
    if (cur.length > 2 && !NAMESPACE_SUBRESOURCES.has(cur[2]!)) cur = cur.slice(2)
  }
  info.resource = cur[0] ?? ''
  info.name = cur[1] ?? ''
  info.subresource = cur[2] ?? ''
  info.extra = cur.slice(3)

  const watch = query.get('watch') === 'true' || query.get('watch') === '1'
  switch (method) {
    case 'GET':
    case 'HEAD':
      info.verb = info.name ? 'get' : watch ? 'watch' : 'list'
      break
    case 'POST':
      info.verb = 'create'
      break
    case 'PUT':
      info.verb = 'update'
      break
    case 'PATCH':
      info.verb = 'patch'
      break
    case 'DELETE':
      info.verb = info.name ? 'delete' : 'deletecollection'
      break
    default:
      info.verb = 'other'
  }
  info.authVerb = info.verb === 'other' ? method.toLowerCase() : info.verb
  return info
}

/**
 * The request log entry of a request as it arrives (no answer yet): what its URL says, who sent it
 * and the kind its resource serves (both as the caller resolved them).
 */
export function requestLogEntry(
  id: number,
  headers: IncomingHttpHeaders,
  url: URL,
  info: RequestInfo,
  who: {user: string; kind?: string | undefined},
): RequestLogEntry {
  return {
    id,
    method: info.method,
    path: url.pathname,
    verb: info.verb,
    user: who.user,
    ...(info.resourceRequest
      ? {
          group: info.group,
          version: info.version,
          resource: info.resource,
          ...(info.subresource ? {subresource: info.subresource} : {}),
          ...(who.kind ? {kind: who.kind} : {}),
          ...(info.namespace ? {namespace: info.namespace} : {}),
          ...(info.name ? {name: info.name} : {}),
        }
      : {}),
    query: Object.fromEntries(url.searchParams),
    ...(headers['content-type'] ? {contentType: headers['content-type']} : {}),
    ...(headers['user-agent'] ? {userAgent: headers['user-agent']} : {}),
    watch: info.verb === 'watch',
    dryRun: url.searchParams.getAll('dryRun').includes('All'),
    startedAt: Date.now(),
    dropped: false,
  }
}
