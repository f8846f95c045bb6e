// version.CompareKubeAwareVersionStrings: v1 > v1beta2 > v1beta1 > v1alpha1 > non-kube versions.
const KUBE_VERSION = /^v(\d+)(?:(alpha|beta)(\d+))?$/

function parse(v: string): {major: number; stability: number; minor: number} | undefined {
  const m = KUBE_VERSION.exec(v)
  if (!m) return undefined
  const stability = m[2] === undefined ? 2 : m[2] === 'beta' ? 1 : 0
  return {major: Number(m[1]), stability, minor: m[3] === undefined ? 0 : Number(m[3])}
}

/** Negative when `a` has the higher priority (sorts first). */
export function compareKubeAwareVersions(a: string, b: string): number {
  const pa = parse(a)
  const pb = parse(b)
  if (pa && pb) {
    if (pa.stability !== pb.stability) return pb.stability - pa.stability
    if (pa.major !== pb.major) return pb.major - pa.major
    return pb.minor - pa.minor
  }
  if (pa) return -1
  if (pb) return 1
  return a < b ? -1 : a > b ? 1 : 0
}

export function sortKubeAware(versions: string[]): string[] {
  return [...versions].sort(compareKubeAwareVersions)
}
