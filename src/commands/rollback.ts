import * as Args from '@oclif/core/args'
import * as Flags from '@oclif/core/flags'
import type {Interfaces} from '@oclif/core'

import {type FleetApplyResult, type RollbackResult, typed} from '../cli/contract.js'
import {clusterFlags, durationFlag, namespaceFlag, planOrContext, takeOverFlag} from '../cli/flags.js'
import {BaseCommand, EXIT_CODES_HELP, outputFlag, type OutputFormat} from '../cli/base.js'
import {ClusterConnection, lockOptions, PlanSession} from '../cli/plan-session.js'
import {CancelledError, UsageError} from '../errors.js'
import {rollbackSequence} from '../plan/rollback.js'
import {rollBackPlan, selectFromRecord, type RollbackOptions, terminalRollbackIO} from '../actions/rollback.js'
import {stderrPainter, stdoutPainter} from '../ui/color.js'
import {markIfDryRun as mark} from '../ui/dry-run.js'
import {canPrompt, confirmByTyping} from '../ui/interactive.js'
import type {Io} from '../ui/io.js'

export default class RollbackCommand extends BaseCommand {
  static override summary = 'Undo applied steps of a plan in the safe order (default: all of them).'
  static override description = `Never a blind reverse: the injection label is restored and the workloads restarted (so pods get their sidecars back) before istio.io/dataplane-mode is removed; deleted sidecar policies are re-created before that restart; the waypoint is unbound and deleted last. Only objects this plan created and that still carry its annotation are deleted; objects that existed before the step are left. A plan that does not own the namespace (another plan's first write made that one its owner) is refused with exit 5; a plan fully rolled back gives the namespace up. With --dry-run=server every line is marked "[server dry run]". Steps whose undo only makes sense together (remove-sidecar-injection, restart-workloads, delete-sidecar-policies) are undone together even with --step.

Each undone step and the summary go to stdout; the order, the question and the progress go to stderr. -o json prints one RollbackResult document (docs/contract.md), as --json.

Destructive: asks you to type the namespace, or pass --confirm NAMESPACE.

FLEET: rolling back a namespace of plans/fleet.yaml whose dependants of later waves are still (partly) applied warns with the edges that tie them: they count on it staying ambient. --fleet [FLEET_FILE] (default plans/fleet.yaml) rolls the waves back in reverse order, the namespaces of a wave at most --parallel at a time, each exactly as \`rollback NS\`; a wave starts only when nothing of the later one is left applied; the first failure stops the others after the undo in progress. Confirmed with --confirm fleet; with --dry-run=server every undo is sent as a dry run. -o json prints a FleetApplyResult document.

EXIT CODES
${EXIT_CODES_HELP}
  130 interrupted (Ctrl+C)`

  static override examples = [
    '<%= config.bin %> rollback bookinfo',
    '<%= config.bin %> rollback plans/bookinfo.yaml --step --confirm bookinfo',
    '<%= config.bin %> rollback --fleet --confirm fleet --parallel 4',
  ]

