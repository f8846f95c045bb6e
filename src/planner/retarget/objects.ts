// Naming and stamping of the objects the policy migration creates (SPEC §5: everything the tool creates
// carries the managed-by label and the plan annotation; rollback deletes only such objects).
import type {KubeObject} from '../model.js'
import {MANAGED_BY_LABEL, MANAGED_BY_VALUE, PLAN_ANNOTATION} from '../plan-types.js'
import {groupOf} from '../refs.js'
import {cloneJson} from '../json.js'

/** Names the original a created object was derived from (`name`, or `namespace/name` when it lives elsewhere). */
export const COPIED_FROM_ANNOTATION = 'mesh-migrate.io/copied-from'

/** Kinds whose selector copies the waypoint can apply through targetRefs. */
export const RETARGETABLE_KINDS = new Set([
  'security.istio.io/AuthorizationPolicy',
  'security.istio.io/RequestAuthentication',
  'telemetry.istio.io/Telemetry',
  'extensions.istio.io/WasmPlugin',
])

const RETARGETABLE_KIND_NAMES = new Set([...RETARGETABLE_KINDS].map((k) => k.slice(k.indexOf('/') + 1)))

export function isRetargetable(obj: Pick<KubeObject, 'apiVersion' | 'kind'>): boolean {
  // By its kind's name first: asked of every object of a snapshot.
  return RETARGETABLE_KIND_NAMES.has(obj.kind) && RETARGETABLE_KINDS.has(`${groupOf(obj.apiVersion)}/${obj.kind}`)
}

// metadata.name of these kinds is a DNS subdomain: at most 253 characters.
const MAX_NAME = 253

/** `name` + `suffix`, shortening `name` so the result stays a valid object name. */
export function suffixedName(name: string, suffix: string): string {
  return name.length + suffix.length <= MAX_NAME
    ? `${name}${suffix}`
    : `${name.slice(0, MAX_NAME - suffix.length).replace(/[-.]+$/, '')}${suffix}`
}

/** Name of the waypoint (targetRefs) copy of a policy. */
export function copyName(name: string): string {
  return suffixedName(name, '-waypoint')
}

/** Name of the selector-scoped ALLOW that admits the waypoint's identity at the destination. */
export function companionName(name: string): string {
  return suffixedName(name, '-ztunnel')
}

/** Name of the L4 part of a policy that stays at ztunnel (E15 split, L4 projection, E22 rewrite). */
export function l4PartName(name: string): string {
  return suffixedName(name, '-l4')
}

/** Stamp an object the plan creates so rollback can tell it is ours (SPEC §5). */
export function markManaged(obj: KubeObject, planName: string): KubeObject {
  const copy = cloneJson(obj)
  copy.metadata.labels = {...copy.metadata.labels, [MANAGED_BY_LABEL]: MANAGED_BY_VALUE}
  copy.metadata.annotations = {...copy.metadata.annotations, [PLAN_ANNOTATION]: planName}
  return copy
}

// Annotations Istio reads (istio.io/dry-run, ...). Others — kubectl's last-applied-configuration, GitOps
// tracking ids — describe the original's provenance and must not follow it: a copy carrying Argo CD's
// tracking id would be pruned by the next sync as an object missing from Git.
const ISTIO_ANNOTATION = /^([a-z0-9.-]+\.)?istio\.io\//

/**
 * A new object derived from `original`: same kind and API version, in `namespace`, with the Istio
 * annotations of the original (dry-run must follow the copy, DOMAIN §3.1), the copied-from annotation,
 * the managed-by stamp, and `spec`. Labels are not copied (see ISTIO_ANNOTATION).
 */
export function derivedObject(
  original: KubeObject,
  opts: {name: string; namespace: string; planName: string; spec: Record<string, unknown>},
): KubeObject {
  const annotations: Record<string, string> = {}
  for (const [k, v] of Object.entries(original.metadata.annotations ?? {})) {
    if (ISTIO_ANNOTATION.test(k)) annotations[k] = v
  }
  const from =
    original.metadata.namespace && original.metadata.namespace !== opts.namespace
      ? `${original.metadata.namespace}/${original.metadata.name}`
      : original.metadata.name
  annotations[COPIED_FROM_ANNOTATION] = from
  return markManaged(
    {
      apiVersion: original.apiVersion,
      kind: original.kind,
      metadata: {name: opts.name, namespace: opts.namespace, annotations},
      spec: opts.spec,
    },
    opts.planName,
  )
}
