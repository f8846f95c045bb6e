// The HTTP front: authentication, fault injection, request log, authorization, routing to
// discovery and resource operations, body decoding and v1.Status error responses.
import {randomUUID} from 'node:crypto'
import type {IncomingMessage, ServerResponse} from 'node:http'
import {parse as parseYaml} from 'yaml'
import {
  ApiCore,
  PATCH_TYPES,
  type DeleteOptions,
  type FieldValidation,
  type Result,
  type WriteOptions,
} from '../api-core.js'
import {authorize, forbiddenMessage, type Authenticator, type Identity, type RequestAttributes} from '../auth/authz.js'
import {
  ApiError,
  badRequest,
  fieldError,
  forbidden,
  internalError,
  invalid,
  methodNotAllowed,
  resourceNotFound,
  statusForCode,
  unauthorized,
  type FieldError,
} from '../errors.js'
import type {Faults, RequestLogEntry} from '../faults.js'
import type {JsonObject} from '../types.js'
import {parseRequestInfo, requestLogEntry, type RequestInfo} from './request-info.js'
import type {WatchHub} from './watch.js'

export interface HandlerDeps {
  core: ApiCore
  authn: Authenticator
  faults: Faults
  watches: WatchHub
  log: RequestLogEntry[]
  serverAddress: () => string
  /** Emulated Kubernetes version for /version. */
  kubeVersion: {major: string; minor: string; gitVersion: string}
}

let nextRequestId = 1

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

class DroppedBeforeProcessing extends Error {}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = []
  for await (const c of req) chunks.push(c as Buffer)
  return Buffer.concat(chunks)
}

function mediaType(contentType: string | undefined): string {
  return (contentType ?? '').split(';')[0]!.trim().toLowerCase()
}

function decodeBody(raw: Buffer, contentType: string, what: 'object' | 'patch'): unknown {
  const text = raw.toString('utf8')
  if (text.trim() === '') return undefined
  if (contentType.includes('yaml')) {
    try {
      return parseYaml(text)
    } catch (e) {
      throw badRequest(`error decoding YAML: ${(e as Error).message}`)
    }
  }
  try {
    return JSON.parse(text)
  } catch (e) {
    throw badRequest(
      what === 'object'
        ? `couldn't get version/kind; json parse error: ${(e as Error).message}`
        : `error decoding patch: ${(e as Error).message}`,
    )
  }
}

function validateOptions(kind: string, params: URLSearchParams): {dryRun: boolean; fieldValidation: FieldValidation} {
  const errs: FieldError[] = []
  const dry = params.getAll('dryRun')
  for (const d of dry) if (d !== 'All') errs.push(fieldError.notSupported('dryRun', d, ['All']))
  const fm = params.get('fieldManager')
  if (fm !== null && fm.length > 128) errs.push(fieldError.tooLong('fieldManager', 128))
  if (fm !== null && /[^\x20-\x7e]/.test(fm))
    errs.push(fieldError.invalid('fieldManager', fm, 'must only contain printable characters'))
  const fv = params.get('fieldValidation') ?? 'Warn'
  const allowed = ['Ignore', 'Warn', 'Strict']
  const normalized = allowed.find((a) => a.toLowerCase() === fv.toLowerCase())
  if (!normalized) errs.push(fieldError.notSupported('fieldValidation', fv, allowed))
  if (errs.length) throw invalid('meta.k8s.io', kind, '', errs)
  return {dryRun: dry.includes('All'), fieldValidation: (normalized ?? 'Warn') as FieldValidation}
}

