// The fake control plane's own Kubernetes client: REST over client-node's KubeConfig (which
// resolves the server, TLS and credentials), with what controllers need and the tool's KubeClient
// does not offer: the resourceVersion of a LIST (to start a WATCH from it), watches, status
// subresources, server-side apply with a chosen field manager, and graceful-deletion options.
// Every request carries a User-Agent naming the component, so the test API server's request log
// tells the controllers' requests from the tool's (they also use their own token in-repo).
import type {KubeConfig} from '@kubernetes/client-node'
import fetch, {type RequestInit} from 'node-fetch'

import type {KubeObject, ObjectRef} from '../../../src/planner/model.js'
import {groupOf} from '../../../src/planner/refs.js'

export const CONTROL_PLANE_USER_AGENT = 'mesh-migrate-test-control-plane'

/** One served resource (from discovery of its group-version). */
export interface Resource {
  apiVersion: string
  group: string
  kind: string
  plural: string
  namespaced: boolean
  /** Subresources served, e.g. ["status"]. */
  subresources: string[]
  verbs: string[]
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly reason: string | undefined,
    message: string,
    readonly what: string,
  ) {
    super(`${what}: ${status}${reason ? ` ${reason}` : ''}: ${message}`)
    this.name = 'ApiError'
  }
}

export const isNotFound = (e: unknown): boolean => e instanceof ApiError && e.status === 404
export const isConflict = (e: unknown): boolean => e instanceof ApiError && e.status === 409

export interface ListResult {
  items: KubeObject[]
  resourceVersion: string
}

export interface WatchEvent {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR'
  object: any
}

export interface WatchHandle {
  stop(): void
}

export interface PatchOptions {
  subresource?: string
  /** JSON merge patch (default) or server-side apply. */
  type?: 'merge' | 'apply'
  fieldManager?: string
  force?: boolean
}

export interface DeleteOptions {
  gracePeriodSeconds?: number
  preconditions?: {uid?: string; resourceVersion?: string}
  propagationPolicy?: 'Background' | 'Foreground' | 'Orphan'
}

const AUTH_REUSE_MS = 30_000
const PAGE_SIZE = 500

export class ClusterApi {
  /** Writes sent (create, patch, delete), for fixed-point detection. */
  writes = 0
  readonly server: string
  private readonly groupVersions = new Map<string, Promise<Resource[] | undefined>>()
  private readonly missingSince = new Map<string, number>()
  private auth?: {at: number; init: RequestInit}

  constructor(
    readonly kubeConfig: KubeConfig,
    readonly opts: {userAgent?: string; fieldManager?: string} = {},
  ) {
    const cluster = kubeConfig.getCurrentCluster()
    if (!cluster) throw new Error('the kubeconfig has no current cluster')
    this.server = cluster.server.replace(/\/+$/, '')
  }

  get userAgent(): string {
    return this.opts.userAgent ?? CONTROL_PLANE_USER_AGENT
  }

  get fieldManager(): string {
    return this.opts.fieldManager ?? 'mesh-migrate-test-control-plane'
  }

  /** A client with another User-Agent / field manager over the same credentials. */
  as(opts: {userAgent?: string; fieldManager?: string}): ClusterApi {
    return new ClusterApi(this.kubeConfig, {...this.opts, ...opts})
  }

  private async fetchInit(): Promise<RequestInit> {
    if (this.auth && Date.now() - this.auth.at < AUTH_REUSE_MS) return this.auth.init
    const init = (await this.kubeConfig.applyToFetchOptions({})) as unknown as RequestInit
    this.auth = {at: Date.now(), init}
    return init
  }

  private async headers(
    extra: Record<string, string> = {},
  ): Promise<{headers: Record<string, string>; agent: RequestInit['agent']}> {
    const base = await this.fetchInit()
    const headers: Record<string, string> = {Accept: 'application/json', 'User-Agent': this.userAgent}
    ;(base.headers as unknown as {forEach(cb: (v: string, k: string) => void): void} | undefined)?.forEach?.((v, k) => {
      headers[k] = v
    })
    return {headers: {...headers, ...extra}, agent: base.agent}
  }

  async request<T>(
    method: string,
    path: string,
    what: string,
    opts: {query?: Record<string, string | undefined>; body?: unknown; contentType?: string} = {},
  ): Promise<T> {
    const url = new URL(this.server + path)
    for (const [k, v] of Object.entries(opts.query ?? {})) if (v !== undefined) url.searchParams.set(k, v)
    const {headers, agent} = await this.headers(
      opts.body === undefined ? {} : {'Content-Type': opts.contentType ?? 'application/json'},
    )
    if (method !== 'GET') this.writes++
    const response = await fetch(url.toString(), {
      method,
      headers,
      agent,
      ...(opts.body === undefined ? {} : {body: JSON.stringify(opts.body)}),
    })
    const text = await response.text()
    let body: any
    try {
      body = text ? JSON.parse(text) : undefined
    } catch {
      body = undefined
    }
    if (response.status >= 400)
      throw new ApiError(response.status, body?.reason, body?.message ?? text ?? `HTTP ${response.status}`, what)
    return body as T
  }

