import * as Args from '@oclif/core/args'
import * as Flags from '@oclif/core/flags'

import {typed, type UnlockResult} from '../cli/contract.js'
import {clusterFlags, namespaceFlag, requireNamespaceOrContext} from '../cli/flags.js'
import {BaseCommand, EXIT_CODES_HELP, outputFlag, type OutputFormat} from '../cli/base.js'
import {ClusterConnection} from '../cli/plan-session.js'
import {CancelledError, LockHeldError, UsageError} from '../errors.js'
import {breakLock, describeHolder, holderAlive, holderState, lockRef} from '../executor/lock.js'
import type {KubeObject} from '../planner/model.js'
import {canPrompt, confirmByTyping} from '../ui/interactive.js'

export default class UnlockCommand extends BaseCommand {
  static override summary = 'Break the lock on a namespace left by an operator whose apply/rollback died.'
  static override description = `apply and rollback hold a Lease (mesh-migrate-lock) in the namespace while they run and renew it; a killed process leaves it until it expires (60 s lease plus a 30 s clock-skew margin). A holder that ran on this host and whose process is gone is shown as dead (apply takes its lock over without waiting). unlock deletes it at once, but refuses a holder that renewed its lease recently (it looks alive) unless --force: a holder whose lock is broken stops before its next write (it checks the Lease before every write), and names the process and host holding it. Only do this when you are sure the holder is not running: two operators migrating one namespace at the same time is what the lock prevents.

EXIT CODES
${EXIT_CODES_HELP}`

  static override examples = [
    '<%= config.bin %> unlock bookinfo',
    '<%= config.bin %> unlock bookinfo --confirm bookinfo',
    '<%= config.bin %> unlock bookinfo --confirm bookinfo --force',
  ]

  static override args = {namespace: Args.string({description: 'The locked namespace (or -n NAMESPACE).'})}
  static override flags = {
    namespace: namespaceFlag,
    output: outputFlag,
    confirm: Flags.string({description: 'The namespace, to confirm without a prompt.'}),
    force: Flags.boolean({
      description:
        'Break the lock even though its holder renewed it recently (it looks alive): it stops before its next write.',
    }),
    ...clusterFlags,
  }

  async run(): Promise<UnlockResult | undefined> {
    const options = await this.complete()
    const client = await options.cluster.connect()
    const lease = await client.get(lockRef(options.namespace))
    if (!lease) {
      this.result(`Namespace ${options.namespace} is not locked.`)
      return this.emit(typed('UnlockResult', {namespace: options.namespace}), options.output, () => '')
    }
    const holder = describeHolder(lease)
    this.note(`Namespace ${options.namespace} is locked by ${holder} (${holderState(lease)}).`)
    this.refuseLiveHolder(options, lease, holder)
    await this.validate(options, holder)
    await breakLock(client, options.namespace)
    this.result(
      `Lock on ${options.namespace} released. If the holder was still running, its next write stops with "lost the lock".`,
    )
    return this.emit(typed('UnlockResult', {namespace: options.namespace, released: holder}), options.output, () => '')
  }

  private async complete(): Promise<UnlockOptions> {
    const {args, flags} = await this.parse(UnlockCommand)
    return {
      namespace: await requireNamespaceOrContext(args.namespace, flags.namespace, flags, this.io.stderr),
      cluster: ClusterConnection.fromFlags(flags, this.io),
      confirm: flags.confirm,
      force: flags.force,
      output: flags.output,
    }
  }

  /** A holder that renewed recently is running: breaking its lock lets a second operator in beside it. */
  private refuseLiveHolder(o: UnlockOptions, lease: KubeObject, holder: string): void {
    if (o.force || !holderAlive(lease)) return
    throw new LockHeldError(
      `the lock on ${o.namespace} is held by ${holder}, which renewed it at ${lease.spec?.renewTime ?? 'an unknown time'}: it looks alive, refusing to break it`,
      `Wait for it to finish, or stop that process; if you are sure it is not writing, \`mesh-migrate unlock ${o.namespace} --force\` (the holder then stops before its next write).`,
    )
  }

  /** Breaking a lock is confirmed by the namespace: typed at the prompt, or --confirm. */
  private async validate(o: UnlockOptions, holder: string): Promise<void> {
    if (o.confirm !== undefined) {
      if (o.confirm !== o.namespace) throw new UsageError(`--confirm ${o.confirm} does not match ${o.namespace}`)
    } else if (!canPrompt(this.io)) {
      throw new UsageError(
        `breaking the lock on ${o.namespace} needs confirmation, and there is no terminal to ask on`,
        `Pass --confirm ${o.namespace}.`,
      )
    } else if (!(await confirmByTyping(this.io, o.namespace, `Break the lock held by ${holder}`, '--confirm'))) {
      throw new CancelledError('the namespace typed does not match: the lock was left in place')
    }
  }
}

interface UnlockOptions {
  namespace: string
  cluster: ClusterConnection
  confirm: string | undefined
  force: boolean
  output: OutputFormat
}
