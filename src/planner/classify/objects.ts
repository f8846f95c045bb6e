// The snapshot as classifiers look it up: kind keys, namespaces, indexes by kind and name, per-run memo.
import type {ClassifyContext} from '../context.js'
import type {KubeObject, ObjectRef} from '../model.js'
import type {Labels} from '../istio-types.js'
import {groupOf, refOf} from '../refs.js'
import {isRecord} from '../json.js'
import {byCodePoint} from '../order.js'

export function kindKey(obj: Pick<KubeObject, 'apiVersion' | 'kind'>): string {
  return `${groupOf(obj.apiVersion) || 'core'}/${obj.kind}`
}

/** Namespace of an object; manifests without one belong to the migrated namespace (SPEC §3). */
export function namespaceOf(obj: KubeObject, ctx: ClassifyContext): string {
  return obj.metadata.namespace ?? ctx.namespace
}

export function itemRef(obj: KubeObject, ctx: ClassifyContext): ObjectRef {
  return {...refOf(obj), namespace: namespaceOf(obj, ctx)}
}

// Cross references (VirtualService → DestinationRule subsets, routes → Gateways, ...) would rescan the whole
// snapshot per object; index it by kind once per objects array.
const KIND_INDEX = new WeakMap<KubeObject[], Map<string, KubeObject[]>>()

/** The snapshot's objects of one `<group>/<Kind>` key (`core/Service` for the core group), in input order. */
export function objectsOfKind(ctx: ClassifyContext, key: string): KubeObject[] {
  let index = KIND_INDEX.get(ctx.objects)
  if (!index) {
    index = new Map()
    for (const o of ctx.objects) {
      if (!o || typeof o.kind !== 'string' || typeof o.apiVersion !== 'string' || !isRecord(o.metadata)) continue
      const k = kindKey(o)
      const bucket = index.get(k)
      if (bucket) bucket.push(o)
      else index.set(k, [o])
    }
    KIND_INDEX.set(ctx.objects, index)
  }
  return index.get(key) ?? []
}

export function findObject(
  ctx: ClassifyContext,
  group: string,
  kind: string,
  namespace: string,
  name: string,
): KubeObject | undefined {
  const key = `${group || 'core'}/${kind}`
  // The first object of a name wins, as a scan would find it.
  const index = memo(ctx, `by-name:${key}`, () => {
    const byName = new Map<string, KubeObject>()
    for (const o of objectsOfKind(ctx, key)) {
      const k = `${o.metadata.namespace ?? ctx.namespace}/${o.metadata.name}`
      if (!byName.has(k)) byName.set(k, o)
    }
    return byName
  })
  return index.get(`${namespace}/${name}`)
}

/** Labels of a namespace: the migrated one from its analysed state, others from Namespace objects in the snapshot. */
export function namespaceLabels(ctx: ClassifyContext, namespace: string): Labels | undefined {
  if (namespace === ctx.namespace) return {'kubernetes.io/metadata.name': namespace, ...ctx.namespaceState.labels}
  const ns = objectsOfKind(ctx, 'core/Namespace').find((o) => o.metadata.name === namespace)
  return ns ? {'kubernetes.io/metadata.name': namespace, ...(ns.metadata.labels ?? {})} : undefined
}

/** creationTimestamp order, oldest first, then name — how istiod picks "the oldest" of competing policies. */
export function compareAge(a: KubeObject, b: KubeObject): number {
  const ta = a.metadata.creationTimestamp ?? ''
  const tb = b.metadata.creationTimestamp ?? ''
  if (ta !== tb) return ta === '' ? 1 : tb === '' ? -1 : ta < tb ? -1 : 1
  return byCodePoint(a.metadata.name, b.metadata.name)
}

// Per-context memo for derived tables that several objects of one classification run share
// (PeerAuthentication resolution, VirtualService subset references). Keyed by the context object, so a
// second run with another context (e.g. waypointPlanned: true) recomputes.
const MEMO = new WeakMap<ClassifyContext, Map<string, unknown>>()

export function memo<T>(ctx: ClassifyContext, key: string, compute: () => T): T {
  let m = MEMO.get(ctx)
  if (!m) {
    m = new Map()
    MEMO.set(ctx, m)
  }
  if (!m.has(key)) m.set(key, compute())
  return m.get(key) as T
}
