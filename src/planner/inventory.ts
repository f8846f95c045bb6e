// Assembles the inventory of one namespace from a source snapshot (SPEC §4). Pure.
import {finding} from './findings/finding.js'
import {analyzeAuthorizationPolicy} from './classify/authz.js'
import {classifyObjects} from './classify/index.js'
import {namespaceOf} from './classify/objects.js'
import {uncarriableBlockers} from './classify/waypoints.js'
import type {ClassifyContext} from './context.js'
import type {Finding, Inventory, InventoryItem, KubeObject, SourceSnapshot} from './model.js'
import {analyzeInjectionWebhooks, analyzeNamespace} from './namespace.js'
import {compareRefs, formatRef} from './refs.js'
import {serviceAccountRewritable} from './retarget.js'
import {groupLostRouting} from './lost-routing.js'
import {analyzeServices, servicePortFindings} from './services.js'
import type {WaypointFor} from './waypoint.js'
import {analyzeWorkloads} from './workloads.js'

export interface InventoryOptions {
  /** Istio minor version ("1.28") when known. */
  istioVersion?: string
  waypointFor: WaypointFor
  /** Fleet planning: namespaces an earlier wave binds to a waypoint of their own (see ClassifyContext). */
  earlierWaypoints?: Record<string, string>
  /** Fleet planning: collects the namespaces whose planned waypoint was asked for (see ClassifyContext). */
  waypointsAsked?: Set<string>
}

/**
 * Whether the namespace needs a waypoint of its own: some object of this namespace carries L7
 * behaviour that only a waypoint in front of its Services can enforce once sidecars are gone
 * (DOMAIN §8 "Waypoint need per Service"). Client-side config of other namespaces needs *their*
 * waypoints, and root-namespace L7 policies are blockers, so neither counts here — except mesh-wide config
 * that the namespace's own waypoint applies as it is (root Telemetry with L7 settings, DOMAIN §3.11) or through a
 * copy in the namespace (a mesh-wide L7 DENY, E14): without a waypoint its effect on this namespace's traffic is gone.
 */
export function needsWaypoint(
  namespace: string,
  items: InventoryItem[],
  rewritable: (item: InventoryItem) => boolean = () => false,
): boolean {
  const carried = (i: InventoryItem) =>
    i.ref.namespace === namespace || (i.scope === 'mesh' && (i.action === 'keep' || i.action === 'retarget'))
  return items.some(
    (i) =>
      carried(i) &&
      i.verdict === 'L7' &&
      (i.action === 'retarget' || i.action === 'keep' || i.action === 'keep-verify') &&
      !rewritable(i),
  )
}

/** E22: policies whose only L7 part is `when: source.serviceAccount` stay at ztunnel rewritten, without a waypoint. */
function serviceAccountOnly(ctx: ClassifyContext): (item: InventoryItem) => boolean {
  const minorText = ctx.istioVersion ? /^1\.(\d+)/.exec(ctx.istioVersion)?.[1] : undefined
  const minor = minorText === undefined ? undefined : Number(minorText)
  return (item) => {
    if (item.ref.kind !== 'AuthorizationPolicy') return false
    const obj = ctx.objects.find(
      (o) =>
        o.kind === 'AuthorizationPolicy' &&
        o.metadata.namespace === item.ref.namespace &&
        o.metadata.name === item.ref.name,
    )
    if (!obj) return false
    return serviceAccountRewritable(
      analyzeAuthorizationPolicy(obj, ctx),
      obj.spec?.rules ?? [],
      item.ref.namespace ?? ctx.namespace,
      minor,
    )
  }
}

const SEVERITY_ORDER = {blocker: 0, error: 1, warning: 2, info: 3} as const

/** Findings sorted (severity, then id) and de-duplicated by id. */
export function normalizeFindings(findings: Finding[]): Finding[] {
  const byId = new Map<string, Finding>()
  for (const f of findings) if (!byId.has(f.id)) byId.set(f.id, f)
  return [...byId.values()].sort(
    (a, b) => SEVERITY_ORDER[a.severity] - SEVERITY_ORDER[b.severity] || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0),
  )
}

/** Every blocker verdict must surface as a blocker finding, even if its classifier said nothing more. */
function blockerFindings(items: InventoryItem[], findings: Finding[]): Finding[] {
  const covered = new Set(
    findings
      .filter((f) => f.severity === 'blocker' && f.ref)
      .map((f) => `${f.ref!.kind}/${f.ref!.namespace}/${f.ref!.name}`),
  )
  return items
    .filter(
      (i) =>
        (i.verdict === 'blocker' || i.action === 'blocker') &&
        !covered.has(`${i.ref.kind}/${i.ref.namespace}/${i.ref.name}`),
    )
    .map((i) =>
      finding(
        'BlockerObject',
        i.ref,
        {ref: formatRef(i.ref), value: i.reasons[0] ?? 'see its reasons'},
        {id: `blocker/${i.ref.kind}/${i.ref.namespace ?? ''}/${i.ref.name}`, severity: 'blocker' as const},
      ),
    )
}

