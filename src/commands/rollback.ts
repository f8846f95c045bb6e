import * as Args from '@oclif/core/args'
import * as Flags from '@oclif/core/flags'

import {type RollbackResult, typed} from '../cli/contract.js'
import {clusterFlags, durationFlag, namespaceFlag, namespaceOf, takeOverFlag} from '../cli/flags.js'
import {BaseCommand, EXIT_CODES_HELP, outputFlag, type OutputFormat} from '../cli/base.js'
import {type LockOptions, lockOptions, PlanSession} from '../cli/plan-session.js'
import {CancelledError, UsageError} from '../errors.js'
import {checkRollback, undoStep} from '../executor/engine.js'
import {releaseIfRolledBack} from '../executor/ownership.js'
import {rollbackSequence} from '../planner/rollback.js'
import {stderrPainter} from '../ui/color.js'
import {markIfDryRun as mark} from '../ui/dry-run.js'
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

  static override examples = [
    '<%= config.bin %> rollback bookinfo',
    '<%= config.bin %> rollback plans/bookinfo.yaml --step --confirm bookinfo',
  ]

  static override args = {plan: Args.string({description: 'Plan file or namespace (or -n NAMESPACE).'})}
  static override flags = {
    namespace: namespaceFlag,
    output: outputFlag,
    step: Flags.boolean({description: 'Undo only the last applied step (with the steps it must be undone with).'}),
    confirm: Flags.string({description: 'The namespace, to confirm without a prompt.'}),
    'dry-run': Flags.option({
      description: 'server: send every write with dryRun=All; nothing is changed or recorded.',
      options: ['none', 'server'] as const,
      default: 'none' as const,
    })(),
    timeout: durationFlag({description: 'How long to wait for each restart to finish.', default: '5m'}),
    'lock-timeout': durationFlag({
      description: "How long to wait for another operator's lock (exit 5).",
      default: '0s',
    }),
    'allow-other-cluster': Flags.boolean({description: "Run even if the current context is not the plan's cluster."}),
    'take-over': takeOverFlag,
    ...clusterFlags,
  }

  async run(): Promise<RollbackResult | undefined> {
    const options = await this.fromRecord(await this.complete())
    if (options.selection.steps.length === 0) return this.nothingToUndo(options)
    await this.validate(options)
    const rolledBack = await this.rollBack(options)
    return rolledBack && this.summary(options, rolledBack)
  }

  /** Flags → options; the plan is found and loaded (checked), and the steps to undo chosen in the safe order. */
  private async complete(): Promise<RollbackOptions> {
    const {args, flags} = await this.parse(RollbackCommand)
    const session = await PlanSession.open(namespaceOf(args.plan, flags.namespace, 'PLAN'), {
      unfinishedOnly: false,
      cluster: flags,
      note: (m) => this.note(m),
    })
    const lock = lockOptions('rollback', session.file, flags)
    return {
      session,
      lastOnly: flags.step,
      selection: {steps: []},
      lock,
      dryRun: lock.dryRun,
      confirm: flags.confirm,
      allowOtherCluster: flags['allow-other-cluster'],
      output: flags.output,
    }
  }

  /**
   * What to undo is what the cluster's record says this plan applied (not what this copy of the plan file says),
   * with the "before" values the record holds: any copy of the plan rolls back exactly.
   */
  private async fromRecord(o: RollbackOptions): Promise<RollbackOptions> {
    const client = await o.session.connectToPlanCluster(o.allowOtherCluster, (m) => this.note(mark(o.dryRun, m)))
    await o.session.adoptRecord(client, {readOnly: true})
    return {...o, selection: rollbackSequence(o.session.state.plan, {lastOnly: o.lastOnly})}
  }

  private nothingToUndo(o: RollbackOptions): Promise<RollbackResult | undefined> {
    this.result(`Nothing to roll back: no step of ${o.session.file} has been applied.`)
    return this.emit(
      typed('RollbackResult', {plan: o.session.file, namespace: o.session.namespace, dryRun: o.dryRun, rolledBack: []}),
      o.output,
      () => '',
    )
  }

  /** Say what will be undone, in which order, and have the namespace confirmed (typed, or --confirm). */
  private async validate(o: RollbackOptions): Promise<void> {
    const {session, selection, dryRun} = o
    const ns = session.namespace
    const say = (m: string) => this.note(mark(dryRun, m))
    say(`Rolling back ${selection.steps.length} step(s) of ${session.file}, in this order:`)
    for (const step of selection.steps) say(`  - ${step.id}: ${step.undo.description}`)
    if (selection.note) say(stderrPainter().paint('yellow', `Note: ${selection.note}.`))
    if (dryRun) return
    if (o.confirm !== undefined) {
      if (o.confirm !== ns)
        throw new UsageError(
          `--confirm ${o.confirm} does not match the plan's namespace ${ns}`,
          `Pass --confirm ${ns}.`,
        )
    } else if (!canPrompt()) {
      throw new UsageError(
        `rollback of namespace ${ns} needs confirmation, and there is no terminal to ask on`,
        `Pass --confirm ${ns}.`,
      )
    } else if (!(await confirmByTyping(ns, `Roll back the migration of namespace ${ns}`, '--confirm'))) {
      throw new CancelledError('the namespace typed does not match: nothing was rolled back')
    }
  }

  /** Hold the namespace and undo the steps; undefined when interrupted (exit 130). */
  private async rollBack(o: RollbackOptions): Promise<RollbackResult['rolledBack'] | undefined> {
    const {session, dryRun} = o
    const say = (m: string) => this.note(mark(dryRun, m))
    const client = await session.connectToPlanCluster(o.allowOtherCluster, say)
    const rolledBack: RollbackResult['rolledBack'] = []
    const interrupted = `Interrupted. Re-run \`mesh-migrate rollback ${session.file}\` to finish the rollback.`
    const finished = await session.holding(client, o.lock, interrupted, async (ctx) => {
      const warn = (m: string) => say(`Warning: ${m}`)
      // Under the lock the record was read again: undo what it says now (the same steps, unless someone acted since).
      const steps = rollbackSequence(ctx.state.plan, {lastOnly: o.lastOnly}).steps
      await checkRollback(ctx, steps, warn)
      await runTasks(
        steps.map((step) => ({
          title: mark(dryRun, `undo ${step.id}`),
          run: async (update) => {
            ctx.onProgress = update
            const details = await undoStep(ctx, step, warn)
            rolledBack.push({id: step.id, action: step.action, details})
            const summary = details.length === 0 ? 'nothing to undo' : `${details.length} change(s)`
            return dryRun && step.undo.operations.length > 0
              ? `accepted by the server, nothing persisted: ${summary}`
              : summary
          },
        })),
      )
      if (!dryRun && (await releaseIfRolledBack(client, ctx.state, o.lock.takeOver)))
        this.note(
          `Every step of ${session.file} is rolled back: namespace ${session.namespace} is free for another plan.`,
        )
    })
    return finished ? rolledBack : undefined
  }

  private summary(o: RollbackOptions, rolledBack: RollbackResult['rolledBack']): Promise<RollbackResult | undefined> {
    const {session, dryRun} = o
    // After the progress display has finished: stdout and the live stderr display share a terminal.
    for (const r of rolledBack) {
      this.result(mark(dryRun, `Undone ${r.id}:${r.details.length === 0 ? ' nothing to undo' : ''}`))
      for (const d of r.details) this.result(mark(dryRun, `  ${d}`))
    }
    if (!dryRun) this.result(`\nRolled back ${rolledBack.length} step(s) of ${session.file}.`)
    return this.emit(
      typed('RollbackResult', {plan: session.file, namespace: session.namespace, dryRun, rolledBack}),
      o.output,
      () => '',
    )
  }
}

interface RollbackOptions {
  session: PlanSession
  /** --step: only the last applied step (with its unit). */
  lastOnly: boolean
  selection: ReturnType<typeof rollbackSequence>
  lock: LockOptions
  dryRun: boolean
  confirm: string | undefined
  allowOtherCluster: boolean
  output: OutputFormat
}
