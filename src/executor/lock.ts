// One operator per namespace (SPEC §7 "Locking"): a coordination.k8s.io Lease in the namespace,
// held for the whole apply/rollback and renewed while it runs. Creating the Lease is the atomic
// test-and-set; a holder that stops renewing (killed process) lets its lease expire.
import {randomBytes} from 'node:crypto'
import os from 'node:os'

import {LockHeldError, UserError} from '../errors.js'
import {KubeApiError, writeMayHaveApplied} from '../kube/errors.js'
import type {KubeClient} from '../kube/types.js'
import type {KubeObject, ObjectRef} from '../planner/model.js'
import {MANAGED_BY_LABEL, MANAGED_BY_VALUE} from '../planner/plan-types.js'

export const LOCK_NAME = 'mesh-migrate-lock'
export const LOCK_INFO_ANNOTATION = 'mesh-migrate.io/lock-info'
const LEASE_SECONDS = 60
const RENEW_EVERY_MS = 15_000

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

export function whoAmI(): string {
  let user = 'unknown'
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

/** Whether the holder stopped renewing: its lease ran out. */
export function leaseExpired(lease: KubeObject, now = Date.now()): boolean {
  const renew = Date.parse(lease.spec?.renewTime ?? lease.spec?.acquireTime ?? '')
  const seconds = lease.spec?.leaseDurationSeconds ?? LEASE_SECONDS
  return !lease.spec?.holderIdentity || Number.isNaN(renew) || renew + seconds * 1000 < now
}

export function describeHolder(lease: KubeObject): string {
  const info = readLockInfo(lease)
  return info ? `${info.who} (${info.command}, since ${info.startedAt})` : `${lease.spec?.holderIdentity ?? 'unknown holder'}`
}

/** Who holds the namespace's lock and still renews it; undefined when it is free or expired. */
export async function liveHolder(client: KubeClient, namespace: string): Promise<string | undefined> {
  const lease = await client.get(lockRef(namespace))
  return lease && !leaseExpired(lease) ? describeHolder(lease) : undefined
}

export function lockHeldSuggestion(namespace: string): string {
  return `Wait for it to finish. If its holder is dead (killed, machine gone), break the lock with \`mesh-migrate unlock ${namespace}\`, or wait for the lease to expire (${LEASE_SECONDS} s after its last renewal).`
}

export class NamespaceLock {
  private renewTimer?: NodeJS.Timeout
  private resourceVersion?: string
  /** Set when renewing fails because someone else took the lease: writes must stop. */
  lost?: string

  private constructor(private readonly client: KubeClient, private readonly namespace: string, readonly info: LockInfo) {}

  static async acquire(client: KubeClient, opts: {namespace: string; command: string; plan: string; timeoutMs: number; onWait?: (holder: string) => void; onTakeover?: (holder: string) => void}): Promise<NamespaceLock> {
    const info: LockInfo = {
      holder: `${whoAmI()}/${process.pid}/${randomBytes(3).toString('hex')}`,
      who: whoAmI(),
      command: opts.command,
      plan: opts.plan,
      startedAt: new Date().toISOString(),
    }
    const lock = new NamespaceLock(client, opts.namespace, info)
    const deadline = Date.now() + opts.timeoutMs
    let waited = false
    for (;;) {
      const holder = await lock.tryAcquire(opts.onTakeover)
      if (holder === undefined) {
        lock.startRenewing()
        return lock
      }
      if (Date.now() >= deadline) {
        throw new LockHeldError(`namespace ${opts.namespace} is locked by ${holder}`, lockHeldSuggestion(opts.namespace))
      }
      if (!waited) opts.onWait?.(holder)
      waited = true
      await new Promise((r) => setTimeout(r, Math.min(2000, Math.max(100, deadline - Date.now()))))
    }
  }

  /** undefined when acquired, else a description of the current holder. */
  private async tryAcquire(onTakeover?: (holder: string) => void): Promise<string | undefined> {
    const ref = lockRef(this.namespace)
    const now = microTime()
    const body: KubeObject = {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: {
        name: LOCK_NAME,
        namespace: this.namespace,
        labels: {[MANAGED_BY_LABEL]: MANAGED_BY_VALUE},
        annotations: {[LOCK_INFO_ANNOTATION]: JSON.stringify(this.info)},
      },
      spec: {holderIdentity: this.info.holder, leaseDurationSeconds: LEASE_SECONDS, acquireTime: now, renewTime: now},
    }
    try {
      const created = await this.client.create(body)
      this.resourceVersion = created.metadata.resourceVersion
      return undefined
    } catch (error) {
      // The client does not resend a create after a dropped connection or a 5xx: the server may have made
      // the Lease anyway, so read it back.
      if (writeMayHaveApplied(error) && (await this.ownLease().catch(() => undefined))) return undefined
      if (!(error instanceof KubeApiError && error.status === 409)) throw lockError(error, this.namespace)
    }
    const current = await this.client.get(ref)
    if (!current) return this.tryAcquire(onTakeover)
    // AlreadyExists for our own Lease: an earlier send of this create was applied (resent by a proxy or after
    // an ambiguous failure). It is ours.
    if (current.spec?.holderIdentity === this.info.holder) {
      this.resourceVersion = current.metadata.resourceVersion
      return undefined
    }
    if (!leaseExpired(current)) return describeHolder(current)
    // The holder is gone (released or stopped renewing): take over, guarded by resourceVersion.
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
    }, RENEW_EVERY_MS)
    this.renewTimer.unref()
  }

  private async renew(): Promise<void> {
    try {
      const updated = await this.client.mergePatch(lockRef(this.namespace), {
        metadata: {resourceVersion: this.resourceVersion},
        spec: {renewTime: microTime(), holderIdentity: this.info.holder},
      })
      this.resourceVersion = updated.metadata.resourceVersion
    } catch (error) {
      if (error instanceof KubeApiError && (error.status === 409 || error.status === 404)) {
        // A 409 may be the resend of our own renewal after a dropped connection: still ours then.
        if (error.status === 409 && (await this.ownLease().catch(() => undefined))) return
        this.lost = 'the lock was broken or taken over by someone else'
      }
      // Transient failures: the next renewal retries; the lease lasts 4 renewal periods.
    }
  }

  /** Throw if another operator broke or took over the lock: no further writes. */
  assertHeld(): void {
    if (this.lost) throw new LockHeldError(`lost the lock on namespace ${this.namespace}: ${this.lost}`, 'Check who holds it (mesh-migrate status) before retrying.')
  }

  async release(): Promise<void> {
    if (this.renewTimer) clearInterval(this.renewTimer)
    if (this.lost) return
    const ref = lockRef(this.namespace)
    const current = await this.client.get(ref).catch(() => undefined)
    if (current?.spec?.holderIdentity !== this.info.holder) return
    await this.client.delete(ref, {preconditions: {resourceVersion: current.metadata.resourceVersion!}}).catch(() => undefined)
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
