// Refresh of the objects the plan does not know (issue 19 §1): before the first step that changes the data plane,
// apply reads the namespace's inventory again — the same LISTs and the same classification as `plan` — and compares
// it with what the plan recorded (plan/inventory-drift.ts). An L7 DENY created after planning would otherwise stop
// working silently once the namespace is ambient; apply stops before the switch instead, naming it.
import {StalePlanError} from '../errors.js'
import {compareInventory, type InventoryChange} from '../plan/inventory-drift.js'
import {mayHaveWritten, phaseOf} from '../plan/rollback.js'
import {buildInventory} from '../planner/inventory.js'
import type {MigrationPlan} from '../planner/plan-types.js'
import {formatRef} from '../planner/refs.js'
import {ClusterSource} from '../sources/cluster.js'
import type {KubeClient} from '../kube/types.js'
import {loadFleetBeside} from './fleet-order.js'
import {asRolledBack} from './keep-progress.js'
import {replanCommand} from './plan-store.js'

/** The inventory now against the plan's: the changes that need another plan (empty: none). */
export async function inventoryChanges(
  client: KubeClient,
  plan: MigrationPlan,
  handledByFleet: ReadonlySet<string> = new Set(),
): Promise<InventoryChange[]> {
  const {rootNamespace, waypointFor} = plan.spec.options
  const read = await new ClusterSource(client, plan.spec.target).snapshot(plan.metadata.namespace, {rootNamespace})
  // The plan's own writes are not the user's: compare the namespace as a rollback of the applied steps would leave it.
  const snapshot = asRolledBack(read, plan)
  return compareInventory(plan, buildInventory(snapshot, {waypointFor}), snapshot).changes.filter(
    (c) => !(c.change === 'new' && c.action === 'lost-client-side' && handledByFleet.has(formatRef(c.ref))),
  )
}

/**
 * Other namespaces' routing a plan of the fleet left out of its inventory: judged once for the fleet, it is lost by
 * this namespace only until the namespace that owns it binds its waypoint, which the fleet's order (or its cycle's
 * protocol) puts first, and apply keeps (fleet-order.ts). The routing edges into this namespace name it.
 */
async function routingHandledByFleet(plan: MigrationPlan, file: string): Promise<Set<string>> {
  const loaded = await loadFleetBeside(file)
  const namespace = plan.metadata.namespace
  const edges = loaded?.fleet.spec.edges ?? []
  return new Set(edges.filter((e) => e.kind === 'routing' && e.to === namespace).flatMap((e) => e.refs))
}

const describe = (c: InventoryChange) =>
  `${formatRef(c.ref)}: ${c.change === 'new' ? 'new since the plan was made' : 'changed since the plan was made'}, verdict ${c.verdict} (${c.action})${c.reasons.length > 0 ? `: ${c.reasons.join('; ')}` : ''}`

/**
 * Stop (exit 3) before `stepId` writes when the inventory has objects the plan does not handle as they are now.
 * Nothing is written; `plan NS --keep-progress` folds them into a new plan that keeps the record of the applied steps.
 */
export async function refuseInventoryChanges(
  client: KubeClient,
  plan: MigrationPlan,
  file: string,
  stepId: string,
): Promise<void> {
  const changes = await inventoryChanges(client, plan, await routingHandledByFleet(plan, file))
  if (changes.length === 0) return
  throw new StalePlanError(
    `the namespace's inventory changed since the plan was made, and the plan does not handle ${changes.length === 1 ? 'this object' : 'these objects'}; apply stops before step ${stepId}, which changes the data plane (nothing was written by it):\n${changes.map((c) => `  - ${describe(c)}`).join('\n')}`,
    `Fold ${changes.length === 1 ? 'it' : 'them'} into the plan with \`${replanCommand(plan.metadata.namespace, file, '--keep-progress')}\` (it keeps the record of the applied steps), review the new plan, then ${
      plan.spec.steps.some((s) => mayHaveWritten(phaseOf(plan, s)))
        ? `apply it with \`mesh-migrate apply ${file} --take-over\` (the reviewed re-plan takes over from the plan applied so far)`
        : 're-run the apply'
    }.`,
  )
}
