// Strategic merge patch (application/strategic-merge-patch+json) for built-in kinds,
// following k8s.io/apimachinery/pkg/util/strategicpatch: lists with a patchMergeKey merge
// item by item, primitive lists with patchStrategy "merge" union, everything else replaces;
// directives `$patch: replace|delete|merge`, `$retainKeys`, `$deleteFromPrimitiveList/<f>`
// and `$setElementOrder/<f>` are honoured.
import {childSchema, deepCopy, deepEqual, isObject, type StructuralSchema} from '../validation/schema.js'

export class StrategicPatchError extends Error {}

const DELETE_FROM = '$deleteFromPrimitiveList/'
const SET_ORDER = '$setElementOrder/'

function strategyOf(s: StructuralSchema | undefined): string[] {
  return (s?.['x-kubernetes-patch-strategy'] ?? '').split(',').filter(Boolean)
}

export function applyStrategicMergePatch(
  original: unknown,
  patch: unknown,
  schema: StructuralSchema | undefined,
): unknown {
  if (!isObject(patch)) throw new StrategicPatchError('unable to find api field in struct for the patch')
  return mergeMap(isObject(original) ? original : {}, patch, schema)
}

function mergeMap(
  original: Record<string, any>,
  patch: Record<string, any>,
  schema: StructuralSchema | undefined,
): Record<string, any> | undefined {
  const directive = patch.$patch
  if (directive === 'delete') return undefined
  if (directive === 'replace') {
    const out: Record<string, any> = {}
    for (const [k, v] of Object.entries(patch)) if (k !== '$patch') out[k] = deepCopy(v)
    return out
  }
  if (directive !== undefined && directive !== 'merge')
    throw new StrategicPatchError(`Unknown patch type: ${directive} in map: ${JSON.stringify(patch)}`)
  const out: Record<string, any> = deepCopy(original)

  const retainKeys = patch.$retainKeys
  if (Array.isArray(retainKeys)) {
    for (const k of Object.keys(out)) if (!retainKeys.includes(k) && !(k in patch)) delete out[k]
  }

  for (const [key, value] of Object.entries(patch)) {
    if (key === '$patch' || key === '$retainKeys') continue
    if (key.startsWith(DELETE_FROM)) {
      const field = key.slice(DELETE_FROM.length)
      if (Array.isArray(out[field]) && Array.isArray(value))
        out[field] = out[field].filter((x: unknown) => !value.some((v) => deepEqual(v, x)))
      continue
    }
    if (key.startsWith(SET_ORDER)) continue
    const fieldSchema = childSchema(schema, key)
    if (value === null) {
      delete out[key]
      continue
    }
    if (Array.isArray(value)) {
      const merged = mergeList(Array.isArray(out[key]) ? out[key] : [], value, fieldSchema)
      const order = patch[`${SET_ORDER}${key}`]
      out[key] = Array.isArray(order) ? applyOrder(merged, order, fieldSchema) : merged
      continue
    }
    if (isObject(value)) {
      const merged = mergeMap(isObject(out[key]) ? out[key] : {}, value, fieldSchema)
      if (merged === undefined) delete out[key]
      else out[key] = merged
      continue
    }
    out[key] = value
  }
  return out
}

function mergeList(original: unknown[], patch: unknown[], schema: StructuralSchema | undefined): unknown[] {
  const strategy = strategyOf(schema)
  // `- $patch: replace` anywhere in the list replaces the list with the other items.
  if (patch.some((x) => isObject(x) && x.$patch === 'replace'))
    return patch.filter((x) => !(isObject(x) && x.$patch === 'replace')).map(deepCopy)
  if (!strategy.includes('merge')) return patch.map(deepCopy)
  const mergeKey = schema?.['x-kubernetes-patch-merge-key']
  if (!mergeKey) {
    // Primitive list with merge strategy (e.g. finalizers): union, original order first.
    const out = original.map(deepCopy)
    for (const v of patch) if (!out.some((x) => deepEqual(x, v))) out.push(deepCopy(v))
    return out
  }
  const itemSchema = schema?.items
  const out = original.map(deepCopy) as Record<string, any>[]
  for (const item of patch) {
    if (!isObject(item))
      throw new StrategicPatchError(`merging an object in json but data type is not struct, instead is: ${typeof item}`)
    if (!(mergeKey in item))
      throw new StrategicPatchError(`map: ${JSON.stringify(item)} does not contain declared merge key: ${mergeKey}`)
    const idx = out.findIndex((o) => isObject(o) && deepEqual(o[mergeKey], item[mergeKey]))
    if (item.$patch === 'delete') {
      if (idx >= 0) out.splice(idx, 1)
      continue
    }
    if (idx >= 0) {
      const merged = mergeMap(out[idx]!, item, itemSchema)
      if (merged === undefined) out.splice(idx, 1)
      else out[idx] = merged
    } else {
      const fresh = mergeMap({}, item, itemSchema)
      if (fresh !== undefined) out.push(fresh)
    }
  }
  return out
}

/** `$setElementOrder`: listed items first, in the given order; the rest keep their place after. */
function applyOrder(list: unknown[], order: unknown[], schema: StructuralSchema | undefined): unknown[] {
  const mergeKey = schema?.['x-kubernetes-patch-merge-key']
  const keyOf = (x: unknown) => (mergeKey && isObject(x) ? x[mergeKey] : x)
  const ordered: unknown[] = []
  for (const o of order) {
    const want = keyOf(o)
    const found = list.find((x) => deepEqual(keyOf(x), want))
    if (found !== undefined && !ordered.includes(found)) ordered.push(found)
  }
  for (const x of list) if (!ordered.includes(x)) ordered.push(x)
  return ordered
}
