// TestApiServer: wires store, registry, auth, faults and the HTTP handler together, loads
// the CRDs, and offers test helpers (kubeconfig, seeding, request log).
import {randomUUID} from 'node:crypto'
import {existsSync} from 'node:fs'
import {writeFile} from 'node:fs/promises'
import {createServer, type Server} from 'node:http'
import type {AddressInfo} from 'node:net'
import path from 'node:path'
import {fileURLToPath} from 'node:url'
import {stringify as toYaml} from 'yaml'
import {ApiCore} from './api-core.js'
import {ADMIN_TOKEN, Authenticator, type TokenUser} from './auth/authz.js'
import {Faults, filterRequests, type RequestFilter, type RequestLogEntry} from './faults.js'
import {createHandler} from './http/handler.js'
import {WatchHub} from './http/watch.js'
import {loadCrdFiles, upstreamCrdFiles} from './registry/crd.js'
import {fallbackCrds} from './registry/fallback-kinds.js'
import {Registry} from './registry/registry.js'
import {Store} from './store/store.js'
import {resourceKey, type JsonObject, type ObjectRefLike} from './types.js'
import type {SkippedCelRule} from './validation/cel.js'

const HERE = path.dirname(fileURLToPath(import.meta.url))
/** ../shared/fixtures/upstream/crds next to the repository (absent in a user's clone). */
export const UPSTREAM_CRDS_DIR = path.resolve(HERE, '../../../../shared/fixtures/upstream/crds')

export interface ApiServerOptions {
  /** 0 (default) picks a free port. */
  port?: number
  /** Loopback address to bind; default 127.0.0.1. */
  host?: string
  /**
   * Which CRDs to preload: 'upstream' (default) = Istio + Gateway API standard channel from
   * ../shared (falling back to 'builtin' with a notice when absent); 'builtin' = the small
   * built-in table without schemas; or a list of CRD files.
   */
  crdFiles?: string[] | 'upstream' | 'builtin'
  /** Where 'upstream' looks for the CRD files; default UPSTREAM_CRDS_DIR (../shared). */
  upstreamCrdsDir?: string
  /** Extra bearer tokens; `admin-token` (user "admin", allowed everything) always exists. */
  tokens?: Record<string, TokenUser>
  /** Events kept for watches and continued lists (older revisions get 410 Gone). */
  historyLimit?: number
  /** Suppress the one-time stderr notices. */
  quiet?: boolean
}

export interface KubeconfigOptions {
  token?: string
  context?: string
  namespace?: string
}

const crdCache = new Map<string, JsonObject[]>()
const noticesShown = new Set<string>()

function notice(key: string, text: string, quiet: boolean | undefined): void {
  if (quiet || noticesShown.has(key)) return
  noticesShown.add(key)
  process.stderr.write(`[test-apiserver] ${text}\n`)
}

export class TestApiServer {
  readonly faults = new Faults()
  readonly core: ApiCore
  private readonly log: RequestLogEntry[] = []
  private readonly authn: Authenticator
  private readonly watches: WatchHub
  private server: Server | undefined
  private port = 0
  private host = '127.0.0.1'
  /** True when the CRDs came from ../shared; false when the built-in table was used. */
  usingUpstreamCrds = false

  constructor(private readonly opts: ApiServerOptions = {}) {
    this.core = new ApiCore(new Registry(), new Store(opts.historyLimit ?? 10_000))
    this.authn = new Authenticator({
      [ADMIN_TOKEN]: {user: 'admin', groups: ['system:masters'], permissions: 'all'},
      ...(opts.tokens ?? {}),
    })
    this.watches = new WatchHub(this.core)
  }

  get url(): string {
    return `http://${this.host}:${this.port}`
  }

  /** Rules from the registered CRDs that the CEL library cannot evaluate. */
  get skippedCelRules(): SkippedCelRule[] {
    return this.core.registry.skippedCelRules()
  }

  /** The request log (live array; entries are appended as requests arrive). */
  get requests(): readonly RequestLogEntry[] {
    return this.log
  }

  requestsMatching(filter: RequestFilter = {}): RequestLogEntry[] {
    return filterRequests(this.log, filter)
  }

  resetRequestLog(): void {
    this.log.length = 0
  }

  addToken(token: string, user: TokenUser): void {
    this.authn.setToken(token, user)
  }

