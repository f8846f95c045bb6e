import * as Args from '@oclif/core/args'
import * as Flags from '@oclif/core/flags'

import {type ApplyResult, type StepOutcome, typed} from '../cli/contract.js'
import {clusterFlags, durationFlag, namespaceFlag, namespaceOf, takeOverFlag} from '../cli/flags.js'
import {BaseCommand, EXIT_CODES_HELP, outputFlag, type OutputFormat} from '../cli/base.js'
import {type LockOptions, lockOptions, PlanSession} from '../cli/plan-session.js'
import {CancelledError, LockHeldError, UsageError, UserError} from '../errors.js'
import {
  applyStep,
  blockingStep,
  checkStep,
  describeStepWrites,
  type ExecutionContext,
  type StepSelection,
  stepsToApply,
} from '../executor/engine.js'
import {liveHolder, lockHeldSuggestion} from '../executor/lock.js'
import {ProjectedCluster} from '../executor/projection.js'
import type {PlanState} from '../executor/plan-state.js'
import {stderrPainter} from '../ui/color.js'
import {dryRunLines, markIfDryRun as mark} from '../ui/dry-run.js'
import {canPrompt, confirm, isCI} from '../ui/interactive.js'
import {runTasks} from '../ui/progress.js'
import type {PlanStep} from '../planner/plan-types.js'
import {describeWindow, openWindows} from '../planner/windows.js'
import {ExitCode} from '../cli/exit-codes.js'

const OUTCOME_TEXT: Record<StepOutcome['outcome'], string> = {
  applied: 'applied and verified',
  'already-in-place': 'already in place, verified',
  verified: 'verified',
  accepted: 'accepted by the server, nothing persisted',
  'not-sent': 'read-only, nothing sent',
}

export default class ApplyCommand extends BaseCommand {
  static override summary = 'Apply the next step of a plan (or several), verify it, and record it in the plan file.'
  static override description = `PLAN is a plan file or a namespace (plans/<namespace>.yaml); omitted, the one unfinished plan under plans/.

Each step's outcome, the summary and the next command go to stdout (\`apply … | tee change.log\` keeps them); what will change, the questions and the progress go to stderr. -o json prints one ApplyResult document (docs/contract.md), as --json.

For each step: check the plan (schema, digest, safety), take the namespace's lock (a Lease), re-read the preconditions of this step and of every step after it, judged on the cluster as the steps before them will leave it (exit 3 if the cluster changed, before anything is written — drift stops apply before traffic moves, not after the restart), show what will change and ask (or --yes), write, verify the postconditions (waiting up to --timeout), and record the result in the cluster (ConfigMap mesh-migrate-record-<namespace>, read first: it wins over the file's status) and then in the plan file. Before every write the steps already applied are checked against the cluster: drift stops apply (exit 3, naming the step, object and old → new value); --repair STEP re-runs an applied step to put it back. Every step is idempotent: re-running one whose effect is already present writes nothing. A failed step blocks apply until it is retried (--retry) or rolled back. Stopping inside a hazard window of the simulation (e.g. after restart-workloads) warns which policies stay degraded until which step.

One plan per namespace: the first write records the plan as the namespace's owner (annotation mesh-migrate.io/owner-plan, removed when the plan is fully rolled back); another plan file for the namespace is refused with exit 5, naming the owner.

--dry-run=server sends every write with dryRun=All and marks every line "[server dry run]"; each step's preconditions see the dry-run writes of the steps before it, so --all gets through every step. What cannot be judged without really applying (the readiness of a waypoint created in the same run) is named; read-only steps send nothing.

EXIT CODES
${EXIT_CODES_HELP}
  130 interrupted (Ctrl+C): the step is recorded as Interrupted and the lock released`

  static override examples = [
    '<%= config.bin %> apply bookinfo --step',
    '<%= config.bin %> apply plans/bookinfo.yaml --to restart-workloads --yes',
    '<%= config.bin %> apply bookinfo --all --dry-run=server',
    '<%= config.bin %> apply bookinfo --retry',
    '<%= config.bin %> apply -n bookinfo --step --yes | tee change.log',
  ]

