// Executing a plan step by step and undoing it (SPEC §5–§7, DOMAIN §4.2–§4.3).
// The command layer decides which steps, asks the user and renders progress; this module does the
// cluster work and keeps the plan file's record true at every moment.
import {ExitCode} from '../exit-codes.js'
import {StalePlanError, UsageError, UserError} from '../errors.js'
import {forbiddenSummary, KubeApiError, KubeConnectionError} from '../kube/errors.js'
import type {KubeClient} from '../kube/types.js'
import type {KubeObject, ObjectRef} from '../planner/model.js'
import type {Operation, PlanStep, StepPhase, Verification} from '../planner/plan-types.js'
import {formatRef, operationRef, refKey} from '../planner/refs.js'
import {mayHaveWritten, rollbackSequence} from '../plan/rollback.js'
import {templateLabelsPatch} from '../planner/workloads.js'
import type {NamespaceLock} from './lock.js'
import {
  effectPresent,
  guardedMergePatch,
  isOurs,
  labelsMatch,
  labelsStill,
  performOperation,
  type PreconditionContext,
  stalePreconditions,
} from './operations.js'
import {stepDrift} from './drift.js'
import {checkCopiesOfKeptOriginals} from './copy-checks.js'
import {claimNamespace} from './ownership.js'
import {laterStepProblems, ownWrites, projectablePreconditions, type ProjectedCluster} from './projection.js'
import {keepProgressRefusals} from './keep-progress.js'
import type {PlanState} from './plan-state.js'
import {replanCommand} from './plan-store.js'
import {
  type CheckResult,
  InterruptedError,
  type PreflightRunner,
  runCheck,
  type VerifyContext,
  waitUntil,
} from './verify.js'
import {checkUndoPreconditions, type UndoCheckContext} from './undo-checks.js'
import {undoGuardsOf} from '../plan/undo-guards.js'
import {doneEntry} from '../plan/status-checks.js'
import {podTemplateOf} from '../planner/vocab.js'
import {isRecord} from '../planner/json.js'
import {sameCommand} from '../invocation.js'

export class StepFailedError extends UserError {
  /** `advice`: how to fix the cause, when known (a 403's grant), before the command that continues. */
  constructor(step: PlanStep, detail: string, file: string, opts: {rollback?: boolean; advice?: string} = {}) {
    const fix = opts.advice ? `${opts.advice} Then` : 'Fix the cause, then'
    super(opts.rollback ? `the rollback of step ${step.id} failed: ${detail}` : `step ${step.id} failed: ${detail}`, {
      exitCode: ExitCode.Failure,
      suggestion: opts.rollback
        ? `${fix} re-run \`mesh-migrate rollback ${file}\` (the step is recorded Failed; its undo is idempotent).`
        : `${fix} \`${sameCommand('apply', `mesh-migrate apply ${file}`, {add: ['--retry']})}\`; or undo what was applied with \`mesh-migrate rollback ${file}\`.`,
    })
  }
}

export interface ExecutionContext {
  client: KubeClient
  state: PlanState
  lock?: NamespaceLock
  who: string
  dryRun: boolean
  timeoutMs: number
  signal: AbortSignal
  preflight?: PreflightRunner
  onProgress?: (message: string) => void
  /** Dry runs of several steps: the earlier steps' dry-run writes, as later preconditions must see them. */
  projection?: ProjectedCluster
  /** --take-over: this plan replaces the plan that owns the namespace (ownership.ts). */
  takeOver?: boolean
}

/** Phases that block apply until retried or rolled back. */
const BLOCKING: StepPhase[] = ['Failed', 'Interrupted', 'Running']
/**
 * Once the lock is ours, a step left Running (its apply died) or Interrupted (Ctrl+C) has nobody finishing it:
 * the same command resumes it (every step is idempotent). A Failed step still needs --retry: its cause may remain.
 */
const BLOCKING_WHEN_RESUMABLE: StepPhase[] = ['Failed']

export type StepSelection = {kind: 'next'} | {kind: 'all'} | {kind: 'to'; id: string}

/**
 * The first step whose record blocks apply (failed, interrupted, or left Running), if any. With `resumable`
 * (no live holder of the lock) only a Failed step blocks.
 */
export function blockingStep(state: PlanState, resumable = false): PlanStep | undefined {
  const phases = resumable ? BLOCKING_WHEN_RESUMABLE : BLOCKING
  return state.plan.spec.steps.find((s) => phases.includes(state.phase(s)))
}

/**
 * A plan whose record is out of order: a step that is not Applied comes before a step that may have
 * written (a rollback stopped half-way: the undo order is not the reverse of the apply order). Running
 * the earlier step would act "behind" a later one whose effect may be partly undone.
 */
export function inconsistentSteps(state: PlanState): {behind: PlanStep; ahead: PlanStep} | undefined {
  const steps = state.plan.spec.steps
  const first = steps.findIndex((s) => state.phase(s) !== 'Applied')
  if (first === -1) return undefined
  const ahead = [...steps].reverse().find((s, i) => steps.length - 1 - i > first && mayHaveWritten(state.phase(s)))
  return ahead ? {behind: steps[first]!, ahead} : undefined
}

