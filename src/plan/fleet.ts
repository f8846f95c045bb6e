// Fleet planning (issue 11 §4): the plans of many namespaces from one read of the cluster, and the
// fleet overview (plans/fleet.yaml) ordering them into migration waves from the cross-namespace
// dependencies the inventory sees. Pure: snapshots in, plans and the overview out.
import {finding} from '../planner/findings/finding.js'
import {hostServiceNamespace, resolveHost} from '../planner/classify/hosts.js'
import {isRecord} from '../planner/json.js'
import {list} from '../planner/classify/results.js'
import {
  compareEdges,
  type FleetCycle,
  type FleetEdge,
  computeWaves,
  cycleSuggestionFor,
  waveIndex,
} from '../planner/fleet-waves.js'
import type {AuthorizationPolicySpec} from '../planner/istio-types.js'
import {buildInventory, type InventoryOptions, inventoryBasis, normalizeFindings} from '../planner/inventory.js'
import type {Finding, Inventory, InventoryItem, KubeObject, SourceSnapshot, SourceTarget} from '../planner/model.js'
import {INJECTION_IGNORED_NAMESPACES, parseLabelSelector, selectorMatches} from '../planner/namespace.js'
import {buildPlan, isMigrating} from './plan-builder.js'
import {
  type CoveredRouting,
  type KeptByNamespace,
  keptRouting,
  type Member,
  objectKey,
  routingCandidates,
  judgedObjects,
  routingEdges,
} from './fleet-routing.js'
import {fleetViews, visible} from './fleet-visibility.js'
import {FLEET_FILE, FLEET_KIND, PLAN_API_VERSION, type MigrationPlan, type PlanOptions} from '../planner/plan-types.js'
import {formatRef, groupOf, refKey, refOf} from '../planner/refs.js'
import {
  GATEWAY_API_GROUP,
  NAMESPACE_NAME_LABEL,
  NETWORKING,
  SECURITY,
  USE_WAYPOINT_LABEL,
  USE_WAYPOINT_NAMESPACE_LABEL,
} from '../planner/vocab.js'

export {computeWaves, type FleetCycle, type FleetEdge}

export {FLEET_FILE, FLEET_KIND}

/** Which namespaces a fleet plan covers, as the user chose them. */
export type FleetSelection = {allNamespaces: true} | {selector: string} | {namespaces: string[]}

export type FleetNamespaceResult = 'ready' | 'blocked' | 'nothing-to-migrate'

export interface FleetNamespace {
  name: string
  wave: number
  /** The plan file written for it (absent when there is nothing to migrate). */
  plan?: string
  result: FleetNamespaceResult
  from: string
  waypointRequired: boolean
  steps: number
  /** Ids of the plan's blockers (what --accept-lost/--accept-hazard or a fix must clear). */
  blockers: string[]
}

export interface FleetPlan {
  apiVersion: typeof PLAN_API_VERSION
  kind: typeof FLEET_KIND
  metadata: {name: 'fleet'; generator: string}
  spec: {
    target: SourceTarget
    selection: FleetSelection
    /** Given once for the fleet; every plan carries them. */
    options: PlanOptions
    summary: {namespaces: number; waves: number; edges: number; cycles: number; blocked: number}
    waves: {wave: number; namespaces: string[]}[]
    namespaces: FleetNamespace[]
    edges: FleetEdge[]
    cycles: FleetCycle[]
  }
}

export interface FleetInput {
  /** One snapshot per selected namespace (each holds every object that namespace's plan may look at). */
  snapshots: SourceSnapshot[]
  /** Every object of the snapshots, each once, when the read has them so (FleetRead.objects). */
  objects?: KubeObject[]
  selection: FleetSelection
  options: PlanOptions
  inventory: InventoryOptions
  generator: string
  istioVersion?: string
  /** --trust-domain (issue 21 point 8). */
  trustDomain?: string
  /** Where the plan of a namespace is written (for the overview). */
  planPath: (namespace: string) => string
  /** Where the fleet overview is written (the plans point to it for what is listed once: a cycle's edges). */
  fleetPath: string
  /** Write plans of namespaces with nothing to migrate too (explicitly named namespaces). */
  keepEmpty: boolean
}

