// The Kubernetes CEL libraries (k8s.io/apiserver/pkg/cel/library and the cel-go extensions
// Kubernetes enables) registered on a @marcbachmann/cel-js Environment: regex, lists,
// strings, URLs, IP addresses, CIDRs, quantities, formats and sets. Function names, receivers
// and error texts follow the Go implementations.
import {Environment, Optional} from '@marcbachmann/cel-js'
import {compileRe2} from './re2.js'
import {isDNS1035Label, isDNS1123Label, isDNS1123Subdomain, isQualifiedName, isValidLabelValue} from '../meta/names.js'

class CelEvalError extends Error {}

function fail(message: string): never {
  throw new CelEvalError(message)
}

// ---------------------------------------------------------------------------------------
// URLs (library/urls.go): Go's url.ParseRequestURI to accept, url.Parse to split.

export class CelURL {
  constructor(
    readonly scheme: string,
    readonly opaque: string,
    readonly host: string,
    readonly path: string,
    readonly rawQuery: string,
  ) {}
}

function goGetScheme(raw: string): [string, string] {
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i]!
    if (/[a-zA-Z]/.test(c)) continue
    if (/[0-9+\-.]/.test(c)) {
      if (i === 0) return ['', raw]
      continue
    }
    if (c === ':') {
      if (i === 0) fail('missing protocol scheme')
      return [raw.slice(0, i), raw.slice(i + 1)]
    }
    return ['', raw]
  }
  return ['', raw]
}

