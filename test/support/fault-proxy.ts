// A loopback proxy in front of a real kube-apiserver, with its own request log and fault injection:
// the fault tests run against the real server's behaviour and still count requests and inject
// 429/503 (with Retry-After), latency and dropped connections (before the server saw the request, or
// after it answered — the write happened, the client sees a reset).
//
// Same API as the in-repo test server's (test/support/apiserver: `requests`, `requestsMatching`,
// `resetRequestLog`, `faults.add`, `kubeconfig`), the same matching rules (apiserver/faults.ts) and the
// same URL → verb/resource parsing (apiserver/http/request-info.ts). What the proxy cannot see in the
// URL it asks the target: the kind from discovery, the user from a SelfSubjectReview made with the
// request's own credentials (both cached).
//
// It listens on plain http://127.0.0.1 (client-node sends bearer tokens there; kubectl and client-go
// do not — the proxy is for the tool under test, not for kubectl) and forwards to the target over
// HTTPS (or HTTP), streaming responses as they come, so watches work through it.
import {
  Agent as HttpAgent,
  type ClientRequest,
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  request as httpRequest,
  type RequestOptions,
  type ServerResponse,
} from 'node:http'
import {Agent as HttpsAgent, request as httpsRequest} from 'node:https'
import type {AddressInfo} from 'node:net'

import {stringify} from 'yaml'

import {statusForCode} from './apiserver/errors.js'
import {type FaultEffect, Faults, filterRequests, type RequestFilter, type RequestLogEntry} from './apiserver/faults.js'
import {parseRequestInfo, requestLogEntry} from './apiserver/http/request-info.js'

export type {ActiveFault, FaultRule, RequestFilter, RequestLogEntry} from './apiserver/faults.js'

export interface FaultProxyOptions {
  /** The API server to forward to, e.g. https://127.0.0.1:6443. */
  target: string
  /** Certificate authority (PEM) to verify the target with; without it the target is not verified. */
  ca?: string
}

export interface FaultProxy {
  /** http://127.0.0.1:PORT */
  readonly url: string
  /** The request log (live array; entries are appended as requests arrive). */
  readonly requests: readonly RequestLogEntry[]
  requestsMatching(filter?: RequestFilter): RequestLogEntry[]
  resetRequestLog(): void
  readonly faults: Faults
  /** A kubeconfig that sends a bearer token (or other kubeconfig `user` credentials, e.g. an exec plugin) through the proxy. */
  kubeconfig(credentials: string | Record<string, unknown>): string
  close(): Promise<void>
}

/** Headers that belong to one connection, not to the request (RFC 9110 §7.6.1). */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'host',
])

const endToEnd = (headers: IncomingHttpHeaders): IncomingHttpHeaders =>
  Object.fromEntries(Object.entries(headers).filter(([k]) => !HOP_BY_HOP.has(k)))

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

async function readBody(stream: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = []
  for await (const chunk of stream) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks)
}

/** The target's answers to the proxy's own questions (discovery, who is asking), cached. */
class TargetFacts {
  private readonly kinds = new Map<string, {at: number; byResource: Map<string, string>}>()
  private readonly users = new Map<string, Promise<string>>()

  constructor(
    private readonly send: (
      method: string,
      path: string,
      authorization: string,
      body?: string,
    ) => Promise<{status: number; body: Buffer}>,
  ) {}

  /** The kind served at group/version/resource; discovery is fetched again (at most once a second) when it does not know it. */
  async kind(
    group: string,
    version: string,
    resource: string,
    authorization: string | undefined,
  ): Promise<string | undefined> {
    if (!authorization || !resource || !version) return undefined
    const key = `${group}/${version}`
    let cached = this.kinds.get(key)
    if (!cached || (!cached.byResource.has(resource) && Date.now() - cached.at > 1000)) {
      const res = await this.send('GET', group ? `/apis/${group}/${version}` : `/api/${version}`, authorization).catch(
        () => undefined,
      )
      const byResource = new Map<string, string>()
      if (res?.status === 200)
        for (const r of (JSON.parse(res.body.toString()) as {resources: {name: string; kind: string}[]}).resources)
          byResource.set(r.name, r.kind)
      cached = {at: Date.now(), byResource}
      this.kinds.set(key, cached)
    }
    return cached.byResource.get(resource)
  }

