// One operator per namespace (SPEC §7 "Locking"): a coordination.k8s.io Lease in the namespace,
// held for the whole apply/rollback and renewed while it runs. Creating the Lease is the atomic
// test-and-set; a holder that stops renewing (killed process) lets its lease expire.
import {randomBytes} from 'node:crypto'
import os from 'node:os'

import {LockHeldError, UserError} from '../errors.js'
import {KubeApiError, writeMayHaveApplied} from '../kube/errors.js'
import {retryWithin} from '../kube/http-client.js'
import type {KubeClient} from '../kube/types.js'
import type {KubeObject, ObjectRef} from '../planner/model.js'
import {MANAGED_BY_LABEL, MANAGED_BY_VALUE} from '../planner/plan-types.js'

export const LOCK_NAME = 'mesh-migrate-lock'
export const LOCK_INFO_ANNOTATION = 'mesh-migrate.io/lock-info'
const LEASE_SECONDS = 60
const RENEW_EVERY_MS = 15_000
/** Creates of the Lease sent after failures that left it unmade (a dropped connection, a 5xx) before giving up. */
const CREATE_TRIES = 5
/**
 * renewTime is written with the holder's clock and read with ours: a Lease only counts as expired once it
 * is older than its duration plus this margin, so two operators' clocks may disagree by this much.
 */
export const CLOCK_SKEW_SECONDS = 30

/** Lease duration and renewal period (tests shorten them). */
export interface LockTiming {
  leaseSeconds: number
  renewEveryMs: number
}

export interface LockInfo {
  holder: string
  who: string
  command: string
  plan: string
  startedAt: string
}