// ---------------------------------------------------------------------------------------------
// Dependencies

const addEdge = (edges: Map<string, FleetEdge>, e: FleetEdge) => {
  const key = `${e.from}\0${e.to}\0${e.kind}`
  const seen = edges.get(key)
  if (!seen) edges.set(key, {...e, refs: [...new Set(e.refs)].sort()})
  else seen.refs = [...new Set([...seen.refs, ...e.refs])].sort()
}

/** Istio string match (exact, prefix*, *suffix, *) against a namespace name. */
function namesMatch(pattern: string, name: string): boolean {
  if (pattern === '*') return false // names every namespace, none in particular: no ordering
  if (pattern.endsWith('*')) return name.startsWith(pattern.slice(0, -1))
  if (pattern.startsWith('*')) return name.endsWith(pattern.slice(1))
  return pattern === name
}

/** Namespaces an AuthorizationPolicy names as sources (namespaces, principals …/ns/X/sa/…, serviceAccounts X/sa, when source.*). */
export function namedSourceNamespaces(
  spec: AuthorizationPolicySpec,
  fleet: string[],
): {namespace: string; path: string}[] {
  const out: {namespace: string; path: string}[] = []
  const add = (path: string, patterns: string[], toNs: (p: string) => string | undefined) => {
    for (const p of patterns) {
      const pattern = toNs(p)
      if (pattern !== undefined) for (const ns of fleet) if (namesMatch(pattern, ns)) out.push({namespace: ns, path})
    }
  }
  const principalNs = (p: string) => /(?:^|\/)ns\/([^/]+)\/sa\//.exec(p)?.[1]
  ;(Array.isArray(spec.rules) ? spec.rules : []).forEach((rule, i) => {
    ;(Array.isArray(rule?.from) ? rule.from : []).forEach((f, j) => {
      const s = f?.source
      if (!isRecord(s)) return
      const path = `spec.rules[${i}].from[${j}].source`
      add(`${path}.namespaces`, list(s.namespaces) ?? [], (p) => p)
      add(`${path}.principals`, list(s.principals) ?? [], principalNs)
      add(`${path}.serviceAccounts`, list(s.serviceAccounts) ?? [], (p) =>
        p.includes('/') ? p.split('/')[0] : undefined,
      )
    })
    ;(Array.isArray(rule?.when) ? rule.when : []).forEach((c, j) => {
      const values = list(c?.values) ?? []
      if (c?.key === 'source.namespace') add(`spec.rules[${i}].when[${j}]`, values, (p) => p)
      if (c?.key === 'source.principal') add(`spec.rules[${i}].when[${j}]`, values, principalNs)
    })
  })
  return out
}

/** Namespaces whose Services an object of a caller namespace addresses (routing hosts, destinations, route parents and backends). */
function addressedNamespaces(obj: KubeObject): string[] {
  const ns = obj.metadata.namespace ?? ''
  const spec = isRecord(obj.spec) ? obj.spec : {}
  const hosts: string[] = []
  if (obj.kind === 'VirtualService') {
    hosts.push(...(list(spec.hosts) ?? []))
    for (const section of ['http', 'tcp', 'tls'] as const) {
      for (const r of Array.isArray(spec[section]) ? spec[section] : [])
        for (const d of Array.isArray(r?.route) ? r.route : [])
          if (d?.destination?.host) hosts.push(String(d.destination.host))
    }
  } else if (obj.kind === 'DestinationRule' && spec.host) {
    hosts.push(String(spec.host))
  }
  const out = hosts.map((h) => hostServiceNamespace(resolveHost(h, ns))).filter((x): x is string => x !== undefined)
  if (groupOf(obj.apiVersion) === GATEWAY_API_GROUP) {
    for (const r of [
      ...(Array.isArray(spec.parentRefs) ? spec.parentRefs : []),
      ...(Array.isArray(spec.rules) ? spec.rules.flatMap((x: {backendRefs?: unknown[]}) => x?.backendRefs ?? []) : []),
    ]) {
      if (isRecord(r) && r.kind === 'Service' && (r.group === '' || r.group === 'core' || r.group === undefined))
        out.push(String(r.namespace ?? ns))
    }
  }
  return out
}

