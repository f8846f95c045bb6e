// The "kubelet" of every Node: pods bound to a Ready node start after `podStartupMs` (Running, the
// Ready condition, podIP from the node's podCIDR, hostIP, container statuses); pods matching
// `neverReady` (or annotated test.mesh-migrate.io/never-ready) run without becoming ready; run-to-
// completion pods succeed after `jobRunMs` — unless a classic sidecar keeps them running (E10);
// terminating pods are removed (graceful deletion is confirmed with gracePeriodSeconds=0).
// An ambient pod on a node whose istio-cni agent is not ready does not start: the CNI plugin fails
// the sandbox (DOMAIN §2.2).
import type {KubeObject} from '../../../../src/planner/model.js'
import {selectorMatches} from '../../../../src/planner/namespace.js'
import {ambientEnrolled} from '../istio/ambient.js'
import {containerId, isTerminating, jsonEqual, keyOf, now, splitKey} from '../meta.js'
import {WorkQueue} from '../queue.js'
import type {Controller, ControllerContext} from './context.js'

/** Pod annotation that makes the fake kubelet keep the pod unready (a failing readiness probe). */
export const NEVER_READY_ANNOTATION = 'test.mesh-migrate.io/never-ready'

interface ContainerSpec {
  name: string
  image?: string
  restartPolicy?: string
}

export class Kubelet implements Controller {
  readonly queue: WorkQueue
  /** When the kubelet first saw each pod (uid), for the start-up delay. */
  private readonly seenAt = new Map<string, number>()
  /** IPs handed out whose status write may not be in the cache yet. */
  private readonly reservedIps = new Map<string, string>()

  constructor(private readonly ctx: ControllerContext) {
    this.queue = new WorkQueue('kubelet', (key) => this.reconcile(key), {
      workers: ctx.options.workers,
      onError: (q, k, e) => ctx.report(`${q} ${k}`, e),
    })
    const {state} = ctx
    state.on('pods', (pod, old) => {
      const p = pod ?? old!
      this.queue.add(keyOf(p))
      if (!pod && old?.metadata.uid) {
        this.seenAt.delete(old.metadata.uid)
        this.reservedIps.delete(old.metadata.uid)
      }
      // istio-cni agents coming up release the ambient pods waiting on their node.
      if (p.spec?.nodeName && ctx.isCniPod(p)) this.enqueueNode(p.spec.nodeName)
    })
    state.on('nodes', (node, old) => this.enqueueNode((node ?? old!).metadata.name))
    state.on('namespaces', (ns, old) => {
      for (const p of state.list('pods', (ns ?? old!).metadata.name))
        if (p.status?.phase === 'Pending') this.queue.add(keyOf(p))
    })
  }

  enqueueAll(): void {
    for (const p of this.ctx.state.list('pods')) this.queue.add(keyOf(p))
  }

  private enqueueNode(node: string): void {
    for (const p of this.ctx.state.list('pods')) if (p.spec?.nodeName === node) this.queue.add(keyOf(p))
  }

  private neverReady(pod: KubeObject): boolean {
    if (pod.metadata.annotations?.[NEVER_READY_ANNOTATION] === 'true') return true
    return this.ctx.options.neverReady.some(
      (m) =>
        (m.namespace === undefined || m.namespace === pod.metadata.namespace) &&
        (m.selector === undefined || selectorMatches(m.selector, pod.metadata.labels ?? {})),
    )
  }

