// Small guards for reading untyped Kubernetes JSON (manifests and API objects are `unknown` until checked).

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
