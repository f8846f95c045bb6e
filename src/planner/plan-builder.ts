// Turns an inventory into an ordered, reversible plan (SPEC §5, §6; DOMAIN §4.2–§4.3).
import {isGroupedLostFinding} from './lost-routing.js'
import {cleanObject, digestOf, objectFingerprint} from './canonical.js'
import {markHandledFindings} from './finding-handling.js'
import type {Finding, Inventory, KubeObject, ObjectRef, ServiceItem, SourceSnapshot, WorkloadItem, ZtunnelEffect} from './model.js'
import {
  type MigrationPlan,
  type Operation,
  PLAN_API_VERSION,
  PLAN_KIND,
  type PlanHazard,
  type PlanOptions,
  type PlanStep,
  type PolicyTimelineInput,
  type Precondition,
} from './plan-types.js'
import {denyBypassStep, gatewayPinOperations, networkPolicyStep, optOutStep, podOptInOperations, swapRoutesStep} from './plan-steps.js'
import {compareRefs, formatRef, refKey, refOf} from './refs.js'
import {allowsNothing, markManaged, planPolicyMigration, type PolicyDecision, type PolicyMigration, type PolicyPlacement} from './retarget.js'
import {sidecarLabelsToRemove} from './namespace.js'
import {simulate, unexpectedHazards} from './simulate.js'
import {ROOT_DENY_CODE} from './classify/authz.js'
import {serviceEntryVip} from './classify/service-entry.js'
import {USE_WAYPOINT_NAMESPACE_LABEL} from './classify/common.js'
import {PREFLIGHT_CHECKS} from './vocab.js'
import {waypointServable} from './retarget/targets.js'
import {buildWaypoint, isWaypointGateway, USE_WAYPOINT_LABEL, WAYPOINT_FOR_LABEL, waypointRevision} from './waypoint.js'

export const DATAPLANE_MODE_LABEL = 'istio.io/dataplane-mode'
export const INJECTION_LABEL = 'istio-injection'
export const REVISION_LABEL = 'istio.io/rev'

export interface BuildPlanInput {
  inventory: Inventory
  snapshot: SourceSnapshot
  options: PlanOptions
  /** "mesh-migrate/<version>" */
  generator: string
  /** Istio minor version ("1.28") when given by the user; the snapshot's (read from istiod) otherwise. */
  istioVersion?: string
}

const namespaceRef = (name: string): ObjectRef => ({apiVersion: 'v1', kind: 'Namespace', name})

// Restart these controllers to drop sidecars; the others are listed for a person (E4, E6, E7, E8, E9, E10).
const RESTARTABLE_KINDS = new Set(['Deployment', 'StatefulSet', 'DaemonSet'])

function hasSidecar(w: WorkloadItem): boolean {
  return w.proxy === 'sidecar' || w.proxy === 'sidecar-native' || (w.pods?.sidecar ?? 0) > 0
}

interface RestartDecision {
  restart: WorkloadItem[]
  manual: {ref: ObjectRef; reason: string}[]
  /** Workloads that end up ambient once the plan is done: what verify-dataplane checks. */
  expectAmbient: WorkloadItem[]
}

function decideRestarts(workloads: WorkloadItem[], rolledByTemplate: Set<string>, optedOut: Set<string>): RestartDecision {
  const restart: WorkloadItem[] = []
  const manual: {ref: ObjectRef; reason: string}[] = []
  const expectAmbient: WorkloadItem[] = []
  for (const w of workloads) {
    const t = new Set(w.traits)
    // Never touched: their pods are not meant to become ambient app pods.
    if (t.has('waypoint') || t.has('host-network') || t.has('dataplane-none') || t.has('injected-gateway') || t.has('kube-gateway')) continue
    if (optedOut.has(refKey(w.ref))) continue
    if (!hasSidecar(w)) {
      if (w.proxy !== 'none' || t.has('inject-opt-out')) expectAmbient.push(w)
      continue
    }
    // E4: removing the pod-level opt-in from the template rolls the workload like a restart.
    if (rolledByTemplate.has(refKey(w.ref))) {
      expectAmbient.push(w)
      continue
    }
    if (t.has('pod-opt-in') || t.has('manual-injection')) {
      manual.push({ref: w.ref, reason: t.has('manual-injection')
        ? 'the pod template itself contains the sidecar (istioctl kube-inject): remove the injected containers, volumes and annotations from the template'
        : 'the pod template opts in to injection (sidecar.istio.io/inject=true or istio.io/rev): remove that label from the template, then restart it'})
      continue
    }
    if (t.has('job') || t.has('bare-pod')) {
      manual.push({ref: w.ref, reason: t.has('job')
        ? 'Jobs cannot be restarted: running pods keep their sidecar until they complete; the next run starts without one'
        : 'a bare Pod has no controller to restart it: delete and re-create it from its source'})
      continue
    }
    if (t.has('on-delete') || t.has('partitioned')) {
      manual.push({ref: w.ref, reason: t.has('on-delete')
        ? 'updateStrategy OnDelete: a rollout restart changes nothing; delete its pods one at a time'
        : 'RollingUpdate partition > 0: pods below the partition keep their sidecar; lower the partition or delete them'})
      continue
    }
    if (RESTARTABLE_KINDS.has(w.ref.kind)) {
      restart.push(w)
      expectAmbient.push(w)
    } else {
      manual.push({ref: w.ref, reason: `${w.ref.kind} has no rollout restart: recreate its pods`})
    }
  }
  return {restart, manual, expectAmbient}
}

