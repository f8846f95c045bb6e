// The object store: one global resourceVersion counter (like etcd's revision), a bounded
// event history used for watches and for consistent paginated lists (a list continued at
// revision R is rebuilt from the current state by undoing the events after R), and
// listeners for watch streams. Objects are kept in their storage version.
import {deepCopy} from '../validation/schema.js'
import type {JsonObject} from '../types.js'

export type EventType = 'ADDED' | 'MODIFIED' | 'DELETED'

export interface StoreEvent {
  type: EventType
  rv: number
  /** resourceKey(group, plural) */
  resource: string
  namespace: string
  name: string
  /** The object after the change (for DELETED: its last state, stamped with the deletion revision). */
  object: JsonObject
  /** The object before the change (MODIFIED, DELETED). */
  prev?: JsonObject
}

export class ExpiredError extends Error {
  constructor(
    readonly requested: number,
    readonly oldest: number,
  ) {
    super(`revision ${requested} has been compacted (oldest kept: ${oldest})`)
  }
}

export function objectKey(namespace: string, name: string): string {
  return namespace ? `${namespace}/${name}` : name
}

export class Store {
  private rv: number
  private readonly objects = new Map<string, Map<string, JsonObject>>()
  private readonly history: StoreEvent[] = []
  /** Events at or below this revision are gone from history. */
  private compactedRv: number
  private readonly listeners = new Set<(ev: StoreEvent) => void>()

  constructor(
    private readonly historyLimit = 10_000,
    startRv = 1,
  ) {
    this.rv = startRv
    this.compactedRv = startRv
  }

  get currentRv(): number {
    return this.rv
  }

  /** Oldest revision that watches and continued lists can start from. */
  get oldestRv(): number {
    return this.compactedRv
  }

  private table(resource: string): Map<string, JsonObject> {
    let t = this.objects.get(resource)
    if (!t) {
      t = new Map()
      this.objects.set(resource, t)
    }
    return t
  }

  get(resource: string, namespace: string, name: string): JsonObject | undefined {
    const o = this.objects.get(resource)?.get(objectKey(namespace, name))
    return o ? deepCopy(o) : undefined
  }

  /** Current objects, sorted by key (namespace/name) as etcd returns them. */
  list(resource: string, namespace?: string): JsonObject[] {
    const t = this.objects.get(resource)
    if (!t) return []
    return [...t.entries()]
      .filter(([, o]) => namespace === undefined || (o.metadata?.namespace ?? '') === namespace)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([, o]) => deepCopy(o))
  }

  /** Objects of a resource as they were at revision `at`. Throws ExpiredError when compacted. */
  snapshot(resource: string, at: number, namespace?: string): JsonObject[] {
    if (at >= this.rv) return this.list(resource, namespace)
    if (at < this.compactedRv) throw new ExpiredError(at, this.compactedRv)
    const state = new Map<string, JsonObject>()
    for (const [k, o] of this.objects.get(resource) ?? []) state.set(k, o)
    for (let i = this.history.length - 1; i >= 0; i--) {
      const ev = this.history[i]!
      if (ev.rv <= at) break
      if (ev.resource !== resource) continue
      const key = objectKey(ev.namespace, ev.name)
      if (ev.type === 'ADDED') state.delete(key)
      else state.set(key, ev.prev!)
    }
    return [...state.entries()]
      .filter(([, o]) => namespace === undefined || (o.metadata?.namespace ?? '') === namespace)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([, o]) => deepCopy(o))
  }

  /** Events after revision `after`, oldest first. Throws ExpiredError when compacted. */
  eventsSince(after: number): StoreEvent[] {
    if (after < this.compactedRv) throw new ExpiredError(after, this.compactedRv)
    const out: StoreEvent[] = []
    for (let i = this.history.length - 1; i >= 0 && this.history[i]!.rv > after; i--) out.unshift(this.history[i]!)
    return out
  }

  /** Stores a new or changed object under a new revision; returns the stored copy. */
  put(resource: string, obj: JsonObject): JsonObject {
    const ns = obj.metadata.namespace ?? ''
    const name = obj.metadata.name
    const key = objectKey(ns, name)
    const t = this.table(resource)
    const prev = t.get(key)
    const rv = ++this.rv
    const stored = deepCopy(obj)
    stored.metadata.resourceVersion = String(rv)
    t.set(key, stored)
    this.record({
      type: prev ? 'MODIFIED' : 'ADDED',
      rv,
      resource,
      namespace: ns,
      name,
      object: stored,
      ...(prev ? {prev} : {}),
    })
    return deepCopy(stored)
  }

  /** Removes an object under a new revision; returns its last state (stamped with that revision). */
  remove(resource: string, namespace: string, name: string): JsonObject | undefined {
    const t = this.objects.get(resource)
    const key = objectKey(namespace, name)
    const prev = t?.get(key)
    if (!t || !prev) return undefined
    t.delete(key)
    const rv = ++this.rv
    const last = deepCopy(prev)
    last.metadata.resourceVersion = String(rv)
    this.record({type: 'DELETED', rv, resource, namespace, name, object: last, prev})
    return deepCopy(last)
  }

  /** Every stored object of every resource in a namespace (for namespace deletion). */
  namespaceContents(namespace: string): {resource: string; obj: JsonObject}[] {
    const out: {resource: string; obj: JsonObject}[] = []
    for (const [resource, t] of this.objects)
      for (const o of t.values()) if (o.metadata?.namespace === namespace) out.push({resource, obj: deepCopy(o)})
    return out
  }

  /** Every stored object, for owner-reference garbage collection. */
  allObjects(): {resource: string; obj: JsonObject}[] {
    const out: {resource: string; obj: JsonObject}[] = []
    for (const [resource, t] of this.objects) for (const o of t.values()) out.push({resource, obj: o})
    return out
  }

  subscribe(fn: (ev: StoreEvent) => void): () => void {
    this.listeners.add(fn)
    return () => this.listeners.delete(fn)
  }

  private record(ev: StoreEvent): void {
    this.history.push(ev)
    while (this.history.length > this.historyLimit) {
      const dropped = this.history.shift()!
      this.compactedRv = dropped.rv
    }
    for (const fn of [...this.listeners]) fn(ev)
  }
}