/**
 * The steps `apply` would run now. A failed/interrupted step blocks unless `retry`, or (for Running and
 * Interrupted) unless `resumable`: nobody else holds the namespace, so nobody else will finish it. An
 * inconsistent record (see `inconsistentSteps`) blocks too; with `retry` every step from the first one not
 * Applied up to the last one that may have written is re-run, in order (each is idempotent).
 */
export function stepsToApply(
  state: PlanState,
  selection: StepSelection,
  retry: boolean,
  resumable = false,
): PlanStep[] {
  const steps = state.plan.spec.steps
  const inconsistent = inconsistentSteps(state)
  if (inconsistent && !retry) {
    const {behind, ahead} = inconsistent
    throw new UserError(
      `the plan's record is inconsistent: step ${behind.id} is ${state.phase(behind)} but the later step ${ahead.id} is ${state.phase(ahead)}${state.status(ahead.id)?.message ? ` (${state.status(ahead.id)!.message})` : ''}; apply would run ${behind.id} behind it (a rollback stopped half-way?)`,
      {
        exitCode: ExitCode.Failure,
        suggestion: `Finish the rollback with \`mesh-migrate rollback ${state.file}\`, or re-apply with \`${sameCommand('apply', `mesh-migrate apply ${state.file}`, {add: ['--retry']})}\` (re-runs ${behind.id} and every step after it up to ${ahead.id}).`,
      },
    )
  }
  const blocked = blockingStep(state, resumable)
  if (blocked && !retry) {
    const phase = state.phase(blocked)
    const message =
      state.status(blocked.id)?.message ??
      (phase === 'Running' ? 'the apply that ran it stopped before recording a result' : undefined)
    throw new UserError(
      `step ${blocked.id} is ${phase}${message ? ` (${message})` : ''}: it must be retried or rolled back first`,
      {
        exitCode: ExitCode.Failure,
        suggestion: `\`${sameCommand('apply', `mesh-migrate apply ${state.file}`, {add: ['--retry']})}\` re-runs it (every step is idempotent), or \`mesh-migrate rollback ${state.file}\` undoes what was applied.`,
      },
    )
  }
  // With an inconsistent record, the steps from the first one not Applied to the last that may have written
  // are re-run as one: an Applied step among them may have been partly undone.
  const unit = inconsistent
    ? steps.slice(steps.indexOf(inconsistent.behind), steps.indexOf(inconsistent.ahead) + 1)
    : []
  const pending = steps.filter((s) => state.phase(s) !== 'Applied' || unit.includes(s))
  if (pending.length === 0) return []
  switch (selection.kind) {
    case 'next':
      return unit.length > 0 ? unit : [pending[0]!]
    case 'all':
      return pending
    case 'to': {
      const index = steps.findIndex((s) => s.id === selection.id)
      if (index === -1)
        throw new UsageError(`--to ${selection.id}: no such step`, `Steps: ${steps.map((s) => s.id).join(', ')}`)
      if (unit.length > 0 && index < steps.indexOf(unit.at(-1)!)) {
        throw new UsageError(
          `--to ${selection.id} would stop behind step ${unit.at(-1)!.id}, which may have written: the steps ${unit.map((s) => s.id).join(', ')} are re-run together`,
          `Pass --to ${unit.at(-1)!.id} (or a later step), or finish the rollback with \`mesh-migrate rollback ${state.file}\`.`,
        )
      }
      return pending.filter((s) => steps.indexOf(s) <= index)
    }
  }
}

function storedObjects(state: PlanState): Map<string, KubeObject> {
  const map = new Map<string, KubeObject>()
  for (const step of state.plan.spec.steps)
    for (const op of step.operations) if (op.op === 'delete' && op.object) map.set(refKey(op.ref), op.object)
  return map
}

function fromManifests(state: PlanState): boolean {
  return 'manifests' in state.plan.spec.target
}

/** What a step would change, for the confirmation prompt and dry runs. */
export function describeStepWrites(step: PlanStep): string[] {
  return step.operations.map((op) => {
    switch (op.op) {
      case 'apply':
        return `create ${formatRef(operationRef(op))}`
      case 'delete':
        return `delete ${formatRef(op.ref)} (stored in the plan for rollback)`
      case 'label':
        return `label ${formatRef(op.ref)} ${Object.entries(op.labels)
          .map(([k, v]) => (v === null ? `${k}-` : `${k}=${v}`))
          .join(' ')}`
      case 'annotate':
        return `annotate ${formatRef(op.ref)} ${Object.entries(op.annotations)
          .map(([k, v]) => (v === null ? `${k}-` : `${k}=${v}`))
          .join(' ')}`
      case 'restart':
        return `rollout restart ${formatRef(op.ref)}`
      case 'template-labels':
        return `label the pod template of ${formatRef(op.ref)} ${Object.entries(op.labels)
          .map(([k, v]) => (v === null ? `${k}-` : `${k}=${v}`))
          .join(' ')} (rolls its pods)`
    }
  })
}

