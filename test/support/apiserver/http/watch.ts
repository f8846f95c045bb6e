// ?watch=true on a list endpoint: newline-delimited JSON events over a chunked response,
// kept open until timeoutSeconds, the client leaves, or the server closes. Semantics of the
// watch cache: no resourceVersion (or "0") starts with synthetic ADDED events for the
// current state; a resourceVersion older than the kept history gets an ERROR event with a
// 410 Expired Status; with selectors, an object entering or leaving the selection is seen as
// ADDED or DELETED.
import type {ServerResponse} from 'node:http'
import type {ApiCore} from '../api-core.js'
import {gone} from '../errors.js'
import type {FieldRequirement, LabelSelector} from '../meta/selectors.js'
import {ExpiredError, type StoreEvent} from '../store/store.js'
import {apiVersionOf, resourceKey, type JsonObject, type ResourceType} from '../types.js'

export interface WatchRequest {
  rt: ResourceType
  version: string
  namespace?: string
  selectors: {labels: LabelSelector; fields: FieldRequirement[]}
  resourceVersion?: string
  timeoutSeconds?: number
  allowWatchBookmarks: boolean
  sendInitialEvents?: boolean
}

export class WatchHub {
  private readonly open = new Set<() => void>()

  constructor(private readonly core: ApiCore) {}

  /** Ends every open watch (server shutdown). */
  closeAll(): void {
    for (const end of [...this.open]) end()
  }

  get count(): number {
    return this.open.size
  }

  serve(res: ServerResponse, w: WatchRequest, onEnd: () => void): void {
    const {rt, version} = w
    const store = this.core.store
    const rk = resourceKey(rt.group, rt.plural)
    res.writeHead(200, {
      'Content-Type': 'application/json',
      'Cache-Control': 'no-cache, private',
      'Transfer-Encoding': 'chunked',
    })
    res.flushHeaders()

    const inScope = (o: JsonObject | undefined) =>
      o !== undefined &&
      (!rt.namespaced || w.namespace === undefined || o.metadata?.namespace === w.namespace) &&
      this.core.matches(rt, o, w.selectors)
    const send = (type: string, object: JsonObject) => {
      if (!res.writableEnded) res.write(`${JSON.stringify({type, object})}\n`)
    }
    const emit = (ev: StoreEvent) => {
      if (ev.resource !== rk) return
      const now = inScope(ev.type === 'DELETED' ? ev.prev : ev.object)
      const before = ev.prev !== undefined && inScope(ev.prev)
      if (ev.type === 'ADDED') {
        if (now) send('ADDED', this.core.present(rt, ev.object, version))
      } else if (ev.type === 'DELETED') {
        if (before) send('DELETED', this.core.present(rt, ev.object, version))
      } else if (now && before) send('MODIFIED', this.core.present(rt, ev.object, version))
      else if (now) send('ADDED', this.core.present(rt, ev.object, version))
      else if (before) send('DELETED', this.core.present(rt, ev.object, version))
    }
    const bookmark = (rv: number, initialEventsEnd: boolean) => {
      if (!w.allowWatchBookmarks) return
      const metadata: JsonObject = {resourceVersion: String(rv)}
      if (initialEventsEnd) metadata.annotations = {'k8s.io/initial-events-end': 'true'}
      send('BOOKMARK', {kind: rt.kind, apiVersion: apiVersionOf(rt.group, version), metadata})
    }

    let ended = false
    let timer: NodeJS.Timeout | undefined
    let unsubscribe = () => {}
    const end = () => {
      if (ended) return
      ended = true
      unsubscribe()
      if (timer) clearTimeout(timer)
      this.open.delete(end)
      if (!res.writableEnded) res.end()
      onEnd()
    }
    this.open.add(end)
    res.on('close', end)

    const rvParam = w.resourceVersion
    const fromCurrent = rvParam === undefined || rvParam === '' || rvParam === '0'
    if (fromCurrent || w.sendInitialEvents) {
      const start = store.currentRv
      for (const o of store.list(rk, rt.namespaced ? w.namespace : undefined))
        if (inScope(o)) send('ADDED', this.core.present(rt, o, version))
      if (w.sendInitialEvents) bookmark(start, true)
      unsubscribe = store.subscribe(emit)
    } else {
      const from = Number(rvParam)
      let backlog: StoreEvent[]
      try {
        backlog = store.eventsSince(from)
      } catch (e) {
        if (!(e instanceof ExpiredError)) throw e
        send('ERROR', gone(`too old resource version: ${from} (${store.oldestRv})`).status as unknown as JsonObject)
        end()
        return
      }
      for (const ev of backlog) emit(ev)
      unsubscribe = store.subscribe(emit)
    }
    if (w.timeoutSeconds !== undefined && w.timeoutSeconds > 0) timer = setTimeout(end, w.timeoutSeconds * 1000)
  }
}