  async start(): Promise<this> {
    this.bootstrap()
    this.host = this.opts.host ?? '127.0.0.1'
    const handler = createHandler({
      core: this.core,
      authn: this.authn,
      faults: this.faults,
      watches: this.watches,
      log: this.log,
      serverAddress: () => `${this.host}:${this.port}`,
      kubeVersion: {major: '1', minor: '32', gitVersion: 'v1.32.0'},
    })
    this.server = createServer(handler)
    this.server.keepAliveTimeout = 5_000
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject)
      this.server!.listen(this.opts.port ?? 0, this.host, () => resolve())
    })
    this.port = (this.server.address() as AddressInfo).port
    return this
  }

  /** The namespaces and objects every cluster has, then the CRDs. */
  private bootstrap(): void {
    for (const name of ['default', 'kube-system', 'kube-public', 'kube-node-lease'])
      this.seed({apiVersion: 'v1', kind: 'Namespace', metadata: {name}})
    this.seed({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: {name: 'kubernetes', namespace: 'default', labels: {component: 'apiserver', provider: 'kubernetes'}},
      spec: {clusterIP: '10.96.0.1', ports: [{name: 'https', port: 443, protocol: 'TCP', targetPort: 6443}]},
    })
    for (const name of ['default', 'kube-system', 'kube-public', 'kube-node-lease'])
      this.seed({apiVersion: 'v1', kind: 'ServiceAccount', metadata: {name: 'default', namespace: name}})

    const choice = this.opts.crdFiles ?? 'upstream'
    let crds: JsonObject[]
    let fallback = false
    if (choice === 'builtin') {
      crds = fallbackCrds()
      fallback = true
    } else if (choice === 'upstream') {
      const dir = this.opts.upstreamCrdsDir ?? UPSTREAM_CRDS_DIR
      const files = existsSync(dir) ? upstreamCrdFiles(dir) : []
      if (files.length) {
        crds = cachedCrds(files)
        this.usingUpstreamCrds = true
      } else {
        notice(
          'fallback',
          `${dir} is not present: registering the Istio and Gateway API kinds from the built-in table, without schema validation.`,
          this.opts.quiet,
        )
        crds = fallbackCrds()
        fallback = true
      }
    } else {
      crds = cachedCrds(choice)
      this.usingUpstreamCrds = true
    }
    this.registerCrds(crds, fallback)
    const skipped = this.skippedCelRules
    if (skipped.length) {
      notice(
        `skipped:${skipped.map((s) => s.crd + s.version + s.path + s.rule).join('|')}`,
        `${skipped.length} CEL rule(s) cannot be evaluated and are reported as skipped (never passed): ` +
          skipped.map((s) => `${s.crd} ${s.version} ${s.path}: ${s.reason}`).join('; '),
        this.opts.quiet,
      )
    }
  }

  /** Creates (or replaces) CRDs as an administrator would; their kinds are served at once. */
  registerCrds(crds: JsonObject[], fallback = false): void {
    const rt = this.core.registry.resolve('apiextensions.k8s.io', 'v1', 'customresourcedefinitions')!
    for (const crd of crds) {
      if (fallback) {
        this.core.registry.registerCrd(crd, {fallback: true})
        this.core.store.put(resourceKey('apiextensions.k8s.io', 'customresourcedefinitions'), {
          ...crd,
          metadata: {
            ...crd.metadata,
            uid: randomUUID(),
            creationTimestamp: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
            generation: 1,
          },
        })
        continue
      }
      if (this.core.store.get(resourceKey(rt.rt.group, rt.rt.plural), '', crd.metadata.name)) continue
      this.core.create(rt.rt, rt.version, '', structuredClone(crd), {
        dryRun: false,
        fieldValidation: 'Ignore',
        fieldManager: 'test-apiserver',
      })
    }
  }

  kubeconfig(opts: KubeconfigOptions = {}): string {
    const token = opts.token ?? ADMIN_TOKEN
    const user = this.authn.authenticate(`Bearer ${token}`)?.user ?? 'user'
    const context = opts.context ?? 'test-apiserver'
    return toYaml({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{name: 'test-apiserver', cluster: {server: this.url, 'insecure-skip-tls-verify': true}}],
      users: [{name: user, user: {token}}],
      contexts: [
        {
          name: context,
          context: {cluster: 'test-apiserver', user, ...(opts.namespace ? {namespace: opts.namespace} : {})},
        },
      ],
      'current-context': context,
      preferences: {},
    })
  }

  async writeKubeconfig(file: string, opts: KubeconfigOptions = {}): Promise<void> {
    await writeFile(file, this.kubeconfig(opts), {mode: 0o600})
  }

  /**
   * Stores objects directly (no HTTP, no authorization), creating missing namespaces.
   * Existing objects are replaced. `status` is written too, through the status subresource,
   * and a given metadata.creationTimestamp is kept (a real server would overwrite it).
   * Objects are validated as on a real create. Returns the stored objects as served.
   */
  seed(objects: JsonObject | JsonObject[]): JsonObject[] {
    const list = Array.isArray(objects) ? objects : [objects]
    return list.map((o) => this.core.seed(o))
  }

  /** An object as served at ref.apiVersion, or undefined. */
  get(ref: ObjectRefLike): JsonObject | undefined {
    const r = this.core.registry.byKind(ref.apiVersion, ref.kind)
    if (!r) return undefined
    const obj = this.core.store.get(
      resourceKey(r.rt.group, r.rt.plural),
      r.rt.namespaced ? (ref.namespace ?? 'default') : '',
      ref.name,
    )
    return obj ? this.core.present(r.rt, obj, r.version.name) : undefined
  }

  /** Objects of a kind (in a namespace, or everywhere), as served at apiVersion. */
  list(apiVersion: string, kind: string, namespace?: string): JsonObject[] {
    const r = this.core.registry.byKind(apiVersion, kind)
    if (!r) return []
    return this.core.store
      .list(resourceKey(r.rt.group, r.rt.plural), r.rt.namespaced ? namespace : undefined)
      .map((o) => this.core.present(r.rt, o, r.version.name))
  }

  /** Number of watch streams currently open. */
  get openWatches(): number {
    return this.watches.count
  }

  async close(): Promise<void> {
    this.watches.closeAll()
    const server = this.server
    if (!server) return
    this.server = undefined
    server.closeAllConnections()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  }
}

function cachedCrds(files: string[]): JsonObject[] {
  const key = files.join('\n')
  let crds = crdCache.get(key)
  if (!crds) {
    crds = loadCrdFiles(files)
    crdCache.set(key, crds)
  }
  return crds
}

export async function startApiServer(opts: ApiServerOptions = {}): Promise<TestApiServer> {
  return new TestApiServer(opts).start()
}