function preconditionContext(ctx: ExecutionContext): Omit<PreconditionContext, 'targetLabels' | 'deletes'> {
  return {
    namespace: ctx.state.namespace,
    planName: ctx.state.plan.metadata.name,
    stored: storedObjects(ctx.state),
    fromManifests: fromManifests(ctx.state),
  }
}

/**
 * Re-read the step's preconditions: what changed since the plan was made (empty = may run). In a dry run
 * of several steps the cluster is seen through `ctx.projection` (the dry-run writes of the earlier steps);
 * `notChecked` lists what cannot be judged there.
 */
export async function checkStep(
  ctx: ExecutionContext,
  step: PlanStep,
): Promise<{alreadyDone: boolean; stale: string[]; notChecked: string[]}> {
  const client = ctx.projection?.asClient() ?? ctx.client
  const stamp = ctx.state.status(step.id)?.observed?.restartedAt as string | undefined
  let alreadyDone = step.operations.length > 0
  for (const op of step.operations) {
    if (!(await effectPresent(client, op, ctx.state.plan.metadata.name, stamp))) {
      alreadyDone = false
      break
    }
  }
  if (alreadyDone) return {alreadyDone, stale: [], notChecked: []}
  const {checks, skipped} = ctx.projection
    ? projectablePreconditions(step, ctx.projection)
    : {checks: step.preconditions, skipped: []}
  const readiness = {
    timeoutMs: ctx.timeoutMs,
    signal: ctx.signal,
    onProgress: (d: string) => ctx.onProgress?.(`waiting for the waypoint: ${d}`),
  }
  const stale = await stalePreconditions(client, checks, {
    ...preconditionContext(ctx),
    ...ownWrites(step),
    ...(ctx.dryRun || ctx.projection ? {} : {readiness}),
  })
  return {alreadyDone, stale, notChecked: skipped}
}

/**
 * Drift is caught before traffic changes: before a step writes, the preconditions of every step after it
 * that has not run yet are checked against the cluster as the steps before them will leave it. A policy
 * edited after create-policies stops apply before bind-waypoint, not after the restart.
 */
async function checkLaterSteps(ctx: ExecutionContext, step: PlanStep): Promise<void> {
  const steps = ctx.state.plan.spec.steps
  const rest = steps.slice(steps.indexOf(step)).filter((s, i) => i === 0 || ctx.state.phase(s) !== 'Applied')
  const found = await laterStepProblems(ctx.client, rest, preconditionContext(ctx))
  if (found.length === 0) return
  const list = found
    .flatMap(({step: later, problems}) => problems.map((p) => `  - ${p} (precondition of step ${later.id})`))
    .join('\n')
  throw new StalePlanError(
    `the cluster changed since the plan was made; a later step would act on a different state, so apply stops before step ${step.id} (nothing was written by it):\n${list}`,
    staleSuggestion(ctx.state),
  )
}

/** The message undoStep records on a step whose undo has begun: its effects are partly gone on purpose. */
export const ROLLING_BACK = 'rolling back'

/**
 * Refresh before every write (issue 19 §1): every step applied before this one must still show what it did — its
 * writes and the pods it verified (drift.ts, as `status` shows it). A namespace unbound by hand after bind-waypoint
 * stops the next step before it writes (exit 3), naming the step, the object, the field and old → new.
 */
async function checkAppliedSteps(ctx: ExecutionContext, step: PlanStep): Promise<void> {
  const {state} = ctx
  const found = await appliedStepsDrift(ctx, step)
  if (found.length === 0) return
  throw new StalePlanError(
    `the cluster no longer shows what applied steps did, so apply stops before step ${step.id} (nothing was written by it):\n${found
      .flatMap(({step: s, drift}) => drift.map((d) => `  - step ${s.id}: ${d}`))
      .join('\n')}`,
    driftSuggestion(state, found[0]!.step),
  )
}

type StepDrift = {step: PlanStep; drift: string[]}

/** What the cluster no longer shows of the steps applied before `step` (drift.ts), per step. */
async function appliedStepsDrift(ctx: ExecutionContext, step: PlanStep): Promise<StepDrift[]> {
  const {state} = ctx
  const steps = state.plan.spec.steps
  const applied = steps
    .slice(0, steps.indexOf(step))
    .filter((s) => state.phase(s) === 'Applied' && state.status(s.id)?.message !== ROLLING_BACK)
  const found: StepDrift[] = []
  for (const s of applied) {
    const drift = await stepDrift(ctx.client, s, state.plan.metadata.name, applied.slice(applied.indexOf(s) + 1))
    if (drift.length > 0) found.push({step: s, drift})
  }
  return found
}

/** How often a wait that is not met yet looks for drift that would keep it from ever being met. */
const WAIT_DRIFT_INTERVAL_MS = 10_000

/**
 * Issue 19 §1: a wait that cannot succeed because of drift says so by name instead of waiting out its timeout. While
 * the step's verification is not met (first at once, then every WAIT_DRIFT_INTERVAL_MS), the step's own writes and
 * the steps applied before it are checked as before a write: a namespace unbound by hand while bind-waypoint or
 * verify-dataplane waits for "Services bound" stops the wait (exit 3), naming the label, the object and old → new.
 * The step's own pods are not judged: they are what it is waiting for.
 */
