// WorkloadEntries and WorkloadGroups of a namespace as the workloads selectors match (issue 21 §5, §6). Istio
// resolves every workload selector (AuthorizationPolicy, PeerAuthentication, RequestAuthentication, Telemetry,
// WasmPlugin, Sidecar, EnvoyFilter, DestinationRule, ServiceEntry) against proxy labels, and a VM's proxy carries
// its WorkloadEntry's labels; Kubernetes Services with a selector select WorkloadEntries too
// (PILOT_ENABLE_K8S_SELECT_WORKLOAD_ENTRIES, on by default: istio/istio pilot/pkg/features/pilot.go;
// pilot/pkg/serviceregistry/ambient/workloads.go workloadEntryWorkloadBuilder). Pure.
import type {KubeObject, ObjectRef} from './model.js'
import {isRecord, stringMap} from './json.js'
import {refOf} from './refs.js'
import {NETWORKING, TLS_MODE_LABEL} from './vocab.js'

/** A workload outside Kubernetes: one WorkloadEntry, or the template of the entries a WorkloadGroup registers. */
export interface EntryWorkload {
  ref: ObjectRef
  /** The labels selectors are matched against. */
  labels: Record<string, string>
  /**
   * Whether a proxy (sidecar) runs for it, with an Istio identity: a VM in the mesh. Without one it is a plain
   * endpoint (e.g. of a MESH_EXTERNAL ServiceEntry) that no policy is enforced on.
   */
  sidecar: boolean
  /** Why `sidecar` is what it is, for reasons. */
  identity: string
  address?: string
}

/**
 * A WorkloadEntry's labels as istiod reads them: `spec.labels` merged with `metadata.labels`, metadata winning
 * (istio/istio pilot/pkg/serviceregistry/serviceentry/conversion.go ConvertClientWorkloadEntry).
 */
export function workloadEntryLabels(obj: KubeObject): Record<string, string> {
  return {...stringMap(obj.spec?.labels), ...stringMap(obj.metadata.labels)}
}

/**
 * Whether the endpoint has a sidecar identity, as istiod decides its TLS mode
 * (pilot/pkg/serviceregistry/serviceentry/conversion.go getTLSModeFromWorkloadEntry): the label
 * security.istio.io/tlsMode when present, otherwise `istio` exactly when a serviceAccount is set.
 */
function entryIdentity(labels: Record<string, string>, serviceAccount: unknown): {sidecar: boolean; identity: string} {
  const tlsMode = labels[TLS_MODE_LABEL]
  if (tlsMode !== undefined)
    return tlsMode === 'istio'
      ? {sidecar: true, identity: `${TLS_MODE_LABEL}=istio`}
      : {sidecar: false, identity: `${TLS_MODE_LABEL}=${tlsMode}: no proxy`}
  return typeof serviceAccount === 'string' && serviceAccount !== ''
    ? {sidecar: true, identity: `serviceAccount ${serviceAccount}`}
    : {sidecar: false, identity: 'no serviceAccount and no tlsMode label: no proxy'}
}

/** One WorkloadEntry as a workload: its labels and whether it has a proxy. */
export function fromWorkloadEntry(obj: KubeObject, namespace: string): EntryWorkload {
  const labels = workloadEntryLabels(obj)
  const spec = isRecord(obj.spec) ? obj.spec : {}
  const out: EntryWorkload = {ref: {...refOf(obj), namespace}, labels, ...entryIdentity(labels, spec.serviceAccount)}
  if (typeof spec.address === 'string' && spec.address !== '') out.address = spec.address
  return out
}

/**
 * A WorkloadGroup stands for the entries it registers: their labels are the template's merged with
 * `spec.metadata.labels` (pilot/pkg/autoregistration/controller.go workloadEntryFromGroup). Entries are registered
 * when a VM's Istio agent connects, so they always have a proxy.
 */
function fromWorkloadGroup(obj: KubeObject, namespace: string): EntryWorkload {
  const spec = isRecord(obj.spec) ? obj.spec : {}
  const template = isRecord(spec.template) ? spec.template : {}
  const metadata = isRecord(spec.metadata) ? spec.metadata : {}
  return {
    ref: {...refOf(obj), namespace},
    labels: {...stringMap(template.labels), ...stringMap(metadata.labels)},
    sidecar: true,
    identity: 'auto-registered by the Istio agent of each VM',
  }
}

const CACHE = new WeakMap<KubeObject[], Map<string, EntryWorkload[]>>()

/** The WorkloadEntries and WorkloadGroups of `namespace` (objects without a namespace belong to it), in input order. */
export function entryWorkloads(objects: KubeObject[], namespace: string): EntryWorkload[] {
  let byNs = CACHE.get(objects)
  if (!byNs) CACHE.set(objects, (byNs = new Map()))
  let out = byNs.get(namespace)
  if (!out) {
    const seen = new Set<string>()
    out = []
    for (const o of objects) {
      if (!o || !isRecord(o.metadata) || typeof o.metadata.name !== 'string') continue
      if (typeof o.apiVersion !== 'string' || !o.apiVersion.startsWith(`${NETWORKING}/`)) continue
      if (o.kind !== 'WorkloadEntry' && o.kind !== 'WorkloadGroup') continue
      if ((o.metadata.namespace ?? namespace) !== namespace) continue
      // The same object may be listed under several served versions.
      const key = `${o.kind}/${o.metadata.name}`
      if (seen.has(key)) continue
      seen.add(key)
      out.push(o.kind === 'WorkloadEntry' ? fromWorkloadEntry(o, namespace) : fromWorkloadGroup(o, namespace))
    }
    byNs.set(namespace, out)
  }
  return out
}

/** "WorkloadEntry vm-1, WorkloadGroup ratings-vms" */
export function entryNames(entries: EntryWorkload[]): string {
  return [...new Set(entries.map((e) => `${e.ref.kind} ${e.ref.name}`))].sort().join(', ')
}
