// KubeClient over a Transport (src/kube/transport.ts): the light kubeconfig when the kubeconfig needs
// nothing more, else client-node's KubeConfig (exec plugins, auth providers, proxies), both over node:https.
// We build every request ourselves, which gives exact control over URLs, content types, dryRun, pagination,
// timeouts and error bodies.
import type {KubeConfig} from '@kubernetes/client-node'
import {AsyncLocalStorage} from 'node:async_hooks'
import {setTimeout as delay} from 'node:timers/promises'

import pRetry from 'p-retry'

import type {KubeObject, ObjectRef} from '../planner/model.js'
import {FIELD_MANAGER} from '../planner/plan-types.js'
import {groupOf, versionOf} from '../planner/refs.js'
import {apiNotServed, type Attempt, KubeApiError, KubeConnectionError, passingFault, type StatusBody} from './errors.js'
import type {KubeConfigOptions} from './config.js'
import {loadLightKubeConfig} from './light-config.js'
import {
  ClientNodeTransport,
  CredentialPluginError,
  LightTransport,
  type ResponseLike,
  type Transport,
} from './transport.js'
import type {
  AccessAttributes,
  AccessReview,
  ApiResource,
  ApplyOptions,
  DeleteOptions,
  Discovery,
  KubeClient,
  ListOptions,
  WriteOptions,
} from './types.js'

const PAGE_SIZE = 500

/** Kinds whose "create" only asks a question (who am I, may I): nothing is stored, so resending is harmless. */
const REVIEW_KINDS = new Set([
  'SelfSubjectReview',
  'SelfSubjectAccessReview',
  'SelfSubjectRulesReview',
  'SubjectAccessReview',
  'TokenReview',
])

const AGGREGATED_DISCOVERY_ACCEPT = [
  'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList',
  'application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList',
  'application/json',
].join(',')

interface LegacyDiscovery {
  versions?: string[]
  groups?: {name: string; versions: {groupVersion: string}[]; preferredVersion?: {groupVersion: string}}[]
}

interface AggregatedDiscovery {
  kind: 'APIGroupDiscoveryList'
  items?: {
    metadata?: {name?: string}
    /** In order of preference: the first is the group's preferred version. */
    versions?: {
      version: string
      freshness?: string
      resources?: {resource: string; responseKind?: {kind?: string}; scope?: string; verbs?: string[]}[]
    }[]
  }[]
}

function isAggregated(body: unknown): body is AggregatedDiscovery {
  return typeof body === 'object' && body !== null && (body as {kind?: unknown}).kind === 'APIGroupDiscoveryList'
}

/** Discovery from the aggregated documents of /api and /apis. */
function aggregatedDiscovery(documents: AggregatedDiscovery[]): Discovery {
  const groupVersions: string[] = []
  const resources: ApiResource[] = []
  for (const group of documents.flatMap((d) => d.items ?? [])) {
    const name = group.metadata?.name ?? ''
    ;(group.versions ?? []).forEach((v, i) => {
      const apiVersion = name ? `${name}/${v.version}` : v.version
      groupVersions.push(apiVersion)
      // A stale version (its aggregated API is down) must not stop discovery of the rest: it serves nothing.
      if (v.freshness === 'Stale') return
      for (const r of v.resources ?? []) {
        if (!r.responseKind?.kind) continue
        resources.push({
          group: name,
          version: v.version,
          apiVersion,
          kind: r.responseKind.kind,
          plural: r.resource,
          namespaced: r.scope === 'Namespaced',
          verbs: r.verbs ?? [],
          preferred: i === 0,
        })
      }
    })
  }
  return {groupVersions, resources}
}
/** The pause before a retry: backoff from RETRY_MIN_MS doubling up to RETRY_MAX_MS; a Retry-After up to RETRY_AFTER_MAX_MS. */
const RETRY_MIN_MS = 200
const RETRY_MAX_MS = 2000
const RETRY_AFTER_MAX_MS = 30_000

