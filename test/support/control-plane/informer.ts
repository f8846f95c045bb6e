// A list+watch cache of one resource (client-go's informer, reduced to what the fake controllers
// need). The controllers' own writes are put into the cache as soon as the server answers
// (write-through), so a controller sees what it just did without waiting for the watch event; a
// stale watch event can then not undo it, because events older than the cached object are dropped
// (resourceVersions compared as integers when they are, see meta.compareResourceVersions).
import type {KubeObject} from '../../../src/planner/model.js'
import {ApiError, type ClusterApi, type Resource, type WatchHandle} from './api.js'
import {compareResourceVersions, keyOf} from './meta.js'

export type ChangeHandler = (obj: KubeObject | undefined, old: KubeObject | undefined) => void

export interface InformerSpec {
  /** apiVersions to try, first served wins (Gateway API v1, then v1beta1). */
  apiVersions: string[]
  kind: string
  /** Watch one namespace only. */
  namespace?: string
}

const RETRY_MS = 500
const ABSENT_RETRY_MS = 2000

export class Informer {
  private readonly cache = new Map<string, KubeObject>()
  /** uids this process deleted and whose DELETED event has not arrived: later events for them are stale. */
  private readonly tombstones = new Set<string>()
  private readonly handlers: ChangeHandler[] = []
  private resource?: Resource
  private resourceVersion = ''
  private watchHandle?: WatchHandle
  /** Incremented whenever the current watch is replaced or stopped: callbacks of older watches are ignored. */
  private watchGeneration = 0
  private retryTimer?: NodeJS.Timeout
  private stopped = false
  private syncedOnce?: Promise<void>
  private resolveSynced?: () => void
  /** True while the kind is not served (CRDs not installed yet). */
  absent = false
  lastError?: unknown

  constructor(
    private readonly api: ClusterApi,
    readonly spec: InformerSpec,
    private readonly onError: (where: string, error: unknown) => void,
  ) {}

  get kind(): string {
    return this.spec.kind
  }

  get served(): Resource | undefined {
    return this.resource
  }

  onChange(handler: ChangeHandler): void {
    this.handlers.push(handler)
  }

  /** Starts listing and watching; resolves after the first list (or once the kind is known to be absent). */
  start(): Promise<void> {
    this.syncedOnce ??= new Promise<void>((resolve) => {
      this.resolveSynced = resolve
    })
    void this.relistAndWatch()
    return this.syncedOnce
  }

  stop(): void {
    this.stopped = true
    this.watchGeneration++
    this.watchHandle?.stop()
    this.watchHandle = undefined
    if (this.retryTimer) clearTimeout(this.retryTimer)
  }

  list(namespace?: string): KubeObject[] {
    const all = [...this.cache.values()]
    return namespace === undefined ? all : all.filter((o) => o.metadata.namespace === namespace)
  }

  get(key: string): KubeObject | undefined {
    return this.cache.get(key)
  }

  // -------------------------------------------------------------------------------------------
  // Write-through

  /** Records the server's answer to one of our writes. */
  upsert(obj: KubeObject): void {
    const full = this.withType(obj)
    this.apply(full, false)
  }

  /** Records that an object is gone (our DELETE succeeded, or it was already absent). */
  remove(obj: KubeObject): void {
    const key = keyOf(obj)
    const old = this.cache.get(key)
    if (obj.metadata.uid) this.tombstones.add(obj.metadata.uid)
    if (!old) return
    if (obj.metadata.uid && old.metadata.uid && old.metadata.uid !== obj.metadata.uid) return
    this.cache.delete(key)
    this.fire(undefined, old)
  }

  /**
   * Lists again and reconciles the cache with the answer; resolves true when the cache had missed
   * something (waitForIdle uses this as its barrier).
   */
  async resync(): Promise<boolean> {
    if (this.stopped) return false
    const res = await this.resolve()
    if (!res) return false
    const listed = await this.api.list(res, this.spec.namespace === undefined ? {} : {namespace: this.spec.namespace})
    return this.replace(listed.items, listed.resourceVersion)
  }

  // -------------------------------------------------------------------------------------------

  private withType(obj: KubeObject): KubeObject {
    const res = this.resource
    return res ? {...obj, apiVersion: res.apiVersion, kind: res.kind} : obj
  }

  private fire(obj: KubeObject | undefined, old: KubeObject | undefined): void {
    for (const h of this.handlers) {
      try {
        h(obj, old)
      } catch (error) {
        this.onError(`${this.kind} handler`, error)
      }
    }
  }

  /** Upserts unless the cached copy is newer; `fromServerStream` events of tombstoned objects are stale. */
  private apply(obj: KubeObject, fromServerStream: boolean): boolean {
    const key = keyOf(obj)
    if (fromServerStream && obj.metadata.uid && this.tombstones.has(obj.metadata.uid)) return false
    const old = this.cache.get(key)
    if (old) {
      // resourceVersions are one global order (same name re-created or not): older news is stale.
      const order = compareResourceVersions(obj.metadata.resourceVersion, old.metadata.resourceVersion)
      if (order !== undefined && order <= 0) return false
    }
    this.cache.set(key, obj)
    this.fire(obj, old)
    return true
  }

