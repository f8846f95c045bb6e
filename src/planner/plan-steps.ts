// Steps beyond the core label switch (issue 5 §2–§3): NetworkPolicy allowances (E25), the HTTPRoute swap
// (E26), keeping opted-out pods out of ambient (E5, E8), pinning injected gateways (E7), removing pod-level
// opt-ins (E4), and the bypass-prevention DENY (DOMAIN §3.1 recipe). Pure.
import {cleanObject, objectFingerprint} from './canonical.js'
import type {Finding, Inventory, KubeObject, ObjectRef, SourceSnapshot, WorkloadItem} from './model.js'
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
} from './network-policy.js'
import type {Operation, PlanStep, Precondition} from './plan-types.js'
import {formatRef, refKey, refOf} from './refs.js'
import {markManaged} from './retarget.js'
import {waypointServable} from './retarget/targets.js'
import {convertVirtualServices} from './routes.js'
import {waypointPrincipal} from './waypoint.js'

export const DATAPLANE_MODE_LABEL = 'istio.io/dataplane-mode'
export const SIDECAR_INJECT_LABEL = 'sidecar.istio.io/inject'
export const REVISION_LABEL = 'istio.io/rev'

const TEMPLATE_KINDS = new Set(['Deployment', 'StatefulSet', 'DaemonSet', 'ReplicaSet', 'CronJob'])

function objectFor(snapshot: SourceSnapshot, ref: ObjectRef): KubeObject | undefined {
  const key = refKey(ref)
  return snapshot.objects.find((o) => refKey(refOf(o)) === key)
}

function templateOf(obj: KubeObject): {metadata?: {labels?: Record<string, string>}; spec?: unknown} | undefined {
  return obj.kind === 'Pod' ? {metadata: obj.metadata as {labels?: Record<string, string>}, spec: obj.spec} : obj.kind === 'CronJob' ? obj.spec?.jobTemplate?.spec?.template : obj.spec?.template
}

// ---------------------------------------------------------------------------------------------
// E25: NetworkPolicies that would block HBONE or kubelet probes once the namespace is ambient