/** Time as the retries see it; tests pass their own to check the pauses without waiting them. */
export interface RetryClock {
  now(): number
  /** Resolves after `ms`; rejects when `signal` aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>
}

const SYSTEM_CLOCK: RetryClock = {
  now: () => Date.now(),
  sleep: (ms, signal) => delay(ms, undefined, signal ? {signal} : {}),
}

/** Until when the requests made inside retryWithin() ride out passing faults. */
export interface RetryBudget {
  /** Epoch ms (the client clock's now()): no retry is started that would pause past it. */
  deadline: number
  /** Ctrl+C: stops the pause at once. */
  signal?: AbortSignal
  /** Told before each retry, what failed and that it is sent again (the wait's progress line). */
  onRetry?: (message: string) => void
}

const retryBudget = new AsyncLocalStorage<RetryBudget>()

/**
 * Run `fn` with every API request it makes (through any wrapper of the client: the fenced client, the preflight
 * checks' reads) retried on passing faults until `budget.deadline`, instead of a few times: a wait of minutes rides
 * out an API server restart. 403 and the other answers still fail at once.
 */
export function retryWithin<T>(budget: RetryBudget, fn: () => Promise<T>): Promise<T> {
  return retryBudget.run(budget, fn)
}

interface RequestSpec {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'
  path: string
  query?: Record<string, string | undefined>
  body?: unknown
  contentType?: string
  attempt: Attempt
  /** Whether resending after a dropped connection is safe (GET, apply, merge patch of absolute values, delete). */
  idempotent: boolean
  /** Accept header (default application/json). */
  accept?: string
}

export interface HttpKubeClientOptions {
  /** Per-request timeout in ms (--request-timeout). */
  timeoutMs?: number
  /** Attempts for transient failures (connection errors, 429, 5xx). */
  retries?: number
  /** LIST page size (limit); 500 like kubectl. */
  pageSize?: number
  /**
   * Loads the kubeconfig again (same files and context) when the server answers 401: a re-login or a
   * rotated token file is picked up, and exec plugins run again. Without it the loaded config is
   * copied, which still drops the cached exec-plugin credentials and re-reads token files.
   */
  reloadConfig?: () => Promise<KubeConfig>
  /**
   * Told once per request that has had no answer for WAITING_NOTICE_MS (what it waits for: the server and
   * the request), so that a silent server is never a silent hang; the command writes it to stderr.
   */
  onWaiting?: (message: string) => void
  /** The clock of the retries' pauses (default: the real one). */
  clock?: RetryClock
}

/** After this long without an answer, a request says what it is waiting for (options.onWaiting). */
export const WAITING_NOTICE_MS = 5_000

export class HttpKubeClient implements KubeClient {
  readonly context: string
  readonly server: string
  private discovery?: Promise<Discovery>
  private transport: Transport
  /** Requests waiting past WAITING_NOTICE_MS have said so: one notice for concurrent requests to a silent server. */
  private waitingNoticed = false
  /** The credential refresh in flight: concurrent 401s share it. */
  private refreshing?: Promise<void>

  /** A client-node KubeConfig is sent over its own credentials and agent (options.reloadConfig reloads it). */
  constructor(
    config: KubeConfig | Transport,
    private readonly options: HttpKubeClientOptions = {},
  ) {
    this.transport = 'applyToFetchOptions' in config ? new ClientNodeTransport(config, options.reloadConfig) : config
    this.context = this.transport.context
    this.server = this.transport.server
  }

  /** After a 401: load the credentials again, once for all requests that used the rejected ones. */
  private refreshCredentials(rejected: Transport): Promise<void> {
    if (rejected !== this.transport) return Promise.resolve()
    this.refreshing ??= (async () => {
      try {
        this.transport = await this.transport.reload()
      } finally {
        this.refreshing = undefined
      }
    })()
    return this.refreshing
  }

  /** Say once, while the server stays silent, what is being waited for. */
  private noticeWaiting(spec: RequestSpec, url: URL): void {
    if (!this.options.onWaiting || this.waitingNoticed) return
    this.waitingNoticed = true
    this.options.onWaiting(
      `Waiting for the API server ${this.server} (context ${this.context}): no answer for ${WAITING_NOTICE_MS / 1000}s to ${spec.method} ${url.pathname} (${spec.attempt.what}).`,
    )
  }