export function lockRef(namespace: string): ObjectRef {
  return {apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', namespace, name: LOCK_NAME}
}

/** Kubernetes MicroTime: RFC 3339 with microseconds. */
function microTime(date = new Date()): string {
  return date.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z')
}

/**
 * The identity the API server authenticates (SelfSubjectReview, authentication.k8s.io/v1, GA in
 * Kubernetes 1.28: what `kubectl auth whoami` shows), for the plan's record of who applied a step.
 * undefined when the server does not serve it or refuses it; the caller falls back to the local user.
 */
export async function kubernetesIdentity(client: KubeClient): Promise<string | undefined> {
  try {
    if (!(await client.resourceFor('authentication.k8s.io/v1', 'SelfSubjectReview'))) return undefined
    const review = await client.create({
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'SelfSubjectReview',
      metadata: {name: ''},
    })
    const username = review.status?.userInfo?.username
    return typeof username === 'string' && username !== '' ? username : undefined
  } catch (error) {
    if (error instanceof KubeApiError && [403, 404, 405].includes(error.status)) return undefined
    throw error
  }
}

/** The local user and host running the command. */
export function whoAmI(): string {
  let user: string
  try {
    user = os.userInfo().username
  } catch {
    user = process.env.USER ?? 'unknown'
  }
  return `${user}@${os.hostname()}`
}

export function readLockInfo(lease: KubeObject | undefined): LockInfo | undefined {
  const raw = lease?.metadata.annotations?.[LOCK_INFO_ANNOTATION]
  if (!raw) return undefined
  try {
    return JSON.parse(raw) as LockInfo
  } catch {
    return undefined
  }
}

/**
 * Whether the holder stopped renewing: the renewTime it recorded is older than the lease duration plus
 * CLOCK_SKEW_SECONDS by our clock (a holder whose clock runs ahead looks fresher, never expired early).
 */
export function leaseExpired(lease: KubeObject, now = Date.now()): boolean {
  const renew = Date.parse(lease.spec?.renewTime ?? lease.spec?.acquireTime ?? '')
  const seconds = lease.spec?.leaseDurationSeconds ?? LEASE_SECONDS
  return !lease.spec?.holderIdentity || Number.isNaN(renew) || now - renew > (seconds + CLOCK_SKEW_SECONDS) * 1000
}

/**
 * The holder's process is known to be gone: the Lease names this host (holder "user@host/pid/…") and no
 * process with that PID runs here. A holder on another host, or a PID that runs (maybe reused by another
 * process), is not known to be gone.
 */
export function holderProcessGone(lease: KubeObject, host = os.hostname()): {pid: number} | undefined {
  const holder = readLockInfo(lease)?.holder ?? lease.spec?.holderIdentity ?? ''
  const [who, pidText] = holder.split('/')
  const pid = Number(pidText)
  if (!who || who.slice(who.lastIndexOf('@') + 1) !== host || !Number.isInteger(pid) || pid <= 0) return undefined
  try {
    process.kill(pid, 0)
    return undefined
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === 'ESRCH' ? {pid} : undefined
  }
}

/** Whether the Lease still stands for a running holder: renewed in time, and not a dead process of this host. */
export function holderAlive(lease: KubeObject): boolean {
  return !leaseExpired(lease) && !holderProcessGone(lease)
}

/** Why a Lease no longer stands for a running holder, for messages ("expired", "process 123 …"). */
export function holderState(lease: KubeObject): string {
  if (leaseExpired(lease)) return 'expired: the holder stopped renewing'
  const gone = holderProcessGone(lease)
  if (gone) return `dead: process ${gone.pid} is not running on this host`
  return 'still being renewed: the holder looks alive'
}

export function describeHolder(lease: KubeObject): string {
  const info = readLockInfo(lease)
  // holder is "user@host/pid/nonce": the process and the host, so a person can find it.
  const pid = Number((info?.holder ?? lease.spec?.holderIdentity ?? '').split('/')[1])
  return info
    ? `${info.who}${Number.isInteger(pid) && pid > 0 ? ` process ${pid}` : ''} (${info.command}, since ${info.startedAt})`
    : `${lease.spec?.holderIdentity ?? 'unknown holder'}`
}

/** Who holds the namespace's lock and still renews it; undefined when it is free or expired. */
export async function liveHolder(client: KubeClient, namespace: string): Promise<string | undefined> {
  const lease = await client.get(lockRef(namespace))
  return lease && holderAlive(lease) ? describeHolder(lease) : undefined
}

export function lockHeldSuggestion(namespace: string): string {
  return `Wait for it to finish. If its holder is dead (killed, machine gone), break the lock with \`mesh-migrate unlock ${namespace}\`, or wait for the lease to expire (${LEASE_SECONDS + CLOCK_SKEW_SECONDS} s after its last renewal).`
}

export class NamespaceLock {
  private renewTimer?: NodeJS.Timeout
  private resourceVersion?: string
  private renewing = false
  /** performance.now() when the last successful write of the Lease (create, takeover, renewal) was sent. */
  private heldSince = 0
  /** Set when someone else took the lease, or renewing failed for a whole lease duration: writes must stop. */
  lost?: string

  private constructor(
    private readonly client: KubeClient,
    private readonly namespace: string,
    readonly info: LockInfo,
    readonly timing: LockTiming,
  ) {}

  static async acquire(
    client: KubeClient,
    opts: {
      namespace: string
      command: string
      plan: string
      timeoutMs: number
      onWait?: (holder: string) => void
      onTakeover?: (holder: string) => void
      timing?: Partial<LockTiming>
    },
  ): Promise<NamespaceLock> {
    const info: LockInfo = {
      holder: `${whoAmI()}/${process.pid}/${randomBytes(3).toString('hex')}`,
      who: whoAmI(),
      command: opts.command,
      plan: opts.plan,
      startedAt: new Date().toISOString(),
    }
    const lock = new NamespaceLock(client, opts.namespace, info, {
      leaseSeconds: LEASE_SECONDS,
      renewEveryMs: RENEW_EVERY_MS,
      ...opts.timing,
    })
    const deadline = Date.now() + opts.timeoutMs
    let waited = false
    for (;;) {
      // The Lease's create and reads ride out passing faults (an API server restart) as long as a lease lasts: the
      // same patience its renewals have. A 403 still fails at once (lockError).
      const holder = await retryWithin({deadline: Date.now() + lock.timing.leaseSeconds * 1000}, () =>
        lock.tryAcquire(opts.onTakeover),
      )
      if (holder === undefined) {
        lock.startRenewing()
        return lock
      }
      if (Date.now() >= deadline) {
        throw new LockHeldError(
          `namespace ${opts.namespace} is locked by ${holder}`,
          lockHeldSuggestion(opts.namespace),
        )
      }
      if (!waited) opts.onWait?.(holder)
      waited = true
      await new Promise((r) => setTimeout(r, Math.min(2000, Math.max(100, deadline - Date.now()))))
    }
  }

  /** undefined when acquired, else a description of the current holder. `tries`: creates sent so far. */
  private async tryAcquire(onTakeover?: (holder: string) => void, tries = 1): Promise<string | undefined> {
    const ref = lockRef(this.namespace)
    const now = microTime()
    // Sent now: if this write makes us the holder, the lease runs from here at the latest.
    this.heldSince = performance.now()
    const body: KubeObject = {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: {
        name: LOCK_NAME,
        namespace: this.namespace,
        labels: {[MANAGED_BY_LABEL]: MANAGED_BY_VALUE},
        annotations: {[LOCK_INFO_ANNOTATION]: JSON.stringify(this.info)},
      },
      spec: {
        holderIdentity: this.info.holder,
        leaseDurationSeconds: this.timing.leaseSeconds,
        acquireTime: now,
        renewTime: now,
      },
    }
    try {
      const created = await this.client.create(body)
      this.resourceVersion = created.metadata.resourceVersion
      return undefined
    } catch (error) {
      // The client does not resend a create after a dropped connection or a 5xx: the server may have made
      // the Lease anyway, so read it back (that read rides out the fault); no Lease yet means it was not made.
      const unknown = writeMayHaveApplied(error)
      if (unknown && (await this.ownLease().catch(() => undefined))) return undefined
      if (!unknown && !(error instanceof KubeApiError && error.status === 409)) throw lockError(error, this.namespace)
      if (unknown && tries >= CREATE_TRIES) throw lockError(error, this.namespace)
    }
    const current = await this.client.get(ref)
    if (!current) return this.tryAcquire(onTakeover, tries + 1)
    // AlreadyExists for our own Lease: an earlier send of this create was applied (resent by a proxy or after
    // an ambiguous failure). It is ours.
    if (current.spec?.holderIdentity === this.info.holder) {
      this.resourceVersion = current.metadata.resourceVersion
      return undefined
    }
    if (holderAlive(current)) return describeHolder(current)
    // The holder is gone (released, stopped renewing, or its process on this host died): take over, guarded by resourceVersion.
    try {
      const updated = await this.client.mergePatch(ref, {
        metadata: {resourceVersion: current.metadata.resourceVersion, annotations: body.metadata.annotations},
        spec: body.spec,
      })
      this.resourceVersion = updated.metadata.resourceVersion
      if (current.spec?.holderIdentity) onTakeover?.(describeHolder(current))
      return undefined
    } catch (error) {
      if (error instanceof KubeApiError && error.status === 409) {
        // Our own takeover, applied before the connection dropped, makes its resend conflict.
        if (await this.ownLease()) {
          if (current.spec?.holderIdentity) onTakeover?.(describeHolder(current))
          return undefined
        }
        return describeHolder(current)
      }
      throw lockError(error, this.namespace)
    }
  }

  /** The Lease when it names this holder (recording its resourceVersion), else undefined. */
  private async ownLease(): Promise<KubeObject | undefined> {
    const lease = await this.client.get(lockRef(this.namespace))
    if (lease?.spec?.holderIdentity !== this.info.holder) return undefined
    this.resourceVersion = lease.metadata.resourceVersion
    return lease
  }

  private startRenewing(): void {
    this.renewTimer = setInterval(() => {
      void this.renew()
    }, this.timing.renewEveryMs)
    this.renewTimer.unref()
  }

  private async renew(): Promise<void> {
    // One renewal at a time: a hanging request must not pile up others behind it.
    if (this.lost || this.renewing) return
    this.renewing = true
    const sentAt = performance.now()
    // A renewal rides out passing faults until the lease it renews would run out (then checkRenewed gives it up).
    const left = this.timing.leaseSeconds * 1000 - (sentAt - this.heldSince)
    try {
      const updated = await retryWithin({deadline: Date.now() + left}, () =>
        this.client.mergePatch(lockRef(this.namespace), {
          metadata: {resourceVersion: this.resourceVersion},
          spec: {renewTime: microTime(), holderIdentity: this.info.holder},
        }),
      )
      if (updated.spec?.holderIdentity === this.info.holder) {
        this.resourceVersion = updated.metadata.resourceVersion
        this.heldSince = sentAt
      } else {
        this.lost = `the Lease now names ${describeHolder(updated)} as its holder`
      }
    } catch (error) {
      if (error instanceof KubeApiError && (error.status === 409 || error.status === 404)) {
        // A 409 may be the resend of our own renewal after a dropped connection: still ours then.
        const own = error.status === 409 ? await this.ownLease().catch(() => undefined) : undefined
        if (own) this.heldSince = sentAt
        else this.lost = await this.lossReason()
      }
      // Other failures: the next renewal retries, until a whole lease duration has passed (checkRenewed).
    } finally {
      this.renewing = false
      this.checkRenewed()
    }
  }

  /** Who has the Lease now, for the message when it was taken over or broken. */
  private async lossReason(): Promise<string> {
    const lease = await this.client.get(lockRef(this.namespace)).catch(() => undefined)
    if (!lease) return 'the lock was broken (its Lease was deleted, e.g. by `mesh-migrate unlock`)'
    return `the lock was taken over by ${describeHolder(lease)}`
  }

  /** Without a successful renewal for a whole lease duration, another operator may rightly take the lock. */
  private checkRenewed(): void {
    if (this.lost || !this.renewTimer) return
    const since = performance.now() - this.heldSince
    if (since >= this.timing.leaseSeconds * 1000) {
      this.lost = `could not renew it for ${Math.round(since / 1000)} s (the lease lasts ${this.timing.leaseSeconds} s), so another operator may have taken it over`
    }
  }

  /** Throw if another operator broke or took over the lock, or it could not be renewed in time: no further writes. */
  assertHeld(): void {
    this.checkRenewed()
    if (this.lost)
      throw new LockHeldError(
        `lost the lock on namespace ${this.namespace}: ${this.lost}`,
        'mesh-migrate stopped writing. Check who holds it and what state the namespace is in (`mesh-migrate status`) before retrying.',
      )
  }

  /**
   * Fencing (issue 20 §6): right before a write, read the Lease and check that it still names this holder at the
   * resourceVersion of its last renewal. A lock broken by `unlock --force` or taken over is noticed before the next
   * write, not at the next renewal.
   */
  async assertHeldNow(): Promise<void> {
    this.assertHeld()
    const lease = await this.client.get(lockRef(this.namespace))
    if (!lease) this.lost = 'the lock was broken (its Lease was deleted, e.g. by `mesh-migrate unlock --force`)'
    else if (lease.spec?.holderIdentity !== this.info.holder)
      this.lost = `the lock was taken over by ${describeHolder(lease)}`
    else this.resourceVersion = lease.metadata.resourceVersion
    this.assertHeld()
  }

  /** `client` with every write fenced by assertHeldNow: the client apply and rollback write through. */
  fenced(client: KubeClient): KubeClient {
    const check = () => this.assertHeldNow()
    return {
      get context() {
        return client.context
      },
      get server() {
        return client.server
      },
      discover: () => client.discover(),
      resourceFor: (apiVersion, kind) => client.resourceFor(apiVersion, kind),
      list: (resource, opts) => client.list(resource, opts),
      get: (ref) => client.get(ref),
      canI: (attrs) => client.canI(attrs),
      serverVersion: () => client.serverVersion(),
      create: async (obj, opts) => (await check(), client.create(obj, opts)),
      apply: async (obj, opts) => (await check(), client.apply(obj, opts)),
      mergePatch: async (ref, patch, opts) => (await check(), client.mergePatch(ref, patch, opts)),
      delete: async (ref, opts) => (await check(), client.delete(ref, opts)),
    }
  }

  async release(): Promise<void> {
    if (this.renewTimer) clearInterval(this.renewTimer)
    if (this.lost) return
    const ref = lockRef(this.namespace)
    const current = await this.client.get(ref).catch(() => undefined)
    if (current?.spec?.holderIdentity !== this.info.holder) return
    await this.client
      .delete(ref, {preconditions: {resourceVersion: current.metadata.resourceVersion!}})
      .catch(() => undefined)
  }
}

function lockError(error: unknown, namespace: string): unknown {
  if (error instanceof KubeApiError && error.status === 403) {
    return new UserError(`cannot take the lock on namespace ${namespace}: ${error.message}`, {
      suggestion: `mesh-migrate needs create/get/patch/delete on leases.coordination.k8s.io in namespace ${namespace} to make sure only one operator migrates it at a time.`,
    })
  }
  return error
}

/** Break a lock left by a dead holder (`mesh-migrate unlock`). */
export async function breakLock(client: KubeClient, namespace: string): Promise<KubeObject | undefined> {
  const ref = lockRef(namespace)
  const current = await client.get(ref)
  if (!current) return undefined
  await client.delete(ref)
  return current
}
