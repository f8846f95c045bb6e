// How HttpKubeClient's requests reach the API server: with the credentials and agent of client-node's
// KubeConfig (exec plugins, auth providers, proxies: everything a kubeconfig can say), or with the light
// kubeconfig (src/kube/light-config.ts: tokens, client certificates, CAs), which spares the inventory path
// client-node's import. Both send over node:https (node:http for a plain-http server) with the same
// connect and TLS handshake timeouts (sendRequest).
import http from 'node:http'
import https from 'node:https'
import type {Socket} from 'node:net'
import {TLSSocket} from 'node:tls'
import {gunzipSync} from 'node:zlib'

import type {KubeConfig} from '@kubernetes/client-node'

import {ExitCode} from '../exit-codes.js'
import {UserError} from '../errors.js'
import type {LightKubeConfig} from './light-config.js'

export interface SendInit {
  method: string
  headers: Record<string, string>
  body?: string
  signal?: AbortSignal
}

/** The part of a fetch Response the client reads. */
export interface ResponseLike {
  status: number
  headers: {get(name: string): string | null; forEach(cb: (value: string, name: string) => void): void}
  text(): Promise<string>
}

export interface Transport {
  readonly context: string
  readonly server: string
  /** The kubeconfig user's name (for error messages). */
  readonly userName?: string
  /** Send one request with the current credentials (an exec plugin may run first). */
  send(url: string, init: SendInit): Promise<ResponseLike>
  /** The same kubeconfig loaded again after a 401: a re-login or a rotated token file is picked up. */
  reload(): Promise<Transport>
}

/**
 * How long a new connection may take to be established, and then its TLS handshake to complete, as kubectl's
 * dial and TLS handshake timeouts: a server that accepts connections and never answers fails after this,
 * whatever --request-timeout says (which bounds the whole request once connected).
 */
export const CONNECT_TIMEOUT_MS = 10_000

type ConnectPhase = 'connect' | 'TLS handshake' | 'proxy CONNECT'

/**
 * A connection that was not established, or whose TLS handshake did not complete, in time; with a proxy, the
 * proxy that did not open the tunnel (`proxy`: its host:port).
 */
export class ConnectTimeoutError extends Error {
  override readonly name = 'ConnectTimeoutError'
  constructor(
    readonly phase: ConnectPhase,
    readonly address: string,
    readonly timeoutMs: number,
    readonly proxy?: string,
  ) {
    const what =
      phase === 'proxy CONNECT'
        ? `CONNECT to ${address} through the proxy ${proxy}`
        : phase === 'connect'
          ? `connecting to ${address}`
          : `TLS handshake with ${address}`
    super(`${what} timed out after ${timeoutMs / 1000}s`)
  }
}

/**
 * Bound a new socket's connect and TLS handshake (a reused keep-alive socket is already both): when a phase
 * takes longer than `timeoutMs`, `fail` is called with a ConnectTimeoutError and `request` destroyed with it.
 * Through a proxy (`proxy`: its host:port) the agent hands out the socket only once the proxy has opened the
 * tunnel, so that wait is bounded from the start of the request (a request destroyed before it has a socket
 * reports nothing: hence `fail`); the TLS handshake with the server then runs inside the tunnel.
 */
export function limitConnect(
  request: http.ClientRequest,
  address: string,
  {timeoutMs = CONNECT_TIMEOUT_MS, proxy, fail}: {timeoutMs?: number; proxy?: string; fail?: (e: Error) => void} = {},
): void {
  let timer: NodeJS.Timeout | undefined
  const arm = (phase: ConnectPhase) => {
    clearTimeout(timer)
    timer = setTimeout(() => {
      const error = new ConnectTimeoutError(phase, address, timeoutMs, proxy)
      fail?.(error)
      request.destroy(error)
    }, timeoutMs)
  }
  const done = () => clearTimeout(timer)
  request.once('close', done)
  if (proxy) arm('proxy CONNECT')
  request.once('socket', (socket: Socket) => {
    if (request.reusedSocket) return done()
    const tls = socket instanceof TLSSocket
    if (socket.connecting) {
      arm('connect')
      socket.once('connect', () => (tls ? arm('TLS handshake') : done()))
    } else if (tls) arm('TLS handshake')
    else return done()
    if (tls) socket.once('secureConnect', done)
    socket.once('close', done)
  })
}

