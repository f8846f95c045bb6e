// patch-network-policies: additive NetworkPolicies that admit HBONE (15008) and kubelet probes (169.254.7.127) where
// the existing ones would not once the namespace is ambient (E25). Pure.
import {finding} from '../planner/findings/finding.js'
import type {Finding, Inventory, KubeObject, SourceSnapshot} from '../planner/model.js'
import {
  affectsIngress,
  analyzeNetworkPolicies,
  HBONE_PORT,
  podEndpoint,
  PROBE_SOURCE_V4,
  type PodEndpoint,
  ruleAdmitsPort,
  ruleFromEverywhere,
  rulesAdmitPodOnPort,
  rulesSelecting,
  selectsPod,
  waypointPeer,
  waypointPodLabels,
} from '../planner/network-policy.js'
import type {Operation, PlanStep, Precondition} from '../planner/plan-types.js'
import {refOf} from '../planner/refs.js'
import {markManaged} from '../planner/retarget.js'
import {waypointServable} from '../planner/retarget/targets.js'
import {objectFor} from './shared.js'
import type {StepKind} from './types.js'
import {podTemplateOrPod} from '../planner/vocab.js'
import {byCodePoint} from '../planner/order.js'
import {cloneJson} from '../planner/json.js'

export const patchNetworkPolicies: StepKind = {
  action: 'patch-network-policies',
  summary: 'Add NetworkPolicies admitting HBONE 15008 and kubelet probes (E25)',
  preparesOnly: true,
  writes: {apply: ['networking.k8s.io/NetworkPolicy']},
  plan: ({migrating, inventory, snapshot, ns, waypointRequired, options}) =>
    migrating ? networkPolicyStep(inventory, snapshot, ns, waypointRequired ? options.waypointName : undefined) : {},
}

/** The pods (by workload) NetworkPolicies are evaluated against. */
function podEndpoints(inventory: Inventory, snapshot: SourceSnapshot): PodEndpoint[] {
  const out: PodEndpoint[] = []
  for (const w of inventory.workloads) {
    if (w.traits.includes('host-network')) continue
    const obj = objectFor(snapshot, w.ref)
    const template = obj && podTemplateOrPod(obj)
    if (!template) continue
    out.push(podEndpoint(`${w.ref.kind}/${w.ref.name}`, {labels: w.podLabels}, template.spec))
  }
  return out
}

/**
 * One additive NetworkPolicy per original policy whose rules would lose their peers: same podSelector,
 * the same `from` on TCP 15008 (ambient peers and waypoints arrive there), and 169.254.7.127/32 on the
 * probed ports. NetworkPolicies only add up, so nothing the original denies becomes allowed except
 * HBONE from the peers it already admitted, and probes.
 *
 * With a waypoint (`waypointName`): the pods behind it receive HBONE from the waypoint's pods, so every
 * allowance for them also admits those pods on 15008; and when a policy selects the waypoint's own pods
 * (a default-deny), one more allowance admits on 15008 the callers the pods behind it admitted.
 */
