// istiod's ambient status for Services (DOMAIN §1.5, §1.7): a Service bound to a waypoint — its own
// istio.io/use-waypoint label, else its namespace's — gets the condition istio.io/WaypointBound,
// True (WaypointAccepted) when the waypoint is ready and admits it, False with the reason when not
// (WaypointIsNotReady, AttachmentDenied, UnsupportedTrafficType); the condition goes away when the
// Service is no longer bound.
import type {KubeObject} from '../../../../src/planner/model.js'
import {serviceWaypointBinding, WAYPOINT_BOUND} from '../istio/waypoints.js'
import {canonicalJson, type Condition, keyOf, removeCondition, setCondition, splitKey} from '../meta.js'
import {WorkQueue} from '../queue.js'
import type {Controller, ControllerContext} from './context.js'

export class WaypointBindingController implements Controller {
  readonly queue: WorkQueue

  constructor(private readonly ctx: ControllerContext) {
    this.queue = new WorkQueue('waypoint-binding', (key) => this.reconcile(key), {
      workers: ctx.options.workers,
      onError: (q, k, e) => ctx.report(`${q} ${k}`, e),
    })
    ctx.state.on('services', (svc) => {
      if (svc) this.queue.add(keyOf(svc))
    })
    ctx.state.on('namespaces', (ns, old) => {
      for (const s of ctx.state.list('services', (ns ?? old!).metadata.name)) this.queue.add(keyOf(s))
      // Namespaces' labels also decide cross-namespace attachment (allowedRoutes selectors).
      if (ns && old && canonicalJson(ns.metadata.labels) !== canonicalJson(old.metadata.labels)) this.enqueueAll()
    })
    // A waypoint's readiness, listeners or traffic type can change any Service's binding.
    ctx.state.on('gateways', () => this.enqueueAll())
    ctx.state.on('gatewayClasses', () => this.enqueueAll())
  }

  enqueueAll(): void {
    for (const s of this.ctx.state.list('services')) this.queue.add(keyOf(s))
  }

  binding(service: KubeObject) {
    const {state} = this.ctx
    return serviceWaypointBinding(service, this.ctx.namespace(service.metadata.namespace), {
      gateway: (ns, name) => state.get('gateways', ns, name),
      gatewayClass: (name) => state.get('gatewayClasses', undefined, name),
      namespace: (name) => this.ctx.namespace(name),
    })
  }

  private async reconcile(key: string): Promise<void> {
    const {namespace, name} = splitKey(key)
    const svc = this.ctx.state.get('services', namespace, name)
    if (!svc) return
    const current: Condition[] = svc.status?.conditions ?? []
    const binding = this.binding(svc)
    const next = binding
      ? setCondition(current, {type: WAYPOINT_BOUND, ...binding.condition})
      : removeCondition(current, WAYPOINT_BOUND)
    if (canonicalJson(next) === canonicalJson(current)) return
    await this.ctx.state.patch(
      {apiVersion: 'v1', kind: 'Service', namespace: namespace!, name},
      {metadata: {resourceVersion: svc.metadata.resourceVersion}, status: {conditions: next.length > 0 ? next : null}},
      {subresource: 'status'},
    )
  }
}
