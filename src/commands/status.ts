import {Args, Flags} from '@oclif/core'

import {type PlanStatus, type StatusReport, type StatusStep, typed} from '../cli/contract.js'
import {clusterFlags, namespaceFlag, namespaceOf} from '../cli/flags.js'
import {BaseCommand, EXIT_CODES_HELP, outputFlag} from '../cli/base.js'
import {checkTargetCluster, connectCluster} from '../cli/plan-commands.js'
import {planProgress} from '../census/census.js'
import {StalePlanError, UserError} from '../errors.js'
import {describeHolder, holderAlive, holderState, lockRef} from '../executor/lock.js'
import {stepDrift} from '../executor/drift.js'
import {PlanState} from '../executor/plan-state.js'
import {listPlanFiles, resolvePlanArg} from '../executor/plan-store.js'
import type {KubeClient} from '../kube/types.js'
import {stdoutPainter} from '../ui/color.js'
import {renderTable} from '../ui/table.js'
import {describeWindow, openWindows} from '../planner/windows.js'

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
    const found = await stepDrift(client, step, state.plan.metadata.name)
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

export default class StatusCommand extends BaseCommand {
  static override summary = 'Plan progress (step, phase, when, by whom) and live drift.'
  static override description = `Without PLAN: every plan under plans/, each with its state (blocked, not-started, in-progress, applied, failed, interrupted, rolled-back). With a cluster (the current context, or --context), each applied step is compared with the cluster: does it still show what the step did? Drift names the object and the label key or field. A plan made for another cluster is reported as such, without drift. The lock holder is shown, marked dead when it ran on this host and its process is gone; so are hazard windows the plan is stopped inside.

EXIT CODES
${EXIT_CODES_HELP}`

  static override examples = ['<%= config.bin %> status', '<%= config.bin %> status bookinfo -o json', '<%= config.bin %> status bookinfo --detailed-exitcode']

  static override args = {plan: Args.string({description: 'Plan file or namespace, or -n NAMESPACE (default: every plan under plans/).'})}
  static override flags = {
    namespace: namespaceFlag,
    output: outputFlag,
    'detailed-exitcode': Flags.boolean({description: 'Exit 10 when steps are pending or the cluster drifted from what applied steps wrote.'}),
    offline: Flags.boolean({description: 'Do not contact the cluster (no drift, no lock information).'}),
    ...clusterFlags,
  }

  async run(): Promise<StatusReport | undefined> {
    const {args, flags} = await this.parse(StatusCommand)
    const planArg = namespaceOf(args.plan, flags.namespace, 'PLAN')
    const files = planArg ? [await resolvePlanArg(planArg)] : await listPlanFiles()
    if (files.length === 0) throw new UserError('no plans under plans/', {suggestion: 'Create one with `mesh-migrate plan NAMESPACE`.'})
    let client: KubeClient | undefined
    if (!flags.offline) {
      client = await connectCluster(flags).catch((error: Error) => {
        this.note(`No drift check: ${error.message.split('\n')[0]} (--offline to skip the cluster).`)
        return undefined
      })
    }
    const results: PlanStatus[] = []
    let invalid = 0
    let invalidExit = 4
    for (const file of files) {
      let state: PlanState
      try {
        state = await PlanState.load(file)
      } catch (error) {
        // Listing every plan: one that cannot be read is reported and the others are still listed.
        if (planArg || !(error instanceof UserError)) throw error
        if (invalid++ === 0) invalidExit = error.exitCode
        this.note(`${error.message}${error.suggestion ? `\n${error.suggestion}` : ''}`)
        continue
      }
      const rows: StepRow[] = state.plan.spec.steps.map((s) => {
        const st = state.status(s.id)
        return {id: s.id, action: s.action, phase: st?.phase ?? 'Pending', ...(st?.at ? {at: st.at} : {}), ...(st?.by ? {by: st.by} : {}), ...(st?.message ? {message: st.message} : {})}
      })
      let lock: string | undefined
      let elsewhere: string | undefined
      if (client) {
        try {
          elsewhere = await otherCluster(client, state)
          if (elsewhere) throw new UserError(`the plan belongs to another cluster: ${elsewhere}`)
          await driftOf(client, state, rows)
          const lease = await client.get(lockRef(state.namespace))
          if (lease?.spec?.holderIdentity) lock = `${describeHolder(lease)}${holderAlive(lease) ? '' : ` (${holderState(lease)})`}`
        } catch (error) {
          this.note(`${file}: drift not checked: ${(error as Error).message.split('\n')[0]}`)
        }
      }
      results.push({
        plan: file,
        namespace: state.namespace,
        state: planProgress(file, state.plan).state,
        pending: rows.filter((r) => r.phase !== 'Applied').length,
        drifted: rows.filter((r) => r.drift === 'drifted').length,
        openWindows: openWindows(state.plan, (id) => state.status(id)?.phase ?? 'Pending').map(describeWindow),
        ...(elsewhere ? {otherCluster: elsewhere} : {}),
        ...(lock ? {lock} : {}),
        steps: rows,
      })
    }
    if (flags['detailed-exitcode'] && results.some((r) => r.pending > 0 || r.drifted > 0)) process.exitCode = 10
    if (invalid > 0) {
      this.note(`${invalid} of ${files.length} plan(s) could not be read (see above).`)
      process.exitCode = invalidExit
    }
    return this.emit(typed('StatusReport', {plans: results}), flags.output, () => {
      const p = stdoutPainter()
      return results.map((r) => {
        const head = `${p.paint('bold', r.plan)} (namespace ${r.namespace}): ${r.state}, ${r.steps.length - r.pending}/${r.steps.length} applied${r.drifted > 0 ? `, ${r.drifted} drifted` : ''}${r.otherCluster ? ' — the plan belongs to another cluster (no drift check)' : ''}${r.lock ? ` — locked by ${r.lock}` : ''}`
        const table = renderTable(['STEP', 'PHASE', 'AGE', 'BY', 'DRIFT', 'NOTE'], r.steps.map((s) => [
          s.id,
          s.phase,
          age(s.at),
          s.by ?? '-',
          s.drift === 'drifted' ? p.paint('red', 'drifted') : s.drift ?? '-',
          s.driftDetail ?? (s.phase === 'Failed' || s.phase === 'Interrupted' ? s.message ?? '' : ''),
        ]), p)
        const windows = r.openWindows.length > 0 ? `\n${p.paint('yellow', `Stopped inside ${r.openWindows.length} hazard window(s):`)}\n${r.openWindows.map((w) => `  - ${w}`).join('\n')}` : ''
        return `${head}\n${table}${windows}`
      }).join('\n\n')
    })
  }
}
