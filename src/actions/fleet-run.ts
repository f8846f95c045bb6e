// What apply --fleet and rollback --fleet share (issue 22): the waves in a given order, each wave in passes, the
// namespaces of a pass at most `parallel` at a time with one progress line each, one Ctrl+C handler for all of them,
// the first failure stopping new starts, a gate after each wave, and the fleet's result document.
import {setMaxListeners} from 'node:events'

import {type FleetApplyResult, type FleetNamespaceRun, typed} from '../cli/contract.js'
import {ExitCode} from '../exit-codes.js'
import {interruptHandler} from '../cli/plan-commands.js'
import type {ClusterFlags} from '../cli/plan-commands.js'
import {ClusterConnection, type PlanSession, type WriteFlags} from '../cli/plan-session.js'
import {UserError} from '../errors.js'
import {blockingStep, type StepSelection} from '../executor/engine.js'
import {markIfDryRun as mark} from '../ui/dry-run.js'
import type {Io} from '../ui/io.js'
import {runTasks} from '../ui/progress.js'
import {fleetPlanPath, hasPlan, type LoadedFleet, membersOf, readFleetMember} from '../executor/fleet-order.js'
import {phaseOf} from '../plan/rollback.js'

/** How the namespaces of one run share its fate: the first failure or Ctrl+C stops new starts. */
export interface RunControl {
  stop: boolean
  signal: AbortSignal
  failure?: FleetNamespaceRun
  interrupted: boolean
  /** Warnings of the namespaces, printed once their pass's progress display is done. */
  warnings: string[]
}

export interface WavePass {
  selection: StepSelection
  namespaces: string[]
}

export interface FleetRunSpec {
  operation: FleetApplyResult['operation']
  /** --dry-run=server: every write sent with dryRun=All, nothing persisted or recorded. */
  dryRun: boolean
  loaded: LoadedFleet
  /** The waves to run, in the order to run them. */
  waves: number[]
  parallel: number
  io: Io
  note: (message: string) => void
  passes: (wave: number) => WavePass[]
  /** One namespace's pass; records its outcome in `run` and returns the end of its progress line. Never throws. */
  runOne: (run: FleetNamespaceRun, pass: WavePass, update: (m: string) => void, control: RunControl) => Promise<string>
  /** After a wave: what keeps the next from starting for this namespace (its plan as recorded), if anything. */
  gate: (run: FleetNamespaceRun) => Promise<string | undefined>
  /** The command that runs the fleet again. */
  rerun: string
}

/** The flags `apply --fleet` and `rollback --fleet` share. */
export interface FleetRunFlags extends ClusterFlags {
  parallel: number
  'allow-other-cluster': boolean
  'dry-run': 'none' | 'server'
  timeout: string
  'lock-timeout': string
}

/** The options `apply --fleet` and `rollback --fleet` take alike from those flags. */
export interface FleetRunOptions {
  parallel: number
  allowOtherCluster: boolean
  /** --dry-run=server: every write sent with dryRun=All, nothing persisted or recorded. */
  dryRun: boolean
  write: WriteFlags
  connection: ClusterConnection
  io: Io
  note: (message: string) => void
}

export function fleetRunOptions(flags: FleetRunFlags, io: Io, note: (message: string) => void): FleetRunOptions {
  return {
    parallel: flags.parallel,
    allowOtherCluster: flags['allow-other-cluster'],
    dryRun: flags['dry-run'] !== 'none',
    write: {
      'dry-run': flags['dry-run'],
      timeout: flags.timeout,
      'lock-timeout': flags['lock-timeout'],
      'take-over': false,
    },
    connection: ClusterConnection.fromFlags(flags, io),
    io,
    note,
  }
}

/** A namespace the fleet file lists with a plan (one with nothing to migrate has none). */
export async function runFleet(spec: FleetRunSpec): Promise<FleetApplyResult> {
  const interrupt = interruptHandler(spec.io, spec.note)
  // Every running namespace waits on this one signal (a few listeners each).
  setMaxListeners(Math.max(10, 4 * spec.parallel), interrupt.signal)
  const control: RunControl = {stop: false, signal: interrupt.signal, interrupted: false, warnings: []}
  interrupt.signal.addEventListener('abort', () => {
    control.stop = true
    control.interrupted = true
  })
  const runs = spec.waves.flatMap((wave) =>
    membersOf(spec.loaded, wave).map((ns): FleetNamespaceRun => ({
      namespace: ns,
      wave,
      plan: fleetPlanPath(spec.loaded, ns),
      state: hasPlan(spec.loaded, ns) ? 'not-started' : 'no-plan',
      steps: [],
      remaining: [],
    })),
  )
  try {
    for (const wave of spec.waves) {
      for (const pass of spec.passes(wave)) {
        if (control.stop) break
        const passRuns = pass.namespaces.map((ns) => runs.find((r) => r.namespace === ns)!)
        await runTasks(
          spec.io,
          passRuns.map((run) => ({
            title: `wave ${wave} ${run.namespace}`,
            run: (update) =>
              run.state === 'no-plan'
                ? Promise.resolve('nothing to migrate')
                : control.stop
                  ? Promise.resolve(
                      control.interrupted ? 'not started (interrupted)' : 'not started (an earlier failure)',
                    )
                  : // Each line names its namespace: in a log, the lines of the namespaces running at once interleave.
                    spec.runOne(
                      run,
                      pass,
                      (m) => update(mark(spec.dryRun, `wave ${wave} ${run.namespace}: ${m}`)),
                      control,
                    ),
            failed: () => run.state === 'failed',
          })),
          {concurrency: spec.parallel},
        )
        for (const w of control.warnings.splice(0)) spec.note(w)
      }
      if (!control.stop) await waveGate(spec, wave, runs, control)
      if (control.stop) break
    }
  } finally {
    interrupt.dispose()
  }
  await notStartedRemaining(spec.loaded, runs)
  return fleetResult(spec, runs, control)
}