export function createHandler(deps: HandlerDeps): (req: IncomingMessage, res: ServerResponse) => void {
  const {core, authn, faults, watches, log} = deps
  return (req, res) => {
    void handle(req, res).catch((e) => {
      if (!res.headersSent && !res.destroyed)
        writeError(res, e instanceof ApiError ? e : internalError((e as Error).message))
    })
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost')
    const method = (req.method ?? 'GET').toUpperCase()
    const info = parseRequestInfo(method, url.pathname, url.searchParams)
    const identity = authn.authenticate(req.headers.authorization)
    const resolved = info.resourceRequest ? core.registry.resolve(info.group, info.version, info.resource) : undefined
    const entry = requestLogEntry(nextRequestId++, req.headers, url, info, {
      user: identity?.user ?? '',
      ...(resolved ? {kind: resolved.rt.kind} : {}),
    })
    log.push(entry)
    const finish = (status: number | undefined, reason?: string) => {
      if (status !== undefined) entry.status = status
      if (reason) entry.reason = reason
      entry.finishedAt = Date.now()
    }
    const fault = faults.pick(entry)
    if (fault) entry.fault = fault.name ?? 'fault'

    try {
      if (fault?.effect.latencyMs) await sleep(fault.effect.latencyMs)
      if (fault?.effect.drop === 'before') throw new DroppedBeforeProcessing()
      if (fault?.effect.status) {
        const err = statusForCode(fault.effect.status, fault.effect.message, fault.effect.retryAfterSeconds)
        await readBody(req)
        writeError(res, err)
        finish(err.code, err.status.reason)
        return
      }
      if (!identity) throw unauthorized()
      const result = await route(req, res, url, info, identity, entry)
      if (result === 'streaming') return
      if (fault?.effect.drop === 'after-write') {
        entry.dropped = true
        finish(undefined)
        req.socket.destroy()
        return
      }
      writeJson(res, result.status, result.body, result.warnings)
      finish(result.status)
    } catch (e) {
      if (e instanceof DroppedBeforeProcessing) {
        entry.dropped = true
        finish(undefined)
        req.socket.destroy()
        return
      }
      const err = e instanceof ApiError ? e : internalError((e as Error).stack ?? String(e))
      if (fault?.effect.drop === 'after-write') {
        entry.dropped = true
        finish(undefined)
        req.socket.destroy()
        return
      }
      writeError(res, err)
      finish(err.code, err.status.reason)
    }
  }

  async function route(
    req: IncomingMessage,
    res: ServerResponse,
    url: URL,
    info: RequestInfo,
    identity: Identity,
    entry: RequestLogEntry,
  ): Promise<Result | 'streaming'> {
    const attrs: RequestAttributes = {
      user: identity.user,
      verb: info.authVerb,
      resourceRequest: info.resourceRequest,
      apiGroup: info.group,
      resource: info.resource,
      subresource: info.subresource,
      namespace: info.namespace,
      name: info.name,
      path: url.pathname,
    }
    const isSsar =
      info.resourceRequest && info.group === 'authorization.k8s.io' && info.resource === 'selfsubjectaccessreviews'
    const isSsr =
      info.resourceRequest && info.group === 'authentication.k8s.io' && info.resource === 'selfsubjectreviews'
    if (!((isSsar || isSsr) && !identity.anonymous)) {
      const decision = authorize(identity, attrs)
      if (!decision.allowed) {
        if (!info.resourceRequest) throw forbidden('', '', '', forbiddenMessage(attrs))
        throw forbidden(info.group, info.resource, info.name, forbiddenMessage(attrs))
      }
    }
    if (!info.resourceRequest) return discovery(url, info)

    const resolved = core.registry.resolve(info.group, info.version, info.resource)
    if (!resolved || info.extra.length) throw resourceNotFound()
    const {rt, version: sv} = resolved
    const ns = info.namespace
    if (!rt.namespaced && ns && !(info.group === '' && info.resource === 'namespaces')) throw resourceNotFound()
    if (info.subresource && !(info.subresource === 'status' && rt.hasStatus)) throw resourceNotFound()
    const q = url.searchParams
    const method = info.verb

    if (rt.virtual) {
      if (method !== 'create' || info.name) throw methodNotAllowed()
      const raw = await readBody(req)
      if (isSsr) return core.selfSubjectReview(identity)
      return core.selfSubjectAccessReview(identity, decodeBody(raw, mediaType(req.headers['content-type']), 'object'))
    }

    const writeOpts = (kind: string): WriteOptions => {
      const o = validateOptions(kind, q)
      const fm = q.get('fieldManager')
      const ua = req.headers['user-agent']
      return {...o, ...(fm ? {fieldManager: fm} : {}), ...(ua ? {userAgent: ua} : {})}
    }
    const objectNamespace = rt.namespaced ? ns : ''

    switch (method) {
      case 'get':
        return core.get(rt, sv.name, objectNamespace, info.name)
      case 'list':
        return core.list(rt, sv.name, rt.namespaced && ns ? ns : undefined, listOptions(q))
      case 'watch': {
        const sel = core.selectors(rt, {
          ...(q.get('labelSelector') ? {labelSelector: q.get('labelSelector')!} : {}),
          ...(q.get('fieldSelector') ? {fieldSelector: q.get('fieldSelector')!} : {}),
        })
        const rv = q.get('resourceVersion') ?? undefined
        const timeout = q.get('timeoutSeconds')
        watches.serve(
          res,
          {
            rt,
            version: sv.name,
            ...(rt.namespaced && ns ? {namespace: ns} : {}),
            selectors: sel,
            ...(rv !== undefined ? {resourceVersion: rv} : {}),
            ...(timeout ? {timeoutSeconds: Number(timeout)} : {}),
            allowWatchBookmarks: q.get('allowWatchBookmarks') === 'true',
            sendInitialEvents: q.get('sendInitialEvents') === 'true',
          },
          () => {
            entry.finishedAt = Date.now()
          },
        )
        entry.status = 200
        return 'streaming'
      }
      case 'create': {
        if (info.name || info.subresource) throw methodNotAllowed()
        if (rt.namespaced && !ns) throw methodNotAllowed()
        const opts = writeOpts('CreateOptions')
        const body = decodeBody(await readBody(req), mediaType(req.headers['content-type']), 'object')
        return core.create(rt, sv, objectNamespace, body, opts)
      }
      case 'update': {
        if (!info.name) throw methodNotAllowed()
        const opts = writeOpts('UpdateOptions')
        const body = decodeBody(await readBody(req), mediaType(req.headers['content-type']), 'object')
        return core.update(rt, sv, objectNamespace, info.name, info.subresource, body, opts)
      }
      case 'patch': {
        if (!info.name) throw methodNotAllowed()
        const opts = writeOpts('PatchOptions')
        const ct = mediaType(req.headers['content-type'])
        const raw = await readBody(req)
        const forceParam = q.get('force')
        const patchOpts = {
          ...opts,
          ...(forceParam !== null ? {force: forceParam === 'true' || forceParam === '1'} : {}),
          authorizeCreate: () => authorize(identity, {...attrs, verb: 'create'}),
        }
        const known = (Object.values(PATCH_TYPES) as string[]).includes(ct)
        const body = known ? decodeBody(raw, ct === PATCH_TYPES.apply ? 'yaml' : ct, 'patch') : undefined
        return core.patch(rt, sv, objectNamespace, info.name, info.subresource, ct, body, patchOpts)
      }
      case 'delete':
      case 'deletecollection': {
        if (info.subresource) throw methodNotAllowed()
        if (method === 'deletecollection' && rt.namespaced && !ns) throw methodNotAllowed()
        const raw = await readBody(req)
        const decoded = decodeBody(raw, 'json', 'object') as JsonObject | undefined
        // As kube-apiserver (handlers/delete.go): DeleteOptions come from the body when there is one, and the
        // query is then ignored — dryRun=All in the query of a DELETE with a body deletes for real.
        const fromBody = decoded !== undefined
        const bodyOpts = decoded ?? {}
        const dryRunAll = fromBody
          ? Array.isArray(bodyOpts.dryRun) && bodyOpts.dryRun.includes('All')
          : q.getAll('dryRun').includes('All')
        if (!fromBody)
          validateOptions(
            'DeleteOptions',
            new URLSearchParams([...q.getAll('dryRun').map((d) => ['dryRun', d] as [string, string])]),
          )
        const policy = ((fromBody ? bodyOpts.propagationPolicy : q.get('propagationPolicy')) ??
          undefined) as DeleteOptions['propagationPolicy']
        const orphan = fromBody ? bodyOpts.orphanDependents : q.get('orphanDependents')
        const delOpts: DeleteOptions = {
          dryRun: dryRunAll,
          ...(policy
            ? {propagationPolicy: policy}
            : orphan === true || orphan === 'true'
              ? {propagationPolicy: 'Orphan'}
              : {}),
          ...(isPreconditions(bodyOpts.preconditions) ? {preconditions: bodyOpts.preconditions} : {}),
        }
        if (policy && !['Orphan', 'Background', 'Foreground'].includes(policy))
          throw invalid('meta.k8s.io', 'DeleteOptions', '', [
            fieldError.notSupported('propagationPolicy', policy, ['Foreground', 'Background', 'Orphan']),
          ])
        if (method === 'delete') return core.delete(rt, sv, objectNamespace, info.name, delOpts)
        return core.deleteCollection(rt, sv, rt.namespaced && ns ? ns : undefined, {...delOpts, ...listOptions(q)})
      }
      default:
        throw methodNotAllowed()
    }
  }

  function discovery(url: URL, info: RequestInfo): Result {
    const registry = core.registry
    const ok = (body: JsonObject): Result => ({status: 200, body, warnings: []})
    switch (info.discovery?.kind) {
      case 'version':
        return ok({
          major: deps.kubeVersion.major,
          minor: deps.kubeVersion.minor,
          gitVersion: deps.kubeVersion.gitVersion,
          gitCommit: '0000000000000000000000000000000000000000',
          gitTreeState: 'clean',
          buildDate: '2024-12-11T00:00:00Z',
          goVersion: 'go1.23.4',
          compiler: 'gc',
          platform: `${process.platform}/${process.arch === 'x64' ? 'amd64' : process.arch}`,
        })
      case 'api':
        return ok(registry.apiVersions(deps.serverAddress()))
      case 'apiv1':
      case 'groupVersion': {
        const list = registry.apiResourceList(info.group, info.version)
        if (!list) throw resourceNotFound()
        return ok(list)
      }
      case 'apis':
        return ok(registry.apiGroupList())
      case 'group': {
        const g = registry.apiGroup(info.group)
        if (!g) throw resourceNotFound()
        return ok(g)
      }
    }
    if (['/healthz', '/livez', '/readyz'].includes(url.pathname))
      return {status: 200, body: {__text: 'ok'}, warnings: []}
    throw resourceNotFound()
  }
}

