// Canonical forms: the same data always serialises to the same bytes, so an unchanged plan
// regenerates with an empty diff and digests/fingerprints are reproducible.
import {Document, stringify} from 'yaml'

import type {KubeObject} from './model.js'
import {byCodePoint} from './order.js'
import {cloneJson, setOwn} from './json.js'

// Keys that read best first, in this order; every other key follows alphabetically.
// One global order (rather than per-location rules) keeps the canonical form a pure function of the data.
const KEY_PRIORITY = [
  'apiVersion',
  'kind',
  'metadata',
  'id',
  'key',
  'ref',
  'name',
  'namespace',
  'generator',
  'verdict',
  'action',
  'op',
  'check',
  'code',
  'severity',
  'phase',
  'scope',
  'ztunnel',
  'proxy',
  'predicted',
  'description',
  'message',
  'fix',
  'target',
  'options',
  'observed',
  'summary',
  'blockers',
  'findings',
  'inventory',
  'workloads',
  'waypoints',
  'policies',
  'hazards',
  'steps',
  'preconditions',
  'operations',
  'manual',
  'verify',
  'undo',
  'reasons',
  'labels',
  'annotations',
  'spec',
  'status',
]
const PRIORITY_INDEX = new Map(KEY_PRIORITY.map((k, i) => [k, i]))

function compareKeys(a: string, b: string): number {
  const pa = PRIORITY_INDEX.get(a)
  const pb = PRIORITY_INDEX.get(b)
  if (pa !== undefined && pb !== undefined) return pa - pb
  if (pa !== undefined) return -1
  if (pb !== undefined) return 1
  return byCodePoint(a, b)
}

/** A deep copy with keys in canonical order and `undefined` members dropped. */
export function canonicalize<T>(value: T): T {
  if (Array.isArray(value)) return value.map((v) => canonicalize(v)) as T
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {}
    for (const key of Object.keys(value).sort(compareKeys)) {
      const v = (value as Record<string, unknown>)[key]
      if (v !== undefined) out[key] = canonicalize(v)
    }
    return out as T
  }
  return value
}

/**
 * Canonical YAML. Written as YAML 1.1-safe text (strings such as `yes`, `on`, `y` are quoted) so that
 * manifests copied out of a plan mean the same to kubectl's YAML 1.1 parser; read back with the YAML 1.2
 * core schema it is the same data. `lineWidth: 0` never folds long strings.
 *
 * The text is exactly what `yaml`'s stringify writes with these options (the plan-file tests compare
 * the two), emitted directly: building yaml's document model for a plan of thousands of objects cost
 * more than planning it. Anything the direct emitter does not know falls back to `yaml` itself.
 */
export function toCanonicalYaml(value: unknown, style: YamlStyle = {}): string {
  return emitCanonicalYaml(value, style) ?? toCanonicalYamlWithDocumentModel(value, style)
}

export interface YamlStyle {
  /**
   * false: a sequence under a key at the key's column (`key:\n- item`, as kubectl writes it), two bytes less on
   * every line inside a sequence. The plan file uses it.
   */
  indentSeq?: boolean
  /**
   * Write a collection of one-line scalars in flow style (`methods: [GET]`, `matchLabels: {app: a}`) when its line
   * stays within this many columns (the plan file). Parsed back it is the same data, but no longer byte for byte
   * what `yaml` writes (the document model, the fallback, writes it as a block).
   */
  flowWidth?: number
}

/** The direct emitter alone: undefined for input it leaves to yaml's document model. */
export function emitCanonicalYaml(value: unknown, style: YamlStyle = {}): string | undefined {
  try {
    const out = new TextSink(style.indentSeq ?? true, style.flowWidth ?? 0)
    emitDocument(value, out)
    return out.text()
  } catch (error) {
    if (!(error instanceof NeedsDocumentModel)) throw error
    return undefined
  }
}

