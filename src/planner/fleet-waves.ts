// Migration waves of a fleet: the namespaces ordered by their cross-namespace dependencies. Pure.
// An edge `from → to` means "migrate `from` in an earlier wave than `to`". Namespaces whose edges form
// a cycle cannot be ordered; they share one wave and the cycle is reported with its edges.

/** Why one namespace should be migrated before another (see fleet.ts for how each is derived). */
export type FleetEdgeKind =
  /** `from` calls `to` (its routing names `to`'s Services), and `to`'s L7 policies will be enforced only by its waypoint, which sidecars bypass. */
  | 'waypoint-bypass'
  /** `from`'s exported VirtualServices/DestinationRules apply to `to`'s callers; only `from`'s waypoint keeps applying them (E11/E12). */
  | 'routing'
  /** An L7 AuthorizationPolicy of `to` names `from`'s namespace or service accounts: `from`'s sidecars would bypass `to`'s waypoint. */
  | 'authorization'
  /** `to` uses a waypoint of `from` (istio.io/use-waypoint-namespace). */
  | 'shared-waypoint'

export interface FleetEdge {
  from: string
  to: string
  kind: FleetEdgeKind
  reason: string
  /** The objects the edge comes from ("Kind ns/name"). */
  refs: string[]
}

export interface FleetCycle {
  namespaces: string[]
  /** The edges between the cycle's namespaces. */
  edges: FleetEdge[]
  suggestion: string
}

export interface FleetWaves {
  /** Wave 1 first; namespaces sorted by name within a wave. */
  waves: string[][]
  cycles: FleetCycle[]
}

const byName = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)

const KIND_ORDER: FleetEdgeKind[] = ['shared-waypoint', 'routing', 'authorization', 'waypoint-bypass']

/** The order edges are listed in: by `from`, then `to`, then kind. */
export function compareEdges(a: FleetEdge, b: FleetEdge): number {
  return byName(a.from, b.from) || byName(a.to, b.to) || KIND_ORDER.indexOf(a.kind) - KIND_ORDER.indexOf(b.kind)
}

/** Tarjan's strongly connected components (iterative deepening is not needed: fleets are hundreds, not millions). */
function components(nodes: string[], next: Map<string, string[]>): string[][] {
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  const out: string[][] = []
  let counter = 0
  const visit = (v: string): void => {
    index.set(v, counter)
    low.set(v, counter++)
    stack.push(v)
    onStack.add(v)
    for (const w of next.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w)
        low.set(v, Math.min(low.get(v)!, low.get(w)!))
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!))
      }
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = []
      for (;;) {
        const w = stack.pop()!
        onStack.delete(w)
        component.push(w)
        if (w === v) break
      }
      out.push(component.sort(byName))
    }
  }
  for (const v of nodes) if (!index.has(v)) visit(v)
  return out
}

/** What to do about a cycle, from the kinds of edges that form it (the whole cycle: plans/fleet.yaml). */
export function cycleSuggestion(namespaces: string[], edges: FleetEdge[]): string {
  return suggestion(namespaces.join(', '), edges, edges)
}

/**
 * What to do about a cycle, as the plan of `namespace` says it: the same protocol, naming only this namespace's
 * own edges (a plan's size must not grow with the cycle: issue 22 §5). `members` says which namespaces.
 */
export function cycleSuggestionFor(namespace: string, members: string, cycle: FleetCycle, own: FleetEdge[]): string {
  return suggestion(
    members,
    own.filter((e) => e.to === namespace),
    cycle,
  )
}

// Whether a cycle has L7 policy edges: asked by the plan of each of its namespaces, found once per cycle.
const HAS_L7_EDGES = new WeakMap<FleetCycle | FleetEdge[], boolean>()

/** `routing`: the edges whose exported routing is lost to callers; `all`: the edges deciding the L7 sentence. */
function suggestion(members: string, edges: FleetEdge[], all: FleetEdge[] | FleetCycle): string {
  const routing = edges.filter((e) => e.kind === 'routing')
  let l7 = HAS_L7_EDGES.get(all)
  if (l7 === undefined)
    HAS_L7_EDGES.set(
      all,
      (l7 = ('edges' in all ? all.edges : all).some((e) => e.kind === 'waypoint-bypass' || e.kind === 'authorization')),
    )
  const parts = [
    `Migrate ${members} together in one wave: apply each plan up to its bind-waypoint step first (mesh-migrate apply NS --to bind-waypoint), then the remaining steps (apply NS --all), so that every waypoint is in place before any caller switches.`,
  ]
  if (routing.length > 0)
    parts.push(
      'Apply keeps that order: a plan of the cycle is applied past its bind-waypoint step only once every namespace of the cycle whose routing it applies has applied its own (exit 5 otherwise; mesh-migrate apply --fleet runs the cycle so).',
    )
  if (l7) {
    parts.push(
      'L7 policies enforced by their waypoints do not apply to the remaining sidecar callers until those restart: accept that window, or break the cycle (e.g. drop the L7 part of the policies naming the other namespaces).',
    )
  }
  return parts.join(' ')
}

/**
 * Waves: each namespace goes one wave after the latest namespace it depends on (longest path in the
 * graph of strongly connected components); ties are broken by name, so the same edges give the same waves.
 */
export function computeWaves(namespaces: string[], edges: FleetEdge[]): FleetWaves {
  const nodes = [...new Set(namespaces)].sort(byName)
  const known = new Set(nodes)
  const relevant = edges.filter((e) => e.from !== e.to && known.has(e.from) && known.has(e.to))
  // Sets first, sorted once: re-sorting per edge is quadratic in a namespace's edges (routing exported to all).
  const targets = new Map<string, Set<string>>()
  for (const e of relevant) targets.set(e.from, (targets.get(e.from) ?? new Set()).add(e.to))
  const next = new Map([...targets].map(([from, to]) => [from, [...to].sort(byName)]))

  const comps = components(nodes, next)
  const compOf = new Map<string, number>()
  comps.forEach((c, i) => c.forEach((n) => compOf.set(n, i)))
  // Tarjan emits components in reverse topological order: walk them backwards to see predecessors first.
  const wave = new Array<number>(comps.length).fill(1)
  for (let i = comps.length - 1; i >= 0; i--) {
    for (const n of comps[i]!) {
      for (const w of next.get(n) ?? []) {
        const j = compOf.get(w)!
        if (j !== i) wave[j] = Math.max(wave[j]!, wave[i]! + 1)
      }
    }
  }
  const waves: string[][] = []
  comps.forEach((c, i) => {
    const k = wave[i]! - 1
    waves[k] = [...(waves[k] ?? []), ...c].sort(byName)
  })

  const inside = new Map<number, FleetEdge[]>()
  for (const e of relevant) {
    const i = compOf.get(e.from)!
    if (i !== compOf.get(e.to)) continue
    const edges = inside.get(i) ?? []
    edges.push(e)
    inside.set(i, edges)
  }
  const cycles: FleetCycle[] = comps
    .map((c, i) => ({c, edges: inside.get(i) ?? []}))
    .filter(({c}) => c.length > 1)
    .map(({c, edges}) => ({namespaces: c, edges, suggestion: cycleSuggestion(c, edges)}))
    .sort((a, b) => byName(a.namespaces[0]!, b.namespaces[0]!))
  return {waves: waves.filter((w) => w !== undefined), cycles}
}

/** namespace → its wave (1-based). */
export function waveIndex(waves: string[][]): Map<string, number> {
  const out = new Map<string, number>()
  waves.forEach((w, i) => w.forEach((n) => out.set(n, i + 1)))
  return out
}
