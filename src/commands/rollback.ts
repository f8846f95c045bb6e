import {Args, Flags} from '@oclif/core'

import {type RollbackResult, typed} from '../cli/contract.js'
import {clusterFlags, durationFlag, namespaceFlag, namespaceOf} from '../cli/flags.js'
import {BaseCommand, EXIT_CODES_HELP, outputFlag} from '../cli/base.js'
import {checkTargetCluster, connectCluster, interruptHandler, parseDuration, resolvePlanFile} from '../cli/plan-commands.js'
import {UserError} from '../errors.js'
import {checkRollback, type ExecutionContext, undoStep} from '../executor/engine.js'
import {kubernetesIdentity, NamespaceLock, whoAmI} from '../executor/lock.js'
import {checkOwner, releaseIfRolledBack} from '../executor/ownership.js'
import {PlanState} from '../executor/plan-state.js'
import {InterruptedError} from '../executor/verify.js'
import {rollbackSequence} from '../planner/rollback.js'
import {stderrPainter} from '../ui/color.js'
import {dryRunLines} from '../ui/dry-run.js'
import {canPrompt, confirmByTyping} from '../ui/interactive.js'
import {runTasks} from '../ui/progress.js'

export default class RollbackCommand extends BaseCommand {
  static override summary = 'Undo applied steps of a plan in the safe order (default: all of them).'
  static override description = `Never a blind reverse: the injection label is restored and the workloads restarted (so pods get their sidecars back) before istio.io/dataplane-mode is removed; deleted sidecar policies are re-created before that restart; the waypoint is unbound and deleted last. Only objects this plan created and that still carry its annotation are deleted; objects that existed before the step are left. A plan that does not own the namespace (another plan's first write made that one its owner) is refused with exit 5; a plan fully rolled back gives the namespace up. With --dry-run=server every line is marked "[server dry run]". Steps whose undo only makes sense together (remove-sidecar-injection, restart-workloads, delete-sidecar-policies) are undone together even with --step.

Each undone step and the summary go to stdout; the order, the question and the progress go to stderr. -o json prints one RollbackResult document (docs/contract.md), as --json.

Destructive: asks you to type the namespace, or pass --confirm NAMESPACE.

EXIT CODES
${EXIT_CODES_HELP}
  130 interrupted (Ctrl+C)`

  static override examples = ['<%= config.bin %> rollback bookinfo', '<%= config.bin %> rollback plans/bookinfo.yaml --step --confirm bookinfo']

  static override args = {plan: Args.string({description: 'Plan file or namespace (or -n NAMESPACE).'})}
  static override flags = {
    namespace: namespaceFlag,
    output: outputFlag,
    step: Flags.boolean({description: 'Undo only the last applied step (with the steps it must be undone with).'}),
    confirm: Flags.string({description: 'The namespace, to confirm without a prompt.'}),
    'dry-run': Flags.option({description: 'server: send every write with dryRun=All; nothing is changed or recorded.', options: ['none', 'server'] as const, default: 'none' as const})(),
    timeout: durationFlag({description: 'How long to wait for each restart to finish.', default: '5m'}),
    'lock-timeout': durationFlag({description: 'How long to wait for another operator\'s lock (exit 5).', default: '0s'}),
    'allow-other-cluster': Flags.boolean({description: 'Run even if the current context is not the plan\'s cluster.'}),
    ...clusterFlags,
  }

  async run(): Promise<RollbackResult | undefined> {
    const {args, flags} = await this.parse(RollbackCommand)
    const timeoutMs = parseDuration(flags.timeout, '--timeout')
    const lockTimeoutMs = parseDuration(flags['lock-timeout'], '--lock-timeout')
    const dryRun = flags['dry-run'] === 'server'
    const file = await resolvePlanFile(namespaceOf(args.plan, flags.namespace, 'PLAN'), {unfinishedOnly: false})
    const state = await PlanState.load(file)
    const ns = state.namespace
    const selection = rollbackSequence(state.plan, {lastOnly: flags.step})
    if (selection.steps.length === 0) {
      this.result(`Nothing to roll back: no step of ${file} has been applied.`)
      return this.emit(typed('RollbackResult', {plan: file, namespace: ns, dryRun, rolledBack: []}), flags.output, () => '')
    }
    const p = stderrPainter()
    // Every line of a dry run says so: nothing of it was persisted or recorded.
    const mark = (m: string) => (dryRun ? dryRunLines(m) : m)
    const say = (m: string) => this.note(mark(m))
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
      state.localUser = whoAmI()
      // A dry run records nothing, so it does not ask the server who we are.
      const who = (dryRun ? undefined : await kubernetesIdentity(client)) ?? state.localUser
      const ctx: ExecutionContext = {client, state, who, dryRun, timeoutMs, signal: interrupt.signal, ...(lock ? {lock} : {})}
      const warn = (m: string) => say(`Warning: ${m}`)
      await checkRollback(ctx, selection.steps, warn)
      await runTasks(selection.steps.map((step) => ({
        title: dryRun ? dryRunLines(`undo ${step.id}`) : `undo ${step.id}`,
        run: async (update) => {
          ctx.onProgress = update
          const details = await undoStep(ctx, step, warn)
          rolledBack.push({id: step.id, action: step.action, details})
          const summary = details.length === 0 ? 'nothing to undo' : `${details.length} change(s)`
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
    // After the progress display has finished: stdout and the live stderr display share a terminal.
    for (const r of rolledBack) {
      this.result(mark(`Undone ${r.id}:${r.details.length === 0 ? ' nothing to undo' : ''}`))
      for (const d of r.details) this.result(mark(`  ${d}`))
    }
    if (!dryRun) this.result(`\nRolled back ${rolledBack.length} step(s) of ${file}.`)
    return this.emit(typed('RollbackResult', {plan: file, namespace: ns, dryRun, rolledBack}), flags.output, () => '')
  }
}
