// The Deployment controller (pkg/controller/deployment, reduced): one ReplicaSet per pod template
// (`<deployment>-<pod-template-hash>`, revision annotations), rolling updates within maxSurge /
// maxUnavailable (Recreate: old pods gone first), old ReplicaSets pruned to revisionHistoryLimit,
// and the status `kubectl rollout status` reads: observedGeneration, replicas, updatedReplicas,
// readyReplicas, availableReplicas, unavailableReplicas, conditions Available and Progressing.
import type {KubeObject} from '../../../../src/planner/model.js'
import {
  type Condition,
  canonicalJson,
  findCondition,
  isControlledBy,
  isTerminating,
  keyOf,
  omitZero,
  ownerReferenceTo,
  sameCounters,
  scaledValue,
  setCondition,
  splitKey,
  templateHash,
} from '../meta.js'
import {isConflict} from '../api.js'
import {WorkQueue} from '../queue.js'
import type {Controller, ControllerContext} from './context.js'

const HASH_LABEL = 'pod-template-hash'
const REVISION = 'deployment.kubernetes.io/revision'
const DESIRED = 'deployment.kubernetes.io/desired-replicas'
const MAX = 'deployment.kubernetes.io/max-replicas'

function revisionOf(rs: KubeObject): number {
  return Number(rs.metadata.annotations?.[REVISION] ?? 0) || 0
}

function withoutHash(template: any): unknown {
  const copy = structuredClone(template ?? {})
  if (copy.metadata?.labels) delete copy.metadata.labels[HASH_LABEL]
  return copy
}

/** deploymentutil.EqualIgnoreHash */
function sameTemplate(a: unknown, b: unknown): boolean {
  return canonicalJson(withoutHash(a)) === canonicalJson(withoutHash(b))
}

export class DeploymentController implements Controller {
  readonly queue: WorkQueue

  constructor(private readonly ctx: ControllerContext) {
    this.queue = new WorkQueue('deployment', (key) => this.reconcile(key), {
      workers: ctx.options.workers,
      onError: (q, k, e) => ctx.report(`${q} ${k}`, e),
    })
    ctx.state.on('deployments', (d, old) => this.queue.add(keyOf(d ?? old!)))
    ctx.state.on('replicaSets', (rs, old) => {
      for (const r of [rs, old]) {
        const owner = r?.metadata.ownerReferences?.find((o) => o.controller && o.kind === 'Deployment')
        if (owner) this.queue.add(`${r!.metadata.namespace}/${owner.name}`)
      }
    })
  }

  enqueueAll(): void {
    for (const d of this.ctx.state.list('deployments')) this.queue.add(keyOf(d))
  }

  private async scale(rs: KubeObject, replicas: number, d: KubeObject, maxSurge: number): Promise<void> {
    const want = d.spec?.replicas ?? 1
    const annotations = {[DESIRED]: String(want), [MAX]: String(want + maxSurge)}
    if (
      (rs.spec?.replicas ?? 1) === replicas &&
      rs.metadata.annotations?.[DESIRED] === annotations[DESIRED] &&
      rs.metadata.annotations?.[MAX] === annotations[MAX]
    )
      return
    await this.ctx.state.patch(
      {apiVersion: 'apps/v1', kind: 'ReplicaSet', namespace: rs.metadata.namespace!, name: rs.metadata.name},
      {metadata: {annotations}, spec: {replicas}},
    )
  }

