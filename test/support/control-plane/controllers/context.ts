// What every fake controller gets: the shared cluster view, the current options, and helpers to
// read the pieces of cluster state several controllers need (pod readiness, nodes, Istio settings).
import type {KubeObject} from '../../../../src/planner/model.js'
import type {InjectionWebhooks} from '../../../../src/planner/namespace.js'
import {selectorMatches} from '../../../../src/planner/namespace.js'
import {nodeExclusion} from '../../../../src/preflight/daemonset.js'
import {
  injectionWebhooks,
  injectorSettings,
  type InjectorSettings,
  ISTIO_CNI_POD_LABEL,
  ZTUNNEL_POD_LABEL,
} from '../istio/settings.js'
import {findCondition, isTerminating} from '../meta.js'
import type {ControlPlaneOptions} from '../options.js'
import type {WorkQueue} from '../queue.js'
import type {ClusterState} from '../state.js'
import {byCodePoint} from '../../../../src/planner/order.js'

export interface Controller {
  readonly queue: WorkQueue
  /** Enqueue everything this controller manages (after a resync or a configuration change). */
  enqueueAll(): void
}

export class ControllerContext {
  constructor(
    readonly state: ClusterState,
    private readonly currentOptions: () => ControlPlaneOptions,
    readonly report: (where: string, error: unknown) => void,
  ) {}

  get options(): ControlPlaneOptions {
    return this.currentOptions()
  }

  get rootNamespace(): string {
    return this.options.rootNamespace
  }

  namespace(name: string | undefined): KubeObject | undefined {
    return name === undefined ? undefined : this.state.get('namespaces', undefined, name)
  }

  // -------------------------------------------------------------------------------------------
  // Pods and nodes

  podReady(pod: KubeObject): boolean {
    return !isTerminating(pod) && pod.status?.phase === 'Running' && findCondition(pod, 'Ready')?.status === 'True'
  }

  /** Ready for at least minReadySeconds (the "available" of Deployments, ReplicaSets, DaemonSets). */
  podAvailable(pod: KubeObject, minReadySeconds: number): {available: boolean; inMs?: number} {
    if (!this.podReady(pod)) return {available: false}
    if (!minReadySeconds) return {available: true}
    const since = Date.parse(findCondition(pod, 'Ready')?.lastTransitionTime ?? '')
    if (Number.isNaN(since)) return {available: true}
    const left = since + minReadySeconds * 1000 - Date.now()
    return left <= 0 ? {available: true} : {available: false, inMs: left}
  }

  /** Pods a controller counts: not terminating, not finished. */
  activePods(pods: KubeObject[]): KubeObject[] {
    return pods.filter((p) => !isTerminating(p) && p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed')
  }

  nodeReady(node: KubeObject): boolean {
    return findCondition(node, 'Ready')?.status === 'True'
  }

  /** Nodes a regular pod with this spec may be scheduled on (Ready, schedulable, selectors, taints). */
  schedulableNodes(podSpec: unknown): KubeObject[] {
    return this.state
      .list('nodes')
      .filter(
        (n) => this.nodeReady(n) && n.spec?.unschedulable !== true && nodeExclusion({spec: podSpec}, n) === undefined,
      )
      .sort((a, b) => byCodePoint(a.metadata.name, b.metadata.name))
  }

  // -------------------------------------------------------------------------------------------
  // Istio components on nodes

  private componentPods(labels: Record<string, string>): KubeObject[] {
    return this.state.list('pods').filter((p) => selectorMatches({matchLabels: labels}, p.metadata.labels ?? {}))
  }

  isZtunnelPod(pod: KubeObject): boolean {
    return selectorMatches({matchLabels: ZTUNNEL_POD_LABEL}, pod.metadata.labels ?? {})
  }

  isCniPod(pod: KubeObject): boolean {
    return selectorMatches({matchLabels: ISTIO_CNI_POD_LABEL}, pod.metadata.labels ?? {})
  }

  /** istio-cni is installed when its DaemonSet exists (the CNI plugin is chained on every node it runs on). */
  cniInstalled(): boolean {
    return this.state
      .list('daemonSets')
      .some((d) => selectorMatches({matchLabels: ISTIO_CNI_POD_LABEL}, d.spec?.template?.metadata?.labels ?? {}))
  }

  cniAgentReady(nodeName: string): boolean {
    return this.componentPods(ISTIO_CNI_POD_LABEL).some((p) => p.spec?.nodeName === nodeName && this.podReady(p))
  }

  ztunnelReady(nodeName: string): boolean {
    return this.componentPods(ZTUNNEL_POD_LABEL).some((p) => p.spec?.nodeName === nodeName && this.podReady(p))
  }

  // -------------------------------------------------------------------------------------------
  // Istio configuration

  rootDeployments(): KubeObject[] {
    return this.state.list('deployments', this.rootNamespace)
  }

  webhooks(): InjectionWebhooks {
    // The API server calls mutating webhooks ordered by configuration name.
    const configurations = [...this.state.list('webhooks')].sort((a, b) =>
      byCodePoint(a.metadata.name, b.metadata.name),
    )
    return injectionWebhooks(configurations, this.state.list('rootConfigMaps'))
  }

  injectorSettings(revision: string): InjectorSettings {
    return injectorSettings(revision, this.rootDeployments(), this.state.list('rootConfigMaps'), this.rootNamespace)
  }
}
