// `rollback --fleet` (issue 22 §3): the waves of plans/fleet.yaml in reverse order, the namespaces of a wave at most
// `parallel` at a time, each plan's undo exactly as `rollback NS` (src/cli/rollback-action.ts). A wave starts only
// when nothing of the later one is left applied: a dependant goes back to sidecars before what it depends on.
import {sameCommand} from '../invocation.js'
import type {Io} from '../ui/io.js'
import type {FleetApplyResult, FleetNamespaceRun} from '../cli/contract.js'
import {lockOptions, PlanSession} from '../cli/plan-session.js'
import {rollBackPlan, selectFromRecord} from './rollback.js'
import {UsageError} from '../errors.js'
import {mayHaveWritten, phaseOf} from '../plan/rollback.js'
import type {PlanStep} from '../planner/plan-types.js'
import type {ProgressTask} from '../ui/progress.js'
import {type LoadedFleet, membersOf, readFleetMember} from '../executor/fleet-order.js'
import {loadFleetFile} from './fleet-apply.js'
import {
  failed,
  type FleetRunFlags,
  type FleetRunOptions,
  fleetRunOptions,
  remainingSteps,
  type RunControl,
  runFleet,
  stepLabel,
  warningsTo,
} from './fleet-run.js'

export interface FleetRollbackOptions extends FleetRunOptions {
  loaded: LoadedFleet
  waves: number[]
}

export interface FleetRollbackFlags extends FleetRunFlags {
  confirm?: string
  wave?: number
}

/** Flags → options: every wave from the last to the first (or --wave N), confirmed by `--confirm fleet`. */
export async function fleetRollbackOptions(
  file: string | undefined,
  flags: FleetRollbackFlags,
  note: (message: string) => void,
  io: Io,
): Promise<FleetRollbackOptions> {
  const loaded = await loadFleetFile(file)
  const all = loaded.fleet.spec.waves.map((w) => w.wave)
  if (flags.wave !== undefined && !all.includes(flags.wave))
    throw new UsageError(`--wave ${flags.wave}: ${loaded.file} has waves 1 to ${Math.max(0, ...all)}`)
  // Destructive for every namespace of the fleet: typed out, as rollback NS has the namespace typed.
  if (flags.confirm !== 'fleet')
    throw new UsageError(
      flags.confirm === undefined
        ? 'rollback --fleet rolls back every namespace of the fleet and needs confirmation'
        : `--confirm ${flags.confirm}: rollback --fleet is confirmed with the word fleet`,
      'Pass --confirm fleet.',
    )
  return {
    ...fleetRunOptions(flags, io, note),
    loaded,
    waves: flags.wave !== undefined ? [flags.wave] : [...all].sort((a, b) => b - a),
  }
}

export function rollbackFleet(o: FleetRollbackOptions): Promise<FleetApplyResult> {
  return runFleet({
    operation: 'rollback',
    dryRun: o.dryRun,
    loaded: o.loaded,
    waves: o.waves,
    parallel: o.parallel,
    io: o.io,
    note: o.note,
    passes: (wave) => [{selection: {kind: 'all'}, namespaces: membersOf(o.loaded, wave)}],
    runOne: (run, _pass, update, control) => rollBackNamespace(o, run, update, control),
    // A dry run leaves every plan as it was: the waves are not gated on it.
    gate: async (run) => {
      if (o.dryRun) return undefined
      const {plan, problem} = await readFleetMember(o.loaded, run.namespace)
      if (!plan) return problem
      const left = plan.spec.steps.filter((s) => mayHaveWritten(phaseOf(plan, s))).map((s) => s.id)
      return left.length === 0 ? undefined : `still has steps that may have written: ${left.join(', ')}`
    },
    rerun: sameCommand(
      'rollback',
      `mesh-migrate rollback --fleet ${o.loaded.file} --confirm fleet${o.dryRun ? ' --dry-run=server' : ''}`,
    ),
  })
}

/** One namespace: `rollback NS --confirm NS`; its outcome is recorded in `run`, never thrown. */
async function rollBackNamespace(
  o: FleetRollbackOptions,
  run: FleetNamespaceRun,
  update: (message: string) => void,
  control: RunControl,
): Promise<string> {
  run.startedAt ??= new Date().toISOString()
  let session: PlanSession | undefined
  let current: string | undefined
  try {
    session = await PlanSession.load(run.plan, o.connection, () => undefined)
    const selection = await selectFromRecord(
      {
        session,
        lastOnly: false,
        lock: lockOptions('rollback', run.plan, o.write),
        dryRun: o.dryRun,
        allowOtherCluster: o.allowOtherCluster,
      },
      () => undefined,
    )
    if (selection.steps.length === 0) {
      run.state = 'up-to-date'
      run.remaining = remainingSteps(session)
      return 'nothing to roll back'
    }
    const s = session
    let stopped = false
    const runSteps = async (tasks: ProgressTask[], steps: PlanStep[]) => {
      for (const [i, task] of tasks.entries()) {
        // Another namespace failed (or Ctrl+C): this one stops after the step it was running.
        if (control.stop) {
          stopped = true
          break
        }
        const id = steps[i]!.id
        const label = `undo ${stepLabel(s, id)}`
        current = id
        update(`${label}: running`)
        const summary = await task.run((m) => update(`${label}: ${m}`))
        run.steps.push(id)
        update(`${label}: ${summary ?? 'done'}`)
      }
    }
    const lock = lockOptions('rollback', run.plan, o.write)
    const undone = await rollBackPlan(
      {session, lastOnly: false, selection, lock, dryRun: o.dryRun, allowOtherCluster: o.allowOtherCluster},
      {io: o.io, note: warningsTo(control, run.namespace), runSteps, signal: control.signal},
    )
    run.remaining = remainingSteps(session)
    run.finishedAt = new Date().toISOString()
    run.state = undone === undefined ? 'interrupted' : stopped ? 'stopped' : 'rolled-back'
    if (undone === undefined) return `interrupted at ${current ?? 'the start'}`
    return `${stopped ? 'stopped after rolling back' : 'rolled back'} ${undone.length} step(s)`
  } catch (error) {
    return failed(run, session, current, error, control)
  }
}
