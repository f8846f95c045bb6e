import * as Args from '@oclif/core/args'
import * as Flags from '@oclif/core/flags'
import type {Interfaces} from '@oclif/core'

import {applyPlanSteps, type ApplyIO, type ApplyOptions, terminalApplyIO, validateApply} from '../actions/apply.js'
import {type ApplyResult, type FleetApplyResult, type StepOutcome, typed} from '../cli/contract.js'
import {clusterFlags, durationFlag, namespaceFlag, planOrContext, takeOverFlag} from '../cli/flags.js'
import {BaseCommand, EXIT_CODES_HELP, outputFlag, type OutputFormat} from '../cli/base.js'
import {ClusterConnection, lockOptions, PlanSession} from '../cli/plan-session.js'
import {UsageError} from '../errors.js'
import type {StepSelection} from '../executor/engine.js'
import type {PlanState} from '../executor/plan-state.js'
import {stderrPainter, stdoutPainter} from '../ui/color.js'
import type {PlanStep} from '../planner/plan-types.js'
import {describeWindow, openWindows} from '../planner/windows.js'

export default class ApplyCommand extends BaseCommand {
  static override summary = 'Apply the next step of a plan (or several), verify it, and record it in the plan file.'
  static override description = `PLAN is a plan file or a namespace (plans/<namespace>.yaml); omitted, the plan of the kubeconfig context's namespace, or (the context without one) the one unfinished plan under plans/.

Each step's outcome, the summary and the next command go to stdout (\`apply … | tee change.log\` keeps them); what will change, the questions and the progress go to stderr. -o json prints one ApplyResult document (docs/contract.md), as --json.

For each step: check the plan (schema, digest, safety), take the namespace's lock (a Lease), re-read the preconditions of this step and of every step after it, judged on the cluster as the steps before them will leave it (exit 3 if the cluster changed, before anything is written — drift stops apply before traffic moves, not after the restart), show what will change and ask (or --yes), write, verify the postconditions (waiting up to --timeout), and record the result in the plan file. Every step is idempotent: re-running one whose effect is already present writes nothing. A failed step blocks apply until it is retried (--retry) or rolled back; a step left Running (the apply that ran it died) or Interrupted (Ctrl+C) is resumed by running the same command again, once nobody holds the namespace. Every Next: repeats the command as typed, with its flags. Stopping inside a hazard window of the simulation (e.g. after restart-workloads) warns which policies stay degraded until which step.

One plan per namespace: the first write records the plan as the namespace's owner (annotation mesh-migrate.io/owner-plan, removed when the plan is fully rolled back); another plan file for the namespace is refused with exit 5, naming the owner.

FLEET: a plan listed in plans/fleet.yaml (plan -A / -l / NS1 NS2) is applied only once every namespace of an earlier wave it depends on is fully applied: otherwise apply refuses before writing (exit 5), naming the wave, the namespaces and the edges; --ignore-fleet-order applies anyway and records who overrode the order in the plan's status. --fleet [FLEET_FILE] (default plans/fleet.yaml) runs the waves in order, each namespace as \`apply NS --all\` does (its own plan, lock and verification), at most --parallel at a time; a wave starts only when every plan of the one before is applied and verified; namespaces in a cycle are first applied up to bind-waypoint, then to the end. Without --all, --wave or --to-wave it runs the next unfinished wave. The first failure stops new starts (running namespaces finish the step in progress) and names the namespace, the step and what to run; re-running resumes (a step left Running or Interrupted is re-run, each is idempotent; a Failed one needs --retry). With --dry-run=server each namespace's steps are sent as dry runs, wave by wave, asking nobody: nothing is persisted or recorded, so each wave is judged against the cluster as it is.

--dry-run=server sends every write with dryRun=All and marks every line "[server dry run]"; each step's preconditions see the dry-run writes of the steps before it, so --all gets through every step. What cannot be judged without really applying (the readiness of a waypoint created in the same run) is named; read-only steps send nothing.

EXIT CODES
${EXIT_CODES_HELP}
  130 interrupted (Ctrl+C): the step is recorded as Interrupted and the lock released (with --fleet: in every running namespace)`

  static override examples = [
    '<%= config.bin %> apply bookinfo --step',
    '<%= config.bin %> apply plans/bookinfo.yaml --to restart-workloads --yes',
    '<%= config.bin %> apply bookinfo --all --dry-run=server',
    '<%= config.bin %> apply bookinfo --retry',
    '<%= config.bin %> apply -n bookinfo --step --yes | tee change.log',
    '<%= config.bin %> apply --fleet --all --yes --parallel 4     # every wave of plans/fleet.yaml, in order',
    '<%= config.bin %> apply --fleet --wave 2 --yes',
  ]

