// Turns an inventory into an ordered, reversible plan (SPEC §5, §6; DOMAIN §4.2–§4.3): decides what all steps share
// once (the waypoint, what happens to every policy, opt-outs, restarts, the binding), folds over the step kinds
// (src/steps/index.ts), then judges the result (accepted losses, the simulation's hazards, accepted blockers).
import {finding} from '../planner/findings/finding.js'
import {findingIdSpellings} from '../planner/findings/catalogue.js'
import {guardedUndo} from './undo-guards.js'
import {isGroupedLostFinding} from '../planner/lost-routing.js'
import {cleanObject, digestOf, objectFingerprint} from '../planner/canonical.js'
import {markHandledFindings} from '../planner/finding-handling.js'
import type {
  Finding,
  Inventory,
  InventoryItem,
  KubeObject,
  ObjectRef,
  ServiceItem,
  SourceSnapshot,
  Verdict,
  WorkloadItem,
  ZtunnelEffect,
} from '../planner/model.js'
import {
  type MigrationPlan,
  PLAN_API_VERSION,
  PLAN_KIND,
  type PlanHazard,
  type PlanOptions,
  type PlanStep,
  type PolicyTimelineInput,
} from '../planner/plan-types.js'
import {formatRef, refKey, refOf} from '../planner/refs.js'
import {
  allowsNothing,
  markManaged,
  planPolicyMigration,
  type PolicyDecision,
  type PolicyMigration,
  type PolicyPlacement,
} from '../planner/retarget.js'
import {simulate, unexpectedHazards} from './simulate.js'
import {ROOT_DENY_CODE} from '../planner/classify/authz.js'
import {
  DATAPLANE_MODE_LABEL,
  PREFLIGHT_CHECKS,
  REVISION_LABEL,
  USE_WAYPOINT_LABEL,
  USE_WAYPOINT_NAMESPACE_LABEL,
  WAYPOINT_FOR_LABEL,
  workloadHasSidecar,
} from '../planner/vocab.js'
import {waypointServable} from '../planner/retarget/targets.js'
import {
  buildWaypoint,
  isWaypointGateway,
  type WaypointIdentity,
  waypointIdentity,
  waypointNameProblem,
  waypointRevision,
} from '../planner/waypoint.js'
import {meshTrustDomain, type TrustDomain} from '../planner/mesh-config.js'
import {
  findWaypointGateway,
  remoteNamespaceWaypoint,
  remoteWaypointFindings,
  trustDomainFindings,
} from '../planner/namespace-waypoint.js'
import {STEP_KINDS, type StepContext} from '../steps/index.js'
import type {NamespaceBinding} from '../steps/types.js'
import {optOutStep} from '../steps/opt-out-workloads.js'
import {decideRestarts, podOptInOperations} from '../steps/restart-workloads.js'
import {namespaceRef} from '../steps/shared.js'
import {byCodePoint} from '../planner/order.js'
import {keptOriginalRules} from './derived-checks.js'

/** The preflight checks a plan asks for (defined in vocab.ts; the preflight step declares them). */
export {PREFLIGHT_CHECKS}

export interface BuildPlanInput {
  inventory: Inventory
  snapshot: SourceSnapshot
  options: PlanOptions
  /** "mesh-migrate/<version>" */
  generator: string
  /** Istio minor version ("1.28") when given by the user; the snapshot's (read from istiod) otherwise. */
  istioVersion?: string
  /** --trust-domain: the mesh's trust domain, instead of meshConfig.trustDomain read from the snapshot. */
  trustDomain?: string
  /**
   * Fingerprints of snapshot objects known already (plan -A: the plans of a fleet share the objects of the namespaces
   * that export to many, and the fingerprint of an object read once does not change).
   */
  fingerprints?: WeakMap<KubeObject, string>
}

/** objectFingerprint, looked up in and added to `known` when given. */
function fingerprintOf(o: KubeObject, known: WeakMap<KubeObject, string> | undefined): string {
  let fingerprint = known?.get(o)
  if (fingerprint === undefined) {
    fingerprint = objectFingerprint(o)
    known?.set(o, fingerprint)
  }
  return fingerprint
}

/**
 * The snapshot's objects of these refs, with their keys, in the snapshot's order. A fleet's view holds the objects of
 * many namespaces, few of them among the refs: those of other namespaces are passed over without building a key.
 */
