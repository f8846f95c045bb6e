// The plan of the generated namespace (test/support/generated-namespace.ts), built offline as `plan --manifests` would.
import {buildInventory} from '../../src/planner/inventory.js'
import type {KubeObject} from '../../src/planner/model.js'
import {buildPlan} from '../../src/planner/plan-builder.js'
import type {MigrationPlan} from '../../src/planner/plan-types.js'
import {generatedNamespace} from './generated-namespace.js'

export function generatedPlan(n: number): MigrationPlan {
  const snapshot = {
    namespace: 'big',
    rootNamespace: 'istio-system',
    target: {manifests: ['generated']},
    objects: generatedNamespace(n) as unknown as KubeObject[],
    missingKinds: [],
    findings: [],
  }
  return buildPlan({
    inventory: buildInventory(snapshot, {waypointFor: 'service'}),
    snapshot,
    options: {rootNamespace: 'istio-system', waypointName: 'waypoint', waypointFor: 'service'},
    generator: 'test',
  })
}