/** The reference: `yaml`'s document model (slow on large plans; what toCanonicalYaml must equal). */
export function toCanonicalYamlWithDocumentModel(value: unknown, style: YamlStyle = {}): string {
  return stringify(canonicalize(value), {...YAML_OPTIONS, indentSeq: style.indentSeq ?? true})
}

const YAML_OPTIONS = {lineWidth: 0, version: '1.1', aliasDuplicateObjects: false} as const

/** Input the direct emitter leaves to `yaml` (odd keys, document markers inside strings, non-plain objects). */
class NeedsDocumentModel extends Error {}

// The YAML 1.1 scalar tags: a plain string that one of them would read as something else (`yes`, `0o12`,
// `2001-01-01`, `~`) must be quoted, exactly as yaml's own plainString decides.
let nonStringTags: {test?: RegExp}[] | undefined
function readsAsNonString(text: string): boolean {
  if (!nonStringTags) {
    const schema = new Document(null, {version: '1.1'}).schema as unknown as {
      tags: {default?: boolean; tag: string; test?: RegExp}[]
      compat?: {default?: boolean; tag: string; test?: RegExp}[]
    }
    nonStringTags = [...schema.tags, ...(schema.compat ?? [])].filter(
      (t) => t.default && t.tag !== 'tag:yaml.org,2002:str' && t.test,
    )
  }
  return nonStringTags.some((t) => t.test!.test(text))
}

// yaml's plainString: what a plain scalar may not start with, contain or end with.
const NOT_PLAIN = /^[\n\t ,[\]{}#&*!|>'"%@`]|^[?-]$|^[?-][ \t]|[\n:][ \t]|[ \t]\n|[\n\t ]#|[\n\t :]$/
// Control characters and lone surrogates force escapes; line breaks, tabs and document markers (`---`,
// `...`, `%` at a line start) take yaml's other branches.
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const NEEDS_MODEL = /[\x00-\x1f\x7f-\x9f\u{D800}-\u{DFFF}]|^(---|\.\.\.)/u

const scalarCache = new Map<string, string>()

/** A one-line string as yaml writes it (plain, or double-quoted as JSON), or a NeedsDocumentModel. */
function stringScalar(value: string): string {
  const cached = scalarCache.get(value)
  if (cached !== undefined) return cached
  if (NEEDS_MODEL.test(value)) throw new NeedsDocumentModel()
  let text: string
  if (value !== '' && !NOT_PLAIN.test(value) && !readsAsNonString(value)) text = value
  // quotedString: single quotes for text with `"` and no `'`, double quotes (JSON's escapes) otherwise.
  else if (value.includes('"') && !value.includes("'")) text = `'${value}'`
  else text = JSON.stringify(value)
  if (scalarCache.size < 200_000) scalarCache.set(value, text)
  return text
}

const multiLineCache = new Map<string, string>()

/**
 * A string with line breaks (a block scalar, or a folded double-quoted one), as yaml writes it for a
 * member at column 0, its continuation lines moved to the member's column.
 */
function multiLineString(value: string, column: string): string {
  let text = multiLineCache.get(value)
  if (text === undefined) {
    // eslint-disable-next-line no-control-regex -- matching control characters is the point
    if (/[\x00-\x09\x0b-\x1f\x7f-\x9f\u{D800}-\u{DFFF}]|^(%|---|\.\.\.)/mu.test(value)) throw new NeedsDocumentModel()
    const member = stringify({k: value}, YAML_OPTIONS)
    if (!member.startsWith('k: ')) throw new NeedsDocumentModel()
    text = member.slice(3, -1)
    multiLineCache.set(value, text)
  }
  return column === '' ? text : text.replace(/\n(?=[^\n])/g, `\n${column}`)
}

function scalar(value: unknown): string {
  if (typeof value === 'string') return stringScalar(value)
  if (value === null || value === undefined) return 'null'
  if (typeof value === 'boolean') return value ? 'true' : 'false'
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) return Number.isNaN(value) ? '.nan' : value < 0 ? '-.inf' : '.inf'
    return Object.is(value, -0) ? '-0' : JSON.stringify(value)
  }
  throw new NeedsDocumentModel()
}

