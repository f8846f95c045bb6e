import {Args, Flags} from '@oclif/core'

import {type ApplyResult, type StepOutcome, typed} from '../cli/contract.js'
import {clusterFlags, durationFlag, namespaceFlag, namespaceOf} from '../cli/flags.js'
import {BaseCommand, EXIT_CODES_HELP, outputFlag} from '../cli/base.js'
import {checkTargetCluster, connectCluster, interruptHandler, parseDuration, resolvePlanFile} from '../cli/plan-commands.js'
import {LockHeldError, UserError} from '../errors.js'
import {applyStep, blockingStep, checkStep, describeStepWrites, type ExecutionContext, type StepSelection, stepsToApply} from '../executor/engine.js'
import {kubernetesIdentity, liveHolder, lockHeldSuggestion, NamespaceLock, whoAmI} from '../executor/lock.js'
import {checkOwner} from '../executor/ownership.js'
import {ProjectedCluster} from '../executor/projection.js'
import {PlanState} from '../executor/plan-state.js'
import {InterruptedError} from '../executor/verify.js'
import {stderrPainter} from '../ui/color.js'
import {dryRunLines} from '../ui/dry-run.js'
import {canPrompt, confirm, isCI} from '../ui/interactive.js'
import {runTasks} from '../ui/progress.js'
import type {PlanStep} from '../planner/plan-types.js'
import {describeWindow, openWindows} from '../planner/windows.js'

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

