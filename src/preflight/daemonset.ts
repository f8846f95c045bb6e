// "Ready on every node" for the ztunnel and istio-cni DaemonSets (DOMAIN §2.2, §4.4). Pure.
//
// An ambient pod on a node without a ready istio-cni agent fails to start (the CNI plugin cannot reach
// the node agent); without a ready ztunnel it has no mesh traffic at all. So the question is not only
// "numberReady = desiredNumberScheduled" but also "which Nodes would the DaemonSet not run on".
import type {KubeObject} from '../planner/model.js'

interface Toleration {
  key?: string
  operator?: string
  value?: string
  effect?: string
}

interface Taint {
  key: string
  value?: string
  effect: string
}

interface NodeSelectorRequirement {
  key: string
  operator: string
  values?: string[]
}

interface NodeSelectorTerm {
  matchExpressions?: NodeSelectorRequirement[]
  matchFields?: NodeSelectorRequirement[]
}

// The DaemonSet controller adds these tolerations to every DaemonSet pod
// (pkg/controller/daemon/util.AddOrUpdateDaemonPodTolerations), so these taints never keep one away.
const DAEMONSET_TOLERATIONS: Toleration[] = [
  {key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute'},
  {key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute'},
  {key: 'node.kubernetes.io/disk-pressure', operator: 'Exists', effect: 'NoSchedule'},
  {key: 'node.kubernetes.io/memory-pressure', operator: 'Exists', effect: 'NoSchedule'},
  {key: 'node.kubernetes.io/pid-pressure', operator: 'Exists', effect: 'NoSchedule'},
  {key: 'node.kubernetes.io/unschedulable', operator: 'Exists', effect: 'NoSchedule'},
]

function tolerates(t: Toleration, taint: Taint): boolean {
  if (t.effect && t.effect !== taint.effect) return false
  if ((t.operator ?? 'Equal') === 'Exists') return !t.key || t.key === taint.key
  return t.key === taint.key && (t.value ?? '') === (taint.value ?? '')
}

function requirementMatches(req: NodeSelectorRequirement, value: string | undefined): boolean {
  const values = req.values ?? []
  switch (req.operator) {
    case 'In':
      return value !== undefined && values.includes(value)
    case 'NotIn':
      return value === undefined || !values.includes(value)
    case 'Exists':
      return value !== undefined
    case 'DoesNotExist':
      return value === undefined
    case 'Gt':
    case 'Lt': {
      if (value === undefined || !/^-?\d+$/.test(value) || values.length !== 1) return false
      return req.operator === 'Gt' ? Number(value) > Number(values[0]) : Number(value) < Number(values[0])
    }
    default:
      return false
  }
}

function termMatches(term: NodeSelectorTerm, node: KubeObject): boolean {
  const labels = node.metadata.labels ?? {}
  const expressions = term.matchExpressions ?? []
  const fields = term.matchFields ?? []
  // An empty term selects nothing (core/v1 NodeSelectorTerm).
  if (expressions.length === 0 && fields.length === 0) return false
  return (
    expressions.every((r) => requirementMatches(r, labels[r.key])) &&
    fields.every((r) => requirementMatches(r, r.key === 'metadata.name' ? node.metadata.name : undefined))
  )
}

/** Why a DaemonSet with this pod template will not run on the node, or undefined when it will. */
export function nodeExclusion(template: Pick<KubeObject, 'spec'> | undefined, node: KubeObject): string | undefined {
  const spec = template?.spec ?? {}
  const labels = node.metadata.labels ?? {}
  for (const [k, v] of Object.entries((spec.nodeSelector ?? {}) as Record<string, string>)) {
    if (labels[k] !== v) return `nodeSelector ${k}=${v} does not match`
  }
  const terms: NodeSelectorTerm[] | undefined =
    spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms
  if (Array.isArray(terms) && !terms.some((t) => termMatches(t, node))) return 'required node affinity does not match'
  const tolerations: Toleration[] = [
    ...(Array.isArray(spec.tolerations) ? spec.tolerations : []),
    ...DAEMONSET_TOLERATIONS,
  ]
  const taints: Taint[] = Array.isArray(node.spec?.taints) ? node.spec.taints : []
  for (const taint of taints) {
    if (taint.effect !== 'NoSchedule' && taint.effect !== 'NoExecute') continue
    if (!tolerations.some((t) => tolerates(t, taint)))
      return `taint ${taint.key}${taint.value ? `=${taint.value}` : ''}:${taint.effect} is not tolerated`
  }
  return undefined
}

function podReady(pod: KubeObject): boolean {
  const conditions: {type?: string; status?: string}[] = Array.isArray(pod.status?.conditions)
    ? pod.status.conditions
    : []
  return (
    !pod.metadata.deletionTimestamp &&
    pod.status?.phase === 'Running' &&
    conditions.some((c) => c.type === 'Ready' && c.status === 'True')
  )
}

/** Pods a DaemonSet owns: by ownerReference, else by its selector's matchLabels. */
export function daemonSetPods(ds: KubeObject, pods: KubeObject[]): KubeObject[] {
  const selector: Record<string, string> = ds.spec?.selector?.matchLabels ?? {}
  return pods.filter((p) => {
    if (p.metadata.namespace !== ds.metadata.namespace) return false
    const owner = p.metadata.ownerReferences?.find((o) => o.controller)
    if (owner) return owner.kind === 'DaemonSet' && owner.name === ds.metadata.name
    return Object.keys(selector).length > 0 && Object.entries(selector).every(([k, v]) => p.metadata.labels?.[k] === v)
  })
}

export interface DaemonSetCoverage {
  desired: number
  ready: number
  available: number
  updated: number
  /** Nodes the DaemonSet should run on (its node selector, affinity and tolerations admit them). */
  eligibleNodes: string[]
  /** Linux nodes it will never run on, and why. */
  excludedNodes: {node: string; why: string}[]
  /** Eligible nodes without a ready pod of the DaemonSet (only when pods were readable). */
  nodesWithoutReadyPod?: string[]
  /** The controller has not yet observed the latest spec. */
  statusStale: boolean
}

/** How a DaemonSet covers the cluster's Nodes. `pods` undefined = the pods could not be read. */
export function daemonSetCoverage(
  ds: KubeObject,
  nodes: KubeObject[],
  pods: KubeObject[] | undefined,
): DaemonSetCoverage {
  const status = ds.status ?? {}
  const eligibleNodes: string[] = []
  const excludedNodes: {node: string; why: string}[] = []
  for (const node of nodes) {
    const why = nodeExclusion(ds.spec?.template, node)
    if (why === undefined) eligibleNodes.push(node.metadata.name)
    // Windows nodes never run ztunnel/istio-cni and cannot run ambient pods: not a gap.
    else if (node.metadata.labels?.['kubernetes.io/os'] !== 'windows')
      excludedNodes.push({node: node.metadata.name, why})
  }
  const coverage: DaemonSetCoverage = {
    desired: status.desiredNumberScheduled ?? 0,
    ready: status.numberReady ?? 0,
    available: status.numberAvailable ?? 0,
    updated: status.updatedNumberScheduled ?? 0,
    eligibleNodes,
    excludedNodes,
    statusStale: (status.observedGeneration ?? 0) < (ds.metadata.generation ?? 0),
  }
  if (pods) {
    const readyOn = new Set(
      daemonSetPods(ds, pods)
        .filter(podReady)
        .map((p) => p.spec?.nodeName as string | undefined)
        .filter((n): n is string => !!n),
    )
    coverage.nodesWithoutReadyPod = eligibleNodes.filter((n) => !readyOn.has(n))
  }
  return coverage
}