const ARRAY_INDEX = /^(0|[1-9]\d*)$/

/** Keys in canonical order, then as JavaScript enumerates them (integer-like keys first), undefined members dropped. */
function orderedKeys(obj: Record<string, unknown>): string[] {
  const keys = Object.keys(obj)
  return sortedKeys(keys.some((k) => obj[k] === undefined) ? keys.filter((k) => obj[k] !== undefined) : keys)
}

/**
 * Keys sorted in place. A mapping has a few keys, and there are millions of them in a fleet's plans: sorted by
 * insertion, as Array.prototype.sort does short arrays, but without the copy it makes of every array first (a tenth of
 * what plan -A allocates).
 */
function sortKeysInPlace(keys: string[], compare: (a: string, b: string) => number): string[] {
  if (keys.length > 16) return keys.sort(compare)
  for (let i = 1; i < keys.length; i++) {
    const key = keys[i]!
    let j = i - 1
    for (; j >= 0 && compare(keys[j]!, key) > 0; j--) keys[j + 1] = keys[j]!
    keys[j + 1] = key
  }
  return keys
}

function sortedKeys(unsorted: string[]): string[] {
  const keys = sortKeysInPlace(unsorted, compareKeys)
  if (!keys.some((k) => ARRAY_INDEX.test(k) && Number(k) < 2 ** 32 - 1)) return keys
  const index = keys.filter((k) => ARRAY_INDEX.test(k) && Number(k) < 2 ** 32 - 1).sort((a, b) => Number(a) - Number(b))
  return [...index, ...keys.filter((k) => !index.includes(k))]
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false
  const proto = Object.getPrototypeOf(value)
  return proto === Object.prototype || proto === null
}

/** `[]`/`{}` for empty collections, the scalar otherwise; undefined for a collection written as a block. */
function inline(value: unknown): string | undefined {
  if (Array.isArray(value)) return value.length === 0 ? '[]' : undefined
  if (value !== null && typeof value === 'object') {
    if (!isPlainObject(value)) throw new NeedsDocumentModel()
    for (const key in value) if (Object.hasOwn(value, key) && value[key] !== undefined) return undefined
    return '{}'
  }
  return scalar(value)
}

/**
 * Text built in 64 KiB pieces: a plan of thousands of services is tens of MB, and an array of millions of
 * small strings (or one long chain of concatenations) costs several times that in memory.
 */
class TextSink {
  private readonly chunks: string[] = []

  constructor(
    readonly indentSeq: boolean,
    readonly flowWidth: number,
  ) {}

  /** Parts not yet joined: joined into one flat string every few thousand, without a string per character. */
  private parts: string[] = []

  // One part a call: emitting a plan calls it millions of times, and a rest parameter is an array each time.
  push(part: string): void {
    this.parts.push(part)
    if (this.parts.length >= 8192) {
      this.chunks.push(this.parts.join(''))
      this.parts = []
    }
  }

  text(): string {
    return this.chunks.join('') + this.parts.join('')
  }
}

// Indentation by depth, made once: every member of a plan is written at one of a few dozen columns.
const INDENTS: string[] = ['']
const deeper = (indent: string) => (INDENTS[indent.length / 2 + 1] ??= `${indent}  `)
const shallower = (indent: string) => INDENTS[indent.length / 2 - 1]!

function emitDocument(value: unknown, out: TextSink): void {
  const text = inline(value)
  if (text !== undefined) {
    out.push(text)
    out.push('\n')
    return
  }
  emitBlock(value, '', out)
}

