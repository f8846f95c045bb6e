// Colour only where a person reads it: a TTY, no NO_COLOR (https://no-color.org), no TERM=dumb.
// FORCE_COLOR turns it on regardless (useful for CI logs that render ANSI).

function enabledFor(stream: NodeJS.WriteStream): boolean {
  const env = process.env
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

export function painterFor(stream: NodeJS.WriteStream): Painter {
  const enabled = enabledFor(stream)
  return {
    enabled,
    paint(style, text) {
      if (!enabled) return text
      const styles = Array.isArray(style) ? style : [style]
      return styles.reduce((t, s) => `\u001B[${CODES[s][0]}m${t}\u001B[${CODES[s][1]}m`, text)
    },
  }
}

export const stdoutPainter = (): Painter => painterFor(process.stdout)
export const stderrPainter = (): Painter => painterFor(process.stderr)
