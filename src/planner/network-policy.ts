// Which Kubernetes NetworkPolicies would block ambient traffic (DOMAIN §3.14, §2.2, E25). Pure.
//
// Ambient never bypasses NetworkPolicy. Once a namespace is enrolled, every mesh peer (ambient
// client's ztunnel, a waypoint) reaches its pods on TCP 15008 (HBONE), whatever port the
// application listens on, so a rule that admits some peers on the application's ports must admit
// the same peers on 15008 too. Kubelet probes arrive SNATed from 169.254.7.127 (IPv6
// fd16:9254:7127:1337:ffff:ffff:ffff:ffff) and, depending on the CNI, need an ipBlock allowing it.
import type {KubeObject} from './model.js'
import {type LabelSelector, selectorMatches} from './namespace.js'
import {isRecord} from './json.js'
import {
  DATAPLANE_MODE_LABEL,
  GATEWAY_CLASS_NAME_LABEL,
  GATEWAY_MANAGED,
  GATEWAY_NAME_LABEL,
  SIDECAR_INJECT,
  WAYPOINT_CLASS,
} from './vocab.js'

export const HBONE_PORT = 15008
export const PROBE_SOURCE_V4 = '169.254.7.127'
export const PROBE_SOURCE_V6 = 'fd16:9254:7127:1337:ffff:ffff:ffff:ffff'

interface PolicyPort {
  protocol?: string
  port?: number | string
  endPort?: number
}

interface PolicyPeer {
  podSelector?: LabelSelector
  namespaceSelector?: LabelSelector
  ipBlock?: {cidr?: string; except?: string[]}
}

interface IngressRule {
  from?: PolicyPeer[]
  ports?: PolicyPort[]
}

/** What a pod exposes that NetworkPolicy evaluation needs. */
export interface PodEndpoint {
  name: string
  labels: Record<string, string>
  /** Container ports (for named ports in policies and probes). */
  ports: {name?: string; containerPort: number; protocol?: string}[]
  /** Kubelet probes and the port each targets (number, or a container port name). */
  probes: {container: string; kind: 'liveness' | 'readiness' | 'startup'; port: number | string}[]
}

export interface NetworkPolicyIssue {
  kind: 'hbone-blocked' | 'probe-blocked'
  /** NetworkPolicy name(s) involved. */
  policies: string[]
  /** Index of the ingress rule concerned (hbone-blocked). */
  rule?: number
  /** The probed container port (probe-blocked). */
  port?: number
  pods: string[]
  detail: string
}

type Rec = Record<string, unknown>

/** The pod's ports and probes, from a live Pod (or a pod template: same shape under spec). */
export function podEndpoint(name: string, metadata: {labels?: Record<string, string>}, spec: unknown): PodEndpoint {
  const podSpec = isRecord(spec) ? spec : {}
  const containers = Array.isArray(podSpec.containers) ? (podSpec.containers as Rec[]) : []
  const ports: PodEndpoint['ports'] = []
  const probes: PodEndpoint['probes'] = []
  for (const c of containers) {
    for (const p of Array.isArray(c.ports) ? (c.ports as Rec[]) : []) {
      if (typeof p.containerPort === 'number') {
        ports.push({
          containerPort: p.containerPort,
          ...(typeof p.name === 'string' ? {name: p.name} : {}),
          ...(typeof p.protocol === 'string' ? {protocol: p.protocol} : {}),
        })
      }
    }
    for (const kind of ['liveness', 'readiness', 'startup'] as const) {
      const probe = c[`${kind}Probe`]
      if (!isRecord(probe)) continue
      const handler = [probe.httpGet, probe.tcpSocket, probe.grpc].find(isRecord)
      const port = handler?.port
      // exec probes run inside the container: no network path, nothing to admit.
      if (typeof port === 'number' || typeof port === 'string')
        probes.push({container: String(c.name ?? ''), kind, port})
    }
  }
  return {name, labels: {...(metadata.labels ?? {})}, ports, probes}
}

/** All policies affect ingress; `policyTypes` narrows that only when it is written (networking/v1 API). */
export function affectsIngress(policy: KubeObject): boolean {
  const types = policy.spec?.policyTypes
  return !Array.isArray(types) || types.includes('Ingress')
}

