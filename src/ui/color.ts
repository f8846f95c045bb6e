// Colour only where a person reads it: a TTY, no NO_COLOR (https://no-color.org), no TERM=dumb.
// FORCE_COLOR turns it on regardless (useful for CI logs that render ANSI).

import type {Io, IoOutput} from './io.js'

function enabledFor(stream: IoOutput, env: Io['env']): boolean {
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false
  if (env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== '0' && env.FORCE_COLOR !== 'false') return true
  if (env.TERM === 'dumb') return false
  return stream.isTTY === true
}

const CODES = {
  bold: [1, 22],
  dim: [2, 22],
  red: [31, 39],
  green: [32, 39],
  yellow: [33, 39],
  blue: [34, 39],
  cyan: [36, 39],
  gray: [90, 39],
} as const
export type Style = keyof typeof CODES

export interface Painter {
  enabled: boolean
  paint(style: Style | Style[], text: string): string
}

export function painterFor(stream: IoOutput, env: Io['env']): Painter {
  const enabled = enabledFor(stream, env)
  return {
    enabled,
    paint(style, text) {
      if (!enabled) return text
      const styles = Array.isArray(style) ? style : [style]
      return styles.reduce((t, s) => `\u001B[${CODES[s][0]}m${t}\u001B[${CODES[s][1]}m`, text)
    },
  }
}

export const stdoutPainter = (io: Io): Painter => painterFor(io.stdout, io.env)
export const stderrPainter = (io: Io): Painter => painterFor(io.stderr, io.env)
