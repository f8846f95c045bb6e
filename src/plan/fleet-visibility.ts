// What of a fleet read each namespace's plan can see (issue 22 §5). Every snapshot of a fleet read holds the mesh-wide
// kinds of every namespace (plan NS needs them: config of other namespaces exported to it), so planning N namespaces
// from them classifies N × N namespaces' objects, and the routing-edge pass does it again. The objects of another
// namespace can bear on a namespace's plan only when one names the other, when they are exported to every namespace
// (a VirtualService, DestinationRule or ServiceEntry without exportTo or with `*`), or when a pattern (`*`) may match
// it; this finds those namespaces once for the fleet, from one pass over the objects, and cuts each snapshot down to
// them. What is left out is what no classifier of the namespace looks at, so the plans are the same.
import {exportedTo} from '../planner/classify/hosts.js'
import {isRecord} from '../planner/json.js'
import type {KubeObject, SourceSnapshot} from '../planner/model.js'
import {groupOf} from '../planner/refs.js'
import {NETWORKING} from '../planner/vocab.js'

/** Kinds Istio exports to every namespace unless their exportTo says otherwise. */
const EXPORTED_KINDS = new Set(['VirtualService', 'DestinationRule', 'ServiceEntry'])

/** Stands for "a namespace none of the fleet's objects names" (not a valid namespace name). */
const ANY_OTHER_NAMESPACE = '<any other namespace>'

/** DNS labels in an object's text: a namespace named anywhere in it (hosts, principals, labels, exportTo …) is one. */
const LABEL_TOKEN = /[a-z0-9](?:[-a-z0-9]*[a-z0-9])?/g

interface NamespaceFacts {
  /** Namespaces its objects name. */
  names: Set<string>
  /** Its objects may bear on every namespace (exported everywhere, or a pattern that may match any). */
  everywhere: boolean
}

function exportedEverywhere(obj: KubeObject, namespace: string): boolean {
  if (!EXPORTED_KINDS.has(obj.kind) || groupOf(obj.apiVersion) !== NETWORKING) return false
  return exportedTo(isRecord(obj.spec) ? obj.spec.exportTo : undefined, namespace, ANY_OTHER_NAMESPACE)
}

/** The namespace an object belongs to: a Namespace's labels (istio.io/use-waypoint-namespace …) are its namespace's own. */
function homeNamespace(obj: KubeObject): string | undefined {
  return obj.kind === 'Namespace' && obj.apiVersion === 'v1' ? obj.metadata?.name : obj.metadata?.namespace
}

/** What each namespace's objects name, from one pass over the distinct objects of every snapshot. */
function factsByNamespace(snapshots: SourceSnapshot[]): Map<string, NamespaceFacts> {
  const distinct = new Set<KubeObject>()
  const known = new Set(snapshots.map((s) => s.namespace))
  for (const snapshot of snapshots)
    for (const obj of snapshot.objects) {
      distinct.add(obj)
      if (obj.metadata?.namespace !== undefined) known.add(obj.metadata.namespace)
    }
  const byNamespace = new Map<string, NamespaceFacts>()
  for (const obj of distinct) {
    const ns = homeNamespace(obj)
    if (ns === undefined) continue
    let facts = byNamespace.get(ns)
    if (!facts) byNamespace.set(ns, (facts = {names: new Set(), everywhere: false}))
    const text = JSON.stringify(obj).toLowerCase()
    if (text.includes('*') || exportedEverywhere(obj, ns)) facts.everywhere = true
    for (const token of text.match(LABEL_TOKEN) ?? []) if (known.has(token)) facts.names.add(token)
  }
  return byNamespace
}

/**
 * Each snapshot with only the objects that can bear on its namespace: its own, the root namespace's, cluster-scoped
 * ones (webhooks, GatewayClasses), and those (Namespace objects included) of the namespaces it names, that name it, or
 * whose objects bear on every namespace. Classifiers look another namespace's labels up only for a namespace whose
 * objects they look at, so the Namespaces of the rest (most of a large fleet) would only be scanned past.
 */
export function visibleSnapshots(snapshots: SourceSnapshot[]): SourceSnapshot[] {
  if (snapshots.length < 2) return snapshots
  const facts = factsByNamespace(snapshots)
  return snapshots.map((snapshot) => ({...snapshot, objects: visibleObjects(snapshot, facts)}))
}

function visibleObjects(snapshot: SourceSnapshot, facts: Map<string, NamespaceFacts>): KubeObject[] {
  const own = snapshot.namespace
  const named = facts.get(own)?.names ?? new Set<string>()
  const keep = new Set<string>(named)
  for (const [ns, f] of facts)
    if (ns === own || ns === snapshot.rootNamespace || f.everywhere || f.names.has(own)) keep.add(ns)
  return snapshot.objects.filter((o) => {
    const ns = homeNamespace(o)
    return ns === undefined || keep.has(ns)
  })
}
