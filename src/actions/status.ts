// `status [PLAN]` as an action (issue 23 §2): each plan's progress (the cluster's record over the file's status), the
// drift of its applied steps, its lock holder and the hazard windows it is stopped inside — over an injected io and
// kube client (the options' ClusterConnection), with the exit code it earns (10 pending with --detailed-exitcode, 1
// when the cluster could not be read) set on the io. The status command parses flags, runs it and renders the report.
import {type PlanStatus, type StatusReport, type StatusStep, typed} from '../cli/contract.js'
import {checkTargetCluster} from '../cli/plan-commands.js'
import {type ClusterConnection, PlanSession} from '../cli/plan-session.js'
import {planProgress} from '../census/census.js'
import {StalePlanError, UserError} from '../errors.js'
import {describeHolder, holderAlive, holderState, lockRef} from '../executor/lock.js'
import {stepDrift} from '../executor/drift.js'
import {stepEffect} from '../executor/effect.js'
import type {PlanState} from '../executor/plan-state.js'
import type {KubeClient} from '../kube/types.js'
import type {Painter} from '../ui/color.js'
import {type Io, writeErr} from '../ui/io.js'
import {renderTable} from '../ui/table.js'
import {describeWindow, openWindows} from '../planner/windows.js'
import {partialProgress} from '../plan/interrupted.js'
import {ExitCode} from '../exit-codes.js'

type StepRow = StatusStep

function age(at: string | undefined, now = Date.now()): string {
  if (!at) return '-'
  const s = Math.max(0, Math.round((now - Date.parse(at)) / 1000))
  if (s < 120) return `${s}s`
  if (s < 7200) return `${Math.round(s / 60)}m`
  if (s < 172_800) return `${Math.round(s / 3600)}h`
  return `${Math.round(s / 86_400)}d`
}

/** Compare what each applied step did with the cluster now: are its effects still present? */
async function driftOf(client: KubeClient, state: PlanState, rows: StepRow[]): Promise<void> {
  for (const row of rows) {
    const step = state.plan.spec.steps.find((s) => s.id === row.id)!
    // Only an Applied step's effects are expected in the cluster; a RolledBack one's are gone on purpose.
    if (step.operations.length === 0 || row.phase !== 'Applied') {
      row.drift = 'n/a'
      continue
    }
    const later = rows.filter((r) => r.phase === 'Applied' && rows.indexOf(r) > rows.indexOf(row))
    const laterSteps = state.plan.spec.steps.filter((s) => later.some((r) => r.id === s.id))
    const found = await stepDrift(client, step, state.plan.metadata.name, laterSteps)
    row.drift = found.length === 0 ? 'in-sync' : 'drifted'
    if (found.length > 0) row.driftDetail = found.join('; ')
  }
}

/** The plan's cluster is not the current one: say so instead of reporting its steps as drifted. */
async function otherCluster(client: KubeClient, state: PlanState): Promise<string | undefined> {
  try {
    await checkTargetCluster(client, state, false, () => undefined)
    return undefined
  } catch (error) {
    if (error instanceof StalePlanError) return error.message.replace(/^the plan was made for another cluster: /, '')
    throw error
  }
}

export interface StatusOptions {
  files: string[]
  /** --fleet: the fleet file, and each plan's wave. */
  fleet?: string
  waves?: Map<string, number>
  /** A plan was named: one that cannot be read is the command's failure, not a line in a list. */
  onePlan: boolean
  /** PLAN as given (a namespace name must be the plan's namespace). */
  planArg?: string
  cluster: ClusterConnection
  /** --offline: never connect (no drift, no lock information). */
  offline: boolean
  detailedExitcode: boolean
  /**
   * --by-effect: judge each step by what is live in the cluster (its after-state and verification), not by the
   * record — the verification gate after a GitOps sync, which records nothing. Read-only.
   */
  byEffect?: boolean
}

