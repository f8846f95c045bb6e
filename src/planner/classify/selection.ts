// Which workloads and Services of the migrated namespace a selector covers.
import type {ClassifyContext} from '../context.js'
import type {Finding, InventoryItem, ObjectRef, ServiceItem, WorkloadItem} from '../model.js'
import type {LabelSelector, Labels} from '../istio-types.js'
import {groupBy, isRecord} from '../json.js'
import {selectorMatches} from '../namespace.js'
import {memo} from './objects.js'
import {type Classified, entriesOnlySelector, uniqSorted, unmatchedSelector} from './results.js'
import {type EntryWorkload, entryWorkloads} from '../workload-entries.js'

export function hasLabels(labels: Labels | undefined): labels is Labels {
  return isRecord(labels) && Object.keys(labels).length > 0
}

/** Every key of `selector` is in `labels` with the same value (an empty selector matches everything). */
export function labelsSubset(selector: Labels | undefined, labels: Labels | undefined): boolean {
  if (!hasLabels(selector)) return true
  return Object.entries(selector).every(([k, v]) => labels?.[k] === String(v))
}

/** `key=value` → the items carrying that label, in input order: selectors look up candidates instead of scanning. */
function indexByLabel<T>(items: T[], labelsOf: (item: T) => Labels | undefined): Map<string, T[]> {
  const pairs = items.flatMap((item) =>
    Object.entries(labelsOf(item) ?? {}).map(([k, v]) => ({item, key: `${k}=${v}`})),
  )
  return new Map([...groupBy(pairs, (p) => p.key)].map(([key, group]) => [key, group.map((p) => p.item)]))
}

/** Workloads of the namespace a (possibly absent) selector covers. */
export function matchingWorkloads(ctx: ClassifyContext, selector: Labels | undefined): WorkloadItem[] {
  if (!hasLabels(selector)) return [...ctx.workloads]
  const byLabel = memo(ctx, 'workloads-by-label', () => indexByLabel(ctx.workloads, (w) => w.podLabels))
  // Every match carries each of the selector's labels: the smallest bucket holds all candidates.
  let candidates: WorkloadItem[] | undefined
  for (const [k, v] of Object.entries(selector)) {
    const bucket = byLabel.get(`${k}=${String(v)}`) ?? []
    if (!candidates || bucket.length < candidates.length) candidates = bucket
  }
  return (candidates ?? []).filter((w) => labelsSubset(selector, w.podLabels))
}

/**
 * WorkloadEntries and WorkloadGroups of the namespace a (possibly absent) selector covers: selectors match VMs'
 * proxies too, by the entry's labels (issue 21 §5; src/planner/workload-entries.ts).
 */
export function matchingEntries(ctx: ClassifyContext, selector: Labels | undefined): EntryWorkload[] {
  const entries = entryWorkloads(ctx.objects, ctx.namespace)
  return hasLabels(selector) ? entries.filter((e) => labelsSubset(selector, e.labels)) : [...entries]
}

/** Gateways and waypoints keep an Envoy of their own in ambient: config selecting only them is unaffected. */
export function isProxyWorkload(w: WorkloadItem): boolean {
  return w.traits.some((t) => t === 'injected-gateway' || t === 'kube-gateway' || t === 'waypoint')
}

/** Names of the namespace's Services whose selector covers at least one of the workloads. */
export function servicesCovering(ctx: ClassifyContext, workloads: WorkloadItem[]): string[] {
  // Each Service with a selector is filed under one of its selector labels; a workload can only be
  // covered by the Services filed under one of its own pod labels.
  const byOneLabel = memo(ctx, 'services-by-one-selector-label', () => {
    const withSelector = ctx.services.filter((s): s is ServiceItem & {selector: Labels} => hasLabels(s.selector))
    return groupBy(withSelector, (s) => {
      const [k, v] = Object.entries(s.selector)[0]!
      return `${k}=${String(v)}`
    })
  })
  const names = new Set<string>()
  for (const w of workloads) {
    for (const [k, v] of Object.entries(w.podLabels ?? {})) {
      for (const s of byOneLabel.get(`${k}=${v}`) ?? [])
        if (labelsSubset(s.selector, w.podLabels)) names.add(s.ref.name)
    }
  }
  return uniqSorted(names)
}

