// The StatefulSet controller (pkg/controller/statefulset, reduced): pods `<name>-<ordinal>` with the
// controller-revision-hash label `<name>-<hash>`; OrderedReady creates them one at a time in ordinal
// order (Parallel all at once); RollingUpdate replaces pods from the highest ordinal down to
// `partition`, one at a time once all are ready; OnDelete replaces nothing — a pod deleted by
// someone comes back at the update revision. Status: replicas, readyReplicas, availableReplicas,
// currentReplicas, updatedReplicas, currentRevision, updateRevision, observedGeneration.
//
// Revisions are kept in memory (the real controller stores ControllerRevisions, which the test API
// server does not serve); after a restart of the control plane, pods below the partition are
// re-created from the current template.
import type {KubeObject} from '../../../../src/planner/model.js'
import {isControlledBy, isTerminating, keyOf, omitZero, sameCounters, splitKey, templateHash} from '../meta.js'
import {WorkQueue} from '../queue.js'
import type {Controller, ControllerContext} from './context.js'
import type {PodFactory} from './pods.js'

export const REVISION_LABEL = 'controller-revision-hash'

export class StatefulSetController implements Controller {
  readonly queue: WorkQueue
  /** StatefulSet uid → revision name → pod template. */
  private readonly history = new Map<string, Map<string, unknown>>()

  constructor(
    private readonly ctx: ControllerContext,
    private readonly pods: PodFactory,
  ) {
    this.queue = new WorkQueue('statefulset', (key) => this.reconcile(key), {
      workers: ctx.options.workers,
      onError: (q, k, e) => ctx.report(`${q} ${k}`, e),
    })
    ctx.state.on('statefulSets', (s, old) => {
      this.queue.add(keyOf(s ?? old!))
      if (!s && old?.metadata.uid) this.history.delete(old.metadata.uid)
    })
    ctx.state.on('pods', (pod, old) => {
      for (const p of [pod, old]) {
        const owner = p?.metadata.ownerReferences?.find((o) => o.controller && o.kind === 'StatefulSet')
        if (owner) this.queue.add(`${p!.metadata.namespace}/${owner.name}`)
      }
    })
    ctx.state.on('nodes', () => this.enqueueAll())
  }

  enqueueAll(): void {
    for (const s of this.ctx.state.list('statefulSets')) this.queue.add(keyOf(s))
  }

  private podFor(sts: KubeObject, ordinal: number, revision: string, template: any): KubeObject {
    const name = `${sts.metadata.name}-${ordinal}`
    return this.pods.fromTemplate(sts, template, {
      name,
      labels: {
        [REVISION_LABEL]: revision,
        'statefulset.kubernetes.io/pod-name': name,
        'apps.kubernetes.io/pod-index': String(ordinal),
      },
      spec: {hostname: name, ...(sts.spec?.serviceName ? {subdomain: sts.spec.serviceName} : {})},
    })
  }

