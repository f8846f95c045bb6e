// A controller's work queue (client-go's workqueue, reduced): keys are deduplicated, one key is never
// reconciled twice at the same time (a key added while it runs is run again afterwards), failures are
// retried with per-key exponential backoff, and a reconcile can ask to be called again later.
// `idle` (nothing queued, running or waiting for a timer) is what waitForIdle builds on.
import {isConflict} from './api.js'

export interface ReconcileResult {
  /** Call again after this many milliseconds (readiness delays, minReadySeconds). */
  requeueAfterMs?: number
}

export type Reconcile = (key: string) => Promise<ReconcileResult | void>

const BACKOFF_MIN_MS = 20
const BACKOFF_MAX_MS = 5000

export class WorkQueue {
  private readonly queued: string[] = []
  private readonly queuedSet = new Set<string>()
  private readonly running = new Set<string>()
  private readonly dirty = new Set<string>()
  private readonly timers = new Map<string, {at: number; timer: NodeJS.Timeout}>()
  private readonly failures = new Map<string, number>()
  private active = 0
  private stopped = false
  /** Keys are collected but not worked on (until the caches have synced, like WaitForCacheSync). */
  private paused = false
  /** Last failure per key (cleared on success), for diagnostics. */
  readonly lastErrors = new Map<string, unknown>()

  constructor(
    readonly name: string,
    private readonly reconcile: Reconcile,
    private readonly opts: {workers?: number; onError?: (queue: string, key: string, error: unknown) => void} = {},
  ) {}

  add(key: string): void {
    if (this.stopped) return
    if (this.running.has(key)) {
      this.dirty.add(key)
      return
    }
    if (this.queuedSet.has(key)) return
    this.queuedSet.add(key)
    this.queued.push(key)
    this.pump()
  }

  /** Adds the key after `ms`; an earlier pending timer for the key wins. */
  addAfter(key: string, ms: number): void {
    if (this.stopped) return
    if (ms <= 0) {
      this.add(key)
      return
    }
    const at = Date.now() + ms
    const existing = this.timers.get(key)
    if (existing && existing.at <= at) return
    if (existing) clearTimeout(existing.timer)
    const timer = setTimeout(() => {
      this.timers.delete(key)
      this.add(key)
    }, ms)
    this.timers.set(key, {at, timer})
  }

  pause(): void {
    this.paused = true
  }

  resume(): void {
    this.paused = false
    this.pump()
  }

  /** Nothing queued, nothing running, no timer pending. */
  get idle(): boolean {
    return this.queued.length === 0 && this.running.size === 0 && this.timers.size === 0
  }

  /** What keeps the queue busy, for waitForIdle's timeout message. */
  describeBusy(): string[] {
    const out: string[] = []
    for (const k of this.running) out.push(`${this.name}: reconciling ${k}`)
    for (const k of this.queued) out.push(`${this.name}: queued ${k}`)
    for (const [k, t] of this.timers) {
      const error = this.lastErrors.get(k)
      out.push(
        `${this.name}: ${k} again in ${Math.max(0, t.at - Date.now())} ms${error ? ` (after: ${error instanceof Error ? error.message : String(error)})` : ''}`,
      )
    }
    return out
  }

  stop(): void {
    this.stopped = true
    for (const {timer} of this.timers.values()) clearTimeout(timer)
    this.timers.clear()
    this.queued.length = 0
    this.queuedSet.clear()
  }

  private pump(): void {
    const workers = this.opts.workers ?? 4
    while (!this.stopped && !this.paused && this.active < workers && this.queued.length > 0) {
      const key = this.queued.shift()!
      this.queuedSet.delete(key)
      this.running.add(key)
      this.active++
      void this.run(key)
    }
  }

  private async run(key: string): Promise<void> {
    let retryAfter: number | undefined
    try {
      const result = await this.reconcile(key)
      this.failures.delete(key)
      this.lastErrors.delete(key)
      if (result?.requeueAfterMs !== undefined) retryAfter = result.requeueAfterMs
    } catch (error) {
      const n = (this.failures.get(key) ?? 0) + 1
      this.failures.set(key, n)
      this.lastErrors.set(key, error)
      // A conflict means our view was stale: the watch brings the news, retry soon.
      retryAfter = isConflict(error) ? BACKOFF_MIN_MS : Math.min(BACKOFF_MAX_MS, BACKOFF_MIN_MS * 2 ** (n - 1))
      if (!isConflict(error)) this.opts.onError?.(this.name, key, error)
    } finally {
      this.running.delete(key)
      this.active--
    }
    if (this.dirty.delete(key)) this.add(key)
    else if (retryAfter !== undefined) this.addAfter(key, retryAfter)
    this.pump()
  }
}
