// `apply NS` as an action (issue 22): what apply does between its options and its rendering — refuse what cannot
// run, hold the namespace, apply and verify each step, record it — with its output streams (and, for the fleet,
// the Ctrl+C signal and a "stop before the next step" question) as parameters. The apply command runs it for one
// plan; `apply --fleet` runs several at once in one process (src/fleet/run.ts).
import {sameCommand} from '../invocation.js'
import type {StepOutcome} from '../cli/contract.js'
import {type LockOptions, type PlanSession} from '../cli/plan-session.js'
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
import type {PlanState} from '../executor/plan-state.js'
import {ProjectedCluster} from '../executor/projection.js'
import {checkFleetOrder} from '../executor/fleet-order.js'
import {stderrPainter} from '../ui/color.js'
import {dryRunLines, markIfDryRun as mark} from '../ui/dry-run.js'
import {canPrompt, confirm, isCI} from '../ui/interactive.js'
import type {Io} from '../ui/io.js'
import {runTasks} from '../ui/progress.js'
import type {PlanStep} from '../planner/plan-types.js'
import {changesDataPlane} from '../steps/index.js'
import {ExitCode} from '../exit-codes.js'

export const OUTCOME_TEXT: Record<StepOutcome['outcome'], string> = {
  applied: 'applied and verified',
  'already-in-place': 'already in place, verified',
  verified: 'verified',
  accepted: 'accepted by the server, nothing persisted',
  'not-sent': 'read-only, nothing sent',
}

export interface ApplyOptions {
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
  /** Apply although an earlier wave of the fleet this namespace depends on is not fully applied (recorded). */
  ignoreFleetOrder: boolean
}

/** Where an apply says things, and what else it is told by whoever runs it. */
export interface ApplyIO {
  /** The process: terminal facts, the prompt, Ctrl+C (unless `signal`), the exit code. */
  io: Io
  /** Progress, questions' context, warnings: stderr for one plan, the namespace's progress line in a fleet. */
  note: (message: string) => void
  /** Each step's outcome and details: stdout for one plan, the namespace's result in a fleet. */
  result: (message: string) => void
  /** Runs one step with a progress display (`update` shows a line; the returned text ends its title). */
  runStep: (title: string, run: (update: (message: string) => void) => Promise<string>) => Promise<void>
  /** The fleet's one Ctrl+C (absent: the session installs its own handler). */
  signal?: AbortSignal
  /** Asked before each step: true stops there, after the step in progress (the fleet's first failure). */
  stopRequested?: () => boolean
}

/** One plan's apply at a terminal: notes and results where the command says, each step with a progress display on stderr. */
export function terminalApplyIO(io: Io, say: Pick<ApplyIO, 'note' | 'result'>): ApplyIO {
  return {io, note: say.note, result: say.result, runStep: (title, run) => runTasks(io, [{title, run}])}
}

/** What apply would run, or why it cannot: a live holder, a blocked plan, the fleet's order, nobody to ask. Nothing is written. */
export async function validateApply(
  o: ApplyOptions,
  {io, note}: Pick<ApplyIO, 'io' | 'note'>,
): Promise<PlanStep[] | 'up-to-date'> {
  const {session, dryRun} = o
  const blockers = session.state.plan.spec.blockers
  if (blockers.length > 0) {
    // Blocked is what validate reports with 4 too: the plan cannot be applied as it is.
    throw new UserError(`the plan has ${blockers.length} blocker(s): ${blockers.map((b) => b.id).join(', ')}`, {
      exitCode: ExitCode.Invalid,
      suggestion: `Resolve them (mesh-migrate show ${session.file}), then re-run \`mesh-migrate plan ${session.namespace}\`.`,
    })
  }
  // What can be refused from this machine alone (the fleet's order, nobody to ask) is refused before the cluster
  // is contacted, when the file has steps to apply; judged again below if only the cluster's record has some.
  let refused = false
  const refuseEarly = async (namespace: string, steps: PlanStep[]) => {
    refused = true
    await refuseWithoutCluster(o, io, namespace, steps)
  }
  // A step the file records Running, Interrupted or Failed is judged under the lock (a dead holder's is taken over).
  const fileBlocked = o.retry ? undefined : blockingStep(session.state)
  const fileSteps = o.repair === undefined && !fileBlocked ? stepsToApply(session.state, o.selection, o.retry) : []
  if (fileSteps.length > 0) await refuseEarly(session.namespace, fileSteps)
  // The cluster's record is the plan's progress (a teammate's file may have no status, or a stale one).
  const client = await session.connectToPlanCluster(o.allowOtherCluster, (m) => note(mark(dryRun, m)))
  await session.adoptRecord(client, {readOnly: true})
  const state = session.state
  if (o.repair !== undefined) return [repairable(state, o.repair)]
  // A step recorded Running is either being applied right now by the lock's holder or was left by an
  // apply that died: a live holder is reported as such (exit 5), not as a step to retry. With
  // --lock-timeout the lock is waited for first, and the record read again once it is ours.
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
  // No live holder: a step left Running or Interrupted is resumed by this same command (issue 19 §7).
  const steps = waitForHolder ? [] : stepsToApply(state, o.selection, o.retry, true)
  if (!waitForHolder && steps.length === 0) return 'up-to-date'
  if (!refused) await refuseEarly(state.namespace, steps)
  return steps
}

