// Limits of untrusted input that parsing enforces (issue 20 §7; docs/contract.md "Untrusted input"). Pure: the file
// reads that enforce the size limit are in src/sources/input-limits.ts.
/** 32 MiB: the bench's 5,000-service namespace is 8.5 MB of YAML. */
export const DEFAULT_MAX_INPUT_BYTES = 32 * 1024 * 1024
/** yaml's own default (toJS maxAliasCount), stated here so that it is a documented limit, not an accident. */
export const MAX_ALIAS_COUNT = 100
/** Deeper than any Kubernetes object (a CRD's openAPIV3Schema included) is nested. */
export const MAX_NESTING_DEPTH = 100

/** The nesting depth of parsed data, walked without recursion; stops counting past `limit`. */
export function nestingDepth(value: unknown, limit = MAX_NESTING_DEPTH): number {
  let deepest = 0
  const stack: [unknown, number][] = [[value, 1]]
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!
    if (v === null || typeof v !== 'object') continue
    deepest = Math.max(deepest, depth)
    if (deepest > limit) return deepest
    for (const child of Array.isArray(v) ? v : Object.values(v)) stack.push([child, depth + 1])
  }
  return deepest
}

/** A stack overflow while parsing or converting: the document is nested too deep to read. */
export function isTooDeep(error: unknown): boolean {
  return error instanceof RangeError && /call stack/i.test(error.message)
}
