// `status` without PLAN lists every plan under plans/: one that cannot be read is reported (and the exit
// code says so) without hiding the others. No cluster (--offline).
import {copyFile, mkdir, mkdtemp, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import {describe, expect, it} from 'vitest'

import {hasStackTrace, runCli} from '../support/cli.js'
import {REPO_ROOT} from '../support/shared.js'

describe('status over several plans', () => {
  it('an invalid plan among several is reported (exit 4) and the valid ones are still listed', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'mesh-migrate-status-'))
    await mkdir(path.join(dir, 'plans'))
    await writeFile(
      path.join(dir, 'plans', 'aaa.yaml'),
      'apiVersion: mesh-migrate.io/v1alpha1\nkind: MigrationPlan\nspec: {}\n',
    )
    await copyFile(path.join(REPO_ROOT, 'plans/examples/bookinfo.yaml'), path.join(dir, 'plans', 'bookinfo.yaml'))
    const r = await runCli(['status', '--offline', '-o', 'json'], {cwd: dir})
    expect(r.code, r.stderr).toBe(4)
    expect(hasStackTrace(r.stderr), r.stderr).toBe(false)
    expect(r.stderr).toContain('aaa.yaml is not a valid plan')
    expect(r.stderr).toContain('1 of 2 plan(s) could not be read')
    const listed = (JSON.parse(r.stdout) as {plans: {plan: string; namespace: string}[]}).plans
    expect(listed.map((p) => p.namespace)).toEqual(['bookinfo'])
  })
})
