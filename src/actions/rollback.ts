// `rollback NS` as an action (issue 22): hold the namespace, check every undo guard before the first write, undo the
// steps in the safe order, give the namespace up when nothing is left — with its output streams (and, for the fleet,
// the Ctrl+C signal) as parameters. The rollback command runs it for one plan; `rollback --fleet` runs several at once.
import type {RollbackResult} from '../cli/contract.js'
import {type LockOptions, type PlanSession} from '../cli/plan-session.js'
import {checkRollback, undoStep} from '../executor/engine.js'
import {releaseIfRolledBack} from '../executor/ownership.js'
import {rollbackSequence} from '../plan/rollback.js'
import type {PlanStep} from '../planner/plan-types.js'
import {markIfDryRun as mark} from '../ui/dry-run.js'
import type {Io} from '../ui/io.js'
import {type ProgressTask, runTasks} from '../ui/progress.js'

export interface RollbackOptions {
  session: PlanSession
  /** --step: only the last applied step (with its unit). */
  lastOnly: boolean
  selection: ReturnType<typeof rollbackSequence>
  lock: LockOptions
  dryRun: boolean
  allowOtherCluster: boolean
}

export interface RollbackIO {
  /** The process: terminal facts, Ctrl+C (unless `signal`), the exit code. */
  io: Io
  note: (message: string) => void
  /** Runs the undo of each step (tasks[i] undoes steps[i]), in order, with a progress display. */
  runSteps: (tasks: ProgressTask[], steps: PlanStep[]) => Promise<void>
  /** The fleet's one Ctrl+C (absent: the session installs its own handler). */
  signal?: AbortSignal
}

/** One plan's rollback at a terminal: notes where the command says, the undos with a progress display on stderr. */
export function terminalRollbackIO(io: Io, note: (message: string) => void): RollbackIO {
  return {io, note, runSteps: (tasks) => runTasks(io, tasks)}
}

/**
 * What to undo is what the cluster's record says this plan applied (not what this copy of the plan file says), with
 * the "before" values the record holds: any copy of the plan rolls back exactly (issue 19, issue 20 §3).
 */
export async function selectFromRecord(
  o: Omit<RollbackOptions, 'selection'>,
  note: (message: string) => void,
): Promise<ReturnType<typeof rollbackSequence>> {
  const client = await o.session.connectToPlanCluster(o.allowOtherCluster, (m) => note(mark(o.dryRun, m)))
  await o.session.adoptRecord(client, {readOnly: true})
  return rollbackSequence(o.session.state.plan, {lastOnly: o.lastOnly})
}

/** Hold the namespace and undo the steps; undefined when interrupted (exit 130). */
export async function rollBackPlan(
  o: RollbackOptions,
  io: RollbackIO,
): Promise<RollbackResult['rolledBack'] | undefined> {
  const {session, dryRun} = o
  const say = (m: string) => io.note(mark(dryRun, m))
  const client = await session.connectToPlanCluster(o.allowOtherCluster, say)
  const rolledBack: RollbackResult['rolledBack'] = []
  const interrupted = `Interrupted. Re-run \`mesh-migrate rollback ${session.file}\` to finish the rollback.`
  const body = async (ctx: Parameters<Parameters<PlanSession['holding']>[3]>[0]) => {
    const warn = (m: string) => say(`Warning: ${m}`)
    // Under the lock the record was read again: undo what it says now (the same steps, unless someone acted since).
    const steps = rollbackSequence(ctx.state.plan, {lastOnly: o.lastOnly}).steps
    await checkRollback(ctx, steps, warn)
    await io.runSteps(
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
      steps,
    )
    if (!dryRun && (await releaseIfRolledBack(client, ctx.state, o.lock.takeOver)))
      io.note(`Every step of ${session.file} is rolled back: namespace ${session.namespace} is free for another plan.`)
  }
  const finished = await session.holding(client, o.lock, interrupted, body, io)
  return finished ? rolledBack : undefined
}
