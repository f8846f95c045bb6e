// The fake control plane: kube-controller-manager's workload controllers and garbage collector, a
// kubelet for every Node, istio's injection webhook (applied where pods are created), istio-cni's
// node agent and istiod's waypoint handling — all acting only through the Kubernetes API with their
// own credentials, so they run the same against the test API server and a real kube-apiserver
// without controllers (envtest).
import type {KubeObject} from '../../../src/planner/model.js'
import type {ClusterApi} from './api.js'
import {type Controller, ControllerContext} from './controllers/context.js'
import {DaemonSetController} from './controllers/daemonset.js'
import {DeploymentController} from './controllers/deployment.js'
import {GarbageCollector} from './controllers/garbage-collector.js'
import {IstioCniAgent} from './controllers/istio-cni.js'
import {JobController} from './controllers/job.js'
import {Kubelet} from './controllers/kubelet.js'
import {NamespaceController} from './controllers/namespace.js'
import {NodeLifecycleController} from './controllers/node-lifecycle.js'
import {PodFactory} from './controllers/pods.js'
import {ReplicaSetController} from './controllers/replicaset.js'
import {DefaultServiceAccounts} from './controllers/service-account.js'
import {ServiceIpAllocator} from './controllers/service-ip.js'
import {StatefulSetController} from './controllers/statefulset.js'
import {WaypointBindingController} from './controllers/waypoint-binding.js'
import {WaypointController} from './controllers/waypoint.js'
import type {InjectionOutcome} from './istio/injector.js'
import {type ControlPlaneOptions, type ControlPlaneOptionsInput, resolveOptions} from './options.js'
import {ClusterState} from './state.js'

export interface ControlPlaneError {
  at: string
  where: string
  message: string
}

const MAX_ERRORS = 50

export class ControlPlane {
  readonly state: ClusterState
  private currentOptions: ControlPlaneOptions
  private readonly controllers: Controller[]
  private readonly pods: PodFactory
  private readonly context: ControllerContext
  /** The latest unexpected errors of controllers and watches (newest last). */
  readonly errors: ControlPlaneError[] = []
  private stopped = false

  constructor(
    readonly api: ClusterApi,
    options: ControlPlaneOptionsInput = {},
  ) {
    this.currentOptions = resolveOptions(options)
    const report = (where: string, error: unknown) => this.report(where, error)
    this.state = new ClusterState(api, this.currentOptions.rootNamespace, report)
    this.context = new ControllerContext(this.state, () => this.currentOptions, report)
    this.pods = new PodFactory(this.context)
    const ctx = this.context
    this.controllers = [
      new DeploymentController(ctx),
      new ReplicaSetController(ctx, this.pods),
      new StatefulSetController(ctx, this.pods),
      new DaemonSetController(ctx, this.pods),
      new JobController(ctx, this.pods),
      new Kubelet(ctx),
      new IstioCniAgent(ctx),
      new WaypointController(ctx),
      new WaypointBindingController(ctx),
      new ServiceIpAllocator(ctx),
      new DefaultServiceAccounts(ctx),
      new GarbageCollector(ctx),
      new NamespaceController(ctx),
      new NodeLifecycleController(ctx),
    ]
    // Nothing acts on a half-filled cache: the queues wait for every kind's first list.
    for (const c of this.controllers) c.queue.pause()
  }

  get options(): ControlPlaneOptions {
    return this.currentOptions
  }

  private report(where: string, error: unknown): void {
    const message = error instanceof Error ? error.message : String(error)
    this.errors.push({at: new Date().toISOString(), where, message})
    if (this.errors.length > MAX_ERRORS) this.errors.shift()
    this.currentOptions.log?.(`control plane: ${where}: ${message}`, 'error')
  }

  /** Lists and starts watching; the controllers start working on what they see. */
  async start(): Promise<this> {
    await this.state.start()
    for (const c of this.controllers) c.queue.resume()
    return this
  }

  /** Changes delays and failures while running; every controller looks at its objects again. */
  configure(input: ControlPlaneOptionsInput): void {
    if (input.rootNamespace !== undefined && input.rootNamespace !== this.currentOptions.rootNamespace) {
      throw new Error('rootNamespace cannot change while the control plane runs')
    }
    this.currentOptions = resolveOptions(input, this.currentOptions)
    for (const c of this.controllers) c.enqueueAll()
  }

  /**
   * What the cluster does to a pod created directly (not by a controller): the injection webhook and
   * the scheduler's node choice. The harness passes fixture pods through this before creating them.
   */
  admitPod(pod: KubeObject): {pod: KubeObject; outcome: InjectionOutcome; scheduled: boolean} {
    const admitted = this.pods.admit(pod)
    const scheduled = this.pods.schedule(admitted.pod)
    return {...admitted, scheduled}
  }

  private busy(): string[] {
    return this.controllers.flatMap((c) => c.queue.describeBusy())
  }

  /**
   * Resolves once the control plane has nothing left to do: every write made before the call has
   * been seen (the caches are re-listed), every controller's queue is empty with no timer pending
   * (pod start-up, readiness delays), and a final re-list finds nothing new. Pods configured never
   * to become ready, waypoints configured to fail and the like are a stable state too.
   */
  async waitForIdle(opts: {timeoutMs?: number} = {}): Promise<void> {
    const deadline = Date.now() + (opts.timeoutMs ?? 20_000)
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
    for (;;) {
      if (this.stopped) throw new Error('the control plane is stopped')
      await this.state.resync()
      while (this.busy().length > 0) {
        if (Date.now() > deadline) throw this.timeout()
        await sleep(5)
      }
      const writes = this.api.writes
      const missed = await this.state.resync()
      if (!missed && this.busy().length === 0 && this.api.writes === writes) return
      if (Date.now() > deadline) throw this.timeout()
    }
  }

  private timeout(): Error {
    const busy = this.busy()
    const errors = this.errors.slice(-5).map((e) => `${e.where}: ${e.message}`)
    return new Error(
      `the control plane did not settle: ${busy.slice(0, 10).join('; ') || 'nothing queued'}${busy.length > 10 ? ` (and ${busy.length - 10} more)` : ''}` +
        (errors.length > 0 ? `; recent errors: ${errors.join('; ')}` : ''),
    )
  }

  stop(): void {
    if (this.stopped) return
    this.stopped = true
    for (const c of this.controllers) c.queue.stop()
    this.state.stop()
  }
}

export async function startControlPlane(
  api: ClusterApi,
  options: ControlPlaneOptionsInput = {},
): Promise<ControlPlane> {
  return new ControlPlane(api, options).start()
}
