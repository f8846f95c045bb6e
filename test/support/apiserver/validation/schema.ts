// OpenAPI v3 structural schema handling as kube-apiserver does it for custom resources:
// validation with kube-openapi's rules and messages (apiextensions-apiserver
// pkg/apiserver/validation), pruning of unknown fields, null pruning, defaulting,
// x-kubernetes-list-type checks, and validation ratcheting on update (beta and on by
// default in 1.30-1.32: an error is not reported for a value that did not change).
import {childPath, fieldError, indexPath, type FieldError} from '../errors.js'
import {re2Test} from './re2.js'

/** An OpenAPI v3 schema with the Kubernetes extensions (JSON as found in the CRD). */
export interface StructuralSchema {
  type?: string
  format?: string
  description?: string
  properties?: Record<string, StructuralSchema>
  additionalProperties?: StructuralSchema | boolean
  items?: StructuralSchema
  required?: string[]
  enum?: unknown[]
  pattern?: string
  minLength?: number
  maxLength?: number
  minimum?: number
  maximum?: number
  exclusiveMinimum?: boolean
  exclusiveMaximum?: boolean
  multipleOf?: number
  minItems?: number
  maxItems?: number
  uniqueItems?: boolean
  minProperties?: number
  maxProperties?: number
  nullable?: boolean
  default?: unknown
  allOf?: StructuralSchema[]
  anyOf?: StructuralSchema[]
  oneOf?: StructuralSchema[]
  not?: StructuralSchema
  'x-kubernetes-int-or-string'?: boolean
  'x-kubernetes-preserve-unknown-fields'?: boolean
  'x-kubernetes-embedded-resource'?: boolean
  'x-kubernetes-list-type'?: 'atomic' | 'set' | 'map'
  'x-kubernetes-list-map-keys'?: string[]
  'x-kubernetes-map-type'?: 'atomic' | 'granular'
  'x-kubernetes-validations'?: ValidationRule[]
  /** Strategic merge patch metadata (built-in kinds only). */
  'x-kubernetes-patch-merge-key'?: string
  'x-kubernetes-patch-strategy'?: string
}

export interface ValidationRule {
  rule: string
  message?: string
  messageExpression?: string
  reason?: 'FieldValueInvalid' | 'FieldValueForbidden' | 'FieldValueRequired' | 'FieldValueDuplicate'
  fieldPath?: string
  optionalOldSelf?: boolean
}

export function isObject(v: unknown): v is Record<string, any> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true
  if (typeof a === 'number' && typeof b === 'number') return a === b
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false
    return a.every((x, i) => deepEqual(x, b[i]))
  }
  if (isObject(a)) {
    if (!isObject(b)) return false
    const ka = Object.keys(a)
    if (ka.length !== Object.keys(b).length) return false
    return ka.every((k) => Object.prototype.hasOwnProperty.call(b, k) && deepEqual(a[k], b[k]))
  }
  return false
}

export function deepCopy<T>(v: T): T {
  return v === undefined ? v : (JSON.parse(JSON.stringify(v)) as T)
}

/** The schema of a map entry (additionalProperties) or undefined. */
export function additionalSchema(s: StructuralSchema | undefined): StructuralSchema | undefined {
  return s && isObject(s.additionalProperties) ? (s.additionalProperties as StructuralSchema) : undefined
}

/** The schema of a child field/entry of an object node. */
export function childSchema(s: StructuralSchema | undefined, key: string): StructuralSchema | undefined {
  if (!s) return undefined
  return s.properties?.[key] ?? additionalSchema(s)
}

/** Whether fields not in `properties` survive pruning at this node. */
function keepsUnknown(s: StructuralSchema): boolean {
  return (
    s['x-kubernetes-preserve-unknown-fields'] === true ||
    (s.additionalProperties !== undefined && s.additionalProperties !== false)
  )
}

/** The type name the real server reports in CEL errors and type checks ("" for int-or-string). */
export function schemaType(s: StructuralSchema | undefined): string {
  return s?.type ?? ''
}

