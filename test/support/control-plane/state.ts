// The controllers' shared view of the cluster: one informer per watched kind, indexes by owner and
// uid, and the write helpers that put every answer of the API server back into the caches.
import type {KubeObject, ObjectRef} from '../../../src/planner/model.js'
import {groupOf} from '../../../src/planner/refs.js'
import {type ClusterApi, type DeleteOptions, isNotFound, type PatchOptions} from './api.js'
import {type ChangeHandler, Informer, type InformerSpec} from './informer.js'
import {keyOf} from './meta.js'

export const GATEWAY_API_VERSIONS = ['gateway.networking.k8s.io/v1', 'gateway.networking.k8s.io/v1beta1']

/** Every kind the control plane watches. */
export const WATCHED_KINDS = {
  namespaces: {apiVersions: ['v1'], kind: 'Namespace'},
  nodes: {apiVersions: ['v1'], kind: 'Node'},
  pods: {apiVersions: ['v1'], kind: 'Pod'},
  services: {apiVersions: ['v1'], kind: 'Service'},
  serviceAccounts: {apiVersions: ['v1'], kind: 'ServiceAccount'},
  deployments: {apiVersions: ['apps/v1'], kind: 'Deployment'},
  replicaSets: {apiVersions: ['apps/v1'], kind: 'ReplicaSet'},
  statefulSets: {apiVersions: ['apps/v1'], kind: 'StatefulSet'},
  daemonSets: {apiVersions: ['apps/v1'], kind: 'DaemonSet'},
  jobs: {apiVersions: ['batch/v1'], kind: 'Job'},
  webhooks: {apiVersions: ['admissionregistration.k8s.io/v1'], kind: 'MutatingWebhookConfiguration'},
  gateways: {apiVersions: GATEWAY_API_VERSIONS, kind: 'Gateway'},
  gatewayClasses: {apiVersions: GATEWAY_API_VERSIONS, kind: 'GatewayClass'},
} satisfies Record<string, InformerSpec>

export type WatchedKind = keyof typeof WATCHED_KINDS

export class ClusterState {
  readonly informers: Record<WatchedKind, Informer> & {rootConfigMaps: Informer}
  private readonly byGroupKind = new Map<string, Informer>()
  /** controller uid → keys of the objects it controls, per informer. */
  private readonly ownerIndex = new Map<Informer, Map<string, Set<string>>>()
  private readonly uidIndex = new Map<string, {informer: Informer; key: string}>()

  constructor(
    readonly api: ClusterApi,
    readonly rootNamespace: string,
    onError: (where: string, error: unknown) => void,
  ) {
    const make = (spec: InformerSpec) => new Informer(api, spec, onError)
    const informers = {} as Record<WatchedKind, Informer>
    for (const [name, spec] of Object.entries(WATCHED_KINDS)) informers[name as WatchedKind] = make(spec)
    this.informers = {
      ...informers,
      rootConfigMaps: make({apiVersions: ['v1'], kind: 'ConfigMap', namespace: rootNamespace}),
    }
    for (const informer of Object.values(this.informers)) {
      for (const v of informer.spec.apiVersions) this.byGroupKind.set(`${groupOf(v)}/${informer.spec.kind}`, informer)
      const index = new Map<string, Set<string>>()
      this.ownerIndex.set(informer, index)
      informer.onChange((obj, old) => this.reindex(informer, index, obj, old))
    }
  }

  private reindex(
    informer: Informer,
    index: Map<string, Set<string>>,
    obj: KubeObject | undefined,
    old: KubeObject | undefined,
  ): void {
    if (old) {
      for (const ref of old.metadata.ownerReferences ?? []) if (ref.uid) index.get(ref.uid)?.delete(keyOf(old))
      if (old.metadata.uid) this.uidIndex.delete(old.metadata.uid)
    }
    if (obj) {
      for (const ref of obj.metadata.ownerReferences ?? []) {
        if (!ref.uid) continue
        let set = index.get(ref.uid)
        if (!set) index.set(ref.uid, (set = new Set()))
        set.add(keyOf(obj))
      }
      if (obj.metadata.uid) this.uidIndex.set(obj.metadata.uid, {informer, key: keyOf(obj)})
    }
  }

