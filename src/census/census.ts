// `census`: every namespace's data-plane mode and the pods that disagree with it (SPEC §2). Pure: the
// cluster-wide lists in, one row per namespace out. The namespace rules are the planner's
// (analyzeNamespace: webhook-exact injection, IST0123's counting rule), not a second copy.
import type {KubeObject, NamespaceState} from '../planner/model.js'
import {
  analyzeInjectionWebhooks,
  analyzeNamespace,
  injectionLabelsForIST0123,
  type InjectionWebhooks,
} from '../planner/namespace.js'
import type {MigrationPlan, StepPhase} from '../planner/plan-types.js'
import {podProxyState} from '../planner/workloads.js'
import {
  AMBIENT_REDIRECTION,
  DATAPLANE_MODE_LABEL,
  GATEWAY_MANAGED,
  INJECTION_LABEL,
  REVISION_LABEL,
  SIDECAR_INJECT,
  WAYPOINT_CLASS,
  isSidecar,
} from '../planner/vocab.js'
import {byCodePoint} from '../planner/order.js'

export interface CensusPod {
  name: string
  /** Why it is listed (e.g. "no sidecar, not captured", "ambient redirection pending"). */
  why: string
}

export interface CensusWaypoint {
  name: string
  ready: boolean
  /** What readiness rests on, or what is missing (the apply engine's wait-waypoint rule). */
  detail: string
}

export interface CensusPlan {
  file: string
  /** Applied steps of the plan. */
  applied: number
  steps: number
  /** blocked: the plan has blockers and cannot be applied (it has written nothing). */
  state: 'blocked' | 'not-started' | 'in-progress' | 'applied' | 'failed' | 'interrupted' | 'rolled-back'
  /** The step that needs attention next (failed/interrupted one, else the first pending). */
  next?: string
}

export interface CensusRow {
  namespace: string
  mode: NamespaceState['mode']
  /** How sidecars are injected: "istio-injection=enabled", "istio.io/rev=canary (tag of 1-28)", "injection enabled by default". */
  sidecarInjection?: string
  /** istio.io/dataplane-mode, as set. */
  dataplaneMode?: string
  useWaypoint?: string
  /** istioctl analyze IST0123 fires: the labels it would list. */
  conflict?: string[]
  /**
   * Application pods by data plane; the mesh's own pods are counted apart (their istio-proxy is not a
   * sidecar): `gateway` — waypoints and gateways istiod deploys; `controlPlane` — istiod, ztunnel, istio-cni.
   */
  pods: {total: number; sidecar: number; ambient: number; none: number; gateway: number; controlPlane: number}
  /** Pods outside the mesh in a namespace that is in the mesh (sidecar, ambient or both). */
  outsideMesh: CensusPod[]
  /** Pods still carrying a sidecar in an ambient namespace. */
  sidecarInAmbient: CensusPod[]
  waypoints: CensusWaypoint[]
  plans: CensusPlan[]
  /** The namespace's migration wave in the fleet plan (plans/fleet.yaml), when it has one. */
  wave?: number
}

export interface CensusReport {
  context: string
  namespaces: CensusRow[]
  summary: Record<NamespaceState['mode'], number> & {conflicts: number; outsideMesh: number; sidecarInAmbient: number}
  /** What could not be read, for the person running it. */
  notes: string[]
}

export interface CensusInput {
  context: string
  namespaces: KubeObject[]
  pods: KubeObject[]
  /** Gateway API Gateways (all classes; waypoints are picked here). */
  gateways: KubeObject[]
  /** Waypoint Deployments (label gateway.istio.io/managed=istio.io-mesh-controller). */
  deployments: KubeObject[]
  mutatingWebhooks: KubeObject[]
  plans: {file: string; plan: MigrationPlan}[]
  /** namespace → wave, from the fleet plan (plans/fleet.yaml) when there is one. */
  waves?: Record<string, number>
  notes?: string[]
}

function isLive(pod: KubeObject): boolean {
  const phase = pod.status?.phase
  return !pod.metadata.deletionTimestamp && phase !== 'Succeeded' && phase !== 'Failed'
}

function condition(
  obj: KubeObject | undefined,
  type: string,
): {status?: string; reason?: string; message?: string} | undefined {
  return (obj?.status?.conditions as {type?: string; status?: string}[] | undefined)?.find((c) => c.type === type)
}

/** The wait-waypoint rule (src/executor/verify.ts): Programmed, addresses assigned, Deployment available. */
export function waypointReadiness(gateway: KubeObject, deployment: KubeObject | undefined): CensusWaypoint {
  const name = gateway.metadata.name
  const programmed = condition(gateway, 'Programmed')
  if (programmed?.status !== 'True')
    return {
      name,
      ready: false,
      detail: `not Programmed${programmed ? ` (${programmed.reason ?? programmed.status})` : ''}`,
    }
  const addresses = Array.isArray(gateway.status?.addresses) ? gateway.status.addresses : []
  if (addresses.length === 0) return {name, ready: false, detail: 'no status.addresses (istiod ignores it)'}
  const available = deployment?.status?.availableReplicas ?? 0
  if (available < 1)
    return {name, ready: false, detail: deployment ? 'Deployment has no available replica' : 'no Deployment'}
  return {name, ready: true, detail: `Programmed, ${available} replica(s) available`}
}