/** A namespace the run did not start still has its steps left, as its plan file records them. */
async function notStartedRemaining(loaded: LoadedFleet, runs: FleetNamespaceRun[]): Promise<void> {
  for (const run of runs.filter((r) => r.state === 'not-started')) {
    const {plan} = await readFleetMember(loaded, run.namespace)
    if (plan) run.remaining = plan.spec.steps.filter((s) => phaseOf(plan, s) !== 'Applied').map((s) => s.id)
  }
}

/** After a wave: every plan of it is where the operation leaves it (read from its file), or the run stops there. */
async function waveGate(spec: FleetRunSpec, wave: number, runs: FleetNamespaceRun[], control: RunControl) {
  for (const run of runs.filter((r) => r.wave === wave && r.state !== 'no-plan')) {
    const problem = await spec.gate(run)
    if (problem === undefined) continue
    run.state = 'failed'
    run.error = {
      message: `wave ${wave} is not complete: ${run.plan} ${problem}`,
      exitCode: ExitCode.Failure,
      next: `mesh-migrate status ${run.plan}`,
    }
    control.stop = true
    control.failure ??= run
  }
}

/** Records a namespace's failure in `run` (the step it stopped at, the error's next command) and stops new starts. */
export function failed(
  run: FleetNamespaceRun,
  session: PlanSession | undefined,
  step: string | undefined,
  error: unknown,
  control: RunControl,
): string {
  const user = error instanceof UserError ? error : undefined
  const message = error instanceof Error ? error.message : String(error)
  const at = step ?? (session ? blockingStep(session.state)?.id : undefined)
  run.state = 'failed'
  run.finishedAt = new Date().toISOString()
  if (session) run.remaining = remainingSteps(session)
  run.error = {
    message,
    exitCode: user?.exitCode ?? ExitCode.Failure,
    ...(at ? {step: at} : {}),
    ...(user?.suggestion ? {next: user.suggestion} : {}),
  }
  control.stop = true
  control.failure ??= run
  return `failed${at ? ` at ${at}` : ''}: ${message.split('\n')[0]}`
}

export function remainingSteps(session: PlanSession): string[] {
  const state = session.state
  return state.plan.spec.steps.filter((s) => state.phase(s) !== 'Applied').map((s) => s.id)
}

/** The progress line of a namespace's step: which of how many, and how it is going. */
export function stepLabel(session: PlanSession, id: string): string {
  const steps = session.state.plan.spec.steps
  return `step ${steps.findIndex((s) => s.id === id) + 1}/${steps.length} ${id}`
}

/** Collects a namespace's warnings (its notes are progress, shown on its line; warnings are kept for after). */
export function warningsTo(control: RunControl, namespace: string): (message: string) => void {
  return (m) => {
    const line = m.trim()
    if (/^(\[[^\]]*\] )?Warning\b/.test(line)) control.warnings.push(`${namespace}: ${line}`)
  }
}

function fleetResult(spec: FleetRunSpec, runs: FleetNamespaceRun[], control: RunControl): FleetApplyResult {
  const file = spec.loaded.file
  const all = spec.loaded.fleet.spec.waves.map((w) => w.wave)
  // Apply goes up the waves, rollback down: the run is incomplete while a wave beyond the last it covered remains.
  const remaining =
    spec.operation === 'apply'
      ? all.filter((w) => w > Math.max(0, ...spec.waves))
      : all.filter((w) => w < Math.min(Infinity, ...spec.waves))
  const result: FleetApplyResult['result'] = control.interrupted
    ? 'interrupted'
    : control.failure
      ? 'failed'
      : remaining.length > 0 && spec.waves.length > 0
        ? 'incomplete'
        : 'complete'
  const failure = control.failure?.error
  const next =
    result === 'interrupted'
      ? `${spec.rerun} (resumes the interrupted steps)`
      : result === 'failed'
        ? failedNext(spec, failure)
        : result === 'incomplete'
          ? `${withoutWaveFlags(spec.rerun)} --wave ${spec.operation === 'apply' ? remaining[0] : remaining.at(-1)}`
          : undefined
  return typed('FleetApplyResult', {
    fleet: file,
    operation: spec.operation,
    dryRun: spec.dryRun,
    waves: spec.waves,
    parallel: spec.parallel,
    result,
    namespaces: runs,
    ...(next ? {next} : {}),
  })
}

/** After a failure: the namespace's own way out (unless it already is re-running the fleet), then the fleet again. */
function failedNext(spec: FleetRunSpec, failure: {next?: string; step?: string} | undefined): string {
  const again =
    spec.operation === 'apply' && failure?.step && !/(^| )--retry( |$)/.test(spec.rerun)
      ? `${spec.rerun} --retry`
      : spec.rerun
  if (!failure?.next || failure.next.includes(again)) return failure?.next ?? again
  return `${failure.next} Then ${again}`
}

/** The fleet command without the flags that choose waves, for "run the next wave". */
function withoutWaveFlags(command: string): string {
  return command.replace(/ --(all|wave(=| )\S+|to-wave(=| )\S+)(?= |$)/g, '')
}