  private async reconcile(key: string): Promise<{requeueAfterMs?: number} | void> {
    const {namespace, name} = splitKey(key)
    const pod = this.ctx.state.get('pods', namespace, name)
    if (!pod) return
    if (isTerminating(pod)) {
      // The API server waits for the kubelet to confirm the deletion of a pod that was bound.
      await this.ctx.state.delete(pod, {gracePeriodSeconds: 0})
      return
    }
    const phase = pod.status?.phase
    if (phase === 'Succeeded' || phase === 'Failed') return
    const nodeName: string | undefined = pod.spec?.nodeName
    if (!nodeName) return // not scheduled: nothing runs it
    const node = this.ctx.state.get('nodes', undefined, nodeName)
    if (!node || !this.ctx.nodeReady(node)) return

    const uid = pod.metadata.uid ?? key
    const started = phase === 'Running'
    if (!started) {
      if (!this.seenAt.has(uid)) this.seenAt.set(uid, Date.now())
      const wait = this.seenAt.get(uid)! + this.ctx.options.podStartupMs - Date.now()
      if (wait > 0) return {requeueAfterMs: wait}
      if (this.ctx.cniInstalled() && !this.ctx.cniAgentReady(nodeName)) {
        const enrolled = ambientEnrolled(
          pod,
          this.ctx.namespace(pod.metadata.namespace),
          this.ctx.options.cniExcludeNamespaces,
        )
        if (enrolled.enrolled) return // FailedCreatePodSandBox: retried when the agent is ready
      }
    }

    const hostIP = this.hostIP(node)
    const podIP = pod.spec?.hostNetwork === true ? hostIP : (pod.status?.podIP ?? this.allocateIp(pod, node))
    const startTime: string = pod.status?.startTime ?? now()
    const finished = this.runToCompletion(pod) ? this.finishState(pod, startTime) : {done: false as const}
    if (finished.done === 'later')
      return this.write(
        pod,
        this.runningStatus(pod, {hostIP, podIP, startTime, ready: !this.neverReady(pod), appsDone: false}),
        finished.inMs,
      )
    if (finished.done === true && !finished.sidecarKeepsRunning)
      return this.write(pod, this.succeededStatus(pod, {hostIP, podIP, startTime}))
    const appsDone = finished.done === true
    return this.write(
      pod,
      this.runningStatus(pod, {hostIP, podIP, startTime, ready: !appsDone && !this.neverReady(pod), appsDone}),
    )
  }

  private async write(
    pod: KubeObject,
    status: any,
    requeueAfterMs?: number,
  ): Promise<{requeueAfterMs?: number} | void> {
    if (!sameStatus(pod.status, status)) {
      await this.ctx.state.patch(
        {apiVersion: 'v1', kind: 'Pod', namespace: pod.metadata.namespace!, name: pod.metadata.name},
        {metadata: {resourceVersion: pod.metadata.resourceVersion}, status},
        {subresource: 'status'},
      )
    }
    return requeueAfterMs === undefined ? undefined : {requeueAfterMs}
  }

  private runToCompletion(pod: KubeObject): boolean {
    const policy = pod.spec?.restartPolicy ?? 'Always'
    return policy !== 'Always' && this.ctx.options.jobRunMs !== 'never'
  }

  private finishState(
    pod: KubeObject,
    startTime: string,
  ): {done: false} | {done: 'later'; inMs: number} | {done: true; sidecarKeepsRunning: boolean} {
    const runMs = this.ctx.options.jobRunMs
    if (runMs === 'never') return {done: false}
    const left = Date.parse(startTime) + runMs - Date.now()
    // startTime has second precision: never finish before the pod was seen running for runMs.
    if (left > 0 || pod.status?.phase !== 'Running') return {done: 'later', inMs: Math.max(left, runMs, 1)}
    const classicSidecar = ((pod.spec?.containers ?? []) as ContainerSpec[]).some((c) => c.name === 'istio-proxy')
    return {done: true, sidecarKeepsRunning: classicSidecar}
  }

  private hostIP(node: KubeObject): string {
    const addresses: {type: string; address: string}[] = node.status?.addresses ?? []
    return addresses.find((a) => a.type === 'InternalIP')?.address ?? '172.18.0.2'
  }

  /** The next free address of the node's podCIDR (10.244.<n>.0/24 when it has none). */
  private allocateIp(pod: KubeObject, node: KubeObject): string {
    const uid = pod.metadata.uid ?? keyOf(pod)
    const reserved = this.reservedIps.get(uid)
    if (reserved) return reserved
    const nodes = this.ctx.state
      .list('nodes')
      .map((n) => n.metadata.name)
      .sort()
    const cidr: string = node.spec?.podCIDR ?? `10.244.${nodes.indexOf(node.metadata.name) + 1}.0/24`
    const base = cidr.split('/')[0]!.split('.').map(Number)
    const used = new Set<string>([
      ...this.ctx.state
        .list('pods')
        .filter((p) => p.spec?.nodeName === node.metadata.name && p.spec?.hostNetwork !== true)
        .map((p) => p.status?.podIP as string),
      ...this.reservedIps.values(),
    ])
    for (let i = 2; i < 255; i++) {
      const ip = `${base[0]}.${base[1]}.${base[2]}.${i}`
      if (!used.has(ip)) {
        this.reservedIps.set(uid, ip)
        return ip
      }
    }
    throw new Error(`node ${node.metadata.name} has no free pod IP in ${cidr}`)
  }

  // -------------------------------------------------------------------------------------------
  // Statuses

