// istiod's waypoint controller (DOMAIN §1.3, §1.7, §1.8): for every Gateway of class istio-waypoint
// that a running revision owns, the ServiceAccount, Deployment and Service named after it (owned by
// the Gateway, written with server-side apply as istiod does), then the Gateway's status:
// Accepted, and Programmed=True with status.addresses once the Deployment is available and the
// configured readiness delay has passed — or Programmed=False with the configured failure reason.
// GatewayClasses of the mesh controller get Accepted=True.
import type {KubeObject} from '../../../../src/planner/model.js'
import {
  failureMessage,
  GATEWAY_FIELD_MANAGER,
  gatewayOwnerRevision,
  isWaypointGateway,
  renderWaypoint,
  WAYPOINT_CONTROLLER_NAME,
  waypointStatus,
} from '../istio/waypoints.js'
import {runningRevisions} from '../istio/settings.js'
import {canonicalJson, type Condition, isSubset, isTerminating, keyOf, setCondition, splitKey} from '../meta.js'
import {WorkQueue} from '../queue.js'
import type {Controller, ControllerContext} from './context.js'

const CLASS_KEY = 'class:'

export class WaypointController implements Controller {
  readonly queue: WorkQueue
  /** Gateway uid → when its Deployment was first seen available (readiness delay). */
  private readonly availableSince = new Map<string, number>()

  constructor(private readonly ctx: ControllerContext) {
    this.queue = new WorkQueue('waypoint', (key) => this.reconcile(key), {
      workers: ctx.options.workers,
      onError: (q, k, e) => ctx.report(`${q} ${k}`, e),
    })
    const {state} = ctx
    state.on('gateways', (gw, old) => {
      this.queue.add(keyOf(gw ?? old!))
      if (!gw && old?.metadata.uid) this.availableSince.delete(old.metadata.uid)
    })
    state.on('gatewayClasses', (c, old) => {
      this.queue.add(CLASS_KEY + (c ?? old!).metadata.name)
      this.enqueueGateways()
    })
    for (const kind of ['deployments', 'services', 'serviceAccounts'] as const) {
      state.on(kind, (obj, old) => {
        const o = obj ?? old!
        const owner = o.metadata.ownerReferences?.find((r) => r.kind === 'Gateway')
        if (owner) this.queue.add(`${o.metadata.namespace}/${owner.name}`)
        // istiod revisions coming and going change which Gateways (and classes) are ours.
        if (kind === 'deployments' && o.metadata.namespace === ctx.rootNamespace) this.enqueueAll()
      })
    }
    state.on('namespaces', (ns, old) => {
      for (const gw of state.list('gateways', (ns ?? old!).metadata.name)) this.queue.add(keyOf(gw))
    })
    state.on('webhooks', () => this.enqueueGateways())
  }

  enqueueAll(): void {
    this.enqueueGateways()
    for (const c of this.ctx.state.list('gatewayClasses')) this.queue.add(CLASS_KEY + c.metadata.name)
  }

  private enqueueGateways(): void {
    for (const gw of this.ctx.state.list('gateways')) this.queue.add(keyOf(gw))
  }

  private reconcile(key: string): Promise<{requeueAfterMs?: number} | void> {
    return key.startsWith(CLASS_KEY) ? this.reconcileClass(key.slice(CLASS_KEY.length)) : this.reconcileGateway(key)
  }

  private async reconcileClass(name: string): Promise<void> {
    const gc = this.ctx.state.get('gatewayClasses', undefined, name)
    if (!gc || gc.spec?.controllerName !== WAYPOINT_CONTROLLER_NAME) return
    if (runningRevisions(this.ctx.rootDeployments()).size === 0) return
    const generation = gc.metadata.generation
    const conditions = setCondition((gc.status?.conditions as Condition[] | undefined) ?? [], {
      type: 'Accepted',
      status: 'True',
      reason: 'Accepted',
      message: 'Handled by Istio controller',
      ...(generation === undefined ? {} : {observedGeneration: generation}),
    })
    if (canonicalJson(conditions) === canonicalJson(gc.status?.conditions ?? [])) return
    await this.ctx.state.patch(
      {apiVersion: gc.apiVersion, kind: 'GatewayClass', name},
      {status: {conditions}},
      {subresource: 'status'},
    )
  }

