// issue 10 point 12: census and status show a plan with blockers as `blocked` (it cannot be applied).
import {readFile} from 'node:fs/promises'
import path from 'node:path'

import {parse} from 'yaml'
import {describe, expect, it} from 'vitest'

import {planProgress} from '../../src/census/census.js'
import type {MigrationPlan} from '../../src/planner/plan-types.js'
import {REPO_ROOT} from '../support/shared.js'

describe('planProgress', () => {
  it('a plan with blockers that wrote nothing is blocked; without blockers it is not-started', async () => {
    const plan = parse(await readFile(path.join(REPO_ROOT, 'plans/examples/bookinfo.yaml'), 'utf8')) as MigrationPlan
    expect(planProgress('p.yaml', plan).state).toBe('not-started')
    const blocker = {...plan.spec.findings[0]!, severity: 'blocker' as const}
    const blocked = {...plan, spec: {...plan.spec, blockers: [blocker]}}
    expect(planProgress('p.yaml', blocked).state).toBe('blocked')
    // Once steps were applied (before a re-plan added the blocker) the progress is what matters.
    const applied = {
      ...blocked,
      status: {specDigest: 'x', steps: [{id: plan.spec.steps[0]!.id, phase: 'Applied' as const, at: '', by: ''}]},
    }
    expect(planProgress('p.yaml', applied).state).toBe('in-progress')
  })
})
