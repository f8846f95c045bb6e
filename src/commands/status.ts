import {Args, Flags} from '@oclif/core'

import {type PlanStatus, type StatusReport, type StatusStep, typed} from '../cli/contract.js'
import {clusterFlags, namespaceFlag, namespaceOf} from '../cli/flags.js'
import {BaseCommand, EXIT_CODES_HELP, outputFlag} from '../cli/base.js'
import {connectCluster} from '../cli/plan-commands.js'
import {UserError} from '../errors.js'
import {describeHolder, lockRef} from '../executor/lock.js'
import {effectPresent} from '../executor/operations.js'
import {PlanState} from '../executor/plan-state.js'
import {listPlanFiles, resolvePlanArg} from '../executor/plan-store.js'
import type {KubeClient} from '../kube/types.js'
import {stdoutPainter} from '../ui/color.js'
import {renderTable} from '../ui/table.js'

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
    const stamp = state.status(step.id)?.observed?.restartedAt as string | undefined
    const missing: string[] = []
    for (const op of step.operations) {
      // A later restart replaces the timestamp without undoing anything: restarts are not drift.
      if (op.op === 'restart') continue
      const present = await effectPresent(client, op, state.plan.metadata.name, stamp)
      if (!present) missing.push(op.op === 'apply' ? `${op.object.kind} ${op.object.metadata.name} missing or changed` : op.op === 'delete' ? `${op.ref.kind} ${op.ref.name} is back` : `labels of ${op.ref.kind} ${op.ref.name} changed`)
    }
    row.drift = missing.length === 0 ? 'in-sync' : 'drifted'
    if (missing.length > 0) row.driftDetail = missing.join('; ')
  }
}

export default class StatusCommand extends BaseCommand {
  static override summary = 'Plan progress (step, phase, when, by whom) and live drift.'
  static override description = `Without PLAN: every plan under plans/. With a cluster (the current context, or --context), each applied step is compared with the cluster: does it still show what the step did?

EXIT CODES
${EXIT_CODES_HELP}`

  static override examples = ['<%= config.bin %> status', '<%= config.bin %> status bookinfo -o json', '<%= config.bin %> status bookinfo --detailed-exitcode']

  static override args = {plan: Args.string({description: 'Plan file or namespace, or -n NAMESPACE (default: every plan under plans/).'})}
  static override flags = {
    namespace: namespaceFlag,
    output: outputFlag,
    'detailed-exitcode': Flags.boolean({description: 'Exit 10 when steps are pending.'}),
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
      if (client) {
        try {
          await driftOf(client, state, rows)
          const lease = await client.get(lockRef(state.namespace))
          if (lease?.spec?.holderIdentity) lock = describeHolder(lease)
        } catch (error) {
          this.note(`${file}: drift not checked: ${(error as Error).message.split('\n')[0]}`)
        }
      }
      results.push({plan: file, namespace: state.namespace, pending: rows.filter((r) => r.phase !== 'Applied').length, ...(lock ? {lock} : {}), steps: rows})
    }
    if (flags['detailed-exitcode'] && results.some((r) => r.pending > 0)) process.exitCode = 10
    if (invalid > 0) {
      this.note(`${invalid} of ${files.length} plan(s) could not be read (see above).`)
      process.exitCode = invalidExit
    }
    return this.emit(typed('StatusReport', {plans: results}), flags.output, () => {
      const p = stdoutPainter()
      return results.map((r) => {
        const head = `${p.paint('bold', r.plan)} (namespace ${r.namespace}): ${r.steps.length - r.pending}/${r.steps.length} applied${r.lock ? ` — locked by ${r.lock}` : ''}`
        const table = renderTable(['STEP', 'PHASE', 'AGE', 'BY', 'DRIFT', 'NOTE'], r.steps.map((s) => [
          s.id,
          s.phase,
          age(s.at),
          s.by ?? '-',
          s.drift === 'drifted' ? p.paint('red', 'drifted') : s.drift ?? '-',
          s.driftDetail ?? (s.phase === 'Failed' || s.phase === 'Interrupted' ? s.message ?? '' : ''),
        ]), p)
        return `${head}\n${table}`
      }).join('\n\n')
    })
  }
}