// ---------------------------------------------------------------------------------------
// Pruning

const OBJECT_META_FIELDS = new Set([
  'name',
  'generateName',
  'namespace',
  'selfLink',
  'uid',
  'resourceVersion',
  'generation',
  'creationTimestamp',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
  'labels',
  'annotations',
  'ownerReferences',
  'finalizers',
  'managedFields',
])

/**
 * Drops fields the schema does not know (in place) and returns their paths, as
 * structuralpruning.PruneWithOptions does with TrackUnknownFieldPaths. The root keeps
 * apiVersion, kind and metadata; metadata keeps the ObjectMeta fields.
 */
export function prune(obj: Record<string, any>, schema: StructuralSchema): string[] {
  const unknown: string[] = []
  for (const key of Object.keys(obj)) {
    if (key === 'apiVersion' || key === 'kind') continue
    if (key === 'metadata') {
      pruneMetadata(obj.metadata, 'metadata', unknown)
      continue
    }
    const ps = schema.properties?.[key]
    if (ps) pruneValue(obj[key], ps, key, unknown)
    else if (!keepsUnknown(schema)) {
      unknown.push(key)
      delete obj[key]
    } else {
      const ap = additionalSchema(schema)
      if (ap) pruneValue(obj[key], ap, key, unknown)
    }
  }
  return unknown.sort()
}

function pruneMetadata(meta: unknown, path: string, unknown: string[]): void {
  if (!isObject(meta)) return
  for (const key of Object.keys(meta)) {
    if (!OBJECT_META_FIELDS.has(key)) {
      unknown.push(childPath(path, key))
      delete meta[key]
    }
  }
}

function pruneValue(v: unknown, s: StructuralSchema, path: string, unknown: string[]): void {
  if (Array.isArray(v)) {
    if (s.items) v.forEach((item, i) => pruneValue(item, s.items!, indexPath(path, i), unknown))
    return
  }
  if (!isObject(v)) return
  const embedded = s['x-kubernetes-embedded-resource'] === true
  for (const key of Object.keys(v)) {
    if (embedded && (key === 'apiVersion' || key === 'kind')) continue
    if (embedded && key === 'metadata') {
      pruneMetadata(v.metadata, childPath(path, 'metadata'), unknown)
      continue
    }
    const ps = s.properties?.[key]
    if (ps) {
      pruneValue(v[key], ps, childPath(path, key), unknown)
    } else {
      const ap = additionalSchema(s)
      if (ap) pruneValue(v[key], ap, childPath(path, key), unknown)
      else if (!keepsUnknown(s)) {
        unknown.push(childPath(path, key))
        delete v[key]
      }
    }
  }
}

/** defaulting.PruneNonNullableNullsWithoutDefaults: `field: null` disappears unless nullable or defaulted. */
export function pruneNulls(v: unknown, s: StructuralSchema | undefined): void {
  if (!s) return
  if (Array.isArray(v)) {
    for (const item of v) pruneNulls(item, s.items)
    return
  }
  if (!isObject(v)) return
  for (const key of Object.keys(v)) {
    const ps = s.properties?.[key] ?? additionalSchema(s)
    if (!ps) continue
    if (v[key] === null && ps.default === undefined && !ps.nullable) delete v[key]
    else pruneNulls(v[key], ps)
  }
}

// ---------------------------------------------------------------------------------------
// Defaulting

/** structuraldefaulting.Default: fills `default` values top-down (in place). */
export function applyDefaults(v: unknown, s: StructuralSchema | undefined): void {
  if (!s) return
  if (Array.isArray(v)) {
    for (const item of v) applyDefaults(item, s.items)
    return
  }
  if (!isObject(v)) return
  for (const [k, ps] of Object.entries(s.properties ?? {})) {
    if (ps.default === undefined) continue
    if (!(k in v) || (v[k] === null && !ps.nullable)) v[k] = deepCopy(ps.default)
  }
  for (const [k, child] of Object.entries(v)) {
    const ps = s.properties?.[k] ?? additionalSchema(s)
    if (ps) applyDefaults(child, ps)
  }
}