  private async request<T>(spec: RequestSpec): Promise<{status: number; body: T; headers: Record<string, string>}> {
    const url = new URL(this.server + spec.path)
    for (const [k, v] of Object.entries(spec.query ?? {})) if (v !== undefined) url.searchParams.set(k, v)
    const body = spec.body === undefined ? undefined : JSON.stringify(spec.body)
    const send = async (): Promise<{response: ResponseLike; transport: Transport}> => {
      const transport = this.transport
      const headers: Record<string, string> = {Accept: spec.accept ?? 'application/json'}
      if (body !== undefined) headers['Content-Type'] = spec.contentType ?? 'application/json'
      const waiting = setTimeout(() => this.noticeWaiting(spec, url), WAITING_NOTICE_MS)
      try {
        const response = await transport.send(url.toString(), {
          method: spec.method,
          headers,
          ...(body === undefined ? {} : {body}),
          ...(this.options.timeoutMs ? {signal: AbortSignal.timeout(this.options.timeoutMs)} : {}),
        })
        this.waitingNoticed = false
        return {response, transport}
      } catch (error) {
        // A credential plugin that failed is not an unreachable server (and is never retried: passingFault).
        if (error instanceof CredentialPluginError) throw error
        throw new KubeConnectionError(spec.attempt, this.server, error)
      } finally {
        clearTimeout(waiting)
      }
    }
    const attemptOnce = async () => {
      const first = await send()
      let response = first.response
      let credentialsReloaded = false
      if (response.status === 401) {
        // Expired or rotated credentials: load them again (exec plugin, token file, kubeconfig) and resend
        // once. A 401 comes before anything is processed, so this is safe for every method.
        await response.text().catch(() => undefined)
        await this.refreshCredentials(first.transport)
        credentialsReloaded = true
        ;({response} = await send())
      }
      const text = await response.text()
      let parsed: unknown
      try {
        parsed = text ? JSON.parse(text) : undefined
      } catch {
        parsed = undefined
      }
      if (response.status >= 400) {
        const error = new KubeApiError(response.status, parsed as StatusBody | undefined, spec.attempt, this.context, {
          credentialsReloaded,
          ...(this.transport.userName ? {user: this.transport.userName} : {}),
        })
        const retryAfter = Number(response.headers.get('retry-after'))
        if (Number.isFinite(retryAfter) && retryAfter > 0) error.retryAfterSeconds = retryAfter
        throw error
      }
      const responseHeaders: Record<string, string> = {}
      response.headers.forEach((v, k) => {
        responseHeaders[k] = v
      })
      return {status: response.status, body: parsed as T, headers: responseHeaders}
    }
    const budget = retryBudget.getStore()
    // p-retry runs the attempts; the pause before each retry is ours (minTimeout 0), on the client's clock, so that
    // the server's Retry-After counts and a retry budget's deadline is kept.
    return pRetry(attemptOnce, {
      retries: budget ? Number.POSITIVE_INFINITY : (this.options.retries ?? 3),
      minTimeout: 0,
      ...(budget?.signal ? {signal: budget.signal} : {}),
      shouldRetry: ({error, attemptNumber}) => this.pauseBeforeRetry(error, spec, attemptNumber, budget),
    })
  }

  /**
   * Whether to send a failed request again (a passing fault: kube/errors.ts passingFault), after pausing: backoff
   * from 200 ms to 2 s, or longer when the server's Retry-After says so (at most 30 s). Within a retry budget
   * (retryWithin) the request is sent again until the budget's deadline, else a few times (options.retries).
   */
  private async pauseBeforeRetry(
    error: Error,
    spec: RequestSpec,
    attemptNumber: number,
    budget: RetryBudget | undefined,
  ): Promise<boolean> {
    const fault = passingFault(error, spec.idempotent)
    if (!fault) return false
    const clock = this.options.clock ?? SYSTEM_CLOCK
    const backoff = Math.min(RETRY_MIN_MS * 2 ** (attemptNumber - 1), RETRY_MAX_MS)
    const pause = Math.max(backoff, Math.min(fault.retryAfterMs ?? 0, RETRY_AFTER_MAX_MS))
    if (budget) {
      if (clock.now() + pause >= budget.deadline) return false
      budget.onRetry?.(`${spec.attempt.what}: ${error.message.replace(/^.* failed: /, '')}; retrying`)
    }
    await clock.sleep(pause, budget?.signal)
    return true
  }

