// What of a fleet read each namespace's plan can see (issue 22 §5). Every snapshot of a fleet read holds the mesh-wide
// kinds of every namespace (plan NS needs them: config of other namespaces exported to it), so planning N namespaces
// from them classifies N × N namespaces' objects, and the routing-edge pass does it again. The objects of another
// namespace can bear on a namespace's plan only when one names the other, when they are exported to every namespace
// (a VirtualService, DestinationRule or ServiceEntry without exportTo or with `*`), or when a pattern (`*`) may match
// it; this finds those namespaces once for the fleet, from one pass over the objects, and cuts each snapshot down to
// them. What is left out is what no classifier of the namespace looks at, so the plans are the same.
import {CLUSTER_DOMAIN, exportedTo, hostCovers, resolveHost} from '../planner/classify/hosts.js'
import {list} from '../planner/classify/results.js'
import {isRecord} from '../planner/json.js'
import type {KubeObject, SourceSnapshot} from '../planner/model.js'
import {groupOf} from '../planner/refs.js'
import {NETWORKING} from '../planner/vocab.js'

/** Kinds Istio exports to every namespace unless their exportTo says otherwise. */
const EXPORTED_KINDS = new Set(['VirtualService', 'DestinationRule', 'ServiceEntry'])

/**
 * Kinds that bear on another namespace only from the root namespace (their classifiers' relevantElsewhere): a `*` in
 * one of another namespace's (a path glob, a principal pattern) never makes it bear on this one.
 */
const OWN_NAMESPACE_KINDS = new Set([
  'AuthorizationPolicy',
  'PeerAuthentication',
  'RequestAuthentication',
  'Telemetry',
  'WasmPlugin',
  'EnvoyFilter',
  'Sidecar',
])

/** Stands for "a namespace none of the fleet's objects names" (not a valid namespace name). */
const ANY_OTHER_NAMESPACE = '<any other namespace>'

/** DNS labels in an object's text: a namespace named anywhere in it (hosts, principals, labels, exportTo …) is one. */
const LABEL_TOKEN = /[a-z0-9](?:[-a-z0-9]*[a-z0-9])?/g

interface NamespaceFacts {
  /** Namespaces its objects name. */
  names: Set<string>
  /** Its objects that may bear on every namespace (exported everywhere, or a pattern that may match any). */
  everywhere: KubeObject[]
}

function exportedEverywhere(obj: KubeObject, namespace: string): boolean {
  if (!EXPORTED_KINDS.has(obj.kind) || groupOf(obj.apiVersion) !== NETWORKING) return false
  return exportedTo(isRecord(obj.spec) ? obj.spec.exportTo : undefined, namespace, ANY_OTHER_NAMESPACE)
}

/** The namespace an object belongs to: a Namespace's labels (istio.io/use-waypoint-namespace …) are its namespace's own. */
function homeNamespace(obj: KubeObject): string | undefined {
  return obj.kind === 'Namespace' && obj.apiVersion === 'v1' ? obj.metadata?.name : obj.metadata?.namespace
}

/**
 * An object's text, lower-cased, where the namespaces it names are looked for: all of it but the server's record of
 * who wrote which field (managedFields, on every object read from the API: field paths and manager names, no namespace
 * any classifier reads, and often half the object's text).
 */
function namingText(obj: KubeObject): string {
  const managed = obj.metadata?.managedFields
  const named = managed === undefined ? obj : {...obj, metadata: {...obj.metadata, managedFields: undefined}}
  return JSON.stringify(named).toLowerCase()
}

/** The objects of every snapshot, each once. */
function distinctObjects(snapshots: SourceSnapshot[]): Set<KubeObject> {
  const distinct = new Set<KubeObject>()
  for (const snapshot of snapshots) for (const obj of snapshot.objects) distinct.add(obj)
  return distinct
}

/** What each namespace's objects name, from one pass over the distinct objects of every snapshot. */
function factsByNamespace(snapshots: SourceSnapshot[], distinct: Iterable<KubeObject>): Map<string, NamespaceFacts> {
  const known = new Set(snapshots.map((s) => s.namespace))
  for (const obj of distinct) if (obj.metadata?.namespace !== undefined) known.add(obj.metadata.namespace)
  const byNamespace = new Map<string, NamespaceFacts>()
  for (const obj of distinct) {
    const ns = homeNamespace(obj)
    if (ns === undefined) continue
    let facts = byNamespace.get(ns)
    if (!facts) byNamespace.set(ns, (facts = {names: new Set(), everywhere: []}))
    const text = namingText(obj)
    if (text.includes('*') || exportedEverywhere(obj, ns)) facts.everywhere.push(obj)
    for (const token of text.match(LABEL_TOKEN) ?? []) if (known.has(token)) facts.names.add(token)
  }
  return byNamespace
}

