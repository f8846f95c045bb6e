// kube-controller-manager's node lifecycle controller, the part about taints: a real API server's
// TaintNodesByCondition admission plugin gives every new Node `node.kubernetes.io/not-ready:NoSchedule`,
// and this controller removes it once the Node's Ready condition is True (and puts it back when it is
// not), so that pods without a toleration can be scheduled. Without it only DaemonSet pods (which
// tolerate it) ever land on a Node.
import {isConflict} from '../api.js'
import {WorkQueue} from '../queue.js'
import type {Controller, ControllerContext} from './context.js'

export const NOT_READY_TAINT = 'node.kubernetes.io/not-ready'

interface Taint {
  key: string
  effect: string
  value?: string
}

export class NodeLifecycleController implements Controller {
  readonly queue: WorkQueue

  constructor(private readonly ctx: ControllerContext) {
    this.queue = new WorkQueue('node-lifecycle', (key) => this.reconcile(key), {
      workers: 1,
      onError: (q, k, e) => ctx.report(`${q} ${k}`, e),
    })
    ctx.state.on('nodes', (node) => {
      if (node) this.queue.add(node.metadata.name)
    })
  }

  enqueueAll(): void {
    for (const n of this.ctx.state.list('nodes')) this.queue.add(n.metadata.name)
  }

  private async reconcile(name: string): Promise<void> {
    const node = this.ctx.state.get('nodes', undefined, name)
    if (!node) return
    const ready = (node.status?.conditions ?? []).some(
      (c: {type: string; status: string}) => c.type === 'Ready' && c.status === 'True',
    )
    const taints: Taint[] = node.spec?.taints ?? []
    const tainted = taints.some((t) => t.key === NOT_READY_TAINT && t.effect === 'NoSchedule')
    let wanted: Taint[]
    if (ready && taints.some((t) => t.key === NOT_READY_TAINT)) wanted = taints.filter((t) => t.key !== NOT_READY_TAINT)
    else if (!ready && !tainted) wanted = [...taints, {key: NOT_READY_TAINT, effect: 'NoSchedule'}]
    else return
    try {
      // The resourceVersion makes it a compare-and-swap: taints others changed meanwhile are not lost.
      await this.ctx.state.patch(
        {apiVersion: 'v1', kind: 'Node', name},
        {metadata: {resourceVersion: node.metadata.resourceVersion}, spec: {taints: wanted}},
      )
    } catch (error) {
      if (!isConflict(error)) throw error
      this.queue.add(name)
    }
  }
}