/** A non-empty collection at `indent`; the caller has written the indentation of its first line (or a "- "). */
function emitBlock(value: unknown, indent: string, out: TextSink, first = true, keys?: string[]): void {
  const inner = deeper(indent)
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      if (i > 0 || first) out.push(indent)
      out.push('- ')
      emitValue(value[i], inner, out, true)
    }
    return
  }
  const record = value as Record<string, unknown>
  const ordered = keys ?? orderedKeys(record)
  for (let i = 0; i < ordered.length; i++) {
    const key = ordered[i]!
    if (i > 0 || first) out.push(indent)
    const keyText = stringScalar(key)
    if (keyText !== key && keyText[0] !== '"') throw new NeedsDocumentModel()
    out.push(keyText)
    out.push(':')
    emitValue(record[key], inner, out, false, keyText)
  }
}

const FLOW_INDICATORS = /[,[\]{}]/

/** A scalar inside `[…]`/`{…}`: plain where block style would write it plain and no flow indicator is in it. */
function flowScalar(value: unknown): string {
  if (typeof value !== 'string') return scalar(value)
  const text = stringScalar(value)
  return text === value && FLOW_INDICATORS.test(value) ? JSON.stringify(value) : text
}

const isFlowScalar = (v: unknown) =>
  v === null || (typeof v !== 'object' && !(typeof v === 'string' && v.includes('\n')))

/** `[a, b]` for a non-empty sequence of one-line scalars that fits in `room` columns, else undefined. */
function flowSequence(value: unknown[], room: number): string | undefined {
  if (value.length === 0 || !value.every(isFlowScalar)) return undefined
  const items: string[] = []
  // Given up on as soon as it no longer fits (a long list would be written whole first).
  for (let i = 0, length = 0; i < value.length; i++) {
    items.push(flowScalar(value[i]))
    if ((length += items[i]!.length + 2) > room) return undefined
  }
  return `[${items.join(', ')}]`
}

/** `{k: v}` for a non-empty mapping of one-line scalars that fits in `room` columns, else undefined. */
function flowMapping(value: Record<string, unknown>, keys: string[], room: number): string | undefined {
  if (keys.length === 0 || !keys.every((k) => isFlowScalar(value[k]))) return undefined
  const text = `{${keys.map((k) => `${flowScalar(k)}: ${flowScalar(value[k])}`).join(', ')}}`
  return text.length <= room ? text : undefined
}

/** A member's value after "key:" or "- "; nested collections go on the next lines at `indent`. */
function emitValue(value: unknown, indent: string, out: TextSink, inSequence: boolean, key = ''): void {
  let text =
    typeof value === 'string' && value.includes('\n') ? multiLineString(value, shallower(indent)) : inline(value)
  // The keys of a mapping, ordered once for both the flow and the block style.
  let keys: string[] | undefined
  if (text === undefined && out.flowWidth > 0 && !inSequence) {
    const room = out.flowWidth - indent.length - key.length
    if (Array.isArray(value)) text = flowSequence(value, room)
    else if (isPlainObject(value)) text = flowMapping(value, (keys = orderedKeys(value)), room)
  }
  if (text !== undefined) {
    if (!inSequence) out.push(' ')
    out.push(text)
    out.push('\n')
  } else if (inSequence) {
    // "- key: value" / "- - item": the collection starts on the dash's line.
    emitBlock(value, indent, out, false)
  } else {
    out.push('\n')
    // A sequence under a key is indented like a mapping would be (yaml's indentSeq), or not.
    emitBlock(value, Array.isArray(value) && !out.indentSeq ? shallower(indent) : indent, out, true, keys)
  }
}

/** JSON with recursively sorted keys: the input of every digest. */
export function stableJson(value: unknown): string {
  const parts: string[] = []
  appendStableJson(value, parts)
  return parts.join('')
}