/** The namespace's own L7 policies: what only its waypoint will enforce once it is ambient. */
function l7Policies(m: Member): string[] {
  const kinds = new Set(['AuthorizationPolicy', 'RequestAuthentication', 'WasmPlugin'])
  return m.inventory.objects
    .filter(
      (i) =>
        i.ref.namespace === m.namespace &&
        kinds.has(i.ref.kind) &&
        i.verdict === 'L7' &&
        ['retarget', 'keep', 'keep-verify'].includes(i.action),
    )
    .map((i) => formatRef(i.ref))
}

function sharedWaypointEdges(members: Member[], fleet: Set<string>, edges: Map<string, FleetEdge>): void {
  for (const m of members) {
    const nsLabels = m.inventory.namespaceState.labels
    const users: {waypointNs: string; waypoint: string; ref: string}[] = []
    if (nsLabels[USE_WAYPOINT_LABEL] && nsLabels[USE_WAYPOINT_NAMESPACE_LABEL])
      users.push({
        waypointNs: nsLabels[USE_WAYPOINT_NAMESPACE_LABEL],
        waypoint: nsLabels[USE_WAYPOINT_LABEL],
        ref: `Namespace ${m.namespace}`,
      })
    for (const s of m.inventory.services) {
      const l = s.labels ?? {}
      if (l[USE_WAYPOINT_LABEL] && l[USE_WAYPOINT_NAMESPACE_LABEL])
        users.push({
          waypointNs: l[USE_WAYPOINT_NAMESPACE_LABEL],
          waypoint: l[USE_WAYPOINT_LABEL],
          ref: formatRef(s.ref),
        })
    }
    for (const u of users) {
      if (u.waypointNs === m.namespace || !fleet.has(u.waypointNs)) continue
      addEdge(edges, {
        from: u.waypointNs,
        to: m.namespace,
        kind: 'shared-waypoint',
        reason: `${m.namespace} uses waypoint ${u.waypointNs}/${u.waypoint} (${USE_WAYPOINT_NAMESPACE_LABEL}); it must exist and be ready before ${m.namespace} switches, so ${u.waypointNs} goes first.`,
        refs: [u.ref],
      })
    }
  }
}

function authorizationEdges(members: Member[], fleet: string[], edges: Map<string, FleetEdge>): void {
  for (const d of members) {
    if (!d.migrating) continue
    const l7 = new Set(l7Policies(d).filter((r) => r.startsWith('AuthorizationPolicy ')))
    for (const obj of d.snapshot.objects) {
      if (
        obj.kind !== 'AuthorizationPolicy' ||
        groupOf(obj.apiVersion) !== SECURITY ||
        obj.metadata.namespace !== d.namespace
      )
        continue
      const ref = formatRef(refOf(obj))
      if (!l7.has(ref)) continue
      for (const named of namedSourceNamespaces(isRecord(obj.spec) ? obj.spec : {}, fleet)) {
        if (named.namespace === d.namespace) continue
        addEdge(edges, {
          from: named.namespace,
          to: d.namespace,
          kind: 'authorization',
          reason: `${ref} names ${named.namespace} (${named.path}); its L7 rules will be enforced only by ${d.namespace}'s waypoint, which ${named.namespace}'s sidecars bypass: migrate ${named.namespace} first.`,
          refs: [ref],
        })
      }
    }
  }
}