function driftDuringWait(ctx: ExecutionContext, step: PlanStep): (unmet: CheckResult) => Promise<void> {
  let last = -Infinity
  return async (unmet) => {
    if (Date.now() - last < WAIT_DRIFT_INTERVAL_MS) return
    last = Date.now()
    const own = await stepDrift(ctx.client, {...step, verify: []}, ctx.state.plan.metadata.name)
    const found = [...(await appliedStepsDrift(ctx, step)), ...(own.length > 0 ? [{step, drift: own}] : [])]
    if (found.length === 0) return
    const {state} = ctx
    throw new StalePlanError(
      `step ${step.id} cannot pass its verification (it is waiting: ${unmet.detail}), and the cluster no longer shows what was applied:\n${found
        .flatMap(({step: s, drift}) => drift.map((d) => `  - step ${s.id}: ${d}`))
        .join('\n')}`,
      own.length > 0 && found.length === 1
        ? `Put back what the step wrote with \`mesh-migrate apply ${state.file} --retry\` (re-runs it: it writes only what is missing), or undo the applied steps with \`mesh-migrate rollback ${state.file} --confirm ${state.namespace}\`.`
        : driftSuggestion(state, found[0]!.step),
    )
  }
}

/** What to do about drift in an applied step: put it back (re-apply the step with --repair), or roll back. */
function driftSuggestion(state: PlanState, step: PlanStep): string {
  return `Put back what the step did with \`mesh-migrate apply ${state.file} --repair ${step.id}\` (re-runs it: it writes only what is missing) and re-run the apply, or undo the applied steps with \`mesh-migrate rollback ${state.file} --confirm ${state.namespace}\`. \`mesh-migrate status ${state.file}\` shows the drift.`
}

/**
 * What to do about a stale plan, as commands that work in its state: a plan that has not written yet can
 * be re-planned; one in progress is rolled back first (or replaced with --force, losing its record).
 */
export function staleSuggestion(state: PlanState): string {
  const started = state.plan.spec.steps.some((s) => mayHaveWritten(state.phase(s)))
  const ns = state.namespace
  const replan = (flags = '') => `\`${replanCommand(ns, state.file, flags)}\``
  if (!started)
    return `Re-run ${replan()} against the current cluster and review the new plan (or restore what changed and re-run the apply).`
  // --keep-progress is offered only where it is not refused up front (e.g. after restart-workloads it is).
  const keep =
    keepProgressRefusals(state.plan, state.file).length === 0
      ? ` or re-plan keeping the record of the applied steps the new plan leaves unchanged with ${replan('--keep-progress')} (it says which it kept; apply continues after them);`
      : ''
  return `Restore what changed and re-run the apply;${keep} or undo the applied steps with \`mesh-migrate rollback ${state.file} --confirm ${ns}\`, then ${replan()} (a fully rolled-back plan is replaced without --force). ${replan('--force')} replaces the plan in progress at once, but loses its record of what was applied, so that rollback can no longer undo it.`
}

/**
 * A server dry run of one step: every write sent with dryRun=All, and laid over `ctx.projection` so the
 * next steps' preconditions see it. A read-only step sends nothing, so nothing is "accepted" for it.
 */
async function dryRunStep(
  ctx: ExecutionContext,
  step: PlanStep,
  check: {alreadyDone: boolean; notChecked: string[]},
): Promise<{skippedWrites: boolean; details: string[]}> {
  const details = check.notChecked.map((n) => `not checked in a dry run: ${n}`)
  if (step.operations.length === 0) {
    details.push(
      `read-only step: nothing sent to the server${step.verify.length > 0 ? `; its checks (${step.verify.map((v) => v.check).join(', ')}) run on a real apply` : ''}`,
    )
    return {skippedWrites: true, details}
  }
  for (const op of step.operations)
    await performOperation(ctx.client, op, {
      planName: ctx.state.plan.metadata.name,
      dryRun: true,
      restartStamp: new Date().toISOString(),
    })
  ctx.projection?.addStep(step)
  details.push(
    `the server accepted all ${step.operations.length} write(s) with dryRun=All; nothing was persisted or recorded`,
  )
  return {skippedWrites: check.alreadyDone, details}
}

/**
 * Wait for one verification within the step's timeout. A read refused with 403 fails the step at once, naming the
 * verb and resource: waiting cannot grant a permission (passing faults are ridden out inside waitUntil).
 */
