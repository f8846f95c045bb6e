// Which plan apply/rollback act on, and what apply says when there is nothing to do, through the built
// CLI. Both are decided from the plan files alone, before any cluster is contacted (no kubeconfig here).
import {mkdir, mkdtemp, readFile, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import {beforeAll, describe, expect, it} from 'vitest'

import type {MigrationPlan} from '../../src/planner/plan-types.js'
import {renderPlanFile, specDigest} from '../../src/plan/planfile.js'
import {hasStackTrace, runCli} from '../support/cli.js'
import {REPO_ROOT} from '../support/shared.js'
import {planOf} from '../support/plan-file.js'

const EXAMPLE = path.join(REPO_ROOT, 'examples/bookinfo')
/** No cluster: a command that tried to reach one would fail with "no kubeconfig found". */
const OFFLINE = {KUBECONFIG: '', HOME: os.tmpdir()}

let planned: MigrationPlan

beforeAll(async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'mesh-migrate-plan-files-'))
  const r = await runCli(['plan', 'bookinfo', '--manifests', EXAMPLE, '--out', path.join(dir, 'bookinfo.yaml')])
  expect(r.code, r.stderr).toBe(0)
  planned = planOf(await readFile(path.join(dir, 'bookinfo.yaml'), 'utf8'))
})

async function workdirWith(files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'mesh-migrate-plan-files-'))
  await mkdir(path.join(dir, 'plans'))
  for (const [name, text] of Object.entries(files)) await writeFile(path.join(dir, 'plans', name), text)
  return dir
}

/** The plan with its first `applied` steps recorded Applied. */
function withApplied(plan: MigrationPlan, applied: number): MigrationPlan {
  const copy = structuredClone(plan)
  copy.status = {
    specDigest: specDigest(copy),
    steps: copy.spec.steps
      .slice(0, applied)
      .map((s) => ({id: s.id, phase: 'Applied' as const, at: '2026-01-01T00:00:00.000Z', by: 'test'})),
  }
  return copy
}

describe('choosing the plan when PLAN is omitted', () => {
  it('an invalid plan under plans/ is reported (exit 4, named) instead of silently skipped', async () => {
    const cwd = await workdirWith({
      'bookinfo.yaml': renderPlanFile(planned),
      'broken.yaml': 'apiVersion: mesh-migrate.io/v1alpha1\nkind: MigrationPlan\nspec: {}\n',
    })
    for (const command of [
      ['apply', '--step', '--yes'],
      ['rollback', '--confirm', 'bookinfo'],
    ]) {
      const r = await runCli(command, {cwd, env: OFFLINE})
      expect(r.code, r.stderr).toBe(4)
      expect(hasStackTrace(r.stderr)).toBe(false)
      expect(r.stderr).toContain('cannot choose a plan under plans/: 1 plan file is not valid')
      expect(r.stderr).toContain('plans/broken.yaml')
      expect(r.stderr).not.toContain('plans/bookinfo.yaml (')
      expect(r.stderr).toContain('Name the plan to use')
    }
  })

  it('with only valid plans, the one unfinished plan is used', async () => {
    const cwd = await workdirWith({'bookinfo.yaml': renderPlanFile(withApplied(planned, planned.spec.steps.length))})
    const r = await runCli(['apply', '--step', '--yes'], {cwd, env: OFFLINE})
    expect(r.code, r.stderr).toBe(2)
    expect(r.stderr).toContain('no unfinished plan under plans/')
  })
})

describe('apply --to a step that the file says is applied', () => {
  // Whether it is applied is the cluster's record's to say (issue 19): without a cluster, apply does not claim
  // "nothing to do" (test/e2e/cluster-record.test.ts checks that message against a real API server).
  it('reads the cluster first: with none reachable it fails with Error/Next, never a blind "nothing to do"', async () => {
    const plan = withApplied(planned, 3)
    const cwd = await workdirWith({'bookinfo.yaml': renderPlanFile(plan)})
    const target = plan.spec.steps[1]!.id
    const r = await runCli(['apply', 'bookinfo', '--to', target, '--yes'], {cwd, env: OFFLINE})
    expect(r.code, r.stderr).toBe(1)
    expect(r.stderr).toMatch(/^Error: /m)
    expect(r.stderr).toMatch(/^Next: /m)
    expect(r.stdout).not.toContain('nothing to do')
  })
})
