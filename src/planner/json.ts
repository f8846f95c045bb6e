// Small guards for reading untyped Kubernetes JSON (manifests and API objects are `unknown` until checked).
/** `obj[key] = value` as an own property, `__proto__` too (assigned, it would set the prototype instead). */
export function setOwn(obj: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__')
    Object.defineProperty(obj, key, {value, enumerable: true, writable: true, configurable: true})
  else obj[key] = value
}

/**
 * A deep copy of JSON data (objects as read from manifests or the API). structuredClone costs ten times as much for a
 * Kubernetes object, and a fleet plan copies thousands of policies (plan -A of 300 namespaces: 0.1 s). Deep-copy
 * libraries assign each key, which makes an own `__proto__` key (JSON.parse and yaml read one from a manifest) the
 * copy's prototype: this copy keeps it a key, as structuredClone does.
 */
export function cloneJson<T>(value: T): T {
  if (Array.isArray(value)) return value.map((v: unknown) => cloneJson(v)) as T
  if (value === null || typeof value !== 'object') return value
  const out: Record<string, unknown> = {}
  for (const key of Object.keys(value)) setOwn(out, key, cloneJson((value as Record<string, unknown>)[key]))
  return out as T
}

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
