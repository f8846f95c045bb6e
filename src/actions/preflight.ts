// `preflight NAMESPACE` as an action (issue 23 §2): the read-only checks of a plan's preflight step against the
// cluster (an injected ClusterConnection), for the plan given with --plan or the one `plan NAMESPACE` would build from
// the cluster now; exit 1 on the io when a check reports an error. The preflight command parses flags, runs it and
// renders the diagnostics.
import {type PreflightReport, typed} from '../cli/contract.js'
import type {ClusterConnection} from '../cli/plan-session.js'
import {UsageError} from '../errors.js'
import {PlanState} from '../executor/plan-state.js'
import {resolvePlanArg} from '../executor/plan-store.js'
import type {KubeClient} from '../kube/types.js'
import type {Inventory} from '../planner/model.js'
import type {MigrationPlan} from '../planner/plan-types.js'
import type {WaypointFor} from '../planner/waypoint.js'
import type {Io} from '../ui/io.js'
import {ExitCode} from '../exit-codes.js'

export interface PreflightOptions {
  namespace: string
  cluster: ClusterConnection
  /** The root namespace of a plan built from the cluster (a plan given with --plan has its own). */
  rootNamespace: string
  /** --plan: a plan file, or a namespace for plans/<namespace>.yaml (it must be this namespace's plan). */
  plan?: string
  /** --check: only these checks. */
  checks?: string[]
  /** The plan options of a plan built from the cluster. */
  waypointName: string
  waypointFor: WaypointFor
  /** `mesh-migrate/<version>`, recorded in a plan built from the cluster. */
  generator: string
}

/** The plan whose checks run, where it came from, and (built from the cluster) the inventory it was built from. */
interface PlanToCheck {
  plan: MigrationPlan
  inventory?: Inventory
  planSource: string
  rootNamespace: string
}

export async function preflight(options: PreflightOptions, io: Io): Promise<PreflightReport> {
  // A plan given is read (and checked) before the cluster is contacted.
  const given = options.plan === undefined ? undefined : await givenPlan(options.plan, options.namespace)
  const client = await options.cluster.connect()
  const {runPreflight} = await import('../preflight/runner.js')
  const {plan, inventory, planSource, rootNamespace} = given ?? (await planFromCluster(options, client))
  const diagnostics = await runPreflight(client, options.namespace, {
    plan,
    rootNamespace,
    ...(inventory ? {inventory} : {}),
    ...(options.checks ? {checks: options.checks} : {}),
  })
  const ok = !diagnostics.some((d) => d.severity === 'error')
  if (!ok) io.setExitCode(ExitCode.Failure)
  return typed('PreflightReport', {
    namespace: options.namespace,
    context: client.context,
    plan: planSource,
    ok,
    diagnostics,
  })
}

/** The plan given with --plan, loaded (checked); it must be the namespace's. */
async function givenPlan(planArg: string, namespace: string): Promise<PlanToCheck> {
  const file = await resolvePlanArg(planArg)
  const plan = (await PlanState.load(file)).plan
  if (plan.metadata.namespace !== namespace) {
    throw new UsageError(
      `${file} is the plan of namespace ${plan.metadata.namespace}, not ${namespace}`,
      `Run \`mesh-migrate preflight ${plan.metadata.namespace} --plan ${file}\`.`,
    )
  }
  return {plan, planSource: file, rootNamespace: plan.spec.options.rootNamespace}
}

/** Without --plan, the checks of the plan `plan NAMESPACE` would build from the cluster now. */
async function planFromCluster(options: PreflightOptions, client: KubeClient): Promise<PlanToCheck> {
  const {namespace, rootNamespace, waypointName, waypointFor} = options
  const [{ClusterSource}, {buildInventory}, {buildPlan}] = await Promise.all([
    import('../sources/cluster.js'),
    import('../planner/inventory.js'),
    import('../plan/plan-builder.js'),
  ])
  const source = await ClusterSource.open(client)
  const snapshot = await source.snapshot(namespace, {rootNamespace})
  const inventory = buildInventory(snapshot, {waypointFor})
  const plan = buildPlan({
    inventory,
    snapshot,
    options: {rootNamespace, waypointName, waypointFor},
    generator: options.generator,
  })
  return {plan, inventory, planSource: '(built from the cluster)', rootNamespace}
}