export async function planStatuses(options: StatusOptions, io: Io): Promise<StatusReport> {
  const client = await connect(options, io)
  const results: PlanStatus[] = []
  const unreadable: UserError[] = []
  for (const file of options.files) {
    const status = await statusOf(options, io, file, client)
    if (status instanceof UserError) unreadable.push(status)
    else results.push({...(options.waves?.has(file) ? {wave: options.waves.get(file)!} : {}), ...status})
  }
  if (options.byEffect) effectExitCode(io, results, options.detailedExitcode)
  else if (options.detailedExitcode && results.some((r) => r.pending > 0 || (r.drifted ?? 0) > 0))
    io.setExitCode(ExitCode.ChangesPending)
  // Never green when blind: progress and drift that could not be read from the cluster are an error, as
  // terraform's refresh failing is (--offline asks for the file-only view).
  const blind = results.filter((r) => r.clusterUnread !== undefined)
  if (blind.length > 0) {
    writeErr(
      io,
      `The cluster could not be read for ${blind.map((r) => r.plan).join(', ')}: progress is the plan file's, drift unknown. Fix the connection and re-run, or pass --offline for the file-only view.`,
    )
    io.setExitCode(ExitCode.Failure)
  }
  // An edited plan's progress is shown, but the plan is invalid: never "in sync" (docs/contract.md).
  if (results.some((r) => r.invalid)) io.setExitCode(ExitCode.Invalid)
  if (unreadable.length > 0) {
    writeErr(io, `${unreadable.length} of ${options.files.length} plan(s) could not be read (see above).`)
    io.setExitCode(unreadable[0]!.exitCode)
  }
  const report = typed('StatusReport', {...(options.fleet ? {fleet: options.fleet} : {}), plans: results})
  return report
}

/**
 * --by-effect decides by what is live: 10 (with --detailed-exitcode) while a step's effect is missing, whatever the
 * record says; 1 when it could not be judged (never green when blind).
 */
function effectExitCode(io: Io, results: PlanStatus[], detailed: boolean): void {
  if (detailed && results.some((r) => (r.notLive ?? 0) > 0)) io.setExitCode(ExitCode.ChangesPending)
  const unjudged = results.filter((r) => r.notLive === null && r.clusterUnread === undefined)
  if (unjudged.length === 0) return
  writeErr(
    io,
    `The effect of ${unjudged.map((r) => r.plan).join(', ')} could not be judged${unjudged.some((r) => r.otherCluster) ? " (the current context is not the plan's cluster)" : ''}: see above.`,
  )
  io.setExitCode(ExitCode.Failure)
}

/** The cluster for the record, drift and lock; without one (unreachable, no kubeconfig) the file is still shown. */
async function connect(o: StatusOptions, io: Io): Promise<KubeClient | string | undefined> {
  if (o.offline) return undefined
  return o.cluster.connect().catch((error: Error) => {
    const reason = error.message.split('\n')[0]!
    writeErr(io, `No cluster: ${reason} (--offline to skip the cluster).`)
    return reason
  })
}

/** One plan's record and, with a cluster, its drift and lock; a plan that cannot be read is reported and returned. */
async function statusOf(
  o: StatusOptions,
  io: Io,
  file: string,
  connection: KubeClient | string | undefined,
): Promise<PlanStatus | UserError> {
  let session: PlanSession
  try {
    session = await PlanSession.load(file, o.cluster, (m) => writeErr(io, m), {allowEdited: true})
    if (o.onePlan) session.checkNamespace(o.planArg)
  } catch (error) {
    // Listing every plan: one that cannot be read is reported and the others are still listed.
    if (o.onePlan || !(error instanceof UserError)) throw error
    writeErr(io, `${error.message}${error.suggestion ? `\n${error.suggestion}` : ''}`)
    return error
  }
  const client = typeof connection === 'string' ? undefined : connection
  const live = client ? await liveState(io, client, session) : {}
  const unread = typeof connection === 'string' ? connection : live.unread
  const state = session.state
  const partial = state.plan.spec.steps.flatMap((s) => partialProgress(state.plan, s, state.status(s.id)) ?? [])
  const rows: StepRow[] = state.plan.spec.steps.map((s) => {
    const st = state.status(s.id)
    const part = partial.find((p) => p.step === s.id)
    return {
      id: s.id,
      action: s.action,
      phase: st?.phase ?? 'Pending',
      ...(st?.at ? {at: st.at} : {}),
      ...(st?.by ? {by: st.by} : {}),
      ...(st?.message ? {message: st.message} : {}),
      ...(part ? {progress: {done: part.done, notDone: part.notDone}} : {}),
    }
  })
  const checked = client !== undefined && !unread && !live.otherCluster
  if (checked) await (o.byEffect ? effect(io, client, session, rows) : drift(io, client, session, rows))
  if (unread) for (const row of rows) row.drift = row.phase === 'Applied' ? 'unknown' : 'n/a'
  if (o.byEffect && !checked) for (const row of rows) row.effect = 'unknown'
  return {
    plan: file,
    namespace: state.namespace,
    state: planProgress(file, state.plan).state,
    pending: rows.filter((r) => r.phase !== 'Applied').length,
    drifted: checked ? rows.filter((r) => r.drift === 'drifted').length : live.otherCluster ? 0 : null,
    ...(o.byEffect
      ? {notLive: rows.some((r) => r.effect === 'unknown') ? null : rows.filter((r) => r.effect === 'missing').length}
      : {}),
    progressFrom: live.fromCluster ? 'cluster' : 'file',
    ...(unread ? {clusterUnread: unread} : {}),
    ...(state.edited ? {invalid: state.edited.map((p) => `${p.path ? `${p.path}: ` : ''}${p.message}`)} : {}),
    openWindows: [
      ...openWindows(state.plan, (id) => state.status(id)?.phase ?? 'Pending').map(describeWindow),
      ...partial.flatMap((p) => p.hazards),
    ],
    ...(live.otherCluster ? {otherCluster: live.otherCluster} : {}),
    ...(live.lock ? {lock: live.lock} : {}),
    steps: rows,
  }
}

