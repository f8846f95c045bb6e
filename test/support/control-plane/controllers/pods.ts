// Creating pods the way a cluster does: the controller renders the pod from its template, the
// scheduler picks a node, the sidecar injection webhook mutates it on CREATE. Here the first two
// happen in the controller and the webhook's effect is applied before the request is sent (there is
// no webhook server), so the pod arrives at the API server as the webhook would have returned it.
import type {KubeObject} from '../../../../src/planner/model.js'
import {type InjectionOutcome, injectSidecar} from '../istio/injector.js'
import {isTerminating, ownerReferenceTo} from '../meta.js'
import type {ControllerContext} from './context.js'

export class PodFactory {
  private nextNode = 0

  constructor(private readonly ctx: ControllerContext) {}

  /** A pod from a controller's template, owned by it. */
  fromTemplate(
    owner: KubeObject,
    template: any,
    extra: {name?: string; generateName?: string; labels?: Record<string, string>; spec?: Record<string, unknown>},
  ): KubeObject {
    const meta = template?.metadata ?? {}
    return {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        ...(extra.name ? {name: extra.name} : {}),
        ...(extra.generateName ? {generateName: extra.generateName} : {}),
        namespace: owner.metadata.namespace,
        labels: {...(meta.labels ?? {}), ...(extra.labels ?? {})},
        ...(meta.annotations ? {annotations: {...meta.annotations}} : {}),
        ownerReferences: [ownerReferenceTo(owner)],
      } as KubeObject['metadata'],
      spec: {...structuredClone(template?.spec ?? {}), ...(extra.spec ?? {})},
    }
  }

  /** The webhook's effect (DOMAIN §2.1, §2.4). */
  admit(pod: KubeObject): {pod: KubeObject; outcome: InjectionOutcome} {
    const ctx = this.ctx
    return injectSidecar(pod, {
      namespace: ctx.namespace(pod.metadata.namespace ?? 'default'),
      webhooks: ctx.webhooks(),
      settings: (revision) => ctx.injectorSettings(revision),
      nodes: ctx.state.list('nodes'),
    })
  }

  /**
   * Picks a node round-robin among those the pod may run on. Returns false when there is none: the
   * caller waits for a node instead of creating a pod that could never be bound (the test API server
   * has no pods/binding subresource to bind it later).
   */
  schedule(pod: KubeObject): boolean {
    if (pod.spec?.nodeName) return true
    const nodes = this.ctx.schedulableNodes(pod.spec)
    if (nodes.length === 0) return false
    pod.spec.nodeName = nodes[this.nextNode++ % nodes.length]!.metadata.name
    return true
  }

  /** Admits, schedules and creates; undefined when no node can take the pod yet, or its namespace is going away. */
  async create(pod: KubeObject): Promise<KubeObject | undefined> {
    const ns = this.ctx.namespace(pod.metadata.namespace)
    // The API server refuses new content in a terminating namespace (NamespaceLifecycle admission).
    if (ns && isTerminating(ns)) return undefined
    const admitted = this.admit(pod).pod
    if (!this.schedule(admitted)) return undefined
    return this.ctx.state.create(admitted)
  }
}
