// One definition of the exit codes (src/exit-codes.ts), and the table users read (docs/architecture.md) says
// the same; expected failures carry theirs.
import {readdir, readFile} from 'node:fs/promises'
import path from 'node:path'

import {describe, expect, it} from 'vitest'

import {ExitCode} from '../../src/exit-codes.js'
import {
  CancelledError,
  InvalidPlanError,
  LockHeldError,
  PlanFilesInvalidError,
  StalePlanError,
  UsageError,
  UserError,
} from '../../src/errors.js'
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
    expect([new UsageError('x').name, new UsageError('x').exitCode]).toEqual(['UsageError', ExitCode.Usage])
    expect(new CancelledError('x').exitCode).toBe(ExitCode.Failure)
    expect(new PlanFilesInvalidError('x', 'y').exitCode).toBe(ExitCode.Invalid)
  })

  it('is the only place in src/ that spells an exit code as a number', async () => {
    const dir = path.join(REPO_ROOT, 'src')
    const files = (await readdir(dir, {recursive: true})).filter((f) => f.endsWith('.ts') && f !== 'exit-codes.ts')
    // `exit(2)`, `exitCode = 1`, `exitCode: 4`, `exitCode === 10`, `{exitCode: 2, …}` — comments aside;
    // `exitCode = pending ? 10 : 0` too.
    const literal = /\b(?:exit\(\s*\d|exitCode\s*(?:[:=]|===?|!==?)\s*\d|exitCode\s*=[^=].*[?:]\s*\d)/
    const found: string[] = []
    for (const file of files) {
      const lines = (await readFile(path.join(dir, file), 'utf8')).split('\n')
      lines.forEach((line, i) => {
        const code = line.replace(/\/\/.*$/, '').replace(/^\s*\*.*$/, '')
        if (literal.test(code)) found.push(`src/${file}:${i + 1}: ${line.trim()}`)
      })
    }
    expect(found, 'use ExitCode.* (src/exit-codes.ts) or a UserError subclass (src/errors.ts)').toEqual([])
  })
})
