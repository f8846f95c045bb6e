// Label selectors (k8s.io/apimachinery/pkg/labels) and field selectors (pkg/fields):
// parsing with the real grammar, matching with the real semantics.
import {ApiError, badRequest, fieldErrorString, fieldError} from '../errors.js'
import {isQualifiedName, isValidLabelValue} from './names.js'

export type LabelOperator = '=' | '==' | '!=' | 'in' | 'notin' | 'exists' | '!' | 'gt' | 'lt'

export interface LabelRequirement {
  key: string
  operator: LabelOperator
  values: string[]
}

export type LabelSelector = LabelRequirement[]

type Token = {kind: 'id' | 'op' | 'comma' | 'open' | 'close' | 'end'; text: string}

const OPERATOR_CHARS = new Set(['=', '!', '(', ')', ','])

function lex(input: string): Token[] {
  const tokens: Token[] = []
  let i = 0
  while (i < input.length) {
    const c = input[i]!
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r') {
      i++
      continue
    }
    if (c === ',') {
      tokens.push({kind: 'comma', text: ','})
      i++
    } else if (c === '(') {
      tokens.push({kind: 'open', text: '('})
      i++
    } else if (c === ')') {
      tokens.push({kind: 'close', text: ')'})
      i++
    } else if (c === '=' || c === '!') {
      let j = i + 1
      while (j < input.length && (input[j] === '=' || input[j] === '!')) j++
      tokens.push({kind: 'op', text: input.slice(i, j)})
      i = j
    } else {
      let j = i
      while (j < input.length && !OPERATOR_CHARS.has(input[j]!) && !/\s/.test(input[j]!)) j++
      const text = input.slice(i, j)
      tokens.push({kind: 'id', text})
      i = j
    }
  }
  tokens.push({kind: 'end', text: ''})
  return tokens
}

/** labels.Parse. Throws a 400 with the parser's message on bad input. */
export function parseLabelSelector(input: string): LabelSelector {
  const tokens = lex(input)
  let pos = 0
  const peek = () => tokens[pos]!
  const next = () => tokens[pos++]!
  const reqs: LabelRequirement[] = []
  if (peek().kind === 'end') return reqs
  const first = peek()
  if (first.kind !== 'id' && !(first.kind === 'op' && first.text === '!'))
    throw badRequest(`found '${first.text}', expected: !, identifier, or 'end of string'`)
  for (;;) {
    try {
      reqs.push(parseRequirement())
    } catch (e) {
      throw e instanceof ApiError ? badRequest(`unable to parse requirement: ${e.status.message}`) : e
    }
    const t = next()
    if (t.kind === 'end') break
    if (t.kind !== 'comma') throw badRequest(`found '${t.text}', expected: ',' or 'end of string'`)
    if (peek().kind === 'end') throw badRequest(`found '', expected: identifier after ','`)
  }
  return reqs

  function parseRequirement(): LabelRequirement {
    let t = next()
    if (t.kind === 'op' && t.text === '!') {
      const key = next()
      if (key.kind !== 'id') throw badRequest(`found '${key.text}', expected: identifier after '!'`)
      return makeRequirement(key.text, '!', [])
    }
    if (t.kind !== 'id') throw badRequest(`found '${t.text}', expected: !, identifier, or 'end of string'`)
    const key = t.text
    const after = peek()
    if (after.kind === 'end' || after.kind === 'comma') return makeRequirement(key, 'exists', [])
    t = next()
    let op: LabelOperator
    if (t.kind === 'op' && (t.text === '=' || t.text === '==' || t.text === '!=')) op = t.text
    else if (t.kind === 'id' && (t.text === 'in' || t.text === 'notin' || t.text === 'gt' || t.text === 'lt'))
      op = t.text
    else throw badRequest(`found '${t.text}', expected: in, notin, =, ==, !=, gt, lt`)
    if (op === 'in' || op === 'notin') {
      const open = next()
      if (open.kind !== 'open') throw badRequest(`found '${open.text}' expected: '('`)
      const values: string[] = []
      for (;;) {
        const v = peek()
        if (v.kind === 'close') {
          next()
          if (values.length === 0) values.push('')
          break
        }
        if (v.kind === 'comma') {
          next()
          values.push('')
          continue
        }
        if (v.kind !== 'id') throw badRequest(`found '${v.text}', expected: ',', ')' or identifier`)
        next()
        values.push(v.text)
        const sep = next()
        if (sep.kind === 'close') break
        if (sep.kind !== 'comma') throw badRequest(`found '${sep.text}', expected: ',' or ')'`)
        if (peek().kind === 'close') {
          next()
          values.push('')
          break
        }
      }
      return makeRequirement(key, op, values)
    }
    const v = peek()
    if (v.kind === 'id') {
      next()
      return makeRequirement(key, op, [v.text])
    }
    if (v.kind === 'end' || v.kind === 'comma') return makeRequirement(key, op, [''])
    throw badRequest(`found '${v.text}', expected: identifier`)
  }
}