/** The fleet's order (exit 5) and nobody to answer the per-step question (exit 2): nothing is asked or written. */
async function refuseWithoutCluster(o: ApplyOptions, io: Io, namespace: string, steps: PlanStep[]): Promise<void> {
  // A dry run writes nothing, so it is not held to the fleet's order.
  if (!o.dryRun) await checkFleetOrder(o.session.file, namespace, o.ignoreFleetOrder, pastBindWaypoint(steps))
  if (!o.yes && !o.dryRun && !canPrompt(io)) {
    throw new UsageError(
      `apply asks before each step, but there is no terminal to ask on${isCI(io.env) ? ' (CI is set)' : ''}`,
      'Review the plan (mesh-migrate show), then pass --yes.',
    )
  }
}

/** --repair STEP: only an applied step is repaired (the others are applied, retried or rolled back). */
function repairable(state: PlanState, id: string): PlanStep {
  const step = state.plan.spec.steps.find((s) => s.id === id)!
  if (state.phase(step) !== 'Applied')
    throw new UsageError(
      `--repair ${id}: step ${id} is ${state.phase(step)}, not Applied`,
      `\`mesh-migrate apply ${state.file} --retry\` re-runs a Failed step (a Running or Interrupted one is resumed by \`mesh-migrate apply ${state.file}\`); \`mesh-migrate apply ${state.file} --step\` applies the next one.`,
    )
  return step
}

/** Hold the namespace and apply the steps; undefined when interrupted (recorded, exit 130). */
export async function applyPlanSteps(
  o: ApplyOptions,
  io: ApplyIO,
  validated: PlanStep[],
): Promise<StepOutcome[] | undefined> {
  const {session, dryRun} = o
  const client = await session.connectToPlanCluster(o.allowOtherCluster, (m) => io.note(mark(dryRun, m)))
  const applied: StepOutcome[] = []
  const interrupted = `Interrupted. The step is recorded as Interrupted in ${session.file}; re-run \`${sameCommand('apply', `mesh-migrate apply ${session.file}`)}\` to finish it or \`mesh-migrate rollback ${session.file}\` to undo.`
  const body = async (ctx: ExecutionContext) => {
    // Under the lock the record may have changed (the holder we waited for): judge the steps on it as it is now.
    const steps =
      o.repair !== undefined
        ? [repairable(ctx.state, o.repair)]
        : dryRun
          ? validated
          : stepsToApply(ctx.state, o.selection, o.retry, true)
    if (dryRun) ctx.projection = new ProjectedCluster(client)
    else {
      await ctx.state.begin()
      await recordFleetOrderOverride(o, io, ctx, steps)
    }
    const {preflightRunner} = await import('../preflight/runner.js')
    ctx.preflight = preflightRunner(client, ctx.state.plan)
    const refresh = inventoryRefresh(o, ctx, steps)
    await refresh.before(undefined)
    for (const step of steps) {
      if (io.stopRequested?.()) break
      await refresh.before(step)
      applied.push(await applyOneStep(o, io, ctx, step, applied))
    }
  }
  const finished = await session.holding(client, o.lock, interrupted, body, io)
  return finished ? applied : undefined
}

/**
 * Issue 19 §1: the namespace's inventory is read again and compared with the plan's before the first step of the run
 * that changes the data plane — once before the run writes anything, and again right before that step when steps of
 * the run wrote before it. Not in a dry run (it writes nothing), nor for --repair (it re-runs an applied step).
 */
function inventoryRefresh(
  o: ApplyOptions,
  ctx: ExecutionContext,
  steps: PlanStep[],
): {before: (step: PlanStep | undefined) => Promise<void>} {
  const firstSwitch = o.dryRun || o.repair !== undefined ? undefined : steps.find(changesDataPlane)
  let wrote = false
  const check = async () => {
    const {refuseInventoryChanges} = await import('../executor/inventory-refresh.js')
    await refuseInventoryChanges(ctx.client, ctx.state.plan, ctx.state.file, firstSwitch!.id)
  }
  return {
    before: async (step) => {
      if (!firstSwitch) return
      if (step === undefined) await check()
      else if (step === firstSwitch && wrote) await check()
      else if (step.operations.length > 0 && steps.indexOf(step) < steps.indexOf(firstSwitch)) wrote = true
    },
  }
}

