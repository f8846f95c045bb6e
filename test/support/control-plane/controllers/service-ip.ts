// Services need a clusterIP (waypoint addresses are read from it). A real API server allocates one
// on create, and so does the test API server; when a server did not, this assigns one from a range
// of its own (spec.clusterIP may be set once, from empty).
import {keyOf, splitKey} from '../meta.js'
import {WorkQueue} from '../queue.js'
import type {Controller, ControllerContext} from './context.js'

export class ServiceIpAllocator implements Controller {
  readonly queue: WorkQueue
  private next = 1

  constructor(private readonly ctx: ControllerContext) {
    this.queue = new WorkQueue('service-ip', (key) => this.reconcile(key), {
      workers: 1,
      onError: (q, k, e) => ctx.report(`${q} ${k}`, e),
    })
    ctx.state.on('services', (svc) => {
      if (svc && needsIp(svc.spec)) this.queue.add(keyOf(svc))
    })
  }

  enqueueAll(): void {
    for (const s of this.ctx.state.list('services')) if (needsIp(s.spec)) this.queue.add(keyOf(s))
  }

  private async reconcile(key: string): Promise<void> {
    const {namespace, name} = splitKey(key)
    const svc = this.ctx.state.get('services', namespace, name)
    if (!svc || !needsIp(svc.spec)) return
    const used = new Set(this.ctx.state.list('services').map((s) => s.spec?.clusterIP as string | undefined))
    let ip: string
    do {
      ip = `10.96.${200 + Math.floor(this.next / 254)}.${(this.next % 254) + 1}`
      this.next++
    } while (used.has(ip))
    await this.ctx.state.patch(
      {apiVersion: 'v1', kind: 'Service', namespace: namespace!, name},
      {spec: {clusterIP: ip, clusterIPs: [ip]}},
    )
  }
}

function needsIp(spec: any): boolean {
  return spec !== undefined && spec.type !== 'ExternalName' && (spec.clusterIP === undefined || spec.clusterIP === '')
}