  async start(): Promise<void> {
    await Promise.all(Object.values(this.informers).map((i) => i.start()))
  }

  stop(): void {
    for (const i of Object.values(this.informers)) i.stop()
  }

  /** Lists everything again; true when any cache had missed a change. */
  async resync(): Promise<boolean> {
    const changed = await Promise.all(Object.values(this.informers).map((i) => i.resync()))
    return changed.some(Boolean)
  }

  informerFor(ref: {apiVersion: string; kind: string}): Informer | undefined {
    return this.byGroupKind.get(`${groupOf(ref.apiVersion)}/${ref.kind}`)
  }

  on(kind: WatchedKind | 'rootConfigMaps', handler: ChangeHandler): void {
    this.informers[kind].onChange(handler)
  }

  list(kind: WatchedKind | 'rootConfigMaps', namespace?: string): KubeObject[] {
    return this.informers[kind].list(namespace)
  }

  get(kind: WatchedKind | 'rootConfigMaps', namespace: string | undefined, name: string): KubeObject | undefined {
    return this.informers[kind].get(namespace ? `${namespace}/${name}` : name)
  }

  /** Objects of `kind` that name `ownerUid` in their ownerReferences. */
  ownedBy(kind: WatchedKind, ownerUid: string | undefined): KubeObject[] {
    if (!ownerUid) return []
    const informer = this.informers[kind]
    const keys = this.ownerIndex.get(informer)?.get(ownerUid)
    if (!keys) return []
    return [...keys].map((k) => informer.get(k)).filter((o): o is KubeObject => o !== undefined)
  }

  /** An object by uid, in whichever watched kind it is. */
  byUid(uid: string): KubeObject | undefined {
    const hit = this.uidIndex.get(uid)
    return hit ? hit.informer.get(hit.key) : undefined
  }

  /** Whether objects of this kind are watched (so that absence from the caches means absence). */
  watches(ref: {apiVersion: string; kind: string}): boolean {
    const informer = this.informerFor(ref)
    return informer !== undefined && informer.spec.namespace === undefined && informer.served !== undefined
  }

  // -------------------------------------------------------------------------------------------
  // Writes (write-through into the caches)

  private record(obj: KubeObject | undefined, fallback: {apiVersion: string; kind: string}): KubeObject | undefined {
    if (!obj) return obj
    const typed = {...obj, apiVersion: obj.apiVersion ?? fallback.apiVersion, kind: obj.kind ?? fallback.kind}
    this.informerFor(typed)?.upsert(typed)
    return typed
  }

  async create(obj: KubeObject, opts: {subresource?: string} = {}): Promise<KubeObject> {
    return this.record(await this.api.create(obj, opts), obj)!
  }

  async patch(ref: ObjectRef, patch: unknown, opts: PatchOptions = {}): Promise<KubeObject> {
    return this.record(await this.api.patch(ref, patch, opts), ref)!
  }

  /** Deletes; the caches drop the object unless the server keeps it (graceful deletion, finalizers). */
  async delete(obj: KubeObject, opts: DeleteOptions = {}): Promise<void> {
    const ref: ObjectRef = {
      apiVersion: obj.apiVersion,
      kind: obj.kind,
      name: obj.metadata.name,
      ...(obj.metadata.namespace ? {namespace: obj.metadata.namespace} : {}),
    }
    let answer: KubeObject | undefined
    try {
      answer = await this.api.delete(ref, {
        ...opts,
        ...(opts.preconditions ? {} : obj.metadata.uid ? {preconditions: {uid: obj.metadata.uid}} : {}),
      })
    } catch (error) {
      if (!isNotFound(error)) throw error
    }
    const informer = this.informerFor(obj)
    const stillThere =
      answer !== undefined &&
      answer.metadata?.deletionTimestamp &&
      opts.gracePeriodSeconds !== 0 &&
      ((answer.metadata.finalizers as string[] | undefined)?.length ||
        (answer.metadata.deletionGracePeriodSeconds as number | undefined))
    if (stillThere) this.record(answer, obj)
    else informer?.remove(obj)
  }
}
