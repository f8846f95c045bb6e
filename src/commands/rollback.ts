import {Args, Flags} from '@oclif/core'

import {clusterFlags} from '../cli/flags.js'
import {BaseCommand, EXIT_CODES_HELP} from '../cli/base.js'
import {checkTargetCluster, connectCluster, interruptHandler, parseDuration, resolvePlanFile} from '../cli/plan-commands.js'
import {UserError} from '../errors.js'
import {checkRollback, type ExecutionContext, undoStep} from '../executor/engine.js'
import {NamespaceLock, whoAmI} from '../executor/lock.js'
import {checkOwner, releaseIfRolledBack} from '../executor/ownership.js'
import {PlanState} from '../executor/plan-state.js'
import {InterruptedError} from '../executor/verify.js'
import {rollbackSequence} from '../planner/rollback.js'
import {stderrPainter} from '../ui/color.js'
import {dryRunLines} from '../ui/dry-run.js'
import {canPrompt, confirmByTyping} from '../ui/interactive.js'
import {runTasks} from '../ui/progress.js'

interface RollbackResult {
  plan: string
  namespace: string
  rolledBack: {id: string; details: string[]}[]
}

export default class RollbackCommand extends BaseCommand {
  static override summary = 'Undo applied steps of a plan in the safe order (default: all of them).'
  static override description = `Never a blind reverse: the injection label is restored and the workloads restarted (so pods get their sidecars back) before istio.io/dataplane-mode is removed; deleted sidecar policies are re-created before that restart; the waypoint is unbound and deleted last. Only objects this plan created and that still carry its annotation are deleted; objects that existed before the step are left. A plan that does not own the namespace (another plan's first write made that one its owner) is refused with exit 5; a plan fully rolled back gives the namespace up. With --dry-run=server every line is marked "[server dry run]". Steps whose undo only makes sense together (remove-sidecar-injection, restart-workloads, delete-sidecar-policies) are undone together even with --step.

Destructive: asks you to type the namespace, or pass --confirm NAMESPACE.

EXIT CODES
${EXIT_CODES_HELP}
  130 interrupted (Ctrl+C)`

  static override examples = ['<%= config.bin %> rollback bookinfo', '<%= config.bin %> rollback plans/bookinfo.yaml --step --confirm bookinfo']

  static override args = {plan: Args.string({description: 'Plan file or namespace.'})}
  static override flags = {
    step: Flags.boolean({description: 'Undo only the last applied step (with the steps it must be undone with).'}),
    confirm: Flags.string({description: 'The namespace, to confirm without a prompt.'}),
    'dry-run': Flags.option({description: 'server: send every write with dryRun=All; nothing is changed or recorded.', options: ['none', 'server'] as const, default: 'none' as const})(),
    timeout: Flags.string({description: 'How long to wait for each restart to finish.', default: '5m'}),
    'lock-timeout': Flags.string({description: 'How long to wait for another operator\'s lock (exit 5).', default: '0s'}),
    'allow-other-cluster': Flags.boolean({description: 'Run even if the current context is not the plan\'s cluster.'}),
    ...clusterFlags,
  }

  async run(): Promise<RollbackResult | undefined> {
    const {args, flags} = await this.parse(RollbackCommand)
    const timeoutMs = parseDuration(flags.timeout, '--timeout')
    const lockTimeoutMs = parseDuration(flags['lock-timeout'], '--lock-timeout')
    const dryRun = flags['dry-run'] === 'server'
    const file = await resolvePlanFile(args.plan, {unfinishedOnly: false})
    const state = await PlanState.load(file)
    const ns = state.namespace
    const selection = rollbackSequence(state.plan, {lastOnly: flags.step})
    if (selection.steps.length === 0) {
      this.note(`Nothing to roll back: no step of ${file} has been applied.`)
      return this.emit({plan: file, namespace: ns, rolledBack: []}, 'table', () => '')
    }
    const p = stderrPainter()
    // Every line of a dry run says so: nothing of it was persisted or recorded.
    const say = (m: string) => this.note(dryRun ? dryRunLines(m) : m)
    say(`Rolling back ${selection.steps.length} step(s) of ${file}, in this order:`)
    for (const step of selection.steps) say(`  - ${step.id}: ${step.undo.description}`)
    if (selection.note) say(p.paint('yellow', `Note: ${selection.note}.`))

    if (!dryRun) {
      if (flags.confirm !== undefined) {
        if (flags.confirm !== ns) throw new UserError(`--confirm ${flags.confirm} does not match the plan's namespace ${ns}`, {exitCode: 2, suggestion: `Pass --confirm ${ns}.`})
      } else if (!canPrompt()) {
        throw new UserError(`rollback of namespace ${ns} needs confirmation, and there is no terminal to ask on`, {exitCode: 2, suggestion: `Pass --confirm ${ns}.`})
      } else if (!(await confirmByTyping(ns, `Roll back the migration of namespace ${ns}`, '--confirm'))) {
        throw new UserError('the namespace typed does not match: nothing was rolled back', {exitCode: 1})
      }
    }

    const client = await connectCluster(flags)
    await checkTargetCluster(client, state, flags['allow-other-cluster'], say)
    const interrupt = interruptHandler((m) => this.note(m))
    let lock: NamespaceLock | undefined
    const rolledBack: RollbackResult['rolledBack'] = []
    try {
      if (!dryRun) {
        lock = await NamespaceLock.acquire(client, {
          namespace: ns,
          command: `rollback ${file}`,
          plan: file,
          timeoutMs: lockTimeoutMs,
          onWait: (holder) => this.note(`Namespace ${ns} is locked by ${holder}; waiting up to ${flags['lock-timeout']}…`),
          onTakeover: (holder) => this.note(`Taking over an expired lock left by ${holder}.`),
        })
      }
      // Another plan's objects carry the same plan name: never undo over what another plan applied.
      await checkOwner(client, state, 'roll back')
      const ctx: ExecutionContext = {client, state, who: whoAmI(), dryRun, timeoutMs, signal: interrupt.signal, ...(lock ? {lock} : {})}
      const warn = (m: string) => say(`Warning: ${m}`)
      await checkRollback(ctx, selection.steps, warn)
      await runTasks(selection.steps.map((step) => ({
        title: dryRun ? dryRunLines(`undo ${step.id}`) : `undo ${step.id}`,
        run: async (update) => {
          ctx.onProgress = update
          const details = await undoStep(ctx, step, warn)
          rolledBack.push({id: step.id, details})
          const summary = details.length === 0 ? 'nothing to undo' : details.join('; ')
          return dryRun && step.undo.operations.length > 0 ? `accepted by the server, nothing persisted: ${summary}` : summary
        },
      })))
      if (!dryRun && (await releaseIfRolledBack(client, state))) this.note(`Every step of ${file} is rolled back: namespace ${ns} is free for another plan.`)
    } catch (error) {
      if (error instanceof InterruptedError) {
        process.exitCode = 130
        this.note(`Interrupted. Re-run \`mesh-migrate rollback ${file}\` to finish the rollback.`)
        return undefined
      }
      throw error
    } finally {
      interrupt.dispose()
      await lock?.release().catch(() => undefined)
    }
    if (!dryRun) this.note(`\nRolled back ${rolledBack.length} step(s) of ${file}.`)
    return this.emit({plan: file, namespace: ns, rolledBack}, 'table', () => '')
  }
}