  private replace(items: KubeObject[], listRv: string): boolean {
    let changed = false
    const seen = new Set<string>()
    for (const item of items) {
      const obj = this.withType(item)
      seen.add(keyOf(obj))
      const uid = obj.metadata.uid
      if (uid && this.tombstones.has(uid)) continue
      if (this.apply(obj, false)) changed = true
    }
    for (const [key, old] of [...this.cache]) {
      if (seen.has(key)) continue
      // Created after the list was taken (our own write-through): keep.
      const order = compareResourceVersions(old.metadata.resourceVersion, listRv)
      if (order !== undefined && order > 0) continue
      this.cache.delete(key)
      this.fire(undefined, old)
      changed = true
    }
    // A list is authoritative: the deletions we were waiting to hear about have happened.
    const present = new Set(items.map((o) => o.metadata.uid))
    for (const uid of [...this.tombstones]) if (!present.has(uid)) this.tombstones.delete(uid)
    if (compareResourceVersions(listRv, this.resourceVersion) !== -1) this.resourceVersion = listRv
    return changed
  }

  private async resolve(): Promise<Resource | undefined> {
    if (this.resource) return this.resource
    const res = await this.api.resource(this.spec.apiVersions, this.spec.kind)
    if (res) this.resource = res
    this.absent = !res
    return res
  }

  private schedule(ms: number): void {
    if (this.stopped) return
    if (this.retryTimer) clearTimeout(this.retryTimer)
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined
      void this.relistAndWatch()
    }, ms)
    this.retryTimer.unref?.()
  }

  private async relistAndWatch(): Promise<void> {
    if (this.stopped) return
    this.watchGeneration++
    this.watchHandle?.stop()
    this.watchHandle = undefined
    try {
      const res = await this.resolve()
      if (!res) {
        this.resolveSynced?.()
        this.schedule(ABSENT_RETRY_MS)
        return
      }
      const listed = await this.api.list(res, this.spec.namespace === undefined ? {} : {namespace: this.spec.namespace})
      if (this.stopped) return
      this.replace(listed.items, listed.resourceVersion)
      this.resourceVersion = listed.resourceVersion
      this.resolveSynced?.()
      this.lastError = undefined
      await this.startWatch(res)
    } catch (error) {
      this.lastError = error
      if (error instanceof ApiError && error.status === 404) this.resource = undefined
      this.onError(`list ${this.kind}`, error)
      this.schedule(RETRY_MS)
    }
  }

  private async startWatch(res: Resource): Promise<void> {
    const generation = ++this.watchGeneration
    const current = () => generation === this.watchGeneration && !this.stopped
    const handle: WatchHandle | undefined = await this.api.watch(
      res,
      {
        ...(this.spec.namespace === undefined ? {} : {namespace: this.spec.namespace}),
        resourceVersion: this.resourceVersion,
      },
      (event) => {
        if (!current()) return
        switch (event.type) {
          case 'ADDED':
          case 'MODIFIED': {
            const obj = this.withType(event.object as KubeObject)
            this.apply(obj, true)
            this.advance(obj.metadata.resourceVersion)
            break
          }
          case 'DELETED': {
            const obj = this.withType(event.object as KubeObject)
            const key = keyOf(obj)
            if (obj.metadata.uid) this.tombstones.delete(obj.metadata.uid)
            const old = this.cache.get(key)
            if (old && (!old.metadata.uid || old.metadata.uid === obj.metadata.uid)) {
              this.cache.delete(key)
              this.fire(undefined, old)
            }
            this.advance(obj.metadata.resourceVersion)
            break
          }
          case 'BOOKMARK':
            this.advance(event.object?.metadata?.resourceVersion)
            break
          case 'ERROR': {
            // 410 Gone: our resourceVersion is too old; list again.
            this.watchGeneration++
            handle?.stop()
            this.schedule(0)
            break
          }
        }
      },
      (error) => {
        if (!current()) return
        this.watchGeneration++
        if (error && !(error instanceof Error && error.name === 'AbortError')) {
          this.onError(`watch ${this.kind}`, error)
          this.schedule(RETRY_MS)
          return
        }
        // The server closed the stream (timeoutSeconds): resume from where we were.
        void this.startWatch(res).catch((e: unknown) => {
          this.onError(`watch ${this.kind}`, e)
          this.schedule(RETRY_MS)
        })
      },
    )
    if (generation !== this.watchGeneration || this.stopped) handle.stop()
    else this.watchHandle = handle
  }

  private advance(rv: string | undefined): void {
    if (rv && compareResourceVersions(rv, this.resourceVersion) !== -1) this.resourceVersion = rv
  }
}
