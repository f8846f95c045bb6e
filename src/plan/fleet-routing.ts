// Routing across a fleet's namespaces (E11, issue 22 §5): which exported routing each namespace loses today and which
// namespace's waypoint keeps it once in place first — the `routing` edges of plans/fleet.yaml. Routing a namespace
// defines for its own Services (planner/classify/own-routing.ts) is judged once per object for the whole fleet and
// left out of the other namespaces' inventories: each of their plans names it in its order finding. In a fleet where
// such routing is exported to every namespace (Istio's default), classifying and listing it in every plan made both
// the work and the plans grow with the square of the fleet. Pure.
import {type OwnRouting, ownServiceRouting, type RoutingOwner} from '../planner/classify/own-routing.js'
import {destinations, isMeshBound} from '../planner/classify/virtual-service.js'
import {exportedTo, resolveHost} from '../planner/classify/hosts.js'
import {isRecord} from '../planner/json.js'
import {classifySome, type InventoryOptions} from '../planner/inventory.js'
import type {FleetEdge} from '../planner/fleet-waves.js'
import type {Inventory, InventoryItem, KubeObject, ObjectRef, SourceSnapshot} from '../planner/model.js'
import {formatRef, refKey, refOf} from '../planner/refs.js'
import type {FleetView} from './fleet-visibility.js'
import {USE_WAYPOINT_NAMESPACE_LABEL} from '../planner/vocab.js'

export interface Member {
  namespace: string
  snapshot: SourceSnapshot
  inventory: Inventory
  migrating: boolean
  /** The namespaces whose planned waypoint its classifications asked for (ClassifyContext.waypointsAsked). */
  asked: ReadonlySet<string>
}

/** Another namespace's routing its waypoint may keep for a namespace: judged once for the fleet. */
export interface KeptRouting {
  from: string
  ref: ObjectRef
  /** The object as read (once per served API version). */
  objects: KubeObject[]
  /** Lost today once the namespace is ambient (an order edge); otherwise inert for it either way. */
  lostToday: boolean
}

/** namespace → object key → routing of other namespaces judged once for the fleet. */
export type KeptByNamespace = Map<string, Map<string, KeptRouting>>

/** An object's inventory key as seen from `namespace` (a namespaced object without one is that namespace's). */
export const objectKey = (o: KubeObject, namespace: string) =>
  refKey({...refOf(o), namespace: o.metadata.namespace ?? namespace})

/** What the fleet knows of a namespace: its Namespace's and Services' labels. */
function routingOwner(view: FleetView): RoutingOwner {
  const services = new Map(view.own.services.map((o) => [o.metadata.name, o.metadata.labels]))
  return {
    namespaceLabels: view.own.namespace?.metadata.labels ?? {},
    serviceLabels: (name) => services.get(name) ?? undefined,
  }
}

/** The subsets a namespace's own mesh VirtualServices route to, by destination FQDN (a DestinationRule's are used). */
function ownSubsets(view: FleetView): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>()
  const namespace = view.source.namespace
  for (const vs of view.own.virtualServices) {
    if (!isRecord(vs.spec) || !isMeshBound(vs.spec)) continue
    for (const d of destinations(vs.spec)) {
      if (!d.destination.subset) continue
      const fqdn = resolveHost(String(d.destination.host ?? ''), namespace)
      out.set(fqdn, (out.get(fqdn) ?? new Set()).add(String(d.destination.subset)))
    }
  }
  return out
}

/** Whether the namespace's own VirtualServices use one of the DestinationRule's subsets (it then stays in its view). */
function usesSubsets(rule: KubeObject, host: string, subsets: Map<string, Set<string>>): boolean {
  const used = subsets.get(host)
  const spec = rule.spec as {subsets?: {name?: unknown}[]}
  return used !== undefined && (Array.isArray(spec.subsets) ? spec.subsets : []).some((s) => used.has(String(s?.name)))
}

/**
 * For each namespace of the fleet, the routing other namespaces of the fleet define for their own Services, exported
 * to it, that their waypoints would apply (planner/classify/own-routing.ts): judged once per object, not once per
 * namespace that sees it. Left out: routing of its own waypoint's namespace (istio.io/use-waypoint-namespace: the
 * waypoint resolves that namespace's DestinationRules) and rules whose subsets its own VirtualServices use.
 */
