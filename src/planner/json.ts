// Small guards for reading untyped Kubernetes JSON (manifests and API objects are `unknown` until checked).
import rfdc from 'rfdc'

/**
 * A deep copy of JSON data (objects as read from manifests or the API). structuredClone also copies what JSON data
 * never holds (cycles, Maps, typed arrays) and costs ten times as much for a Kubernetes object: a plan copies every
 * policy it re-targets several times, and a fleet plan thousands.
 */
export const cloneJson: <T>(value: T) => T = rfdc()

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** The string-valued entries of a map (labels, annotations, selectors); anything else is dropped. */
export function stringMap(value: unknown): Record<string, string> {
  if (!isRecord(value)) return {}
  const out: Record<string, string> = {}
  for (const [k, v] of Object.entries(value)) if (typeof v === 'string') out[k] = v
  return out
}

/** Items by key, each group in input order (Map.groupBy, which Node 20 lacks). */
export function groupBy<T>(items: Iterable<T>, keyOf: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>()
  for (const item of items) {
    const key = keyOf(item)
    const group = groups.get(key)
    if (group) group.push(item)
    else groups.set(key, [item])
  }
  return groups
}
