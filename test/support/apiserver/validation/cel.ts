// x-kubernetes-validations: CEL rules compiled with @marcbachmann/cel-js plus the Kubernetes
// libraries, evaluated over an object the way apiextensions-apiserver's cel.Validator does
// (own rules first, then children; transition rules only with a correlated old value;
// ratcheting of unchanged values; the real error texts). A rule the library cannot
// compile is recorded as skipped and reported, never treated as passing silently.
import {Environment, Optional, type ParseResult} from '@marcbachmann/cel-js'
import {childPath, fieldError, indexPath, keyPath, type FieldError} from '../errors.js'
import {registerKubernetesLibraries} from './cel-k8s-lib.js'
import {Re2SyntaxError} from './re2.js'
import {
  additionalSchema,
  correlateListItem,
  deepEqual,
  isObject,
  schemaType,
  type StructuralSchema,
  type ValidationRule,
} from './schema.js'

export interface SkippedCelRule {
  /** CRD name (plural.group) */
  crd: string
  version: string
  /** Schema path of the node carrying the rule, e.g. "spec.listeners[*]". */
  path: string
  rule: string
  reason: string
}

interface CompiledRule {
  program?: ParseResult
  usesOldSelf: boolean
  message?: ParseResult
  skipped?: string
}

let sharedEnv: Environment | undefined

function celEnvironment(): Environment {
  if (sharedEnv) return sharedEnv
  const env = new Environment({
    homogeneousAggregateLiterals: false,
    enableOptionalTypes: true,
    unlistedVariablesAreDyn: false,
  })
  env.registerVariable('self', 'dyn')
  env.registerVariable('oldSelf', 'dyn')
  registerKubernetesLibraries(env)
  sharedEnv = env
  return env
}

const compiled = new Map<string, CompiledRule>()

/**
 * Source rewrites for what cel-js handles differently from cel-go: `matches` goes to the
 * RE2 implementation, and `has(x[0].f)` (a field test on an indexed or computed operand,
 * which cel-js's has() macro rejects) becomes `__hasField(x[0], "f")`. One rewrite per
 * pass, innermost first, re-parsing in between so ranges stay right.
 */
function rewriteSource(source: string): string {
  const env = celEnvironment()
  let src = source
  for (let pass = 0; pass < 200; pass++) {
    const ast = env.parse(src).ast as any
    const edit = findRewrite(ast, src)
    if (!edit) return src
    src = src.slice(0, edit.start) + edit.text + src.slice(edit.end)
  }
  return src
}

interface Edit {
  start: number
  end: number
  text: string
}

function findRewrite(node: any, src: string): Edit | undefined {
  if (!node || typeof node !== 'object' || !node.op) return undefined
  const args = node.args
  const children: unknown[] = Array.isArray(args) ? args.flat(2) : [args]
  for (const child of children) {
    const inner = findRewrite(child, src)
    if (inner) return inner
  }
  if (node.op === 'rcall' && args[0] === 'matches') {
    const idx = src.indexOf('matches', args[1].range.end)
    return {start: idx, end: idx + 'matches'.length, text: 're2Matches'}
  }
  if (node.op === 'call' && args[0] === 'matches') {
    const idx = src.indexOf('matches', node.range.start)
    return {start: idx, end: idx + 'matches'.length, text: 're2Matches'}
  }
  if (node.op === 'call' && args[0] === 'has' && args[1]?.length === 1) {
    const sel = args[1][0]
    if (sel?.op === '.') {
      let n = sel
      while (n.op === '.' || n.op === '.?') n = n.args[0]
      if (n.op !== 'id') {
        const operand = sel.args[0]
        return {
          start: node.range.start,
          end: node.range.end,
          text: `__hasField(${src.slice(operand.range.start, operand.range.end)}, ${JSON.stringify(sel.args[1])})`,
        }
      }
    }
  }
  return undefined
}

function compileExpression(source: string): {program?: ParseResult; error?: string} {
  const env = celEnvironment()
  try {
    const rewritten = rewriteSource(source)
    const program = env.parse(rewritten)
    const check = program.check()
    if (!check.valid) return {error: firstLine(check.error?.message ?? 'type check failed')}
    return {program}
  } catch (e) {
    return {error: firstLine((e as Error).message)}
  }
}