/**
 * Whether an object another namespace sees only for its `*` or its exportTo may bear on `namespace`: not when it is of
 * a kind that bears on other namespaces only from the root namespace, nor when it is routing not exported to it whose
 * host patterns cannot cover a Service of it (`*.other.svc.cluster.local`).
 */
export function bearsOn(obj: KubeObject, home: string, namespace: string): boolean {
  if (OWN_NAMESPACE_KINDS.has(obj.kind)) return false
  if (!EXPORTED_KINDS.has(obj.kind) || groupOf(obj.apiVersion) !== NETWORKING || !isRecord(obj.spec)) return true
  if (exportedTo(obj.spec.exportTo, home, namespace)) return true
  const hosts = obj.kind === 'DestinationRule' ? [obj.spec.host] : (list(obj.spec.hosts) ?? [])
  const probe = `${ANY_OTHER_NAMESPACE}.${namespace}.svc.${CLUSTER_DOMAIN}`
  return hosts.some((h) => typeof h !== 'string' || hostCovers(resolveHost(h, home), probe))
}

/** A namespace's view of a fleet read: its snapshot, and the namespaces it sees only for objects that bear on all. */
export interface FleetView {
  /** The namespace's snapshot of the fleet read, whole (`visible` cuts it). */
  source: SourceSnapshot
  /** The namespaces whose objects it sees (undefined: all, a fleet of one). */
  keep: ReadonlySet<string> | undefined
  /** namespace → its objects that bear on every namespace (the only reason this one sees that namespace). */
  broadcast: Map<string, KubeObject[]>
  /** The namespaces it sees, each with the namespaces its objects name. */
  seen: Map<string, ReadonlySet<string>>
  /**
   * The snapshot's objects of the namespaces it sees, but for those it sees only for objects that bear on all, and
   * those of no namespace: in order, each with its position in the snapshot (what `visible` cuts).
   */
  kept: Positioned
  /**
   * The Services and Namespace of each namespace it sees only for objects that bear on all (`broadcast`): all of such a
   * namespace a classifier may look up once its objects that bear on all are judged for the fleet (`visible`).
   */
  lookable: Map<string, Positioned>
  /** Collected in the same pass for fleet-routing.ts: other namespaces' VirtualServices and DestinationRules seen… */
  routing: KubeObject[]
  /** … and the namespace's own VirtualServices, Services and Namespace. */
  own: {virtualServices: KubeObject[]; services: KubeObject[]; namespace?: KubeObject}
}

/**
 * Each snapshot with only the objects that can bear on its namespace: its own, the root namespace's, cluster-scoped
 * ones (webhooks, GatewayClasses), and those (Namespace objects included) of the namespaces it names, that name it, or
 * whose objects bear on every namespace. Classifiers look another namespace's labels up only for a namespace whose
 * objects they look at, so the Namespaces of the rest (most of a large fleet) would only be scanned past.
 */
export function fleetViews(snapshots: SourceSnapshot[], objects?: KubeObject[]): FleetView[] {
  const facts =
    snapshots.length < 2
      ? new Map<string, NamespaceFacts>()
      : factsByNamespace(snapshots, objects ?? distinctObjects(snapshots))
  return snapshots.map((snapshot) => visibleObjects(snapshot, facts))
}

export function visibleSnapshots(snapshots: SourceSnapshot[]): SourceSnapshot[] {
  return fleetViews(snapshots).map((v) => visible(v))
}

/** Objects of a snapshot with their positions in it, in order. */
interface Positioned {
  objects: KubeObject[]
  at: number[]
}

const positioned = (): Positioned => ({objects: [], at: []})
const place = (list: Positioned, o: KubeObject, at: number) => {
  list.objects.push(o)
  list.at.push(at)
}

