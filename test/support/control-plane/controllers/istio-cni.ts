// istio-cni's node agent (DOMAIN §2.2): enrolls pods in ambient live — no restart — when they match
// the enablement selectors (pod or namespace istio.io/dataplane-mode=ambient, not for pods with a
// sidecar, hostNetwork or excluded namespaces), and un-enrolls them when they stop matching. The
// result is the ambient.istio.io/redirection annotation, written through pods/status as istio-cni
// does: `enabled` when the node's ztunnel is ready, `pending` while it is not; nothing changes on a
// node whose istio-cni agent is not ready.
import type {KubeObject} from '../../../../src/planner/model.js'
import {ambientEnrolled, REDIRECTION_ANNOTATION} from '../istio/ambient.js'
import {isTerminating, keyOf, splitKey} from '../meta.js'
import {WorkQueue} from '../queue.js'
import type {Controller, ControllerContext} from './context.js'

export class IstioCniAgent implements Controller {
  readonly queue: WorkQueue
  /**
   * Whether the API server applies metadata changes sent to pods/status (a real one does). The test
   * API server keeps only `status` from such writes; then the main resource is patched instead.
   */
  private statusCarriesMetadata: boolean | undefined

  constructor(private readonly ctx: ControllerContext) {
    this.queue = new WorkQueue('istio-cni', (key) => this.reconcile(key), {
      workers: ctx.options.workers,
      onError: (q, k, e) => ctx.report(`${q} ${k}`, e),
    })
    ctx.state.on('pods', (pod, old) => {
      const p = pod ?? old!
      if (pod) this.queue.add(keyOf(pod))
      // ztunnel or the agent changing on a node changes what every pod there gets.
      if (p.spec?.nodeName && (ctx.isZtunnelPod(p) || ctx.isCniPod(p))) this.enqueueNode(p.spec.nodeName)
    })
    ctx.state.on('namespaces', (ns, old) => {
      for (const p of ctx.state.list('pods', (ns ?? old!).metadata.name)) this.queue.add(keyOf(p))
    })
    ctx.state.on('daemonSets', () => this.enqueueAll())
  }

  enqueueAll(): void {
    for (const p of this.ctx.state.list('pods')) this.queue.add(keyOf(p))
  }

  private enqueueNode(node: string): void {
    for (const p of this.ctx.state.list('pods')) if (p.spec?.nodeName === node) this.queue.add(keyOf(p))
  }

  /** The annotation value the agent wants on the pod; `keep` when the agent cannot act. */
  desired(pod: KubeObject): {value: string | undefined} | 'keep' {
    if (!this.ctx.cniInstalled()) return {value: undefined}
    const node: string | undefined = pod.spec?.nodeName
    if (!node) return 'keep'
    if (!this.ctx.cniAgentReady(node)) return 'keep'
    const {enrolled} = ambientEnrolled(
      pod,
      this.ctx.namespace(pod.metadata.namespace),
      this.ctx.options.cniExcludeNamespaces,
    )
    if (!enrolled) return {value: undefined}
    return {value: this.ctx.ztunnelReady(node) ? 'enabled' : 'pending'}
  }

  private async reconcile(key: string): Promise<void> {
    const {namespace, name} = splitKey(key)
    const pod = this.ctx.state.get('pods', namespace, name)
    if (!pod || isTerminating(pod)) return
    const phase = pod.status?.phase
    if (phase === 'Succeeded' || phase === 'Failed') return
    const want = this.desired(pod)
    if (want === 'keep') return
    const current = pod.metadata.annotations?.[REDIRECTION_ANNOTATION]
    if (current === want.value) return
    const ref = {apiVersion: 'v1', kind: 'Pod', namespace: namespace!, name}
    const patch = {metadata: {annotations: {[REDIRECTION_ANNOTATION]: want.value ?? null}}}
    if (this.statusCarriesMetadata !== false) {
      const answer = await this.ctx.state.patch(ref, patch, {subresource: 'status'})
      const applied = answer.metadata.annotations?.[REDIRECTION_ANNOTATION] === want.value
      if (applied) {
        this.statusCarriesMetadata = true
        return
      }
      if (this.statusCarriesMetadata === undefined) {
        this.statusCarriesMetadata = false
        this.ctx.options.log?.(
          'istio-cni: the API server ignored annotations sent to pods/status; patching the pods instead',
          'notice',
        )
      }
    }
    await this.ctx.state.patch(ref, patch)
  }
}