function bypassEdges(members: Member[], fleet: Set<string>, edges: Map<string, FleetEdge>): void {
  const policies = new Map(
    members.filter((m) => m.migrating && m.inventory.waypointRequired).map((m) => [m.namespace, l7Policies(m)]),
  )
  const callerKinds = new Set([
    `${NETWORKING}/VirtualService`,
    `${NETWORKING}/DestinationRule`,
    `${GATEWAY_API_GROUP}/HTTPRoute`,
    `${GATEWAY_API_GROUP}/GRPCRoute`,
  ])
  const seen = new Set<string>()
  for (const c of members) {
    if (!c.migrating) continue
    for (const obj of c.snapshot.objects) {
      if (
        obj.metadata.namespace !== c.namespace ||
        !callerKinds.has(`${groupOf(obj.apiVersion)}/${obj.kind}`) ||
        seen.has(refKey(refOf(obj)))
      )
        continue
      seen.add(refKey(refOf(obj)))
      for (const d of new Set(addressedNamespaces(obj))) {
        const l7 = policies.get(d)
        if (d === c.namespace || !fleet.has(d) || !l7 || l7.length === 0) continue
        addEdge(edges, {
          from: c.namespace,
          to: d,
          kind: 'waypoint-bypass',
          reason: `${c.namespace} calls ${d} (${formatRef(refOf(obj))} addresses its Services); ${d}'s L7 policies (${l7.join(', ')}) will be enforced only by its waypoint, which ${c.namespace}'s sidecars bypass: migrate ${c.namespace} first.`,
          refs: [formatRef(refOf(obj))],
        })
      }
    }
  }
}

export function fleetEdges(
  members: Member[],
  input: FleetInput,
  kept: KeptByNamespace,
): {edges: FleetEdge[]; covered: CoveredRouting} {
  const names = members.map((m) => m.namespace)
  const edges = new Map<string, FleetEdge>()
  sharedWaypointEdges(members, new Set(names), edges)
  authorizationEdges(members, names, edges)
  bypassEdges(members, new Set(names), edges)
  // Routing edges are one per pair already (their refs sorted, shared by the pairs alike: fleet-routing.ts).
  const routing = routingEdges(members, kept, input.inventory, input.options.waypointName)
  const sorted = [...edges.values(), ...routing.edges].sort(compareEdges)
  return {edges: sorted, covered: routing.covered}
}

// ---------------------------------------------------------------------------------------------
// Plans and the overview

/** The fleet's facts as one namespace's plan states them: only what touches it (a plan's size must not grow with the fleet). */
interface OrderContext {
  wave: Map<string, number>
  /** namespace → the edges from or to it. */
  touching: Map<string, FleetEdge[]>
  /** namespace → its cycle and the cycle's index in the fleet file. */
  cycleOf: Map<string, {cycle: FleetCycle; index: number}>
  fleetFile: string
}

function orderContext(
  edges: FleetEdge[],
  wave: Map<string, number>,
  cycles: FleetCycle[],
  fleetFile: string,
): OrderContext {
  const touching = new Map<string, FleetEdge[]>()
  const add = (ns: string, e: FleetEdge) => {
    const list = touching.get(ns) ?? []
    list.push(e)
    touching.set(ns, list)
  }
  for (const e of edges) {
    add(e.from, e)
    if (e.to !== e.from) add(e.to, e)
  }
  const cycleOf = new Map(cycles.flatMap((cycle, index) => cycle.namespaces.map((ns) => [ns, {cycle, index}] as const)))
  return {wave, touching, cycleOf, fleetFile}
}