async function waitForCheck(
  ctx: ExecutionContext,
  step: PlanStep,
  v: Verification,
  verify: VerifyContext,
  opts: {rollback?: boolean; onUnmet?: (unmet: CheckResult) => Promise<void>} = {},
): Promise<CheckResult> {
  const {onUnmet, ...failure} = opts
  const check = async () => {
    const checked = await runCheck(v, verify)
    // Issue 19 §1: drift that keeps the check from ever passing ends the wait (driftDuringWait).
    if (!checked.ok) await onUnmet?.(checked)
    return checked
  }
  try {
    return await waitUntil(check, {
      timeoutMs: ctx.timeoutMs,
      signal: ctx.signal,
      onProgress: (d) => ctx.onProgress?.(`waiting: ${d}`),
    })
  } catch (error) {
    if (!(error instanceof KubeApiError && error.status === 403)) throw error
    const detail = `${forbiddenSummary(error)}, so ${v.check} cannot be checked (${error.message})`
    throw new StepFailedError(step, detail, ctx.state.file, {
      ...failure,
      ...(error.suggestion ? {advice: error.suggestion} : {}),
    })
  }
}

async function verifyStep(ctx: ExecutionContext, step: PlanStep): Promise<string[]> {
  const details: string[] = []
  const refuseDrift = driftDuringWait(ctx, step)
  for (const v of step.verify) {
    const result = await waitForCheck(
      ctx,
      step,
      v,
      {
        client: ctx.client,
        namespace: ctx.state.namespace,
        ...(ctx.preflight ? {preflight: ctx.preflight} : {}),
      },
      {onUnmet: refuseDrift},
    )
    if (!result.ok)
      throw new StepFailedError(
        step,
        `verification ${v.check} did not pass within ${Math.round(ctx.timeoutMs / 1000)}s: ${result.detail}`,
        ctx.state.file,
      )
    details.push(`${v.check}: ${result.detail}`)
  }
  return details
}

/** Apply one step: preconditions, writes, verification, record. Throws on stale/failed/interrupted. */
export async function applyStep(
  ctx: ExecutionContext,
  step: PlanStep,
): Promise<{skippedWrites: boolean; details: string[]}> {
  const {state} = ctx
  // Refresh first: drift in an applied step is the cause to name, before this step's own preconditions. Only the
  // steps before this one: `apply --repair STEP` re-runs an applied step whose own effects drifted.
  if (!ctx.dryRun) await checkAppliedSteps(ctx, step)
  const check = await checkStep(ctx, step)
  if (check.stale.length > 0) {
    throw new StalePlanError(
      `the cluster changed since the plan was made; step ${step.id} would act on a different state:\n${check.stale.map((s) => `  - ${s}`).join('\n')}`,
      staleSuggestion(state),
    )
  }
  if (ctx.dryRun) return dryRunStep(ctx, step, check)
  if (step.operations.length > 0) {
    await checkLaterSteps(ctx, step)
    // Issue 20 §5: a policy derived from an original the plan keeps is judged against the live original.
    await checkCopiesOfKeptOriginals(ctx.client, state.plan, step, state.file)
    // Right before the plan's first write: it becomes the namespace's owner (no write when it already is).
    await claimNamespace(ctx.client, state, ctx.who, ctx.takeOver)
  }
  ctx.lock?.assertHeld()
  const previous = state.status(step.id)
  const observed: Record<string, unknown> = {...(previous?.observed ?? {})}
  // One restart timestamp per step, kept across retries: re-running the restart is then a no-op.
  const restartStamp = (observed.restartedAt as string | undefined) ?? new Date().toISOString()
  if (step.operations.some((op) => op.op === 'restart')) observed.restartedAt = restartStamp
  await state.record(step.id, {phase: 'Running', by: ctx.who, observed, attempts: (previous?.attempts ?? 0) + 1})
  try {
    const before: Record<string, unknown> = (observed.before as Record<string, unknown>) ?? {}
    // Per-operation progress (issue 19 §6): an interrupted step shows which of its writes happened (which rollouts).
    const done = new Set(Array.isArray(observed.done) ? (observed.done as string[]) : [])
    for (const op of step.operations) {
      if (ctx.signal.aborted) throw new InterruptedError()
      ctx.lock?.assertHeld()
      const key = refKey(operationRef(op))
      if (await effectPresent(ctx.client, op, state.plan.metadata.name, restartStamp)) {
        done.add(doneEntry(op))
        observed.done = [...done]
        continue
      }
      const result = await performOperation(ctx.client, op, {
        planName: state.plan.metadata.name,
        dryRun: false,
        restartStamp,
      })
      done.add(doneEntry(op))
      observed.done = [...done]
      // Keep the first observation: a retry must not overwrite what was there before the first write.
      // A step may write an object's labels and its annotations (two operations): both observations are kept.
      if (isRecord(result.before)) before[key] = {...result.before, ...(isRecord(before[key]) ? before[key] : {})}
      else if (result.before !== undefined && before[key] === undefined) before[key] = result.before
      observed.before = before
      await state.record(step.id, {phase: 'Running', by: ctx.who, observed})
    }
    if (ctx.signal.aborted) throw new InterruptedError()
    const details = await verifyStep(ctx, step)
    await state.record(step.id, {phase: 'Applied', by: ctx.who, observed, message: details.join('; ')})
    return {skippedWrites: check.alreadyDone, details}
  } catch (error) {
    if (error instanceof InterruptedError || ctx.signal.aborted) {
      await state.record(step.id, {
        phase: 'Interrupted',
        by: ctx.who,
        observed,
        message: 'interrupted by the user; re-run the same apply to finish it, or rollback',
      })
      throw new InterruptedError()
    }
    const message = error instanceof Error ? error.message.split('\n')[0]! : String(error)
    await state.record(step.id, {phase: 'Failed', by: ctx.who, observed, message})
    // An API error's advice ("grant patch on namespaces", "re-run the command") is not enough once the step is
    // recorded Failed: plain apply refuses until it is retried.
    if (error instanceof KubeApiError || error instanceof KubeConnectionError) {
      throw new UserError(error.message, {
        exitCode: error.exitCode,
        suggestion:
          `${error.suggestion ?? ''} Then \`${sameCommand('apply', `mesh-migrate apply ${state.file}`, {add: ['--retry']})}\` re-runs the step, or \`mesh-migrate rollback ${state.file}\` undoes it.`.trim(),
        cause: error,
      })
    }
    throw error
  }
}