  static override args = {
    plan: Args.string({
      description: 'Plan file or namespace (or -n NAMESPACE); with --fleet: the fleet file (default plans/fleet.yaml).',
    }),
  }
  static override flags = {
    namespace: namespaceFlag,
    output: outputFlag,
    step: Flags.boolean({description: 'Apply the next pending step (the default).', exclusive: ['all', 'to']}),
    all: Flags.boolean({description: 'Apply every remaining step.', exclusive: ['step', 'to']}),
    to: Flags.string({description: 'Apply up to and including this step id.', exclusive: ['step', 'all']}),
    yes: Flags.boolean({char: 'y', description: 'Do not ask before each step.'}),
    diff: Flags.boolean({
      description:
        "Before each step's writes, show what they would change, as kubectl diff: each write is sent as a server-side dry run and the object the server would store is compared with the live one (unified diff).",
    }),
    retry: Flags.boolean({
      description:
        'Re-run a step that failed (a step left Running or Interrupted is resumed without it), or a record a rollback left inconsistent.',
    }),
    'dry-run': Flags.option({
      description:
        'server: send every write with dryRun=All (validated by the API server and admission, nothing persisted or recorded).',
      options: ['none', 'server'] as const,
      default: 'none' as const,
    })(),
    timeout: durationFlag({
      description: "How long to wait for each step's verification (waypoint ready, rollouts…).",
      default: '5m',
    }),
    'lock-timeout': durationFlag({
      description: "How long to wait for another operator's lock before giving up (exit 5).",
      default: '0s',
    }),
    'allow-other-cluster': Flags.boolean({
      description: 'Run even if the current context is not the cluster the plan was made for.',
    }),
    repair: Flags.string({
      description:
        'Re-run this applied step, whose effects drifted (status shows the drift): it writes only what is missing, then verifies.',
    }),
    'take-over': takeOverFlag,
    'ignore-fleet-order': Flags.boolean({
      description:
        "Apply although a namespace of an earlier wave of plans/fleet.yaml that this one depends on is not fully applied (recorded in the plan's status, with who did it).",
    }),
    fleet: Flags.boolean({
      description: 'Apply the waves of the fleet file (PLAN, default plans/fleet.yaml) in order.',
      helpGroup: 'FLEET',
    }),
    parallel: Flags.integer({
      description: 'With --fleet: how many namespaces of a wave are applied at once.',
      default: 4,
      min: 1,
      max: 64,
      helpGroup: 'FLEET',
    }),
    wave: Flags.integer({
      description: 'With --fleet: apply only this wave.',
      min: 1,
      helpGroup: 'FLEET',
    }),
    'to-wave': Flags.integer({
      description: 'With --fleet: apply the waves up to and including this one.',
      min: 1,
      helpGroup: 'FLEET',
    }),
    ...clusterFlags,
  }

  async run(): Promise<ApplyResult | FleetApplyResult | undefined> {
    const {args, flags} = await this.parse(ApplyCommand)
    if (flags.fleet) return this.runFleet(args.plan, flags)
    const options = await this.complete(args, flags)
    const steps = await validateApply(options, this.applyIO())
    if (steps === 'up-to-date') return this.upToDate(options)
    const applied = await this.applySteps(options, steps)
    return applied && this.summary(options, applied)
  }

  /** Flags → options; the plan is found and loaded (checked: schema, safety, digest). */
  private async complete(args: ApplyArgs, flags: ApplyFlags): Promise<ApplyCommandOptions> {
    for (const flag of ['wave', 'to-wave'] as const)
      if (flags[flag] !== undefined) throw new UsageError(`--${flag} is for --fleet`, 'Add --fleet, or leave it out.')
    const session = await PlanSession.open(await planOrContext(args.plan, flags.namespace, flags, this.io.stderr), {
      unfinishedOnly: true,
      cluster: ClusterConnection.fromFlags(flags, this.io),
      note: (m) => this.note(m),
    })
    const lock = lockOptions('apply', session.file, flags)
    const selection: StepSelection = flags.all ? {kind: 'all'} : flags.to ? {kind: 'to', id: flags.to} : {kind: 'next'}
    if (flags.repair !== undefined && (flags.all || flags.step || flags.to !== undefined || flags.retry))
      throw new UsageError('--repair re-runs one applied step: not with --step, --all, --to or --retry')
    if (flags.repair !== undefined && !session.state.plan.spec.steps.some((s) => s.id === flags.repair))
      throw new UsageError(
        `--repair ${flags.repair}: no such step`,
        `Steps: ${session.state.plan.spec.steps.map((s) => s.id).join(', ')}`,
      )
    return {
      session,
      selection,
      lock,
      dryRun: lock.dryRun,
      yes: flags.yes,
      diff: flags.diff,
      retry: flags.retry,
      ...(flags.repair === undefined ? {} : {repair: flags.repair}),
      allowOtherCluster: flags['allow-other-cluster'],
      ignoreFleetOrder: flags['ignore-fleet-order'],
      output: flags.output,
    }
  }