function makeRequirement(key: string, operator: LabelOperator, values: string[]): LabelRequirement {
  const errs: string[] = []
  for (const m of isQualifiedName(key)) errs.push(fieldErrorString(fieldError.invalid('key', key, m)))
  if (operator === 'gt' || operator === 'lt') {
    if (values.length !== 1 || !/^-?\d+$/.test(values[0]!))
      errs.push(
        fieldErrorString(
          fieldError.invalid('values[0]', values[0] ?? '', "for 'Gt', 'Lt' operators, the value must be an integer"),
        ),
      )
  } else {
    values.forEach((v, i) => {
      for (const m of isValidLabelValue(v))
        errs.push(fieldErrorString(fieldError.invalid(`values[${i}][${key}]`, v, m)))
    })
  }
  if (errs.length) throw badRequest(errs.length === 1 ? errs[0]! : `[${errs.join(', ')}]`)
  return {key, operator, values}
}

export function matchesLabels(selector: LabelSelector, labels: Record<string, string> | undefined): boolean {
  const l = labels ?? {}
  return selector.every((r) => {
    const has = Object.prototype.hasOwnProperty.call(l, r.key)
    const v = l[r.key]
    switch (r.operator) {
      case '=':
      case '==':
        return has && v === r.values[0]
      case '!=':
        return !has || v !== r.values[0]
      case 'in':
        return has && r.values.includes(v!)
      case 'notin':
        return !has || !r.values.includes(v!)
      case 'exists':
        return has
      case '!':
        return !has
      case 'gt':
      case 'lt': {
        if (!has || !/^-?\d+$/.test(v!)) return false
        const n = BigInt(v!)
        const bound = BigInt(r.values[0]!)
        return r.operator === 'gt' ? n > bound : n < bound
      }
    }
  })
}

/** A metav1.LabelSelector (matchLabels/matchExpressions) as used in objects, e.g. Deployment.spec.selector. */
export function matchesLabelSelectorObject(selector: any, labels: Record<string, string> | undefined): boolean {
  if (!selector) return false
  const reqs: LabelRequirement[] = []
  for (const [k, v] of Object.entries((selector.matchLabels ?? {}) as Record<string, string>))
    reqs.push({key: k, operator: '=', values: [v]})
  for (const e of (selector.matchExpressions ?? []) as any[]) {
    const op = ({In: 'in', NotIn: 'notin', Exists: 'exists', DoesNotExist: '!'} as Record<string, LabelOperator>)[
      e.operator
    ]
    if (!op) return false
    reqs.push({key: e.key, operator: op, values: e.values ?? []})
  }
  return matchesLabels(reqs, labels)
}

// ---------------------------------------------------------------------------------------
// Field selectors

export interface FieldRequirement {
  field: string
  operator: '=' | '!='
  value: string
}

/** fields.ParseSelector. */
export function parseFieldSelector(input: string): FieldRequirement[] {
  const reqs: FieldRequirement[] = []
  if (input.trim() === '') return reqs
  for (const term of splitUnescaped(input, ',')) {
    if (term === '') continue
    let m: RegExpMatchArray | null = null
    for (const op of ['!=', '==', '=']) {
      const idx = indexOfUnescaped(term, op)
      if (idx >= 0) {
        m = [term, term.slice(0, idx), op, term.slice(idx + op.length)] as unknown as RegExpMatchArray
        break
      }
    }
    if (!m) throw badRequest(`invalid selector: '${input}'; can't understand '${term}'`)
    const field = m[1]!
    const value = unescapeFieldValue(m[3]!)
    if (field === '') throw badRequest(`invalid selector: '${input}'; can't understand '${term}'`)
    reqs.push({field, operator: m[2] === '!=' ? '!=' : '=', value})
  }
  return reqs
}

function splitUnescaped(s: string, sep: string): string[] {
  const out: string[] = []
  let cur = ''
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!
    if (c === '\\' && i + 1 < s.length) {
      cur += c + s[i + 1]
      i++
    } else if (c === sep) {
      out.push(cur)
      cur = ''
    } else cur += c
  }
  out.push(cur)
  return out
}

function indexOfUnescaped(s: string, needle: string): number {
  for (let i = 0; i < s.length; i++) {
    if (s[i] === '\\') {
      i++
      continue
    }
    if (s.startsWith(needle, i)) return i
  }
  return -1
}

function unescapeFieldValue(v: string): string {
  return v.replace(/\\(.)/g, '$1')
}

export function matchesFields(reqs: FieldRequirement[], fields: Record<string, string>): boolean {
  return reqs.every((r) => (r.operator === '=' ? fields[r.field] === r.value : fields[r.field] !== r.value))
}
