// How HttpKubeClient's requests reach the API server: with the credentials and TLS of client-node's
// KubeConfig (exec plugins, auth providers, proxies: everything a kubeconfig can say) over node-fetch, or
// with the light kubeconfig (src/kube/light-config.ts: tokens, client certificates, CAs) over node:https,
// which spares the inventory path client-node's import.
import http from 'node:http'
import https from 'node:https'
import type {Socket} from 'node:net'
import {TLSSocket} from 'node:tls'
import {gunzipSync} from 'node:zlib'

import type {KubeConfig} from '@kubernetes/client-node'
import type {RequestInit} from 'node-fetch'

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

/** A connection that was not established, or whose TLS handshake did not complete, in time. */
export class ConnectTimeoutError extends Error {
  override readonly name = 'ConnectTimeoutError'
  constructor(
    readonly phase: 'connect' | 'TLS handshake',
    readonly address: string,
    readonly timeoutMs: number,
  ) {
    super(
      `${phase === 'connect' ? 'connecting to' : 'TLS handshake with'} ${address} timed out after ${timeoutMs / 1000}s`,
    )
  }
}

/**
 * Bound a new socket's connect and TLS handshake (a reused keep-alive socket is already both). Destroys
 * `request` with a ConnectTimeoutError when a phase takes longer than `timeoutMs`.
 */
export function limitConnect(
  request: http.ClientRequest,
  socket: Socket,
  address: string,
  timeoutMs = CONNECT_TIMEOUT_MS,
): void {
  if (request.reusedSocket) return
  const tls = socket instanceof TLSSocket
  let timer: NodeJS.Timeout | undefined
  const arm = (phase: 'connect' | 'TLS handshake') => {
    clearTimeout(timer)
    timer = setTimeout(() => request.destroy(new ConnectTimeoutError(phase, address, timeoutMs)), timeoutMs)
  }
  const done = () => clearTimeout(timer)
  if (socket.connecting) {
    arm('connect')
    socket.once('connect', () => (tls ? arm('TLS handshake') : done()))
  } else if (tls) arm('TLS handshake')
  else return
  if (tls) socket.once('secureConnect', done)
  socket.once('close', done)
  request.once('close', done)
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
  private auth?: {at: number; init: Promise<RequestInit>}

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

  private init(): Promise<RequestInit> {
    if (!this.auth || Date.now() - this.auth.at >= AUTH_REUSE_MS) {
      const init = (this.kc.applyToFetchOptions({}) as unknown as Promise<RequestInit>).catch((error: unknown) => {
        throw this.credentialFailure(error)
      })
      const state = {at: Date.now(), init}
      this.auth = state
      init.catch(() => {
        if (this.auth === state) this.auth = undefined
      })
    }
    return this.auth.init
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
    const [base, {default: fetch}] = await Promise.all([this.init(), import('node-fetch')])
    const headers = {...init.headers}
    ;(base.headers as unknown as {forEach(cb: (v: string, k: string) => void): void} | undefined)?.forEach?.((v, k) => {
      headers[k] = v
    })
    return fetch(url, {
      method: init.method,
      headers,
      ...(init.body === undefined ? {} : {body: init.body}),
      agent: base.agent,
      ...(init.signal ? {signal: init.signal as never} : {}),
    })
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
    const headers: Record<string, string> = {
      'Accept-Encoding': 'gzip',
      ...init.headers,
      ...(this.config.token ? {Authorization: `Bearer ${this.config.token}`} : {}),
    }
    if (init.body !== undefined) headers['Content-Length'] = String(Buffer.byteLength(init.body))
    return new Promise((resolve, reject) => {
      const request = (url.startsWith('http://') ? http : https).request(
        url,
        {method: init.method, headers, agent: this.config.agent, ...(init.signal ? {signal: init.signal} : {})},
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
      request.on('socket', (socket) => limitConnect(request, socket, new URL(url).host))
      request.on('error', reject)
      request.end(init.body)
    })
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
