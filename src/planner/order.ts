// How the tool orders names and kinds. A plan is reviewed as a diff and signed by its digest, so its order must not
// depend on who runs `plan`: String.prototype.localeCompare follows the user's locale (with LC_ALL=et_EE.UTF-8 it
// sorts "svc-z" before "svc-t"), and its first call builds ICU's collator (~6 ms of every run). Kubernetes names
// are ASCII, and byte order is what kube-apiserver lists them in. Kinds are mixed-case: upper case sorts first
// (GRPCRoute before Gateway, TLSRoute before Telemetry), where localeCompare ignored case.

/** UTF-16 code-unit order of two strings: for ASCII, byte order. */
export function byCodePoint(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}
