// `mesh-migrate aply` → "did you mean apply?" (issue 13 §3). oclif runs this hook for an unknown
// command. Suggestions are never run for the user: apply and rollback change a cluster, so a guess
// must be typed again. Exit 2: a usage error, like an unknown flag.
import type {Hook} from '@oclif/core'

import {processIo} from '../cli/base.js'
import {stderrPainter} from '../ui/color.js'
import {ExitCode} from '../exit-codes.js'

/** Optimal string alignment distance: edits, with a swap of two neighbours counting as one ("aplpy"). */
export function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({length: a.length + 1}, (_, i) =>
    Array.from({length: b.length + 1}, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  )
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1)
    }
  }
  return d[a.length]![b.length]!
}

/** The commands close enough to be what was meant: at most a third of the word wrong, or a prefix of one command. */
export function suggestCommands(typed: string, commands: string[]): string[] {
  const word = typed.toLowerCase()
  const prefixed = commands.filter((c) => word.length >= 2 && c.startsWith(word))
  if (prefixed.length > 0) return prefixed
  const scored = commands
    .map((c) => ({c, d: editDistance(word, c)}))
    .filter(({c, d}) => d <= Math.max(1, Math.floor(Math.max(c.length, word.length) / 3)))
  const best = Math.min(...scored.map((s) => s.d))
  return scored.filter((s) => s.d === best).map((s) => s.c)
}

const hook: Hook<'command_not_found'> = async function (opts) {
  const commands = opts.config.commands.filter((c) => !c.hidden).map((c) => c.id.split(':').join(' '))
  // With a space as topic separator oclif joins the arguments into the id ("aply:bookinfo"): the command is the first word.
  const typed = opts.id.split(':')[0]!
  const suggestions = suggestCommands(typed, commands)
  const io = processIo()
  const p = stderrPainter(io)
  const bin = opts.config.bin
  io.stderr.write(
    `${p.paint(['bold', 'red'], 'Error:')} "${typed}" is not a ${bin} command.${suggestions.length > 0 ? ` Did you mean ${suggestions.map((s) => p.paint('bold', s)).join(' or ')}?` : ''}\n`,
  )
  io.stderr.write(`${p.paint('bold', 'Next:')} Run '${bin} --help' for the list of commands.\n`)
  io.exitNow(ExitCode.Usage)
}

export default hook