  static override args = {plan: Args.string({description: 'Plan file or namespace (or -n NAMESPACE).'})}
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
    retry: Flags.boolean({description: 'Re-run a step that failed or was interrupted.'}),
    repair: Flags.string({
      description:
        'Re-run this applied step, whose effects drifted (status shows the drift): it writes only what is missing, then verifies.',
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
    'take-over': takeOverFlag,
    ...clusterFlags,
  }

  async run(): Promise<ApplyResult | undefined> {
    const options = await this.complete()
    const steps = await this.validate(options)
    if (steps === 'up-to-date') return this.upToDate(options)
    const applied = await this.applySteps(options, steps)
    return applied && this.summary(options, applied)
  }

  /** Flags → options; the plan is found and loaded (checked: schema, safety, digest). */
  private async complete(): Promise<ApplyOptions> {
    const {args, flags} = await this.parse(ApplyCommand)
    const session = await PlanSession.open(namespaceOf(args.plan, flags.namespace, 'PLAN'), {
      unfinishedOnly: true,
      cluster: flags,
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
      output: flags.output,
    }
  }

  /** What apply would run, or why it cannot: a live holder, a blocked plan, nobody to ask. Nothing is written. */
  private async validate(o: ApplyOptions): Promise<PlanStep[] | 'up-to-date'> {
    const {session, dryRun} = o
    const blockers = session.state.plan.spec.blockers
    if (blockers.length > 0) {
      // Blocked is what validate reports with 4 too: the plan cannot be applied as it is.
      throw new UserError(`the plan has ${blockers.length} blocker(s): ${blockers.map((b) => b.id).join(', ')}`, {
        exitCode: ExitCode.Invalid,
        suggestion: `Resolve them (mesh-migrate show ${session.file}), then re-run \`mesh-migrate plan ${session.namespace}\`.`,
      })
    }
    // The cluster's record is the plan's progress (a teammate's file may have no status, or a stale one).
    const client = await session.connectToPlanCluster(o.allowOtherCluster, (m) => this.note(mark(dryRun, m)))
    await session.adoptRecord(client, {readOnly: true})
    const state = session.state
    // A step recorded Running is either being applied right now by the lock's holder or was left by an
    // apply that died: a live holder is reported as such (exit 5), not as a step to retry. With
    // --lock-timeout the lock is waited for first, and the record read again once it is ours.
    if (o.repair !== undefined) return [this.repairable(state, o.repair)]
    const blocked = o.retry ? undefined : blockingStep(state)
    if (blocked && !dryRun && o.lock.lockTimeoutMs === 0) {
      const holder = await liveHolder(client, state.namespace)
      if (holder)
        throw new LockHeldError(
          `namespace ${state.namespace} is locked by ${holder}; step ${blocked.id} is recorded ${state.phase(blocked)}`,
          lockHeldSuggestion(state.namespace),
        )
    }
    const waitForHolder = blocked !== undefined && !dryRun && o.lock.lockTimeoutMs > 0
    const steps = waitForHolder ? [] : stepsToApply(state, o.selection, o.retry)
    if (!waitForHolder && steps.length === 0) return 'up-to-date'
    // Fail before touching the cluster when nobody could answer the per-step question.
    if (!o.yes && !dryRun && !canPrompt()) {
      throw new UsageError(
        `apply asks before each step, but there is no terminal to ask on${isCI() ? ' (CI is set)' : ''}`,
        'Review the plan (mesh-migrate show), then pass --yes.',
      )
    }
    return steps
  }

  /** --repair STEP: only an applied step is repaired (the others are applied, retried or rolled back). */
  private repairable(state: PlanState, id: string): PlanStep {
    const step = state.plan.spec.steps.find((s) => s.id === id)!
    if (state.phase(step) !== 'Applied')
      throw new UsageError(
        `--repair ${id}: step ${id} is ${state.phase(step)}, not Applied`,
        `\`mesh-migrate apply ${state.file} --retry\` re-runs a Failed or Interrupted step; \`mesh-migrate apply ${state.file} --step\` applies the next one.`,
      )
    return step
  }

  private upToDate(o: ApplyOptions): Promise<ApplyResult | undefined> {
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

  /** Hold the namespace and apply the steps; undefined when interrupted (recorded, exit 130). */
  private async applySteps(o: ApplyOptions, validated: PlanStep[]): Promise<StepOutcome[] | undefined> {
    const {session, dryRun} = o
    const client = await session.connectToPlanCluster(o.allowOtherCluster, (m) => this.note(mark(dryRun, m)))
    const applied: StepOutcome[] = []
    const interrupted = `Interrupted. The step is recorded as Interrupted in ${session.file}; re-run \`mesh-migrate apply ${session.file} --retry\` to finish it or \`mesh-migrate rollback ${session.file}\` to undo.`
    const finished = await session.holding(client, o.lock, interrupted, async (ctx) => {
      // Under the lock the record may have changed (the holder we waited for): judge the steps on it as it is now.
      const steps =
        o.repair !== undefined
          ? [this.repairable(ctx.state, o.repair)]
          : dryRun
            ? validated
            : stepsToApply(ctx.state, o.selection, o.retry)
      if (dryRun) ctx.projection = new ProjectedCluster(client)
      else await ctx.state.begin()
      const {preflightRunner} = await import('../preflight/runner.js')
      ctx.preflight = preflightRunner(client, ctx.state.plan)
      for (const step of steps) applied.push(await this.applyStep(o, ctx, step, applied))
    })
    return finished ? applied : undefined
  }

  /** --diff: each write of the step against the live object (stdout, unless stdout carries a document). */
  private async showDiff(ctx: ExecutionContext, step: PlanStep): Promise<void> {
    const {operationDiff} = await import('../executor/object-diff.js')
    for (const op of step.operations) {
      const diff = await operationDiff(ctx.client, op)
      if (diff) this.result(diff.trimEnd())
    }
  }

  /** One step: say what will change, ask (unless --yes), apply and verify it, print its outcome. */
  private async applyStep(
    o: ApplyOptions,
    ctx: ExecutionContext,
    step: PlanStep,
    before: StepOutcome[],
  ): Promise<StepOutcome> {
    const {dryRun, session} = o
    const say = (m: string) => this.note(mark(dryRun, m))
    const steps = ctx.state.plan.spec.steps
    const title = `Step ${steps.indexOf(step) + 1}/${steps.length} ${step.id}`
    // Wrapped at spaces to the terminal the prompt is on: a terminal would break the description mid-word.
    const {fitText, terminalWidth} = await import('../ui/table.js')
    say(
      `\n${fitText(`${stderrPainter().paint('bold', title)}: ${step.description}`, {width: terminalWidth(process.env, process.stderr)})}`,
    )
    for (const line of describeStepWrites(step)) say(`  will ${line}`)
    if (step.verify.length > 0) say(`  verify: ${step.verify.map((v) => v.check).join(', ')}`)
    say(`  undo: ${step.undo.description}`)
    if (o.diff) await this.showDiff(ctx, step)
    if (
      !o.yes &&
      !dryRun &&
      (await checkStep(ctx, step)).stale.length === 0 &&
      !(await confirm(`Apply step ${step.id}?`, '--yes'))
    ) {
      const earlier = before.length > 0 ? ` (${before.map((a) => a.id).join(', ')} applied before it)` : ''
      throw new CancelledError(
        `Apply cancelled: nothing was written for step ${step.id}${earlier}.`,
        `Re-run \`mesh-migrate apply ${session.file} --step\` when ready.`,
      )
    }
    let result: StepOutcome | undefined
    await runTasks([
      {
        title: dryRun ? dryRunLines(step.id) : step.id,
        run: async (update) => {
          ctx.onProgress = update
          const {skippedWrites, details} = await applyStep(ctx, step)
          result = {id: step.id, action: step.action, outcome: stepOutcome(step, dryRun, skippedWrites), details}
          return OUTCOME_TEXT[result.outcome]
        },
      },
    ])
    this.result(mark(dryRun, `${title}: ${OUTCOME_TEXT[result!.outcome]}`))
    for (const d of result!.details) this.result(mark(dryRun, `  ${d}`))
    return result!
  }

  /** What is left, the hazard windows stopped inside, and the next command. */
  private summary(o: ApplyOptions, applied: StepOutcome[]): Promise<ApplyResult | undefined> {
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
    const p = stderrPainter()
    this.note(
      p.paint(['bold', 'yellow'], `\nWarning: stopped inside ${windows.length} hazard window(s); until they close:`),
    )
    for (const w of windows) this.note(p.paint('yellow', `  - ${describeWindow(w)}`))
  }
}

interface ApplyOptions {
  session: PlanSession
  selection: StepSelection
  lock: LockOptions
  dryRun: boolean
  yes: boolean
  /** --diff: show each write's effect on the live object before the step. */
  diff: boolean
  retry: boolean
  /** --repair STEP: re-run this applied step (its effects drifted). */
  repair?: string
  allowOtherCluster: boolean
  output: OutputFormat
}

/** What became of a step: a read-only step of a dry run sends nothing, so nothing of it is "accepted". */
function stepOutcome(step: PlanStep, dryRun: boolean, skippedWrites: boolean): StepOutcome['outcome'] {
  if (dryRun) return step.operations.length === 0 ? 'not-sent' : 'accepted'
  if (step.operations.length === 0) return 'verified'
  return skippedWrites ? 'already-in-place' : 'applied'
}