  private containerStatus(
    c: ContainerSpec,
    prev: any[],
    state: 'running' | 'completed',
    ready: boolean,
    startedAt: string,
  ): any {
    const old = prev.find((s) => s.name === c.name)
    const stateBody =
      state === 'running'
        ? {running: {startedAt: old?.state?.running?.startedAt ?? startedAt}}
        : {
            terminated: {
              exitCode: 0,
              reason: 'Completed',
              startedAt: old?.state?.running?.startedAt ?? old?.state?.terminated?.startedAt ?? startedAt,
              finishedAt: old?.state?.terminated?.finishedAt ?? now(),
              containerID: old?.containerID,
            },
          }
    const id = old?.containerID ?? containerId()
    if (stateBody.terminated) stateBody.terminated.containerID = id
    return {
      name: c.name,
      image: c.image,
      imageID: `${c.image ?? ''}@sha256:${'0'.repeat(64)}`,
      containerID: id,
      ready,
      started: state === 'running',
      restartCount: 0,
      state: stateBody,
      lastState: {},
    }
  }

  private conditions(prev: any[], ready: boolean, initialized: boolean): any[] {
    const at = now()
    const cond = (type: string, status: boolean) => {
      const s = status ? 'True' : 'False'
      const old = prev.find((c) => c.type === type)
      return {
        type,
        status: s,
        lastProbeTime: null,
        lastTransitionTime: old && old.status === s ? old.lastTransitionTime : at,
      }
    }
    return [
      cond('PodReadyToStartContainers', true),
      cond('Initialized', initialized),
      cond('Ready', ready),
      cond('ContainersReady', ready),
      cond('PodScheduled', true),
    ]
  }

  private runningStatus(
    pod: KubeObject,
    s: {hostIP: string; podIP: string; startTime: string; ready: boolean; appsDone: boolean},
  ): any {
    const prev = pod.status ?? {}
    const at = now()
    const init: ContainerSpec[] = pod.spec?.initContainers ?? []
    const containers: ContainerSpec[] = pod.spec?.containers ?? []
    const prevInit: any[] = prev.initContainerStatuses ?? []
    const prevContainers: any[] = prev.containerStatuses ?? []
    return {
      ...keep(prev, ['qosClass']),
      phase: 'Running',
      conditions: this.conditions(prev.conditions ?? [], s.ready, true),
      hostIP: s.hostIP,
      hostIPs: [{ip: s.hostIP}],
      podIP: s.podIP,
      podIPs: [{ip: s.podIP}],
      startTime: s.startTime,
      ...(init.length > 0
        ? {
            initContainerStatuses: init.map((c) =>
              c.restartPolicy === 'Always'
                ? this.containerStatus(c, prevInit, 'running', s.ready || s.appsDone, at)
                : this.containerStatus(c, prevInit, 'completed', true, at),
            ),
          }
        : {}),
      containerStatuses: containers.map((c) => {
        const done = s.appsDone && c.name !== 'istio-proxy'
        return this.containerStatus(
          c,
          prevContainers,
          done ? 'completed' : 'running',
          done ? false : s.ready || c.name === 'istio-proxy',
          at,
        )
      }),
    }
  }

  private succeededStatus(pod: KubeObject, s: {hostIP: string; podIP: string; startTime: string}): any {
    const prev = pod.status ?? {}
    const at = now()
    const all = (list: ContainerSpec[], prevList: any[]) =>
      list.map((c) => this.containerStatus(c, prevList, 'completed', false, at))
    const init: ContainerSpec[] = pod.spec?.initContainers ?? []
    return {
      ...keep(prev, ['qosClass']),
      phase: 'Succeeded',
      conditions: this.conditions(prev.conditions ?? [], false, true).map((c) =>
        c.type === 'Ready' || c.type === 'ContainersReady' ? {...c, reason: 'PodCompleted'} : c,
      ),
      hostIP: s.hostIP,
      hostIPs: [{ip: s.hostIP}],
      podIP: s.podIP,
      podIPs: [{ip: s.podIP}],
      startTime: s.startTime,
      ...(init.length > 0 ? {initContainerStatuses: all(init, prev.initContainerStatuses ?? [])} : {}),
      containerStatuses: all(pod.spec?.containers ?? [], prev.containerStatuses ?? []),
    }
  }
}

function keep(obj: Record<string, unknown>, keys: string[]): Record<string, unknown> {
  return Object.fromEntries(keys.filter((k) => obj[k] !== undefined).map((k) => [k, obj[k]]))
}

/** Status equality that ignores the times a recomputation would move. */
function sameStatus(a: any, b: any): boolean {
  const strip = (s: any) =>
    JSON.parse(
      JSON.stringify(s ?? {}, (k, v) =>
        k === 'lastTransitionTime' || k === 'startedAt' || k === 'finishedAt' || k === 'lastProbeTime' ? undefined : v,
      ),
    )
  return jsonEqual(strip(a), strip(b))
}