export function compileRule(rule: ValidationRule): CompiledRule {
  const key = JSON.stringify([rule.rule, rule.messageExpression ?? ''])
  const hit = compiled.get(key)
  if (hit) return hit
  const out: CompiledRule = {usesOldSelf: /\boldSelf\b/.test(rule.rule)}
  const r = compileExpression(rule.rule)
  if (r.error) out.skipped = r.error
  else out.program = r.program!
  if (rule.messageExpression) {
    const m = compileExpression(rule.messageExpression)
    if (m.program) out.message = m.program
  }
  compiled.set(key, out)
  return out
}

function firstLine(s: string): string {
  return s.split('\n')[0]!.trim()
}

/** Compiles every rule of a schema; returns the ones that cannot be evaluated. */
export function collectSkippedRules(
  schema: StructuralSchema | undefined,
  crd: string,
  version: string,
): SkippedCelRule[] {
  const out: SkippedCelRule[] = []
  const walk = (s: StructuralSchema | undefined, path: string) => {
    if (!s) return
    for (const rule of s['x-kubernetes-validations'] ?? []) {
      const c = compileRule(rule)
      if (c.skipped) out.push({crd, version, path: path || '<root>', rule: rule.rule, reason: c.skipped})
      if (rule.messageExpression && !c.message)
        out.push({
          crd,
          version,
          path: path || '<root>',
          rule: rule.messageExpression,
          reason: 'messageExpression does not compile; message is used instead',
        })
    }
    for (const [k, p] of Object.entries(s.properties ?? {})) walk(p, path ? `${path}.${k}` : k)
    if (s.items) walk(s.items, `${path}[*]`)
    const ap = additionalSchema(s)
    if (ap) walk(ap, `${path}[*]`)
  }
  walk(schema, '')
  return out
}

// ---------------------------------------------------------------------------------------
// Values

const RESERVED = new Set([
  'true',
  'false',
  'null',
  'in',
  'as',
  'break',
  'const',
  'continue',
  'else',
  'for',
  'function',
  'if',
  'import',
  'let',
  'loop',
  'package',
  'namespace',
  'return',
  'var',
  'void',
  'while',
])

/** CEL property name escaping (apiserver/pkg/cel/escaping.go); undefined when not accessible. */
export function escapePropertyName(name: string): string | undefined {
  if (!/^[a-zA-Z_.\-/][a-zA-Z0-9_.\-/]*$/.test(name)) return undefined
  if (RESERVED.has(name)) return `__${name}__`
  return name.replace(
    /__|\.|-|\//g,
    (m) => ({__: '__underscores__', '.': '__dot__', '-': '__dash__', '/': '__slash__'})[m]!,
  )
}

let durationProgram: ParseResult | undefined

/** JSON → CEL value, typed by the schema (integers as int, date-time as timestamp, ...). */
export function toCel(v: unknown, s: StructuralSchema | undefined): unknown {
  if (v === null || v === undefined) return null
  if (Array.isArray(v)) return v.map((x) => toCel(x, s?.items))
  if (isObject(v)) {
    const out: Record<string, unknown> = {}
    const ap = additionalSchema(s)
    for (const [k, val] of Object.entries(v)) {
      const ps = s?.properties?.[k]
      if (ps) {
        const name = escapePropertyName(k)
        if (name !== undefined) out[name] = toCel(val, ps)
      } else if (ap) out[k] = toCel(val, ap)
      else out[k] = toCel(val, undefined)
    }
    return out
  }
  if (typeof v === 'number') {
    if (s?.type === 'number') return v
    if (s?.type === 'integer' || s?.['x-kubernetes-int-or-string'] || Number.isInteger(v))
      return Number.isInteger(v) ? BigInt(v) : v
    return v
  }
  if (typeof v === 'string' && s?.type === 'string') {
    if (s.format === 'date-time' || s.format === 'date') {
      const d = new Date(v)
      return Number.isNaN(d.getTime()) ? v : d
    }
    if (s.format === 'duration') {
      durationProgram ??= celEnvironment().parse('duration(self)')
      try {
        return durationProgram({self: v, oldSelf: null})
      } catch {
        return v
      }
    }
    if (s.format === 'byte') return new Uint8Array(Buffer.from(v, 'base64'))
  }
  return v
}

