// When may we ask? Only a person at a terminal: stdin and stderr are TTYs and CI is not set.
// Otherwise a command that would prompt fails, naming the flag that answers for the user (SPEC §2).
import {UsageError} from '../errors.js'
import type {Io} from './io.js'

export function isCI(env: Io['env']): boolean {
  const ci = env.CI
  return ci !== undefined && ci !== '' && ci !== '0' && ci.toLowerCase() !== 'false'
}

export function canPrompt(io: Io): boolean {
  return io.stdin.isTTY === true && io.stderr.isTTY === true && !isCI(io.env)
}

/** A yes/no question on stderr; `flag` is what to pass when nobody can answer. */
export async function confirm(io: Io, message: string, flag: string): Promise<boolean> {
  if (!canPrompt(io)) {
    throw new UsageError(
      `${message} — no terminal to ask on${isCI(io.env) ? ' (CI is set)' : ''}`,
      `Pass ${flag} to proceed without a prompt.`,
    )
  }
  return io.prompt.confirm(message)
}

/** Destructive actions: the user types the namespace (heroku-style confirmation). */
export async function confirmByTyping(io: Io, namespace: string, what: string, flag: string): Promise<boolean> {
  if (!canPrompt(io)) {
    throw new UsageError(
      `${what} needs confirmation — no terminal to ask on${isCI(io.env) ? ' (CI is set)' : ''}`,
      `Pass ${flag} ${namespace} to confirm.`,
    )
  }
  const answer = await io.prompt.input(`${what}. Type the namespace name (${namespace}) to confirm:`)
  return answer.trim() === namespace
}

/** Questions asked with @inquirer/prompts on the io's stdin and stderr (the prompter of a real terminal). */
export function inquirerPrompter(streams: Pick<Io, 'stdin' | 'stderr'>): Io['prompt'] {
  // The streams are read when a question is asked: process.stdin is made on first use (~2 ms), and most runs ask none.
  const context = () => ({input: streams.stdin, output: streams.stderr})
  return {
    async confirm(message) {
      const {confirm: ask} = await import('@inquirer/prompts')
      return ask({message, default: false}, context())
    },
    async input(message) {
      const {input} = await import('@inquirer/prompts')
      return input({message}, context())
    },
  }
}