  /** --fleet: the waves of the fleet file in order (src/actions/fleet-apply.ts), then the fleet's result. */
  private async runFleet(file: string | undefined, flags: ApplyFlags): Promise<FleetApplyResult | undefined> {
    const other = (['step', 'to', 'namespace', 'ignore-fleet-order'] as const).find(
      (f) => flags[f] !== undefined && flags[f] !== false,
    )
    if (other)
      throw new UsageError(
        `--${other} is for one plan, not --fleet`,
        'Leave it out (each namespace of the fleet is applied --all).',
      )
    const choices = [
      flags.all && '--all',
      flags.wave !== undefined && '--wave',
      flags['to-wave'] !== undefined && '--to-wave',
    ].filter(Boolean)
    if (choices.length > 1) throw new UsageError(`${choices.join(' and ')} choose the waves differently: give one`)
    const {applyFleet, fleetApplyOptions} = await import('../actions/fleet-apply.js')
    const options = await fleetApplyOptions(file, flags, (m) => this.note(m), this.io)
    const result = await applyFleet(options)
    const {fleetExitCode, renderFleetRun} = await import('../cli/fleet-run-view.js')
    this.io.setExitCode(fleetExitCode(result))
    const failed = result.namespaces.find((n) => n.error)
    // A document on stdout: the failure and the next command for people on stderr too.
    if (flags.output === 'json' || flags.output === 'yaml' || this.jsonEnabled()) {
      if (failed)
        this.note(
          `Error: ${failed.namespace}${failed.error!.step ? ` at step ${failed.error!.step}` : ''}: ${failed.error!.message}`,
        )
      if (result.next) this.note(`Next: ${result.next}`)
    }
    return this.emit(result, flags.output, () => renderFleetRun(result, stdoutPainter(this.io)))
  }

  private upToDate(o: ApplyCommandOptions): Promise<ApplyResult | undefined> {
    const {session, selection} = o
    const state = session.state
    const next = state.plan.spec.steps.find((s) => state.phase(s) !== 'Applied')
    this.result(
      selection.kind === 'to' && next
        ? `Step ${selection.id} of ${session.file} is already applied, with every step before it; nothing to do. The next pending step is ${next.id}.`
        : `Every step of ${session.file} is applied; nothing to do.`,
    )
    const remaining = state.plan.spec.steps.filter((s) => state.phase(s) !== 'Applied').map((s) => s.id)
    return this.emit(
      typed('ApplyResult', {plan: session.file, namespace: state.namespace, dryRun: o.dryRun, applied: [], remaining}),
      o.output,
      () => '',
    )
  }

  /** Hold the namespace and apply the steps (src/actions/apply.ts); undefined when interrupted (exit 130). */
  private applySteps(o: ApplyCommandOptions, steps: PlanStep[]): Promise<StepOutcome[] | undefined> {
    return applyPlanSteps(o, this.applyIO(), steps)
  }

  /** One plan's apply writes to the terminal: notes on stderr, outcomes on stdout, each step with a progress display. */
  private applyIO(): ApplyIO {
    return terminalApplyIO(this.io, {note: (m) => this.note(m), result: (m) => this.result(m)})
  }

  /** What is left, the hazard windows stopped inside, and the next command. */
  private summary(o: ApplyCommandOptions, applied: StepOutcome[]): Promise<ApplyResult | undefined> {
    const {session, dryRun} = o
    const state = session.state
    const remaining = state.plan.spec.steps.filter((s) => state.phase(s) !== 'Applied').map((s) => s.id)
    if (!dryRun && remaining.length > 0) this.warnOpenWindows(state)
    const next = dryRun || remaining.length === 0 ? undefined : `mesh-migrate apply ${session.file} --step`
    if (!dryRun)
      this.result(
        remaining.length === 0
          ? `\nAll steps applied. ${state.namespace} is migrated to ambient.`
          : `\nNext: ${remaining[0]} (${next}). ${remaining.length} step(s) left.`,
      )
    const result: ApplyResult = typed('ApplyResult', {
      plan: session.file,
      namespace: state.namespace,
      dryRun,
      applied,
      remaining,
      ...(next ? {next} : {}),
    })
    return this.emit(result, o.output, () => '')
  }

  /** Stopping inside a hazard window leaves policies degraded until a later step: say which, until when. */
  private warnOpenWindows(state: PlanState): void {
    const windows = openWindows(state.plan, (id) => state.status(id)?.phase ?? 'Pending')
    if (windows.length === 0) return
    const p = stderrPainter(this.io)
    this.note(
      p.paint(['bold', 'yellow'], `\nWarning: stopped inside ${windows.length} hazard window(s); until they close:`),
    )
    for (const w of windows) this.note(p.paint('yellow', `  - ${describeWindow(w)}`))
  }
}

type ApplyArgs = {plan?: string}
type ApplyFlags = Interfaces.InferredFlags<typeof ApplyCommand.flags>

interface ApplyCommandOptions extends ApplyOptions {
  output: OutputFormat
}