  private async reconcileGateway(key: string): Promise<{requeueAfterMs?: number} | void> {
    const {namespace, name} = splitKey(key)
    const gw = this.ctx.state.get('gateways', namespace, name)
    if (!gw || isTerminating(gw) || !isWaypointGateway(gw)) return
    const ns = this.ctx.namespace(namespace)
    const revision = gatewayOwnerRevision(gw, ns, this.ctx.webhooks().tags)
    // Only the istiod of the owning revision (or tag) acts; if it does not run, nothing happens.
    if (!runningRevisions(this.ctx.rootDeployments()).has(revision)) return

    const settings = this.ctx.injectorSettings(revision)
    const objects = renderWaypoint(gw, revision, settings, this.ctx.options.clusterDomain)
    for (const [kind, desired] of [
      ['serviceAccounts', objects.serviceAccount],
      ['deployments', objects.deployment],
      ['services', objects.service],
    ] as const) {
      const existing = this.ctx.state.get(kind, namespace, name)
      if (existing && isSubset(desired, existing)) continue
      await this.ctx.state.patch(
        {apiVersion: desired.apiVersion, kind: desired.kind, namespace: namespace!, name},
        desired,
        {type: 'apply', fieldManager: GATEWAY_FIELD_MANAGER, force: true},
      )
    }

    const options = this.ctx.options.waypoint
    const deployment = this.ctx.state.get('deployments', namespace, name)
    const service = this.ctx.state.get('services', namespace, name)
    const available = (deployment?.status?.availableReplicas ?? 0) >= 1
    const clusterIP: string | undefined = service?.spec?.clusterIP
    let requeue: number | undefined
    let ready = false
    if (available && clusterIP && clusterIP !== 'None' && !options.failure && options.readyDelayMs !== 'never') {
      const since = this.availableSince.get(gw.metadata.uid!) ?? Date.now()
      this.availableSince.set(gw.metadata.uid!, since)
      const left = since + options.readyDelayMs - Date.now()
      if (left <= 0) ready = true
      else requeue = left
    } else if (!available) {
      this.availableSince.delete(gw.metadata.uid!)
    }
    const failure = options.failure
    const reason = failure?.reason ?? 'AddressNotUsable'
    const phase = ready
      ? {ready: true as const, clusterIP: clusterIP!}
      : {
          ready: false as const,
          reason,
          message: failure?.message ?? failureMessage(reason, gw, this.ctx.options.clusterDomain),
        }
    await this.writeStatus(gw, waypointStatus(gw, phase, this.ctx.options.clusterDomain))
    return requeue === undefined ? undefined : {requeueAfterMs: requeue}
  }

  private async writeStatus(gw: KubeObject, next: ReturnType<typeof waypointStatus>): Promise<void> {
    const old = gw.status ?? {}
    let conditions = (old.conditions as Condition[] | undefined) ?? []
    // Conditions other than istiod's (none expected) are kept; istiod's are set in its order.
    const ours = new Set(next.conditions.map((c) => c.type))
    conditions = conditions.filter((c) => ours.has(c.type))
    for (const c of next.conditions) conditions = setCondition(conditions, c)
    conditions = next.conditions.map((c) => conditions.find((x) => x.type === c.type)!)
    const listeners = next.listeners.map((l: any) => {
      const previous = ((old.listeners as any[] | undefined) ?? []).find((p) => p.name === l.name)
      let lc: Condition[] = previous?.conditions ?? []
      for (const c of l.conditions as Condition[]) lc = setCondition(lc, c)
      return {...l, conditions: (l.conditions as Condition[]).map((c) => lc.find((x) => x.type === c.type)!)}
    })
    const status = {conditions, listeners, addresses: next.addresses ?? null}
    const same =
      canonicalJson({
        conditions: old.conditions ?? [],
        listeners: old.listeners ?? [],
        addresses: old.addresses ?? null,
      }) === canonicalJson(status)
    if (same) return
    await this.ctx.state.patch(
      {apiVersion: gw.apiVersion, kind: 'Gateway', namespace: gw.metadata.namespace!, name: gw.metadata.name},
      {metadata: {resourceVersion: gw.metadata.resourceVersion}, status},
      {subresource: 'status'},
    )
  }
}