  private async reconcile(key: string): Promise<{requeueAfterMs?: number} | void> {
    const {namespace, name} = splitKey(key)
    const sts = this.ctx.state.get('statefulSets', namespace, name)
    if (!sts || isTerminating(sts)) return
    const uid = sts.metadata.uid!
    const replicas: number = sts.spec?.replicas ?? 1
    const rolling = (sts.spec?.updateStrategy?.type ?? 'RollingUpdate') === 'RollingUpdate'
    const partition: number = rolling ? (sts.spec?.updateStrategy?.rollingUpdate?.partition ?? 0) : 0
    const ordered = (sts.spec?.podManagementPolicy ?? 'OrderedReady') === 'OrderedReady'

    const updateRevision = `${name}-${templateHash(sts.spec?.template, sts.status?.collisionCount)}`
    let revisions = this.history.get(uid)
    if (!revisions) this.history.set(uid, (revisions = new Map()))
    revisions.set(updateRevision, structuredClone(sts.spec?.template))
    const currentRevision: string = sts.status?.currentRevision || updateRevision

    const owned = this.ctx.state.ownedBy('pods', uid).filter((p) => isControlledBy(p, sts))
    const ordinalOf = (p: KubeObject) => {
      const m = new RegExp(`^${escapeRegExp(name)}-(\\d+)$`).exec(p.metadata.name)
      return m ? Number(m[1]) : -1
    }
    const byOrdinal = new Map<number, KubeObject>()
    for (const p of owned) if (ordinalOf(p) >= 0) byOrdinal.set(ordinalOf(p), p)
    const healthy = (p: KubeObject | undefined) => p !== undefined && !isTerminating(p) && this.ctx.podReady(p)

    // Create missing pods (and replace failed ones), lowest ordinal first.
    let blocked = false
    for (let ord = 0; ord < replicas && !blocked; ord++) {
      const pod = byOrdinal.get(ord)
      if (pod && (pod.status?.phase === 'Failed' || pod.status?.phase === 'Succeeded') && !isTerminating(pod)) {
        await this.ctx.state.delete(pod)
        blocked = ordered
        continue
      }
      if (!pod) {
        // newVersionedStatefulSetPod: below the partition the current revision, else the update revision.
        const atCurrent = rolling && ord < partition
        const revision = atCurrent ? currentRevision : updateRevision
        const template = revisions.get(revision) ?? sts.spec?.template
        const created = await this.pods.create(this.podFor(sts, ord, revision, template))
        if (!created) return // no node yet; node events bring us back
        if (ordered) blocked = true
        continue
      }
      if (ordered && !healthy(pod)) blocked = true
    }

    // Scale down: highest ordinal first, one at a time when ordered.
    if (!blocked) {
      const condemned = [...byOrdinal.entries()].filter(([ord]) => ord >= replicas).sort((a, b) => b[0] - a[0])
      for (const [, pod] of condemned) {
        if (isTerminating(pod)) {
          if (ordered) blocked = true
          break
        }
        await this.ctx.state.delete(pod)
        if (ordered) {
          blocked = true
          break
        }
      }
    }

    // Rolling update: with every pod ready, replace the highest outdated ordinal ≥ partition.
    if (!blocked && rolling) {
      const all = [...Array(replicas).keys()].map((o) => byOrdinal.get(o))
      if (all.every(healthy)) {
        for (let ord = replicas - 1; ord >= partition; ord--) {
          const pod = byOrdinal.get(ord)!
          if (pod.metadata.labels?.[REVISION_LABEL] !== updateRevision) {
            await this.ctx.state.delete(pod)
            break
          }
        }
      }
    }

    await this.writeStatus(sts, currentRevision, updateRevision)
  }

  private async writeStatus(sts: KubeObject, currentRevision: string, updateRevision: string): Promise<void> {
    const replicasWanted: number = sts.spec?.replicas ?? 1
    const pods = this.ctx.state
      .ownedBy('pods', sts.metadata.uid)
      .filter((p) => isControlledBy(p, sts) && !isTerminating(p))
    const ready = pods.filter((p) => this.ctx.podReady(p))
    const minReady: number = sts.spec?.minReadySeconds ?? 0
    const at = (rev: string) => pods.filter((p) => p.metadata.labels?.[REVISION_LABEL] === rev).length
    const status = {
      observedGeneration: sts.metadata.generation ?? 1,
      replicas: pods.length,
      readyReplicas: ready.length,
      availableReplicas: pods.filter((p) => this.ctx.podAvailable(p, minReady).available).length,
      currentReplicas: at(currentRevision),
      updatedReplicas: at(updateRevision),
      currentRevision,
      updateRevision,
      collisionCount: sts.status?.collisionCount ?? 0,
    }
    // completeRollingUpdate: once every pod runs the update revision and is ready, it is current
    // (with OnDelete too, once someone has deleted every old pod).
    if (
      status.updatedReplicas === status.replicas &&
      status.readyReplicas === status.replicas &&
      status.replicas === replicasWanted
    ) {
      status.currentRevision = updateRevision
      status.currentReplicas = status.updatedReplicas
    }
    if (sameCounters(sts.status, status)) return
    await this.ctx.state.patch(
      {apiVersion: 'apps/v1', kind: 'StatefulSet', namespace: sts.metadata.namespace!, name: sts.metadata.name},
      {status: omitZero(status, ['readyReplicas', 'currentReplicas', 'updatedReplicas'])},
      {subresource: 'status'},
    )
  }
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}