For each step: check the plan (schema, digest, safety), take the namespace's lock (a Lease), re-read the preconditions of this step and of every step after it, judged on the cluster as the steps before them will leave it (exit 3 if the cluster changed, before anything is written — drift stops apply before traffic moves, not after the restart), show what will change and ask (or --yes), write, verify the postconditions (waiting up to --timeout), and record the result in the plan file. Every step is idempotent: re-running one whose effect is already present writes nothing. A failed step blocks apply until it is retried (--retry) or rolled back. Stopping inside a hazard window of the simulation (e.g. after restart-workloads) warns which policies stay degraded until which step.

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
    retry: Flags.boolean({description: 'Re-run a step that failed or was interrupted.'}),
    'dry-run': Flags.option({description: 'server: send every write with dryRun=All (validated by the API server and admission, nothing persisted or recorded).', options: ['none', 'server'] as const, default: 'none' as const})(),
    timeout: durationFlag({description: 'How long to wait for each step\'s verification (waypoint ready, rollouts…).', default: '5m'}),
    'lock-timeout': durationFlag({description: 'How long to wait for another operator\'s lock before giving up (exit 5).', default: '0s'}),
    'allow-other-cluster': Flags.boolean({description: 'Run even if the current context is not the cluster the plan was made for.'}),
    ...clusterFlags,
  }

  /** Stopping inside a hazard window leaves policies degraded until a later step: say which, until when. */
  private warnOpenWindows(state: PlanState): void {
    const windows = openWindows(state.plan, (id) => state.status(id)?.phase ?? 'Pending')
    if (windows.length === 0) return
    const p = stderrPainter()
    this.note(p.paint(['bold', 'yellow'], `\nWarning: stopped inside ${windows.length} hazard window(s); until they close:`))
    for (const w of windows) this.note(p.paint('yellow', `  - ${describeWindow(w)}`))
  }

  async run(): Promise<ApplyResult | undefined> {
    const {args, flags} = await this.parse(ApplyCommand)
    const timeoutMs = parseDuration(flags.timeout, '--timeout')
    const lockTimeoutMs = parseDuration(flags['lock-timeout'], '--lock-timeout')
    const dryRun = flags['dry-run'] === 'server'
    const file = await resolvePlanFile(namespaceOf(args.plan, flags.namespace, 'PLAN'), {unfinishedOnly: true})
    let state = await PlanState.load(file)
    const p = stderrPainter()
    // Every line of a dry run says so: nothing of it was persisted or recorded.
    const mark = (m: string) => (dryRun ? dryRunLines(m) : m)
    const say = (m: string) => this.note(mark(m))
    const selection: StepSelection = flags.all ? {kind: 'all'} : flags.to ? {kind: 'to', id: flags.to} : {kind: 'next'}
    // A step recorded Running is either being applied right now by the lock's holder or was left by an
    // apply that died: a live holder is reported as such (exit 5), not as a step to retry. With
    // --lock-timeout the lock is waited for first, and the record read again once it is ours.
    const blocked = flags.retry ? undefined : blockingStep(state)
    if (blocked && !dryRun && lockTimeoutMs === 0) {
      const holder = await liveHolder(await connectCluster(flags), state.namespace)
      if (holder) throw new LockHeldError(`namespace ${state.namespace} is locked by ${holder}; step ${blocked.id} is recorded ${state.phase(blocked)}`, lockHeldSuggestion(state.namespace))
    }
    const waitForHolder = blocked !== undefined && !dryRun && lockTimeoutMs > 0
    let steps = waitForHolder ? [] : stepsToApply(state, selection, flags.retry)
    if (state.plan.spec.blockers.length > 0) {
      throw new UserError(`the plan has ${state.plan.spec.blockers.length} blocker(s): ${state.plan.spec.blockers.map((b) => b.id).join(', ')}`, {
        exitCode: 1,
        suggestion: `Resolve them (mesh-migrate show ${file}), then re-run \`mesh-migrate plan ${state.namespace}\`.`,
      })
    }
    if (!waitForHolder && steps.length === 0) {
      const next = state.plan.spec.steps.find((s) => state.phase(s) !== 'Applied')
      this.result(selection.kind === 'to' && next
        ? `Step ${selection.id} of ${file} is already applied, with every step before it; nothing to do. The next pending step is ${next.id}.`
        : `Every step of ${file} is applied; nothing to do.`)
      const remaining = state.plan.spec.steps.filter((s) => state.phase(s) !== 'Applied').map((s) => s.id)
      return this.emit(typed('ApplyResult', {plan: file, namespace: state.namespace, dryRun, applied: [], remaining}), flags.output, () => '')
    }
    // Fail before touching the cluster when nobody could answer the per-step question.
    if (!flags.yes && !dryRun && !canPrompt()) {
      throw new UserError(`apply asks before each step, but there is no terminal to ask on${isCI() ? ' (CI is set)' : ''}`, {exitCode: 2, suggestion: 'Review the plan (mesh-migrate show), then pass --yes.'})
    }

    const client = await connectCluster(flags)
    await checkTargetCluster(client, state, flags['allow-other-cluster'], say)
    const interrupt = interruptHandler((m) => this.note(m))
    let lock: NamespaceLock | undefined
    const applied: StepOutcome[] = []
    try {
      if (!dryRun) {
        lock = await NamespaceLock.acquire(client, {
          namespace: state.namespace,
          command: `apply ${file}`,
          plan: file,
          timeoutMs: lockTimeoutMs,
          onWait: (holder) => this.note(`Namespace ${state.namespace} is locked by ${holder}; waiting up to ${flags['lock-timeout']}…`),
          onTakeover: (holder) => this.note(`Taking over an expired lock left by ${holder}.`),
        })
        // The holder we waited for may have changed the record: judge the steps on the file as it is now.
        state = await PlanState.load(file)
        steps = stepsToApply(state, selection, flags.retry)
      }
      // Another plan owns the namespace: refused before anything is written (the first write claims it).
      await checkOwner(client, state, 'apply')
      if (!dryRun) await state.begin()
      state.localUser = whoAmI()
      // A dry run records nothing, so it does not ask the server who we are.
      const who = (dryRun ? undefined : await kubernetesIdentity(client)) ?? state.localUser
      const ctx: ExecutionContext = {client, state, who, dryRun, timeoutMs, signal: interrupt.signal, ...(lock ? {lock} : {}), ...(dryRun ? {projection: new ProjectedCluster(client)} : {})}
      const {preflightRunner} = await import('../preflight/runner.js')
      ctx.preflight = preflightRunner(client, state.plan)
      const total = state.plan.spec.steps.length
      for (const step of steps) {
        const index = state.plan.spec.steps.indexOf(step) + 1
        say(`\n${p.paint('bold', `Step ${index}/${total} ${step.id}`)}: ${step.description}`)
        for (const line of describeStepWrites(step)) say(`  will ${line}`)
        if (step.verify.length > 0) say(`  verify: ${step.verify.map((v) => v.check).join(', ')}`)
        say(`  undo: ${step.undo.description}`)
        if (!flags.yes && !dryRun) {
          const check = await checkStep(ctx, step)
          if (check.stale.length === 0 && !(await confirm(`Apply step ${step.id}?`, '--yes'))) {
            // terraform's habit: declining is not success (exit 1), so a script or a chain (&&) stops here.
            throw new UserError(`Apply cancelled: nothing was written for step ${step.id}${applied.length > 0 ? ` (${applied.map((a) => a.id).join(', ')} applied before it)` : ''}.`, {
              exitCode: 1,
              suggestion: `Re-run \`mesh-migrate apply ${file} --step\` when ready.`,
            })
          }
        }
        let result: StepOutcome | undefined
        await runTasks([{
          title: dryRun ? dryRunLines(step.id) : step.id,
          run: async (update) => {
            ctx.onProgress = update
            const {skippedWrites, details} = await applyStep(ctx, step)
            result = {id: step.id, action: step.action, outcome: stepOutcome(step, dryRun, skippedWrites), details}
            return OUTCOME_TEXT[result.outcome]
          },
        }])
        applied.push(result!)
        this.result(mark(`Step ${index}/${total} ${step.id}: ${OUTCOME_TEXT[result!.outcome]}`))
        for (const d of result!.details) this.result(mark(`  ${d}`))
      }
    } catch (error) {
      if (error instanceof InterruptedError) {
        await lock?.release().catch(() => undefined)
        lock = undefined
        process.exitCode = 130
        this.note(`Interrupted. The step is recorded as Interrupted in ${file}; re-run \`mesh-migrate apply ${file} --retry\` to finish it or \`mesh-migrate rollback ${file}\` to undo.`)
        return undefined
      }
      throw error
    } finally {
      interrupt.dispose()
      await lock?.release().catch(() => undefined)
    }
    const remaining = state.plan.spec.steps.filter((s) => state.phase(s) !== 'Applied').map((s) => s.id)
    if (!dryRun && remaining.length > 0) this.warnOpenWindows(state)
    const next = dryRun || remaining.length === 0 ? undefined : `mesh-migrate apply ${file} --step`
    if (!dryRun) this.result(remaining.length === 0 ? `\nAll steps applied. ${state.namespace} is migrated to ambient.` : `\nNext: ${remaining[0]} (${next}). ${remaining.length} step(s) left.`)
    const result: ApplyResult = typed('ApplyResult', {plan: file, namespace: state.namespace, dryRun, applied, remaining, ...(next ? {next} : {})})
    return this.emit(result, flags.output, () => '')
  }
}

/** What became of a step: a read-only step of a dry run sends nothing, so nothing of it is "accepted". */
function stepOutcome(step: PlanStep, dryRun: boolean, skippedWrites: boolean): StepOutcome['outcome'] {
  if (dryRun) return step.operations.length === 0 ? 'not-sent' : 'accepted'
  if (step.operations.length === 0) return 'verified'
  return skippedWrites ? 'already-in-place' : 'applied'
}