function snapshotObjectsOf(snapshot: SourceSnapshot, refs: ObjectRef[]): [string, KubeObject][] {
  const keys = new Set(refs.map(refKey))
  const namespaces = new Set(refs.map((r) => r.namespace ?? ''))
  const out: [string, KubeObject][] = []
  for (const o of snapshot.objects) {
    if (!namespaces.has(o.metadata.namespace ?? '')) continue
    const key = refKey(refOf(o))
    if (keys.has(key)) out.push([key, o])
  }
  return out
}

/** sha256 over what the plan was computed from (SPEC §5 spec.observed.fingerprint). */
export function inventoryFingerprint(
  inventory: Inventory,
  snapshot: SourceSnapshot,
  known?: WeakMap<KubeObject, string>,
): string {
  const relevant = [...inventory.objects, ...inventory.workloads, ...inventory.services].map((i) => i.ref)
  const inputs = snapshotObjectsOf(snapshot, relevant).map(([key, o]): [string, string] => [
    key,
    fingerprintOf(o, known),
  ])
  inputs.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
  const pods = inventory.workloads.map((w) => [refKey(w.ref), w.proxy, w.pods ?? null])
  return digestOf({namespaceLabels: inventory.namespaceState.labels, inputs, pods})
}

/** Verdicts that leave an object as it is, whatever the migration does: a new or changed one needs no new plan. */
const SETTLED: ReadonlySet<Verdict> = new Set(['unaffected', 'inert'])

/** An inventory object whose verdict is neither unaffected nor inert: a change to it may need another plan. */
export const matters = (item: InventoryItem) => !SETTLED.has(item.verdict)

/**
 * objectFingerprint cut to 64 bits, in hex: one per object in spec.observed.objects (a plan of 800 Services stays within
 * 6 KB per Service). It tells an object edited since the plan was made, as the full fingerprint in the steps'
 * preconditions guards what the plan writes.
 */
export function shortFingerprint(o: KubeObject, known?: WeakMap<KubeObject, string>): string {
  return fingerprintOf(o, known).slice('sha256:'.length, 'sha256:'.length + 16)
}

/** The short fingerprint of each inventory object that matters (not unaffected, not inert), by refKey. */
export function observedObjects(
  inventory: Inventory,
  snapshot: SourceSnapshot,
  known?: WeakMap<KubeObject, string>,
): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [key, o] of snapshotObjectsOf(
    snapshot,
    inventory.objects.filter(matters).map((i) => i.ref),
  ))
    out[key] = shortFingerprint(o, known)
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
}

/** spec.observed.keptRules: the rules' fingerprint of each original a step derives from but no step deletes (stores). */
function keptRulesOf(steps: PlanStep[], snapshot: SourceSnapshot, ns: string): {keptRules: Record<string, string>} {
  const ops = steps.flatMap((s) => s.operations)
  const stored = new Set(ops.flatMap((op) => (op.op === 'delete' && op.object ? [op.ref.name] : [])))
  const created = ops.flatMap((op) => (op.op === 'apply' ? [op.object] : []))
  return {keptRules: keptOriginalRules(created, stored, snapshot.objects, ns)}
}

