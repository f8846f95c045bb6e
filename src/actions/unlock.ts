// `unlock NAMESPACE` as an action (issue 23 §2): the namespace's lock read over an injected kube client (the options'
// ClusterConnection), a live holder refused without --force, the break confirmed by the namespace (--confirm or typed
// at the io's prompt), then the Lease deleted. The unlock command parses flags, runs it and says the outcome.
import type {ClusterConnection} from '../cli/plan-session.js'
import {CancelledError, LockHeldError, UsageError} from '../errors.js'
import {breakLock, describeHolder, holderAlive, holderState, lockRef} from '../executor/lock.js'
import type {KubeObject} from '../planner/model.js'
import {canPrompt, confirmByTyping} from '../ui/interactive.js'
import {type Io, writeErr} from '../ui/io.js'

export interface UnlockOptions {
  namespace: string
  cluster: ClusterConnection
  /** --confirm: the namespace, typed on the command line instead of at the prompt. */
  confirm: string | undefined
  /** --force: break a lock whose holder renewed it recently. */
  force: boolean
}

/** The lock's holder when it was released; none when the namespace was not locked. */
export async function unlockNamespace(o: UnlockOptions, io: Io): Promise<{released?: string}> {
  const client = await o.cluster.connect()
  const lease = await client.get(lockRef(o.namespace))
  if (!lease) return {}
  const holder = describeHolder(lease)
  writeErr(io, `Namespace ${o.namespace} is locked by ${holder} (${holderState(lease)}).`)
  refuseLiveHolder(o, lease, holder)
  await confirmBreak(o, holder, io)
  await breakLock(client, o.namespace)
  return {released: holder}
}

/** A holder that renewed recently is running: breaking its lock lets a second operator in beside it. */
function refuseLiveHolder(o: UnlockOptions, lease: KubeObject, holder: string): void {
  if (o.force || !holderAlive(lease)) return
  throw new LockHeldError(
    `the lock on ${o.namespace} is held by ${holder}, which renewed it at ${lease.spec?.renewTime ?? 'an unknown time'}: it looks alive, refusing to break it`,
    `Wait for it to finish, or stop that process; if you are sure it is not writing, \`mesh-migrate unlock ${o.namespace} --force\` (the holder then stops before its next write).`,
  )
}

/** Breaking a lock is confirmed by the namespace: typed at the prompt, or --confirm. */
async function confirmBreak(o: UnlockOptions, holder: string, io: Io): Promise<void> {
  if (o.confirm !== undefined) {
    if (o.confirm !== o.namespace) throw new UsageError(`--confirm ${o.confirm} does not match ${o.namespace}`)
  } else if (!canPrompt(io)) {
    throw new UsageError(
      `breaking the lock on ${o.namespace} needs confirmation, and there is no terminal to ask on`,
      `Pass --confirm ${o.namespace}.`,
    )
  } else if (!(await confirmByTyping(io, o.namespace, `Break the lock held by ${holder}`, '--confirm'))) {
    throw new CancelledError('the namespace typed does not match: the lock was left in place')
  }
}