// ---------------------------------------------------------------------------------------
// Validation (kube-openapi semantics and messages)

interface Ctx {
  errors: FieldError[]
}

/** Paths in kube-openapi messages: "spec.listeners[0].port". */
function joinPath(path: string, key: string): string {
  return path === '' ? key : `${path}.${key}`
}

function jsonType(v: unknown): string {
  if (v === null) return 'null'
  if (Array.isArray(v)) return 'array'
  if (typeof v === 'boolean') return 'boolean'
  if (typeof v === 'string') return 'string'
  if (typeof v === 'number' || typeof v === 'bigint') return Number.isInteger(Number(v)) ? 'integer' : 'number'
  return 'object'
}

/** Go's %v of a float64 schema bound. */
function goFloat(n: number): string {
  if (Number.isInteger(n) && Math.abs(n) < 1e21) return String(n)
  return String(n).replace(/e\+?(-?)(\d)$/, 'e$1$2')
}

function runeLength(s: string): number {
  let n = 0
  for (const _ of s) n++
  return n
}

/**
 * Validates `value` against `schema` and returns field errors. `old` is the value at the
 * same path in the stored object on update (for ratcheting); pass undefined on create.
 */
export function validateValue(
  value: unknown,
  schema: StructuralSchema,
  path: string,
  old?: {value: unknown},
): FieldError[] {
  const ctx: Ctx = {errors: []}
  validateNode(value, schema, path, ctx, old)
  return ctx.errors
}

