// RFC 7386 JSON merge patch (application/merge-patch+json): objects merge key by key,
// `null` deletes, anything else (arrays included) replaces.
import {deepCopy, isObject} from '../validation/schema.js'

export function applyMergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return deepCopy(patch)
  const out: Record<string, unknown> = isObject(target) ? {...target} : {}
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k]
    else out[k] = applyMergePatch(out[k], v)
  }
  return out
}
