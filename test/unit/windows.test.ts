// issue 10 point 15: a stop inside a hazard window the simulation recorded (e.g. after
// restart-workloads, before delete-sidecar-policies) is named, with the policy and the closing step.
import {readFile} from 'node:fs/promises'
import path from 'node:path'

import {describe, expect, it} from 'vitest'

import type {MigrationPlan, StepPhase} from '../../src/planner/plan-types.js'
import {checkPlanText} from '../../src/plan/planfile.js'
import {describeWindow, openWindows} from '../../src/planner/windows.js'
import {REPO_ROOT} from '../support/shared.js'

async function examplePlan(): Promise<MigrationPlan> {
  return checkPlanText(await readFile(path.join(REPO_ROOT, 'plans/examples/bookinfo.yaml'), 'utf8')).plan!
}

/** Every step up to and including `last` Applied, the rest Pending. */
function appliedThrough(plan: MigrationPlan, last: string | undefined): (id: string) => StepPhase {
  const end = last === undefined ? -1 : plan.spec.steps.findIndex((s) => s.id === last)
  return (id) => (plan.spec.steps.findIndex((s) => s.id === id) <= end ? 'Applied' : 'Pending')
}

describe('openWindows', () => {
  it('after restart-workloads the L7 ALLOW is deny-all at ztunnel until delete-sidecar-policies', async () => {
    const plan = await examplePlan()
    const open = openWindows(plan, appliedThrough(plan, 'restart-workloads'))
    expect(open.map((w) => [w.hazard.policy, w.until])).toEqual([
      ['AuthorizationPolicy/ratings-get-only', 'delete-sidecar-policies'],
    ])
    expect(describeWindow(open[0]!)).toMatch(
      /^AuthorizationPolicy\/ratings-get-only: AuthorizationPolicy\/ratings-get-only is deny-all at ztunnel .* — until step delete-sidecar-policies is applied$/,
    )
  })

  it('no window is open before it opens, once it closed, or when nothing is applied', async () => {
    const plan = await examplePlan()
    for (const last of [
      undefined,
      'enable-ambient',
      'remove-sidecar-injection',
      'delete-sidecar-policies',
      'verify-dataplane',
    ]) {
      expect(openWindows(plan, appliedThrough(plan, last)), String(last)).toEqual([])
    }
  })
})