/** What the plan of `namespace` counts on: the namespaces before it (one finding per wave), and its cycle. */
function orderFindings(namespace: string, context: OrderContext): Finding[] {
  const {wave} = context
  const out: Finding[] = []
  const mine = wave.get(namespace)!
  const own = context.touching.get(namespace) ?? []
  const byWave = new Map<number, FleetEdge[]>()
  for (const e of own) {
    const w = wave.get(e.from)!
    if (e.to !== namespace || w >= mine) continue
    const list = byWave.get(w)
    if (list) list.push(e)
    else byWave.set(w, [e])
  }
  for (const [w, edges] of [...byWave].sort(([a], [b]) => a - b)) {
    const from = [...new Set(edges.map((e) => e.from))]
    const at = {id: `fleet-order/wave-${w}`, severity: 'warning'} as const
    out.push(
      from.length === 1
        ? finding(
            'FleetOrder',
            undefined,
            {
              variant: 'one',
              from: from[0]!,
              wave: w,
              mine,
              reasons: edges.map((e) => edgeReason(namespace, e)).join(' '),
            },
            at,
          )
        : finding(
            'FleetOrder',
            undefined,
            {
              variant: 'many',
              count: from.length,
              wave: w,
              mine,
              reasons: manyReasons(namespace, edges),
              fleetFile: context.fleetFile,
            },
            at,
          ),
    )
  }
  const inCycle = context.cycleOf.get(namespace)
  if (inCycle) out.push(cycleFinding(namespace, own, mine, inCycle, context.fleetFile))
  return out
}

// Edges alike share their refs (fleet-routing.ts): each list is worded once, not once per plan that names it.
const NAMES_BY_KIND = new WeakMap<string[], string>()

/** "VirtualService svc-0, svc-1; DestinationRule svc-0" from the refs (`Kind ns/name`) of one namespace. */
function namesByKind(refs: string[]): string {
  let text = NAMES_BY_KIND.get(refs)
  if (text === undefined) NAMES_BY_KIND.set(refs, (text = wordRefs(refs)))
  return text
}

function wordRefs(refs: string[]): string {
  const byKind = new Map<string, string[]>()
  for (const r of refs) {
    const [kind, path] = [r.slice(0, r.indexOf(' ')), r.slice(r.indexOf(' ') + 1)]
    byKind.set(kind, [...(byKind.get(kind) ?? []), path.slice(path.indexOf('/') + 1)])
  }
  return [...byKind].map(([kind, names]) => `${kind} ${names.join(', ')}`).join('; ')
}

/** An edge's reason as the plan of its `to` says it: routing names this namespace (the fleet file's covers all). */
function edgeReason(namespace: string, e: FleetEdge): string {
  if (e.kind !== 'routing') return e.reason
  const one = e.refs.length === 1
  const what = one ? e.refs[0]! : `${namesByKind(e.refs)} of ${e.from}`
  return `${what} ${one ? 'is' : 'are'} exported to ${namespace} and applied by its sidecars today; once ${namespace} is ambient only ${e.from}'s waypoint applies ${one ? 'it' : 'them'} (E11), so ${e.from} goes first.`
}

/**
 * The reasons of several namespaces of one wave: their routing in one sentence naming each namespace's objects (the
 * plan leaves that routing out of its inventory), the other edges with their own reasons.
 */
function manyReasons(namespace: string, edges: FleetEdge[]): string {
  const routing = edges.filter((e) => e.kind === 'routing')
  const parts =
    routing.length === 0
      ? []
      : [
          `their routing exported to ${namespace} and applied by its sidecars today, which once ${namespace} is ambient only each one's own waypoint applies (E11): ${routing.map((e) => `${e.from} (${namesByKind(e.refs)})`).join(', ')}.`,
        ]
  return [...parts, ...edges.filter((e) => e.kind !== 'routing').map((e) => e.reason)].join(' ')
}

/**
 * For each wave (index wave - 1), the waypoint namespaces of the waves before it (name by namespace), built once per wave and
 * shared by its members: built per namespace it cost the fleet's size for each of them.
 */
function earlierWaypointsByWave(
  waves: string[][],
  waypointNs: ReadonlySet<string>,
  waypointName: string,
): Record<string, string>[] {
  const byWave: Record<string, string>[] = []
  let sofar: Record<string, string> = {}
  for (const members of waves) {
    byWave.push(sofar)
    const added = members.filter((ns) => waypointNs.has(ns))
    if (added.length > 0) sofar = {...sofar, ...Object.fromEntries(added.map((ns) => [ns, waypointName]))}
  }
  return byWave
}
/**
 * The cycle as the plan of `namespace` states it: its own edges in the cycle, how many namespaces and edges
 * the cycle has, and where the whole cycle is listed once. Named by the cycle's first namespace (cycles are disjoint).
 */
