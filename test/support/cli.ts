// Runs the built CLI (bin/run.js) as a real child process: what a user's shell sees.
import {spawn} from 'node:child_process'
import path from 'node:path'

import {REPO_ROOT} from './shared.js'

export interface CliResult {
  code: number | null
  stdout: string
  stderr: string
}

export const BIN = path.join(REPO_ROOT, 'bin/run.js')

/**
 * What describes the caller's terminal and language (its width, its locale, its colour wishes): a spawned CLI must
 * not see them, or a test passes or fails with the terminal it is run from (issue 23 §2: the cli tier failed under
 * an exported COLUMNS=80). A test that means one of them sets it explicitly.
 */
const TERMINAL_ENV = /^(?:COLUMNS|LINES|OCLIF_COLUMNS|TERM|COLORTERM|NO_COLOR|FORCE_COLOR|CI|LANG|LANGUAGE|LC_[A-Z_]+)$/

/** The environment of a spawned CLI: the caller's, without its terminal's facts; no colour, CI (nobody to ask); then `env`. */
export function cliEnv(env: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([name]) => !TERMINAL_ENV.test(name)))
  return {...inherited, NO_COLOR: '1', CI: 'true', ...env}
}

/** Run `mesh-migrate <args>` from `cwd` (default: the repository root). */
export function runCli(
  args: string[],
  opts: {cwd?: string; env?: NodeJS.ProcessEnv; input?: string} = {},
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: opts.cwd ?? REPO_ROOT,
      env: cliEnv(opts.env),
      stdio: ['pipe', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()))
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
    child.on('error', reject)
    child.on('close', (code) => resolve({code, stdout, stderr}))
    child.stdin.end(opts.input ?? '')
  })
}

/** An expected failure must never show a stack trace. */
export function hasStackTrace(text: string): boolean {
  return /^\s+at .+\(.+:\d+:\d+\)$/m.test(text) || /^\s+at .+:\d+:\d+$/m.test(text)
}