  /** The user the target authenticates `authorization` as ('' when it does not). */
  user(authorization: string | undefined): Promise<string> {
    if (!authorization) return Promise.resolve('')
    let user = this.users.get(authorization)
    if (!user) {
      const review = JSON.stringify({apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview'})
      user = this.send('POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews', authorization, review)
        .then((res) =>
          res.status === 201
            ? ((JSON.parse(res.body.toString()) as {status?: {userInfo?: {username?: string}}}).status?.userInfo
                ?.username ?? '')
            : '',
        )
        .catch(() => '')
      // A rejected credential may become valid (a token file rewritten): ask again next time.
      void user.then((u) => (u === '' ? this.users.delete(authorization) : undefined))
      this.users.set(authorization, user)
    }
    return user
  }
}

let nextId = 1

type Forward = (options: RequestOptions, onResponse: (res: IncomingMessage) => void) => ClientRequest

/** Requests to the target (over one keep-alive agent), and the proxy's own questions to it. */
function targetClient(opts: FaultProxyOptions): {forward: Forward; facts: TargetFacts; close(): void} {
  const target = new URL(opts.target)
  const secure = target.protocol === 'https:'
  const agent = secure
    ? new HttpsAgent({keepAlive: true, ...(opts.ca ? {ca: opts.ca} : {rejectUnauthorized: false})})
    : new HttpAgent({keepAlive: true})
  const forward: Forward = (options, onResponse) =>
    (secure ? httpsRequest : httpRequest)(
      {protocol: target.protocol, hostname: target.hostname, port: target.port, agent, ...options},
      onResponse,
    )
  const send = (method: string, path: string, authorization: string, body?: string) =>
    new Promise<{status: number; body: Buffer}>((resolve, reject) => {
      const req = forward(
        {
          method,
          path,
          headers: {authorization, accept: 'application/json', ...(body ? {'content-type': 'application/json'} : {})},
        },
        (res) => {
          void readBody(res).then((b) => resolve({status: res.statusCode ?? 0, body: b}), reject)
        },
      )
      req.on('error', reject)
      req.end(body)
    })
  return {forward, facts: new TargetFacts(send), close: () => agent.destroy()}
}

/** The log entry for a request, as the in-repo server describes requests (apiserver/http/request-info.ts). */
async function logEntry(facts: TargetFacts, req: IncomingMessage, url: URL): Promise<RequestLogEntry> {
  const info = parseRequestInfo((req.method ?? 'GET').toUpperCase(), url.pathname, url.searchParams)
  const authorization = req.headers.authorization
  const [user, kind] = await Promise.all([
    facts.user(authorization),
    info.resourceRequest ? facts.kind(info.group, info.version, info.resource, authorization) : undefined,
  ])
  return requestLogEntry(nextId++, req.headers, url, info, {user, kind})
}

/** One request's outcome, recorded in its log entry. */
class Outcome {
  constructor(
    readonly entry: RequestLogEntry,
    private readonly req: IncomingMessage,
  ) {}
  finish(status: number | undefined, reason?: string): void {
    if (status !== undefined) this.entry.status = status
    if (reason) this.entry.reason = reason
    this.entry.finishedAt ??= Date.now()
  }
  /** Hang up on the client: it sees a reset, no answer. */
  drop(): void {
    this.entry.dropped = true
    this.finish(undefined)
    this.req.socket.destroy()
  }
}

/** Answers in the target's place, with the Status body the real server sends for that code. */
function answerWithStatus(res: ServerResponse, effect: FaultEffect, outcome: Outcome): void {
  const err = statusForCode(effect.status!, effect.message, effect.retryAfterSeconds)
  const text = JSON.stringify(err.status)
  res.writeHead(err.code, {
    'Content-Type': 'application/json',
    'Content-Length': Buffer.byteLength(text),
    'Cache-Control': 'no-cache, private',
    ...err.headers,
  })
  res.end(text)
  outcome.finish(err.code, err.status.reason)
}

/** Sends the request on to the target and its answer back as it streams in (or hangs up after the write, for 'after-write'). */
function forwardToTarget(
  forward: Forward,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  body: Buffer,
  effect: FaultEffect,
  outcome: Outcome,
): void {
  const upstream = forward(
    {method: outcome.entry.method, path: url.pathname + url.search, headers: endToEnd(req.headers)},
    (answer) => {
      const status = answer.statusCode ?? 502
      const settle = (then: () => void) => void readBody(answer).then(then, then)
      // The target has processed the request; wait for its whole answer, then hang up instead.
      if (effect.drop === 'after-write') return settle(() => outcome.drop())
      // The client gave up while the request was held (its timeout): the server still processed it,
      // as it would a slow request; nobody is left to answer.
      if (res.destroyed) return settle(() => outcome.finish(status))
      res.writeHead(status, endToEnd(answer.headers))
      // A watch's headers come long before its first event: send them now, not with the first chunk.
      res.flushHeaders()
      outcome.entry.status = status
      const errorBody: Buffer[] = []
      answer.on('data', (chunk: Buffer) => {
        if (status >= 400) errorBody.push(chunk)
        res.write(chunk)
      })
      answer.on('end', () => {
        res.end()
        outcome.finish(status, status >= 400 ? statusReason(Buffer.concat(errorBody)) : undefined)
      })
      answer.on('error', () => outcome.drop())
    },
  )
  upstream.on('error', () => outcome.drop())
  res.on('error', () => undefined)
  // The client hung up (a watch it no longer wants, a timeout): stop the forwarded request too.
  res.on('close', () => {
    if (!res.writableFinished) upstream.destroy()
  })
  upstream.end(body)
}

function statusReason(body: Buffer): string | undefined {
  try {
    return (JSON.parse(body.toString()) as {reason?: string}).reason
  } catch {
    return undefined
  }
}

export async function startFaultProxy(opts: FaultProxyOptions): Promise<FaultProxy> {
  const target = targetClient(opts)
  const log: RequestLogEntry[] = []
  const faults = new Faults()

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost')
    const outcome = new Outcome(await logEntry(target.facts, req, url), req)
    log.push(outcome.entry)
    const fault = faults.pick(outcome.entry)
    if (fault) outcome.entry.fault = fault.name ?? 'fault'
    const effect = fault?.effect ?? {}
    // The whole request first: a client that dies while its request is held (latency) has still sent
    // it, and the server must still see it, as a slow server would.
    const body = await readBody(req)
    if (effect.latencyMs) await sleep(effect.latencyMs)
    if (effect.drop === 'before') return outcome.drop()
    if (effect.status) return answerWithStatus(res, effect, outcome)
    forwardToTarget(target.forward, req, res, url, body, effect, outcome)
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (res.headersSent) return void req.socket.destroy()
      res.writeHead(502, {'Content-Type': 'text/plain'})
      res.end(`fault proxy: ${error instanceof Error ? error.message : String(error)}`)
    })
  })
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`

  return {
    url,
    requests: log,
    requestsMatching: (filter: RequestFilter = {}) => filterRequests(log, filter),
    resetRequestLog: () => void (log.length = 0),
    faults,
    kubeconfig: (credentials) =>
      stringify({
        apiVersion: 'v1',
        kind: 'Config',
        // The tool accepts a plain-http server only when told so (as kubectl's users must say it).
        clusters: [{name: 'fault-proxy', cluster: {server: url, 'insecure-skip-tls-verify': true}}],
        users: [{name: 'user', user: typeof credentials === 'string' ? {token: credentials} : credentials}],
        contexts: [{name: 'fault-proxy', context: {cluster: 'fault-proxy', user: 'user'}}],
        'current-context': 'fault-proxy',
      }),
    close: async () => {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
      target.close()
    },
  }
}
