// Field sets as sigs.k8s.io/structured-merge-diff computes them: the set of leaf fields,
// atomic values and list items an object sets, with path elements in the fieldsV1
// notation ("f:name", "k:{...}", "v:...") and the printing used in conflict messages.
import {additionalSchema, childSchema, deepEqual, isObject, type StructuralSchema} from '../validation/schema.js'

export type Path = readonly string[]

/** Whether object keys at a node are declared struct fields (vs map entries / deduced). */
export interface TypeMode {
  /** Built-in kinds: objects are structs unless the schema says map (additionalProperties). */
  builtin: boolean
}

export class FieldSet {
  private readonly map = new Map<string, Path>()

  static of(paths: Iterable<Path>): FieldSet {
    const s = new FieldSet()
    for (const p of paths) s.insert(p)
    return s
  }

  insert(p: Path): void {
    this.map.set(JSON.stringify(p), p)
  }
  has(p: Path): boolean {
    return this.map.has(JSON.stringify(p))
  }
  get size(): number {
    return this.map.size
  }
  isEmpty(): boolean {
    return this.map.size === 0
  }
  paths(): Path[] {
    return [...this.map.values()]
  }
  union(o: FieldSet): FieldSet {
    return FieldSet.of([...this.paths(), ...o.paths()])
  }
  difference(o: FieldSet): FieldSet {
    return FieldSet.of(this.paths().filter((p) => !o.has(p)))
  }
  intersection(o: FieldSet): FieldSet {
    return FieldSet.of(this.paths().filter((p) => o.has(p)))
  }
  /** Paths equal to `p` or below it. */
  hasSelfOrDescendant(p: Path): boolean {
    return this.paths().some((q) => q.length >= p.length && p.every((pe, i) => q[i] === pe))
  }
  /** Drops `p` and everything below it. */
  withoutPrefix(p: Path): FieldSet {
    return FieldSet.of(this.paths().filter((q) => !(q.length >= p.length && p.every((pe, i) => q[i] === pe))))
  }

  static fromFieldsV1(v: unknown): FieldSet {
    const s = new FieldSet()
    const walk = (node: unknown, prefix: string[]) => {
      if (!isObject(node)) return
      for (const [k, child] of Object.entries(node)) {
        if (k === '.') {
          s.insert(prefix)
          continue
        }
        const p = [...prefix, k]
        if (isObject(child) && Object.keys(child).length > 0) walk(child, p)
        else s.insert(p)
      }
    }
    walk(v, [])
    return s
  }

  toFieldsV1(): Record<string, unknown> {
    interface Node {
      self: boolean
      children: Map<string, Node>
    }
    const root: Node = {self: false, children: new Map()}
    for (const p of this.paths()) {
      let n = root
      for (const pe of p) {
        let c = n.children.get(pe)
        if (!c) {
          c = {self: false, children: new Map()}
          n.children.set(pe, c)
        }
        n = c
      }
      n.self = true
    }
    const emit = (n: Node): Record<string, unknown> => {
      const out: Record<string, unknown> = {}
      if (n.self && n.children.size) out['.'] = {}
      for (const k of [...n.children.keys()].sort(comparePE)) out[k] = emit(n.children.get(k)!)
      return out
    }
    return emit(root)
  }
}

const PE_ORDER: Record<string, number> = {f: 0, k: 1, v: 2, i: 3}
function comparePE(a: string, b: string): number {
  const ta = PE_ORDER[a[0]!] ?? 9
  const tb = PE_ORDER[b[0]!] ?? 9
  if (ta !== tb) return ta - tb
  return a < b ? -1 : a > b ? 1 : 0
}

// ---------------------------------------------------------------------------------------

function listType(s: StructuralSchema | undefined): 'atomic' | 'set' | 'map' {
  return s?.['x-kubernetes-list-type'] ?? 'atomic'
}

export function listKeys(s: StructuralSchema | undefined): string[] {
  return s?.['x-kubernetes-list-map-keys'] ?? []
}

/** "k:{...}" for an item of a map list (keys sorted, defaults for missing key fields). */
export function itemPE(item: unknown, listSchema: StructuralSchema | undefined): string {
  if (listType(listSchema) === 'set') return `v:${JSON.stringify(item)}`
  const keys = [...listKeys(listSchema)].sort()
  const k: Record<string, unknown> = {}
  for (const key of keys) {
    const v = isObject(item) ? (item[key] ?? listSchema?.items?.properties?.[key]?.default) : undefined
    if (v !== undefined) k[key] = v
  }
  return `k:${JSON.stringify(k)}`
}

function isMapNode(s: StructuralSchema | undefined): boolean {
  return !!additionalSchema(s)
}