export function selectsPod(policy: KubeObject, labels: Record<string, string>): boolean {
  return selectorMatches(
    isRecord(policy.spec?.podSelector) ? (policy.spec.podSelector as LabelSelector) : undefined,
    labels,
  )
}

function ingressRules(policy: KubeObject): IngressRule[] {
  return Array.isArray(policy.spec?.ingress) ? (policy.spec.ingress as IngressRule[]) : []
}

/** A port entry resolved against the pod: numbers, ranges (endPort) and named container ports. */
function portEntryAdmits(entry: PolicyPort, port: number, protocol: string, pod: PodEndpoint): boolean {
  if ((entry.protocol ?? 'TCP').toUpperCase() !== protocol) return false
  if (entry.port === undefined) return true // all ports of that protocol
  if (typeof entry.port === 'number')
    return entry.endPort !== undefined ? port >= entry.port && port <= entry.endPort : port === entry.port
  // A named port admits the container port of that name (and protocol) on the selected pod.
  return pod.ports.some(
    (p) => p.name === entry.port && p.containerPort === port && (p.protocol ?? 'TCP').toUpperCase() === protocol,
  )
}

export function ruleAdmitsPort(rule: IngressRule, port: number, pod: PodEndpoint, protocol = 'TCP'): boolean {
  const ports = Array.isArray(rule.ports) ? rule.ports : []
  return ports.length === 0 || ports.some((entry) => portEntryAdmits(entry, port, protocol, pod))
}

/** `from` absent or empty admits every source. */
export function ruleFromEverywhere(rule: IngressRule): boolean {
  return !Array.isArray(rule.from) || rule.from.length === 0
}

// ---------------------------------------------------------------------------------------------
// CIDR containment (IPv4 and IPv6)

function ipToBigInt(ip: string): {value: bigint; bits: 32 | 128} | undefined {
  if (ip.includes(':')) {
    const [head, tail] = ip.split('::') as [string, string | undefined]
    if (ip.split('::').length > 2) return undefined
    const headParts = head ? head.split(':') : []
    const tailParts = tail ? tail.split(':') : []
    const missing = 8 - headParts.length - tailParts.length
    if (tail === undefined ? headParts.length !== 8 : missing < 0) return undefined
    const parts = [...headParts, ...Array(tail === undefined ? 0 : missing).fill('0'), ...tailParts]
    let value = 0n
    for (const p of parts) {
      if (!/^[0-9a-f]{1,4}$/i.test(p)) return undefined
      value = (value << 16n) | BigInt(parseInt(p, 16))
    }
    return {value, bits: 128}
  }
  const octets = ip.split('.')
  if (octets.length !== 4 || octets.some((o) => !/^\d{1,3}$/.test(o) || Number(o) > 255)) return undefined
  return {value: octets.reduce((acc, o) => (acc << 8n) | BigInt(Number(o)), 0n), bits: 32}
}

export function cidrContains(cidr: string, ip: string): boolean {
  const [base, prefixText] = cidr.split('/')
  const network = ipToBigInt(base ?? '')
  const address = ipToBigInt(ip)
  if (!network || !address || network.bits !== address.bits) return false
  const prefix = prefixText === undefined ? network.bits : Number(prefixText)
  if (!Number.isInteger(prefix) || prefix < 0 || prefix > network.bits) return false
  const shift = BigInt(network.bits - prefix)
  return network.value >> shift === address.value >> shift
}

/** Whether every address of `inner` lies in `outer`. */
export function cidrWithin(inner: string, outer: string): boolean {
  const [base, prefixText] = inner.split('/')
  const parsed = ipToBigInt(base ?? '')
  if (!parsed) return false
  const prefix = prefixText === undefined ? parsed.bits : Number(prefixText)
  const outerPrefix = Number(outer.split('/')[1])
  return Number.isInteger(prefix) && prefix >= outerPrefix && cidrContains(outer, base!)
}

// Link-local sources are never mesh pods: the kubelet probe source lives there (SNAT address of istio-cni).
const PROBE_ONLY_RANGES = ['169.254.0.0/16', 'fd16:9254:7127:1337::/64']