export function routingCandidates(views: FleetView[]): KeptByNamespace {
  const owners = new Map(views.map((v) => [v.source.namespace, routingOwner(v)]))
  const out: KeptByNamespace = new Map()
  // Another namespace's object is the same fact in every view that sees it: whether it is the owner's own routing,
  // and its entry (key, ref, served versions), are found once for the fleet and shared (hundreds of views see each
  // object where routing is exported to all). A DestinationRule whose subsets a view uses is not judged there at all.
  const judged = new WeakMap<KubeObject, {own: OwnRouting; key: string; entry: KeptRouting} | null>()
  const entries = new Map<string, KeptRouting>()
  const judge = (o: KubeObject, from: string, owner: RoutingOwner) => {
    let found = judged.get(o)
    if (found === undefined) {
      const own = ownServiceRouting(o, owner)
      found = own ? {own, ...entryOf(o, from, own)} : null
      judged.set(o, found)
    }
    return found
  }
  const entryOf = (o: KubeObject, from: string, own: OwnRouting) => {
    const key = objectKey(o, from)
    let entry = entries.get(key)
    if (!entry) entries.set(key, (entry = {from, ref: refOf(o), objects: [], lostToday: own.lostToday}))
    entry.objects.push(o)
    return {key, entry}
  }
  for (const view of views) {
    const namespace = view.source.namespace
    const waypointNs = owners.get(namespace)!.namespaceLabels[USE_WAYPOINT_NAMESPACE_LABEL] || namespace
    let subsets: Map<string, Set<string>> | undefined
    const found = new Map<string, KeptRouting>()
    for (const o of view.routing) {
      const from = o.metadata.namespace!
      const owner = from === waypointNs ? undefined : owners.get(from)
      if (!owner || !isRecord(o.spec) || !exportedTo(o.spec.exportTo, from, namespace)) continue
      const judgement = judge(o, from, owner)
      if (!judgement) continue
      const {own, key, entry} = judgement
      if (own.ruleHost !== undefined && usesSubsets(o, own.ruleHost, (subsets ??= ownSubsets(view)))) continue
      found.set(key, entry)
    }
    if (found.size > 0) out.set(namespace, found)
  }
  return out
}

/** The objects of the routing judged for a namespace (every served version of each). */
export function judgedObjects(found: Map<string, KeptRouting> | undefined): Set<KubeObject> {
  const out = new Set<KubeObject>()
  for (const k of found?.values() ?? []) for (const o of k.objects) out.add(o)
  return out
}

/** The candidates a namespace's plan leaves out: those of namespaces that get a waypoint, when it migrates. */
export function keptRouting(
  candidates: KeptByNamespace,
  withWaypoint: ReadonlySet<string>,
  migrating: ReadonlySet<string>,
): KeptByNamespace {
  const out: KeptByNamespace = new Map()
  for (const [namespace, found] of candidates) {
    if (!migrating.has(namespace)) continue
    // Every candidate kept (the common case) is the candidates themselves.
    let all = true
    for (const k of found.values()) if (!withWaypoint.has(k.from)) all = false
    const kept = all ? found : new Map([...found].filter(([, k]) => withWaypoint.has(k.from)))
    if (kept.size > 0) out.set(namespace, kept)
  }
  return out
}

/** The lost client-side items of an inventory, by key. */
const lostItems = (items: InventoryItem[]) =>
  new Map(items.filter((i) => i.action === 'lost-client-side').map((i) => [refKey(i.ref), i]))

/** "VirtualService fa/api" for one object; "VirtualService a, b and DestinationRule a of fa" for several of one namespace. */
export function routingRefsText(namespace: string, refs: ObjectRef[]): string {
  if (refs.length === 1) return formatRef(refs[0]!)
  const byKind = new Map<string, string[]>()
  for (const r of refs) byKind.set(r.kind, [...(byKind.get(r.kind) ?? []), r.name])
  const kinds = [...byKind].map(([kind, names]) => `${kind} ${names.join(', ')}`)
  return `${kinds.length > 1 ? `${kinds.slice(0, -1).join(', ')} and ${kinds.at(-1)}` : kinds[0]} of ${namespace}`
}

/** namespace → object key → the namespace whose waypoint keeps that lost routing (found by classifying it again). */
export type CoveredRouting = Map<string, Map<string, string>>

/**
 * The routing a namespace still loses today (not judged once for the fleet) that another namespace's waypoint keeps:
 * only that is classified again, with the waypoints of the fleet in place, as buildInventory would.
 */