// ---------------------------------------------------------------------------------------------
// Rollback

function previousLabels(
  ctx: ExecutionContext,
  step: PlanStep,
  op: Extract<Operation, {op: 'label' | 'template-labels'}>,
): Record<string, string | null> {
  const before = (
    ctx.state.status(step.id)?.observed?.before as Record<string, {labels?: Record<string, string | null>}> | undefined
  )?.[refKey(op.ref)]
  return before?.labels ?? {}
}

/** What the step recorded of an object before its first write (observed.before), by refKey. */
function recordedBefore(
  ctx: ExecutionContext,
  step: PlanStep,
  ref: ObjectRef,
):
  {existed?: boolean; labels?: Record<string, string | null>; annotations?: Record<string, string | null>} | undefined {
  return (
    ctx.state.status(step.id)?.observed?.before as
      | Record<
          string,
          {existed?: boolean; labels?: Record<string, string | null>; annotations?: Record<string, string | null>}
        >
      | undefined
  )?.[refKey(ref)]
}

const labelValue = (v: string | null | undefined) => (v === null || v === undefined ? 'absent' : `"${v}"`)

/**
 * Of the label values an undo would restore, those it may write: a key whose live value is no longer
 * what the step wrote was changed by someone since — it is left as it is, with a warning. Keys already
 * at the value to restore need no write (a re-run rollback).
 */
function restorableLabels(
  what: string,
  live: Record<string, string>,
  restore: Record<string, string | null>,
  wrote: Record<string, string | null> | undefined,
  warn: (message: string) => void,
): {labels: Record<string, string | null>; left: string[]} {
  const labels: Record<string, string | null> = {}
  const left: string[] = []
  for (const [key, target] of Object.entries(restore)) {
    const now = live[key] ?? null
    if (now === target) continue
    if (wrote && key in wrote && now !== wrote[key]) {
      warn(
        `${what}: label ${key} is ${labelValue(now)}, but the plan wrote ${labelValue(wrote[key])}; someone changed it since, so it is left as it is (rollback would have restored ${labelValue(target)})`,
      )
      left.push(key)
      continue
    }
    labels[key] = target
  }
  return {labels, left}
}

/** What the undo checks need of an execution: the client, the namespace, the plan and where to warn. */
function undoCheckContext(ctx: ExecutionContext, warn: (message: string) => void): UndoCheckContext {
  const {state} = ctx
  return {client: ctx.client, namespace: state.namespace, file: state.file, steps: state.plan.spec.steps, warn}
}

/**
 * Before a rollback writes anything: every undo precondition of the steps it undoes (undo-guards.ts), each allowing
 * for the sidecars the undos before it in this run bring back (their pods-with-sidecar verifications).
 */
export async function checkRollback(
  ctx: ExecutionContext,
  steps: PlanStep[],
  warn: (message: string) => void,
): Promise<void> {
  const checks = undoCheckContext(ctx, warn)
  const returning: ObjectRef[] = []
  for (const step of steps) {
    const guards = undoGuardsOf(ctx.state.plan, step)
    await checkUndoPreconditions(guards.preconditions, checks, returning)
    returning.push(...guards.verify.flatMap((v) => (v.check === 'pods-with-sidecar' ? v.refs : [])))
  }
}

/** Undo one step. Only objects this plan created (and still annotated as such) are deleted. */
export async function undoStep(
  ctx: ExecutionContext,
  step: PlanStep,
  warn: (message: string) => void,
): Promise<string[]> {
  const {state} = ctx
  ctx.lock?.assertHeld()
  // A dry run records nothing: the plan file stays byte for byte as it was.
  if (ctx.dryRun) return undoOperations(ctx, step, warn)
  await state.record(step.id, {phase: state.phase(step), by: ctx.who, message: ROLLING_BACK})
  try {
    return await undoOperations(ctx, step, warn)
  } catch (error) {
    // The step must not keep looking Applied: record how its undo ended. Both phases may have written, so
    // the next rollback picks the step up again (every undo operation is idempotent).
    if (error instanceof InterruptedError || ctx.signal.aborted) {
      await state.record(step.id, {
        phase: 'Interrupted',
        by: ctx.who,
        message: `the rollback of this step was interrupted; \`mesh-migrate rollback ${state.file}\` finishes it`,
      })
      throw new InterruptedError()
    }
    const reason = error instanceof Error ? error.message.split('\n')[0]! : String(error)
    await state.record(step.id, {
      phase: 'Failed',
      by: ctx.who,
      message: `rollback failed: ${reason}; fix the cause and re-run \`mesh-migrate rollback ${state.file}\``,
    })
    throw error
  }
}