/** The routing of the cycle's other namespaces this one applies today, which the plan leaves out of its inventory. */
function keptInCycle(namespace: string, inside: FleetEdge[]): string {
  const routing = inside.filter((e) => e.kind === 'routing' && e.to === namespace)
  if (routing.length === 0) return ''
  return ` The routing of the others it applies today is kept by their waypoints, bound before it switches (E11): ${routing.map((e) => `${e.from} (${namesByKind(e.refs)})`).join(', ')}.`
}

function cycleFinding(
  namespace: string,
  own: FleetEdge[],
  wave: number,
  {cycle, index}: {cycle: FleetCycle; index: number},
  fleetFile: string,
): Finding {
  const members = new Set(cycle.namespaces)
  const inside = own.filter((e) => e.from !== e.to && members.has(e.from) && members.has(e.to))
  const others = cycle.namespaces.length - 1
  return finding(
    'FleetCycle',
    undefined,
    {
      others,
      wave,
      edges: inside.map((e) => `${e.from} → ${e.to} (${e.kind})`),
      kept: keptInCycle(namespace, inside),
      cycleEdges: cycle.edges.length,
      fleetFile,
      index,
      suggestion: cycleSuggestionFor(
        namespace,
        `this namespace and the ${others} other namespace(s) of its cycle (${fleetFile}, spec.cycles[${index}])`,
        cycle,
        inside,
      ),
    },
    {id: `fleet-cycle/${cycle.namespaces[0]}`},
  )
}

/**
 * The inventory as a plan of the fleet lists it: another member's objects appear only when this namespace's migration
 * changes what they do for it (lost, kept by a step, blocking). Those it leaves as they are (inert, or applied by their
 * own namespace's waypoint) are that namespace's plan's to list; repeated in every plan they made each plan grow with
 * the fleet.
 */
function ownConcerns(inventory: Inventory, fleet: ReadonlySet<string>): Inventory {
  const unchangedElsewhere = (i: InventoryItem) =>
    i.ref.namespace !== inventory.namespace &&
    fleet.has(i.ref.namespace ?? '') &&
    (i.verdict === 'inert' || i.verdict === 'unaffected')
  return inventory.objects.some(unchangedElsewhere)
    ? {...inventory, objects: inventory.objects.filter((i) => !unchangedElsewhere(i))}
    : inventory
}

/** The objects an inventory leaves out, as the filter buildInventory takes (undefined: none). */
function leaving(keys: Iterable<string> | undefined, namespace: string): ((o: KubeObject) => boolean) | undefined {
  const out = new Set(keys ?? [])
  // A namespace's own objects are never left out (most of what it sees): only other namespaces' are looked up.
  return out.size === 0
    ? undefined
    : (o) =>
        o.metadata.namespace === undefined || o.metadata.namespace === namespace || !out.has(objectKey(o, namespace))
}

/**
 * The waypoints bound before a namespace switches: those of the earlier waves, and, in a cycle, those of the cycle's
 * namespaces (the protocol binds every waypoint of a cycle before any of its namespaces switches; apply keeps it). Built
 * once per cycle: a namespace's own waypoint among them is never asked for (waypoints.ts plannedWaypoint).
 */
function waypointsBoundFirst(
  context: OrderContext,
  earlierByWave: Record<string, string>[],
  waypointNs: ReadonlySet<string>,
  waypointName: string,
): (namespace: string) => Record<string, string> {
  const earlier = (namespace: string) => earlierByWave[context.wave.get(namespace)! - 1]!
  const byCycle = new Map<FleetCycle, Record<string, string>>()
  return (namespace) => {
    const cycle = context.cycleOf.get(namespace)?.cycle
    if (!cycle) return earlier(namespace)
    let first = byCycle.get(cycle)
    if (!first) {
      const own = cycle.namespaces.filter((ns) => waypointNs.has(ns)).map((ns) => [ns, waypointName] as const)
      byCycle.set(cycle, (first = {...earlier(namespace), ...Object.fromEntries(own)}))
    }
    return first
  }
}

