import {stat} from 'node:fs/promises'

import type {Interfaces} from '@oclif/core'
import * as Flags from '@oclif/core/flags'

import {BaseCommand, EXIT_CODES_HELP, outputFlag, sourceFlags} from '../cli/base.js'
import {type CensusDocument, typed} from '../cli/contract.js'
import {selectorFlag} from '../cli/flags.js'
import {connectCluster} from '../cli/plan-commands.js'
import {stdoutPainter} from '../ui/color.js'
import {UsageError} from '../errors.js'
import {PLANS_DIR} from '../executor/plan-store.js'

export default class CensusCommand extends BaseCommand {
  static override summary =
    'Every namespace by data-plane mode (sidecar, ambient, both, none), with the pods that disagree with it, waypoints and plans.'
  static override description = `One cluster-wide LIST per kind (namespaces, pods, waypoint Gateways and Deployments, injection webhooks), then per namespace:

  MODE                 sidecar (which label or revision injects), ambient, both (sidecar and ambient labels together:
                       the sidecar wins; "(IST0123)" when istioctl analyze would flag the labels), or none
  LABELS (-o wide)     the injection and ambient labels
  PODS (S/A/N)         application pods: sidecar/ambient/no proxy; the mesh's own pods are counted apart
                       (gateways istiod deploys; control-plane: istiod, ztunnel, istio-cni)
  OUTSIDE-MESH         pods of a mesh namespace that have no sidecar and are not captured by ztunnel
                       (hostNetwork pods and deliberate opt-outs are left out)
  SIDECAR-IN-AMBIENT   pods still carrying a sidecar in an ambient namespace (not restarted, or opting in)
  WAYPOINTS            istio-waypoint Gateways and whether they are ready (Programmed, address, Deployment available)
  PLANS                plans under plans/ for the namespace: applied/total steps, state, next step
  WAVE                 the namespace's migration wave in plans/fleet.yaml (written by plan -A / -l / NS1 NS2), when there is one

EXIT CODES
${EXIT_CODES_HELP}`

  static override examples = ['<%= config.bin %> census', '<%= config.bin %> census --selector team=payments -o json']

  static override flags = {
    kubeconfig: sourceFlags.kubeconfig,
    context: sourceFlags.context,
    'request-timeout': sourceFlags['request-timeout'],
    output: outputFlag,
    selector: selectorFlag,
    'plans-dir': Flags.string({description: 'Directory of plan files whose progress to show [default: plans].'}),
  }

  async run(): Promise<CensusDocument | undefined> {
    const o = await this.validate(await this.complete())
    const client = await connectCluster(o.flags, this.io.stderr)
    const {readCensusInput} = await import('../census/read.js')
    const {buildCensus} = await import('../census/census.js')
    const input = await readCensusInput(client, {
      ...(o.flags.selector ? {selector: o.flags.selector} : {}),
      plansDir: o.plansDir,
    })
    const report = typed('Census', buildCensus(input))
    for (const note of report.notes) this.note(`Note: ${note}`)
    const {renderCensus} = await import('../census/view.js')
    return this.emit(report, o.flags.output, () => renderCensus(report, stdoutPainter(this.io)))
  }

  /** Flags → options (the selector's syntax is checked as it is parsed: flags.ts). */
  private async complete(): Promise<CensusOptions> {
    const {flags} = await this.parse(CensusCommand)
    return {flags, plansDir: flags['plans-dir'] ?? PLANS_DIR, plansDirGiven: flags['plans-dir'] !== undefined}
  }

  /** A --plans-dir that was asked for must be a directory; the default one may be missing (no plans yet). */
  private async validate(o: CensusOptions): Promise<CensusOptions> {
    if (!o.plansDirGiven) return o
    const info = await stat(o.plansDir).catch(() => undefined)
    if (!info?.isDirectory())
      throw new UsageError(
        `--plans-dir ${o.plansDir} ${info ? 'is not a directory' : 'does not exist'}`,
        'Name the directory the plan files are in (plan --out wrote them), or leave --plans-dir out for plans/.',
      )
    return o
  }
}

interface CensusOptions {
  flags: Interfaces.InferredFlags<typeof CensusCommand.flags>
  plansDir: string
  plansDirGiven: boolean
}