/** A plan's state and progress as census and status show it. */
export function planProgress(file: string, plan: MigrationPlan): CensusPlan {
  const phase = (id: string): StepPhase => plan.status?.steps.find((s) => s.id === id)?.phase ?? 'Pending'
  const phases = plan.spec.steps.map((s) => ({id: s.id, phase: phase(s.id)}))
  const applied = phases.filter((p) => p.phase === 'Applied').length
  const failed = phases.find((p) => p.phase === 'Failed')
  const interrupted = phases.find((p) => p.phase === 'Interrupted' || p.phase === 'Running')
  const rolledBack = phases.some((p) => p.phase === 'RolledBack')
  const pending = phases.find((p) => p.phase !== 'Applied')
  let state: CensusPlan['state']
  if (failed) state = 'failed'
  else if (interrupted) state = 'interrupted'
  else if (phases.length > 0 && applied === phases.length) state = 'applied'
  else if (applied > 0) state = 'in-progress'
  else if (plan.spec.blockers.length > 0) state = 'blocked'
  else if (rolledBack) state = 'rolled-back'
  else state = 'not-started'
  const next = failed?.id ?? interrupted?.id ?? pending?.id
  return {file, applied, steps: phases.length, state, ...(next && state !== 'applied' ? {next} : {})}
}

function describeInjection(state: NamespaceState, webhooks: InjectionWebhooks): string | undefined {
  if (state.injection !== 'enabled') return undefined
  const injection = state.labels[INJECTION_LABEL]
  if (injection !== undefined) return `${INJECTION_LABEL}=${injection}`
  const rev = state.labels[REVISION_LABEL]
  if (rev !== undefined) {
    const revision = webhooks.tags[rev]
    return `${REVISION_LABEL}=${rev}${revision !== undefined ? ` (tag of revision ${revision})` : ''}`
  }
  return 'injection enabled by default'
}

/** Pods istiod deploys for a Gateway: waypoints (istio.io-mesh-controller) and Gateway API gateways (istio.io-gateway-controller). */
function isManagedGateway(pod: KubeObject): boolean {
  return pod.metadata.labels?.[GATEWAY_MANAGED] !== undefined
}

/**
 * Control-plane and node-agent pods, by the labels of Istio's charts (istio/istio manifests/charts):
 * istiod (`app: istiod`, `istio: pilot`), ztunnel (`app: ztunnel`), istio-cni (`app: istio-cni-node`;
 * `k8s-app: istio-cni-node` in older charts). ztunnel's container is named istio-proxy, yet it is not a sidecar.
 */
export function controlPlaneComponent(pod: KubeObject): 'istiod' | 'ztunnel' | 'istio-cni' | undefined {
  const labels = pod.metadata.labels ?? {}
  if (labels.app === 'istiod' || labels.istio === 'pilot') return 'istiod'
  if (labels.app === 'ztunnel') return 'ztunnel'
  if (labels.app === 'istio-cni-node' || labels['k8s-app'] === 'istio-cni-node') return 'istio-cni'
  return undefined
}

const isMeshOwnPod = (pod: KubeObject) => isManagedGateway(pod) || controlPlaneComponent(pod) !== undefined

/** Pods of a mesh namespace that are not in the mesh, leaving out those deliberately kept out. */
function outsideMesh(pods: KubeObject[], state: NamespaceState): CensusPod[] {
  if (state.mode === 'none') return []
  const out: CensusPod[] = []
  for (const pod of pods) {
    const labels = pod.metadata.labels ?? {}
    if (pod.spec?.hostNetwork === true) continue // never injected, never captured (E6)
    if (isMeshOwnPod(pod)) continue // waypoints, gateways and node agents are the mesh's own proxies
    const proxy = podProxyState(pod)
    if (proxy !== 'none') continue
    const ambientHere = state.mode === 'ambient' || state.mode === 'both'
    // Opt-outs: dataplane-mode=none keeps a pod out of ambient; inject=false keeps it out of sidecar mode
    // but does not stop ztunnel capture (DOMAIN §2.6).
    if (ambientHere && labels[DATAPLANE_MODE_LABEL] === 'none') continue
    if (!ambientHere && (labels[SIDECAR_INJECT] === 'false' || pod.metadata.annotations?.[SIDECAR_INJECT] === 'false'))
      continue
    const redirection = pod.metadata.annotations?.[AMBIENT_REDIRECTION]
    const why =
      redirection === 'pending'
        ? 'ambient redirection pending: no traffic until ztunnel proxies it'
        : ambientHere
          ? 'no sidecar and not captured by ztunnel (ambient.istio.io/redirection absent)'
          : 'no sidecar (created before injection was enabled, or injection failed)'
    out.push({name: pod.metadata.name, why})
  }
  return out
}