/** Drift of the applied steps, into `rows`; a failure to read is said, and the drift left unknown. */
async function drift(io: Io, client: KubeClient, session: PlanSession, rows: StepRow[]): Promise<void> {
  try {
    await driftOf(client, session.state, rows)
  } catch (error) {
    writeErr(io, `${session.file}: drift not checked: ${(error as Error).message.split('\n')[0]}`)
    for (const row of rows) row.drift = row.phase === 'Applied' ? 'unknown' : 'n/a'
  }
}

/**
 * --by-effect, into `rows`: each step, in order, judged by what is live (its after-state and its verification) instead
 * of the drift of recorded steps; a failure to read is said, and the effect left unknown (exit 1).
 */
async function effect(io: Io, client: KubeClient, session: PlanSession, rows: StepRow[]): Promise<void> {
  const steps = session.state.plan.spec.steps
  try {
    for (const [index, row] of rows.entries()) {
      const {missing, judged} = await stepEffect(client, session.namespace, steps, index)
      row.effect = judged === 0 ? 'n/a' : missing.length === 0 ? 'live' : 'missing'
      if (missing.length > 0) row.effectDetail = missing.join('; ')
    }
  } catch (error) {
    writeErr(io, `${session.file}: effect not checked: ${(error as Error).message.split('\n')[0]}`)
    for (const row of rows) {
      row.effect = 'unknown'
      delete row.effectDetail
    }
  }
}

/**
 * The plan's record in the cluster (its progress, the cluster's over the file's) and the lock's holder; a plan of
 * another cluster is only said to be one. `unread`: why the cluster could not be read.
 */
async function liveState(
  io: Io,
  client: KubeClient,
  session: PlanSession,
): Promise<{otherCluster?: string; lock?: string; fromCluster?: boolean; unread?: string}> {
  try {
    const elsewhere = await otherCluster(client, session.state)
    if (elsewhere) return {otherCluster: elsewhere}
    const live: {lock?: string; fromCluster?: boolean} = {}
    await session.adoptRecord(client, {readOnly: true, progressOnly: true})
    live.fromCluster = true
    const lease = await client.get(lockRef(session.namespace))
    if (lease?.spec?.holderIdentity)
      live.lock = `${describeHolder(lease)}${holderAlive(lease) ? '' : ` (${holderState(lease)})`}`
    return live
  } catch (error) {
    // Another plan's record is an answer, not a blind spot: its owner is named (exit 5).
    if (error instanceof UserError && error.exitCode === ExitCode.Locked) throw error
    const reason = (error as Error).message.split('\n')[0]!
    writeErr(io, `${session.file}: the cluster could not be read: ${reason}`)
    return {unread: reason}
  }
}

/** The report for people: a heading and a step table per plan, or with --fleet one line per plan by wave. */
export function renderStatusReport(report: StatusReport, p: Painter, now: number): string {
  return report.fleet !== undefined ? renderFleetStatus(report.plans, p) : renderPlanStatuses(report.plans, p, now)
}