/** The pods (by workload) NetworkPolicies are evaluated against. */
export function podEndpoints(inventory: Inventory, snapshot: SourceSnapshot): PodEndpoint[] {
  const out: PodEndpoint[] = []
  for (const w of inventory.workloads) {
    if (w.traits.includes('host-network')) continue
    const obj = objectFor(snapshot, w.ref)
    const template = obj && templateOf(obj)
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
export function networkPolicyStep(inventory: Inventory, snapshot: SourceSnapshot, planName: string, waypointName?: string): {step?: PlanStep; findings: Finding[]} {
  const ns = inventory.namespace
  const policies = snapshot.objects.filter((o) => o.kind === 'NetworkPolicy' && o.apiVersion.startsWith('networking.k8s.io/') && o.metadata.namespace === ns)
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
      add(issue.policies[0]!, {...(original?.from ? {from: original.from} : {}), ports: [{protocol: 'TCP', port: HBONE_PORT}]})
    } else {
      for (const name of issue.policies) add(name, {from: [{ipBlock: {cidr: `${PROBE_SOURCE_V4}/32`}}], ...(issue.port === undefined ? {} : {ports: [{protocol: 'TCP', port: issue.port}]})})
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
    ...[...rulesFor.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([name, ingress]) =>
      ingressAllowance({name: `${name}-ambient`.slice(0, 253), namespace: ns, complements: name, podSelector: byName.get(name)?.spec?.podSelector ?? {}, ingress}, planName),
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
    undo: {description: 'Delete the NetworkPolicies this step added.', operations: created.map((object): Operation => ({op: 'delete', ref: refOf(object)}))},
  }
  return {step, findings}
}

/** An ingress-only NetworkPolicy that adds `ingress` for the pods `podSelector` selects, next to the policy it complements. */
function ingressAllowance(a: {name: string; namespace: string; complements: string; podSelector: unknown; ingress: unknown[]}, planName: string): KubeObject {
  return markManaged({
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: {name: a.name, namespace: a.namespace, annotations: {'mesh-migrate.io/complements': a.complements}},
    spec: {podSelector: structuredClone(a.podSelector), policyTypes: ['Ingress'], ingress: a.ingress},
  }, planName)
}

/** Name of the allowance admitting HBONE to the waypoint's own pods. */
export function waypointAllowanceName(waypointName: string): string {
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
  const skipped = new Set(inventory.workloads.filter((w) => w.traits.includes('waypoint')).map((w) => `${w.ref.kind}/${w.ref.name}`))
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
      else for (const p of r.rule.from ?? []) if (!callers.some((c) => JSON.stringify(c) === JSON.stringify(p))) callers.push(structuredClone(p))
    }
    // A rule admitting every source gets (or has) 15008 from every source too, the waypoint's pods included.
    if (selecting.some((r) => ruleFromEverywhere(r.rule)) || rulesAdmitPodOnPort(selecting, pod, HBONE_PORT, peer)) continue
    for (const name of [...new Set(selecting.map((r) => r.policy.metadata.name))].sort()) {
      rules.push([name, {from: [waypointPeer(waypointName)], ports: [hbone]}])
      restricting.add(name)
    }
    reached.push(pod.name)
  }
  if (reached.length > 0) {
    details.push(`the waypoint ${waypointName} reaches ${reached.join(', ')} on TCP ${HBONE_PORT} from its own pods, which ${[...restricting].sort().join(', ')} do${restricting.size === 1 ? 'es' : ''} not admit`)
    findings.push({
      id: `E25/waypoint-peer/${ns}`,
      code: 'NetworkPolicySeesWaypoint',
      severity: 'warning',
      message: `For traffic through the waypoint, NetworkPolicy sees the waypoint's pods, not the caller: once ${[...restricting].sort().join(', ')} admit the waypoint on TCP ${HBONE_PORT}, they no longer tell apart the callers the waypoint forwards to ${reached.join(', ')}.`,
      fix: 'Restrict callers with AuthorizationPolicies (the waypoint enforces them with the caller\'s identity) where the NetworkPolicies did it.',
    })
  }
  const selectingWaypoint = policies.filter((p) => affectsIngress(p) && selectsPod(p, labels)).map((p) => p.metadata.name).sort()
  if (selectingWaypoint.length === 0 || (!fromEverywhere && callers.length === 0)) return {rules, details, findings}
  const waypointPod: PodEndpoint = {name: `waypoint ${waypointName}`, labels, ports: [{containerPort: HBONE_PORT, name: 'mesh'}], probes: []}
  if (rulesSelecting(policies, waypointPod).some((r) => ruleFromEverywhere(r.rule) && ruleAdmitsPort(r.rule, HBONE_PORT, waypointPod))) return {rules, details, findings}
  const object = ingressAllowance({
    name: waypointAllowanceName(waypointName),
    namespace: ns,
    complements: selectingWaypoint.join(','),
    podSelector: waypointPeer(waypointName).podSelector,
    ingress: [{...(fromEverywhere ? {} : {from: callers}), ports: [hbone]}],
  }, planName)
  details.push(`${selectingWaypoint.join(', ')} select${selectingWaypoint.length === 1 ? 's' : ''} the waypoint's own pods (gateway.networking.k8s.io/gateway-name=${waypointName}), which callers reach on TCP ${HBONE_PORT}: ${object.metadata.name} admits ${fromEverywhere ? 'every source' : 'the peers the pods behind the waypoint admit'} there`)
  return {rules, details, findings, object}
}

// ---------------------------------------------------------------------------------------------
// E26: VirtualServices → HTTPRoutes in one step