function declaredField(s: StructuralSchema | undefined, key: string, mode: TypeMode): boolean {
  if (mode.builtin) return !isMapNode(s)
  return !!s?.properties?.[key]
}

/** typed.ToFieldSet: every leaf, atomic value and list item the object sets. */
export function fieldSetOf(value: unknown, schema: StructuralSchema | undefined, mode: TypeMode): FieldSet {
  const set = new FieldSet()
  walkSet(value, schema, [], set, mode)
  return set
}

function walkSet(value: unknown, s: StructuralSchema | undefined, path: string[], set: FieldSet, mode: TypeMode): void {
  if (Array.isArray(value)) {
    const lt = listType(s)
    if (lt === 'atomic') {
      set.insert(path)
      return
    }
    for (const item of value) {
      const p = [...path, itemPE(item, s)]
      if (lt === 'map') walkSet(item, s?.items, p, set, mode)
      set.insert(p)
    }
    return
  }
  if (isObject(value)) {
    if (s?.['x-kubernetes-map-type'] === 'atomic') {
      set.insert(path)
      return
    }
    for (const [k, v] of Object.entries(value)) {
      const p = [...path, `f:${k}`]
      walkSet(v, childSchema(s, k), p, set, mode)
      if (v === null || (isObject(v) && Object.keys(v).length === 0) || !declaredField(s, k, mode)) set.insert(p)
    }
    return
  }
  set.insert(path)
}

/** Value at a field path, or undefined. */
export function valueAt(obj: unknown, path: Path, schema: StructuralSchema | undefined): unknown {
  let cur: unknown = obj
  let s = schema
  for (const pe of path) {
    if (pe.startsWith('f:')) {
      if (!isObject(cur)) return undefined
      const k = pe.slice(2)
      cur = cur[k]
      s = childSchema(s, k)
    } else if (pe.startsWith('k:') || pe.startsWith('v:')) {
      if (!Array.isArray(cur)) return undefined
      const listSchema = s
      cur = cur.find((item) => itemPE(item, listSchema) === pe)
      s = s?.items
    } else return undefined
    if (cur === undefined) return undefined
  }
  return cur
}

/** Deletes the field or list item a path names (in place). */
export function removePath(obj: unknown, path: Path, schema: StructuralSchema | undefined): void {
  if (path.length === 0) return
  let cur: unknown = obj
  let s = schema
  for (const pe of path.slice(0, -1)) {
    if (pe.startsWith('f:')) {
      if (!isObject(cur)) return
      cur = cur[pe.slice(2)]
      s = childSchema(s, pe.slice(2))
    } else {
      if (!Array.isArray(cur)) return
      const ls = s
      cur = cur.find((item) => itemPE(item, ls) === pe)
      s = s?.items
    }
  }
  const last = path[path.length - 1]!
  if (last.startsWith('f:')) {
    if (isObject(cur)) delete cur[last.slice(2)]
  } else if (Array.isArray(cur)) {
    const idx = cur.findIndex((item) => itemPE(item, s) === last)
    if (idx >= 0) cur.splice(idx, 1)
  }
}

export interface Comparison {
  added: FieldSet
  modified: FieldSet
  removed: FieldSet
}

/** typed.Compare over two objects. */
export function compareObjects(
  oldObj: unknown,
  newObj: unknown,
  schema: StructuralSchema | undefined,
  mode: TypeMode,
): Comparison {
  const fo = fieldSetOf(oldObj ?? {}, schema, mode)
  const fn = fieldSetOf(newObj, schema, mode)
  const added = fn.difference(fo)
  // Maps and structs that did not exist before count as added themselves.
  for (const p of fn.paths()) {
    for (let i = 1; i < p.length; i++) {
      const prefix = p.slice(0, i)
      if (!prefix[prefix.length - 1]!.startsWith('f:')) continue
      if (valueAt(oldObj ?? {}, prefix, schema) === undefined && isObject(valueAt(newObj, prefix, schema)))
        added.insert(prefix)
    }
  }
  const removed = fo.difference(fn)
  const modified = new FieldSet()
  for (const p of fn.paths()) {
    if (!fo.has(p)) continue
    const a = valueAt(oldObj, p, schema)
    const b = valueAt(newObj, p, schema)
    if (isObject(b) || (Array.isArray(b) && listType(schemaAt(schema, p)) !== 'atomic')) continue
    if (!deepEqual(a, b)) modified.insert(p)
  }
  return {added, modified, removed}
}

function schemaAt(schema: StructuralSchema | undefined, path: Path): StructuralSchema | undefined {
  let s = schema
  for (const pe of path) s = pe.startsWith('f:') ? childSchema(s, pe.slice(2)) : s?.items
  return s
}

