// One definition of the exit codes (src/cli/exit-codes.ts), and the table users read (docs/architecture.md) says
// the same; expected failures carry theirs.
import {readFile} from 'node:fs/promises'
import path from 'node:path'

import {describe, expect, it} from 'vitest'

import {ExitCode} from '../../src/cli/exit-codes.js'
import {InvalidPlanError, LockHeldError, StalePlanError, UserError} from '../../src/errors.js'
import {InterruptedError} from '../../src/executor/verify.js'
import {REPO_ROOT} from '../support/shared.js'

describe('ExitCode', () => {
  it('is the table of docs/architecture.md, code for code', async () => {
    const doc = await readFile(path.join(REPO_ROOT, 'docs/architecture.md'), 'utf8')
    const section = doc.slice(doc.indexOf('## Exit codes'))
    const documented = [...section.matchAll(/^\| (\d+) \|/gm)].map((m) => Number(m[1]))
    expect(documented).toEqual(Object.values(ExitCode))
  })

  it('the expected failures exit with theirs; an interruption is a UserError (no stack trace) with 130', () => {
    expect(new UserError('x').exitCode).toBe(ExitCode.Failure)
    expect(new StalePlanError('x').exitCode).toBe(ExitCode.Stale)
    expect(new InvalidPlanError('f', []).exitCode).toBe(ExitCode.Invalid)
    expect(new LockHeldError('x').exitCode).toBe(ExitCode.Locked)
    const interrupted = new InterruptedError()
    expect(interrupted).toBeInstanceOf(UserError)
    expect([interrupted.name, interrupted.exitCode]).toEqual(['InterruptedError', ExitCode.Interrupted])
  })
})