function networkPolicyStep(
  inventory: Inventory,
  snapshot: SourceSnapshot,
  planName: string,
  waypointName?: string,
): {step?: PlanStep; findings: Finding[]} {
  const ns = inventory.namespace
  const policies = snapshot.objects.filter(
    (o) => o.kind === 'NetworkPolicy' && o.apiVersion.startsWith('networking.k8s.io/') && o.metadata.namespace === ns,
  )
  if (policies.length === 0) return {findings: []}
  const pods = podEndpoints(inventory, snapshot)
  const issues = analyzeNetworkPolicies(policies, pods)
  const byName = new Map(policies.map((p) => [p.metadata.name, p]))
  const rulesFor = new Map<string, unknown[]>()
  const add = (policy: string, rule: unknown) => {
    const list = rulesFor.get(policy) ?? []
    if (!list.some((r) => JSON.stringify(r) === JSON.stringify(rule))) list.push(rule)
    rulesFor.set(policy, list)
  }
  for (const issue of issues) {
    if (issue.kind === 'hbone-blocked') {
      const policy = byName.get(issue.policies[0]!)
      const original = policy?.spec?.ingress?.[issue.rule ?? 0]
      add(issue.policies[0]!, {
        ...(original?.from ? {from: original.from} : {}),
        ports: [{protocol: 'TCP', port: HBONE_PORT}],
      })
    } else {
      for (const name of issue.policies)
        add(name, {
          from: [{ipBlock: {cidr: `${PROBE_SOURCE_V4}/32`}}],
          ...(issue.port === undefined ? {} : {ports: [{protocol: 'TCP', port: issue.port}]}),
        })
    }
  }
  const details = issues.map((i) => i.detail)
  const findings: Finding[] = []
  const extra: KubeObject[] = []
  if (waypointName) {
    const waypoint = waypointAllowances(inventory, policies, pods, waypointName, planName)
    for (const [policy, rule] of waypoint.rules) add(policy, rule)
    details.push(...waypoint.details)
    findings.push(...waypoint.findings)
    if (waypoint.object) extra.push(waypoint.object)
  }
  if (rulesFor.size === 0 && extra.length === 0) return {findings}
  const created: KubeObject[] = [
    ...[...rulesFor.entries()]
      .sort(([a], [b]) => byCodePoint(a, b))
      .map(([name, ingress]) =>
        ingressAllowance(
          {
            name: `${name}-ambient`.slice(0, 253),
            namespace: ns,
            complements: name,
            podSelector: byName.get(name)?.spec?.podSelector ?? {},
            ingress,
          },
          planName,
        ),
      ),
    ...extra,
  ]
  const step: PlanStep = {
    id: 'patch-network-policies',
    action: 'patch-network-policies',
    description: `Before any traffic moves, add ${created.length} NetworkPolic${created.length === 1 ? 'y' : 'ies'} next to the existing ones: ${details.join('; ')}. Ambient peers and waypoints reach pods on TCP ${HBONE_PORT}, and kubelet probes come from ${PROBE_SOURCE_V4} once pods are captured; NetworkPolicies add up, so the new ones admit exactly that and nothing else.`,
    preconditions: created.map((o): Precondition => ({check: 'object-absent-or-ours', ref: refOf(o)})),
    operations: created.map((object): Operation => ({op: 'apply', object})),
    verify: [{check: 'objects-present', refs: created.map(refOf)}],
    undo: {
      description: 'Delete the NetworkPolicies this step added.',
      operations: created.map((object): Operation => ({op: 'delete', ref: refOf(object)})),
    },
  }
  return {step, findings}
}

/** An ingress-only NetworkPolicy that adds `ingress` for the pods `podSelector` selects, next to the policy it complements. */
function ingressAllowance(
  a: {name: string; namespace: string; complements: string; podSelector: unknown; ingress: unknown[]},
  planName: string,
): KubeObject {
  return markManaged(
    {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: {name: a.name, namespace: a.namespace, annotations: {'mesh-migrate.io/complements': a.complements}},
      spec: {podSelector: cloneJson(a.podSelector), policyTypes: ['Ingress'], ingress: a.ingress},
    },
    planName,
  )
}

/** Name of the allowance admitting HBONE to the waypoint's own pods. */
function waypointAllowanceName(waypointName: string): string {
  return `${waypointName}-waypoint-ambient`
}

/**
 * What NetworkPolicies need once a waypoint fronts the namespace's Services (DOMAIN §1.3, §3.14):
 * - the pods behind it are reached on TCP 15008 from the waypoint's pods (the waypoint does not keep the
 *   caller's IP): each policy with rules for such a pod gets a rule admitting the waypoint's pods on 15008;
 * - the waypoint's pods are reached on TCP 15008 by the callers: when a policy selects them (a default-deny
 *   with `podSelector: {}`), an allowance selecting them admits on 15008 every peer that the pods behind it
 *   admitted (from everywhere if one of them admitted everyone or is selected by no policy).
 */