function validateNode(value: unknown, s: StructuralSchema, path: string, ctx: Ctx, old?: {value: unknown}): void {
  // Ratcheting: an unchanged value keeps whatever errors it already had.
  if (old !== undefined && deepEqual(value, old.value)) return
  const errs = ctx.errors
  const intOrString = s['x-kubernetes-int-or-string'] === true
  const errPath = path || '<nil>'

  if (value === null) {
    if (s.nullable) return
    if (s.type) {
      errs.push(fieldError.typeInvalid(errPath, 'null', `${path} in body must be of type ${s.type}: "null"`))
    }
    if (s.enum && !s.enum.some((e) => e === null))
      errs.push(fieldError.notSupported(errPath, null, s.enum.map(enumString)))
    return
  }

  const actual = jsonType(value)
  let typeOk = true
  if (intOrString) {
    if (actual !== 'integer' && actual !== 'string') {
      typeOk = false
      errs.push(fieldError.invalid('<nil>', '', `"${path}" must validate at least one schema (anyOf)`))
      errs.push(fieldError.typeInvalid(errPath, actual, `${path} in body must be of type integer: "${actual}"`))
    }
  } else if (s.type) {
    const ok = s.type === actual || (s.type === 'number' && actual === 'integer')
    if (!ok) {
      typeOk = false
      errs.push(fieldError.typeInvalid(errPath, actual, `${path} in body must be of type ${s.type}: "${actual}"`))
    }
  }

  validateJunctors(value, s, path, ctx)

  if (typeOk && typeof value === 'string') {
    if (s.maxLength !== undefined && runeLength(value) > s.maxLength)
      errs.push(fieldError.tooLong(errPath, s.maxLength))
    else if (s.minLength !== undefined && runeLength(value) < s.minLength)
      errs.push(fieldError.invalid(errPath, value, `${path} in body should be at least ${s.minLength} chars long`))
    else if (s.pattern !== undefined && !re2Test(s.pattern, value))
      errs.push(fieldError.invalid(errPath, value, `${path} in body should match '${s.pattern}'`))
    if (s.format && s.type === 'string') {
      const formatErr = checkFormat(s.format, value)
      if (formatErr)
        errs.push(
          fieldError.typeInvalid(
            errPath,
            value,
            `${path} in body must be of type ${formatErr}: ${JSON.stringify(value)}`,
          ),
        )
    }
  }

  if (typeOk && (typeof value === 'number' || typeof value === 'bigint') && !intOrString) {
    const n = Number(value)
    if (s.multipleOf !== undefined && s.multipleOf !== 0 && !Number.isInteger(n / s.multipleOf))
      errs.push(fieldError.invalid(errPath, n, `${path} in body should be a multiple of ${goFloat(s.multipleOf)}`))
    if (s.maximum !== undefined && (s.exclusiveMaximum ? n >= s.maximum : n > s.maximum))
      errs.push(
        fieldError.invalid(
          errPath,
          n,
          `${path} in body should be less than ${s.exclusiveMaximum ? '' : 'or equal to '}${goFloat(s.maximum)}`,
        ),
      )
    if (s.minimum !== undefined && (s.exclusiveMinimum ? n <= s.minimum : n < s.minimum))
      errs.push(
        fieldError.invalid(
          errPath,
          n,
          `${path} in body should be greater than ${s.exclusiveMinimum ? '' : 'or equal to '}${goFloat(s.minimum)}`,
        ),
      )
  }

  if (typeOk && Array.isArray(value)) {
    if (s.items) {
      const oldList = old && Array.isArray(old.value) ? (old.value as unknown[]) : undefined
      value.forEach((item, i) =>
        validateNode(item, s.items!, indexPath(path, i), ctx, correlateListItem(s, item, oldList)),
      )
    }
    if (s.minItems !== undefined && value.length < s.minItems)
      errs.push(fieldError.invalid(errPath, value.length, `${path} in body should have at least ${s.minItems} items`))
    if (s.maxItems !== undefined && value.length > s.maxItems)
      errs.push(fieldError.tooMany(errPath, value.length, s.maxItems))
    if (s.uniqueItems && value.some((v, i) => value.findIndex((w) => deepEqual(v, w)) !== i))
      errs.push(fieldError.invalid(errPath, '', `${path} in body shouldn't contain duplicates`))
  }

  if (s.enum && !s.enum.some((e) => deepEqual(e, value)))
    errs.push(fieldError.notSupported(errPath, value, s.enum.map(enumString)))

  if (typeOk && isObject(value)) validateObject(value, s, path, ctx, old)
}

function enumString(e: unknown): string {
  return typeof e === 'string' ? e : JSON.stringify(e)
}

function validateObject(
  value: Record<string, any>,
  s: StructuralSchema,
  path: string,
  ctx: Ctx,
  old?: {value: unknown},
): void {
  const errs = ctx.errors
  const errPath = path || '<nil>'
  const n = Object.keys(value).length
  if (s.minProperties !== undefined && n < s.minProperties) {
    errs.push(fieldError.invalid(errPath, '', `${path} in body should have at least ${s.minProperties} properties`))
    return
  }
  if (s.maxProperties !== undefined && n > s.maxProperties) {
    errs.push(fieldError.tooMany(errPath, n, s.maxProperties))
    return
  }
  const oldObj = old && isObject(old.value) ? (old.value as Record<string, any>) : undefined
  const ap = additionalSchema(s)
  if (s.additionalProperties === false) {
    for (const k of Object.keys(value))
      if (!s.properties?.[k]) errs.push(fieldError.invalid(errPath, '', `${path}.${k} in body is a forbidden property`))
  } else if (ap) {
    for (const [k, v] of Object.entries(value)) {
      if (s.properties?.[k]) continue
      validateNode(v, ap, joinPath(path, k), ctx, oldObj && k in oldObj ? {value: oldObj[k]} : undefined)
    }
  }
  for (const [k, ps] of Object.entries(s.properties ?? {})) {
    if (!(k in value)) continue
    validateNode(value[k], ps, joinPath(path, k), ctx, oldObj && k in oldObj ? {value: oldObj[k]} : undefined)
  }
  for (const k of s.required ?? []) {
    if (!(k in value)) errs.push(fieldError.required(joinPath(path, k), ''))
  }
}