function labelPrecondition(labels: Record<string, string>, keys: string[]): Precondition {
  return {check: 'namespace-labels', labels: Object.fromEntries(keys.map((k) => [k, labels[k] ?? null]))}
}

/** sha256 over what the plan was computed from (SPEC §5 spec.observed.fingerprint). */
export function inventoryFingerprint(inventory: Inventory, snapshot: SourceSnapshot): string {
  const relevant = new Set([...inventory.objects.map((o) => refKey(o.ref)), ...inventory.workloads.map((w) => refKey(w.ref)), ...inventory.services.map((s) => refKey(s.ref))])
  const inputs = snapshot.objects
    .filter((o) => relevant.has(refKey(refOf(o))))
    .map((o) => [refKey(refOf(o)), objectFingerprint(o)])
    .sort(([a], [b]) => (a! < b! ? -1 : a! > b! ? 1 : 0))
  const pods = inventory.workloads.map((w) => [refKey(w.ref), w.proxy, w.pods ?? null])
  return digestOf({namespaceLabels: inventory.namespaceState.labels, inputs, pods})
}

/** What the simulation needs to know about each policy decision (recorded in the plan for show --timeline). */
export function timelinePolicies(namespace: string, decisions: PolicyDecision[]): PolicyTimelineInput[] {
  const createdIn = (d: PolicyDecision, role: PolicyPlacement['role']) => d.created.find((c) => c.role === role)?.createdIn
  // A targetRefs ALLOW that exists already applies to no workload's selector, but it is part of the waypoint's ALLOW set.
  const waypointAllow = (p: PolicyPlacement) => p.action === 'ALLOW' && !p.dryRun && p.scope === 'targetRefs' && (p.serviceWorkloads?.length ?? 0) > 0
  return decisions
    .filter((d) => d.original.workloads.length > 0 || waypointAllow(d.original))
    .map((d): PolicyTimelineInput => {
      const key = d.ref.namespace && d.ref.namespace !== namespace ? `${d.ref.kind}/${d.ref.namespace}/${d.ref.name}` : `${d.ref.kind}/${d.ref.name}`
      const ztunnel: ZtunnelEffect = d.original.ztunnel ?? (d.ref.kind === 'AuthorizationPolicy' ? 'as-written' : 'ignored')
      const out: PolicyTimelineInput = {key, ztunnel, workloads: [...d.original.workloads].sort()}
      if (d.original.action) out.action = d.original.action
      if (d.original.deletedIn) out.deletedIn = d.original.deletedIn
      if (d.original.dryRun) out.dryRun = true
      if (d.original.appliedByWaypoint) out.appliedByWaypoint = true
      if (d.original.action === 'ALLOW' && allowsNothing(d.original.object)) out.allowsNothing = true
      const copy = d.created.find((c) => c.role === 'waypoint-copy')
      const atWaypoint = copy && waypointAllow(copy) ? copy : waypointAllow(d.original) ? d.original : undefined
      if (atWaypoint) out.waypointAllowFor = [...atWaypoint.serviceWorkloads!].sort()
      const w = createdIn(d, 'waypoint-copy')
      const c = createdIn(d, 'ztunnel-companion')
      const l4 = createdIn(d, 'ztunnel-l4')
      if (w) out.waypointCopyIn = w
      if (c) out.companionIn = c
      if (l4) out.l4PartIn = l4
      // E22: the ztunnel-l4 object of a rewrite is the whole policy in a form ztunnel enforces, not a projection.
      if (l4 && d.disposition === 'rewrite') out.rewrittenIn = l4
      if (d.disposition === 'carry-keep') out.identityKeyed = true
      return out
    })
    .sort((a, b) => a.key.localeCompare(b.key))
}


/** Blocker codes --accept-hazard can accept besides the simulation's hazards. */
const ACCEPTABLE_BLOCKERS = new Set(['IST0118'])

/**
 * What --accept-lost / --accept-hazard name: exact ids, or patterns where `*` stands for any text
 * (`E11/DestinationRule/*` accepts every lost client-side DestinationRule) — a mesh can have hundreds.
 */
export function idMatcher(patterns: string[]): (id: string) => boolean {
  const exact = new Set(patterns.filter((p) => !p.includes('*')))
  const globs = patterns.filter((p) => p.includes('*')).map((p) => new RegExp(`^${p.split('*').map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`))
  return (id) => exact.has(id) || globs.some((g) => g.test(id))
}

/** What labelling the namespace istio.io/use-waypoint=<waypoint> binds (DOMAIN §1.5). */
export interface NamespaceBinding {
  /** Services the waypoint will serve: servable (cluster IP, selector, not a waypoint's own) and not labelled for another waypoint. */
  bound: ServiceItem[]
  /** Services with an istio.io/use-waypoint of their own that is not this waypoint: the namespace label does not bind them. */
  ownLabel: {service: ServiceItem; target: string}[]
}

export function namespaceBinding(inventory: Inventory, waypointName: string): NamespaceBinding {
  const ns = inventory.namespace
  const bound: ServiceItem[] = []
  const ownLabel: NamespaceBinding['ownLabel'] = []
  for (const s of [...inventory.services].sort((a, b) => a.ref.name.localeCompare(b.ref.name))) {
    if (!waypointServable(s)) continue
    const own = s.labels?.[USE_WAYPOINT_LABEL]
    const ownNs = s.labels?.[USE_WAYPOINT_NAMESPACE_LABEL] || ns
    if (own !== undefined && !(own === waypointName && ownNs === ns)) ownLabel.push({service: s, target: own === 'none' ? 'none' : `${ownNs}/${own}`})
    else bound.push(s)
  }
  return {bound, ownLabel}
}