/** What the simulation needs to know about each policy decision (recorded in the plan for show --timeline). */
export function timelinePolicies(namespace: string, decisions: PolicyDecision[]): PolicyTimelineInput[] {
  // A reused copy (issue 21 point 3) is there before the first step, which is always preflight.
  const createdIn = (d: PolicyDecision, role: PolicyPlacement['role']) => {
    const c = d.created.find((p) => p.role === role)
    return c?.reused ? 'preflight' : c?.createdIn
  }
  // A targetRefs ALLOW that exists already applies to no workload's selector, but it is part of the waypoint's ALLOW set.
  const waypointAllow = (p: PolicyPlacement) =>
    p.action === 'ALLOW' && !p.dryRun && p.scope === 'targetRefs' && (p.serviceWorkloads?.length ?? 0) > 0
  return decisions
    .filter((d) => d.original.workloads.length > 0 || waypointAllow(d.original))
    .map((d): PolicyTimelineInput => {
      const key =
        d.ref.namespace && d.ref.namespace !== namespace
          ? `${d.ref.kind}/${d.ref.namespace}/${d.ref.name}`
          : `${d.ref.kind}/${d.ref.name}`
      const ztunnel: ZtunnelEffect =
        d.original.ztunnel ?? (d.ref.kind === 'AuthorizationPolicy' ? 'as-written' : 'ignored')
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
    .sort((a, b) => byCodePoint(a.key, b.key))
}

/** Blocker codes --accept-hazard can accept besides the simulation's hazards. */
const ACCEPTABLE_BLOCKERS = new Set(['PortNameNoProtocol'])

/**
 * What --accept-lost / --accept-hazard name: exact ids, or patterns where `*` stands for any text
 * (`E11/DestinationRule/*` accepts every lost client-side DestinationRule) — a mesh can have hundreds.
 */
export function idMatcher(given: string[]): (id: string) => boolean {
  const patterns = given.flatMap(findingIdSpellings)
  const exact = new Set(patterns.filter((p) => !p.includes('*')))
  const globs = patterns
    .filter((p) => p.includes('*'))
    .map(
      (p) =>
        new RegExp(
          `^${p
            .split('*')
            .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
            .join('.*')}$`,
        ),
    )
  return (id) => exact.has(id) || globs.some((g) => g.test(id))
}

export function namespaceBinding(inventory: Inventory, waypointName: string): NamespaceBinding {
  const ns = inventory.namespace
  const bound: ServiceItem[] = []
  const ownLabel: NamespaceBinding['ownLabel'] = []
  for (const s of [...inventory.services].sort((a, b) => byCodePoint(a.ref.name, b.ref.name))) {
    if (!waypointServable(s)) continue
    const own = s.labels?.[USE_WAYPOINT_LABEL]
    const ownNs = s.labels?.[USE_WAYPOINT_NAMESPACE_LABEL] || ns
    if (own !== undefined && !(own === waypointName && ownNs === ns))
      ownLabel.push({service: s, target: own === 'none' ? 'none' : `${ownNs}/${own}`})
    else bound.push(s)
  }
  return {bound, ownLabel}
}

/**
 * A waypoint Gateway the plan reuses instead of creating one: it must serve Service traffic, and in a
 * revision-labelled namespace carry that revision itself (DOMAIN §1.4, §1.8).
 */
function existingWaypointFindings(
  existing: KubeObject,
  snapshot: SourceSnapshot,
  nsState: Inventory['namespaceState'],
): Finding[] {
  const ns = existing.metadata.namespace ?? nsState.name
  const name = existing.metadata.name
  const ref = refOf(existing)
  const findings: Finding[] = []
  const own = existing.metadata.labels?.[WAYPOINT_FOR_LABEL]
  const gatewayClass = snapshot.objects.find(
    (o) =>
      o.kind === 'GatewayClass' &&
      o.apiVersion.startsWith('gateway.networking.k8s.io/') &&
      o.metadata.name === existing.spec?.gatewayClassName,
  )
  const fromClass = gatewayClass?.metadata.labels?.[WAYPOINT_FOR_LABEL]
  const effective = own ?? fromClass ?? 'service'
  if (effective !== 'service' && effective !== 'all') {
    findings.push(
      finding(
        'ExistingWaypointTrafficType',
        ref,
        {
          variant: 'existingWaypointFindings',
          ns,
          name,
          effective,
          detail: own === undefined ? ` (from GatewayClass ${gatewayClass?.metadata.name})` : '',
        },
        {id: `existing-waypoint/waypoint-for/${ns}/${name}`, severity: 'blocker'},
      ),
    )
  }
  const revision = waypointRevision(nsState)
  const gatewayRevision = existing.metadata.labels?.[REVISION_LABEL]
  if (revision && gatewayRevision !== revision) {
    const args = {namespace: ns, name, revision}
    findings.push(
      finding(
        'ExistingWaypointRevision',
        ref,
        gatewayRevision === undefined
          ? {...args, variant: 'unlabelled'}
          : {...args, variant: 'otherRevision', gatewayRevision},
        {id: `existing-waypoint/revision/${ns}/${name}`},
      ),
    )
  }
  return findings
}

/** Whether the namespace has anything to migrate: sidecar labels, or workloads that still run a sidecar. */
export function isMigrating(inventory: Pick<Inventory, 'namespaceState' | 'workloads'>): boolean {
  const mode = inventory.namespaceState.mode
  return mode === 'sidecar' || mode === 'both' || inventory.workloads.some(workloadHasSidecar)
}

export function buildPlan(input: BuildPlanInput): MigrationPlan {
  const {inventory, snapshot, options} = input
  const findings: Finding[] = [...inventory.findings]
  const ctx = stepContext(input, findings)
  const steps: PlanStep[] = []
  for (const kind of STEP_KINDS) {
    const planned = kind.plan(ctx)
    findings.push(...(planned.findings ?? []))
    // Every undo carries the guards rollback runs (src/planner/undo-guards.ts), in the plan for the reviewer.
    for (const step of [...(planned.step ? [planned.step] : []), ...(planned.steps ?? [])])
      steps.push({...step, undo: guardedUndo(step)})
  }
  judgeLostFindings(findings, ctx)
  const policyInputs = timelinePolicies(ctx.ns, ctx.policies.decisions)
  const hazards = ctx.migrating ? simulatedHazards(ctx, steps, policyInputs, findings) : []
  // Blockers a reviewer may accept as a known risk (E19: a port the waypoint will sniff).
  const acceptHazards = idMatcher(options.acceptHazards ?? [])
  for (const [i, f] of findings.entries()) {
    if (f.severity === 'blocker' && ACCEPTABLE_BLOCKERS.has(f.code) && acceptHazards(f.id)) {
      findings[i] = {...f, severity: 'warning', message: `${f.message} (accepted with --accept-hazard)`}
    }
  }
  const blockers = findings.filter((f) => f.severity === 'blocker')
  const plainFindings = markHandledFindings(
    findings.filter((f) => f.severity !== 'blocker'),
    ctx.policies.decisions,
  )
  const nsState = inventory.namespaceState
  return {
    apiVersion: PLAN_API_VERSION,
    kind: PLAN_KIND,
    metadata: {name: ctx.ns, namespace: ctx.ns, generator: input.generator},
    spec: {
      target: snapshot.target,
      options,
      observed: {
        namespaceLabels: {...ctx.labels},
        fingerprint: inventoryFingerprint(inventory, snapshot, input.fingerprints),
        objects: observedObjects(inventory, snapshot, input.fingerprints),
        ...keptRulesOf(steps, snapshot, ctx.ns),
        ...(ctx.waypointIdentity ? {trustDomain: trustDomainRecord(ctx.waypointIdentity.trustDomain)} : {}),
        ...(ctx.waypointIdentity && ctx.waypoint
          ? {waypointPrincipals: admittedPrincipals(input, ctx.waypointIdentity, ctx.waypoint)}
          : {}),
      },
      summary: {
        from: nsState.mode,
        to: 'ambient',
        waypointRequired: ctx.waypointRequired,
        blockers: blockers.length,
        steps: steps.length,
      },
      blockers,
      findings: plainFindings,
      inventory: inventory.objects,
      workloads: inventory.workloads,
      // A waypoint of another namespace is not the plan's: it neither creates nor owns it.
      waypoints: ctx.waypoint && !ctx.waypoint.remote ? [ctx.waypoint.object] : [],
      policies: policyInputs,
      hazards,
      steps,
    },
  }
}

/** What every step kind plans from, decided once; the findings of these decisions go to `findings`. */
function stepContext(input: BuildPlanInput, findings: Finding[]): StepContext {
  const {inventory, snapshot, options} = input
  const ns = inventory.namespace
  const migrating = isMigrating(inventory)
  const waypointRequired = inventory.waypointRequired && migrating
  const injectedGateways = inventory.workloads.filter((w) => w.traits.includes('injected-gateway'))
  if (migrating && inventory.injectionByDefault === true && injectedGateways.length > 0)
    findings.push(injectionByDefaultBlocker(ns, injectedGateways))
  const waypoint = waypointRequired ? planWaypoint(input, findings) : undefined
  // Who the waypoint is to the destinations: its ServiceAccount in the mesh's trust domain (issue 21 points 2, 8).
  const identity = waypoint ? planIdentity(input, waypoint, findings) : undefined
  // What happens to every policy: waypoint copies, ztunnel companions and L4 parts, E22 rewrites (DOMAIN §3.1).
  const istioVersion = input.istioVersion ?? snapshot.istioVersion
  const policies: PolicyMigration = migrating
    ? planPolicyMigration({
        namespace: ns,
        planName: ns,
        waypointName: identity?.name ?? options.waypointName,
        ...(identity
          ? {
              waypointNamespace: identity.namespace,
              waypointServiceAccount: identity.serviceAccount,
              trustDomain: identity.trustDomain.name,
              trustDomainAliases: identity.trustDomain.aliases ?? [],
              serviceWaypoints: serviceWaypointPrincipals(input, identity, waypoint!),
            }
          : {}),
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
  const optOut =
    migrating && (options.optedOut ?? 'keep-out') === 'keep-out'
      ? optOutStep(inventory, snapshot)
      : {optedOut: [] as WorkloadItem[], findings: [] as Finding[]}
  findings.push(...optOut.findings)
  const optedOutKeys = new Set(optOut.optedOut.map((w) => refKey(w.ref)))
  const optIns = podOptInOperations(inventory, snapshot)
  return {
    inventory,
    snapshot,
    options,
    ns,
    nsRef: namespaceRef(ns),
    labels: inventory.namespaceState.labels,
    migrating,
    waypointRequired,
    // E3: with enableNamespacesByDefault an unlabelled namespace is still injected, so removing the label
    // is not enough; istio-injection=disabled matches no webhook. Not when the namespace runs injected
    // gateways (E7): they need injection to get their proxy, so a person must decide.
    injectionByDefault: inventory.injectionByDefault === true && injectedGateways.length === 0,
    ...(istioVersion ? {istioVersion} : {}),
    ...(waypoint ? {waypoint} : {}),
    ...(identity ? {waypointIdentity: identity} : {}),
    policies,
    optOut,
    optedOutKeys,
    optIns,
    restarts: decideRestarts(inventory.workloads, new Set(optIns.workloads.map((w) => refKey(w.ref))), optedOutKeys),
    binding:
      waypoint && !waypoint.remote ? namespaceBinding(inventory, options.waypointName) : {bound: [], ownLabel: []},
  }
}

/**
 * E3 + E7: the auto webhook injects every pod of an unlabelled namespace, and istio-injection=disabled would also
 * stop the injected gateways' own proxy. No label change drops the sidecars of the others.
 */
function injectionByDefaultBlocker(ns: string, injectedGateways: WorkloadItem[]): Finding {
  return finding(
    'InjectionByDefaultWithInjectedGateway',
    namespaceRef(ns),
    {ns, injectedGateways: injectedGateways.map((w) => formatRef(w.ref))},
    {id: `E3-E7/${ns}`, severity: 'blocker'},
  )
}

/** The waypoint the plan uses: generated, and reused when the namespace already has a waypoint of that name. */
function planWaypoint(
  {inventory, snapshot, options}: BuildPlanInput,
  findings: Finding[],
): NonNullable<StepContext['waypoint']> {
  const ns = inventory.namespace
  const nsState = inventory.namespaceState
  // Issue 21 point 2: bound already to a waypoint of another namespace, the namespace keeps it.
  const remote = remoteNamespaceWaypoint(nsState.labels, ns)
  if (remote) {
    const gateway = findWaypointGateway(snapshot.objects, remote)
    const object = gateway
      ? cleanObject(gateway)
      : buildWaypoint({name: remote.name, namespace: remote.namespace, waypointFor: 'service'})
    return {object, ref: refOf(object), exists: true, remote: true}
  }
  const existing = snapshot.objects.find(
    (o) => o.metadata.namespace === ns && o.kind === 'Gateway' && o.metadata.name === options.waypointName,
  )
  if (existing && !isWaypointGateway(existing)) {
    findings.push(
      finding(
        'WaypointNameTaken',
        refOf(existing),
        {ns, waypointName: options.waypointName, gatewayClassName: existing.spec?.gatewayClassName},
        {id: `waypoint-name-taken/${ns}/${options.waypointName}`, severity: 'blocker'},
      ),
    )
  }
  if (existing && isWaypointGateway(existing)) findings.push(...existingWaypointFindings(existing, snapshot, nsState))
  const object = markManaged(
    buildWaypoint({
      name: options.waypointName,
      namespace: ns,
      waypointFor: options.waypointFor,
      revision: waypointRevision(nsState),
    }),
    ns,
  )
  return {object, ref: refOf(object), exists: existing !== undefined && isWaypointGateway(existing)}
}

/** The waypoint's identity in the mesh's trust domain; for a waypoint of another namespace, who owns it. */
function planIdentity(
  {inventory, snapshot, trustDomain: override}: BuildPlanInput,
  waypoint: NonNullable<StepContext['waypoint']>,
  findings: Finding[],
): WaypointIdentity {
  const trustDomain = meshTrustDomain({
    objects: snapshot.objects,
    rootNamespace: snapshot.rootNamespace,
    ...(inventory.namespaceState.revision ? {revision: inventory.namespaceState.revision} : {}),
    ...(override !== undefined ? {override} : {}),
  })
  findings.push(...trustDomainFindings(snapshot, trustDomain))
  const identity = waypointIdentity(
    snapshot.objects,
    {namespace: waypoint.ref.namespace!, name: waypoint.ref.name},
    trustDomainRecord(trustDomain),
  )
  if (waypoint.remote) findings.push(...remoteWaypointFindings(snapshot, identity, inventory.namespaceState.labels))
  return identity
}

/** Services bound by their own label to another waypoint than the plan's: that waypoint's principals (issue 21 point 2). */
function serviceWaypointPrincipals(
  {inventory, snapshot}: BuildPlanInput,
  identity: WaypointIdentity,
  waypoint: NonNullable<StepContext['waypoint']>,
): Record<string, string[]> {
  if (waypoint.remote) return {}
  const out: Record<string, string[]> = {}
  for (const {service} of namespaceBinding(inventory, identity.name).ownLabel) {
    const name = service.labels?.[USE_WAYPOINT_LABEL]
    if (!name || name === 'none' || waypointNameProblem(name) !== undefined) continue
    const namespace = service.labels?.[USE_WAYPOINT_NAMESPACE_LABEL] || inventory.namespace
    out[service.ref.name] = waypointIdentity(snapshot.objects, {namespace, name}, identity.trustDomain).principals
  }
  return out
}

/**
 * Every waypoint principal the plan's companions may admit: the plan's waypoint (trust domain, then aliases), then the
 * waypoints Services are bound to by their own label. Recorded so that validate can check each companion admits
 * only these (issue 20 point 5).
 */
function admittedPrincipals(
  input: BuildPlanInput,
  identity: WaypointIdentity,
  waypoint: NonNullable<StepContext['waypoint']>,
): string[] {
  return [
    ...new Set([...identity.principals, ...Object.values(serviceWaypointPrincipals(input, identity, waypoint)).flat()]),
  ]
}

function trustDomainRecord(td: TrustDomain): TrustDomain {
  return {name: td.name, ...(td.aliases?.length ? {aliases: [...td.aliases]} : {}), source: td.source}
}

/**
 * E11/E12: behaviour only client sidecars provided is lost once the pods are ambient. Reviewers must accept each
 * loss explicitly (--accept-lost); otherwise it blocks the plan. A mesh-wide L7 DENY carried only into the
 * namespace (issue 10 point 8) leaves a gap reviewers accept the same way.
 */
function judgeLostFindings(findings: Finding[], {migrating, inventory, options}: StepContext): void {
  if (!migrating) return
  const acceptLost = idMatcher(options.acceptLost ?? [])
  const lostRefs = new Set(inventory.objects.filter((i) => i.action === 'lost-client-side').map((i) => refKey(i.ref)))
  for (const [i, f] of findings.entries()) {
    if (
      !f.ref ||
      !(lostRefs.has(refKey(f.ref)) || f.code === ROOT_DENY_CODE || isGroupedLostFinding(f)) ||
      f.severity !== 'error'
    )
      continue
    findings[i] = acceptLost(f.id)
      ? {...f, severity: 'warning', message: `${f.message} (accepted with --accept-lost)`}
      : {
          ...f,
          severity: 'blocker',
          fix: `${f.fix ?? ''} To go ahead without it, re-run plan with --accept-lost ${f.id}.`.trim(),
        }
  }
}

/** Step-by-step safety simulation: hazards outside documented windows block (a finding each) unless accepted. */
function simulatedHazards(
  {ns, inventory, labels, options, waypoint}: StepContext,
  steps: PlanStep[],
  policies: PolicyTimelineInput[],
  findings: Finding[],
): PlanHazard[] {
  const acceptHazards = idMatcher(options.acceptHazards ?? [])
  const hazards: PlanHazard[] = []
  const sim = simulate({
    namespace: ns,
    workloads: inventory.workloads,
    steps,
    policies,
    ambientAtStart: labels[DATAPLANE_MODE_LABEL] === 'ambient',
    waypointBoundAtStart: waypoint?.remote === true,
  })
  const unexpected = new Set(unexpectedHazards(sim).map((h) => h.id))
  for (const h of sim.hazards) {
    const accepted = unexpected.has(h.id) && acceptHazards(h.id)
    hazards.push({...h, ...(accepted ? {accepted: true} : {})})
    if (unexpected.has(h.id) && !accepted) {
      findings.push(
        finding(
          'UnexpectedHazard',
          undefined,
          {
            detail: h.phase === 'apply' ? 'During apply' : 'During rollback',
            from: h.from,
            until: h.until,
            message: h.message,
            idText: h.id,
          },
          {id: `hazard/${h.id}`, severity: 'blocker'},
        ),
      )
    }
  }
  return hazards
}