/** What every undo operation gets: the execution, the step undone, where to warn and what it did. */
interface UndoCall {
  ctx: ExecutionContext
  step: PlanStep
  warn: (message: string) => void
  details: string[]
}

/** Undo one step: each of its undo operations in order, then wait for what it restarted and record it. */
async function undoOperations(
  ctx: ExecutionContext,
  step: PlanStep,
  warn: (message: string) => void,
): Promise<string[]> {
  const details: string[] = []
  const guards = undoGuardsOf(ctx.state.plan, step)
  // Again right before this undo writes: the undos before it restarted pods, others may have appeared. A dry run
  // restarts nothing, so only the check before the whole rollback (with what the undos before bring back) applies.
  if (!ctx.dryRun) await checkUndoPreconditions(guards.preconditions, undoCheckContext(ctx, warn))
  for (const op of step.undo.operations) {
    if (ctx.signal.aborted) throw new InterruptedError()
    const call: UndoCall = {ctx, step, warn, details}
    if (op.op === 'delete') await undoDelete(op, call)
    else if (op.op === 'apply') await undoApply(op, call)
    else if (op.op === 'label') await undoLabel(op, call)
    else if (op.op === 'annotate') await undoAnnotate(op, call)
    else if (op.op === 'restart') await undoRestart(op, call)
    else if (op.op === 'template-labels') await undoTemplateLabels(op, call)
  }
  if (!ctx.dryRun) {
    await verifyUndo(ctx, step, guards.verify, details)
    await ctx.state.record(step.id, {
      phase: 'RolledBack',
      by: ctx.who,
      message: details.join('; ') || 'nothing to undo',
    })
  }
  return details
}

/** Undo of a create: delete the object, unless it existed before the step or is no longer the plan's. */
async function undoDelete(op: Extract<Operation, {op: 'delete'}>, {ctx, step, warn, details}: UndoCall): Promise<void> {
  const {client, state} = ctx
  const planName = state.plan.metadata.name
  // An object the step applied over one that already existed (observed.before) is not the step's to delete.
  const createdHere = step.operations.some((o) => o.op === 'apply' && refKey(operationRef(o)) === refKey(op.ref))
  if (createdHere && recordedBefore(ctx, step, op.ref)?.existed === true) {
    warn(`${formatRef(op.ref)} existed before step ${step.id} wrote it: left in place`)
    details.push(`left ${formatRef(op.ref)} (it existed before the step)`)
    return
  }
  const live = await client.get(op.ref)
  if (!live) return
  if (!isOurs(live, planName)) {
    warn(`${formatRef(op.ref)} is not marked as created by this plan any more: left in place`)
    return
  }
  await client.delete(op.ref, {
    dryRun: ctx.dryRun,
    ...(live.metadata.uid ? {preconditions: {uid: live.metadata.uid}} : {}),
  })
  details.push(`deleted ${formatRef(op.ref)}`)
}

/** Undo of a delete: re-create the object the step removed (its copy is in the plan). */
async function undoApply(op: Extract<Operation, {op: 'apply'}>, {ctx, details}: UndoCall): Promise<void> {
  const {client} = ctx
  const ref = operationRef(op)
  if (await client.get(ref)) {
    details.push(`${formatRef(ref)} already exists`)
    return
  }
  await client.apply(op.object, {dryRun: ctx.dryRun, force: true})
  details.push(`re-created ${formatRef(ref)}`)
}

/** Restore the labels the step changed, only where they are still as the step left them. */
async function undoLabel(op: Extract<Operation, {op: 'label'}>, {ctx, step, warn, details}: UndoCall): Promise<void> {
  const {client} = ctx
  // Restore exactly what the step saw before it wrote; the plan's undo is the fallback.
  const forward = step.operations.find(
    (o): o is Extract<Operation, {op: 'label'}> => o.op === 'label' && refKey(o.ref) === refKey(op.ref),
  )
  const seen = forward ? previousLabels(ctx, step, forward) : {}
  const live = await client.get(op.ref)
  if (!live) throw new StalePlanError(`${formatRef(op.ref)} no longer exists`)
  // Only keys still as the step left them are restored.
  const {labels, left} = restorableLabels(
    formatRef(op.ref),
    live.metadata.labels ?? {},
    {...op.labels, ...seen},
    forward?.labels,
    warn,
  )
  if (Object.keys(labels).length === 0) {
    details.push(
      left.length > 0
        ? `${formatRef(op.ref)} labels ${left.join(', ')} left as changed since`
        : `${formatRef(op.ref)} labels already restored`,
    )
    return
  }
  const seenNow = Object.fromEntries(Object.keys(labels).map((k) => [k, live.metadata.labels?.[k] ?? null]))
  await guardedMergePatch(
    client,
    op.ref,
    {metadata: {labels, resourceVersion: live.metadata.resourceVersion}},
    (now) => labelsMatch(now?.metadata.labels ?? {}, labels),
    {dryRun: ctx.dryRun, unchanged: labelsStill(seenNow, (o) => o.metadata.labels ?? {})},
  )
  details.push(
    [
      ...Object.entries(labels).map(([k, v]) => (v === null ? `removed ${k}` : `restored ${k}=${v}`)),
      ...left.map((k) => `left ${k} (changed since)`),
    ].join(', '),
  )
}

