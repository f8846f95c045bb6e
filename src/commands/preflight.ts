import * as Args from '@oclif/core/args'
import * as Flags from '@oclif/core/flags'

import {preflight, type PreflightOptions} from '../actions/preflight.js'
import {BaseCommand, EXIT_CODES_HELP, outputFlag, type OutputFormat, sourceFlags} from '../cli/base.js'
import {waypointForFlag, waypointNameFlag} from '../cli/flags.js'
import type {PreflightReport} from '../cli/contract.js'
import {namespaceFlag, requireNamespaceOrContext} from '../cli/flags.js'
import {ClusterConnection} from '../cli/plan-session.js'
import {PREFLIGHT_CHECKS} from '../planner/vocab.js'
import {stdoutPainter} from '../ui/color.js'

export default class PreflightCommand extends BaseCommand {
  static override summary =
    'Check that a namespace can be migrated now: ambient installed and ready, Gateway API, HBONE sidecars, blockers, NetworkPolicies, RBAC.'
  static override description = `Runs the read-only checks of a plan's preflight step against the cluster:

  istio-version          istiod serving the namespace (its istio.io/rev) runs Istio ≥ 1.24 (1.25+ recommended)
  ambient-enabled        istiod runs with PILOT_ENABLE_AMBIENT=true; mesh config enables HBONE for new sidecars;
                         not primary-remote (unsupported upstream: refused), nor set up for ambient multicluster
                         (refused); a multi-network mesh warns (ambient: multi-primary only, beta since 1.29,
                         identically named waypoints in every cluster)
  ztunnel-ready          the ztunnel DaemonSet is ready on every node it must run on
  istio-cni-ready        the istio-cni DaemonSet likewise, with ambient enabled and the namespace not excluded
  gateway-api-crds       Gateway API CRDs present at Istio's minimum bundle versions
  waypoint-gatewayclass  GatewayClass istio-waypoint exists with controller istio.io/mesh-controller
  sidecars-hbone         sidecar pods accept HBONE (networking.istio.io/tunnel=http), here and mesh-wide
  blockers               the plan's blockers and the ones the cluster shows now
  network-policies       NetworkPolicies admit TCP 15008 and kubelet probes from 169.254.7.127
  rbac                   a SelfSubjectAccessReview for every permission the plan's steps and undo need: their
                         writes (pod-template label edits included), the reads of their checks, the lock and the
                         namespace's owner record

Without --plan, the plan is built in memory from the cluster exactly as \`mesh-migrate plan\` would. Exits 1 when any check reports an error.

EXIT CODES
${EXIT_CODES_HELP}`

  static override examples = [
    '<%= config.bin %> preflight bookinfo',
    '<%= config.bin %> preflight bookinfo --plan plans/bookinfo.yaml -o json',
    '<%= config.bin %> preflight bookinfo --check ztunnel-ready --check istio-cni-ready',
  ]

  static override args = {namespace: Args.string({description: 'The namespace to migrate (or -n NAMESPACE).'})}
  static override flags = {
    namespace: namespaceFlag,
    kubeconfig: sourceFlags.kubeconfig,
    context: sourceFlags.context,
    'request-timeout': sourceFlags['request-timeout'],
    'root-namespace': sourceFlags['root-namespace'],
    output: outputFlag,
    plan: Flags.string({
      description:
        'Check this plan (path, or a namespace for plans/<namespace>.yaml) instead of building one from the cluster.',
    }),
    check: Flags.string({
      description: 'Run only this check (repeatable).',
      options: [...PREFLIGHT_CHECKS],
      multiple: true,
    }),
    'waypoint-name': waypointNameFlag,
    'waypoint-for': waypointForFlag,
  }

  async run(): Promise<PreflightReport | undefined> {
    const o = await this.complete()
    const report = await preflight(o, this.io)
    const {renderPreflight} = await import('../preflight/view.js')
    return this.emit(report, o.output, () => renderPreflight(report.diagnostics, stdoutPainter(this.io)))
  }

  /**
   * Flags → options: the namespace (argument, -n, or the kubeconfig context's: read from the file, no connection).
   * oclif has checked the flags' values; the plan given with --plan is checked by the action, before it connects.
   */
  private async complete(): Promise<PreflightCommandOptions> {
    const {args, flags} = await this.parse(PreflightCommand)
    return {
      namespace: await requireNamespaceOrContext(args.namespace, flags.namespace, flags, this.io.stderr),
      cluster: ClusterConnection.fromFlags(flags, this.io),
      rootNamespace: flags['root-namespace'],
      ...(flags.plan ? {plan: flags.plan} : {}),
      ...(flags.check ? {checks: flags.check} : {}),
      waypointName: flags['waypoint-name'],
      waypointFor: flags['waypoint-for'],
      generator: `mesh-migrate/${this.config.version}`,
      output: flags.output,
    }
  }
}

interface PreflightCommandOptions extends PreflightOptions {
  output: OutputFormat
}