/**
 * A waypoint Gateway the plan reuses instead of creating one: it must serve Service traffic, and in a
 * revision-labelled namespace carry that revision itself (DOMAIN §1.4, §1.8).
 */
function existingWaypointFindings(existing: KubeObject, snapshot: SourceSnapshot, nsState: Inventory['namespaceState']): Finding[] {
  const ns = existing.metadata.namespace ?? nsState.name
  const name = existing.metadata.name
  const ref = refOf(existing)
  const findings: Finding[] = []
  const own = existing.metadata.labels?.[WAYPOINT_FOR_LABEL]
  const gatewayClass = snapshot.objects.find((o) => o.kind === 'GatewayClass' && o.apiVersion.startsWith('gateway.networking.k8s.io/') && o.metadata.name === existing.spec?.gatewayClassName)
  const fromClass = gatewayClass?.metadata.labels?.[WAYPOINT_FOR_LABEL]
  const effective = own ?? fromClass ?? 'service'
  if (effective !== 'service' && effective !== 'all') {
    findings.push({
      id: `existing-waypoint/waypoint-for/${ns}/${name}`,
      code: 'ExistingWaypointTrafficType',
      severity: 'blocker',
      ref,
      message: `The plan reuses waypoint ${ns}/${name}, which is istio.io/waypoint-for=${effective}${own === undefined ? ` (from GatewayClass ${gatewayClass?.metadata.name})` : ''}: Services are not bound to it (UnsupportedTrafficType), so binding the namespace would bind no Service and the policies carried to it would never apply.`,
      fix: `kubectl label gateway ${name} -n ${ns} ${WAYPOINT_FOR_LABEL}=service --overwrite (or all), or plan with another --waypoint-name; then re-run plan.`,
    })
  }
  const revision = waypointRevision(nsState)
  const gatewayRevision = existing.metadata.labels?.[REVISION_LABEL]
  if (revision && gatewayRevision !== revision) {
    findings.push({
      id: `existing-waypoint/revision/${ns}/${name}`,
      code: 'ExistingWaypointRevision',
      severity: 'blocker',
      ref,
      message:
        gatewayRevision === undefined
          ? `The plan reuses waypoint ${ns}/${name}, which has no istio.io/rev: istiod takes the owner from the namespace's istio.io/rev=${revision}, which remove-sidecar-injection removes, so the waypoint would move to the default revision or be left unmanaged (DOMAIN §1.8).`
          : `The plan reuses waypoint ${ns}/${name}, labelled istio.io/rev=${gatewayRevision}, but the namespace's revision is ${revision}: another control plane revision manages it.`,
      fix: `kubectl label gateway ${name} -n ${ns} ${REVISION_LABEL}=${revision} --overwrite, wait until it is Programmed again, then re-run plan.`,
    })
  }
  return findings
}

/** Whether the namespace has anything to migrate: sidecar labels, or workloads that still run a sidecar. */
export function isMigrating(inventory: Inventory): boolean {
  const mode = inventory.namespaceState.mode
  return mode === 'sidecar' || mode === 'both' || inventory.workloads.some(hasSidecar)
}

