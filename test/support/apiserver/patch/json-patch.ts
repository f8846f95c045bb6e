// RFC 6902 JSON patch (application/json-patch+json) with the error texts of
// evanphx/json-patch, which kube-apiserver uses.
import {deepCopy, deepEqual, isObject} from '../validation/schema.js'

export class JsonPatchError extends Error {}
export class JsonPatchDecodeError extends Error {}

interface Operation {
  op: string
  path: string
  from?: string
  value?: unknown
}

function parsePointer(p: string): string[] {
  if (p === '') return []
  if (!p.startsWith('/')) throw new JsonPatchError(`invalid path: ${p}`)
  return p
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
}

/** The container holding the last segment of `path`, or undefined. */
function container(doc: unknown, segments: string[]): unknown {
  let cur = doc
  for (const s of segments.slice(0, -1)) {
    if (Array.isArray(cur)) {
      if (!/^\d+$/.test(s)) return undefined
      cur = cur[Number(s)]
    } else if (isObject(cur)) cur = cur[s]
    else return undefined
  }
  return cur
}

function get(doc: unknown, path: string): {found: boolean; value?: unknown} {
  const segs = parsePointer(path)
  if (segs.length === 0) return {found: true, value: doc}
  const c = container(doc, segs)
  const last = segs[segs.length - 1]!
  if (Array.isArray(c)) {
    if (!/^\d+$/.test(last) || Number(last) >= c.length) return {found: false}
    return {found: true, value: c[Number(last)]}
  }
  if (isObject(c) && Object.prototype.hasOwnProperty.call(c, last)) return {found: true, value: c[last]}
  return {found: false}
}

function add(doc: unknown, path: string, value: unknown): unknown {
  const segs = parsePointer(path)
  if (segs.length === 0) return deepCopy(value)
  const c = container(doc, segs)
  const last = segs[segs.length - 1]!
  if (Array.isArray(c)) {
    const idx = last === '-' ? c.length : /^\d+$/.test(last) ? Number(last) : NaN
    if (Number.isNaN(idx) || idx > c.length)
      throw new JsonPatchError(`Unable to access invalid index: ${last}: invalid index referenced`)
    c.splice(idx, 0, deepCopy(value))
  } else if (isObject(c)) c[last] = deepCopy(value)
  else
    throw new JsonPatchError(
      `add operation does not apply: doc is missing path: ${JSON.stringify(path)}: missing value`,
    )
  return doc
}

function remove(doc: unknown, path: string, opName = 'remove'): unknown {
  const segs = parsePointer(path)
  const c = container(doc, segs)
  const last = segs[segs.length - 1]!
  if (Array.isArray(c)) {
    const idx = Number(last)
    if (!/^\d+$/.test(last) || idx >= c.length)
      throw new JsonPatchError(`Unable to access invalid index: ${last}: invalid index referenced`)
    c.splice(idx, 1)
  } else if (isObject(c)) {
    if (!Object.prototype.hasOwnProperty.call(c, last))
      throw new JsonPatchError(`Unable to remove nonexistent key: ${last}: missing value`)
    delete c[last]
  } else
    throw new JsonPatchError(
      `${opName} operation does not apply: doc is missing path: ${JSON.stringify(path)}: missing value`,
    )
  return doc
}

export function decodeJsonPatch(body: unknown): Operation[] {
  if (!Array.isArray(body))
    throw new JsonPatchDecodeError(
      `json: cannot unmarshal ${isObject(body) ? 'object' : typeof body} into Go value of type jsonpatch.Patch`,
    )
  return body as Operation[]
}

export function applyJsonPatch(target: unknown, ops: Operation[]): unknown {
  let doc = deepCopy(target)
  for (const op of ops) {
    if (typeof op?.path !== 'string') throw new JsonPatchError(`operation missing path`)
    switch (op.op) {
      case 'add':
        if (!('value' in op)) throw new JsonPatchError('add operation missing value')
        doc = add(doc, op.path, op.value)
        break
      case 'remove':
        doc = remove(doc, op.path)
        break
      case 'replace': {
        if (!get(doc, op.path).found)
          throw new JsonPatchError(`replace operation does not apply: doc is missing key: ${op.path}: missing value`)
        const segs = parsePointer(op.path)
        if (segs.length === 0) doc = deepCopy(op.value)
        else {
          const c = container(doc, segs)!
          const last = segs[segs.length - 1]!
          if (Array.isArray(c)) c[Number(last)] = deepCopy(op.value)
          else (c as Record<string, unknown>)[last] = deepCopy(op.value)
        }
        break
      }
      case 'move': {
        const from = get(doc, op.from ?? '')
        if (!from.found)
          throw new JsonPatchError(`move operation does not apply: doc is missing from path: ${op.from}: missing value`)
        doc = remove(doc, op.from!, 'move')
        doc = add(doc, op.path, from.value)
        break
      }
      case 'copy': {
        const from = get(doc, op.from ?? '')
        if (!from.found)
          throw new JsonPatchError(`copy operation does not apply: doc is missing from path: ${op.from}: missing value`)
        doc = add(doc, op.path, from.value)
        break
      }
      case 'test': {
        const cur = get(doc, op.path)
        if (!cur.found ? op.value !== null : !deepEqual(cur.value, op.value))
          throw new JsonPatchError(`testing value ${op.path} failed: test failed`)
        break
      }
      default:
        throw new JsonPatchError(`Unexpected kind: ${op.op}`)
    }
  }
  return doc
}
