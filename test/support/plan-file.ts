// Tests that look inside a plan file read it as the plan it encodes (the expanded MigrationPlan the executor
// runs), whichever encoding wrote it: src/plan/plan-encoding.ts. Written back with `yaml`'s stringify it is a
// valid v1alpha1 (expanded) plan file, which mesh-migrate still reads.
import {parse} from 'yaml'

import {decodePlan, PLAN_FILE_API_VERSION} from '../../src/plan/plan-encoding.js'
import type {MigrationPlan} from '../../src/planner/plan-types.js'

export function planOf(text: string): MigrationPlan {
  const data = parse(text) as Record<string, unknown>
  return data.apiVersion === PLAN_FILE_API_VERSION ? decodePlan(data).plan : (data as unknown as MigrationPlan)
}

/** The same value with every object's keys in reverse order: canonical output must not depend on key order. */
export const reverseKeys = (v: unknown): unknown =>
  Array.isArray(v)
    ? v.map(reverseKeys)
    : v && typeof v === 'object'
      ? Object.fromEntries(
          Object.entries(v)
            .reverse()
            .map(([k, x]) => [k, reverseKeys(x)]),
        )
      : v
