// What a classifier returns: inventory items, their reasons, and findings with stable ids; message helpers.
import type {ClassifyContext} from '../context.js'
import type {Action, Finding, InventoryItem, KubeObject, ObjectRef, Verdict, WorkloadItem} from '../model.js'
import {type EntryWorkload, entryNames} from '../workload-entries.js'

/** The result of classifying one object. */
export interface Classified {
  item: InventoryItem
  findings: Finding[]
}

/** One module per kind (or family of kinds) implements this. */
export interface KindClassifier {
  /** `<api group>/<Kind>` keys, independent of the served version. */
  kinds: string[]
  /** Whether an object *outside* the migrated namespace bears on it (objects inside always do). */
  relevantElsewhere(obj: KubeObject, ctx: ClassifyContext): boolean
  classify(obj: KubeObject, ctx: ClassifyContext): Classified
}

export function reason(path: string, why: string): string {
  return `${path}: ${why}`
}

/**
 * A selector policy whose selector matches no workload of the namespace: no effect now (inert); the plan deletes
 * it with the rest when it is the namespace's own (`no-effect`), and keeps another namespace's.
 */
export function unmatchedSelector(
  field: string,
  ref: ObjectRef,
  local: boolean,
  reasons: string[],
  extra: Pick<InventoryItem, 'scope' | 'services'>,
  findings: Finding[] = [],
): Classified {
  reasons.push(
    reason(field, 'matches no workload of the namespace: no effect now (re-run plan if such pods are added)'),
  )
  return {item: item(ref, 'inert', local ? 'no-effect' : 'keep', reasons, extra), findings}
}

/**
 * A selector policy that matches no pod of the namespace but WorkloadEntries/WorkloadGroups (issue 21 §5): it is
 * enforced by the proxies of the VMs among them, which the migration leaves as they are (VMs cannot join ambient
 * and keep their sidecars: VmWorkloadUnsupported); entries without a proxy (external endpoints) enforce nothing,
 * before or after the migration.
 */
export function entriesOnlySelector(
  field: string,
  ref: ObjectRef,
  local: boolean,
  reasons: string[],
  extra: Pick<InventoryItem, 'scope' | 'services'>,
  entries: EntryWorkload[],
  findings: Finding[] = [],
): Classified {
  const vms = entries.filter((e) => e.sidecar)
  if (vms.length > 0) {
    reasons.push(
      reason(
        field,
        `matches no pod of the namespace, only VM workload(s) ${entryNames(vms)} with a sidecar, which enforces it: unaffected by the migration (VMs cannot join ambient and keep their sidecars)`,
      ),
    )
    return {item: item(ref, 'unaffected', 'keep', reasons, extra), findings}
  }
  reasons.push(
    reason(
      field,
      `matches no pod of the namespace, only ${entries.map((e) => `${e.ref.kind} ${e.ref.name} (${e.identity})`).join(', ')}: an endpoint without a proxy enforces nothing, before or after the migration`,
    ),
  )
  return {item: item(ref, 'inert', local ? 'no-effect' : 'keep', reasons, extra), findings}
}

export function item(
  ref: ObjectRef,
  verdict: Verdict,
  action: Action,
  reasons: string[],
  extra: Pick<InventoryItem, 'scope' | 'ztunnel' | 'services'> = {},
): InventoryItem {
  const out: InventoryItem = {ref, verdict, action, reasons}
  if (extra.scope !== undefined) out.scope = extra.scope
  if (extra.ztunnel !== undefined) out.ztunnel = extra.ztunnel
  if (extra.services !== undefined) out.services = extra.services
  return out
}

/** The stable id of a classifier's finding: `<prefix>/<Kind>/<namespace>/<name>[/<topic>]`. */
export function classifiedId(prefix: string, ref: ObjectRef, topic?: string): string {
  return [prefix, ref.kind, ref.namespace ?? '', ref.name, ...(topic ? [topic] : [])].join('/')
}

export function uniqSorted(values: Iterable<string>): string[] {
  return [...new Set(values)].sort()
}

/** Non-empty string array, or undefined. Manifests may carry scalars or nulls where lists belong. */
export function list(value: unknown): string[] | undefined {
  if (!Array.isArray(value) || value.length === 0) return undefined
  return value.map((v) => String(v))
}

/** Go's strconv.ParseBool, which istiod uses for boolean annotations and labels. */
export function parseBool(value: string | undefined): boolean | undefined {
  if (value === undefined) return undefined
  if (['1', 't', 'T', 'true', 'TRUE', 'True'].includes(value)) return true
  if (['0', 'f', 'F', 'false', 'FALSE', 'False'].includes(value)) return false
  return undefined
}

// --- Istio version -------------------------------------------------------------------------------

/** Minor version from "1.NN" / "1.NN.P", or undefined when unknown or unparsable. */
export function istioMinor(ctx: Pick<ClassifyContext, 'istioVersion'>): number | undefined {
  const m = /^v?1\.(\d+)/.exec(ctx.istioVersion ?? '')
  return m ? Number(m[1]) : undefined
}

export function workloadNames(workloads: WorkloadItem[]): string {
  return uniqSorted(workloads.map((w) => w.ref.name)).join(', ')
}