/** What sendRequest sends with: the agent (TLS settings, proxy), the credentials' headers, the proxy's URL. */
interface Connection {
  agent: http.Agent
  headers: Record<string, string>
  proxy?: string
}

/** One request over node:https (node:http for a plain-http server), its connect and TLS handshake bounded. */
function sendRequest(url: string, init: SendInit, connection: Connection): Promise<ResponseLike> {
  const headers: Record<string, string> = {'Accept-Encoding': 'gzip', ...init.headers, ...connection.headers}
  if (init.body !== undefined) headers['Content-Length'] = String(Buffer.byteLength(init.body))
  const proxy = connection.proxy ? hostOf(connection.proxy) : undefined
  return new Promise((resolve, reject) => {
    const request = (url.startsWith('http://') ? http : https).request(
      url,
      {
        method: init.method,
        headers,
        agent: connection.agent,
        ...(init.signal ? {signal: init.signal} : {}),
      },
      (response) => {
        const chunks: Buffer[] = []
        response.on('data', (chunk: Buffer) => chunks.push(chunk))
        response.on('error', reject)
        response.on('end', () => {
          try {
            const raw = Buffer.concat(chunks)
            const text = (response.headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw).toString('utf8')
            resolve(responseLike(response.statusCode ?? 0, response.headers, text))
          } catch (error) {
            reject(error)
          }
        })
      },
    )
    limitConnect(request, hostOf(url), {fail: reject, ...(proxy ? {proxy} : {})})
    request.on('error', reject)
    request.end(init.body)
  })
}

/** host:port of a URL, the port spelled out (as a proxy's CONNECT names it). */
function hostOf(url: string): string {
  const u = new URL(url)
  const port = u.port || (u.protocol === 'http:' ? '80' : u.protocol === 'https:' ? '443' : '')
  return port ? `${u.hostname}:${port}` : u.hostname
}

// Credentials from exec plugins are re-minted on every applyToFetchOptions call when the plugin sets no
// expiry (ECOSYSTEM §5.7); reuse them briefly instead of spawning the plugin once per request.
const AUTH_REUSE_MS = 30_000

/** A kubeconfig credential (exec) plugin failed: reported as such, never as an unreachable server. */
export class CredentialPluginError extends UserError {
  constructor(message: string, suggestion: string) {
    super(message, {exitCode: ExitCode.Failure, suggestion})
  }
}

/** Requests with client-node's credentials and agent; concurrent requests share one exec-plugin run. */
export class ClientNodeTransport implements Transport {
  readonly context: string
  readonly server: string
  readonly userName?: string
  private auth?: {at: number; connection: Promise<Connection>}

  /** `reloadConfig` loads the same files and context again; without it the loaded config is copied. */
  constructor(
    private readonly kc: KubeConfig,
    private readonly reloadConfig?: () => Promise<KubeConfig>,
  ) {
    this.context = kc.getCurrentContext()
    this.server = kc.getCurrentCluster()!.server.replace(/\/+$/, '')
    const user = kc.getCurrentUser()?.name
    if (user) this.userName = user
  }

  private connection(): Promise<Connection> {
    if (!this.auth || Date.now() - this.auth.at >= AUTH_REUSE_MS) {
      const connection = this.credentials().catch((error: unknown) => {
        throw this.credentialFailure(error)
      })
      const state = {at: Date.now(), connection}
      this.auth = state
      connection.catch(() => {
        if (this.auth === state) this.auth = undefined
      })
    }
    return this.auth.connection
  }

