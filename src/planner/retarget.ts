// Carrying selector-based L7 policies to the waypoint (DOMAIN §3.1 "Re-targeting rules", SPEC §6 step 4).
// Sidecars and ztunnel ignore targetRefs policies, so the copies are inert until the switch; the
// originals are deleted right after the restart, when ztunnel would otherwise degrade them.
import {cleanObject} from './canonical.js'
import type {Finding, InventoryItem, KubeObject, ObjectRef} from './model.js'
import {MANAGED_BY_LABEL, MANAGED_BY_VALUE, PLAN_ANNOTATION} from './plan-types.js'
import {formatRef, groupOf, refKey} from './refs.js'

export const COPIED_FROM_ANNOTATION = 'mesh-migrate.io/copied-from'

/** Kinds whose selector copies the waypoint can apply through targetRefs. */
export const RETARGETABLE_KINDS = new Set([
  'security.istio.io/AuthorizationPolicy',
  'security.istio.io/RequestAuthentication',
  'telemetry.istio.io/Telemetry',
  'extensions.istio.io/WasmPlugin',
])

// AuthorizationPolicy allows at most 16 targetRefs (CEL rule in the CRD).
const MAX_TARGET_REFS = 16

export interface Retargeting {
  original: KubeObject
  copy: KubeObject
  /** Whether the original must be deleted after the restart (it degrades at ztunnel or just stops mattering). */
  deleteOriginal: boolean
}

export interface RetargetResult {
  retargeted: Retargeting[]
  findings: Finding[]
}

export function isRetargetable(obj: KubeObject): boolean {
  return RETARGETABLE_KINDS.has(`${groupOf(obj.apiVersion)}/${obj.kind}`)
}

/** Name of the waypoint copy of a policy. */
export function copyName(name: string): string {
  const suffix = '-waypoint'
  return name.length + suffix.length <= 253 ? `${name}${suffix}` : `${name.slice(0, 253 - suffix.length)}${suffix}`
}

/** Stamp an object the plan creates so rollback can tell it is ours (SPEC §5). */
export function markManaged(obj: KubeObject, planName: string): KubeObject {
  const copy = structuredClone(obj)
  copy.metadata.labels = {...copy.metadata.labels, [MANAGED_BY_LABEL]: MANAGED_BY_VALUE}
  copy.metadata.annotations = {...copy.metadata.annotations, [PLAN_ANNOTATION]: planName}
  return copy
}

interface TargetRef {
  group: string
  kind: string
  name: string
}

function targetRefsFor(item: InventoryItem, waypointName: string): TargetRef[] | undefined {
  const services = [...new Set(item.services ?? [])].sort()
  if (item.scope === 'namespace') {
    // Selector-less policies governed every workload of the namespace: on the waypoint that is every
    // Service bound to it, i.e. the Gateway itself.
    return [{group: 'gateway.networking.k8s.io', kind: 'Gateway', name: waypointName}]
  }
  if (services.length === 0) return undefined
  if (services.length > MAX_TARGET_REFS) return [{group: 'gateway.networking.k8s.io', kind: 'Gateway', name: waypointName}]
  return services.map((name) => ({group: '', kind: 'Service', name}))
}

/**
 * The targetRefs copies for the inventory's `retarget` items of this namespace.
 * Items that cannot be carried (no Service in front of the selected pods) become findings.
 */
export function planRetargeting(opts: {
  namespace: string
  planName: string
  waypointName: string
  items: InventoryItem[]
  objects: KubeObject[]
}): RetargetResult {
  const byKey = new Map(opts.objects.map((o) => [refKey({apiVersion: o.apiVersion, kind: o.kind, namespace: o.metadata.namespace, name: o.metadata.name}), o]))
  const retargeted: Retargeting[] = []
  const findings: Finding[] = []
  for (const item of opts.items) {
    if (item.action !== 'retarget' || item.ref.namespace !== opts.namespace) continue
    const original = byKey.get(refKey(item.ref))
    if (!original || !isRetargetable(original)) continue
    if (original.spec?.targetRefs || original.spec?.targetRef) continue
    const targetRefs = targetRefsFor(item, opts.waypointName)
    if (!targetRefs) {
      findings.push(noServiceFinding(item.ref))
      continue
    }
    const source = cleanObject(original)
    const spec = structuredClone(source.spec ?? {})
    delete spec.selector
    delete spec.workloadSelector
    spec.targetRefs = targetRefs
    const copy = markManaged(
      {
        apiVersion: source.apiVersion,
        kind: source.kind,
        metadata: {
          name: copyName(source.metadata.name),
          namespace: opts.namespace,
          ...(source.metadata.labels ? {labels: {...source.metadata.labels}} : {}),
          annotations: {[COPIED_FROM_ANNOTATION]: source.metadata.name},
        },
        spec,
      },
      opts.planName,
    )
    retargeted.push({original: source, copy, deleteOriginal: true})
  }
  return {retargeted, findings}
}

function noServiceFinding(ref: ObjectRef): Finding {
  return {
    id: `no-service/${ref.kind}/${ref.namespace}/${ref.name}`,
    code: 'RetargetNoService',
    severity: 'blocker',
    ref,
    message: `${formatRef(ref)} has L7 rules but no Service selects the pods it applies to: a service waypoint never sees their traffic, so the policy cannot be carried over.`,
    fix: 'Put a Service in front of those pods (then re-run plan), or rewrite the policy with L4 fields only.',
  }
}
