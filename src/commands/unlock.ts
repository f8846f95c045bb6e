import * as Args from '@oclif/core/args'
import * as Flags from '@oclif/core/flags'

import {unlockNamespace, type UnlockOptions} from '../actions/unlock.js'
import {typed, type UnlockResult} from '../cli/contract.js'
import {clusterFlags, namespaceFlag, requireNamespaceOrContext} from '../cli/flags.js'
import {BaseCommand, EXIT_CODES_HELP, outputFlag, type OutputFormat} from '../cli/base.js'
import {ClusterConnection} from '../cli/plan-session.js'

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
    const {released} = await unlockNamespace(options, this.io)
    if (released === undefined) {
      this.result(`Namespace ${options.namespace} is not locked.`)
      return this.emit(typed('UnlockResult', {namespace: options.namespace}), options.output, () => '')
    }
    this.result(
      `Lock on ${options.namespace} released. If the holder was still running, its next write stops with "lost the lock".`,
    )
    return this.emit(typed('UnlockResult', {namespace: options.namespace, released}), options.output, () => '')
  }

  /** Flags → options (nothing to check before the lock is read: --confirm is compared once there is one to break). */
  private async complete(): Promise<UnlockCommandOptions> {
    const {args, flags} = await this.parse(UnlockCommand)
    return {
      namespace: await requireNamespaceOrContext(args.namespace, flags.namespace, flags, this.io.stderr),
      cluster: ClusterConnection.fromFlags(flags, this.io),
      confirm: flags.confirm,
      force: flags.force,
      output: flags.output,
    }
  }
}

interface UnlockCommandOptions extends UnlockOptions {
  output: OutputFormat
}
