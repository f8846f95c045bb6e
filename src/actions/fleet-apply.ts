// `apply --fleet` (issue 22 §2): the waves of plans/fleet.yaml in order, the namespaces of a wave at most `parallel`
// at a time, each through the apply action (src/cli/apply-action.ts) exactly as `apply NS --all`: its own plan,
// lock and verification. In one process, on one connection, with one Ctrl+C handler for every running namespace.
// A wave starts only when every plan of the one before is Applied; a cycle's namespaces go up to bind-waypoint
// first, then to the end (the protocol of the fleet file's cycles). The first failure stops new starts.
import {sameCommand} from '../invocation.js'
import type {Io} from '../ui/io.js'
import path from 'node:path'

import {applyPlanSteps, type ApplyIO, type ApplyOptions, validateApply} from './apply.js'
import type {FleetApplyResult, FleetNamespaceRun} from '../cli/contract.js'
import {lockOptions, PlanSession} from '../cli/plan-session.js'
import {CancelledError, UsageError} from '../errors.js'
import type {StepSelection} from '../executor/engine.js'
import {PLANS_DIR, readTextFile} from '../executor/plan-store.js'
import {FLEET_FILE} from '../plan/fleet-file.js'
import {DRY_RUN_MARK} from '../ui/dry-run.js'
import {canPrompt, confirm, isCI} from '../ui/interactive.js'
import {
  fullyApplied,
  hasPlan,
  type LoadedFleet,
  membersOf,
  parseFleet,
  readFleetMember,
} from '../executor/fleet-order.js'
import {
  failed,
  type FleetRunFlags,
  type FleetRunOptions,
  fleetRunOptions,
  remainingSteps,
  type RunControl,
  runFleet,
  stepLabel,
  type WavePass,
  warningsTo,
} from './fleet-run.js'

export interface FleetApplyOptions extends FleetRunOptions {
  loaded: LoadedFleet
  /** The waves to run, in order. */
  waves: number[]
  retry: boolean
}

export interface FleetFlags extends FleetRunFlags {
  all: boolean
  yes: boolean
  retry: boolean
  wave?: number
  'to-wave'?: number
}

/** The fleet file (default plans/fleet.yaml) loaded and checked. */
export async function loadFleetFile(file: string | undefined): Promise<LoadedFleet> {
  const fleetFile = file ?? path.join(PLANS_DIR, FLEET_FILE)
  return parseFleet(fleetFile, await readTextFile(fleetFile, 'fleet file'))
}

/** The waves of the fleet not every plan of which is fully applied (nothing to migrate counts as done). */
async function unfinishedWaves(loaded: LoadedFleet): Promise<number[]> {
  const out: number[] = []
  for (const w of loaded.fleet.spec.waves) {
    for (const ns of w.namespaces) {
      if (!hasPlan(loaded, ns)) continue
      const member = await readFleetMember(loaded, ns)
      if (!member.plan || !fullyApplied(member.plan)) {
        out.push(w.wave)
        break
      }
    }
  }
  return out
}

/** Flags → options: the waves chosen (--wave, --to-wave, --all, or the next unfinished one), asked once (or --yes). */
export async function fleetApplyOptions(
  file: string | undefined,
  flags: FleetFlags,
  note: (message: string) => void,
  io: Io,
): Promise<FleetApplyOptions> {
  const loaded = await loadFleetFile(file)
  const all = loaded.fleet.spec.waves.map((w) => w.wave)
  const last = Math.max(0, ...all)
  for (const flag of ['wave', 'to-wave'] as const) {
    const n = flags[flag]
    if (n !== undefined && !all.includes(n))
      throw new UsageError(`--${flag} ${n}: ${loaded.file} has waves 1 to ${last}`, `Pass a wave from 1 to ${last}.`)
  }
  const unfinished = await unfinishedWaves(loaded)
  const waves =
    flags.wave !== undefined
      ? [flags.wave]
      : flags['to-wave'] !== undefined
        ? all.filter((w) => w <= flags['to-wave']!)
        : flags.all
          ? all
          : unfinished.slice(0, 1)
  const shared = fleetRunOptions(flags, io, note)
  // A dry run writes nothing: nothing to confirm (as apply NS --dry-run).
  if (!flags.yes && !shared.dryRun && waves.length > 0) await confirmFleet(io, loaded, waves)
  return {...shared, loaded, waves, retry: flags.retry}
}

/** One question for the whole run: the namespaces of a fleet are applied without asking before each step. */
async function confirmFleet(io: Io, loaded: LoadedFleet, waves: number[]): Promise<void> {
  if (!canPrompt(io))
    throw new UsageError(
      `apply --fleet asks before it starts, but there is no terminal to ask on${isCI(io.env) ? ' (CI is set)' : ''}`,
      `Review the plans (mesh-migrate show --fleet ${loaded.file}), then pass --yes.`,
    )
  const count = loaded.fleet.spec.waves
    .filter((w) => waves.includes(w.wave))
    .reduce((n, w) => n + w.namespaces.filter((ns) => hasPlan(loaded, ns)).length, 0)
  if (
    !(await confirm(
      io,
      `Apply ${count} namespace(s) of wave(s) ${waves.join(', ')} of ${loaded.file}, every step?`,
      '--yes',
    ))
  )
    throw new CancelledError(
      'Apply cancelled: nothing was written.',
      `Re-run \`mesh-migrate apply --fleet --yes\` when ready.`,
    )
}