  /** client-node's headers (token, exec plugin, basic auth) and agent (TLS settings, proxy) for the current user. */
  private async credentials(): Promise<Connection> {
    // The agent's socket timeout: idle keep-alive sockets are closed after it, and a proxy agent (hpagent) gives
    // up its CONNECT request after it, whose open socket would otherwise keep the process alive after
    // limitConnect's failure. A socket in use only emits 'timeout', which nothing here listens to.
    const options: https.RequestOptions = {timeout: CONNECT_TIMEOUT_MS}
    await this.kc.applyToHTTPSOptions(options)
    const headers: Record<string, string> = {}
    for (const [k, v] of Object.entries(options.headers ?? {}))
      if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(', ') : String(v)
    if (options.auth) headers.Authorization = `Basic ${Buffer.from(options.auth).toString('base64')}`
    const proxy = this.kc.getCurrentCluster()?.proxyUrl
    return {agent: options.agent as http.Agent, headers, ...(proxy ? {proxy} : {})}
  }

  /**
   * Getting credentials failed before any request was sent. With an exec plugin that is the plugin's failure, not
   * the server's: say so, naming the command but never echoing what it printed (issue 20 §8: its stderr may hold
   * tokens or URLs with secrets).
   */
  private credentialFailure(error: unknown): unknown {
    const user = this.kc.getCurrentUser()
    const command =
      user?.exec?.command ?? (user?.authProvider?.config as {exec?: {command?: string}} | undefined)?.exec?.command
    if (!command) return error
    const why = (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'could not be started (not found)' : 'failed'
    return new CredentialPluginError(
      `the kubeconfig's credential plugin \`${command}\` (user ${user?.name ?? 'unknown'}, context ${this.context}) ${why}; no request was sent to ${this.server} (the plugin's output is not shown: it may hold secrets)`,
      `Run the plugin's login yourself (e.g. your cloud CLI's login), or check the exec section of user ${user?.name ?? ''} in the kubeconfig: \`kubectl config view --minify --context ${this.context}\`.`,
    )
  }

  async send(url: string, init: SendInit): Promise<ResponseLike> {
    return sendRequest(url, init, await this.connection())
  }

  async reload(): Promise<Transport> {
    return new ClientNodeTransport(
      this.reloadConfig ? await this.reloadConfig() : await copyConfig(this.kc),
      this.reloadConfig,
    )
  }
}

/** A fresh KubeConfig with the same content: its authenticators start without cached credentials. */
async function copyConfig(kc: KubeConfig): Promise<KubeConfig> {
  const {KubeConfig} = await import('@kubernetes/client-node')
  const copy = new KubeConfig()
  copy.loadFromOptions({
    clusters: kc.getClusters(),
    users: kc.getUsers(),
    contexts: kc.getContexts(),
    currentContext: kc.getCurrentContext(),
  })
  return copy
}

/** Requests over node:https (node:http for a plain-http server) with the light kubeconfig's token and agent. */
export class LightTransport implements Transport {
  readonly context: string
  readonly server: string
  readonly userName?: string

  /** `reload` loads the kubeconfig again (undefined when it now needs client-node: the caller's transport then). */
  constructor(
    private readonly config: LightKubeConfig,
    private readonly reloadConfig: () => Promise<Transport>,
  ) {
    this.context = config.context
    this.server = config.server
    if (config.userName) this.userName = config.userName
  }

  send(url: string, init: SendInit): Promise<ResponseLike> {
    const headers: Record<string, string> = this.config.token ? {Authorization: `Bearer ${this.config.token}`} : {}
    return sendRequest(url, init, {agent: this.config.agent, headers})
  }

  reload(): Promise<Transport> {
    return this.reloadConfig()
  }
}

function responseLike(status: number, raw: Record<string, string | string[] | undefined>, text: string): ResponseLike {
  const headers = new Map<string, string>()
  for (const [k, v] of Object.entries(raw))
    if (v !== undefined) headers.set(k.toLowerCase(), Array.isArray(v) ? v.join(', ') : v)
  return {
    status,
    headers: {
      get: (name) => headers.get(name.toLowerCase()) ?? null,
      forEach: (cb) => headers.forEach((v, k) => cb(v, k)),
    },
    text: () => Promise.resolve(text),
  }
}