  // -------------------------------------------------------------------------------------------
  // Discovery

  private basePath(apiVersion: string): string {
    return apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`
  }

  private loadGroupVersion(apiVersion: string): Promise<Resource[] | undefined> {
    let p = this.groupVersions.get(apiVersion)
    // A group-version that was missing is looked up again after a while: CRDs get installed.
    const missingAt = this.missingSince.get(apiVersion)
    if (p && missingAt !== undefined && Date.now() - missingAt > 1000) p = undefined
    if (!p) {
      p = this.request<{resources?: {name: string; kind: string; namespaced: boolean; verbs?: string[]}[]}>(
        'GET',
        this.basePath(apiVersion),
        `discover ${apiVersion}`,
      )
        .then((list) => {
          this.missingSince.delete(apiVersion)
          const all = list?.resources ?? []
          return all
            .filter((r) => !r.name.includes('/'))
            .map((r) => ({
              apiVersion,
              group: groupOf(apiVersion),
              kind: r.kind,
              plural: r.name,
              namespaced: r.namespaced,
              subresources: all
                .filter((s) => s.name.startsWith(`${r.name}/`))
                .map((s) => s.name.slice(r.name.length + 1)),
              verbs: r.verbs ?? [],
            }))
        })
        .catch((error: unknown) => {
          if (error instanceof ApiError && (error.status === 404 || error.status === 503)) {
            this.missingSince.set(apiVersion, Date.now())
            return undefined
          }
          this.groupVersions.delete(apiVersion)
          throw error
        })
      this.groupVersions.set(apiVersion, p)
    }
    return p
  }

  /** The resource for a kind at one of `apiVersions` (first served wins), or undefined. */
  async resource(apiVersions: string | string[], kind: string): Promise<Resource | undefined> {
    for (const v of Array.isArray(apiVersions) ? apiVersions : [apiVersions]) {
      const found = (await this.loadGroupVersion(v))?.find((r) => r.kind === kind)
      if (found) return found
    }
    return undefined
  }

  /** Every served resource at its group's preferred version (the core group at v1). */
  async allResources(): Promise<Resource[]> {
    const groups = await this.request<{
      groups?: {name: string; preferredVersion?: {groupVersion: string}; versions: {groupVersion: string}[]}[]
    }>('GET', '/apis', 'discover API groups')
    const versions = [
      'v1',
      ...(groups.groups ?? [])
        .map((g) => g.preferredVersion?.groupVersion ?? g.versions[0]?.groupVersion)
        .filter((v): v is string => !!v),
    ]
    const lists = await Promise.all(versions.map((v) => this.loadGroupVersion(v)))
    return lists.flatMap((l) => l ?? [])
  }

  /** Forget discovery results (after CRDs were created). */
  refreshDiscovery(): void {
    this.groupVersions.clear()
    this.missingSince.clear()
  }

  private async require(ref: {apiVersion: string; kind: string}): Promise<Resource> {
    const res = await this.resource(ref.apiVersion, ref.kind)
    if (!res)
      throw new ApiError(
        404,
        'NotFound',
        `the server does not serve ${ref.kind} in ${ref.apiVersion}`,
        `find ${ref.kind}`,
      )
    return res
  }

  path(res: Resource, namespace?: string, name?: string, subresource?: string): string {
    let p = this.basePath(res.apiVersion)
    if (res.namespaced && namespace !== undefined) p += `/namespaces/${encodeURIComponent(namespace)}`
    p += `/${res.plural}`
    if (name !== undefined) p += `/${encodeURIComponent(name)}`
    if (subresource) p += `/${subresource}`
    return p
  }

  // -------------------------------------------------------------------------------------------
  // Verbs

  async list(res: Resource, opts: {namespace?: string; labelSelector?: string} = {}): Promise<ListResult> {
    const items: KubeObject[] = []
    let token: string | undefined
    let resourceVersion = ''
    do {
      const page = await this.request<{items?: KubeObject[]; metadata?: {continue?: string; resourceVersion?: string}}>(
        'GET',
        this.path(res, opts.namespace),
        `list ${res.plural}`,
        {
          query: {limit: String(PAGE_SIZE), continue: token, labelSelector: opts.labelSelector},
        },
      )
      for (const item of page.items ?? []) items.push({...item, apiVersion: res.apiVersion, kind: res.kind})
      token = page.metadata?.continue || undefined
      resourceVersion = page.metadata?.resourceVersion ?? resourceVersion
    } while (token)
    return {items, resourceVersion}
  }

  /**
   * Watches a resource from `resourceVersion` with client-node's Watch. `onEvent` gets every event
   * (ERROR events carry a v1.Status); `onDone` is called once when the stream ends for any reason.
   */
  async watch(
    res: Resource,
    opts: {namespace?: string; resourceVersion: string; timeoutSeconds?: number},
    onEvent: (event: WatchEvent) => void,
    onDone: (error: unknown) => void,
  ): Promise<WatchHandle> {
    const {Watch} = await import('@kubernetes/client-node')
    const watch = new Watch(this.kubeConfig)
    const controller = await watch.watch(
      this.path(res, opts.namespace),
      {resourceVersion: opts.resourceVersion, allowWatchBookmarks: true, timeoutSeconds: opts.timeoutSeconds ?? 300},
      (type: string, object: unknown) => onEvent({type: type as WatchEvent['type'], object}),
      (error: unknown) => onDone(error),
    )
    return {stop: () => controller.abort()}
  }

  async get(ref: ObjectRef): Promise<KubeObject | undefined> {
    const res = await this.require(ref)
    try {
      const obj = await this.request<KubeObject>(
        'GET',
        this.path(res, ref.namespace, ref.name),
        `get ${res.plural}/${ref.name}`,
      )
      return {...obj, apiVersion: res.apiVersion, kind: res.kind}
    } catch (error) {
      if (isNotFound(error)) return undefined
      throw error
    }
  }

  async create(obj: KubeObject, opts: {subresource?: string; fieldValidation?: 'Strict'} = {}): Promise<KubeObject> {
    const res = await this.require(obj)
    const path = opts.subresource
      ? this.path(res, obj.metadata.namespace, obj.metadata.name, opts.subresource)
      : this.path(res, obj.metadata.namespace)
    return this.request<KubeObject>(
      'POST',
      path,
      `create ${res.plural}/${obj.metadata.name ?? obj.metadata.generateName ?? ''}`,
      {
        query: {fieldManager: this.fieldManager, fieldValidation: opts.fieldValidation},
        body: obj,
      },
    )
  }

  async patch(ref: ObjectRef, patch: unknown, opts: PatchOptions = {}): Promise<KubeObject> {
    const res = await this.require(ref)
    const apply = opts.type === 'apply'
    return this.request<KubeObject>(
      'PATCH',
      this.path(res, ref.namespace, ref.name, opts.subresource),
      `patch ${res.plural}/${ref.name}${opts.subresource ? `/${opts.subresource}` : ''}`,
      {
        query: {fieldManager: opts.fieldManager ?? this.fieldManager, force: apply && opts.force ? 'true' : undefined},
        body: patch,
        contentType: apply ? 'application/apply-patch+yaml' : 'application/merge-patch+json',
      },
    )
  }

  /** Deletes; resolves to the server's answer (the object while it terminates), or undefined when already gone. */
  async delete(ref: ObjectRef, opts: DeleteOptions = {}): Promise<KubeObject | undefined> {
    const res = await this.require(ref)
    const body: Record<string, unknown> = {kind: 'DeleteOptions', apiVersion: 'v1'}
    if (opts.gracePeriodSeconds !== undefined) body.gracePeriodSeconds = opts.gracePeriodSeconds
    if (opts.preconditions) body.preconditions = opts.preconditions
    if (opts.propagationPolicy) body.propagationPolicy = opts.propagationPolicy
    try {
      const answer = await this.request<any>(
        'DELETE',
        this.path(res, ref.namespace, ref.name),
        `delete ${res.plural}/${ref.name}`,
        {body},
      )
      return answer?.kind === 'Status' ? undefined : answer
    } catch (error) {
      if (isNotFound(error)) return undefined
      throw error
    }
  }
}

/** A ClusterApi for a kubeconfig file, loaded with kubectl's rules (src/kube/config.ts). */
export async function clusterApiFromKubeconfig(
  file: string,
  opts: {context?: string; userAgent?: string; fieldManager?: string} = {},
): Promise<ClusterApi> {
  const {loadKubeConfig} = await import('../../../src/kube/config.js')
  const kc = await loadKubeConfig({kubeconfig: file, ...(opts.context ? {context: opts.context} : {})}, {})
  return new ClusterApi(kc, opts)
}

/** A ClusterApi for kubeconfig text (the in-repo server hands out kubeconfigs as strings). */
export async function clusterApiFromKubeconfigText(
  text: string,
  opts: {userAgent?: string; fieldManager?: string} = {},
): Promise<ClusterApi> {
  const {KubeConfig} = await import('@kubernetes/client-node')
  const kc = new KubeConfig()
  kc.loadFromString(text)
  return new ClusterApi(kc, opts)
}
