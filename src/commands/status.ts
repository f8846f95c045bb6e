import * as Args from '@oclif/core/args'
import * as Flags from '@oclif/core/flags'
import type {Interfaces} from '@oclif/core'

import {planStatuses, renderStatusReport, type StatusOptions} from '../actions/status.js'
import type {StatusReport} from '../cli/contract.js'
import {clusterFlags, namespaceFlag, planOrContext} from '../cli/flags.js'
import {BaseCommand, EXIT_CODES_HELP, outputFlag, type OutputFormat} from '../cli/base.js'
import {ClusterConnection} from '../cli/plan-session.js'
import {UserError} from '../errors.js'
import {listPlanFiles, resolvePlanArg} from '../executor/plan-store.js'
import {stdoutPainter} from '../ui/color.js'

export default class StatusCommand extends BaseCommand {
  static override summary = 'Plan progress (step, phase, when, by whom) and live drift.'
  static override description = `Without PLAN: the plan of the kubeconfig context's namespace (plans/<namespace>.yaml) when the context has one, else every plan under plans/, each with its state (blocked, not-started, in-progress, applied, failed, interrupted, rolled-back). With a cluster (the current context, or --context), each applied step is compared with the cluster: does it still show what the step did? Drift names the object and the label key or field. A plan made for another cluster is reported as such, without drift. The lock holder is shown, marked dead when it ran on this host and its process is gone; so are hazard windows the plan is stopped inside. --by-effect judges every step by what is live in the cluster instead of by the record (a GitOps engine syncing the plan's overlay records nothing): each step's after-state and verification, in order; the first step whose effect is missing is named with what is missing. --fleet [FLEET_FILE] (default plans/fleet.yaml): the plans of the fleet, one line each by wave — progress, drift, lock holder. Progress comes from the plan's record in the cluster (ConfigMap mesh-migrate-record-<namespace>), which wins over the file's status: a teammate's copy of the reviewed plan shows the true progress. When the cluster cannot be read, status exits 1 (drift unknown); --offline shows the file only. A plan whose spec was edited after its first apply still shows its progress (from the record) with its problems as a warning, and exits 4. A step stopped part-way (Ctrl+C) is listed with the operations it did and did not complete (which rollouts happened) and the hazard window that leaves.

EXIT CODES
${EXIT_CODES_HELP}`

  static override examples = [
    '<%= config.bin %> status',
    '<%= config.bin %> status bookinfo -o json',
    '<%= config.bin %> status bookinfo --detailed-exitcode',
    '<%= config.bin %> status --fleet --detailed-exitcode',
    '<%= config.bin %> status plans/bookinfo.yaml --by-effect --detailed-exitcode',
  ]

  static override args = {
    plan: Args.string({
      description:
        'Plan file or namespace, or -n NAMESPACE (default: every plan under plans/); with --fleet: the fleet file (default plans/fleet.yaml).',
    }),
  }
  static override flags = {
    namespace: namespaceFlag,
    output: outputFlag,
    'detailed-exitcode': Flags.boolean({
      description: 'Exit 10 when steps are pending or the cluster drifted from what applied steps wrote.',
    }),
    offline: Flags.boolean({
      description: "Do not contact the cluster: the plan file's status only (no record, drift or lock information).",
    }),
    'by-effect': Flags.boolean({
      description:
        "Judge each step by what is live in the cluster, not by the plan's record: its after-state (created objects, labels, deletions) and its verification (waypoint Programmed, pods without sidecars and captured, Services bound). The verification gate after a GitOps sync, which records nothing; read-only. With --detailed-exitcode: 10 while a step's effect is missing (named with what is missing), 0 when every step's is live.",
      exclusive: ['offline'],
    }),
    fleet: Flags.boolean({
      description: 'The plans of the fleet file (PLAN, default plans/fleet.yaml), by wave.',
      exclusive: ['namespace'],
    }),
    ...clusterFlags,
  }

  async run(): Promise<StatusReport | undefined> {
    const options = this.validate(await this.complete())
    const report = await planStatuses(options, this.io)
    return this.emit(report, options.output, () =>
      renderStatusReport(report, stdoutPainter(this.io), this.io.now().getTime()),
    )
  }

  /** Flags → options: the plans to report (the one named, or every plan under plans/). */
  private async complete(): Promise<StatusCommandOptions> {
    const {args, flags} = await this.parse(StatusCommand)
    if (flags.fleet) {
      const {loadFleetFile} = await import('../actions/fleet-apply.js')
      const {fleetPlanPath} = await import('../executor/fleet-order.js')
      const loaded = await loadFleetFile(args.plan)
      const members = loaded.fleet.spec.namespaces.filter(
        (n) => n.plan !== undefined || n.result !== 'nothing-to-migrate',
      )
      const waves = new Map(
        [...members].sort((a, b) => a.wave - b.wave).map((n) => [fleetPlanPath(loaded, n.name), n.wave]),
      )
      return {...this.options(flags, [...waves.keys()], undefined), fleet: loaded.file, waves}
    }
    const planArg = await planOrContext(args.plan, flags.namespace, flags, this.io.stderr)
    const files = planArg ? [await resolvePlanArg(planArg)] : await listPlanFiles()
    return this.options(flags, files, planArg)
  }

  /** The options for these plan files; `planArg`: the plan named on the command line, if one was. */
  private options(flags: StatusFlags, files: string[], planArg: string | undefined): StatusCommandOptions {
    return {
      files,
      onePlan: planArg !== undefined,
      ...(planArg === undefined ? {} : {planArg}),
      cluster: ClusterConnection.fromFlags(flags, this.io),
      offline: flags.offline,
      detailedExitcode: flags['detailed-exitcode'],
      byEffect: flags['by-effect'],
      output: flags.output,
    }
  }

  /** Some plan to report. */
  private validate(o: StatusCommandOptions): StatusCommandOptions {
    if (o.files.length === 0)
      throw new UserError('no plans under plans/', {suggestion: 'Create one with `mesh-migrate plan NAMESPACE`.'})
    return o
  }
}

type StatusFlags = Interfaces.InferredFlags<typeof StatusCommand.flags>

interface StatusCommandOptions extends StatusOptions {
  output: OutputFormat
}