/** A rule that only admits the kubelet's probe source carries no mesh traffic, so needs no 15008. */
function probeSourceOnly(rule: IngressRule): boolean {
  const from = rule.from ?? []
  return (
    from.length > 0 &&
    from.every(
      (peer) =>
        peer.ipBlock?.cidr !== undefined &&
        !peer.podSelector &&
        !peer.namespaceSelector &&
        PROBE_ONLY_RANGES.some((r) => cidrWithin(peer.ipBlock!.cidr!, r)),
    )
  )
}

/** Whether the rule's peers include an address (only ipBlock peers can; pod/namespace selectors select pods). */
export function ruleAdmitsAddress(rule: IngressRule, ip: string): boolean {
  if (ruleFromEverywhere(rule)) return true
  return (rule.from ?? []).some((peer) => {
    const block = peer.ipBlock
    if (!block?.cidr || !cidrContains(block.cidr, ip)) return false
    return !(block.except ?? []).some((e) => cidrContains(e, ip))
  })
}

function resolvePort(port: number | string, pod: PodEndpoint): number | undefined {
  if (typeof port === 'number') return port
  if (/^\d+$/.test(port)) return Number(port)
  return pod.ports.find((p) => p.name === port)?.containerPort
}

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a ?? []) === JSON.stringify(b ?? [])
}

// ---------------------------------------------------------------------------------------------

/**
 * The NetworkPolicies of a namespace evaluated against the pods that will be in ambient mode.
 *
 * - HBONE: for every pod, the ingress rules of all policies that select it are additive. A rule that
 *   admits traffic but not TCP 15008 loses its peers after enrolment, unless another rule admits 15008
 *   from everywhere or from exactly the same peers. Rules admitting only link-local sources (the kubelet
 *   probe source) are exempt: probes reach the application port directly, not through ztunnel. A policy with no ingress rules (deny-all) admits
 *   nothing today and nothing after: not an HBONE problem.
 * - Probes: each probe's port must be admitted from 169.254.7.127 (or its IPv6 twin) by some rule.
 */
export function analyzeNetworkPolicies(policies: KubeObject[], pods: PodEndpoint[]): NetworkPolicyIssue[] {
  const ingressPolicies = policies.filter(affectsIngress)
  const hbone = new Map<string, NetworkPolicyIssue>()
  const probeIssues = new Map<string, NetworkPolicyIssue>()

  for (const pod of pods) {
    const selecting = ingressPolicies.filter((p) => selectsPod(p, pod.labels))
    if (selecting.length === 0) continue
    const rules = selecting.flatMap((policy) =>
      ingressRules(policy).map((rule, index) => ({policy: policy.metadata.name, rule, index})),
    )

    const hboneOpeners = rules.filter((r) => ruleAdmitsPort(r.rule, HBONE_PORT, pod))
    for (const r of rules) {
      if (ruleAdmitsPort(r.rule, HBONE_PORT, pod) || probeSourceOnly(r.rule)) continue
      const covered = hboneOpeners.some((o) => ruleFromEverywhere(o.rule) || sameJson(o.rule.from, r.rule.from))
      if (covered) continue
      const key = `${r.policy}/${r.index}`
      const ports = (r.rule.ports ?? [])
        .map((p) => `${p.port ?? 'all'}${p.endPort ? `-${p.endPort}` : ''}/${p.protocol ?? 'TCP'}`)
        .join(', ')
      const issue = hbone.get(key) ?? {
        kind: 'hbone-blocked' as const,
        policies: [r.policy],
        rule: r.index,
        pods: [],
        detail: `NetworkPolicy ${r.policy} spec.ingress[${r.index}] admits ${ruleFromEverywhere(r.rule) ? 'every source' : 'its peers'} on ${ports} but not on TCP ${HBONE_PORT}`,
      }
      issue.pods.push(pod.name)
      hbone.set(key, issue)
    }

    for (const probe of pod.probes) {
      const port = resolvePort(probe.port, pod)
      if (port === undefined) continue
      const admitted = rules.some(
        (r) =>
          ruleAdmitsPort(r.rule, port, pod) &&
          (ruleAdmitsAddress(r.rule, PROBE_SOURCE_V4) || ruleAdmitsAddress(r.rule, PROBE_SOURCE_V6)),
      )
      if (admitted) continue
      const names = selecting.map((p) => p.metadata.name).sort()
      const key = `${names.join(',')}/${port}`
      const issue = probeIssues.get(key) ?? {
        kind: 'probe-blocked' as const,
        policies: names,
        port,
        pods: [],
        detail: `kubelet probes on port ${port} (source ${PROBE_SOURCE_V4} once ambient) are not admitted by NetworkPolic${names.length === 1 ? 'y' : 'ies'} ${names.join(', ')}`,
      }
      if (!issue.pods.includes(pod.name)) issue.pods.push(pod.name)
      probeIssues.set(key, issue)
    }
  }
  return [...hbone.values(), ...probeIssues.values()]
}