  static override args = {
    plan: Args.string({
      description: 'Plan file or namespace (or -n NAMESPACE); with --fleet: the fleet file (default plans/fleet.yaml).',
    }),
  }
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
    fleet: Flags.boolean({
      description: 'Roll back the waves of the fleet file (PLAN, default plans/fleet.yaml) in reverse order.',
      helpGroup: 'FLEET',
    }),
    parallel: Flags.integer({
      description: 'With --fleet: how many namespaces of a wave are rolled back at once.',
      default: 4,
      min: 1,
      max: 64,
      helpGroup: 'FLEET',
    }),
    wave: Flags.integer({description: 'With --fleet: roll back only this wave.', min: 1, helpGroup: 'FLEET'}),
    ...clusterFlags,
  }

  async run(): Promise<RollbackResult | FleetApplyResult | undefined> {
    const {args, flags} = await this.parse(RollbackCommand)
    if (flags.fleet) return this.runFleet(args.plan, flags)
    const completed = await this.complete(args, flags)
    // What needs no cluster is refused before it is contacted, when the file says something was applied.
    if (rollbackSequence(completed.session.state.plan, {lastOnly: completed.lastOnly}).steps.length > 0)
      refuseUnconfirmed(completed, this.io)
    const options = {...completed, selection: await selectFromRecord(completed, (m) => this.note(m))}
    if (options.selection.steps.length === 0) return this.nothingToUndo(options)
    await this.confirmRollback(options)
    const rolledBack = await this.rollBack(options)
    return rolledBack && this.summary(options, rolledBack)
  }

  /** Flags → options; the plan is found and loaded (checked), and the steps to undo chosen in the safe order. */
  private async complete(
    args: {plan?: string},
    flags: RollbackFlags,
  ): Promise<Omit<RollbackCommandOptions, 'selection'>> {
    if (flags.wave !== undefined) throw new UsageError('--wave is for --fleet', 'Add --fleet, or leave it out.')
    const session = await PlanSession.open(await planOrContext(args.plan, flags.namespace, flags, this.io.stderr), {
      unfinishedOnly: false,
      cluster: ClusterConnection.fromFlags(flags, this.io),
      note: (m) => this.note(m),
      allowEdited: true,
    })
    const lock = lockOptions('rollback', session.file, flags)
    return {
      session,
      lastOnly: flags.step,
      lock,
      dryRun: lock.dryRun,
      confirm: flags.confirm,
      allowOtherCluster: flags['allow-other-cluster'],
      output: flags.output,
    }
  }

  private nothingToUndo(o: RollbackCommandOptions): Promise<RollbackResult | undefined> {
    this.result(`Nothing to roll back: no step of ${o.session.file} has been applied.`)
    return this.emit(
      typed('RollbackResult', {plan: o.session.file, namespace: o.session.namespace, dryRun: o.dryRun, rolledBack: []}),
      o.output,
      () => '',
    )
  }

  /** Say what will be undone, in which order, and have the namespace confirmed (typed, or --confirm). */
  private async confirmRollback(o: RollbackCommandOptions): Promise<void> {
    const {session, selection, dryRun} = o
    const io = this.io
    const ns = session.namespace
    const say = (m: string) => this.note(mark(dryRun, m))
    say(`Rolling back ${selection.steps.length} step(s) of ${session.file}, in this order:`)
    for (const step of selection.steps) say(`  - ${step.id}: ${step.undo.description}`)
    if (selection.note) say(stderrPainter(io).paint('yellow', `Note: ${selection.note}.`))
    await this.warnDependants(o)
    if (dryRun) return
    refuseUnconfirmed(o, io)
    if (
      o.confirm === undefined &&
      !(await confirmByTyping(io, ns, `Roll back the migration of namespace ${ns}`, '--confirm'))
    )
      throw new CancelledError('the namespace typed does not match: nothing was rolled back')
  }

  /** The mirror image of apply's fleet order: dependants of later waves still applied count on this namespace. */
  private async warnDependants(o: RollbackCommandOptions): Promise<void> {
    const {describeDependencies, loadFleetBeside, startedDependants} = await import('../executor/fleet-order.js')
    const loaded = await loadFleetBeside(o.session.file)
    const dependants = loaded ? await startedDependants(loaded, o.session.namespace) : []
    if (dependants.length === 0) return
    this.note(
      stderrPainter(this.io).paint(
        'yellow',
        `Warning: namespace(s) of a later wave (or of its cycle) of ${loaded!.file} that depend on ${o.session.namespace} are still (partly) applied; rolling it back first undoes what they count on:\n${describeDependencies(dependants)}\nRoll them back first (mesh-migrate rollback --fleet --confirm fleet rolls the waves back in reverse order).`,
      ),
    )
  }

  /** --fleet: the waves in reverse order (src/actions/fleet-rollback.ts), then the fleet's result. */
  private async runFleet(file: string | undefined, flags: RollbackFlags): Promise<FleetApplyResult | undefined> {
    if (flags.step || flags.namespace !== undefined)
      throw new UsageError(`--${flags.step ? 'step' : 'namespace'} is for one plan, not --fleet`)
    const {fleetRollbackOptions, rollbackFleet} = await import('../actions/fleet-rollback.js')
    const result = await rollbackFleet(await fleetRollbackOptions(file, flags, (m) => this.note(m), this.io))
    const {fleetExitCode, fleetRunNotes, renderFleetRun} = await import('../cli/fleet-run-view.js')
    this.io.setExitCode(fleetExitCode(result))
    if (flags.output === 'json' || flags.output === 'yaml' || this.jsonEnabled())
      for (const line of fleetRunNotes(result)) this.note(line)
    return this.emit(result, flags.output, () => renderFleetRun(result, stdoutPainter(this.io)))
  }

  /** Hold the namespace and undo the steps (src/actions/rollback.ts); undefined when interrupted (exit 130). */
  private rollBack(o: RollbackCommandOptions): Promise<RollbackResult['rolledBack'] | undefined> {
    return rollBackPlan(
      o,
      terminalRollbackIO(this.io, (m) => this.note(m)),
    )
  }

  private summary(
    o: RollbackCommandOptions,
    rolledBack: RollbackResult['rolledBack'],
  ): Promise<RollbackResult | undefined> {
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

/** --confirm naming another namespace, or no --confirm and no terminal to type it on (exit 2); a dry run needs none. */
function refuseUnconfirmed(o: Pick<RollbackCommandOptions, 'session' | 'confirm' | 'dryRun'>, io: Io): void {
  const ns = o.session.namespace
  if (o.dryRun) return
  if (o.confirm !== undefined && o.confirm !== ns)
    throw new UsageError(`--confirm ${o.confirm} does not match the plan's namespace ${ns}`, `Pass --confirm ${ns}.`)
  if (o.confirm === undefined && !canPrompt(io))
    throw new UsageError(
      `rollback of namespace ${ns} needs confirmation, and there is no terminal to ask on`,
      `Pass --confirm ${ns}.`,
    )
}

type RollbackFlags = Interfaces.InferredFlags<typeof RollbackCommand.flags>

interface RollbackCommandOptions extends RollbackOptions {
  confirm: string | undefined
  output: OutputFormat
}