  private basePath(apiVersion: string): string {
    return apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`
  }

  private resourcePath(res: ApiResource, namespace?: string, name?: string): string {
    let p = this.basePath(res.apiVersion)
    if (res.namespaced && namespace !== undefined) p += `/namespaces/${encodeURIComponent(namespace)}`
    p += `/${res.plural}`
    if (name !== undefined) p += `/${encodeURIComponent(name)}`
    return p
  }

  private attempt(verb: string, res: ApiResource, namespace?: string, name?: string, method = 'GET'): Attempt {
    const target = `${res.plural}${res.group ? `.${res.group}` : ''}${name ? `/${name}` : ''}`
    return {
      method,
      verb,
      group: res.group,
      resource: res.plural,
      kind: res.kind,
      apiVersion: res.apiVersion,
      ...(namespace === undefined ? {} : {namespace}),
      what: `${verb} ${target}${namespace ? ` in namespace ${namespace}` : ''}`,
    }
  }

  discover(): Promise<Discovery> {
    this.discovery ??= this.loadDiscovery().catch((error) => {
      this.discovery = undefined
      throw error
    })
    return this.discovery
  }

  private async loadDiscovery(): Promise<Discovery> {
    const attempt = (what: string): Attempt => ({method: 'GET', verb: 'discover', group: '', resource: '', what})
    // Aggregated discovery (GA in Kubernetes 1.30): every group, version and resource in two requests,
    // as kubectl reads it. Servers without it answer the legacy lists, read one group-version at a time.
    const [core, groups] = await Promise.all(
      ['/api', '/apis'].map((p) =>
        this.request<LegacyDiscovery | AggregatedDiscovery>({
          method: 'GET',
          path: p,
          attempt: attempt(`read API discovery (${p})`),
          idempotent: true,
          accept: AGGREGATED_DISCOVERY_ACCEPT,
        }),
      ),
    )
    if (isAggregated(core!.body) && isAggregated(groups!.body)) return aggregatedDiscovery([core!.body, groups!.body])
    return this.legacyDiscovery(core!.body as LegacyDiscovery, groups!.body as LegacyDiscovery, attempt)
  }

  private async legacyDiscovery(
    core: LegacyDiscovery,
    groups: LegacyDiscovery,
    attempt: (what: string) => Attempt,
  ): Promise<Discovery> {
    const groupVersions: {gv: string; preferred: boolean}[] = [
      ...(core.versions ?? ['v1']).map((v, i) => ({gv: v, preferred: i === 0})),
      ...(groups.groups ?? []).flatMap((g) =>
        g.versions.map((v) => ({
          gv: v.groupVersion,
          preferred: (g.preferredVersion?.groupVersion ?? g.versions[0]?.groupVersion) === v.groupVersion,
        })),
      ),
    ]
    const lists = await Promise.all(
      groupVersions.map(async ({gv, preferred}) => {
        const list = await this.request<{
          resources?: {name: string; kind: string; namespaced: boolean; verbs: string[]}[]
        }>({
          method: 'GET',
          path: this.basePath(gv),
          attempt: attempt(`read API discovery (${gv})`),
          idempotent: true,
        }).catch((error) => {
          // An aggregated API that is down (metrics.k8s.io…) must not stop discovery of the rest.
          if (error instanceof KubeApiError && (error.status === 503 || error.status === 404)) return undefined
          throw error
        })
        return (list?.body.resources ?? [])
          .filter((r) => !r.name.includes('/'))
          .map((r): ApiResource => ({
            group: groupOf(gv),
            version: versionOf(gv),
            apiVersion: gv,
            kind: r.kind,
            plural: r.name,
            namespaced: r.namespaced,
            verbs: r.verbs ?? [],
            preferred,
          }))
      }),
    )
    return {groupVersions: groupVersions.map((g) => g.gv), resources: lists.flat()}
  }

  async resourceFor(apiVersion: string, kind: string): Promise<ApiResource | undefined> {
    const {resources} = await this.discover()
    const group = groupOf(apiVersion)
    const candidates = resources.filter((r) => r.group === group && r.kind === kind)
    return candidates.find((r) => r.apiVersion === apiVersion) ?? candidates.find((r) => r.preferred) ?? candidates[0]
  }

  private async requireResource(ref: Pick<ObjectRef, 'apiVersion' | 'kind'>): Promise<ApiResource> {
    const res = await this.resourceFor(ref.apiVersion, ref.kind)
    if (!res) throw apiNotServed(ref, groupOf(ref.apiVersion), this.context)
    return res
  }

  async list(resource: ApiResource, opts: ListOptions = {}): Promise<KubeObject[]> {
    // A continue token expires with etcd compaction (410 Gone, reason Expired): the pages read so far
    // may then be inconsistent with the rest, so the whole list starts over (a few times at most).
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.listAllPages(resource, opts)
      } catch (error) {
        if (!(error instanceof KubeApiError && error.status === 410) || attempt >= 3) throw error
      }
    }
  }

  private async listAllPages(resource: ApiResource, opts: ListOptions): Promise<KubeObject[]> {
    const items: KubeObject[] = []
    let token: string | undefined
    do {
      const page = await this.request<{items?: KubeObject[]; metadata?: {continue?: string}}>({
        method: 'GET',
        path: this.resourcePath(resource, opts.namespace),
        query: {
          limit: String(this.options.pageSize ?? PAGE_SIZE),
          continue: token,
          labelSelector: opts.labelSelector,
          fieldSelector: opts.fieldSelector,
        },
        attempt: this.attempt('list', resource, opts.namespace),
        idempotent: true,
      })
      // List items carry no apiVersion/kind; restore them so objects look the same from every source.
      for (const item of page.body.items ?? [])
        items.push({...item, apiVersion: resource.apiVersion, kind: resource.kind})
      token = page.body.metadata?.continue || undefined
    } while (token)
    return items
  }

  async get(ref: ObjectRef): Promise<KubeObject | undefined> {
    const res = await this.requireResource(ref)
    try {
      const {body} = await this.request<KubeObject>({
        method: 'GET',
        path: this.resourcePath(res, ref.namespace, ref.name),
        attempt: this.attempt('get', res, ref.namespace, ref.name),
        idempotent: true,
      })
      return body
    } catch (error) {
      if (error instanceof KubeApiError && error.status === 404) return undefined
      throw error
    }
  }

  async create(obj: KubeObject, opts: WriteOptions = {}): Promise<KubeObject> {
    const res = await this.requireResource(obj)
    const {body} = await this.request<KubeObject>({
      method: 'POST',
      path: this.resourcePath(res, obj.metadata.namespace),
      query: {fieldManager: FIELD_MANAGER, dryRun: opts.dryRun ? 'All' : undefined},
      body: atServedVersion(obj, res),
      attempt: this.attempt('create', res, obj.metadata.namespace, obj.metadata.name, 'POST'),
      idempotent: REVIEW_KINDS.has(obj.kind),
    })
    return body
  }

  async apply(obj: KubeObject, opts: ApplyOptions = {}): Promise<KubeObject> {
    const res = await this.requireResource(obj)
    const {body} = await this.request<KubeObject>({
      method: 'PATCH',
      path: this.resourcePath(res, obj.metadata.namespace, obj.metadata.name),
      query: {
        fieldManager: FIELD_MANAGER,
        force: opts.force ? 'true' : undefined,
        dryRun: opts.dryRun ? 'All' : undefined,
      },
      body: atServedVersion(obj, res),
      contentType: 'application/apply-patch+yaml',
      attempt: this.attempt('apply', res, obj.metadata.namespace, obj.metadata.name, 'PATCH'),
      idempotent: true,
    })
    return body
  }

  async mergePatch(ref: ObjectRef, patch: Record<string, unknown>, opts: WriteOptions = {}): Promise<KubeObject> {
    const res = await this.requireResource(ref)
    const {body} = await this.request<KubeObject>({
      method: 'PATCH',
      path: this.resourcePath(res, ref.namespace, ref.name),
      query: {fieldManager: FIELD_MANAGER, dryRun: opts.dryRun ? 'All' : undefined},
      body: 'apiVersion' in patch ? atServedVersion(patch, res) : patch,
      contentType: 'application/merge-patch+json',
      attempt: this.attempt('patch', res, ref.namespace, ref.name, 'PATCH'),
      idempotent: true,
    })
    return body
  }

  async delete(ref: ObjectRef, opts: DeleteOptions = {}): Promise<boolean> {
    const res = await this.requireResource(ref)
    try {
      await this.request<unknown>({
        method: 'DELETE',
        path: this.resourcePath(res, ref.namespace, ref.name),
        query: {dryRun: opts.dryRun ? 'All' : undefined},
        // kube-apiserver reads DeleteOptions from the body when there is one and then ignores the query
        // (handlers/delete.go): dryRun must be in the body too, or a "dry run" with preconditions deletes.
        ...(opts.preconditions
          ? {
              body: {
                kind: 'DeleteOptions',
                apiVersion: 'v1',
                preconditions: opts.preconditions,
                ...(opts.dryRun ? {dryRun: ['All']} : {}),
              },
            }
          : {}),
        attempt: this.attempt('delete', res, ref.namespace, ref.name, 'DELETE'),
        idempotent: true,
      })
      return true
    } catch (error) {
      if (error instanceof KubeApiError && error.status === 404) return false
      throw error
    }
  }

  async canI(attrs: AccessAttributes): Promise<AccessReview> {
    const {body} = await this.request<{status?: {allowed?: boolean; reason?: string}}>({
      method: 'POST',
      path: '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews',
      body: {
        apiVersion: 'authorization.k8s.io/v1',
        kind: 'SelfSubjectAccessReview',
        spec: {
          resourceAttributes: {
            verb: attrs.verb,
            group: attrs.group,
            resource: attrs.resource,
            namespace: attrs.namespace,
            name: attrs.name,
            subresource: attrs.subresource,
          },
        },
      },
      attempt: {
        method: 'POST',
        verb: 'create',
        group: 'authorization.k8s.io',
        resource: 'selfsubjectaccessreviews',
        what: `check permission to ${attrs.verb} ${attrs.resource}`,
      },
      idempotent: true,
    })
    return {allowed: body.status?.allowed === true, ...(body.status?.reason ? {reason: body.status.reason} : {})}
  }

  async serverVersion(): Promise<string | undefined> {
    const {body} = await this.request<{gitVersion?: string}>({
      method: 'GET',
      path: '/version',
      attempt: {method: 'GET', verb: 'get', group: '', resource: 'version', what: 'read the server version'},
      idempotent: true,
    })
    return body?.gitVersion
  }
}

/**
 * The body as the resource it is sent to expects it: when the object's apiVersion is not served and
 * resourceFor fell back to another version of the group (Istio serves the same kinds as v1, v1beta1,
 * v1alpha3), the server refuses a body whose apiVersion does not match the URL's.
 */
function atServedVersion<T extends {apiVersion?: unknown}>(obj: T, res: ApiResource): T {
  return obj.apiVersion === res.apiVersion ? obj : {...obj, apiVersion: res.apiVersion}
}

export async function connect(opts: {
  kubeconfig?: string
  context?: string
  requestTimeout?: string
  onWaiting?: (message: string) => void
  /** Attempts after a transient failure (default 3; completion asks once). */
  retries?: number
  /** The command's environment: KUBECONFIG and HOME say where the kubeconfig is. */
  env: NodeJS.ProcessEnv
}): Promise<HttpKubeClient> {
  const {parseRequestTimeout} = await import('./config.js')
  const timeoutMs = parseRequestTimeout(opts.requestTimeout)
  return new HttpKubeClient(await openTransport(opts, opts.env), {
    ...(timeoutMs === undefined ? {} : {timeoutMs}),
    ...(opts.onWaiting ? {onWaiting: opts.onWaiting} : {}),
    ...(opts.retries === undefined ? {} : {retries: opts.retries}),
  })
}

/** The light kubeconfig when it is enough, else client-node's; loaded again the same way after a 401. */
async function openTransport(opts: KubeConfigOptions, env: NodeJS.ProcessEnv): Promise<Transport> {
  const light = await loadLightKubeConfig(opts, env)
  if (light) return new LightTransport(light, () => openTransport(opts, env))
  const {loadKubeConfig} = await import('./config.js')
  return new ClientNodeTransport(await loadKubeConfig(opts, env), () => loadKubeConfig(opts, env))
}