/** For people: a heading per plan, its steps as a table, and the hazard windows it is stopped inside. */
function renderPlanStatuses(results: PlanStatus[], p: Painter, now: number): string {
  return results
    .map((r) => {
      const drift =
        r.drifted === null
          ? r.clusterUnread
            ? ', drift unknown (cluster not read)'
            : ''
          : r.drifted > 0
            ? `, ${r.drifted} drifted`
            : ''
      const head = `${p.paint('bold', r.plan)} (namespace ${r.namespace}): ${r.state}, ${r.steps.length - r.pending}/${r.steps.length} applied${r.notLive === undefined ? drift : ''}${r.otherCluster ? ' — the plan belongs to another cluster (no drift check)' : ''}${r.lock ? ` — locked by ${r.lock}` : ''}`
      if (r.notLive !== undefined) return `${head}\n${renderEffect(r, p)}`
      const table = renderTable(
        ['STEP', 'PHASE', 'AGE', 'BY', 'DRIFT', 'NOTE'],
        r.steps.map((s) => [
          s.id,
          s.phase,
          age(s.at, now),
          s.by ?? '-',
          s.drift === 'drifted' ? p.paint('red', 'drifted') : (s.drift ?? '-'),
          s.driftDetail ?? (s.phase === 'Failed' || s.phase === 'Interrupted' ? (s.message ?? '') : ''),
        ]),
        p,
      )
      const windows =
        r.openWindows.length > 0
          ? `\n${p.paint('yellow', `Stopped inside ${r.openWindows.length} hazard window(s):`)}\n${r.openWindows.map((w) => `  - ${w}`).join('\n')}`
          : ''
      const parts = r.steps
        .filter((s) => s.progress)
        .map(
          (s) =>
            `\n${p.paint('yellow', `Step ${s.id} is ${s.phase} after ${s.progress!.done.length} of ${s.progress!.done.length + s.progress!.notDone.length} operation(s):`)}\n${[
              ...s.progress!.done.map((d) => `  done:     ${d}`),
              ...s.progress!.notDone.map((d) => `  not done: ${d}`),
            ].join('\n')}`,
        )
        .join('')
      const invalid = r.invalid
        ? `\n${p.paint('red', `Invalid plan (it cannot be applied): ${r.invalid.join('; ')}`)}`
        : ''
      return `${head}\n${table}${parts}${windows}${invalid}`
    })
    .join('\n\n')
}

/** --by-effect for people: each step's effect in the cluster, and the first step whose effect is not live. */
function renderEffect(r: PlanStatus, p: Painter): string {
  const table = renderTable(
    ['STEP', 'PHASE', 'EFFECT', 'MISSING'],
    r.steps.map((s) => [
      s.id,
      s.phase,
      s.effect === 'missing' ? p.paint('red', 'missing') : (s.effect ?? '-'),
      s.effectDetail ?? '',
    ]),
    p,
  )
  const first = r.steps.find((s) => s.effect === 'missing')
  const verdict =
    r.notLive === null
      ? p.paint('red', 'Effect not judged: the cluster could not be read (see stderr).')
      : first
        ? p.paint(
            'red',
            `${r.notLive} of ${r.steps.length} step(s) not live in the cluster; the first is ${first.id}: ${first.effectDetail}`,
          )
        : p.paint('green', `Every step's effect is live in the cluster and verified (by effect, not by the record).`)
  return `${table}\n${verdict}`
}

/** --fleet for people: one line per plan, by wave: progress, drift, lock holder. */
function renderFleetStatus(results: PlanStatus[], p: Painter): string {
  const byEffect = results.some((r) => r.notLive !== undefined)
  return renderTable(
    ['WAVE', 'NAMESPACE', 'STATE', 'APPLIED', byEffect ? 'NOT LIVE' : 'DRIFTED', 'LOCK', 'PLAN'],
    results.map((r) => [
      String(r.wave ?? '-'),
      r.namespace,
      r.state,
      `${r.steps.length - r.pending}/${r.steps.length}`,
      byEffect
        ? r.notLive === null || r.notLive === undefined
          ? 'unknown'
          : r.notLive > 0
            ? p.paint('red', `${r.notLive} (${r.steps.find((s) => s.effect === 'missing')?.id ?? '?'})`)
            : '0'
        : r.drifted === null
          ? 'unknown'
          : r.drifted > 0
            ? p.paint('red', String(r.drifted))
            : r.otherCluster
              ? 'other cluster'
              : '0',
      r.lock ?? '-',
      r.plan,
    ]),
    p,
  )
}
