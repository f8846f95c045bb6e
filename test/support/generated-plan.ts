// The plan of the generated namespace (test/support/generated-namespace.ts), built offline as `plan --manifests` would.
import type {KubeObject} from '../../src/planner/model.js'
import type {MigrationPlan} from '../../src/planner/plan-types.js'
import {generatedNamespace} from './generated-namespace.js'
import {offlinePlan} from './offline-plan.js'

export function generatedPlan(n: number): MigrationPlan {
  return offlinePlan('big', generatedNamespace(n) as unknown as KubeObject[], {}, 'generated').plan
}