function goParseURL(raw: string, viaRequest: boolean): CelURL {
  if (/[\x00-\x1f\x7f]/.test(raw)) fail(`parse ${JSON.stringify(raw)}: net/url: invalid control character in URL`)
  if (raw === '' && viaRequest) fail(`parse "": empty url`)
  let rest: string
  let fragmentless = raw
  if (!viaRequest) {
    const hash = raw.indexOf('#')
    if (hash >= 0) fragmentless = raw.slice(0, hash)
  }
  if (fragmentless === '*') return new CelURL('', '', '', '*', '')
  const [schemeRaw, afterScheme] = goGetScheme(fragmentless)
  const scheme = schemeRaw.toLowerCase()
  rest = afterScheme
  let rawQuery = ''
  if (rest.endsWith('?') && rest.split('?').length === 2) {
    rest = rest.slice(0, -1)
  } else {
    const q = rest.indexOf('?')
    if (q >= 0) {
      rawQuery = rest.slice(q + 1)
      rest = rest.slice(0, q)
    }
  }
  if (!rest.startsWith('/')) {
    if (scheme !== '') return new CelURL(scheme, rest, '', '', rawQuery)
    if (viaRequest) fail(`parse ${JSON.stringify(raw)}: invalid URI for request`)
    const colon = rest.indexOf(':')
    const slash = rest.indexOf('/')
    if (colon >= 0 && (slash < 0 || colon < slash))
      fail(`parse ${JSON.stringify(raw)}: first path segment in URL cannot contain colon`)
  }
  let host = ''
  if ((scheme !== '' || !viaRequest) && rest.startsWith('//') && !rest.startsWith('///')) {
    const after = rest.slice(2)
    const slash = after.indexOf('/')
    const authority = slash >= 0 ? after.slice(0, slash) : after
    rest = slash >= 0 ? after.slice(slash) : ''
    const at = authority.lastIndexOf('@')
    host = at >= 0 ? authority.slice(at + 1) : authority
    if (at >= 0) {
      const userinfo = authority.slice(0, at)
      if (/[^A-Za-z0-9\-._:~!$&'()*+,;=%@]/.test(userinfo))
        fail(`parse ${JSON.stringify(raw)}: net/url: invalid userinfo`)
      decodePath(raw, userinfo)
    }
    validateHost(raw, host)
  } else if (scheme !== '' && rest.startsWith('///')) {
    rest = rest.slice(2)
  }
  return new CelURL(scheme, '', host, decodePath(raw, rest), rawQuery)
}

function validateHost(raw: string, host: string): void {
  if (host.startsWith('[')) {
    const end = host.lastIndexOf(']')
    if (end < 0) fail(`parse ${JSON.stringify(raw)}: missing ']' in host`)
    const port = host.slice(end + 1)
    if (port !== '' && !/^:\d*$/.test(port))
      fail(`parse ${JSON.stringify(raw)}: invalid port ${JSON.stringify(port)} after host`)
    return
  }
  const colon = host.lastIndexOf(':')
  if (colon >= 0) {
    const port = host.slice(colon)
    if (!/^:\d*$/.test(port)) fail(`parse ${JSON.stringify(raw)}: invalid port ${JSON.stringify(port)} after host`)
  }
  if (/[^a-zA-Z0-9\-._~!$&'()*+,;=:%]/.test(host)) fail(`parse ${JSON.stringify(raw)}: invalid character in host name`)
}

function decodePath(raw: string, p: string): string {
  try {
    return decodeURIComponent(p)
  } catch {
    fail(`parse ${JSON.stringify(raw)}: invalid URL escape`)
  }
}

function urlHostname(u: CelURL): string {
  const h = u.host
  if (h.startsWith('[')) return h.slice(1, h.indexOf(']'))
  const colon = h.lastIndexOf(':')
  return colon >= 0 ? h.slice(0, colon) : h
}

function urlPort(u: CelURL): string {
  const h = u.host
  const start = h.startsWith('[') ? h.indexOf(']') + 1 : 0
  const colon = h.indexOf(':', start)
  return colon >= 0 ? h.slice(colon + 1) : ''
}

function parseQuery(q: string): Record<string, string[]> {
  const out: Record<string, string[]> = {}
  if (!q) return out
  for (const part of q.split('&')) {
    if (!part || part.includes(';')) continue
    const eq = part.indexOf('=')
    const k = decodeURIComponent((eq >= 0 ? part.slice(0, eq) : part).replace(/\+/g, ' '))
    const v = decodeURIComponent((eq >= 0 ? part.slice(eq + 1) : '').replace(/\+/g, ' '))
    ;(out[k] ??= []).push(v)
  }
  return out
}

export function isCelURL(s: string): boolean {
  try {
    goParseURL(s, true)
    return true
  } catch {
    return false
  }
}

// ---------------------------------------------------------------------------------------
// IP addresses and CIDRs (library/ip.go, library/cidr.go over net/netip)

export class CelIP {
  constructor(readonly bytes: number[]) {}
  get family(): 4 | 6 {
    return this.bytes.length === 4 ? 4 : 6
  }
  toString(): string {
    return formatIP(this.bytes)
  }
}

export class CelCIDR {
  constructor(
    readonly ip: CelIP,
    readonly bits: number,
  ) {}
  toString(): string {
    return `${this.ip.toString()}/${this.bits}`
  }
}

function parseIPv4(s: string): number[] | undefined {
  const parts = s.split('.')
  if (parts.length !== 4) return undefined
  const out: number[] = []
  for (const p of parts) {
    if (!/^\d{1,3}$/.test(p) || (p.length > 1 && p.startsWith('0'))) return undefined
    const n = Number(p)
    if (n > 255) return undefined
    out.push(n)
  }
  return out
}

function parseIPv6(s: string): number[] | undefined {
  if (s.includes('%')) return undefined
  let tail: number[] = []
  let text = s
  const lastColon = text.lastIndexOf(':')
  if (text.slice(lastColon + 1).includes('.')) {
    const v4 = parseIPv4(text.slice(lastColon + 1))
    if (!v4) return undefined
    tail = v4
    text = text.slice(0, lastColon + 1) + '0:0'
  }
  const halves = text.split('::')
  if (halves.length > 2) return undefined
  const parseGroups = (h: string): number[] | undefined => {
    if (h === '') return []
    const groups = h.split(':')
    const out: number[] = []
    for (const g of groups) {
      if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return undefined
      out.push(parseInt(g, 16))
    }
    return out
  }
  const head = parseGroups(halves[0]!)
  const rest = halves.length === 2 ? parseGroups(halves[1]!) : []
  if (!head || !rest) return undefined
  let groups: number[]
  if (halves.length === 2) {
    const fill = 8 - head.length - rest.length
    if (fill < 1) return undefined
    groups = [...head, ...new Array<number>(fill).fill(0), ...rest]
  } else {
    groups = head
  }
  if (groups.length !== 8) return undefined
  const bytes: number[] = []
  for (const g of groups) bytes.push(g >> 8, g & 0xff)
  if (tail.length) bytes.splice(12, 4, ...tail)
  return bytes
}

function formatIP(b: number[]): string {
  if (b.length === 4) return b.join('.')
  const groups: number[] = []
  for (let i = 0; i < 16; i += 2) groups.push((b[i]! << 8) | b[i + 1]!)
  let bestStart = -1
  let bestLen = 0
  for (let i = 0; i < 8;) {
    if (groups[i] !== 0) {
      i++
      continue
    }
    let j = i
    while (j < 8 && groups[j] === 0) j++
    if (j - i > bestLen && j - i >= 2) {
      bestStart = i
      bestLen = j - i
    }
    i = j
  }
  const hex = groups.map((g) => g.toString(16))
  if (bestStart < 0) return hex.join(':')
  return `${hex.slice(0, bestStart).join(':')}::${hex.slice(bestStart + bestLen).join(':')}`
}

function parseIPStrict(s: string): CelIP {
  if (s.includes('%')) fail('IP address with zone value is not allowed')
  const v4 = parseIPv4(s)
  if (v4) return new CelIP(v4)
  const v6 = s.includes(':') ? parseIPv6(s) : undefined
  if (!v6)
    fail(
      `IP Address ${JSON.stringify(s)} parse error during conversion from string: ParseAddr(${JSON.stringify(s)}): unable to parse IP`,
    )
  if (v6.slice(0, 10).every((x) => x === 0) && v6[10] === 0xff && v6[11] === 0xff)
    fail('IPv4-mapped IPv6 address is not allowed')
  return new CelIP(v6)
}

function parseCIDRStrict(s: string): CelCIDR {
  const slash = s.indexOf('/')
  if (slash < 0)
    fail(`network address parse error during conversion from string: netip.ParsePrefix(${JSON.stringify(s)}): no '/'`)
  const ip = parseIPStrict(s.slice(0, slash))
  const bitsText = s.slice(slash + 1)
  const max = ip.family === 4 ? 32 : 128
  if (!/^\d+$/.test(bitsText) || Number(bitsText) > max || (bitsText.length > 1 && bitsText.startsWith('0')))
    fail(
      `network address parse error during conversion from string: netip.ParsePrefix(${JSON.stringify(s)}): bad bits after slash: ${JSON.stringify(bitsText)}`,
    )
  return new CelCIDR(ip, Number(bitsText))
}

function maskBytes(b: number[], bits: number): number[] {
  return b.map((x, i) => {
    const start = i * 8
    if (bits >= start + 8) return x
    if (bits <= start) return 0
    return x & (0xff << (8 - (bits - start)))
  })
}

function cidrContainsIP(c: CelCIDR, ip: CelIP): boolean {
  if (c.ip.family !== ip.family) return false
  const a = maskBytes(c.ip.bytes, c.bits)
  const b = maskBytes(ip.bytes, c.bits)
  return a.every((x, i) => x === b[i])
}

const inRange = (b: number[], prefix: number[], bits: number) =>
  maskBytes(b, bits).every((x, i) => i >= prefix.length || x === (prefix[i] ?? 0))

function ipIsLoopback(ip: CelIP): boolean {
  return ip.family === 4 ? ip.bytes[0] === 127 : ip.bytes.slice(0, 15).every((x) => x === 0) && ip.bytes[15] === 1
}
function ipIsUnspecified(ip: CelIP): boolean {
  return ip.bytes.every((x) => x === 0)
}
function ipIsMulticast(ip: CelIP): boolean {
  return ip.family === 4 ? (ip.bytes[0]! & 0xf0) === 0xe0 : ip.bytes[0] === 0xff
}
function ipIsLinkLocalMulticast(ip: CelIP): boolean {
  return ip.family === 4 ? inRange(ip.bytes, [224, 0, 0], 24) : ip.bytes[0] === 0xff && (ip.bytes[1]! & 0x0f) === 0x02
}
function ipIsLinkLocalUnicast(ip: CelIP): boolean {
  return ip.family === 4 ? inRange(ip.bytes, [169, 254], 16) : ip.bytes[0] === 0xfe && (ip.bytes[1]! & 0xc0) === 0x80
}
function ipIsGlobalUnicast(ip: CelIP): boolean {
  if (ip.family === 4 && ip.bytes.every((x) => x === 255)) return false
  return !ipIsUnspecified(ip) && !ipIsLoopback(ip) && !ipIsMulticast(ip) && !ipIsLinkLocalUnicast(ip)
}

// ---------------------------------------------------------------------------------------
// Quantities (library/quantity.go over resource.Quantity), kept as exact rationals.

export class CelQuantity {
  constructor(
    readonly num: bigint,
    readonly den: bigint,
  ) {}
}

const BINARY_SUFFIX: Record<string, bigint> = {
  Ki: 1n << 10n,
  Mi: 1n << 20n,
  Gi: 1n << 30n,
  Ti: 1n << 40n,
  Pi: 1n << 50n,
  Ei: 1n << 60n,
}
const DECIMAL_SUFFIX: Record<string, number> = {n: -9, u: -6, m: -3, '': 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18}

function gcd(a: bigint, b: bigint): bigint {
  a = a < 0n ? -a : a
  b = b < 0n ? -b : b
  while (b) [a, b] = [b, a % b]
  return a || 1n
}

function makeQuantity(num: bigint, den: bigint): CelQuantity {
  if (den < 0n) [num, den] = [-num, -den]
  const g = gcd(num, den)
  return new CelQuantity(num / g, den / g)
}

export function parseQuantity(s: string): CelQuantity | undefined {
  const m = /^([+-]?)(\d+(?:\.\d*)?|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$/.exec(s)
  if (!m) return undefined
  const [, sign, digits, suffix = ''] = m
  const [intPart, frac = ''] = digits!.split('.')
  let num = BigInt((intPart || '0') + frac)
  let den = 10n ** BigInt(frac.length)
  if (suffix in BINARY_SUFFIX) num *= BINARY_SUFFIX[suffix]!
  else {
    const exp = suffix in DECIMAL_SUFFIX ? DECIMAL_SUFFIX[suffix]! : Number(suffix.slice(1))
    if (exp >= 0) num *= 10n ** BigInt(exp)
    else den *= 10n ** BigInt(-exp)
  }
  if (sign === '-') num = -num
  return makeQuantity(num, den)
}

function quantityCompare(a: CelQuantity, b: CelQuantity): number {
  const l = a.num * b.den
  const r = b.num * a.den
  return l < r ? -1 : l > r ? 1 : 0
}

const INT64_MAX = (1n << 63n) - 1n
const INT64_MIN = -(1n << 63n)

// ---------------------------------------------------------------------------------------
// Named formats (library/format.go)

const NAMED_FORMATS: Record<string, (s: string) => string[]> = {
  dns1123Label: isDNS1123Label,
  dns1123Subdomain: isDNS1123Subdomain,
  dns1035Label: isDNS1035Label,
  qualifiedName: isQualifiedName,
  dns1123LabelPrefix: (s) => isDNS1123Label(s.endsWith('-') ? s.slice(0, -1) : s),
  dns1123SubdomainPrefix: (s) => isDNS1123Subdomain(s.endsWith('-') ? s.slice(0, -1) : s),
  dns1035LabelPrefix: (s) => isDNS1035Label(s.endsWith('-') ? s.slice(0, -1) : s),
  labelValue: isValidLabelValue,
  uri: (s) => (isCelURL(s) ? [] : ['invalid URI']),
  uuid: (s) =>
    /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(s) ? [] : ['does not match the UUID format'],
  byte: (s) => (/^[A-Za-z0-9+/]*={0,2}$/.test(s) && s.length % 4 === 0 ? [] : ['invalid base64']),
  date: (s) => (/^\d{4}-\d{2}-\d{2}$/.test(s) && !Number.isNaN(Date.parse(s)) ? [] : ['invalid date']),
  datetime: (s) => (!Number.isNaN(Date.parse(s)) && /^\d{4}-\d{2}-\d{2}T/.test(s) ? [] : ['invalid datetime']),
}

export class CelFormat {
  constructor(readonly name: string) {}
}
class FormatLibrary {}
class SetsLibrary {}
class StringsLibrary {}
class IPLibrary {}

// ---------------------------------------------------------------------------------------

function celEquals(a: unknown, b: unknown): boolean {
  if (typeof a === 'bigint' || typeof b === 'bigint' || typeof a === 'number' || typeof b === 'number')
    return Number(a) === Number(b)
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => celEquals(x, b[i]))
  if (a && b && typeof a === 'object' && typeof b === 'object') {
    const ka = Object.keys(a)
    const kb = Object.keys(b)
    return ka.length === kb.length && ka.every((k) => celEquals((a as any)[k], (b as any)[k]))
  }
  return a === b
}

function celCompare(a: unknown, b: unknown): number {
  if (typeof a === 'string' && typeof b === 'string') return a < b ? -1 : a > b ? 1 : 0
  if ((typeof a === 'bigint' || typeof a === 'number') && (typeof b === 'bigint' || typeof b === 'number')) {
    if (typeof a === 'bigint' && typeof b === 'bigint') return a < b ? -1 : a > b ? 1 : 0
    return Number(a) < Number(b) ? -1 : Number(a) > Number(b) ? 1 : 0
  }
  if (typeof a === 'boolean' && typeof b === 'boolean') return Number(a) - Number(b)
  fail('no such overload')
}

function goFormat(format: string, args: unknown[]): string {
  let i = 0
  return format.replace(/%(\.\d+)?([sdfeEbxXo%])/g, (_m, prec: string | undefined, verb: string) => {
    if (verb === '%') return '%'
    if (i >= args.length) fail(`index ${i} out of range`)
    const a = args[i++]
    const p = prec ? Number(prec.slice(1)) : undefined
    switch (verb) {
      case 's':
        return typeof a === 'string' ? a : Array.isArray(a) ? `[${a.map((x) => String(x)).join(', ')}]` : String(a)
      case 'd':
        if (typeof a !== 'bigint') fail('error during formatting: decimal clause can only be used on integers')
        return String(a)
      case 'f':
        return Number(a).toFixed(p ?? 6)
      case 'e':
      case 'E': {
        const s = Number(a)
          .toExponential(p ?? 6)
          .replace(/e([+-])(\d)$/, 'e$10$2')
        return verb === 'E' ? s.toUpperCase() : s
      }
      case 'b':
        return BigInt(a as bigint).toString(2)
      case 'o':
        return BigInt(a as bigint).toString(8)
      case 'x':
      case 'X': {
        const s = typeof a === 'string' ? Buffer.from(a).toString('hex') : BigInt(a as bigint).toString(16)
        return verb === 'X' ? s.toUpperCase() : s
      }
    }
    return ''
  })
}

/** Registers every library on `env`. Errors thrown at evaluation carry the Go-side message. */
export function registerKubernetesLibraries(env: Environment): void {
  const f = (sig: string, handler: (...args: any[]) => unknown) => env.registerFunction(sig, handler as any)

  // has() on a computed operand (see rewriteSource in cel.ts).
  f('__hasField(dyn, string): bool', (obj: unknown, field: string) => {
    if (obj instanceof Map) return obj.has(field)
    if (obj && typeof obj === 'object' && !Array.isArray(obj)) return Object.prototype.hasOwnProperty.call(obj, field)
    fail('no such overload')
  })

  // Regex (RE2 semantics; cel-js's own matches() uses JS syntax and is routed here instead).
  f('string.re2Matches(string): bool', (s: string, re: string) => compileRe2(re).test(s))
  f('re2Matches(string, string): bool', (s: string, re: string) => compileRe2(re).test(s))
  f('string.find(string): string', (s: string, re: string) => compileRe2(re).exec(s)?.[0] ?? '')
  f('string.findAll(string): list<string>', (s: string, re: string) =>
    [...s.matchAll(new RegExp(compileRe2(re).source, compileRe2(re).flags + 'g'))].map((m) => m[0]),
  )
  f('string.findAll(string, int): list<string>', (s: string, re: string, n: bigint) => {
    const all = [...s.matchAll(new RegExp(compileRe2(re).source, compileRe2(re).flags + 'g'))].map((m) => m[0])
    return n < 0n ? all : all.slice(0, Number(n))
  })

  // Strings (cel-go ext.Strings).
  f('string.charAt(int): string', (s: string, i: bigint) => {
    const chars = [...s]
    if (i < 0n || i > BigInt(chars.length)) fail(`index out of range: ${i}`)
    return chars[Number(i)] ?? ''
  })
  f('string.replace(string, string): string', (s: string, a: string, b: string) => s.split(a).join(b))
  f('string.replace(string, string, int): string', (s: string, a: string, b: string, n: bigint) => {
    if (n < 0n) return s.split(a).join(b)
    let out = s
    let from = 0
    for (let k = 0n; k < n; k++) {
      const idx = out.indexOf(a, from)
      if (idx < 0) break
      out = out.slice(0, idx) + b + out.slice(idx + a.length)
      from = idx + b.length + (a === '' ? 1 : 0)
    }
    return out
  })
  f('string.reverse(): string', (s: string) => [...s].reverse().join(''))
  f('string.format(list): string', (s: string, args: unknown[]) => goFormat(s, args))
  env.registerType('kubernetes.StringsLibrary', StringsLibrary as any)
  env.registerConstant('strings', 'kubernetes.StringsLibrary', new StringsLibrary())
  f('kubernetes.StringsLibrary.quote(string): string', (_l: unknown, s: string) => JSON.stringify(s))

  // Lists (library/lists.go and cel-go ext.Lists).
  f('list.isSorted(): bool', (l: unknown[]) => l.every((x, i) => i === 0 || celCompare(l[i - 1], x) <= 0))
  f('list.sum(): dyn', (l: unknown[]) => {
    if (l.length === 0) return 0n
    if (l.every((x) => typeof x === 'bigint')) return (l as bigint[]).reduce((a, b) => a + b, 0n)
    return l.reduce<number>((a, b) => a + Number(b), 0)
  })
  f('list.min(): dyn', (l: unknown[]) => {
    if (l.length === 0) fail('min called on empty list')
    return l.reduce((a, b) => (celCompare(b, a) < 0 ? b : a))
  })
  f('list.max(): dyn', (l: unknown[]) => {
    if (l.length === 0) fail('max called on empty list')
    return l.reduce((a, b) => (celCompare(b, a) > 0 ? b : a))
  })
  f('list.indexOf(dyn): int', (l: unknown[], v: unknown) => BigInt(l.findIndex((x) => celEquals(x, v))))
  f('list.lastIndexOf(dyn): int', (l: unknown[], v: unknown) => {
    for (let i = l.length - 1; i >= 0; i--) if (celEquals(l[i], v)) return BigInt(i)
    return -1n
  })
  f('list.slice(int, int): list', (l: unknown[], a: bigint, b: bigint) => {
    if (a < 0n || b < a || b > BigInt(l.length)) fail(`cannot slice(${a}, ${b}), invalid range`)
    return l.slice(Number(a), Number(b))
  })
  f('list.flatten(): list', (l: unknown[]) => l.flatMap((x) => (Array.isArray(x) ? x : [x])))
  f('list.distinct(): list', (l: unknown[]) => l.filter((x, i) => l.findIndex((y) => celEquals(x, y)) === i))
  f('list.sort(): list', (l: unknown[]) => [...l].sort(celCompare))
  f('list.reverse(): list', (l: unknown[]) => [...l].reverse())

  // Sets (cel-go ext.Sets).
  env.registerType('kubernetes.SetsLibrary', SetsLibrary as any)
  env.registerConstant('sets', 'kubernetes.SetsLibrary', new SetsLibrary())
  f('kubernetes.SetsLibrary.contains(list, list): bool', (_s: unknown, a: unknown[], b: unknown[]) =>
    b.every((x) => a.some((y) => celEquals(x, y))),
  )
  f(
    'kubernetes.SetsLibrary.equivalent(list, list): bool',
    (_s: unknown, a: unknown[], b: unknown[]) =>
      b.every((x) => a.some((y) => celEquals(x, y))) && a.every((x) => b.some((y) => celEquals(x, y))),
  )
  f('kubernetes.SetsLibrary.intersects(list, list): bool', (_s: unknown, a: unknown[], b: unknown[]) =>
    b.some((x) => a.some((y) => celEquals(x, y))),
  )

  // URLs.
  env.registerType('net.URL', CelURL as any)
  f('url(string): net.URL', (s: string) => {
    try {
      goParseURL(s, true)
    } catch (e) {
      fail(`URL parse error during conversion from string: ${(e as Error).message}`)
    }
    return goParseURL(s, false)
  })
  f('isURL(string): bool', (s: string) => isCelURL(s))
  f('net.URL.getScheme(): string', (u: CelURL) => u.scheme)
  f('net.URL.getHost(): string', (u: CelURL) => u.host)
  f('net.URL.getHostname(): string', (u: CelURL) => urlHostname(u))
  f('net.URL.getPort(): string', (u: CelURL) => urlPort(u))
  f('net.URL.getEscapedPath(): string', (u: CelURL) => encodeURI(u.path).replace(/%25([0-9A-Fa-f]{2})/g, '%$1'))
  f('net.URL.getQuery(): map<string, list<string>>', (u: CelURL) => parseQuery(u.rawQuery))

  // IPs and CIDRs.
  env.registerType('net.IP', CelIP as any)
  env.registerType('net.CIDR', CelCIDR as any)
  f('ip(string): net.IP', (s: string) => parseIPStrict(s))
  f('isIP(string): bool', (s: string) => {
    try {
      parseIPStrict(s)
      return true
    } catch {
      return false
    }
  })
  f('net.IP.family(): int', (ip: CelIP) => BigInt(ip.family))
  f('net.IP.isUnspecified(): bool', ipIsUnspecified)
  f('net.IP.isLoopback(): bool', ipIsLoopback)
  f('net.IP.isLinkLocalMulticast(): bool', ipIsLinkLocalMulticast)
  f('net.IP.isLinkLocalUnicast(): bool', ipIsLinkLocalUnicast)
  f('net.IP.isGlobalUnicast(): bool', ipIsGlobalUnicast)
  env.registerType('kubernetes.IPLibrary', IPLibrary as any)
  env.registerConstant('ip', 'kubernetes.IPLibrary', new IPLibrary())
  f('kubernetes.IPLibrary.isCanonical(string): bool', (_l: unknown, s: string) => parseIPStrict(s).toString() === s)
  f('string(net.IP): string', (ip: CelIP) => ip.toString())
  f('cidr(string): net.CIDR', (s: string) => parseCIDRStrict(s))
  f('isCIDR(string): bool', (s: string) => {
    try {
      parseCIDRStrict(s)
      return true
    } catch {
      return false
    }
  })
  f('net.CIDR.containsIP(net.IP): bool', (c: CelCIDR, ip: CelIP) => cidrContainsIP(c, ip))
  f('net.CIDR.containsIP(string): bool', (c: CelCIDR, s: string) => cidrContainsIP(c, parseIPStrict(s)))
  f('net.CIDR.containsCIDR(net.CIDR): bool', (c: CelCIDR, o: CelCIDR) => o.bits >= c.bits && cidrContainsIP(c, o.ip))
  f('net.CIDR.containsCIDR(string): bool', (c: CelCIDR, s: string) => {
    const o = parseCIDRStrict(s)
    return o.bits >= c.bits && cidrContainsIP(c, o.ip)
  })
  f('net.CIDR.ip(): net.IP', (c: CelCIDR) => c.ip)
  f('net.CIDR.masked(): net.CIDR', (c: CelCIDR) => new CelCIDR(new CelIP(maskBytes(c.ip.bytes, c.bits)), c.bits))
  f('net.CIDR.prefixLength(): int', (c: CelCIDR) => BigInt(c.bits))
  f('string(net.CIDR): string', (c: CelCIDR) => c.toString())

  // Quantities.
  env.registerType('kubernetes.Quantity', CelQuantity as any)
  const toQ = (v: CelQuantity | bigint) => (v instanceof CelQuantity ? v : new CelQuantity(v, 1n))
  f(
    'quantity(string): kubernetes.Quantity',
    (s: string) =>
      parseQuantity(s) ??
      fail("quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"),
  )
  f('isQuantity(string): bool', (s: string) => parseQuantity(s) !== undefined)
  f('kubernetes.Quantity.sign(): int', (q: CelQuantity) => BigInt(q.num > 0n ? 1 : q.num < 0n ? -1 : 0))
  f(
    'kubernetes.Quantity.isInteger(): bool',
    (q: CelQuantity) => q.den === 1n && q.num <= INT64_MAX && q.num >= INT64_MIN,
  )
  f('kubernetes.Quantity.asInteger(): int', (q: CelQuantity) => {
    if (q.den !== 1n || q.num > INT64_MAX || q.num < INT64_MIN) fail('cannot convert value to integer')
    return q.num
  })
  f('kubernetes.Quantity.asApproximateFloat(): double', (q: CelQuantity) => Number(q.num) / Number(q.den))
  f('kubernetes.Quantity.add(kubernetes.Quantity): kubernetes.Quantity', (a: CelQuantity, b: CelQuantity) =>
    makeQuantity(a.num * b.den + b.num * a.den, a.den * b.den),
  )
  f('kubernetes.Quantity.add(int): kubernetes.Quantity', (a: CelQuantity, b: bigint) =>
    makeQuantity(a.num + b * a.den, a.den),
  )
  f('kubernetes.Quantity.sub(kubernetes.Quantity): kubernetes.Quantity', (a: CelQuantity, b: CelQuantity) =>
    makeQuantity(a.num * b.den - b.num * a.den, a.den * b.den),
  )
  f('kubernetes.Quantity.sub(int): kubernetes.Quantity', (a: CelQuantity, b: bigint) =>
    makeQuantity(a.num - b * a.den, a.den),
  )
  f(
    'kubernetes.Quantity.isGreaterThan(kubernetes.Quantity): bool',
    (a: CelQuantity, b: CelQuantity) => quantityCompare(toQ(a), toQ(b)) > 0,
  )
  f(
    'kubernetes.Quantity.isLessThan(kubernetes.Quantity): bool',
    (a: CelQuantity, b: CelQuantity) => quantityCompare(toQ(a), toQ(b)) < 0,
  )
  f('kubernetes.Quantity.compareTo(kubernetes.Quantity): int', (a: CelQuantity, b: CelQuantity) =>
    BigInt(quantityCompare(a, b)),
  )
  env.registerOperator(
    'kubernetes.Quantity == kubernetes.Quantity',
    (a: CelQuantity, b: CelQuantity) => quantityCompare(a, b) === 0,
  )

  // Named formats.
  env.registerType('kubernetes.FormatLibrary', FormatLibrary as any)
  env.registerType('kubernetes.NamedFormat', CelFormat as any)
  env.registerConstant('format', 'kubernetes.FormatLibrary', new FormatLibrary())
  for (const name of Object.keys(NAMED_FORMATS)) {
    f(`kubernetes.FormatLibrary.${name}(): kubernetes.NamedFormat`, () => new CelFormat(name))
  }
  f('kubernetes.FormatLibrary.named(string): optional<kubernetes.NamedFormat>', (_l: unknown, name: string) =>
    NAMED_FORMATS[name] ? Optional.of(new CelFormat(name)) : Optional.none(),
  )
  f('kubernetes.NamedFormat.validate(string): optional<list<string>>', (fmt: CelFormat, s: string) => {
    const errs = NAMED_FORMATS[fmt.name]!(s)
    return errs.length ? Optional.of(errs) : Optional.none()
  })
}