/** Restore the annotations the step changed (what it saw before its write), only where still as it left them. */
async function undoAnnotate(
  op: Extract<Operation, {op: 'annotate'}>,
  {ctx, step, warn, details}: UndoCall,
): Promise<void> {
  const {client} = ctx
  const forward = step.operations.find(
    (o): o is Extract<Operation, {op: 'annotate'}> => o.op === 'annotate' && refKey(o.ref) === refKey(op.ref),
  )
  const seen = forward ? (recordedBefore(ctx, step, op.ref)?.annotations ?? {}) : {}
  const live = await client.get(op.ref)
  if (!live) throw new StalePlanError(`${formatRef(op.ref)} no longer exists`)
  const {labels: annotations, left} = restorableLabels(
    `${formatRef(op.ref)} (annotations)`,
    live.metadata.annotations ?? {},
    {...op.annotations, ...seen},
    forward?.annotations,
    warn,
  )
  if (Object.keys(annotations).length === 0) {
    details.push(
      left.length > 0
        ? `${formatRef(op.ref)} annotations ${left.join(', ')} left as changed since`
        : `${formatRef(op.ref)} annotations already restored`,
    )
    return
  }
  const seenNow = Object.fromEntries(Object.keys(annotations).map((k) => [k, live.metadata.annotations?.[k] ?? null]))
  await guardedMergePatch(
    client,
    op.ref,
    {metadata: {annotations, resourceVersion: live.metadata.resourceVersion}},
    (now) => labelsMatch(now?.metadata.annotations ?? {}, annotations),
    {dryRun: ctx.dryRun, unchanged: labelsStill(seenNow, (o) => o.metadata.annotations ?? {})},
  )
  details.push(
    [
      ...Object.entries(annotations).map(([k, v]) =>
        v === null ? `removed annotation ${k}` : `restored annotation ${k}=${v}`,
      ),
      ...left.map((k) => `left annotation ${k} (changed since)`),
    ].join(', '),
  )
}

/** Restart a workload again (its pods come back with what the restored labels inject). */
async function undoRestart(op: Extract<Operation, {op: 'restart'}>, {ctx, details}: UndoCall): Promise<void> {
  const {client, state} = ctx
  const planName = state.plan.metadata.name
  const stamp = `${new Date().toISOString()}`
  await performOperation(client, op, {planName, dryRun: ctx.dryRun, restartStamp: stamp})
  details.push(`restarted ${formatRef(op.ref)}`)
}

/** Restore a controller's pod-template labels the step changed. */
async function undoTemplateLabels(
  op: Extract<Operation, {op: 'template-labels'}>,
  {ctx, step, warn, details}: UndoCall,
): Promise<void> {
  const {client} = ctx
  const forward = step.operations.find(
    (o): o is Extract<Operation, {op: 'template-labels'}> =>
      o.op === 'template-labels' && refKey(o.ref) === refKey(op.ref),
  )
  const live = await client.get(op.ref)
  if (!live) {
    warn(`${formatRef(op.ref)} no longer exists: its pod template cannot be restored`)
    return
  }
  const current = podTemplateOf(live)?.metadata?.labels ?? {}
  const {labels} = restorableLabels(
    `the pod template of ${formatRef(op.ref)}`,
    current,
    {...op.labels, ...(forward ? previousLabels(ctx, step, forward) : {})},
    forward?.labels,
    warn,
  )
  if (Object.keys(labels).length === 0) return
  await guardedMergePatch(
    client,
    op.ref,
    {...templateLabelsPatch(live.kind, labels), metadata: {resourceVersion: live.metadata.resourceVersion}},
    (now) => labelsMatch(podTemplateOf(now)?.metadata?.labels ?? {}, labels),
    {dryRun: ctx.dryRun},
  )
  details.push(`restored the pod-template labels of ${formatRef(op.ref)}`)
}

/** After an undo's writes: wait for what it verifies (its rollouts, the sidecars its restart brings back). */
async function verifyUndo(
  ctx: ExecutionContext,
  step: PlanStep,
  verify: Verification[],
  details: string[],
): Promise<void> {
  const {client, state} = ctx
  for (const v of verify) {
    const result = await waitForCheck(ctx, step, v, {client, namespace: state.namespace}, {rollback: true})
    if (!result.ok)
      throw new StepFailedError(step, `${v.check} did not hold: ${result.detail}`, state.file, {rollback: true})
    if (v.check !== 'rollouts-complete') details.push(result.detail)
  }
}

export {rollbackSequence}
