// RE2 (Go regexp) patterns as used by OpenAPI `pattern` and CEL `matches()`, translated to
// JavaScript RegExp. RE2 syntax JS lacks: leading flag groups `(?i)`, scoped flags `(?i:...)`,
// `\z`, `\A`, `\Q...\E`, POSIX classes `[[:alpha:]]`, `(?P<name>...)`, `\pL`.
// Both engines search (unanchored) unless the pattern anchors itself.

const POSIX: Record<string, string> = {
  alnum: '0-9A-Za-z',
  alpha: 'A-Za-z',
  ascii: '\\x00-\\x7F',
  blank: '\\t ',
  cntrl: '\\x00-\\x1F\\x7F',
  digit: '0-9',
  graph: '!-~',
  lower: 'a-z',
  print: ' -~',
  punct: '!-\\/:-@\\[-`{-~',
  space: '\\t\\n\\v\\f\\r ',
  upper: 'A-Z',
  word: '0-9A-Za-z_',
  xdigit: '0-9A-Fa-f',
}

const cache = new Map<string, RegExp>()

export class Re2SyntaxError extends Error {}

/** Compiles an RE2 pattern; throws Re2SyntaxError when neither translation compiles. */
export function compileRe2(pattern: string): RegExp {
  const hit = cache.get(pattern)
  if (hit) return hit
  let src = pattern
  let flags = ''
  const lead = /^\(\?([imsU]+)\)/.exec(src)
  if (lead) {
    src = src.slice(lead[0].length)
    if (lead[1]!.includes('i')) flags += 'i'
    if (lead[1]!.includes('m')) flags += 'm'
    if (lead[1]!.includes('s')) flags += 's'
  }
  const translated = translate(src)
  let re: RegExp | undefined
  for (const f of [flags + 'u', flags]) {
    try {
      re = new RegExp(translated, f)
      break
    } catch {
      // try the next flag set: 'u' rejects identity escapes RE2 allows, such as \@
    }
  }
  if (!re) throw new Re2SyntaxError(`error parsing regexp: invalid syntax: \`${pattern}\``)
  cache.set(pattern, re)
  return re
}

export function re2Test(pattern: string, value: string): boolean {
  return compileRe2(pattern).test(value)
}

function translate(src: string): string {
  let out = ''
  let i = 0
  let inClass = false
  // Case folding by group level: `(?i)` turns it on for the rest of the enclosing group,
  // `(?i:...)` for that group only. Groups inherit their parent's state.
  const folds: boolean[] = [false]
  const folding = () => folds[folds.length - 1]!
  while (i < src.length) {
    const c = src[i]!
    if (c === '\\') {
      const n = src[i + 1]
      if (n === undefined) {
        out += '\\\\'
        i++
        continue
      }
      if (!inClass && n === 'z') {
        out += '$'
        i += 2
        continue
      }
      if (!inClass && n === 'A') {
        out += '^'
        i += 2
        continue
      }
      if (n === 'Q') {
        const end = src.indexOf('\\E', i + 2)
        const lit = end === -1 ? src.slice(i + 2) : src.slice(i + 2, end)
        out += lit.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&')
        i = end === -1 ? src.length : end + 2
        continue
      }
      if ((n === 'p' || n === 'P') && src[i + 2] !== '{') {
        out += `\\${n}{${src[i + 2]}}`
        i += 3
        continue
      }
      out += c + n
      i += 2
      continue
    }
    if (inClass) {
      if (c === '[' && src[i + 1] === ':') {
        const end = src.indexOf(':]', i + 2)
        if (end !== -1) {
          const name = src.slice(i + 2, end)
          const cls = POSIX[name]
          if (cls !== undefined) {
            out += cls
            i = end + 2
            continue
          }
        }
      }
      if (c === ']') inClass = false
      else if (c === '[') {
        out += '\\['
        i++
        continue
      } else if (folding() && /[a-zA-Z]/.test(c)) {
        if (src[i + 1] === '-' && /[a-zA-Z]/.test(src[i + 2] ?? '')) {
          const hi = src[i + 2]!
          out += `${c.toLowerCase()}-${hi.toLowerCase()}${c.toUpperCase()}-${hi.toUpperCase()}`
          i += 3
          continue
        }
        out += c.toLowerCase() + c.toUpperCase()
        i++
        continue
      }
      out += c
      i++
      continue
    }
    if (c === '[') {
      inClass = true
      out += c
      i++
      if (src[i] === '^') {
        out += '^'
        i++
      }
      if (src[i] === ']') {
        out += '\\]'
        i++
      }
      continue
    }
    if (c === '(') {
      const flagsOnly = /^\(\?([imsU-]+)\)/.exec(src.slice(i))
      if (flagsOnly) {
        const on = flagsOnly[1]!.split('-')[0]!
        const off = flagsOnly[1]!.split('-')[1] ?? ''
        if (on.includes('i')) folds[folds.length - 1] = true
        if (off.includes('i')) folds[folds.length - 1] = false
        i += flagsOnly[0].length
        continue
      }
      if (src.startsWith('(?P<', i)) {
        out += '(?<'
        i += 4
        folds.push(folding())
        continue
      }
      const scoped = /^\(\?([imsU-]+):/.exec(src.slice(i))
      if (scoped) {
        out += '(?:'
        i += scoped[0].length
        const [on = '', off = ''] = scoped[1]!.split('-')
        folds.push(on.includes('i') ? true : off.includes('i') ? false : folding())
        continue
      }
      folds.push(folding())
      out += c
      i++
      continue
    }
    if (c === ')') {
      if (folds.length > 1) folds.pop()
      out += c
      i++
      continue
    }
    if (folding() && /[a-zA-Z]/.test(c)) {
      out += `[${c.toLowerCase()}${c.toUpperCase()}]`
      i++
      continue
    }
    out += c
    i++
  }
  return out
}
