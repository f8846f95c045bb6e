import {Args, Flags} from '@oclif/core'

import {typed, type UnlockResult} from '../cli/contract.js'
import {clusterFlags, namespaceFlag, requireNamespaceArg} from '../cli/flags.js'
import {BaseCommand, EXIT_CODES_HELP, outputFlag} from '../cli/base.js'
import {connectCluster} from '../cli/plan-commands.js'
import {UserError} from '../errors.js'
import {breakLock, describeHolder, holderState, lockRef} from '../executor/lock.js'
import {canPrompt, confirmByTyping} from '../ui/interactive.js'

export default class UnlockCommand extends BaseCommand {
  static override summary = 'Break the lock on a namespace left by an operator whose apply/rollback died.'
  static override description = `apply and rollback hold a Lease (mesh-migrate-lock) in the namespace while they run and renew it; a killed process leaves it until it expires (60 s lease plus a 30 s clock-skew margin). A holder that ran on this host and whose process is gone is shown as dead (apply takes its lock over without waiting). unlock deletes it at once. Only do this when you are sure the holder is not running: two operators migrating one namespace at the same time is what the lock prevents.

EXIT CODES
${EXIT_CODES_HELP}`

  static override examples = ['<%= config.bin %> unlock bookinfo', '<%= config.bin %> unlock bookinfo --confirm bookinfo']

  static override args = {namespace: Args.string({description: 'The locked namespace (or -n NAMESPACE).'})}
  static override flags = {
    namespace: namespaceFlag,
    output: outputFlag,
    confirm: Flags.string({description: 'The namespace, to confirm without a prompt.'}),
    ...clusterFlags,
  }

  async run(): Promise<UnlockResult | undefined> {
    const {args, flags} = await this.parse(UnlockCommand)
    const ns = requireNamespaceArg(args.namespace, flags.namespace)
    const client = await connectCluster(flags)
    const lease = await client.get(lockRef(ns))
    if (!lease) {
      this.result(`Namespace ${ns} is not locked.`)
      return this.emit(typed('UnlockResult', {namespace: ns}), flags.output, () => '')
    }
    const holder = describeHolder(lease)
    this.note(`Namespace ${ns} is locked by ${holder} (${holderState(lease)}).`)
    if (flags.confirm !== undefined) {
      if (flags.confirm !== ns) throw new UserError(`--confirm ${flags.confirm} does not match ${ns}`, {exitCode: 2})
    } else if (!canPrompt()) {
      throw new UserError(`breaking the lock on ${ns} needs confirmation, and there is no terminal to ask on`, {exitCode: 2, suggestion: `Pass --confirm ${ns}.`})
    } else if (!(await confirmByTyping(ns, `Break the lock held by ${holder}`, '--confirm'))) {
      throw new UserError('the namespace typed does not match: the lock was left in place')
    }
    await breakLock(client, ns)
    this.result(`Lock on ${ns} released. If the holder was still running, its next write stops with "lost the lock".`)
    return this.emit(typed('UnlockResult', {namespace: ns, released: holder}), flags.output, () => '')
  }
}
