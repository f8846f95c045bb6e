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

/** Run `mesh-migrate <args>` from `cwd` (default: the repository root). */
export function runCli(
  args: string[],
  opts: {cwd?: string; env?: NodeJS.ProcessEnv; input?: string} = {},
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: opts.cwd ?? REPO_ROOT,
      env: {...process.env, NO_COLOR: '1', CI: 'true', ...opts.env},
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