function validateJunctors(value: unknown, s: StructuralSchema, path: string, ctx: Ctx): void {
  const errs = ctx.errors
  const sub = (schema: StructuralSchema) => validateValue(value, schema, path)
  if (s.anyOf?.length) {
    let best: FieldError[] | undefined
    let ok = false
    for (const alt of s.anyOf) {
      const r = sub(alt)
      if (r.length === 0) {
        ok = true
        best = undefined
        break
      }
      if (!best || r.length < best.length) best = r
    }
    if (!ok) {
      errs.push(fieldError.invalid('<nil>', '', `"${path}" must validate at least one schema (anyOf)`))
      if (best) errs.push(...best)
    }
  }
  if (s.oneOf?.length) {
    let validated = 0
    let best: FieldError[] | undefined
    for (const alt of s.oneOf) {
      const r = sub(alt)
      if (r.length === 0) {
        validated++
        best = undefined
        continue
      }
      if (validated === 0 && (!best || r.length < best.length)) best = r
    }
    if (validated !== 1) {
      const extra = validated === 0 ? 'Found none valid' : `Found ${validated} valid alternatives`
      errs.push(fieldError.invalid('<nil>', '', `"${path}" must validate one and only one schema (oneOf). ${extra}`))
      if (best) errs.push(...best)
    }
  }
  if (s.allOf?.length) {
    let validated = 0
    for (const alt of s.allOf) {
      const r = sub(alt)
      if (r.length === 0) validated++
      errs.push(...r)
    }
    if (validated !== s.allOf.length)
      errs.push(
        fieldError.invalid(
          '<nil>',
          '',
          `"${path}" must validate all the schemas (allOf)${validated === 0 ? '. None validated' : ''}`,
        ),
      )
  }
  if (s.not) {
    if (sub(s.not).length === 0)
      errs.push(fieldError.invalid('<nil>', '', `"${path}" must not validate the schema (not)`))
  }
}

/** The old value an item of a list correlates with (map lists by key, sets/atomic lists never). */
function correlateListItem(
  s: StructuralSchema,
  item: unknown,
  oldList: unknown[] | undefined,
): {value: unknown} | undefined {
  if (!oldList) return undefined
  if (s['x-kubernetes-list-type'] !== 'map') return undefined
  const keys = s['x-kubernetes-list-map-keys'] ?? []
  if (!isObject(item)) return undefined
  const match = oldList.find((o) => isObject(o) && keys.every((k) => deepEqual(o[k], item[k])))
  return match === undefined ? undefined : {value: match}
}

export {correlateListItem}

// ---------------------------------------------------------------------------------------
// Formats (the list apiextensions-apiserver accepts; others are ignored)