export function swapRoutesStep(inventory: Inventory, snapshot: SourceSnapshot, planName: string): {step?: PlanStep; findings: Finding[]} {
  const ns = inventory.namespace
  const wanted = new Set(inventory.objects.filter((i) => i.ref.kind === 'VirtualService' && i.ref.namespace === ns && i.action === 'retarget').map((i) => refKey(i.ref)))
  if (wanted.size === 0) return {findings: []}
  const local = (kind: string) => snapshot.objects.filter((o) => o.kind === kind && o.metadata.namespace === ns)
  const conversion = convertVirtualServices({
    namespace: ns,
    virtualServices: local('VirtualService').filter((o) => wanted.has(refKey(refOf(o)))),
    destinationRules: snapshot.objects.filter((o) => o.kind === 'DestinationRule' && o.apiVersion.startsWith('networking.istio.io/')),
    services: local('Service').filter((o) => o.apiVersion === 'v1'),
  })
  const findings = [...conversion.findings]
  for (const kept of conversion.kept) {
    findings.push({
      id: `routes-kept/${kept.ref.namespace}/${kept.ref.name}`,
      code: 'VirtualServiceKept',
      severity: 'info',
      ref: kept.ref,
      message: `VirtualService ${kept.ref.name} stays (the waypoint applies it; VirtualService on waypoints is Alpha): ${kept.reasons.join('; ')}`,
    })
  }
  if (conversion.converted.length === 0) return {findings}
  const created = [...conversion.versionServices, ...conversion.httpRoutes].map((o) => markManaged(o, planName))
  const deleted = conversion.converted.map((ref) => objectFor(snapshot, ref)).filter((o): o is KubeObject => o !== undefined).map(cleanObject)
  const step: PlanStep = {
    id: 'swap-routes',
    action: 'swap-routes',
    description: `Replace ${deleted.length} VirtualService(s) with Gateway API routes the waypoint applies (GAMMA, the Service as parent): create ${created.map((o) => `${o.kind} ${o.metadata.name}`).join(', ')} and delete ${deleted.map((o) => o.metadata.name).join(', ')} in the same step — a VirtualService and an HTTPRoute must never serve one host at once (E26). Remaining sidecar callers execute the HTTPRoutes client-side, ambient callers get them from the waypoint.`,
    preconditions: [
      ...deleted.map((o): Precondition => ({check: 'object-unchanged', ref: refOf(o), fingerprint: objectFingerprint(o)})),
      ...created.map((o): Precondition => ({check: 'object-absent-or-ours', ref: refOf(o)})),
    ],
    operations: [...created.map((object): Operation => ({op: 'apply', object})), ...deleted.map((o): Operation => ({op: 'delete', ref: refOf(o), object: o}))],
    verify: [
      {check: 'objects-present', refs: created.map(refOf)},
      {check: 'objects-absent', refs: deleted.map(refOf)},
    ],
    undo: {
      description: 'Re-create the VirtualServices from the copies stored here, then delete the routes and Services this step created.',
      operations: [...deleted.map((object): Operation => ({op: 'apply', object})), ...created.map((object): Operation => ({op: 'delete', ref: refOf(object)}))],
    },
  }
  return {step, findings}
}

// ---------------------------------------------------------------------------------------------
// E5 / E8: workloads that are outside the mesh today stay outside once the namespace is ambient

export function optOutStep(inventory: Inventory, snapshot: SourceSnapshot): {step?: PlanStep; optedOut: WorkloadItem[]; findings: Finding[]} {
  const ops: Operation[] = []
  const undo: Operation[] = []
  const optedOut: WorkloadItem[] = []
  const findings: Finding[] = []
  for (const w of inventory.workloads) {
    const t = new Set(w.traits)
    if (t.has('dataplane-none') || t.has('host-network') || t.has('waypoint')) continue
    const outsideToday = w.proxy === 'none' && t.has('inject-opt-out')
    if (!outsideToday && !t.has('kube-gateway')) continue
    if (t.has('kube-gateway')) {
      // Class-istio gateway pods come from a Gateway object; istiod propagates its labels to them (E8).
      const gatewayName = w.podLabels['gateway.networking.k8s.io/gateway-name']
      if (!gatewayName) continue
      const ref: ObjectRef = {apiVersion: 'gateway.networking.k8s.io/v1', kind: 'Gateway', namespace: inventory.namespace, name: gatewayName}
      const previous = objectFor(snapshot, ref)?.metadata.labels?.[DATAPLANE_MODE_LABEL] ?? null
      ops.push({op: 'label', ref, labels: {[DATAPLANE_MODE_LABEL]: 'none'}})
      undo.push({op: 'label', ref, labels: {[DATAPLANE_MODE_LABEL]: previous}})
      optedOut.push(w)
      continue
    }
    if (w.ref.kind === 'Pod') {
      ops.push({op: 'label', ref: w.ref, labels: {[DATAPLANE_MODE_LABEL]: 'none'}})
      undo.push({op: 'label', ref: w.ref, labels: {[DATAPLANE_MODE_LABEL]: null}})
      optedOut.push(w)
    } else if (TEMPLATE_KINDS.has(w.ref.kind)) {
      ops.push({op: 'template-labels', ref: w.ref, labels: {[DATAPLANE_MODE_LABEL]: 'none'}})
      undo.push({op: 'template-labels', ref: w.ref, labels: {[DATAPLANE_MODE_LABEL]: null}})
      optedOut.push(w)
    } else {
      findings.push({
        id: `E5/opt-out-manual/${w.ref.kind}/${w.ref.name}`,
        code: 'OptOutManual',
        severity: 'warning',
        ref: w.ref,
        message: `${formatRef(w.ref)} is outside the mesh (sidecar.istio.io/inject=false) and will be captured by ztunnel when the namespace becomes ambient; its pod template cannot be patched by the tool (${w.ref.kind}).`,
        fix: 'Add the label istio.io/dataplane-mode=none to its pods yourself before enable-ambient, or accept that it joins the mesh.',
      })
    }
  }
  if (ops.length === 0) return {optedOut, findings}
  return {
    optedOut,
    findings,
    step: {
      id: 'opt-out-workloads',
      action: 'opt-out-workloads',
      description: `Keep ${optedOut.length} workload(s) that are outside the mesh today outside it once the namespace is ambient, by labelling their pods istio.io/dataplane-mode=none (the ambient equivalent of sidecar.istio.io/inject=false): ${optedOut.map((w) => formatRef(w.ref)).join(', ')}. Template changes roll their pods; without this step ztunnel would capture them the moment the namespace is labelled (E5, E8). Pass --opted-out enroll to let them join instead.`,
      preconditions: ops.map((op): Precondition => ({check: 'object-present', ref: op.op === 'apply' ? refOf(op.object) : op.ref})),
      operations: ops,
      // A CronJob's template change reaches pods only at its next run: nothing to wait for now.
      verify: [{check: 'pods-opted-out', refs: optedOut.filter((w) => w.ref.kind !== 'CronJob').map((w) => w.ref)}],
      undo: {description: 'Remove the istio.io/dataplane-mode=none labels this step added.', operations: undo},
    },
  }
}