  private async reconcile(key: string): Promise<void> {
    const {namespace, name} = splitKey(key)
    const d = this.ctx.state.get('deployments', namespace, name)
    if (!d || isTerminating(d)) return
    const ns = namespace!
    const replicas: number = d.spec?.replicas ?? 1
    const rolling = (d.spec?.strategy?.type ?? 'RollingUpdate') === 'RollingUpdate'
    const maxSurge = rolling ? scaledValue(d.spec?.strategy?.rollingUpdate?.maxSurge, replicas, true, '25%') : 0
    let maxUnavailable = rolling
      ? scaledValue(d.spec?.strategy?.rollingUpdate?.maxUnavailable, replicas, false, '25%')
      : 0
    if (rolling && maxSurge === 0 && maxUnavailable === 0) maxUnavailable = 1
    if (maxUnavailable > replicas) maxUnavailable = replicas
    const paused = d.spec?.paused === true

    let all = this.ctx.state
      .ownedBy('replicaSets', d.metadata.uid)
      .filter((rs) => isControlledBy(rs, d) && !isTerminating(rs))
    let newRS = all.find((rs) => sameTemplate(rs.spec?.template, d.spec?.template))
    let olds = all.filter((rs) => rs !== newRS)
    const maxOldRevision = Math.max(0, ...olds.map(revisionOf))
    let conditions: Condition[] = [...((d.status?.conditions as Condition[] | undefined) ?? [])]
    const progressing = (status: string, reason: string, message: string) => {
      conditions = setCondition(conditions, {type: 'Progressing', status, reason, message}, {updateTime: true})
    }

    if (!newRS && !paused) {
      const collisionCount: number | undefined = d.status?.collisionCount
      const hash = templateHash(d.spec?.template, collisionCount)
      const template = structuredClone(d.spec?.template ?? {})
      template.metadata ??= {}
      template.metadata.labels = {...(template.metadata.labels ?? {}), [HASH_LABEL]: hash}
      const surgeRoom = Math.max(0, replicas + maxSurge - olds.reduce((n, rs) => n + (rs.spec?.replicas ?? 0), 0))
      const initial = !rolling
        ? olds.some((rs) => (rs.spec?.replicas ?? 0) > 0)
          ? 0
          : replicas
        : Math.min(replicas, surgeRoom)
      const rsObject: KubeObject = {
        apiVersion: 'apps/v1',
        kind: 'ReplicaSet',
        metadata: {
          name: `${d.metadata.name}-${hash}`,
          namespace: ns,
          labels: template.metadata.labels,
          annotations: {
            [REVISION]: String(maxOldRevision + 1),
            [DESIRED]: String(replicas),
            [MAX]: String(replicas + maxSurge),
          },
          ownerReferences: [ownerReferenceTo(d)],
        },
        spec: {
          replicas: initial,
          ...(d.spec?.minReadySeconds ? {minReadySeconds: d.spec.minReadySeconds} : {}),
          selector: {
            ...structuredClone(d.spec?.selector ?? {}),
            matchLabels: {...(d.spec?.selector?.matchLabels ?? {}), [HASH_LABEL]: hash},
          },
          template,
        },
      }
      try {
        newRS = await this.ctx.state.create(rsObject)
      } catch (error) {
        if (!isConflict(error)) throw error
        // Another template hashes to the same name (or the cache is behind): count a collision.
        const existing = this.ctx.state.get('replicaSets', ns, rsObject.metadata.name)
        if (existing && isControlledBy(existing, d) && sameTemplate(existing.spec?.template, d.spec?.template)) return
        await this.ctx.state.patch(
          {apiVersion: 'apps/v1', kind: 'Deployment', namespace: ns, name},
          {status: {collisionCount: (collisionCount ?? 0) + 1}},
          {subresource: 'status'},
        )
        return
      }
      progressing('True', 'NewReplicaSetCreated', `Created new replica set "${newRS.metadata.name}"`)
      all = [...olds, newRS]
    } else if (newRS && revisionOf(newRS) <= maxOldRevision) {
      // Rolling back to an older template: its ReplicaSet becomes the newest revision.
      newRS = await this.ctx.state.patch(
        {apiVersion: 'apps/v1', kind: 'ReplicaSet', namespace: ns, name: newRS.metadata.name},
        {metadata: {annotations: {[REVISION]: String(maxOldRevision + 1)}}},
      )
      all = [...olds, newRS]
    } else if (newRS && !findCondition(d, 'Progressing')) {
      progressing('True', 'FoundNewReplicaSet', `Found new replica set "${newRS.metadata.name}"`)
    }

    if (!paused && newRS) {
      const sum = (list: KubeObject[], f: (rs: KubeObject) => number) => list.reduce((n, rs) => n + f(rs), 0)
      const specReplicas = (rs: KubeObject) => rs.spec?.replicas ?? 0
      const availableOf = (rs: KubeObject) => rs.status?.availableReplicas ?? 0
      if (rolling) {
        // Scale up the new ReplicaSet within maxSurge (NewRSNewReplicas).
        const current = sum(all, specReplicas)
        const room = replicas + maxSurge - current
        const target =
          room > 0 ? Math.min(specReplicas(newRS) + room, replicas) : Math.min(specReplicas(newRS), replicas)
        const scaledDown = specReplicas(newRS) > replicas ? replicas : target
        if (scaledDown !== specReplicas(newRS)) {
          await this.scale(newRS, scaledDown, d, maxSurge)
          newRS = this.ctx.state.get('replicaSets', ns, newRS.metadata.name) ?? newRS
        }
        // Scale down old ReplicaSets within maxUnavailable (reconcileOldReplicaSets).
        olds = olds
          .map((rs) => this.ctx.state.get('replicaSets', ns, rs.metadata.name) ?? rs)
          .sort((a, b) => revisionOf(a) - revisionOf(b))
        const allNow = [...olds, newRS]
        const minAvailable = replicas - maxUnavailable
        const newUnavailable = specReplicas(newRS) - availableOf(newRS)
        let budget = sum(allNow, specReplicas) - minAvailable - newUnavailable
        // First the old pods that are not available anyway (cleanupUnhealthyReplicas)...
        for (const rs of olds) {
          if (budget <= 0) break
          const unhealthy = specReplicas(rs) - availableOf(rs)
          if (unhealthy <= 0) continue
          const down = Math.min(unhealthy, budget)
          await this.scale(rs, specReplicas(rs) - down, d, maxSurge)
          budget -= down
        }
        // ...then available ones, as long as enough stay available.
        const refreshed = olds.map((rs) => this.ctx.state.get('replicaSets', ns, rs.metadata.name) ?? rs)
        let removable = sum([...refreshed, newRS], availableOf) - minAvailable
        for (const rs of refreshed) {
          if (removable <= 0) break
          if (specReplicas(rs) === 0) continue
          const down = Math.min(specReplicas(rs), removable)
          await this.scale(rs, specReplicas(rs) - down, d, maxSurge)
          removable -= down
        }
      } else {
        for (const rs of olds) if (specReplicas(rs) > 0) await this.scale(rs, 0, d, 0)
        // Recreate waits until the old pods are gone, terminating ones included.
        const oldPodsLeft = olds.some((rs) =>
          this.ctx.state
            .ownedBy('pods', rs.metadata.uid)
            .some((p) => p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed'),
        )
        if (!oldPodsLeft) await this.scale(newRS, replicas, d, 0)
      }
      await this.pruneHistory(d, ns, newRS)
      if ((d.metadata.annotations?.[REVISION] ?? '') !== String(revisionOf(newRS))) {
        await this.ctx.state.patch(
          {apiVersion: 'apps/v1', kind: 'Deployment', namespace: ns, name},
          {metadata: {annotations: {[REVISION]: String(revisionOf(newRS))}}},
        )
      }
    }

    await this.writeStatus(d, ns, name, newRS, maxUnavailable, paused, conditions)
  }

  /** Deletes fully scaled-down old ReplicaSets beyond revisionHistoryLimit, oldest first. */
  private async pruneHistory(d: KubeObject, ns: string, newRS: KubeObject): Promise<void> {
    const limit: number = d.spec?.revisionHistoryLimit ?? 10
    const olds = this.ctx.state
      .ownedBy('replicaSets', d.metadata.uid)
      .filter((rs) => rs.metadata.name !== newRS.metadata.name && isControlledBy(rs, d) && !isTerminating(rs))
      .filter((rs) => (rs.spec?.replicas ?? 0) === 0 && (rs.status?.replicas ?? 0) === 0)
      .sort((a, b) => revisionOf(a) - revisionOf(b))
    const excess = olds.length - limit
    for (const rs of olds.slice(0, Math.max(0, excess))) {
      if (this.ctx.activePods(this.ctx.state.ownedBy('pods', rs.metadata.uid)).length > 0) continue
      await this.ctx.state.delete({...rs, metadata: {...rs.metadata, namespace: ns}})
    }
  }

  private async writeStatus(
    d: KubeObject,
    ns: string,
    name: string,
    newRS: KubeObject | undefined,
    maxUnavailable: number,
    paused: boolean,
    startConditions: Condition[],
  ): Promise<void> {
    const replicas: number = d.spec?.replicas ?? 1
    const all = this.ctx.state
      .ownedBy('replicaSets', d.metadata.uid)
      .filter((rs) => isControlledBy(rs, d) && !isTerminating(rs))
    const fresh = newRS ? (this.ctx.state.get('replicaSets', ns, newRS.metadata.name) ?? newRS) : undefined
    const sum = (f: (rs: KubeObject) => number) => all.reduce((n, rs) => n + f(rs), 0)
    const available = sum((rs) => rs.status?.availableReplicas ?? 0)
    const total = sum((rs) => rs.spec?.replicas ?? 0)
    const counters = {
      observedGeneration: d.metadata.generation ?? 1,
      replicas: sum((rs) => rs.status?.replicas ?? 0),
      updatedReplicas: fresh?.status?.replicas ?? 0,
      readyReplicas: sum((rs) => rs.status?.readyReplicas ?? 0),
      availableReplicas: available,
      unavailableReplicas: Math.max(0, total - available),
    }
    let conditions = startConditions
    conditions = setCondition(
      conditions,
      available >= replicas - maxUnavailable
        ? {
            type: 'Available',
            status: 'True',
            reason: 'MinimumReplicasAvailable',
            message: 'Deployment has minimum availability.',
          }
        : {
            type: 'Available',
            status: 'False',
            reason: 'MinimumReplicasUnavailable',
            message: 'Deployment does not have minimum availability.',
          },
      {updateTime: true},
    )
    // Available first, as the controller adds it before Progressing on a new Deployment.
    conditions = [
      ...conditions.filter((c) => c.type === 'Available'),
      ...conditions.filter((c) => c.type !== 'Available'),
    ]
    const current = conditions.find((c) => c.type === 'Progressing')
    if (paused) {
      conditions = setCondition(
        conditions,
        {type: 'Progressing', status: 'Unknown', reason: 'DeploymentPaused', message: 'Deployment is paused'},
        {updateTime: true},
      )
    } else if (fresh) {
      const complete =
        counters.updatedReplicas === replicas &&
        counters.replicas === replicas &&
        counters.availableReplicas === replicas &&
        counters.observedGeneration >= (d.metadata.generation ?? 1)
      const alreadyComplete =
        counters.replicas === counters.updatedReplicas &&
        current?.reason === 'NewReplicaSetAvailable' &&
        current.message?.includes(`"${fresh.metadata.name}"`)
      if (!alreadyComplete) {
        if (complete)
          conditions = setCondition(
            conditions,
            {
              type: 'Progressing',
              status: 'True',
              reason: 'NewReplicaSetAvailable',
              message: `ReplicaSet "${fresh.metadata.name}" has successfully progressed.`,
            },
            {updateTime: true},
          )
        else if (
          current?.reason !== 'NewReplicaSetCreated' ||
          !current.message?.includes(`"${fresh.metadata.name}"`) ||
          counters.updatedReplicas > 0
        )
          conditions = setCondition(
            conditions,
            {
              type: 'Progressing',
              status: 'True',
              reason: 'ReplicaSetUpdated',
              message: `ReplicaSet "${fresh.metadata.name}" is progressing.`,
            },
            {updateTime: true},
          )
      }
    }
    const old = d.status ?? {}
    const sameConditions = canonicalJson(old.conditions ?? []) === canonicalJson(conditions)
    if (sameCounters(old, counters) && sameConditions) return
    const status = {
      ...omitZero(counters, [
        'replicas',
        'updatedReplicas',
        'readyReplicas',
        'availableReplicas',
        'unavailableReplicas',
      ]),
      conditions,
    }
    await this.ctx.state.patch(
      {apiVersion: 'apps/v1', kind: 'Deployment', namespace: ns, name},
      {status},
      {subresource: 'status'},
    )
  }
}