/** Whether the steps go past bind-waypoint: they switch the data plane for callers (bind-waypoint itself only binds). */
function pastBindWaypoint(steps: PlanStep[]): boolean {
  return steps.some((s) => changesDataPlane(s) && s.action !== 'bind-waypoint')
}

/** --ignore-fleet-order: the earlier waves still pending are warned about and recorded with who overrode them. */
async function recordFleetOrderOverride(
  o: ApplyOptions,
  io: ApplyIO,
  ctx: ExecutionContext,
  steps: PlanStep[],
): Promise<void> {
  if (!o.ignoreFleetOrder) return
  const order = await checkFleetOrder(o.session.file, ctx.state.namespace, true, pastBindWaypoint(steps))
  if (!order) return
  const pending = order.pending.map((d) => `${d.namespace} (wave ${d.wave}: ${d.progress})`)
  io.note(
    stderrPainter(io.io).paint(
      'yellow',
      `Warning: applying ${ctx.state.namespace} ahead of the order of ${order.fleetFile} (--ignore-fleet-order, recorded in ${o.session.file} as overridden by ${ctx.who}); not fully applied: ${pending.join(', ')}.`,
    ),
  )
  await ctx.state.recordFleetOrderOverride({
    at: io.io.now().toISOString(),
    by: ctx.who,
    fleet: order.fleetFile,
    pending,
  })
}

/** --diff: each write of the step against the live object (stdout, unless stdout carries a document). */
async function showDiff(io: ApplyIO, ctx: ExecutionContext, step: PlanStep): Promise<void> {
  const {operationDiff} = await import('../executor/object-diff.js')
  for (const op of step.operations) {
    const diff = await operationDiff(ctx.client, op)
    if (diff) io.result(diff.trimEnd())
  }
}

/** One step: say what will change, ask (unless --yes), apply and verify it, report its outcome. */
async function applyOneStep(
  o: ApplyOptions,
  io: ApplyIO,
  ctx: ExecutionContext,
  step: PlanStep,
  before: StepOutcome[],
): Promise<StepOutcome> {
  const {dryRun, session} = o
  const say = (m: string) => io.note(mark(dryRun, m))
  const steps = ctx.state.plan.spec.steps
  const title = `Step ${steps.indexOf(step) + 1}/${steps.length} ${step.id}`
  // Wrapped at spaces to the terminal the prompt is on: a terminal would break the description mid-word.
  const {fitText, terminalWidth} = await import('../ui/table.js')
  say(
    `\n${fitText(`${stderrPainter(io.io).paint('bold', title)}: ${step.description}`, {width: terminalWidth(io.io.env, io.io.stderr)})}`,
  )
  for (const line of describeStepWrites(step)) say(`  will ${line}`)
  if (step.verify.length > 0) say(`  verify: ${step.verify.map((v) => v.check).join(', ')}`)
  say(`  undo: ${step.undo.description}`)
  if (o.diff) await showDiff(io, ctx, step)
  if (
    !o.yes &&
    !dryRun &&
    (await checkStep(ctx, step)).stale.length === 0 &&
    !(await confirm(io.io, `Apply step ${step.id}?`, '--yes'))
  ) {
    const earlier = before.length > 0 ? ` (${before.map((a) => a.id).join(', ')} applied before it)` : ''
    throw new CancelledError(
      `Apply cancelled: nothing was written for step ${step.id}${earlier}.`,
      `Re-run \`mesh-migrate apply ${session.file} --step\` when ready.`,
    )
  }
  let result: StepOutcome | undefined
  await io.runStep(dryRun ? dryRunLines(step.id) : step.id, async (update) => {
    ctx.onProgress = update
    const {skippedWrites, details} = await applyStep(ctx, step)
    result = {id: step.id, action: step.action, outcome: stepOutcome(step, dryRun, skippedWrites), details}
    return OUTCOME_TEXT[result.outcome]
  })
  io.result(mark(dryRun, `${title}: ${OUTCOME_TEXT[result!.outcome]}`))
  for (const d of result!.details) io.result(mark(dryRun, `  ${d}`))
  return result!
}

/** What became of a step: a read-only step of a dry run sends nothing, so nothing of it is "accepted". */
function stepOutcome(step: PlanStep, dryRun: boolean, skippedWrites: boolean): StepOutcome['outcome'] {
  if (dryRun) return step.operations.length === 0 ? 'not-sent' : 'accepted'
  if (step.operations.length === 0) return 'verified'
  return skippedWrites ? 'already-in-place' : 'applied'
}
