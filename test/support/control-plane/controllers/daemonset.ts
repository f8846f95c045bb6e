// The DaemonSet controller (pkg/controller/daemon, reduced): one pod per Node the template admits
// (nodeSelector, required node affinity, taints vs tolerations — the same rules preflight uses),
// pods pinned to their node, the DaemonSet tolerations added; RollingUpdate replaces outdated pods
// within maxUnavailable, OnDelete waits for someone to delete them. Status: desiredNumberScheduled,
// currentNumberScheduled, numberMisscheduled, numberReady, numberAvailable, numberUnavailable,
// updatedNumberScheduled, observedGeneration.
import type {KubeObject} from '../../../../src/planner/model.js'
import {nodeExclusion} from '../../../../src/preflight/daemonset.js'
import {
  isControlledBy,
  isTerminating,
  keyOf,
  omitZero,
  sameCounters,
  scaledValue,
  splitKey,
  templateHash,
} from '../meta.js'
import {WorkQueue} from '../queue.js'
import type {Controller, ControllerContext} from './context.js'
import type {PodFactory} from './pods.js'
import {byCodePoint} from '../../../../src/planner/order.js'

const REVISION_LABEL = 'controller-revision-hash'

// util.AddOrUpdateDaemonPodTolerations
const DAEMON_TOLERATIONS = [
  {key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute'},
  {key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute'},
  {key: 'node.kubernetes.io/disk-pressure', operator: 'Exists', effect: 'NoSchedule'},
  {key: 'node.kubernetes.io/memory-pressure', operator: 'Exists', effect: 'NoSchedule'},
  {key: 'node.kubernetes.io/pid-pressure', operator: 'Exists', effect: 'NoSchedule'},
  {key: 'node.kubernetes.io/unschedulable', operator: 'Exists', effect: 'NoSchedule'},
]

export class DaemonSetController implements Controller {
  readonly queue: WorkQueue

  constructor(
    private readonly ctx: ControllerContext,
    private readonly pods: PodFactory,
  ) {
    this.queue = new WorkQueue('daemonset', (key) => this.reconcile(key), {
      workers: ctx.options.workers,
      onError: (q, k, e) => ctx.report(`${q} ${k}`, e),
    })
    ctx.state.on('daemonSets', (ds, old) => this.queue.add(keyOf(ds ?? old!)))
    ctx.state.on('pods', (pod, old) => {
      for (const p of [pod, old]) {
        const owner = p?.metadata.ownerReferences?.find((o) => o.controller && o.kind === 'DaemonSet')
        if (owner) this.queue.add(`${p!.metadata.namespace}/${owner.name}`)
      }
    })
    ctx.state.on('nodes', () => this.enqueueAll())
  }

  enqueueAll(): void {
    for (const ds of this.ctx.state.list('daemonSets')) this.queue.add(keyOf(ds))
  }

  private podFor(ds: KubeObject, node: string, hash: string): KubeObject {
    const template = ds.spec?.template ?? {}
    const tolerations = [...(template.spec?.tolerations ?? [])]
    for (const t of DAEMON_TOLERATIONS)
      if (!tolerations.some((x: {key?: string; effect?: string}) => x.key === t.key && x.effect === t.effect))
        tolerations.push(t)
    // The real controller pins the pod with node affinity and lets the scheduler bind it; the
    // binding is done here directly (nodeName), the affinity kept for what readers see.
    const affinity = {
      ...(template.spec?.affinity ?? {}),
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [{matchFields: [{key: 'metadata.name', operator: 'In', values: [node]}]}],
        },
      },
    }
    return this.pods.fromTemplate(ds, template, {
      generateName: `${ds.metadata.name}-`,
      labels: {[REVISION_LABEL]: hash, 'pod-template-generation': String(ds.metadata.generation ?? 1)},
      spec: {nodeName: node, tolerations, affinity},
    })
  }

  private async reconcile(key: string): Promise<{requeueAfterMs?: number} | void> {
    const {namespace, name} = splitKey(key)
    const ds = this.ctx.state.get('daemonSets', namespace, name)
    if (!ds || isTerminating(ds)) return
    const hash = templateHash(ds.spec?.template, ds.status?.collisionCount)
    const nodes = this.ctx.state.list('nodes').sort((a, b) => byCodePoint(a.metadata.name, b.metadata.name))
    const eligible = new Set(
      nodes.filter((n) => nodeExclusion(ds.spec?.template, n) === undefined).map((n) => n.metadata.name),
    )
    const owned = this.ctx.state.ownedBy('pods', ds.metadata.uid).filter((p) => isControlledBy(p, ds))
    const live = owned.filter((p) => !isTerminating(p))
    const byNode = new Map<string, KubeObject[]>()
    for (const p of live) {
      const n: string = p.spec?.nodeName ?? ''
      byNode.set(n, [...(byNode.get(n) ?? []), p])
    }

    // One pod on every eligible node; none elsewhere; failed pods replaced.
    for (const node of eligible) {
      const onNode = (byNode.get(node) ?? []).filter(
        (p) => p.status?.phase !== 'Failed' && p.status?.phase !== 'Succeeded',
      )
      for (const p of (byNode.get(node) ?? []).filter((q) => !onNode.includes(q))) await this.ctx.state.delete(p)
      if (onNode.length === 0 && !owned.some((p) => p.spec?.nodeName === node && isTerminating(p)))
        await this.pods.create(this.podFor(ds, node, hash))
      for (const extra of onNode.slice(1)) await this.ctx.state.delete(extra)
    }
    for (const [node, list] of byNode) if (!eligible.has(node)) for (const p of list) await this.ctx.state.delete(p)

    // Rolling update within maxUnavailable (maxSurge 0).
    if ((ds.spec?.updateStrategy?.type ?? 'RollingUpdate') === 'RollingUpdate') {
      const current = this.ctx.state
        .ownedBy('pods', ds.metadata.uid)
        .filter((p) => isControlledBy(p, ds) && eligible.has(p.spec?.nodeName))
      const maxUnavailable = Math.max(
        1,
        scaledValue(ds.spec?.updateStrategy?.rollingUpdate?.maxUnavailable, eligible.size, false, 1),
      )
      const unavailable = [...eligible].filter(
        (n) => !current.some((p) => p.spec?.nodeName === n && !isTerminating(p) && this.ctx.podReady(p)),
      ).length
      let budget = maxUnavailable - unavailable
      // Outdated pods that are not ready anyway go first; they cost no availability.
      const outdated = current.filter((p) => !isTerminating(p) && p.metadata.labels?.[REVISION_LABEL] !== hash)
      for (const p of outdated.filter((q) => !this.ctx.podReady(q))) await this.ctx.state.delete(p)
      for (const p of outdated.filter((q) => this.ctx.podReady(q))) {
        if (budget <= 0) break
        await this.ctx.state.delete(p)
        budget--
      }
    }

    await this.writeStatus(ds, eligible, hash)
  }

  private async writeStatus(ds: KubeObject, eligible: Set<string>, hash: string): Promise<void> {
    const pods = this.ctx.state
      .ownedBy('pods', ds.metadata.uid)
      .filter((p) => isControlledBy(p, ds) && !isTerminating(p))
    const minReady: number = ds.spec?.minReadySeconds ?? 0
    const scheduledOn = (pred: (p: KubeObject) => boolean) =>
      [...eligible].filter((n) => pods.some((p) => p.spec?.nodeName === n && pred(p))).length
    const desired = eligible.size
    const available = scheduledOn((p) => this.ctx.podAvailable(p, minReady).available)
    const status = {
      observedGeneration: ds.metadata.generation ?? 1,
      desiredNumberScheduled: desired,
      currentNumberScheduled: scheduledOn(() => true),
      numberMisscheduled: new Set(pods.filter((p) => !eligible.has(p.spec?.nodeName)).map((p) => p.spec?.nodeName))
        .size,
      numberReady: scheduledOn((p) => this.ctx.podReady(p)),
      numberAvailable: available,
      numberUnavailable: Math.max(0, desired - available),
      updatedNumberScheduled: scheduledOn((p) => p.metadata.labels?.[REVISION_LABEL] === hash),
    }
    if (sameCounters(ds.status, status)) return
    await this.ctx.state.patch(
      {apiVersion: 'apps/v1', kind: 'DaemonSet', namespace: ds.metadata.namespace!, name: ds.metadata.name},
      {status: omitZero(status, ['numberAvailable', 'numberUnavailable', 'updatedNumberScheduled'])},
      {subresource: 'status'},
    )
  }
}