/** stableJson into one list of parts: a digest of a plan's every object builds no string per nested value. */
function appendStableJson(value: unknown, parts: string[]): void {
  if (Array.isArray(value)) {
    parts.push('[')
    for (let i = 0; i < value.length; i++) {
      if (i > 0) parts.push(',')
      appendStableJson(value[i], parts)
    }
    parts.push(']')
  } else if (value !== null && typeof value === 'object') {
    const record = value as Record<string, unknown>
    parts.push('{')
    let first = true
    for (const key of sortKeysInPlace(Object.keys(record), byCodePoint)) {
      if (record[key] === undefined) continue
      parts.push(first ? '' : ',', JSON.stringify(key), ':')
      appendStableJson(record[key], parts)
      first = false
    }
    parts.push('}')
  } else {
    parts.push(JSON.stringify(value) ?? 'null')
  }
}

export function sha256(text: string): string {
  return `sha256:${nodeCrypto().createHash('sha256').update(text).digest('hex')}`
}

/**
 * node:crypto, loaded when a digest is first taken: an import would load it on every command that reaches the
 * planner (~2 ms of start-up), and inventory takes no digest.
 */
let crypto: typeof import('node:crypto') | undefined

export function nodeCrypto(): typeof import('node:crypto') {
  // Looked up once: a plan takes thousands of digests.
  return (crypto ??= process.getBuiltinModule('node:crypto'))
}

export function digestOf(value: unknown): string {
  return sha256(stableJson(value))
}

const SERVER_SET_METADATA = [
  'resourceVersion',
  'uid',
  'managedFields',
  'creationTimestamp',
  'generation',
  'selfLink',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
]

/**
 * A copy of an object fit to be stored in a plan and re-created later: no server-set fields
 * (resourceVersion, uid, managedFields, status, …), which a create would reject or ignore.
 */
export function cleanObject(obj: KubeObject): KubeObject {
  // What is left out is not copied first (an object read from the API carries its managedFields, often its larger
  // part); the keys keep their order.
  const kept: Record<string, unknown> = {}
  for (const key of Object.keys(obj)) {
    if (key === 'status') continue
    const value = (obj as Record<string, unknown>)[key]
    setOwn(kept, key, key === 'metadata' ? withoutServerSetMetadata(obj.metadata) : value)
  }
  const copy = cloneJson(kept) as KubeObject
  if (copy.metadata.annotations && Object.keys(copy.metadata.annotations).length === 0) delete copy.metadata.annotations
  if (copy.metadata.labels && Object.keys(copy.metadata.labels).length === 0) delete copy.metadata.labels
  return copy
}

function withoutServerSetMetadata(metadata: KubeObject['metadata']): KubeObject['metadata'] {
  const out: Record<string, unknown> = {}
  for (const key of Object.keys(metadata)) if (!SERVER_SET_METADATA.includes(key)) setOwn(out, key, metadata[key])
  return out as KubeObject['metadata']
}

// Only metadata that Istio reads changes what an object means. Labels and annotations added by
// GitOps tools (Argo CD tracking ids, Helm release names, last-applied-configuration) must not make a
// plan look stale.
const MEANINGFUL_METADATA = /^([a-z0-9.-]+\.)?istio\.io\//

function meaningful(map: Record<string, string> | undefined): Record<string, string> {
  return Object.fromEntries(
    Object.entries(map ?? {}).filter(([k]) => MEANINGFUL_METADATA.test(k) && !k.startsWith('mesh-migrate.io/')),
  )
}

/**
 * Fingerprint of what an object means: its spec (and any other top-level data) plus the labels and
 * annotations Istio reads (`*istio.io/*`), ignoring server-set fields, status and bookkeeping
 * metadata. Computed the same way from a manifest and from the API, so apply can tell whether an
 * object changed since the plan was made.
 */
export function objectFingerprint(obj: KubeObject): string {
  // What cleanObject would keep of it, without copying the object: everything but apiVersion, metadata and status.
  const {apiVersion: _apiVersion, metadata, status: _status, ...content} = obj
  return digestOf({labels: meaningful(metadata.labels), annotations: meaningful(metadata.annotations), content})
}
