// When may we ask? Only a person at a terminal: stdin and stderr are TTYs and CI is not set.
// Otherwise a command that would prompt fails, naming the flag that answers for the user (SPEC §2).
import {UsageError} from '../errors.js'

export function isCI(env: NodeJS.ProcessEnv = process.env): boolean {
  const ci = env.CI
  return ci !== undefined && ci !== '' && ci !== '0' && ci.toLowerCase() !== 'false'
}

export function canPrompt(): boolean {
  return process.stdin.isTTY === true && process.stderr.isTTY === true && !isCI()
}

/** A yes/no question on stderr; `flag` is what to pass when nobody can answer. */
export async function confirm(message: string, flag: string): Promise<boolean> {
  if (!canPrompt()) {
    throw new UsageError(
      `${message} — no terminal to ask on${isCI() ? ' (CI is set)' : ''}`,
      `Pass ${flag} to proceed without a prompt.`,
    )
  }
  const {confirm: ask} = await import('@inquirer/prompts')
  return ask({message, default: false}, {output: process.stderr})
}

/** Destructive actions: the user types the namespace (heroku-style confirmation). */
export async function confirmByTyping(namespace: string, what: string, flag: string): Promise<boolean> {
  if (!canPrompt()) {
    throw new UsageError(
      `${what} needs confirmation — no terminal to ask on${isCI() ? ' (CI is set)' : ''}`,
      `Pass ${flag} ${namespace} to confirm.`,
    )
  }
  const {input} = await import('@inquirer/prompts')
  const answer = await input(
    {message: `${what}. Type the namespace name (${namespace}) to confirm:`},
    {output: process.stderr},
  )
  return answer.trim() === namespace
}