/** fieldpath.Path.String(): ".spec.containers[name=\"nginx\"].image". */
export function pathString(path: Path): string {
  return path
    .map((pe) => {
      if (pe.startsWith('f:')) return `.${pe.slice(2)}`
      if (pe.startsWith('k:')) {
        const k = JSON.parse(pe.slice(2)) as Record<string, unknown>
        return `[${Object.entries(k)
          .map(([n, v]) => `${n}=${JSON.stringify(v)}`)
          .join(',')}]`
      }
      if (pe.startsWith('v:')) return `[=${pe.slice(2)}]`
      if (pe.startsWith('i:')) return `[${pe.slice(2)}]`
      return pe
    })
    .join('')
}

/**
 * Fields of an applied configuration the schema does not declare, as structured-merge-diff
 * reports them when it converts the configuration to a typed value (custom resources: the
 * schema is complete, so anything outside it is an error, whatever fieldValidation says).
 */
export function undeclaredFields(config: unknown, schema: StructuralSchema | undefined): Path[] {
  const out: Path[] = []
  const walk = (v: unknown, s: StructuralSchema | undefined, path: string[], root: boolean) => {
    if (!s) return
    if (Array.isArray(v)) {
      if (s.items) for (const item of v) walk(item, s.items, [...path, itemPE(item, s)], false)
      return
    }
    if (!isObject(v)) return
    const open =
      s['x-kubernetes-preserve-unknown-fields'] === true ||
      additionalSchema(s) !== undefined ||
      s.additionalProperties === true
    for (const [k, child] of Object.entries(v)) {
      if (root && (k === 'apiVersion' || k === 'kind' || k === 'metadata')) continue
      const ps = s.properties?.[k] ?? additionalSchema(s)
      if (ps) walk(child, ps, [...path, `f:${k}`], false)
      else if (!open) out.push([...path, `f:${k}`])
    }
  }
  walk(config, schema, [], true)
  return out
}

// ---------------------------------------------------------------------------------------
// Structured merge (typed.Merge): what server-side apply does with the live object and
// the applied configuration.

export function smdMerge(live: unknown, config: unknown, s: StructuralSchema | undefined): unknown {
  if (config === undefined) return live
  if (Array.isArray(config)) {
    const lt = listType(s)
    if (lt === 'atomic' || !Array.isArray(live)) return structuredClone(config)
    return mergeLists(live, config, s)
  }
  if (isObject(config)) {
    if (s?.['x-kubernetes-map-type'] === 'atomic' || !isObject(live)) return mergeInto({}, config, s)
    return mergeInto(structuredClone(live), config, s)
  }
  return config
}

function mergeInto(
  out: Record<string, unknown>,
  config: Record<string, unknown>,
  s: StructuralSchema | undefined,
): Record<string, unknown> {
  for (const [k, v] of Object.entries(config)) {
    if (v === null) {
      delete out[k]
      continue
    }
    out[k] = smdMerge(out[k], v, childSchema(s, k))
  }
  return out
}

/** merge.go visitListItems: shared items in the config's order, live-only items kept in place. */
function mergeLists(lhs: unknown[], rhs: unknown[], s: StructuralSchema | undefined): unknown[] {
  const pe = (x: unknown) => itemPE(x, s)
  const lPEs = lhs.map(pe)
  const rPEs = rhs.map(pe)
  const lMap = new Map(lhs.map((x, i) => [lPEs[i]!, x]))
  const rMap = new Map(rhs.map((x, i) => [rPEs[i]!, x]))
  const shared = rPEs.filter((p) => lMap.has(p))
  let nextShared = shared.shift()
  const mergedR = new Set<string>()
  const out: unknown[] = []
  const mergeItem = (p: string) => {
    const l = lMap.get(p)
    const r = rMap.get(p)
    if (r === undefined) return structuredClone(l)
    if (listType(s) === 'set') return structuredClone(r)
    return smdMerge(l, r, s?.items)
  }
  for (let li = 0, ri = 0; li < lPEs.length || ri < rPEs.length;) {
    if (li < lPEs.length && ri < rPEs.length) {
      const p = lPEs[li]!
      if (p === rPEs[ri]) {
        mergedR.add(p)
        out.push(mergeItem(p))
        li++
        ri++
        nextShared = shared.shift()
        continue
      }
      if (rMap.has(p) && nextShared !== undefined && nextShared !== p) {
        li++
        continue
      }
    }
    if (li < lPEs.length) {
      const p = lPEs[li]!
      if (!rMap.has(p)) {
        out.push(structuredClone(lhs[li]))
        li++
        continue
      } else if (mergedR.has(p)) {
        li++
        continue
      }
    }
    if (ri < rPEs.length) {
      const p = rPEs[ri]!
      mergedR.add(p)
      out.push(mergeItem(p))
      ri++
      if (nextShared !== undefined && nextShared === p) nextShared = shared.shift()
    }
  }
  return out
}