function isPreconditions(v: unknown): v is {uid?: string; resourceVersion?: string} {
  return typeof v === 'object' && v !== null
}

function listOptions(q: URLSearchParams) {
  const limit = q.get('limit')
  return {
    ...(q.get('labelSelector') ? {labelSelector: q.get('labelSelector')!} : {}),
    ...(q.get('fieldSelector') ? {fieldSelector: q.get('fieldSelector')!} : {}),
    ...(limit ? {limit: Number(limit)} : {}),
    ...(q.get('continue') ? {continue: q.get('continue')!} : {}),
    ...(q.get('resourceVersion') !== null ? {resourceVersion: q.get('resourceVersion')!} : {}),
    ...(q.get('resourceVersionMatch') ? {resourceVersionMatch: q.get('resourceVersionMatch')!} : {}),
  }
}

function warningHeader(text: string): string {
  return `299 - ${JSON.stringify(text)}`
}

function writeJson(res: ServerResponse, status: number, body: JsonObject, warnings: string[]): void {
  if (res.writableEnded || res.destroyed) return
  const headers: Record<string, string | string[]> = {'Audit-Id': randomUUID(), 'Cache-Control': 'no-cache, private'}
  if (warnings.length) headers['Warning'] = [...new Set(warnings)].map(warningHeader)
  if (typeof body.__text === 'string') {
    res.writeHead(status, {...headers, 'Content-Type': 'text/plain; charset=utf-8'})
    res.end(body.__text)
    return
  }
  const text = JSON.stringify(body)
  res.writeHead(status, {...headers, 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text)})
  res.end(text)
}

function writeError(res: ServerResponse, err: ApiError): void {
  if (res.writableEnded || res.destroyed) return
  const text = JSON.stringify(err.status)
  res.writeHead(err.code, {
    'Audit-Id': randomUUID(),
    'Cache-Control': 'no-cache, private',
    'Content-Type': 'application/json',
    'Content-Length': Buffer.byteLength(text),
    ...err.headers,
  })
  res.end(text)
}