// ---------------------------------------------------------------------------------------
// Validation walk

export interface CelResult {
  errors: FieldError[]
  /** Rules that applied to this object but could not be evaluated. */
  skipped: {path: string; rule: string; reason: string}[]
}

/**
 * Evaluates all rules over `value` (the whole object for a root schema). `old` is the
 * stored object on update.
 */
export function validateCel(value: unknown, schema: StructuralSchema, old?: {value: unknown}): CelResult {
  const result: CelResult = {errors: [], skipped: []}
  walk(value, schema, '', old, result)
  return result
}

function walk(
  value: unknown,
  s: StructuralSchema | undefined,
  path: string,
  old: {value: unknown} | undefined,
  out: CelResult,
): void {
  if (!s || value === null || value === undefined) return
  const unchanged = old !== undefined && deepEqual(value, old.value)
  for (const rule of s['x-kubernetes-validations'] ?? []) evaluateRule(rule, value, s, path, old, unchanged, out)
  if (unchanged && !hasTransitionRules(s)) return
  if (Array.isArray(value)) {
    const oldList = old && Array.isArray(old.value) ? (old.value as unknown[]) : undefined
    value.forEach((item, i) => walk(item, s.items, indexPath(path, i), correlateListItem(s, item, oldList), out))
  } else if (isObject(value)) {
    const oldObj = old && isObject(old.value) ? (old.value as Record<string, unknown>) : undefined
    const ap = additionalSchema(s)
    for (const [k, v] of Object.entries(value)) {
      const ps = s.properties?.[k]
      const childOld = oldObj && k in oldObj ? {value: oldObj[k]} : undefined
      if (ps) walk(v, ps, childPath(path, k), childOld, out)
      else if (ap) walk(v, ap, keyPath(path, k), childOld, out)
    }
  }
}

const anyRulesCache = new WeakMap<StructuralSchema, boolean>()
/** Whether a schema carries any x-kubernetes-validations (the real server has no CEL validator otherwise). */
export function hasCelRules(s: StructuralSchema | undefined): boolean {
  if (!s) return false
  const hit = anyRulesCache.get(s)
  if (hit !== undefined) return hit
  const kids = [
    ...Object.values(s.properties ?? {}),
    ...(s.items ? [s.items] : []),
    ...(additionalSchema(s) ? [additionalSchema(s)!] : []),
  ]
  const found = (s['x-kubernetes-validations'] ?? []).length > 0 || kids.some(hasCelRules)
  anyRulesCache.set(s, found)
  return found
}

const transitionCache = new WeakMap<StructuralSchema, boolean>()
function hasTransitionRules(s: StructuralSchema): boolean {
  const hit = transitionCache.get(s)
  if (hit !== undefined) return hit
  let found = (s['x-kubernetes-validations'] ?? []).some((r) => /\boldSelf\b/.test(r.rule))
  if (!found) {
    const kids = [
      ...Object.values(s.properties ?? {}),
      ...(s.items ? [s.items] : []),
      ...(additionalSchema(s) ? [additionalSchema(s)!] : []),
    ]
    found = kids.some(hasTransitionRules)
  }
  transitionCache.set(s, found)
  return found
}