// ---------------------------------------------------------------------------------------------
// Waypoints (DOMAIN §1.3, §3.14): ambient callers reach the waypoint's pods on TCP 15008, and the waypoint
// reaches the pods behind it on TCP 15008 with its own pod IP — a peer the NetworkPolicies of sidecar mode never
// named.

/** Labels istiod puts on a waypoint's pods (DOMAIN §1.3: the waypoint template). */
export function waypointPodLabels(name: string): Record<string, string> {
  return {
    [GATEWAY_NAME_LABEL]: name,
    [GATEWAY_CLASS_NAME_LABEL]: WAYPOINT_CLASS,
    [GATEWAY_MANAGED]: 'istio.io-mesh-controller',
    'service.istio.io/canonical-name': name,
    [SIDECAR_INJECT]: 'false',
    [DATAPLANE_MODE_LABEL]: 'none',
  }
}

/** The peer that selects a waypoint's pods in NetworkPolicy rules (same namespace as the policy). */
export function waypointPeer(name: string): PolicyPeer {
  return {podSelector: {matchLabels: {'gateway.networking.k8s.io/gateway-name': name}}}
}

/**
 * Whether a peer admits a pod of namespace `podNamespace` with these labels (policy in `policyNamespace`,
 * whose namespace carries `namespaceLabels`). ipBlock peers are not counted: pod IPs are unknown to the plan.
 */
export function peerAdmitsPod(
  peer: PolicyPeer,
  podLabels: Record<string, string>,
  podNamespace: string,
  policyNamespace: string,
  namespaceLabels: Record<string, string>,
): boolean {
  if (peer.ipBlock) return false
  if (!peer.podSelector && !peer.namespaceSelector) return false
  const nsOk = peer.namespaceSelector
    ? selectorMatches(peer.namespaceSelector, namespaceLabels)
    : podNamespace === policyNamespace
  return nsOk && (peer.podSelector ? selectorMatches(peer.podSelector, podLabels) : true)
}

/** Whether some ingress rule of these policies admits that pod (as a peer) on TCP `port` of `pod`. */
export function rulesAdmitPodOnPort(
  rules: {policy: KubeObject; rule: IngressRule}[],
  pod: PodEndpoint,
  port: number,
  peer: {labels: Record<string, string>; namespace: string; namespaceLabels: Record<string, string>},
): boolean {
  return rules.some(
    ({policy, rule}) =>
      ruleAdmitsPort(rule, port, pod) &&
      (ruleFromEverywhere(rule) ||
        (rule.from ?? []).some((p) =>
          peerAdmitsPod(
            p,
            peer.labels,
            peer.namespace,
            policy.metadata.namespace ?? peer.namespace,
            peer.namespaceLabels,
          ),
        )),
  )
}

/** The ingress rules of the policies selecting `pod` (each with its policy), probe-only rules left out. */
export function rulesSelecting(
  policies: KubeObject[],
  pod: PodEndpoint,
): {policy: KubeObject; rule: IngressRule; index: number}[] {
  return policies
    .filter((p) => affectsIngress(p) && selectsPod(p, pod.labels))
    .flatMap((policy) => ingressRules(policy).map((rule, index) => ({policy, rule, index})))
    .filter((r) => !probeSourceOnly(r.rule))
}

export type {IngressRule, PolicyPeer}