/** What the inventory of `namespace` leaves out: lost routing (found again) kept by waypoints bound before it switches. */
function leftOut(namespace: string, covered: CoveredRouting, first: Record<string, string>): string[] {
  return [...(covered.get(namespace) ?? [])].filter(([, from]) => from in first).map(([key]) => key)
}

function fleetNamespace(plan: MigrationPlan, wave: number, file: string | undefined): FleetNamespace {
  const s = plan.spec.summary
  const result: FleetNamespaceResult = s.blockers > 0 ? 'blocked' : s.steps === 0 ? 'nothing-to-migrate' : 'ready'
  return {
    name: plan.metadata.namespace,
    wave,
    ...(file ? {plan: file} : {}),
    result,
    from: s.from,
    waypointRequired: s.waypointRequired,
    steps: s.steps,
    blockers: plan.spec.blockers.map((b) => b.id),
  }
}

export interface FleetResult {
  fleet: FleetPlan
  /** The plans to write (namespaces with nothing to migrate are left out unless named explicitly). */
  plans: MigrationPlan[]
}

export function planFleet(input: FleetInput): FleetResult {
  // Each namespace sees only what can bear on it: planning stays linear in the fleet's size (issue 22 §5).
  const read = fleetViews(
    [...input.snapshots].sort((a, b) => (a.namespace < b.namespace ? -1 : 1)),
    input.objects,
  )
  // Routing other namespaces define for their own Services is judged once for the fleet and left out of each
  // namespace's view (fleet-routing.ts); whether a namespace migrates and needs a waypoint does not depend on it.
  const candidates = routingCandidates(read)
  const views = read.map((v) => visible(v, judgedObjects(candidates.get(v.source.namespace))))
  const asked = views.map(() => new Set<string>())
  const bases = views.map((view, i) => inventoryBasis(view, {...input.inventory, waypointsAsked: asked[i]!}))
  const migrating = new Set(
    views
      .filter((_, i) =>
        isMigrating({namespaceState: bases[i]!.nsAnalysis.state, workloads: bases[i]!.workloadAnalysis.workloads}),
      )
      .map((v) => v.namespace),
  )
  const kept = keptRouting(
    candidates,
    new Set(
      views.filter((v, i) => migrating.has(v.namespace) && bases[i]!.ctx.waypointPlanned).map((v) => v.namespace),
    ),
    migrating,
  )
  const members: Member[] = read.map(({source: full}, i) => {
    // The view already built is the namespace's when every candidate is kept (the common case); otherwise its
    // snapshot loses only what is kept, and the rest is classified as usual.
    const same = (kept.get(full.namespace)?.size ?? 0) === (candidates.get(full.namespace)?.size ?? 0)
    const snapshot = same ? views[i]! : visible(read[i]!, judgedObjects(kept.get(full.namespace)))
    const options = {...input.inventory, waypointsAsked: asked[i]!}
    const inventory = buildInventory(snapshot, options, undefined, same ? bases[i] : undefined)
    return {namespace: snapshot.namespace, snapshot, inventory, migrating: isMigrating(inventory), asked: asked[i]!}
  })
  const {edges, covered} = fleetEdges(members, input, kept)
  const {waves, cycles} = computeWaves(
    members.map((m) => m.namespace),
    edges,
  )
  const wave = waveIndex(waves)
  const context = orderContext(edges, wave, cycles, input.fleetPath)
  const waypointNs = new Set(members.filter((m) => m.migrating && m.inventory.waypointRequired).map((m) => m.namespace))

  const fleetNamespaces = new Set(members.map((m) => m.namespace))
  const plans: MigrationPlan[] = []
  const namespaces: FleetNamespace[] = []
  const fingerprints = new WeakMap<KubeObject, string>()
  const earlierByWave = earlierWaypointsByWave(waves, waypointNs, input.options.waypointName)
  const boundFirst = waypointsBoundFirst(context, earlierByWave, waypointNs, input.options.waypointName)
  for (const m of members) {
    const mine = wave.get(m.namespace)!
    const first = boundFirst(m.namespace)
    const order = orderFindings(m.namespace, context)
    const snapshot: SourceSnapshot = {...m.snapshot, findings: [...m.snapshot.findings, ...order]}
    // The inventory already built is the one (buildInventory is pure) when none of its classifications asked for a
    // waypoint bound first (the only way those change a verdict: waypoints.ts plannedWaypoint) and no lost routing
    // found again is kept; the fleet's order findings change no verdict, so they join its findings.
    const left = leftOut(m.namespace, covered, first)
    const assumed =
      left.length === 0 && ![...m.asked].some((ns) => ns in first)
        ? m.inventory
        : buildInventory(m.snapshot, {...input.inventory, earlierWaypoints: first}, leaving(left, m.namespace))
    const own = ownConcerns(assumed, fleetNamespaces)
    const inventory = order.length === 0 ? own : {...own, findings: normalizeFindings([...order, ...own.findings])}
    const plan = buildPlan({
      inventory,
      snapshot,
      options: input.options,
      generator: input.generator,
      ...(input.istioVersion ? {istioVersion: input.istioVersion} : {}),
      ...(input.trustDomain ? {trustDomain: input.trustDomain} : {}),
      fingerprints,
    })
    const written = input.keepEmpty || plan.spec.steps.length > 0 || plan.spec.blockers.length > 0
    if (written) plans.push(plan)
    namespaces.push(fleetNamespace(plan, mine, written ? input.planPath(m.namespace) : undefined))
  }

  const fleet: FleetPlan = {
    apiVersion: PLAN_API_VERSION,
    kind: FLEET_KIND,
    metadata: {name: 'fleet', generator: input.generator},
    spec: {
      target: read[0]?.source.target ?? {manifests: []},
      selection: input.selection,
      options: input.options,
      summary: {
        namespaces: namespaces.length,
        waves: waves.length,
        edges: edges.length,
        cycles: cycles.length,
        blocked: namespaces.filter((n) => n.result === 'blocked').length,
      },
      waves: waves.map((ns, i) => ({wave: i + 1, namespaces: ns})),
      namespaces,
      edges,
      cycles,
    },
  }
  return {fleet, plans}
}

