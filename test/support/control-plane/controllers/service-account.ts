// kube-controller-manager's ServiceAccount controller: every namespace gets a `default`
// ServiceAccount (a real API server refuses pods whose ServiceAccount does not exist).
import {isTerminating, splitKey} from '../meta.js'
import {isConflict} from '../api.js'
import {WorkQueue} from '../queue.js'
import type {Controller, ControllerContext} from './context.js'

export class DefaultServiceAccounts implements Controller {
  readonly queue: WorkQueue

  constructor(private readonly ctx: ControllerContext) {
    this.queue = new WorkQueue('serviceaccount', (key) => this.reconcile(key), {
      workers: 2,
      onError: (q, k, e) => ctx.report(`${q} ${k}`, e),
    })
    ctx.state.on('namespaces', (ns) => {
      if (ns) this.queue.add(ns.metadata.name)
    })
    ctx.state.on('serviceAccounts', (sa, old) => {
      if (!sa && old?.metadata.name === 'default') this.queue.add(old.metadata.namespace!)
    })
  }

  enqueueAll(): void {
    for (const ns of this.ctx.state.list('namespaces')) this.queue.add(ns.metadata.name)
  }

  private async reconcile(key: string): Promise<void> {
    const {name} = splitKey(key)
    const ns = this.ctx.namespace(name)
    if (!ns || isTerminating(ns) || ns.status?.phase === 'Terminating') return
    if (this.ctx.state.get('serviceAccounts', name, 'default')) return
    try {
      await this.ctx.state.create({
        apiVersion: 'v1',
        kind: 'ServiceAccount',
        metadata: {name: 'default', namespace: name},
      })
    } catch (error) {
      if (!isConflict(error)) throw error
    }
  }
}