/** A wave's passes: a cycle's namespaces up to bind-waypoint first, then every namespace of the wave to the end. */
export function wavePasses(loaded: LoadedFleet, wave: number): WavePass[] {
  const members = membersOf(loaded, wave)
  const inCycle = loaded.fleet.spec.cycles.flatMap((c) => c.namespaces).filter((n) => members.includes(n))
  const all: WavePass = {selection: {kind: 'all'}, namespaces: members}
  return inCycle.length === 0 ? [all] : [{selection: {kind: 'to', id: 'bind-waypoint'}, namespaces: inCycle}, all]
}

export function applyFleet(o: FleetApplyOptions): Promise<FleetApplyResult> {
  return runFleet({
    operation: 'apply',
    dryRun: o.dryRun,
    loaded: o.loaded,
    waves: o.waves,
    parallel: o.parallel,
    io: o.io,
    note: o.note,
    // A dry run records nothing, so a cycle's second pass would start again from the first step: one pass.
    passes: (wave) =>
      o.dryRun ? [{selection: {kind: 'all'}, namespaces: membersOf(o.loaded, wave)}] : wavePasses(o.loaded, wave),
    runOne: (run, pass, update, control) => applyNamespace(o, run, pass.selection, update, control),
    // A dry run leaves every plan as it was: each wave is judged against the cluster as it is, not gated.
    gate: async (run) => {
      if (o.dryRun) return undefined
      const member = await readFleetMember(o.loaded, run.namespace)
      return member.plan && fullyApplied(member.plan) ? undefined : (member.problem ?? 'has steps not applied')
    },
    // The command as the user typed it (their --parallel, --timeout…), or the one that runs every wave.
    rerun: sameCommand(
      'apply',
      `mesh-migrate apply --fleet ${o.loaded.file} --all --yes${o.retry ? ' --retry' : ''}${o.dryRun ? ' --dry-run=server' : ''}`,
    ),
  })
}

/** The steps a dry run did not get through (stopped early), with the steps the record had left before it. */
function dryRunRemaining(session: PlanSession, run: string[]): string[] {
  const done = new Set(run)
  return remainingSteps(session).filter((id) => !done.has(id))
}

/** The apply action's streams for a namespace of the fleet: its steps on its progress line, its warnings kept. */
function namespaceIO(
  o: FleetApplyOptions,
  run: FleetNamespaceRun,
  session: PlanSession,
  update: (m: string) => void,
  control: RunControl,
) {
  const io: ApplyIO & {current?: string} = {
    io: o.io,
    note: warningsTo(control, run.namespace),
    result: () => undefined,
    runStep: async (title, work) => {
      // A dry run's title is the step id marked as such; the fleet's progress line is marked already.
      const id = title.startsWith(`${DRY_RUN_MARK} `) ? title.slice(DRY_RUN_MARK.length + 1) : title
      const label = stepLabel(session, id)
      io.current = id
      update(`${label}: running`)
      const summary = await work((m) => update(`${label}: ${m}`))
      run.steps.push(id)
      update(`${label}: ${summary}`)
    },
    signal: control.signal,
    stopRequested: () => control.stop,
  }
  return io
}

/** One namespace's pass: `apply NS --all` (or --to bind-waypoint); its outcome is recorded in `run`, never thrown. */
async function applyNamespace(
  o: FleetApplyOptions,
  run: FleetNamespaceRun,
  selection: StepSelection,
  update: (message: string) => void,
  control: RunControl,
): Promise<string> {
  run.startedAt ??= new Date().toISOString()
  let session: PlanSession | undefined
  let io: ReturnType<typeof namespaceIO> | undefined
  try {
    session = await PlanSession.load(run.plan, o.connection, () => undefined)
    if (selection.kind === 'to' && !session.state.plan.spec.steps.some((s) => s.id === selection.id))
      return `no ${selection.id} step: applied in the second pass`
    const options: ApplyOptions = {
      session,
      selection,
      lock: lockOptions('apply', run.plan, o.write),
      dryRun: o.dryRun,
      yes: true,
      diff: false,
      // A step left Running (a killed run) or Interrupted is resumed as `apply NS` does; a Failed one needs --retry.
      retry: o.retry,
      allowOtherCluster: o.allowOtherCluster,
      ignoreFleetOrder: false,
    }
    io = namespaceIO(o, run, session, update, control)
    const steps = await validateApply(options, io)
    const applied = steps === 'up-to-date' ? [] : await applyPlanSteps(options, io, steps)
    run.finishedAt = new Date().toISOString()
    if (applied === undefined) {
      run.remaining = remainingSteps(session)
      run.state = 'interrupted'
      return `interrupted at ${io.current ?? 'the start'}${o.dryRun ? '' : ' (recorded)'}`
    }
    // A dry run records nothing: what is left is what it did not get through.
    run.remaining = o.dryRun ? dryRunRemaining(session, run.steps) : remainingSteps(session)
    run.state =
      run.remaining.length === 0
        ? run.steps.length === 0 && steps === 'up-to-date'
          ? 'up-to-date'
          : 'applied'
        : control.stop
          ? 'stopped'
          : 'partly-applied'
    return `${run.state}${run.remaining.length > 0 ? ` (${run.remaining.length} step(s) left)` : ''}`
  } catch (error) {
    return failed(run, session, io?.current, error, control)
  }
}