function visibleObjects(snapshot: SourceSnapshot, facts: Map<string, NamespaceFacts>): FleetView {
  const own = snapshot.namespace
  const named = facts.get(own)?.names ?? new Set<string>()
  const keep = new Set<string>(named)
  const broadcast = new Map<string, KubeObject[]>()
  for (const [ns, f] of facts)
    if (ns === own || ns === snapshot.rootNamespace || f.names.has(own)) keep.add(ns)
    else if (f.everywhere.length > 0) {
      keep.add(ns)
      if (!named.has(ns)) broadcast.set(ns, f.everywhere)
    }
  const routing: KubeObject[] = []
  const mine: FleetView['own'] = {virtualServices: [], services: []}
  const kept = positioned()
  const lookable = new Map<string, Positioned>()
  const objects = snapshot.objects
  for (let at = 0; at < objects.length; at++) {
    const o = objects[at]!
    const ns = homeNamespace(o)
    if (ns === undefined) place(kept, o, at)
    else if (ns === own) {
      place(kept, o, at)
      collectOwn(o, mine)
    } else if (keep.has(ns)) {
      if (ROUTING_KINDS.has(o.kind) && groupOf(o.apiVersion) === NETWORKING) routing.push(o)
      // Most of a large fleet's namespaces are seen only for objects that bear on all, judged once for the fleet:
      // of those only what a classifier may look up is collected (the rest, when needed, from the snapshot).
      if (!broadcast.has(ns)) place(kept, o, at)
      else if (lookedUp(o)) {
        let list = lookable.get(ns)
        if (!list) lookable.set(ns, (list = positioned()))
        place(list, o, at)
      }
    }
  }
  const seen = new Map([...keep].map((ns) => [ns, facts.get(ns)?.names ?? new Set<string>()] as const))
  // A single namespace (no facts) sees its whole snapshot.
  return {
    source: snapshot,
    keep: facts.size === 0 ? undefined : keep,
    broadcast,
    seen,
    kept,
    lookable,
    routing,
    own: mine,
  }
}

const ROUTING_KINDS = new Set(['VirtualService', 'DestinationRule'])

/** What a classifier may look up of a namespace whose objects it does not classify: its Services' and its labels. */
const lookedUp = (o: KubeObject) => o.apiVersion === 'v1' && (o.kind === 'Service' || o.kind === 'Namespace')

function collectOwn(o: KubeObject, own: FleetView['own']): void {
  if (o.apiVersion === 'v1') {
    if (o.kind === 'Service') own.services.push(o)
    else if (o.kind === 'Namespace') own.namespace = o
  } else if (o.kind === 'VirtualService' && groupOf(o.apiVersion) === NETWORKING) own.virtualServices.push(o)
}

/**
 * The snapshot as the namespace sees it (one pass over the read), without `judged` (objects judged once for the fleet,
 * which no classification of this namespace looks at: fleet-routing.ts). A namespace seen only for objects that bear
 * on all, all of them judged (or of kinds that bear on another namespace only from the root namespace), keeps only what
 * a classifier may look up of it for another object of the view naming it (its Services' and Namespace's labels), and
 * nothing when none does.
 */
export function visible(view: FleetView, judged: ReadonlySet<KubeObject> = new Set()): SourceSnapshot {
  const {source, keep} = view
  if (!keep) return source
  const quiet = new Set(
    judged.size === 0
      ? []
      : [...view.broadcast]
          .filter(([ns, objects]) => objects.every((o) => judged.has(o) || !bearsOn(o, ns, source.namespace)))
          .map(([ns]) => ns),
  )
  // What the rest names of a quiet namespace may be looked up (a Service's waypoint label); the rest of it never is.
  const named = new Set([...view.seen].filter(([ns]) => !quiet.has(ns)).flatMap(([, names]) => [...names]))
  if (quiet.size < view.broadcast.size) {
    // A namespace seen for objects that bear on all, not all of them judged: its objects from the snapshot.
    const looked = (o: KubeObject, ns: string) => named.has(ns) && lookedUp(o)
    const cut = (o: KubeObject) => {
      const ns = homeNamespace(o)
      if (ns === undefined) return true
      if (!keep.has(ns) || judged.has(o)) return false
      return !quiet.has(ns) || looked(o, ns)
    }
    return {...source, objects: source.objects.filter(cut)}
  }
  const base = positioned()
  view.kept.objects.forEach(
    (o, i) => (homeNamespace(o) === undefined || !judged.has(o)) && place(base, o, view.kept.at[i]!),
  )
  const looked = [...view.lookable].filter(([ns]) => named.has(ns)).map(([, list]) => list)
  return {...source, objects: inOrder(base, looked)}
}

/** The objects of `base` and `more`, in the snapshot's order. */
function inOrder(base: Positioned, more: Positioned[]): KubeObject[] {
  if (more.length === 0) return base.objects
  const extra = more.flatMap(({objects, at}) => objects.map((o, i) => ({o, at: at[i]!}))).sort((a, b) => a.at - b.at)
  const out: KubeObject[] = []
  let j = 0
  base.objects.forEach((o, i) => {
    for (; j < extra.length && extra[j]!.at < base.at[i]!; j++) out.push(extra[j]!.o)
    out.push(o)
  })
  for (; j < extra.length; j++) out.push(extra[j]!.o)
  return out
}