export function buildPlan(input: BuildPlanInput): MigrationPlan {
  const {inventory, snapshot, options} = input
  const ns = inventory.namespace
  const nsState = inventory.namespaceState
  const labels = nsState.labels
  const steps: PlanStep[] = []
  const findings: Finding[] = [...inventory.findings]
  const nsRef = namespaceRef(ns)
  // E3: with enableNamespacesByDefault an unlabelled namespace is still injected, so removing the label
  // is not enough; istio-injection=disabled matches no webhook. Not when the namespace runs injected
  // gateways (E7): they need injection to get their proxy, so a person must decide.
  const injectionByDefault = inventory.injectionByDefault === true && !inventory.workloads.some((w) => w.traits.includes('injected-gateway'))

  const migrating = isMigrating(inventory)
  const waypointRequired = inventory.waypointRequired && migrating
  const injectedGateways = inventory.workloads.filter((w) => w.traits.includes('injected-gateway'))
  if (migrating && inventory.injectionByDefault === true && injectedGateways.length > 0) {
    // E3 + E7: the auto webhook injects every pod of an unlabelled namespace, and istio-injection=disabled
    // would also stop the injected gateways' own proxy. No label change drops the sidecars of the others.
    findings.push({
      id: `E3-E7/${ns}`,
      code: 'InjectionByDefaultWithInjectedGateway',
      severity: 'blocker',
      ref: nsRef,
      message: `Injection is enabled by default for namespaces without an injection label (E3) and ${ns} runs injected gateway(s) ${injectedGateways.map((w) => formatRef(w.ref)).join(', ')} (E7): istio-injection=disabled would leave their \`image: auto\` pods without a proxy (IST0146/IST0147), and without it the auto webhook re-injects every restarted pod, so no namespace label can remove the sidecars.`,
      fix: `Move the injected gateways to a namespace of their own (then istio-injection=disabled can stop injection in ${ns}), or turn off sidecarInjectorWebhook.enableNamespacesByDefault and label the namespaces that need sidecars; then re-run plan.`,
    })
  }

  // Waypoint: reuse a waypoint of that name if the namespace already has one.
  const existing = snapshot.objects.find((o) => o.metadata.namespace === ns && o.kind === 'Gateway' && o.metadata.name === options.waypointName)
  const waypoints: KubeObject[] = []
  let waypointRef: ObjectRef | undefined
  if (waypointRequired) {
    if (existing && !isWaypointGateway(existing)) {
      findings.push({
        id: `waypoint-name-taken/${ns}/${options.waypointName}`,
        code: 'WaypointNameTaken',
        severity: 'blocker',
        ref: refOf(existing),
        message: `Gateway ${ns}/${options.waypointName} exists and is not a waypoint (class ${existing.spec?.gatewayClassName}).`,
        fix: 'Choose another name with --waypoint-name.',
      })
    }
    if (existing && isWaypointGateway(existing)) findings.push(...existingWaypointFindings(existing, snapshot, nsState))
    const waypoint = markManaged(
      buildWaypoint({name: options.waypointName, namespace: ns, waypointFor: options.waypointFor, revision: waypointRevision(nsState)}),
      ns,
    )
    waypoints.push(waypoint)
    waypointRef = refOf(waypoint)
  }

  // What happens to every policy: waypoint copies, ztunnel companions and L4 parts, E22 rewrites (DOMAIN §3.1).
  const istioVersion = input.istioVersion ?? snapshot.istioVersion
  const policies: PolicyMigration = migrating
    ? planPolicyMigration({
        namespace: ns,
        planName: ns,
        waypointName: options.waypointName,
        rootNamespace: options.rootNamespace,
        waypointPlanned: waypointRequired,
        waypointFor: options.waypointFor,
        ...(istioVersion ? {istioVersion} : {}),
        items: inventory.objects,
        objects: snapshot.objects,
        workloads: inventory.workloads,
        services: inventory.services,
      })
    : {createBeforeBind: [], replaceAfterRestart: {delete: [], apply: []}, findings: [], decisions: []}
  findings.push(...policies.findings)

  // E5/E8: what is outside the mesh today stays outside, unless the reviewers chose to enrol it.
  const optOut = migrating && (options.optedOut ?? 'keep-out') === 'keep-out' ? optOutStep(inventory, snapshot) : {optedOut: [] as WorkloadItem[], findings: [] as Finding[]}
  findings.push(...optOut.findings)
  const optedOutKeys = new Set(optOut.optedOut.map((w) => refKey(w.ref)))
  const optIns = podOptInOperations(inventory, snapshot)
  const restarts = decideRestarts(inventory.workloads, new Set(optIns.workloads.map((w) => refKey(w.ref))), optedOutKeys)

  if (migrating) {
    steps.push({
      id: 'preflight',
      action: 'preflight',
      description: 'Read-only checks that ambient is installed and ready and that this plan may run: Istio version, ztunnel and istio-cni on every node, Gateway API CRDs and the istio-waypoint GatewayClass, HBONE-capable sidecars, blockers, NetworkPolicies admitting 15008, and RBAC for every write below.',
      preconditions: [labelPrecondition(labels, [INJECTION_LABEL, REVISION_LABEL, DATAPLANE_MODE_LABEL, USE_WAYPOINT_LABEL])],
      operations: [],
      verify: [{check: 'preflight', checks: [...PREFLIGHT_CHECKS]}],
      undo: {description: 'Nothing to undo: read-only.', operations: []},
    })
  }

  if (migrating) {
    const np = networkPolicyStep(inventory, snapshot, ns, waypointRequired ? options.waypointName : undefined)
    findings.push(...np.findings)
    if (np.step) steps.push(np.step)
  }

  if (waypointRequired && waypointRef) {
    const waypoint = waypoints[0]!
    if (!existing || !isWaypointGateway(existing)) {
      steps.push({
        id: 'create-waypoint',
        action: 'create-waypoint',
        description: `Create waypoint ${formatRef(waypointRef)} (class istio-waypoint, istio.io/waypoint-for=${options.waypointFor}${waypoint.metadata.labels?.['istio.io/rev'] ? `, istio.io/rev=${waypoint.metadata.labels['istio.io/rev']} so the namespace's revision keeps owning it after the injection label is removed` : ''}). Nothing is bound to it yet, so no traffic changes.`,
        preconditions: [{check: 'object-absent-or-ours', ref: waypointRef}],
        operations: [{op: 'apply', object: waypoint}],
        verify: [{check: 'objects-present', refs: [waypointRef]}],
        undo: {description: `Delete ${formatRef(waypointRef)} (only if it still carries this plan's annotation).`, operations: [{op: 'delete', ref: waypointRef}]},
      })
    }
    steps.push({
      id: 'wait-waypoint',
      action: 'wait-waypoint',
      description: `Wait until ${formatRef(waypointRef)} is Programmed, has status.addresses and its Deployment has an available replica. A bound waypoint that is not ready is bypassed silently, so nothing is bound before this passes.`,
      preconditions: [],
      operations: [],
      verify: [{check: 'waypoint-ready', ref: waypointRef}],
      undo: {description: 'Nothing to undo: read-only.', operations: []},
    })
  }

  // create-policies: before bind-waypoint, because from then on the waypoint carries traffic and destinations see
  // its identity; the copies are inert until then (sidecars and ztunnel ignore targetRefs) and the companions only
  // admit the waypoint. E22 rewrites need no waypoint, so the step exists without one too.
  const toCreate = policies.createBeforeBind
  if (migrating && toCreate.length > 0) {
    const carried = policies.decisions.filter((d) => d.created.some((c) => c.createdIn === 'create-policies'))
    const made = carried.flatMap((d) => d.created.filter((c) => c.createdIn === 'create-policies'))
    const short = (c: PolicyPlacement) => (c.role === 'waypoint-copy' ? `${c.ref.name} (${c.targetRefs?.[0]?.kind === 'Gateway' ? `Gateway ${c.targetRefs[0].name}` : `Service ${c.services.join(', ')}`})` : c.ref.name)
    const roles = new Set(made.map((c) => c.role))
    const companion = made.find((c) => c.role === 'ztunnel-companion')
    const why = [
      roles.has('waypoint-copy') ? 'the -waypoint copies carry the full rules to the waypoint, which sees the caller\'s identity (sidecars and ztunnel ignore targetRefs: inert until bind-waypoint)' : '',
      companion ? `the -ztunnel companions ALLOW the waypoint (${companion.object.spec.rules[0].from[0].source.principals[0]}) at the destination, which sees the waypoint instead of the caller for proxied traffic` : '',
      carried.some((d) => d.disposition === 'keep-copy')
        ? `the waypoint denies requests to a Service that none of the ALLOWs attached to it matches, so ALLOWs that stay at the destination are copied to the waypoint too (${carried.filter((d) => d.disposition === 'keep-copy').map((d) => d.ref.name).join(', ')})`
        : '',
      roles.has('ztunnel-l4') ? 'the -l4 objects are what ztunnel enforces of a policy (DENY rules it enforces as written, E22 rewrites); they change nothing while the originals exist' : '',
    ].filter((w) => w !== '')
    steps.push({
      id: 'create-policies',
      action: 'create-policies',
      description: `Before the waypoint is bound, create ${toCreate.length} polic${toCreate.length === 1 ? 'y' : 'ies'}: ${carried.map((d) => `${d.ref.name} → ${d.created.filter((c) => c.createdIn === 'create-policies').map(short).join(', ')}`).join('; ')}. ${why.join('; ').replace(/^t/, 'T')}.`,
      preconditions: [
        ...carried.map((d): Precondition => ({check: 'object-unchanged', ref: d.ref, fingerprint: objectFingerprint(d.original.object)})),
        ...toCreate.map((c): Precondition => ({check: 'object-absent-or-ours', ref: refOf(c)})),
      ],
      operations: toCreate.map((object): Operation => ({op: 'apply', object})),
      verify: [{check: 'objects-present', refs: toCreate.map(refOf)}],
      undo: {description: 'Delete exactly the policies this step created (only while they carry this plan\'s annotation).', operations: toCreate.map((object): Operation => ({op: 'delete', ref: refOf(object)}))},
    })
  }

  const binding = waypointRequired ? namespaceBinding(inventory, options.waypointName) : {bound: [], ownLabel: []}
  const boundNames = binding.bound.map((s) => s.ref.name)
  if (waypointRequired && waypointRef) {
    // Services with an istio.io/use-waypoint of their own keep it: a Service label beats the namespace label (DOMAIN §1.5).
    const copiesTo = (svc: string) =>
      policies.decisions.flatMap((d) => d.created.filter((c) => c.role === 'waypoint-copy' && c.services.includes(svc)).map((c) => c.ref.name)).sort()
    for (const {service, target} of binding.ownLabel) {
      const copies = copiesTo(service.ref.name)
      findings.push({
        id: `bind-waypoint/service-label/${ns}/${service.ref.name}`,
        code: 'ServiceUsesOwnWaypoint',
        severity: copies.length > 0 ? 'blocker' : 'warning',
        ref: service.ref,
        message: `Service ${service.ref.name} is labelled ${USE_WAYPOINT_LABEL}=${service.labels?.[USE_WAYPOINT_LABEL]}${service.labels?.[USE_WAYPOINT_NAMESPACE_LABEL] ? ` (${USE_WAYPOINT_NAMESPACE_LABEL}=${service.labels[USE_WAYPOINT_NAMESPACE_LABEL]})` : ''}: its own label beats the namespace's, so bind-waypoint does not bind it to ${formatRef(waypointRef)} (${target === 'none' ? 'it uses no waypoint' : `it stays on ${target}`})${copies.length > 0 ? `, and ${copies.join(', ')} attached to it on this waypoint would never apply` : ''}.`,
        fix: copies.length > 0
          ? `Remove the label (kubectl label service ${service.ref.name} -n ${ns} ${USE_WAYPOINT_LABEL}-) so the namespace label binds it, or carry its policies to ${target === 'none' ? 'a waypoint it uses' : target} yourself; then re-run plan.`
          : `Nothing to do if that is intended; otherwise remove the label (kubectl label service ${service.ref.name} -n ${ns} ${USE_WAYPOINT_LABEL}-) and re-run plan.`,
      })
    }
    const previous = labels[USE_WAYPOINT_LABEL] ?? null
    const previousNamespace = labels[USE_WAYPOINT_NAMESPACE_LABEL] ?? null
    // A namespace istio.io/use-waypoint-namespace would send the binding to a waypoint of that namespace.
    const change: Record<string, string | null> = {[USE_WAYPOINT_LABEL]: options.waypointName, ...(previousNamespace !== null ? {[USE_WAYPOINT_NAMESPACE_LABEL]: null} : {})}
    const restore = Object.fromEntries(Object.keys(change).map((k) => [k, labels[k] ?? null]))
    const excluded = binding.ownLabel.map((o) => o.service.ref.name)
    // ServiceEntries of the namespace without a label of their own are bound too: the waypoint is the egress waypoint
    // of those ztunnel has a VIP for (the others never reach it).
    const entries = snapshot.objects
      .filter((o) => o.kind === 'ServiceEntry' && o.apiVersion.startsWith('networking.istio.io/') && (o.metadata.namespace ?? ns) === ns && o.metadata.labels?.[USE_WAYPOINT_LABEL] === undefined)
      .filter((o) => (Array.isArray(o.spec?.hosts) ? o.spec.hosts : []).some((h: unknown) => serviceEntryVip(o, String(h), {...(istioVersion ? {istioVersion} : {})}).vip))
      .map((o) => o.metadata.name)
    const boundEntries = [...new Set(entries)].sort()
    steps.push({
      id: 'bind-waypoint',
      action: 'bind-waypoint',
      description: `Label namespace ${ns} ${USE_WAYPOINT_LABEL}=${options.waypointName}${previousNamespace !== null ? ` and remove ${USE_WAYPOINT_NAMESPACE_LABEL}=${previousNamespace} (it would point the binding at namespace ${previousNamespace})` : ''}, once the waypoint is ready (a bound waypoint that is not ready is bypassed silently): its Services are bound to the waypoint (${boundNames.join(', ') || 'none'})${excluded.length > 0 ? `, except ${excluded.join(', ')}, which carry ${USE_WAYPOINT_LABEL} of their own` : ''}${boundEntries.length > 0 ? `; so are its ServiceEntries (${boundEntries.join(', ')}): the waypoint becomes their egress waypoint` : ''}. Ambient callers start going through it; sidecar callers do not (they never use waypoints).`,
      // The readiness gate (DOMAIN §4.2): re-checked right before the label is written, not only by wait-waypoint.
      preconditions: [labelPrecondition(labels, [USE_WAYPOINT_LABEL, USE_WAYPOINT_NAMESPACE_LABEL]), {check: 'waypoint-ready', ref: waypointRef}],
      operations: [{op: 'label', ref: nsRef, labels: change}],
      verify: [
        {check: 'namespace-labels', labels: change},
        {check: 'waypoint-bound', ref: waypointRef, services: boundNames},
      ],
      undo: {
        description: previous === null && previousNamespace === null ? `Remove ${USE_WAYPOINT_LABEL} from namespace ${ns}.` : `Restore ${Object.entries(restore).map(([k, v]) => (v === null ? `no ${k}` : `${k}=${v}`)).join(', ')}.`,
        operations: [{op: 'label', ref: nsRef, labels: restore}],
      },
    })
  }

  if (migrating && waypointRequired && options.routes === 'httproute') {
    const swap = swapRoutesStep(inventory, snapshot, ns)
    findings.push(...swap.findings)
    if (swap.step) steps.push(swap.step)
  }

  if (optOut.step) steps.push(optOut.step)

  if (migrating && labels[DATAPLANE_MODE_LABEL] !== 'ambient') {
    const capturedNow = inventory.workloads.filter((w) => !hasSidecar(w) && !optedOutKeys.has(refKey(w.ref)) && !w.traits.includes('host-network') && !w.traits.includes('dataplane-none') && !w.traits.includes('waypoint'))
    const previous = labels[DATAPLANE_MODE_LABEL] ?? null
    steps.push({
      id: 'enable-ambient',
      action: 'enable-ambient',
      description: `Label namespace ${ns} istio.io/dataplane-mode=ambient. Pods with a sidecar keep it (the sidecar wins) until restarted${capturedNow.length > 0 ? `; pods without one are captured by ztunnel now, without a restart: ${capturedNow.map((w) => formatRef(w.ref)).join(', ')}` : ''}.`,
      preconditions: [labelPrecondition(labels, [DATAPLANE_MODE_LABEL])],
      operations: [{op: 'label', ref: nsRef, labels: {[DATAPLANE_MODE_LABEL]: 'ambient'}}],
      verify: [
        {check: 'namespace-labels', labels: {[DATAPLANE_MODE_LABEL]: 'ambient'}},
        {check: 'pods-captured', refs: capturedNow.map((w) => w.ref)},
      ],
      undo: {description: previous === null ? `Remove istio.io/dataplane-mode from namespace ${ns} (after sidecars are back, never before).` : `Restore istio.io/dataplane-mode=${previous}.`, operations: [{op: 'label', ref: nsRef, labels: {[DATAPLANE_MODE_LABEL]: previous}}]},
    })
  }

  // istio-injection=disabled (any value but enabled) stays: it blocks pod opt-ins too (E4, issue 10 point 6).
  const removedLabels = sidecarLabelsToRemove(nsState)
  const sidecarLabelKeys = removedLabels.map((l) => l.key)
  if (migrating && (sidecarLabelKeys.length > 0 || injectionByDefault)) {
    const change: Record<string, string | null> = {}
    for (const key of sidecarLabelKeys) change[key] = null
    // E3: with enableNamespacesByDefault an unlabelled namespace is still injected; only
    // istio-injection=disabled matches no webhook.
    if (injectionByDefault) change[INJECTION_LABEL] = 'disabled'
    const restore = Object.fromEntries(Object.keys(change).map((k) => [k, labels[k] ?? null]))
    const what = removedLabels.map((l) => `${l.key}=${l.value}`).join(' and ')
    // E7: injected gateways follow the namespace's istio.io/rev; pin them first, or they silently move to
    // the default revision (or lose injection) when the label goes.
    const pin = gatewayPinOperations(inventory, snapshot)
    steps.push({
      id: 'remove-sidecar-injection',
      action: 'remove-sidecar-injection',
      description: `${pin.pinned.length > 0 ? `Pin the injected gateway(s) ${pin.pinned.map((w) => formatRef(w.ref)).join(', ')} to revision ${nsState.revision} on their pod templates (they keep their proxy and revision), then ` : ''}${injectionByDefault ? `set istio-injection=disabled on namespace ${ns} (the injector injects unlabelled namespaces by default)` : `remove ${what} from namespace ${ns}`}: new pods get no sidecar and are captured by ztunnel. Running pods keep their sidecars until the next step restarts them.`.replace(/^[a-z]/, (c) => c.toUpperCase()),
      preconditions: [labelPrecondition(labels, Object.keys(change)), ...pin.ops.map((op): Precondition => ({check: 'object-present', ref: (op as {ref: ObjectRef}).ref}))],
      operations: [...pin.ops, {op: 'label', ref: nsRef, labels: change}],
      verify: [{check: 'namespace-labels', labels: change}],
      undo: {description: `Restore ${Object.entries(restore).map(([k, v]) => (v === null ? `no ${k}` : `${k}=${v}`)).join(', ')} exactly as before${pin.pinned.length > 0 ? ', then un-pin the gateways' : ''}.`, operations: [{op: 'label', ref: nsRef, labels: restore}, ...pin.undo]},
    })
  }

  if (migrating && (restarts.restart.length > 0 || restarts.manual.length > 0 || optIns.ops.length > 0)) {
    const refs = restarts.restart.map((w) => w.ref)
    const rolled = [...refs, ...optIns.workloads.map((w) => w.ref)].filter((r) => r.kind !== 'CronJob')
    const checked = [...refs, ...optIns.workloads.map((w) => w.ref)]
    steps.push({
      id: 'restart-workloads',
      action: 'restart-workloads',
      description: `Rollout-restart ${refs.length} workload(s) so their pods come back without sidecars and are captured by ztunnel: ${refs.map(formatRef).join(', ') || 'none'}.${optIns.workloads.length > 0 ? ` Remove the pod-level injection opt-in (sidecar.istio.io/inject=true / istio.io/rev) from the templates of ${optIns.workloads.map((w) => formatRef(w.ref)).join(', ')}: the template change rolls them the same way (E4).` : ''}${restarts.manual.length > 0 ? ` ${restarts.manual.length} workload(s) cannot be restarted by the tool and are listed for you.` : ''} From here until the next step, selector-based L7 policies are degraded at ztunnel for restarted pods.`,
      // A restart does not depend on the workload's content, only on its existence.
      preconditions: checked.map((ref): Precondition => ({check: 'object-present', ref})),
      operations: [...refs.map((ref): Operation => ({op: 'restart', ref})), ...optIns.ops],
      ...(restarts.manual.length > 0 ? {manual: restarts.manual} : {}),
      verify: [
        {check: 'rollouts-complete', refs: rolled},
        {check: 'pods-without-sidecar', refs: rolled},
      ],
      undo: {description: `After the injection label is restored, restart the same workloads again so their pods get sidecars back${optIns.workloads.length > 0 ? ', and restore the pod-level opt-ins' : ''}.`, operations: [...refs.map((ref): Operation => ({op: 'restart', ref})), ...optIns.undo]},
    })
  }

  // delete-sidecar-policies: right after the restart, when ztunnel would degrade the originals (L7 ALLOW: deny-all,
  // L7 DENY: no-op or broadened). The L4 parts of L7 ALLOWs are applied in the same step and not earlier: before
  // the restart, sidecars would enforce them too and allow more than the originals.
  const toDelete = policies.replaceAfterRestart.delete
  const toApply = policies.replaceAfterRestart.apply
  if (migrating && (toDelete.length > 0 || toApply.length > 0)) {
    const byDeleted = policies.decisions.filter((d) => d.original.deletedIn === 'delete-sidecar-policies')
    const applied = policies.decisions.flatMap((d) => d.created.filter((c) => c.createdIn === 'delete-sidecar-policies'))
    steps.push({
      id: 'delete-sidecar-policies',
      action: 'delete-sidecar-policies',
      description: `Right after the restart${toApply.length > 0 ? `, create the L4 part of each L7 ALLOW (${applied.map((c) => c.ref.name).join(', ')}: its rules without the L7 attributes, so that callers bypassing the waypoint — sidecar clients, pod-IP traffic — keep the restriction ztunnel can enforce) and` : ','} delete the ${toDelete.length} polic${toDelete.length === 1 ? 'y' : 'ies'} superseded by the objects of create-policies: ${byDeleted.map((d) => `${d.ref.kind} ${d.ref.name}`).join(', ')}. Until then ztunnel degrades them for restarted pods (an L7 ALLOW is deny-all for callers that bypass the waypoint, an L7 DENY a no-op). Not earlier: sidecars would enforce the L4 parts too and allow more. Each deleted policy is stored here in full so rollback can re-create it.`,
      preconditions: [
        ...toDelete.map((o): Precondition => ({check: 'object-unchanged', ref: refOf(o), fingerprint: objectFingerprint(o)})),
        ...toApply.map((o): Precondition => ({check: 'object-absent-or-ours', ref: refOf(o)})),
        // The originals go only while the waypoint that enforces their copies is ready.
        ...(waypointRef ? [{check: 'waypoint-ready' as const, ref: waypointRef}] : []),
      ],
      operations: [
        ...toApply.map((object): Operation => ({op: 'apply', object})),
        ...toDelete.map((o): Operation => ({op: 'delete', ref: refOf(o), object: cleanObject(o)})),
      ],
      verify: [
        ...(toDelete.length > 0 ? [{check: 'objects-absent' as const, refs: toDelete.map(refOf)}] : []),
        ...(toApply.length > 0 ? [{check: 'objects-present' as const, refs: toApply.map(refOf)}] : []),
      ],
      undo: {
        description: `Re-create the deleted policies from the copies stored in this step${toApply.length > 0 ? ', then delete the L4 parts it applied (sidecars coming back must not enforce them)' : ''}.`,
        operations: [
          ...toDelete.map((o): Operation => ({op: 'apply', object: cleanObject(o)})),
          ...toApply.map((object): Operation => ({op: 'delete', ref: refOf(object)})),
        ],
      },
    })
  }

  if (migrating) {
    const refs = restarts.expectAmbient.map((w) => w.ref).sort(compareRefs)
    steps.push({
      id: 'verify-dataplane',
      action: 'verify-dataplane',
      description: `Check the end state: no pod of the migrated workloads has a sidecar (classic or native), every one is captured by ztunnel (ambient.istio.io/redirection=enabled)${waypointRef ? ', and the namespace\'s Services are bound to the waypoint' : ''}.`,
      preconditions: [],
      operations: [],
      verify: [
        {check: 'pods-without-sidecar', refs},
        {check: 'pods-captured', refs},
        ...(waypointRef ? [{check: 'waypoint-bound' as const, ref: waypointRef, services: boundNames}] : []),
      ],
      undo: {description: 'Nothing to undo: read-only.', operations: []},
    })
  }

  if (migrating && waypointRequired && options.denyWaypointBypass) {
    const deny = denyBypassStep(inventory, options.waypointName, ns)
    findings.push(...deny.findings)
    if (deny.step) steps.push(deny.step)
  }

  // E11/E12: behaviour only client sidecars provided is lost once the pods are ambient. Reviewers must
  // accept each loss explicitly (--accept-lost); otherwise it blocks the plan.
  const acceptLost = idMatcher(options.acceptLost ?? [])
  // A mesh-wide L7 DENY carried only into the namespace (issue 10 point 8) leaves a gap reviewers accept the same way.
  const lostRefs = new Set(inventory.objects.filter((i) => i.action === 'lost-client-side').map((i) => refKey(i.ref)))
  for (const [i, f] of findings.entries()) {
    if (!migrating || !f.ref || !(lostRefs.has(refKey(f.ref)) || f.code === ROOT_DENY_CODE || isGroupedLostFinding(f)) || f.severity !== 'error') continue
    findings[i] = acceptLost(f.id)
      ? {...f, severity: 'warning', message: `${f.message} (accepted with --accept-lost)`}
      : {...f, severity: 'blocker', fix: `${f.fix ?? ''} To go ahead without it, re-run plan with --accept-lost ${f.id}.`.trim()}
  }

  // Step-by-step safety simulation: hazards outside documented windows block unless accepted.
  const policyInputs = timelinePolicies(ns, policies.decisions)
  const acceptHazards = idMatcher(options.acceptHazards ?? [])
  const hazards: PlanHazard[] = []
  if (migrating) {
    const sim = simulate({namespace: ns, workloads: inventory.workloads, steps, policies: policyInputs, ambientAtStart: labels[DATAPLANE_MODE_LABEL] === 'ambient'})
    const unexpected = new Set(unexpectedHazards(sim).map((h) => h.id))
    for (const h of sim.hazards) {
      const accepted = unexpected.has(h.id) && acceptHazards(h.id)
      hazards.push({...h, ...(accepted ? {accepted: true} : {})})
      if (unexpected.has(h.id) && !accepted) {
        findings.push({
          id: `hazard/${h.id}`,
          code: 'UnexpectedHazard',
          severity: 'blocker',
          message: `${h.phase === 'apply' ? 'During apply' : 'During rollback'}, from ${h.from} until ${h.until}: ${h.message}. No documented window covers this.`,
          fix: `Change what causes it (see the step descriptions), or accept it with --accept-hazard ${h.id}.`,
        })
      }
    }
  }

  // Blockers a reviewer may accept as a known risk (E19: a port the waypoint will sniff).
  for (const [i, f] of findings.entries()) {
    if (f.severity === 'blocker' && ACCEPTABLE_BLOCKERS.has(f.code) && acceptHazards(f.id)) {
      findings[i] = {...f, severity: 'warning', message: `${f.message} (accepted with --accept-hazard)`}
    }
  }

  const blockers = findings.filter((f) => f.severity === 'blocker')
  const plainFindings = markHandledFindings(findings.filter((f) => f.severity !== 'blocker'), policies.decisions)
  return {
    apiVersion: PLAN_API_VERSION,
    kind: PLAN_KIND,
    metadata: {name: ns, namespace: ns, generator: input.generator},
    spec: {
      target: snapshot.target,
      options,
      observed: {namespaceLabels: {...labels}, fingerprint: inventoryFingerprint(inventory, snapshot)},
      summary: {from: nsState.mode, to: 'ambient', waypointRequired, blockers: blockers.length, steps: steps.length},
      blockers,
      findings: plainFindings,
      inventory: inventory.objects,
      workloads: inventory.workloads,
      waypoints,
      policies: policyInputs,
      hazards,
      steps,
    },
  }
}
