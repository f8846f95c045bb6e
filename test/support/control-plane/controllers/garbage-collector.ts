// kube-controller-manager's garbage collector, for the objects these controllers create: an object
// whose owners (ownerReferences with a uid) are all gone is deleted — the waypoint's Deployment,
// Service and ServiceAccount when its Gateway is deleted, ReplicaSets of a deleted Deployment, pods
// of a deleted ReplicaSet/StatefulSet/DaemonSet/Job. An API server without kube-controller-manager
// (envtest) does none of this; the test API server does it itself, and then there is nothing left
// to do here. An owner is only declared gone after the API server says so (GET), never from the
// caches alone.
import type {KubeObject, OwnerReference} from '../../../../src/planner/model.js'
import {isTerminating, keyOf} from '../meta.js'
import {WorkQueue} from '../queue.js'
import {type WatchedKind, WATCHED_KINDS} from '../state.js'
import type {Controller, ControllerContext} from './context.js'

const SEP = '|'

export class GarbageCollector implements Controller {
  readonly queue: WorkQueue

  constructor(private readonly ctx: ControllerContext) {
    this.queue = new WorkQueue('garbage-collector', (key) => this.reconcile(key), {
      workers: 2,
      onError: (q, k, e) => ctx.report(`${q} ${k}`, e),
    })
    for (const kind of Object.keys(WATCHED_KINDS) as WatchedKind[]) {
      ctx.state.on(kind, (obj, old) => {
        if (obj && (obj.metadata.ownerReferences?.length ?? 0) > 0) this.queue.add(kind + SEP + keyOf(obj))
        // An owner went away: look at its dependents.
        if (!obj && old?.metadata.uid) this.enqueueDependents(old.metadata.uid)
      })
    }
  }

  enqueueAll(): void {
    for (const kind of Object.keys(WATCHED_KINDS) as WatchedKind[]) {
      for (const o of this.ctx.state.list(kind))
        if ((o.metadata.ownerReferences?.length ?? 0) > 0) this.queue.add(kind + SEP + keyOf(o))
    }
  }

  private enqueueDependents(uid: string): void {
    for (const kind of Object.keys(WATCHED_KINDS) as WatchedKind[]) {
      for (const o of this.ctx.state.ownedBy(kind, uid)) this.queue.add(kind + SEP + keyOf(o))
    }
  }

  private async ownerGone(owner: OwnerReference, namespace: string | undefined): Promise<boolean> {
    if (!owner.uid) return false
    if (this.ctx.state.byUid(owner.uid)) return false
    // Owners of kinds nobody here watches are not ours to judge.
    const informer = this.ctx.state.informerFor(owner)
    if (!informer?.served) return false
    const ownerNamespace = informer.served.namespaced ? namespace : undefined
    const live = await this.ctx.state.api
      .get({
        apiVersion: owner.apiVersion,
        kind: owner.kind,
        name: owner.name,
        ...(ownerNamespace ? {namespace: ownerNamespace} : {}),
      })
      .catch(() => 'unknown' as const)
    if (live === 'unknown') return false
    return live === undefined || live.metadata.uid !== owner.uid
  }

  private async reconcile(key: string): Promise<void> {
    const sep = key.indexOf(SEP)
    const kind = key.slice(0, sep) as WatchedKind
    const objectKey = key.slice(sep + 1)
    const obj: KubeObject | undefined = this.ctx.state.informers[kind].get(objectKey)
    if (!obj || isTerminating(obj)) return
    const owners = (obj.metadata.ownerReferences ?? []).filter((o) => o.uid)
    if (owners.length === 0) return
    for (const owner of owners) if (!(await this.ownerGone(owner, obj.metadata.namespace))) return
    await this.ctx.state.delete(obj, {propagationPolicy: 'Background'})
  }
}
