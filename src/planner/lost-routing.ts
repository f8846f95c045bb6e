// Issue 11 §5: other namespaces' VirtualServices and DestinationRules are exported to every namespace by
// default, so a namespace's inventory would list every one of them as lost client-side routing (E11).
// They are grouped by destination namespace — one finding each, listing the hosts — because what saves
// them is the destination namespace's waypoint: migrate that namespace first (fleet waves), move the
// routing there, or accept the loss. Pure.
import {finding} from './findings/finding.js'
import {hostServiceNamespace, resolveHost} from './classify/hosts.js'
import {isRecord} from './json.js'
import {list} from './classify/results.js'
import type {Finding, KubeObject} from './model.js'
import {formatRef, objectKey, refKey} from './refs.js'
import {NETWORKING} from './vocab.js'

/** Id of the grouped finding: `E11/destination/<namespace>` (stable; what --accept-lost names). */
export const GROUPED_LOST_PREFIX = 'E11/destination/'

const GROUPED_KINDS = new Set(['VirtualService', 'DestinationRule'])

export function isGroupedLostFinding(f: Finding): boolean {
  return f.id.startsWith(GROUPED_LOST_PREFIX)
}

/** Hosts an object routes, resolved against its namespace. */
function hostsOf(obj: KubeObject): string[] {
  const ns = obj.metadata.namespace ?? ''
  const spec = isRecord(obj.spec) ? obj.spec : {}
  const hosts = obj.kind === 'DestinationRule' ? [String(spec.host ?? '')] : (list(spec.hosts) ?? [])
  return hosts.filter(Boolean).map((h) => resolveHost(h, ns))
}

/**
 * Replaces the E11 findings of objects outside `namespace` by one finding per destination namespace: the
 * namespace of the Service a host names, or the object's own namespace for external and wildcard hosts.
 */
export function groupLostRouting(namespace: string, findings: Finding[], objects: KubeObject[]): Finding[] {
  const isForeignE11 = (f: Finding) =>
    f.id.startsWith('E11/') && f.ref !== undefined && GROUPED_KINDS.has(f.ref.kind) && f.ref.namespace !== namespace
  const foreign = findings.filter(isForeignE11)
  if (foreign.length === 0) return findings
  const byKey = new Map<string, KubeObject>()
  for (const o of objects)
    if (o.apiVersion.startsWith(`${NETWORKING}/`) && GROUPED_KINDS.has(o.kind)) byKey.set(objectKey(o), o)

  const groups = new Map<string, {hosts: Set<string>; refs: Set<string>}>()
  for (const f of foreign) {
    const obj = byKey.get(refKey(f.ref!))
    const objectNs = f.ref!.namespace ?? ''
    const hosts = obj ? hostsOf(obj) : []
    const targets =
      hosts.length > 0
        ? hosts.map((h) => ({h, ns: hostServiceNamespace(h) ?? objectNs}))
        : [{h: '(unknown host)', ns: objectNs}]
    for (const {h, ns} of targets) {
      const g = groups.get(ns) ?? {hosts: new Set<string>(), refs: new Set<string>()}
      g.hosts.add(h)
      g.refs.add(formatRef(f.ref!))
      groups.set(ns, g)
    }
  }
  const grouped: Finding[] = [...groups.entries()].map(([dest, g]) => {
    const refs = [...g.refs].sort()
    const id = `${GROUPED_LOST_PREFIX}${dest}`
    return finding(
      'ClientSideRoutingLost',
      {apiVersion: 'v1', kind: 'Namespace', name: dest},
      {variant: 'groupLostRouting', dest, hosts: [...g.hosts].sort(), refsLength: refs.length, namespace, refs},
      {id: id, severity: 'error'},
    )
  })
  return [...findings.filter((f) => !isForeignE11(f)), ...grouped]
}
