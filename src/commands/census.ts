import * as Flags from '@oclif/core/flags'

import {census, type CensusOptions} from '../actions/census.js'
import {BaseCommand, EXIT_CODES_HELP, outputFlag, type OutputFormat, sourceFlags} from '../cli/base.js'
import type {CensusDocument} from '../cli/contract.js'
import {selectorFlag} from '../cli/flags.js'
import {ClusterConnection} from '../cli/plan-session.js'
import {stdoutPainter} from '../ui/color.js'
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
    // Nothing to check before the action: the --plans-dir given must be a directory, which census() checks first.
    const o = await this.complete()
    const report = await census(o, this.io)
    const {renderCensus} = await import('../census/view.js')
    return this.emit(report, o.output, () => renderCensus(report, stdoutPainter(this.io)))
  }

  /** Flags → options (the selector's syntax is checked as it is parsed: flags.ts). */
  private async complete(): Promise<CensusCommandOptions> {
    const {flags} = await this.parse(CensusCommand)
    return {
      cluster: ClusterConnection.fromFlags(flags, this.io),
      ...(flags.selector ? {selector: flags.selector} : {}),
      plansDir: flags['plans-dir'] ?? PLANS_DIR,
      plansDirGiven: flags['plans-dir'] !== undefined,
      output: flags.output,
    }
  }
}

interface CensusCommandOptions extends CensusOptions {
  output: OutputFormat
}
