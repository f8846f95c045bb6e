// Finding a plan file from the command line (SPEC §2: PLAN is a path or a namespace name).
import {mkdir, mkdtemp, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import {afterEach, beforeEach, describe, expect, it} from 'vitest'

import {resolvePlanArg} from '../../src/executor/plan-store.js'

describe('resolvePlanArg', () => {
  let dir: string
  let previous: string

  beforeEach(async () => {
    previous = process.cwd()
    dir = await mkdtemp(path.join(os.tmpdir(), 'mesh-migrate-plan-store-'))
    await mkdir(path.join(dir, 'plans'))
    await writeFile(path.join(dir, 'plans', 'bookinfo.yaml'), 'kind: MigrationPlan\n')
    process.chdir(dir)
  })
  afterEach(() => {
    process.chdir(previous)
  })

  it('a directory called like the namespace does not shadow plans/<namespace>.yaml', async () => {
    await mkdir(path.join(dir, 'bookinfo'))
    expect(await resolvePlanArg('bookinfo')).toBe(path.join('plans', 'bookinfo.yaml'))
  })

  it('an existing regular file wins over the namespace meaning', async () => {
    await writeFile(path.join(dir, 'bookinfo'), 'kind: MigrationPlan\n')
    expect(await resolvePlanArg('bookinfo')).toBe('bookinfo')
  })

  it('a directory given as a path is not a plan file', async () => {
    await mkdir(path.join(dir, 'some', 'dir'), {recursive: true})
    await expect(resolvePlanArg('some/dir')).rejects.toThrow('some/dir is a directory, not a plan file')
  })
})