/** The namespace's own analyses and the context its objects are classified in (waypoint not yet decided). */
function analyse(snapshot: SourceSnapshot, options: InventoryOptions) {
  const namespace = snapshot.namespace
  const namespaceObject = snapshot.objects.find(
    (o) => o.kind === 'Namespace' && o.apiVersion === 'v1' && o.metadata.name === namespace,
  )
  const injection = analyzeInjectionWebhooks(snapshot.objects)
  const nsAnalysis = analyzeNamespace(namespace, namespaceObject, {webhooks: injection.webhooks})
  const workloadAnalysis = analyzeWorkloads(snapshot.objects, nsAnalysis.state, {webhooks: injection.webhooks})
  const serviceAnalysis = analyzeServices(snapshot.objects, namespace, workloadAnalysis.workloads)

  const base: ClassifyContext = {
    namespace,
    rootNamespace: snapshot.rootNamespace,
    namespaceState: nsAnalysis.state,
    workloads: workloadAnalysis.workloads,
    services: serviceAnalysis.services,
    objects: snapshot.objects,
    ...((options.istioVersion ?? snapshot.istioVersion)
      ? {istioVersion: options.istioVersion ?? snapshot.istioVersion}
      : {}),
    waypointPlanned: false,
    ...(options.earlierWaypoints ? {earlierWaypoints: options.earlierWaypoints} : {}),
    ...(options.waypointsAsked ? {waypointsAsked: options.waypointsAsked} : {}),
  }
  return {base, injection, nsAnalysis, workloadAnalysis, serviceAnalysis}
}

/**
 * The context every object is classified in: `base`, with waypointPlanned when the namespace needs a waypoint. That
 * depends only on its own and the root namespace's objects (needsWaypoint), so only those are classified to decide it:
 * a fleet's namespace may see hundreds of other namespaces' objects.
 */
function classifyingContext(base: ClassifyContext): ClassifyContext {
  const ownOrRoot = (o: KubeObject) => [base.namespace, base.rootNamespace].includes(namespaceOf(o, base))
  const own = classifyObjects(base, ownOrRoot).items
  return needsWaypoint(base.namespace, own, serviceAccountOnly(base)) ? {...base, waypointPlanned: true} : base
}

/**
 * The inventory items of the objects `only` picks, as buildInventory classifies them (plan -A: which of the routing a
 * namespace loses would be kept by other namespaces' waypoints, without classifying the rest of what it sees again).
 */
export function classifySome(
  snapshot: SourceSnapshot,
  options: InventoryOptions,
  only: (obj: KubeObject) => boolean,
): InventoryItem[] {
  return classifyObjects(classifyingContext(analyse(snapshot, options).base), only).items
}

/** What a namespace's inventory is built on: its own analyses and the context its objects are classified in. */
export type InventoryBasis = ReturnType<typeof analyse> & {ctx: ClassifyContext}

/** The basis alone: whether the namespace needs a waypoint (ctx.waypointPlanned) is known from it. */
export function inventoryBasis(snapshot: SourceSnapshot, options: InventoryOptions): InventoryBasis {
  const analysed = analyse(snapshot, options)
  return {...analysed, ctx: classifyingContext(analysed.base)}
}

/**
 * The namespace's inventory. `only` leaves objects out of it (they stay in the context every other object is
 * classified in): plan -A leaves out other namespaces' routing their own waypoints apply. `basis` when already built
 * (with the same snapshot and options).
 */
export function buildInventory(
  snapshot: SourceSnapshot,
  options: InventoryOptions,
  only?: (obj: KubeObject) => boolean,
  basis: InventoryBasis = inventoryBasis(snapshot, options),
): Inventory {
  const namespace = snapshot.namespace
  const {base, injection, nsAnalysis, workloadAnalysis, serviceAnalysis, ctx} = basis
  const waypointRequired = ctx.waypointPlanned
  let classified = classifyObjects(ctx, only)
  // Issue 21 point 1, E9: L7 policies whose waypoint copy would never attach cannot be carried.
  if (waypointRequired)
    classified = uncarriableBlockers({...base, waypointPlanned: true}, classified, serviceAccountOnly(base))

  const missingKindFindings: Finding[] = snapshot.missingKinds.map((m) =>
    finding(
      'MissingKind',
      undefined,
      {variant: m.reason === 'forbidden' ? 'forbidden' : 'notServed', kind: m.kind, apiVersion: m.apiVersion},
      {id: `missing-kind/${m.apiVersion}/${m.kind}`},
    ),
  )

  const findings = [
    ...snapshot.findings,
    ...missingKindFindings,
    ...injection.findings,
    ...nsAnalysis.findings,
    ...workloadAnalysis.findings,
    ...serviceAnalysis.findings,
    ...servicePortFindings(serviceAnalysis.services, {
      waypointPlanned: waypointRequired,
      waypointFor: options.waypointFor,
    }),
    ...classified.findings,
  ]
  findings.push(...blockerFindings(classified.items, findings))

  return {
    namespace,
    rootNamespace: snapshot.rootNamespace,
    namespaceState: nsAnalysis.state,
    waypointRequired,
    injectionByDefault: injection.webhooks.enabledByDefault,
    objects: [...classified.items].sort((a, b) => compareRefs(a.ref, b.ref)),
    workloads: [...workloadAnalysis.workloads].sort((a, b) => compareRefs(a.ref, b.ref)),
    services: [...serviceAnalysis.services].sort((a, b) => compareRefs(a.ref, b.ref)),
    findings: normalizeFindings(groupLostRouting(namespace, findings, snapshot.objects)),
  }
}
