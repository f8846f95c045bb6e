// Inventory and plan of a set of objects, built as `mesh-migrate plan NS --manifests …` builds them offline.
import {buildInventory} from '../../src/planner/inventory.js'
import type {Inventory, KubeObject, SourceSnapshot} from '../../src/planner/model.js'
import {buildPlan} from '../../src/plan/plan-builder.js'
import type {MigrationPlan, PlanOptions} from '../../src/planner/plan-types.js'

export interface OfflinePlan {
  snapshot: SourceSnapshot
  inventory: Inventory
  plan: MigrationPlan
}

/** `options` on top of plan's defaults; `istioVersion` as --istio-version gives it (root namespace istio-system, waypoint "waypoint" for services). */
export function offlinePlan(
  namespace: string,
  objects: KubeObject[],
  options: Partial<PlanOptions> = {},
  source = 'manifests',
  istioVersion?: string,
): OfflinePlan {
  const snapshot: SourceSnapshot = {
    namespace,
    rootNamespace: 'istio-system',
    target: {manifests: [source]},
    objects,
    missingKinds: [],
    findings: [],
  }
  const planOptions: PlanOptions = {
    rootNamespace: 'istio-system',
    waypointName: 'waypoint',
    waypointFor: 'service',
    ...options,
  }
  const version = istioVersion ? {istioVersion} : {}
  const inventory = buildInventory(snapshot, {waypointFor: planOptions.waypointFor, ...version})
  const plan = buildPlan({inventory, snapshot, options: planOptions, generator: 'mesh-migrate/test', ...version})
  return {snapshot, inventory, plan}
}