// ---------------------------------------------------------------------------------------------
// E7: injected gateways pinned to the namespace's revision before it loses istio.io/rev

export function gatewayPinOperations(inventory: Inventory, snapshot: SourceSnapshot): {ops: Operation[]; undo: Operation[]; pinned: WorkloadItem[]} {
  const revision = inventory.namespaceState.revision
  const ops: Operation[] = []
  const undo: Operation[] = []
  const pinned: WorkloadItem[] = []
  if (!revision || !inventory.namespaceState.sidecarLabels.some((l) => l.key === REVISION_LABEL)) return {ops, undo, pinned}
  for (const w of inventory.workloads) {
    if (!w.traits.includes('injected-gateway') || !TEMPLATE_KINDS.has(w.ref.kind)) continue
    const template = templateOf(objectFor(snapshot, w.ref) ?? ({} as KubeObject))
    if (template?.metadata?.labels?.[REVISION_LABEL]) continue
    ops.push({op: 'template-labels', ref: w.ref, labels: {[REVISION_LABEL]: revision}})
    undo.push({op: 'template-labels', ref: w.ref, labels: {[REVISION_LABEL]: null}})
    pinned.push(w)
  }
  return {ops, undo, pinned}
}

// ---------------------------------------------------------------------------------------------
// E4: pod-level opt-ins removed from templates (the template change rolls the workload)

export function podOptInOperations(inventory: Inventory, snapshot: SourceSnapshot): {ops: Operation[]; undo: Operation[]; workloads: WorkloadItem[]} {
  const ops: Operation[] = []
  const undo: Operation[] = []
  const workloads: WorkloadItem[] = []
  for (const w of inventory.workloads) {
    const t = new Set(w.traits)
    // dataplane-none: the workload stays out of ambient; without its opt-in it would lose its sidecar and leave the mesh.
    if (!t.has('pod-opt-in') || t.has('manual-injection') || t.has('injected-gateway') || t.has('dataplane-none') || !TEMPLATE_KINDS.has(w.ref.kind)) continue
    const labels = templateOf(objectFor(snapshot, w.ref) ?? ({} as KubeObject))?.metadata?.labels ?? {}
    const change: Record<string, string | null> = {}
    const restore: Record<string, string | null> = {}
    if (labels[SIDECAR_INJECT_LABEL] === 'true') {
      change[SIDECAR_INJECT_LABEL] = null
      restore[SIDECAR_INJECT_LABEL] = 'true'
    }
    if (labels[REVISION_LABEL]) {
      change[REVISION_LABEL] = null
      restore[REVISION_LABEL] = labels[REVISION_LABEL]
    }
    if (Object.keys(change).length === 0) continue
    ops.push({op: 'template-labels', ref: w.ref, labels: change})
    undo.push({op: 'template-labels', ref: w.ref, labels: restore})
    workloads.push(w)
  }
  return {ops, undo, workloads}
}

