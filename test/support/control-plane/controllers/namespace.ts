// kube-controller-manager's namespace controller: a Namespace being deleted keeps the `kubernetes`
// finalizer in spec.finalizers until everything in it is gone; this deletes the contents (every
// namespaced kind the server serves) and then removes the finalizer through namespaces/finalize.
// Without it a kube-apiserver without controllers (envtest) keeps deleted namespaces Terminating
// forever. The test API server empties and removes namespaces itself and serves no finalize
// subresource; there this has nothing to do.
import type {KubeObject} from '../../../../src/planner/model.js'
import {isNotFound, type Resource} from '../api.js'
import {isTerminating, keyOf} from '../meta.js'
import {WorkQueue} from '../queue.js'
import type {Controller, ControllerContext} from './context.js'

const FINALIZER = 'kubernetes'

export class NamespaceController implements Controller {
  readonly queue: WorkQueue
  private resources?: {at: number; list: Resource[]}

  constructor(private readonly ctx: ControllerContext) {
    this.queue = new WorkQueue('namespace', (key) => this.reconcile(key), {
      workers: 2,
      onError: (q, k, e) => ctx.report(`${q} ${k}`, e),
    })
    ctx.state.on('namespaces', (ns) => {
      if (ns && isTerminating(ns)) this.queue.add(keyOf(ns))
    })
  }

  enqueueAll(): void {
    for (const ns of this.ctx.state.list('namespaces')) if (isTerminating(ns)) this.queue.add(keyOf(ns))
  }

  private async namespacedResources(): Promise<Resource[]> {
    if (!this.resources || Date.now() - this.resources.at > 10_000) {
      const all = await this.ctx.state.api.allResources()
      this.resources = {
        at: Date.now(),
        list: all.filter((r) => r.namespaced && r.verbs.includes('list') && r.verbs.includes('delete')),
      }
    }
    return this.resources.list
  }

  private async reconcile(name: string): Promise<{requeueAfterMs?: number} | void> {
    const ns = this.ctx.namespace(name)
    if (!ns || !isTerminating(ns)) return
    const finalizers: string[] = ns.spec?.finalizers ?? []
    if (!finalizers.includes(FINALIZER)) return
    const api = this.ctx.state.api
    let remaining = 0
    for (const res of await this.namespacedResources()) {
      const {items} = await api
        .list(res, {namespace: name})
        .catch((e: unknown) => (isNotFound(e) ? {items: [] as KubeObject[]} : Promise.reject(e)))
      for (const item of items) {
        remaining++
        if (isTerminating(item)) continue
        const ref = {apiVersion: res.apiVersion, kind: res.kind, namespace: name, name: item.metadata.name}
        const informer = this.ctx.state.informerFor(ref)
        // Background, as kube-controller-manager's namespace deleter sends it: a Job's default policy is
        // Orphan, which would leave it Terminating with an `orphan` finalizer nobody here removes.
        if (informer)
          await this.ctx.state.delete(
            {...item, apiVersion: res.apiVersion, kind: res.kind},
            {propagationPolicy: 'Background'},
          )
        else await api.delete(ref, {propagationPolicy: 'Background'})
      }
    }
    // Pods terminate through the kubelet; come back until the namespace is empty.
    if (remaining > 0) return {requeueAfterMs: 100}
    try {
      await api.request(
        'PUT',
        `/api/v1/namespaces/${encodeURIComponent(name)}/finalize`,
        `finalize namespace ${name}`,
        {
          // The whole object, as the real controller sends it: finalize only takes spec.finalizers from it.
          body: {
            ...ns,
            apiVersion: 'v1',
            kind: 'Namespace',
            spec: {...(ns.spec ?? {}), finalizers: finalizers.filter((f) => f !== FINALIZER)},
          },
        },
      )
    } catch (error) {
      if (!isNotFound(error)) throw error
      this.ctx.options.log?.(
        `namespace ${name}: the API server offers no namespaces/finalize; leaving the namespace to it`,
        'notice',
      )
    }
  }
}