const FORMAT_CHECKS: Record<string, (v: string) => boolean> = {
  uri: (v) => {
    try {
      return new URL(v).protocol.length > 1
    } catch {
      return false
    }
  },
  email: (v) => /^[^\s@]+@[^\s@]+$/.test(v),
  hostname: (v) =>
    v.length <= 255 &&
    /^[a-zA-Z0-9]([-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?(\.[a-zA-Z0-9]([-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?)*\.?$/.test(v),
  ipv4: (v) => /^((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$/.test(v),
  ipv6: (v) => isIPv6(v),
  cidr: (v) => {
    const [ip, bits, ...rest] = v.split('/')
    if (rest.length || bits === undefined || !/^\d+$/.test(bits)) return false
    if (FORMAT_CHECKS.ipv4!(ip!)) return Number(bits) <= 32
    return isIPv6(ip!) && Number(bits) <= 128
  },
  mac: (v) => /^([0-9A-Fa-f]{2}[:-]){5}[0-9A-Fa-f]{2}$/.test(v),
  uuid: (v) => /^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i.test(v),
  uuid3: (v) => /^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i.test(v),
  uuid4: (v) => /^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$/i.test(v),
  uuid5: (v) => /^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$/i.test(v),
  byte: (v) => /^[A-Za-z0-9+/]*={0,2}$/.test(v) && v.length % 4 === 0,
  date: (v) => /^\d{4}-\d{2}-\d{2}$/.test(v) && !Number.isNaN(Date.parse(v)),
  datetime: (v) =>
    /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:?\d{2})?$/.test(v) &&
    !Number.isNaN(Date.parse(v.replace(' ', 'T'))),
  duration: (v) =>
    /^([-+]?(\d+(\.\d*)?|\.\d+)\s*(ns|us|µs|ms|s|m|h|d|w|second|seconds|minute|minutes|hour|hours|day|days|week|weeks)\s*)+$/.test(
      v,
    ),
  hexcolor: (v) => /^#([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/.test(v),
  rgbcolor: (v) => /^rgb\(\s*\d{1,3}\s*,\s*\d{1,3}\s*,\s*\d{1,3}\s*\)$/.test(v),
  bsonobjectid: (v) => /^[0-9a-fA-F]{24}$/.test(v),
  password: () => true,
}

export function isIPv6(v: string): boolean {
  if (!v.includes(':')) return false
  try {
    return new URL(`http://[${v}]/`).hostname.length > 2
  } catch {
    return false
  }
}

/** Returns the format name to report when `v` violates `format`, or undefined. */
function checkFormat(format: string, v: string): string | undefined {
  const normalized = format.replace(/[-_]/g, '').toLowerCase()
  const check = FORMAT_CHECKS[normalized]
  if (!check) return undefined
  return check(v) ? undefined : format
}

// ---------------------------------------------------------------------------------------
// x-kubernetes-list-type (structurallisttype.ValidateListSetsAndMaps)

export function validateListTypes(
  value: unknown,
  s: StructuralSchema | undefined,
  path: string,
  old?: {value: unknown},
): FieldError[] {
  const errs: FieldError[] = []
  walkListTypes(value, s, path, errs, old)
  return errs
}

function walkListTypes(
  value: unknown,
  s: StructuralSchema | undefined,
  path: string,
  errs: FieldError[],
  old?: {value: unknown},
): void {
  if (!s || value === null || value === undefined) return
  if (old !== undefined && deepEqual(value, old.value)) return
  if (Array.isArray(value)) {
    const lt = s['x-kubernetes-list-type']
    if (lt === 'set') {
      value.forEach((v, i) => {
        if (value.findIndex((w) => deepEqual(v, w)) !== i) errs.push(fieldError.duplicate(indexPath(path, i), v))
      })
    } else if (lt === 'map') {
      const keys = s['x-kubernetes-list-map-keys'] ?? []
      const seen: Record<string, unknown>[] = []
      value.forEach((item, i) => {
        if (!isObject(item)) return
        const k: Record<string, unknown> = {}
        let missing = false
        for (const key of keys) {
          const v = item[key] ?? s.items?.properties?.[key]?.default
          if (v === undefined) {
            errs.push(fieldError.required(childPath(indexPath(path, i), key), ''))
            missing = true
          }
          k[key] = v
        }
        if (missing) return
        if (seen.some((o) => deepEqual(o, k))) errs.push(fieldError.duplicate(indexPath(path, i), k))
        else seen.push(k)
      })
    }
    const oldList = old && Array.isArray(old.value) ? (old.value as unknown[]) : undefined
    value.forEach((item, i) =>
      walkListTypes(item, s.items, indexPath(path, i), errs, correlateListItem(s, item, oldList)),
    )
    return
  }
  if (isObject(value)) {
    const oldObj = old && isObject(old.value) ? (old.value as Record<string, any>) : undefined
    for (const [k, v] of Object.entries(value)) {
      walkListTypes(
        v,
        childSchema(s, k),
        childPath(path, k),
        errs,
        oldObj && k in oldObj ? {value: oldObj[k]} : undefined,
      )
    }
  }
}