function waypointAllowances(
  inventory: Inventory,
  policies: KubeObject[],
  pods: PodEndpoint[],
  waypointName: string,
  planName: string,
): {rules: [string, unknown][]; details: string[]; findings: Finding[]; object?: KubeObject} {
  const ns = inventory.namespace
  const namespaceLabels = {...inventory.namespaceState.labels, 'kubernetes.io/metadata.name': ns}
  const labels = waypointPodLabels(waypointName)
  const peer = {labels, namespace: ns, namespaceLabels}
  const hbone = {protocol: 'TCP', port: HBONE_PORT}
  const behind = new Set(inventory.services.filter(waypointServable).flatMap((s) => s.workloads))
  const skipped = new Set(
    inventory.workloads.filter((w) => w.traits.includes('waypoint')).map((w) => `${w.ref.kind}/${w.ref.name}`),
  )
  const rules: [string, unknown][] = []
  const details: string[] = []
  const findings: Finding[] = []
  const callers: unknown[] = []
  let fromEverywhere = false
  const reached: string[] = []
  const restricting = new Set<string>()
  for (const pod of pods) {
    if (skipped.has(pod.name) || !behind.has(pod.name.slice(pod.name.indexOf('/') + 1))) continue
    if (!policies.some((p) => affectsIngress(p) && selectsPod(p, pod.labels))) {
      fromEverywhere = true
      continue
    }
    const selecting = rulesSelecting(policies, pod)
    if (selecting.length === 0) continue // nothing reaches it today, nothing through the waypoint either
    for (const r of selecting) {
      if (ruleFromEverywhere(r.rule)) fromEverywhere = true
      else
        for (const p of r.rule.from ?? [])
          if (!callers.some((c) => JSON.stringify(c) === JSON.stringify(p))) callers.push(cloneJson(p))
    }
    // A rule admitting every source gets (or has) 15008 from every source too, the waypoint's pods included.
    if (selecting.some((r) => ruleFromEverywhere(r.rule)) || rulesAdmitPodOnPort(selecting, pod, HBONE_PORT, peer))
      continue
    for (const name of [...new Set(selecting.map((r) => r.policy.metadata.name))].sort()) {
      rules.push([name, {from: [waypointPeer(waypointName)], ports: [hbone]}])
      restricting.add(name)
    }
    reached.push(pod.name)
  }
  if (reached.length > 0) {
    details.push(
      `the waypoint ${waypointName} reaches ${reached.join(', ')} on TCP ${HBONE_PORT} from its own pods, which ${[...restricting].sort().join(', ')} do${restricting.size === 1 ? 'es' : ''} not admit`,
    )
    findings.push(
      finding(
        'NetworkPolicySeesWaypoint',
        undefined,
        {restricting: [...restricting].sort(), hBONEPORT: HBONE_PORT, reached},
        {id: `E25/waypoint-peer/${ns}`, severity: 'warning'},
      ),
    )
  }
  const selectingWaypoint = policies
    .filter((p) => affectsIngress(p) && selectsPod(p, labels))
    .map((p) => p.metadata.name)
    .sort()
  if (selectingWaypoint.length === 0 || (!fromEverywhere && callers.length === 0)) return {rules, details, findings}
  const waypointPod: PodEndpoint = {
    name: `waypoint ${waypointName}`,
    labels,
    ports: [{containerPort: HBONE_PORT, name: 'mesh'}],
    probes: [],
  }
  if (
    rulesSelecting(policies, waypointPod).some(
      (r) => ruleFromEverywhere(r.rule) && ruleAdmitsPort(r.rule, HBONE_PORT, waypointPod),
    )
  )
    return {rules, details, findings}
  const object = ingressAllowance(
    {
      name: waypointAllowanceName(waypointName),
      namespace: ns,
      complements: selectingWaypoint.join(','),
      podSelector: waypointPeer(waypointName).podSelector,
      ingress: [{...(fromEverywhere ? {} : {from: callers}), ports: [hbone]}],
    },
    planName,
  )
  details.push(
    `${selectingWaypoint.join(', ')} select${selectingWaypoint.length === 1 ? 's' : ''} the waypoint's own pods (gateway.networking.k8s.io/gateway-name=${waypointName}), which callers reach on TCP ${HBONE_PORT}: ${object.metadata.name} admits ${fromEverywhere ? 'every source' : 'the peers the pods behind the waypoint admit'} there`,
  )
  return {rules, details, findings, object}
}
