// The ReplicaSet controller: keeps `spec.replicas` pods (`<rs>-<5 random>`, owned by the
// ReplicaSet, injected by the webhook at creation), deletes extras (unready and newest first), and
// reports replicas / fullyLabeledReplicas / readyReplicas / availableReplicas / observedGeneration.
import type {KubeObject} from '../../../../src/planner/model.js'
import {selectorMatches} from '../../../../src/planner/namespace.js'
import {isControlledBy, isTerminating, keyOf, omitZero, sameCounters, splitKey} from '../meta.js'
import {WorkQueue} from '../queue.js'
import type {Controller, ControllerContext} from './context.js'
import type {PodFactory} from './pods.js'
import {byCodePoint} from '../../../../src/planner/order.js'

export class ReplicaSetController implements Controller {
  readonly queue: WorkQueue

  constructor(
    private readonly ctx: ControllerContext,
    private readonly pods: PodFactory,
  ) {
    this.queue = new WorkQueue('replicaset', (key) => this.reconcile(key), {
      workers: ctx.options.workers,
      onError: (q, k, e) => ctx.report(`${q} ${k}`, e),
    })
    ctx.state.on('replicaSets', (rs, old) => this.queue.add(keyOf(rs ?? old!)))
    ctx.state.on('pods', (pod, old) => {
      for (const p of [pod, old]) {
        const owner = p?.metadata.ownerReferences?.find((o) => o.controller && o.kind === 'ReplicaSet')
        if (owner) this.queue.add(`${p!.metadata.namespace}/${owner.name}`)
      }
    })
    // Pods wait for a schedulable node.
    ctx.state.on('nodes', () => this.enqueueAll())
  }

  enqueueAll(): void {
    for (const rs of this.ctx.state.list('replicaSets')) this.queue.add(keyOf(rs))
  }

  private async reconcile(key: string): Promise<{requeueAfterMs?: number} | void> {
    const {namespace, name} = splitKey(key)
    const rs = this.ctx.state.get('replicaSets', namespace, name)
    if (!rs || isTerminating(rs)) return
    const owned = this.ctx.state.ownedBy('pods', rs.metadata.uid).filter((p) => isControlledBy(p, rs))
    const active = this.ctx.activePods(owned)
    const want: number = rs.spec?.replicas ?? 1
    let waitingForNode = false

    if (active.length < want) {
      for (let i = active.length; i < want; i++) {
        const pod = this.pods.fromTemplate(rs, rs.spec?.template, {generateName: `${rs.metadata.name}-`})
        if (!(await this.pods.create(pod))) {
          waitingForNode = true
          break
        }
      }
    } else if (active.length > want) {
      for (const pod of deletionOrder(active, this.ctx).slice(0, active.length - want)) await this.ctx.state.delete(pod)
    }

    const current = this.ctx.activePods(
      this.ctx.state.ownedBy('pods', rs.metadata.uid).filter((p) => isControlledBy(p, rs)),
    )
    const minReady: number = rs.spec?.minReadySeconds ?? 0
    let nextCheck: number | undefined
    let available = 0
    for (const p of current) {
      const a = this.ctx.podAvailable(p, minReady)
      if (a.available) available++
      else if (a.inMs !== undefined) nextCheck = Math.min(nextCheck ?? a.inMs, a.inMs)
    }
    const labels = rs.spec?.template?.metadata?.labels ?? {}
    const status = {
      replicas: current.length,
      fullyLabeledReplicas: current.filter((p) => selectorMatches({matchLabels: labels}, p.metadata.labels ?? {}))
        .length,
      readyReplicas: current.filter((p) => this.ctx.podReady(p)).length,
      availableReplicas: available,
      observedGeneration: rs.metadata.generation ?? 1,
    }
    if (!sameCounters(rs.status, status)) {
      const patch = omitZero(status, ['fullyLabeledReplicas', 'readyReplicas', 'availableReplicas'])
      await this.ctx.state.patch(
        {apiVersion: 'apps/v1', kind: 'ReplicaSet', namespace: namespace!, name},
        {status: patch},
        {subresource: 'status'},
      )
    }
    if (waitingForNode) return
    return nextCheck === undefined ? undefined : {requeueAfterMs: nextCheck}
  }
}

/** controller.ActivePods ordering, reduced: unscheduled, then not ready, then the newest first. */
function deletionOrder(pods: KubeObject[], ctx: ControllerContext): KubeObject[] {
  const rank = (p: KubeObject) => (!p.spec?.nodeName ? 0 : p.status?.phase === 'Pending' ? 1 : !ctx.podReady(p) ? 2 : 3)
  return [...pods].sort(
    (a, b) =>
      rank(a) - rank(b) ||
      byCodePoint(String(b.metadata.creationTimestamp ?? ''), String(a.metadata.creationTimestamp ?? '')) ||
      byCodePoint(b.metadata.name, a.metadata.name),
  )
}
