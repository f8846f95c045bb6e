// Reading the live state a step's verification needs: pods per workload, rollouts, conditions.
import type {KubeClient} from '../kube/types.js'
import type {KubeObject, ObjectRef, ProxyState} from '../planner/model.js'
import {refKey} from '../planner/refs.js'
import {podProxyState} from '../planner/workloads.js'
import {AMBIENT_REDIRECTION, isSidecar} from '../planner/vocab.js'

const RESOURCE = {
  pods: {apiVersion: 'v1', kind: 'Pod'},
  replicaSets: {apiVersion: 'apps/v1', kind: 'ReplicaSet'},
  jobs: {apiVersion: 'batch/v1', kind: 'Job'},
}

async function listKind(
  client: KubeClient,
  kind: {apiVersion: string; kind: string},
  namespace: string,
): Promise<KubeObject[]> {
  const res = await client.resourceFor(kind.apiVersion, kind.kind)
  return res ? client.list(res, {namespace}) : []
}

export interface LivePod {
  pod: KubeObject
  name: string
  proxy: ProxyState
  captured: boolean
  /** The workload (top-level controller) it belongs to. */
  owner?: ObjectRef
}

function controllerOf(obj: KubeObject): {kind: string; name: string; apiVersion: string} | undefined {
  return obj.metadata.ownerReferences?.find((o) => o.controller) ?? obj.metadata.ownerReferences?.[0]
}

/** Pods of a namespace that carry traffic (not terminating, not finished), each with its top-level owner. */
export async function livePods(client: KubeClient, namespace: string): Promise<LivePod[]> {
  const [pods, replicaSets, jobs] = await Promise.all([
    listKind(client, RESOURCE.pods, namespace),
    listKind(client, RESOURCE.replicaSets, namespace),
    listKind(client, RESOURCE.jobs, namespace),
  ])
  const rsOwner = new Map(replicaSets.map((rs) => [rs.metadata.name, controllerOf(rs)]))
  const jobOwner = new Map(jobs.map((j) => [j.metadata.name, controllerOf(j)]))
  const out: LivePod[] = []
  for (const pod of pods) {
    if (pod.metadata.deletionTimestamp) continue
    const phase = pod.status?.phase
    if (phase === 'Succeeded' || phase === 'Failed') continue
    let owner: ObjectRef | undefined
    const direct = controllerOf(pod)
    if (direct) {
      let top = direct
      if (direct.kind === 'ReplicaSet') top = rsOwner.get(direct.name) ?? direct
      else if (direct.kind === 'Job') top = jobOwner.get(direct.name) ?? direct
      owner = {apiVersion: top.apiVersion, kind: top.kind, namespace, name: top.name}
    } else {
      owner = {apiVersion: 'v1', kind: 'Pod', namespace, name: pod.metadata.name}
    }
    out.push({
      pod,
      name: pod.metadata.name,
      proxy: podProxyState(pod),
      captured: pod.metadata.annotations?.[AMBIENT_REDIRECTION] === 'enabled',
      owner,
    })
  }
  return out
}

/** Pods grouped by owning workload (refKey without API version). */
export function podsByWorkload(pods: LivePod[]): Map<string, LivePod[]> {
  const map = new Map<string, LivePod[]>()
  for (const p of pods) {
    if (!p.owner) continue
    const key = refKey(p.owner)
    map.set(key, [...(map.get(key) ?? []), p])
  }
  return map
}

export function hasSidecar(p: LivePod): boolean {
  return isSidecar(p.proxy)
}

export interface Condition {
  type: string
  status: string
  reason?: string
  message?: string
}

export function condition(obj: KubeObject | undefined, type: string): Condition | undefined {
  return (obj?.status?.conditions as Condition[] | undefined)?.find((c) => c.type === type)
}

/** Whether a rollout of a Deployment / StatefulSet / DaemonSet has finished (kubectl rollout status rules). */
export function rolloutDone(obj: KubeObject): {done: boolean; detail: string} {
  const st = obj.status ?? {}
  const generation = obj.metadata.generation ?? 0
  if ((st.observedGeneration ?? 0) < generation)
    return {done: false, detail: 'the controller has not observed the new generation yet'}
  switch (obj.kind) {
    case 'Deployment': {
      const want = obj.spec?.replicas ?? 1
      if ((st.updatedReplicas ?? 0) < want)
        return {done: false, detail: `${st.updatedReplicas ?? 0} of ${want} replicas updated`}
      if ((st.replicas ?? 0) > (st.updatedReplicas ?? 0))
        return {
          done: false,
          detail: `${(st.replicas ?? 0) - (st.updatedReplicas ?? 0)} old replicas pending termination`,
        }
      if ((st.availableReplicas ?? 0) < (st.updatedReplicas ?? 0))
        return {
          done: false,
          detail: `${st.availableReplicas ?? 0} of ${st.updatedReplicas ?? 0} updated replicas available`,
        }
      return {done: true, detail: `${want} replica(s) updated and available`}
    }
    case 'StatefulSet': {
      const want = obj.spec?.replicas ?? 1
      if (st.updateRevision && st.currentRevision !== st.updateRevision)
        return {done: false, detail: `${st.updatedReplicas ?? 0} of ${want} pods at the new revision`}
      if ((st.readyReplicas ?? 0) < want) return {done: false, detail: `${st.readyReplicas ?? 0} of ${want} pods ready`}
      return {done: true, detail: `${want} pod(s) at the new revision and ready`}
    }
    case 'DaemonSet': {
      const want = st.desiredNumberScheduled ?? 0
      if ((st.updatedNumberScheduled ?? 0) < want)
        return {done: false, detail: `${st.updatedNumberScheduled ?? 0} of ${want} pods updated`}
      if ((st.numberAvailable ?? 0) < want)
        return {done: false, detail: `${st.numberAvailable ?? 0} of ${want} pods available`}
      return {done: true, detail: `${want} pod(s) updated and available`}
    }
    default:
      return {done: true, detail: `${obj.kind} has no rollout`}
  }
}
