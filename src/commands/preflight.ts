import type {Interfaces} from '@oclif/core'
import * as Args from '@oclif/core/args'
import * as Flags from '@oclif/core/flags'

import {BaseCommand, EXIT_CODES_HELP, outputFlag, sourceFlags} from '../cli/base.js'
import {waypointForFlag, waypointNameFlag} from '../cli/flags.js'
import {type PreflightReport, typed} from '../cli/contract.js'
import {namespaceFlag, requireNamespaceOrContext} from '../cli/flags.js'
import {connectCluster} from '../cli/plan-commands.js'
import {UsageError} from '../errors.js'
import {PREFLIGHT_CHECKS} from '../planner/vocab.js'
import {stdoutPainter} from '../ui/color.js'
import {ExitCode} from '../exit-codes.js'
import type {KubeClient} from '../kube/types.js'
import type {Inventory} from '../planner/model.js'
import type {MigrationPlan} from '../planner/plan-types.js'

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
    const o = await this.validate(await this.complete())
    const client = await connectCluster(o.flags, this.io.stderr)
    const {runPreflight} = await import('../preflight/runner.js')
    const {plan, inventory, planSource, rootNamespace} = o.given ?? (await this.planFromCluster(o, client))
    const diagnostics = await runPreflight(client, o.namespace, {
      plan,
      rootNamespace,
      ...(inventory ? {inventory} : {}),
      ...(o.flags.check ? {checks: o.flags.check} : {}),
    })
    const ok = !diagnostics.some((d) => d.severity === 'error')
    if (!ok) this.io.setExitCode(ExitCode.Failure)
    const result = typed('PreflightReport', {
      namespace: o.namespace,
      context: client.context,
      plan: planSource,
      ok,
      diagnostics,
    })
    const {renderPreflight} = await import('../preflight/view.js')
    return this.emit(result, o.flags.output, () => renderPreflight(diagnostics, stdoutPainter(this.io)))
  }

  /** Flags → options. */
  private async complete(): Promise<PreflightInput> {
    const {args, flags} = await this.parse(PreflightCommand)
    return {namespaceArg: args.namespace, flags}
  }

  /** The namespace is required; a plan given with --plan is loaded (checked) and must be that namespace's. */
  private async validate({namespaceArg, flags}: PreflightInput): Promise<PreflightOptions> {
    const namespace = await requireNamespaceOrContext(namespaceArg, flags.namespace, flags, this.io.stderr)
    if (!flags.plan) return {namespace, flags}
    const {resolvePlanArg} = await import('../executor/plan-store.js')
    const {PlanState} = await import('../executor/plan-state.js')
    const file = await resolvePlanArg(flags.plan)
    const plan = (await PlanState.load(file)).plan
    if (plan.metadata.namespace !== namespace) {
      throw new UsageError(
        `${file} is the plan of namespace ${plan.metadata.namespace}, not ${namespace}`,
        `Run \`mesh-migrate preflight ${plan.metadata.namespace} --plan ${file}\`.`,
      )
    }
    return {namespace, flags, given: {plan, planSource: file, rootNamespace: plan.spec.options.rootNamespace}}
  }

  /** Without --plan, the checks of the plan `plan NAMESPACE` would build from the cluster now. */
  private async planFromCluster({namespace, flags}: PreflightOptions, client: KubeClient): Promise<PlanToCheck> {
    const rootNamespace = flags['root-namespace']
    const [{ClusterSource}, {buildInventory}, {buildPlan}] = await Promise.all([
      import('../sources/cluster.js'),
      import('../planner/inventory.js'),
      import('../plan/plan-builder.js'),
    ])
    const source = await ClusterSource.open(client)
    const snapshot = await source.snapshot(namespace, {rootNamespace})
    const inventory = buildInventory(snapshot, {waypointFor: flags['waypoint-for']})
    const plan = buildPlan({
      inventory,
      snapshot,
      options: {rootNamespace, waypointName: flags['waypoint-name'], waypointFor: flags['waypoint-for']},
      generator: `mesh-migrate/${this.config.version}`,
    })
    return {plan, inventory, planSource: '(built from the cluster)', rootNamespace}
  }
}

/** The plan whose checks run, where it came from, and (built from the cluster) the inventory it was built from. */
interface PlanToCheck {
  plan: MigrationPlan
  inventory?: Inventory
  planSource: string
  rootNamespace: string
}
interface PreflightInput {
  namespaceArg: string | undefined
  flags: PreflightFlags
}
interface PreflightOptions {
  namespace: string
  flags: PreflightFlags
  /** The plan given with --plan. */
  given?: PlanToCheck
}

type PreflightFlags = Interfaces.InferredFlags<typeof PreflightCommand.flags>
