// Value formats shared by the VirtualService → HTTPRoute conversion: Go durations (what Istio's CRD
// accepts) to Gateway API durations, the HTTPRoute CRD's string patterns and CEL path rules, RE2
// escaping, mirror percentages.
import {nodeCrypto} from '../canonical.js'

const NS_PER: Record<string, bigint> = {
  ns: 1n,
  us: 1_000n,
  µs: 1_000n, // U+00B5
  μs: 1_000n, // U+03BC
  ms: 1_000_000n,
  s: 1_000_000_000n,
  m: 60_000_000_000n,
  h: 3_600_000_000_000n,
}

// Longest units first so that "ms" is not read as "m" followed by garbage.
const DURATION_ELEMENT = /^([0-9]*)(?:\.([0-9]*))?(ns|us|µs|μs|ms|h|m|s)/

/**
 * Go's time.ParseDuration, which Istio's CRD validation applies to VirtualService durations
 * ("0.5s", "1m30s", "250ms", "1h"). Exact, in nanoseconds; fractions are truncated as Go does.
 */
export function parseGoDuration(text: string): bigint | undefined {
  let s = text.trim()
  let negative = false
  if (s.startsWith('-') || s.startsWith('+')) {
    negative = s.startsWith('-')
    s = s.slice(1)
  }
  if (s === '0') return 0n
  if (s === '') return undefined
  let total = 0n
  while (s.length > 0) {
    const m = DURATION_ELEMENT.exec(s)
    if (!m) return undefined
    const [element, whole = '', fraction = ''] = m
    if (whole === '' && fraction === '') return undefined
    const unit = NS_PER[m[3]!]!
    total += BigInt(whole || '0') * unit
    if (fraction !== '') total += (BigInt(fraction) * unit) / 10n ** BigInt(fraction.length)
    s = s.slice(element.length)
  }
  return negative ? -total : total
}

/**
 * A Gateway API Duration (GEP-2257: `^([0-9]{1,5}(h|m|s|ms)){1,4}$`) for an exact number of
 * nanoseconds, or undefined when it has no such form (negative, finer than a millisecond, or
 * more than 99999 hours).
 */
export function gatewayDuration(nanoseconds: bigint): string | undefined {
  if (nanoseconds < 0n || nanoseconds % 1_000_000n !== 0n) return undefined
  let ms = nanoseconds / 1_000_000n
  if (ms === 0n) return '0s'
  const hours = ms / 3_600_000n
  ms %= 3_600_000n
  const minutes = ms / 60_000n
  ms %= 60_000n
  const seconds = ms / 1_000n
  ms %= 1_000n
  if (hours > 99_999n) return undefined
  const parts: string[] = []
  if (hours > 0n) parts.push(`${hours}h`)
  if (minutes > 0n) parts.push(`${minutes}m`)
  if (seconds > 0n) parts.push(`${seconds}s`)
  if (ms > 0n) parts.push(`${ms}ms`)
  return parts.join('')
}

/** HTTPHeaderName (also used for query parameter names): RFC 7230 token characters. */
export const HEADER_NAME = /^[A-Za-z0-9!#$%&'*+\-.^_`|~]+$/

/** PreciseHostname / DNS-1123 subdomain (lowercase), as HTTPRoute filters' `hostname` requires. */
export const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/

/** DNS-1035 label: what a Service name must be. */
export const DNS_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/

const PATH_CHARACTERS = /^(?:[-A-Za-z0-9/._~!$&'()*+,;=:@]|[%][0-9a-fA-F]{2})+$/

/**
 * Why a value cannot be an Exact or PathPrefix path of an HTTPRouteMatch (the CEL rules on
 * `spec.rules[].matches[].path` and its maxLength), or undefined when it can.
 */
export function pathValueProblem(value: string): string | undefined {
  if (!value.startsWith('/')) return 'must be an absolute path starting with "/"'
  if (value.length > 1024) return 'longer than 1024 characters'
  for (const bad of ['//', '/./', '/../', '%2f', '%2F', '#'])
    if (value.includes(bad)) return `must not contain "${bad}"`
  for (const bad of ['/..', '/.']) if (value.endsWith(bad)) return `must not end with "${bad}"`
  if (!PATH_CHARACTERS.test(value)) return 'contains characters outside RFC 3986 path characters'
  return undefined
}

/** `value` quoted for RE2 so that it matches itself literally. */
export function escapeRe2(value: string): string {
  return value.replace(/[\\.+*?()|[\]{}^$]/g, '\\$&')
}

/**
 * Whether `value` fully matches the RE2 expression `pattern` (Envoy's safe_regex matches the whole
 * string), or undefined when the pattern is not also a valid JavaScript expression (RE2-only syntax
 * such as `(?i)` or `\z`): then the caller cannot decide.
 */
export function regexFullMatch(pattern: string, value: string): boolean | undefined {
  try {
    return new RegExp(`^(?:${pattern})$`, 'u').test(value)
  } catch {
    return undefined
  }
}

function gcd(a: number, b: number): number {
  return b === 0 ? a : gcd(b, a % b)
}

/**
 * RequestMirror `percent` or `fraction` for an Istio mirror percentage (a double in [0, 100]).
 * Istio hands Envoy `value × 10000` per million, so a fraction over 1,000,000 is exact for it.
 */
export function mirrorShare(value: number): {percent: number} | {fraction: {numerator: number; denominator: number}} {
  if (Number.isInteger(value)) return {percent: value}
  const numerator = Math.round(value * 10_000)
  const denominator = 1_000_000
  const d = gcd(numerator, denominator)
  return {fraction: {numerator: numerator / d, denominator: denominator / d}}
}

/** First `length` hex characters of sha256(parts): a short deterministic disambiguator for names. */
export function shortHash(parts: string[], length = 8): string {
  return nodeCrypto().createHash('sha256').update(parts.join('\u0000')).digest('hex').slice(0, length)
}

/**
 * `base` joined with `suffixes` by "-", cut to `max` characters; a cut name ends in a hash of the
 * full one so that two long names do not collide. `base` is assumed to be a valid name.
 */
export function joinName(max: number, base: string, ...suffixes: string[]): string {
  const full = [base, ...suffixes].join('-')
  if (full.length <= max) return full
  const hash = shortHash([full])
  const head = full.slice(0, max - hash.length - 1).replace(/[-.]+$/, '')
  return `${head}-${hash}`
}