/** Namespaces -A never plans: Kubernetes' own and the Istio root namespace. */
function systemNamespace(name: string, rootNamespace: string): boolean {
  return name === rootNamespace || INJECTION_IGNORED_NAMESPACES.includes(name)
}

/**
 * The namespaces a selection covers, sorted. Explicit names must exist (a typo is an error, not "nothing to
 * migrate"); -A and -l leave out Kubernetes' namespaces and the root namespace.
 */
export function selectNamespaces(
  namespaces: KubeObject[],
  selection: FleetSelection,
  rootNamespace: string,
): {selected: string[]; unknown: string[]} {
  const names = namespaces.map((n) => n.metadata.name)
  if ('namespaces' in selection) {
    const known = new Set(names)
    return {
      selected: [...new Set(selection.namespaces)].filter((n) => known.has(n)).sort(),
      unknown: selection.namespaces.filter((n) => !known.has(n)),
    }
  }
  const selector = 'selector' in selection ? parseLabelSelector(selection.selector) : undefined
  const selected = namespaces
    .filter((n) => !systemNamespace(n.metadata.name, rootNamespace))
    .filter(
      (n) =>
        !selector || selectorMatches(selector, {[NAMESPACE_NAME_LABEL]: n.metadata.name, ...(n.metadata.labels ?? {})}),
    )
    .map((n) => n.metadata.name)
  return {selected: [...new Set(selected)].sort(), unknown: []}
}