function sidecarInAmbient(pods: KubeObject[], state: NamespaceState): CensusPod[] {
  // In "both" the sidecar is expected to win; only a namespace that is ambient alone should have none.
  if (state.mode !== 'ambient') return []
  return pods
    .filter((p) => {
      if (isMeshOwnPod(p)) return false
      const proxy = podProxyState(p)
      return isSidecar(proxy)
    })
    .map((p) => {
      const labels = p.metadata.labels ?? {}
      const optIn = labels[SIDECAR_INJECT] === 'true' || labels[REVISION_LABEL] !== undefined
      return {
        name: p.metadata.name,
        why: optIn
          ? 'pod opts in to injection (sidecar.istio.io/inject=true or istio.io/rev)'
          : 'not restarted since the namespace left sidecar mode',
      }
    })
}

export function buildCensus(input: CensusInput): CensusReport {
  const injection = analyzeInjectionWebhooks(input.mutatingWebhooks)
  const webhooks = injection.webhooks
  const podsByNs = groupByNamespace(input.pods.filter(isLive))
  const gatewaysByNs = groupByNamespace(input.gateways.filter((g) => g.spec?.gatewayClassName === WAYPOINT_CLASS))
  const deploymentByKey = new Map(input.deployments.map((d) => [`${d.metadata.namespace}/${d.metadata.name}`, d]))
  const plansByNs = new Map<string, CensusPlan[]>()
  for (const {file, plan} of input.plans) {
    const ns = plan.metadata.namespace
    plansByNs.set(ns, [...(plansByNs.get(ns) ?? []), planProgress(file, plan)])
  }

  const rows: CensusRow[] = []
  for (const nsObj of [...input.namespaces].sort((a, b) => byCodePoint(a.metadata.name, b.metadata.name))) {
    const name = nsObj.metadata.name
    const {state} = analyzeNamespace(name, nsObj, {webhooks})
    const pods = podsByNs.get(name) ?? []
    const counts = {total: pods.length, sidecar: 0, ambient: 0, none: 0, gateway: 0, controlPlane: 0}
    for (const p of pods) {
      if (controlPlaneComponent(p)) {
        counts.controlPlane++
        continue
      }
      if (isManagedGateway(p)) {
        counts.gateway++
        continue
      }
      const proxy = podProxyState(p)
      if (isSidecar(proxy)) counts.sidecar++
      else if (proxy === 'ambient') counts.ambient++
      else counts.none++
    }
    const sidecarInjection = describeInjection(state, webhooks)
    const row: CensusRow = {
      namespace: name,
      mode: state.mode,
      ...(sidecarInjection ? {sidecarInjection} : {}),
      ...(state.dataplaneMode !== undefined ? {dataplaneMode: state.dataplaneMode} : {}),
      ...(state.useWaypoint !== undefined ? {useWaypoint: state.useWaypoint} : {}),
      ...(state.multipleInjectionLabels ? {conflict: injectionLabelsForIST0123(state.labels)} : {}),
      pods: counts,
      outsideMesh: outsideMesh(pods, state),
      sidecarInAmbient: sidecarInAmbient(pods, state),
      waypoints: (gatewaysByNs.get(name) ?? [])
        .map((g) => waypointReadiness(g, deploymentByKey.get(`${name}/${g.metadata.name}`)))
        .sort((a, b) => byCodePoint(a.name, b.name)),
      plans: (plansByNs.get(name) ?? []).sort((a, b) => byCodePoint(a.file, b.file)),
      ...(input.waves?.[name] !== undefined ? {wave: input.waves[name]} : {}),
    }
    rows.push(row)
  }

  const summary = {sidecar: 0, ambient: 0, both: 0, none: 0, conflicts: 0, outsideMesh: 0, sidecarInAmbient: 0}
  for (const r of rows) {
    summary[r.mode]++
    if (r.conflict) summary.conflicts++
    summary.outsideMesh += r.outsideMesh.length
    summary.sidecarInAmbient += r.sidecarInAmbient.length
  }
  return {context: input.context, namespaces: rows, summary, notes: [...(input.notes ?? [])]}
}

function groupByNamespace(objects: KubeObject[]): Map<string, KubeObject[]> {
  const map = new Map<string, KubeObject[]>()
  for (const o of objects) {
    const ns = o.metadata.namespace ?? ''
    const list = map.get(ns)
    if (list) list.push(o)
    else map.set(ns, [o])
  }
  return map
}