function evaluateRule(
  rule: ValidationRule,
  value: unknown,
  s: StructuralSchema,
  path: string,
  old: {value: unknown} | undefined,
  unchanged: boolean,
  out: CelResult,
): void {
  const c = compileRule(rule)
  const errPath = path || '<nil>'
  if (c.usesOldSelf && old === undefined && !rule.optionalOldSelf) return
  if (!c.usesOldSelf && unchanged) return
  if (c.skipped) {
    out.skipped.push({path: errPath, rule: rule.rule, reason: c.skipped})
    return
  }
  const activation: Record<string, unknown> = {self: toCel(value, s)}
  if (c.usesOldSelf) {
    activation.oldSelf =
      old === undefined
        ? rule.optionalOldSelf
          ? Optional.none()
          : null
        : rule.optionalOldSelf
          ? Optional.of(toCel(old.value, s))
          : toCel(old.value, s)
  } else activation.oldSelf = null
  const ruleText = rule.message ? rule.message.trim() : rule.rule.trim()
  let result: unknown
  try {
    result = c.program!(activation)
  } catch (e) {
    const err = e as Error & {code?: string}
    if (err instanceof Re2SyntaxError) {
      out.errors.push(fieldError.invalid(errPath, schemaType(s), `${err.message} evaluating rule: ${ruleText}`))
    } else if (err.code === 'no_such_overload' || /no such overload/i.test(err.message)) {
      out.errors.push(
        fieldError.invalid(
          errPath,
          schemaType(s),
          `'no such overload': call arguments did not match a supported operator, function or macro signature for rule: ${ruleText}`,
        ),
      )
    } else {
      out.errors.push(fieldError.invalid(errPath, schemaType(s), `${goErrorText(err)} evaluating rule: ${ruleText}`))
    }
    return
  }
  if (result === true) return
  const target = rule.fieldPath ? appendFieldPath(path, rule.fieldPath, s) : errPath
  let detail = rule.message ? rule.message.trim() : `failed rule: ${rule.rule.trim()}`
  if (c.message) {
    try {
      const m = c.message(activation)
      if (typeof m === 'string' && m.trim() !== '' && !m.includes('\n')) detail = m
    } catch {
      // messageExpression failures fall back to message, as the real server does
    }
  }
  out.errors.push(errorForReason(target, schemaType(s), detail, rule.reason))
}

function goErrorText(err: Error & {code?: string}): string {
  const line = firstLine(err.message)
  if (err.code === 'no_such_key') return line.replace(/^No such key/, 'no such key')
  if (err.code === 'index_out_of_range') return 'index out of range'
  if (err.code === 'division_by_zero') return 'division by zero'
  if (err.code === 'numeric_overflow') return 'integer overflow'
  const conversion = /^(int|uint|double|bool)_conversion_error$/.exec(err.code ?? '')
  if (conversion) return `type conversion error from 'string' to '${conversion[1]}'`
  return line
}

function errorForReason(path: string, type: string, detail: string, reason: ValidationRule['reason']): FieldError {
  switch (reason) {
    case 'FieldValueForbidden':
      return fieldError.forbidden(path, detail)
    case 'FieldValueRequired':
      return fieldError.required(path, detail)
    case 'FieldValueDuplicate':
      return fieldError.duplicate(path, type)
    default:
      return fieldError.invalid(path, type, detail)
  }
}

/** `.foo.bar`, `['foo.bar']` relative to the rule's node. */
function appendFieldPath(base: string, fieldPath: string, s: StructuralSchema): string {
  let path = base
  let schema: StructuralSchema | undefined = s
  const re = /\.([a-zA-Z0-9_-]+)|\['((?:[^'\\]|\\.)*)'\]/g
  let m: RegExpExecArray | null
  while ((m = re.exec(fieldPath))) {
    const name = m[1] ?? m[2]!.replace(/\\(.)/g, '$1')
    if (schema?.properties?.[name]) {
      path = childPath(path, name)
      schema = schema.properties[name]
    } else if (additionalSchema(schema)) {
      path = keyPath(path, name)
      schema = additionalSchema(schema)
    } else {
      path = childPath(path, name)
      schema = undefined
    }
  }
  return path || '<nil>'
}

/** Errors that stop CEL from running at all (hasBlockingErr in the real strategy). */
export function hasBlockingError(errs: FieldError[]): boolean {
  return errs.some((e) =>
    [
      'FieldValueNotSupported',
      'FieldValueRequired',
      'FieldValueTooLong',
      'FieldValueTooMany',
      'FieldValueTypeInvalid',
    ].includes(e.type),
  )
}

export const CEL_NOT_CHECKED: FieldError = fieldError.invalid(
  '<nil>',
  null,
  'some validation rules were not checked because the object was invalid; correct the existing errors to complete validation',
)