// ---------------------------------------------------------------------------------------------
// The bypass-prevention DENY (DOMAIN §3.1 recipe), optional

export function denyBypassStep(inventory: Inventory, waypointName: string, planName: string): {step?: PlanStep; findings: Finding[]} {
  const ns = inventory.namespace
  const principal = waypointPrincipal(ns, waypointName)
  const findings: Finding[] = []
  const policies: KubeObject[] = []
  for (const svc of inventory.services) {
    if (!svc.selector || Object.keys(svc.selector).length === 0 || svc.labels?.['gateway.istio.io/managed']) continue
    if (svc.headless) {
      findings.push({
        id: `deny-bypass-headless/${ns}/${svc.ref.name}`,
        code: 'BypassDenyHeadless',
        severity: 'warning',
        ref: svc.ref,
        message: `No bypass-prevention DENY for headless Service ${svc.ref.name}: its pods are reached by pod IP (StatefulSet peers, scrapers), which never goes through a service waypoint, so the DENY would cut them off (E9).`,
      })
      continue
    }
    // The DENY selects pods, not a Service: pods that are also behind a headless Service (or StatefulSet pods,
    // which their peers address directly) would lose that pod-addressed traffic too (E9).
    const podAddressed = inventory.services.filter((s) => s.headless && s.workloads.some((w) => svc.workloads.includes(w))).map((s) => s.ref.name)
    const statefulSets = inventory.workloads.filter((w) => w.ref.kind === 'StatefulSet' && svc.workloads.includes(w.ref.name)).map((w) => w.ref.name)
    if (podAddressed.length > 0 || statefulSets.length > 0) {
      const why = podAddressed.length > 0 ? `headless Service ${podAddressed.sort().join(', ')}` : `StatefulSet ${statefulSets.sort().join(', ')}`
      findings.push({
        id: `deny-bypass-headless/${ns}/${svc.ref.name}`,
        code: 'BypassDenyHeadless',
        severity: 'warning',
        ref: svc.ref,
        message: `No bypass-prevention DENY for Service ${svc.ref.name}: its pods are also reached by pod IP (${why}), which never goes through a service waypoint; a DENY selecting them would cut that traffic off (E9).`,
      })
      continue
    }
    policies.push({
      apiVersion: 'security.istio.io/v1',
      kind: 'AuthorizationPolicy',
      metadata: {name: `${svc.ref.name}-deny-waypoint-bypass`, namespace: ns},
      spec: {selector: {matchLabels: {...svc.selector}}, action: 'DENY', rules: [{from: [{source: {notPrincipals: [principal]}}]}]},
    })
  }
  const created = policies.map((p) => markManaged(p, planName))
  if (created.length === 0) return {findings}
  findings.push({
    id: `deny-bypass-callers/${ns}`,
    code: 'BypassDenyCallers',
    severity: 'warning',
    message: `deny-waypoint-bypass denies every caller that does not come through the waypoint ${ns}/${waypointName}: sidecar clients (they never use waypoints), out-of-mesh clients and pod-IP traffic. Apply it only once every caller is ambient.`,
    fix: 'Leave the step pending until the callers of these Services are migrated (mesh-migrate census shows which namespaces still run sidecars).',
  })
  return {
    findings,
    step: {
      id: 'deny-waypoint-bypass',
      action: 'deny-waypoint-bypass',
      description: `Deny traffic to ${created.length} workload group(s) that did not come through the waypoint (selector DENY, notPrincipals ${principal}), so L7 policies on the waypoint cannot be bypassed by addressing pods directly. Only once every caller is ambient: sidecar callers never use waypoints and would be denied.`,
      preconditions: created.map((o): Precondition => ({check: 'object-absent-or-ours', ref: refOf(o)})),
      operations: created.map((object): Operation => ({op: 'apply', object})),
      verify: [{check: 'objects-present', refs: created.map(refOf)}],
      undo: {description: 'Delete the bypass-prevention policies.', operations: created.map((object): Operation => ({op: 'delete', ref: refOf(object)}))},
    },
  }
}