function lostRoutingKept(x: Member, withWaypoint: Member[], options: InventoryOptions, waypointName: string) {
  const before = lostItems(x.inventory.objects)
  const kept: InventoryItem[] = []
  const waypointNs = new Set(withWaypoint.map((d) => d.namespace))
  // Nothing lost from a namespace with a waypoint, nothing to re-classify. Routing for this namespace's own Services
  // (an item naming them) is never kept by another namespace's waypoint (virtual-service.ts foreignServiceRouting).
  const keepable = (i: InventoryItem) =>
    i.ref.namespace !== x.namespace && waypointNs.has(i.ref.namespace ?? '') && (i.services ?? []).length === 0
  if (![...before.values()].some(keepable)) return kept
  const candidates = Object.fromEntries(
    withWaypoint.filter((d) => d.namespace !== x.namespace).map((d) => [d.namespace, waypointName]),
  )
  const lostToday = (o: KubeObject) => before.has(objectKey(o, x.namespace))
  const after = lostItems(classifySome(x.snapshot, {...options, earlierWaypoints: candidates}, lostToday))
  for (const [key, item] of before) if (!after.has(key) && (item.ref.namespace ?? '') in candidates) kept.push(item)
  return kept
}

/**
 * Routing edges (E11): exported VirtualServices and DestinationRules of a namespace that gets a waypoint, lost by a
 * caller namespace today, kept when that waypoint is in place first. One edge per pair names them all; `covered`
 * records those found by classifying again (the kept routing judged once is in `kept`).
 */
export function routingEdges(
  members: Member[],
  kept: KeptByNamespace,
  options: InventoryOptions,
  waypointName: string,
): {edges: FleetEdge[]; covered: CoveredRouting} {
  const withWaypoint = members.filter((m) => m.migrating && m.inventory.waypointRequired)
  const edges: FleetEdge[] = []
  const covered: CoveredRouting = new Map()
  if (withWaypoint.length === 0) return {edges, covered}
  // An edge's text and refs, shared by every namespace the same routing is exported to (hundreds in a fleet where
  // routing is exported to all): built once, not once per pair.
  const built = new Map<string, Omit<FleetEdge, 'to'>>()
  const labels = new WeakMap<ObjectRef, string>()
  // The same refs (the same judged entries) reach hundreds of namespaces: their edge is looked up by the refs' ids
  // before it is worded (sorted by label) again.
  const ids = new Map<ObjectRef, number>()
  const idOf = (ref: ObjectRef) => {
    let id = ids.get(ref)
    if (id === undefined) ids.set(ref, (id = ids.size))
    return id
  }
  const byIds = new Map<string, Omit<FleetEdge, 'to'>>()
  for (const x of members) {
    if (!x.migrating) continue
    const byFrom = new Map<string, ObjectRef[]>()
    const add = (from: string, ref: ObjectRef) => {
      const refs = byFrom.get(from)
      if (refs) refs.push(ref)
      else byFrom.set(from, [ref])
    }
    for (const k of kept.get(x.namespace)?.values() ?? []) if (k.lostToday) add(k.from, k.ref)
    for (const item of lostRoutingKept(x, withWaypoint, options, waypointName)) {
      add(item.ref.namespace!, item.ref)
      covered.set(x.namespace, (covered.get(x.namespace) ?? new Map()).set(refKey(item.ref), item.ref.namespace!))
    }
    for (const [from, refs] of byFrom) {
      const key = `${from}\0${refs.map(idOf).join(',')}`
      let e = byIds.get(key)
      if (!e) byIds.set(key, (e = routingEdge(from, refs, built, labels)))
      edges.push({from: e.from, to: x.namespace, kind: e.kind, reason: e.reason, refs: e.refs})
    }
  }
  return {edges, covered}
}

/**
 * The edge names the caller only as `to`: its reason is the same for every namespace the routing is exported to, so
 * plans/fleet.yaml lists the edge once for all of them (fleet-file.ts).
 */
function routingEdge(
  from: string,
  refs: ObjectRef[],
  built: Map<string, Omit<FleetEdge, 'to'>>,
  labelsOf: WeakMap<ObjectRef, string>,
): Omit<FleetEdge, 'to'> {
  const labelOf = (ref: ObjectRef) => {
    let label = labelsOf.get(ref)
    if (label === undefined) labelsOf.set(ref, (label = formatRef(ref)))
    return label
  }
  const labelled = refs.map((ref) => ({ref, label: labelOf(ref)})).sort((a, b) => byLabel(a.label, b.label))
  const labels = [...new Set(labelled.map((r) => r.label))]
  const key = `${from}\0${labels.join('\0')}`
  let text = built.get(key)
  if (!text) {
    const one = labels.length === 1
    text = {
      from,
      kind: 'routing',
      reason: `${routingRefsText(
        from,
        labelled.map((r) => r.ref),
      )} ${one ? 'is' : 'are'} applied today by the sidecars of the namespaces ${one ? 'it is' : 'they are'} exported to; once those are ambient only ${from}'s waypoint applies ${one ? 'it' : 'them'} (E11), so ${from} goes first.`,
      refs: labels,
    }
    built.set(key, text)
  }
  return text
}

const byLabel = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)
