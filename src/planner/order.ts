// How the tool orders names. A plan is reviewed as a diff and signed by its digest, so its order must not depend
// on who runs `plan`: String.prototype.localeCompare follows the user's locale (with LC_ALL=et_EE.UTF-8 it sorts
// "svc-z" before "svc-t"), and its first call builds ICU's collator (~6 ms of every run). Kubernetes names are
// ASCII, and code-point order is what kube-apiserver lists them in.

/** Code-point (for ASCII, byte) order of two strings. */
export function byCodePoint(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}