/** Names of the namespace's Services whose selector covers at least one of the WorkloadEntries/WorkloadGroups. */
export function servicesSelectingEntries(ctx: ClassifyContext, entries: EntryWorkload[]): string[] {
  return uniqSorted(
    ctx.services
      .filter((s) => hasLabels(s.selector) && entries.some((e) => labelsSubset(s.selector, e.labels)))
      .map((s) => s.ref.name),
  )
}

export function allServices(ctx: ClassifyContext): string[] {
  return memo(ctx, 'all-services', () => uniqSorted(ctx.services.map((s) => s.ref.name)))
}

/** Whether the migrated namespace has a Service of that name. */
export function hasOwnService(ctx: ClassifyContext, name: string): boolean {
  return memo(ctx, 'service-names', () => new Set(ctx.services.map((s) => s.ref.name))).has(name)
}

/** Kubernetes LabelSelector evaluation (matchLabels AND matchExpressions). */
export function matchesLabelSelector(selector: LabelSelector | undefined, labels: Labels): boolean {
  return selectorMatches(selector as Parameters<typeof selectorMatches>[0], labels)
}

export interface SelectorCoverage {
  /** Workloads of the namespace the selector covers (all of them when there is no selector). */
  workloads: WorkloadItem[]
  /** There is a selector and it covers only gateway/waypoint pods (which keep their own proxy). */
  proxiesOnly: boolean
  /** There is a selector and it covers no workload of the namespace: no pod, no WorkloadEntry, no WorkloadGroup. */
  unmatched: boolean
  services: string[]
  /** WorkloadEntries/WorkloadGroups of the namespace the selector covers (all of them when there is no selector). */
  entries: EntryWorkload[]
  /** There is a selector and it covers no pod, only WorkloadEntries/WorkloadGroups (VMs, external endpoints). */
  entriesOnly: boolean
}

export function selectorCoverage(ctx: ClassifyContext, selector: Labels | undefined): SelectorCoverage {
  const workloads = matchingWorkloads(ctx, selector)
  const entries = matchingEntries(ctx, selector)
  const selective = hasLabels(selector)
  return {
    workloads,
    entries,
    entriesOnly: selective && workloads.length === 0 && entries.length > 0,
    proxiesOnly: selective && workloads.length > 0 && workloads.every(isProxyWorkload),
    unmatched: selective && workloads.length === 0 && entries.length === 0,
    services: servicesCovering(
      ctx,
      workloads.filter((w) => !isProxyWorkload(w)),
    ),
  }
}

/**
 * The classification of a selector policy that selects no pod: none at all (no effect), or only
 * WorkloadEntries/WorkloadGroups (issue 21 §5: enforced by the VMs' own sidecars, or by nothing for endpoints
 * without a proxy). Undefined when it selects pods: the kind's classifier goes on.
 */
export function noPodSelected(
  ctx: ClassifyContext,
  cov: SelectorCoverage,
  field: string,
  ref: ObjectRef,
  reasons: string[],
  extra: Pick<InventoryItem, 'scope' | 'services'>,
  findings: Finding[] = [],
): Classified | undefined {
  const local = ref.namespace === ctx.namespace
  if (cov.unmatched) return unmatchedSelector(field, ref, local, reasons, extra, findings)
  if (cov.entriesOnly)
    return entriesOnlySelector(
      field,
      ref,
      local,
      reasons,
      {...extra, services: servicesSelectingEntries(ctx, cov.entries)},
      cov.entries,
      findings,
    )
  return undefined
}
