// Step-by-step safety simulation (issue 5 §4; DOMAIN §2.2–§2.3, §3.1, §4.2–§4.3). Pure.
//
// From the inventory, the plan's steps and the policy decisions, compute at every step boundary of
// apply (and of a full rollback afterwards) each workload's data plane and, for each policy, where its
// intent is enforced. Intervals where a pod leaves the mesh or a policy is degraded / not enforced are
// hazards; those inside a documented window (the restart window, sidecar callers bypassing waypoints)
// are expected, the others must be accepted explicitly.
import type {WorkloadItem} from '../planner/model.js'
import {STEP_KINDS, stepKind, UNDO_ORDER} from '../steps/index.js'
import type {SimulationRole} from '../steps/types.js'
import type {PlanStep, StepAction} from '../planner/plan-types.js'
import {byCodePoint} from '../planner/order.js'
import {workloadKey} from '../planner/simulation-state.js'
import type {SimPolicy, SimState, SimulationInput} from '../planner/simulation-state.js'

export type DataPlane = 'sidecar' | 'ambient' | 'outside'

/** Where one policy's intent is enforced for one workload at one boundary. */
export type Enforcement =
  | 'sidecar' // the destination sidecar enforces the original
  | 'ztunnel' // ztunnel enforces it as written (L4)
  | 'waypoint' // the waypoint enforces the targetRefs copy for traffic through it; ztunnel keeps the L4 part
  | 'deny-all' // ztunnel: the L7 ALLOW matches nothing; only traffic the waypoint admits passes, if any
  | 'degraded' // ztunnel enforces a narrower/broader version and no waypoint copy is active
  | 'not-enforced' // nobody enforces it (ztunnel no-op/ignored, policy gone, pod outside the mesh)

export interface BoundaryState {
  /** "start", a step id after it was applied, or "undo <step id>" during rollback. */
  after: string
  dataPlanes: Record<string, DataPlane>
  /** policy key → enforcement → workload keys */
  policies: Record<string, Partial<Record<Enforcement, string[]>>>
  /**
   * policy key → workloads for which that ALLOW admits requests the waypoint denies: the waypoint enforces other
   * ALLOWs for their Services but not this one (absent when there are none).
   */
  waypointAllowGaps?: Record<string, string[]>
}

export type HazardKind =
  | 'pod-leaves-mesh'
  | 'policy-deny-all'
  | 'policy-not-enforced'
  | 'policy-degraded'
  | 'waypoint-identity'
  | 'waypoint-allow-gap'
  | 'sidecar-callers-bypass'

export interface Hazard {
  id: string
  kind: HazardKind
  phase: 'apply' | 'rollback'
  /** Boundary where it starts ("after <step>") and the step whose application ends it ("end" if it persists). */
  from: string
  until: string
  /** The documented window it lies in, if any: then it is expected, not a plan defect. */
  window?: 'restart' | 'rollback-restart' | 'sidecar-callers'
  policy?: string
  workloads: string[]
  message: string
}

export interface Simulation {
  apply: BoundaryState[]
  rollback: BoundaryState[]
  hazards: Hazard[]
}

function eligibleForCapture(w: WorkloadItem, state: SimState): boolean {
  const t = new Set(w.traits)
  return !t.has('host-network') && !t.has('dataplane-none') && !t.has('waypoint') && !state.optedOut.has(workloadKey(w))
}

function dataPlane(w: WorkloadItem, state: SimState): DataPlane {
  if (state.sidecar.get(workloadKey(w))) return 'sidecar'
  return state.ambientLabel && eligibleForCapture(w, state) ? 'ambient' : 'outside'
}

function present(step: StepAction | undefined, state: SimState): boolean {
  return step !== undefined && state.applied.has(step)
}

function enforcementOf(p: SimPolicy, w: WorkloadItem, state: SimState): Enforcement {
  const dp = dataPlane(w, state)
  const originalPresent = !present(p.deletedIn, state)
  const waypointActive =
    (p.appliedByWaypoint ? originalPresent : present(p.waypointCopyIn, state)) && state.waypointReady && state.bound
  if (dp === 'outside') return 'not-enforced'
  if (dp === 'sidecar') {
    if (!originalPresent) return waypointActive ? 'waypoint' : 'not-enforced'
    return 'sidecar'
  }
  // ambient
  // E22: the rewrite is the policy itself in a form ztunnel enforces (ALLOWs add up and the original's L7-only
  // rules match nothing; a DENY's blanked clauses never fire), so the original's presence changes nothing.
  if (present(p.rewrittenIn, state) && !waypointActive) return 'ztunnel'
  if (originalPresent) {
    switch (p.ztunnel ?? 'as-written') {
      case 'as-written':
        // With a waypoint in front, the identity rule is checked at the waypoint for service traffic
        // (ztunnel would only see the waypoint's identity there) and at ztunnel for direct traffic.
        return p.identityKeyed && waypointActive ? 'waypoint' : 'ztunnel'
      case 'deny-all':
        return 'deny-all'
      case 'no-op':
      case 'ignored':
        return waypointActive ? 'waypoint' : 'not-enforced'
      case 'narrowed':
      case 'broadened':
        return waypointActive ? 'waypoint' : 'degraded'
    }
  }
  if (waypointActive) return 'waypoint'
  return present(p.l4PartIn, state) ? 'degraded' : 'not-enforced'
}

function snapshot(after: string, input: SimulationInput, state: SimState): BoundaryState {
  const dataPlanes: Record<string, DataPlane> = {}
  for (const w of input.workloads) if (!w.traits.includes('waypoint')) dataPlanes[workloadKey(w)] = dataPlane(w, state)
  const byKey = new Map(input.workloads.map((w) => [workloadKey(w), w]))
  const policies: BoundaryState['policies'] = {}
  for (const p of input.policies) {
    const row: Partial<Record<Enforcement, string[]>> = {}
    for (const key of p.workloads) {
      const w = byKey.get(key)
      if (!w) continue
      const e = enforcementOf(p, w, state)
      ;(row[e] ??= []).push(key)
    }
    policies[p.key] = row
  }
  const gaps = waypointAllowGaps(input, state)
  return {after, dataPlanes, policies, ...(Object.keys(gaps).length > 0 ? {waypointAllowGaps: gaps} : {})}
}

/**
 * The waypoint evaluates ALLOW policies like any proxy (DOMAIN §3.1): for a Service with at least one ALLOW
 * attached at the waypoint, a request that none of them matches is denied. Every other ALLOW that admits
 * requests to the pods behind it, without an ALLOW of its own at the waypoint, loses those requests there.
 */
function waypointAllowGaps(input: SimulationInput, state: SimState): Record<string, string[]> {
  if (!state.waypointReady || !state.bound) return {}
  const enforcedAtWaypoint = (p: SimPolicy) =>
    p.action === 'ALLOW' &&
    !p.dryRun &&
    p.waypointAllowFor !== undefined &&
    (p.waypointCopyIn ? present(p.waypointCopyIn, state) : !present(p.deletedIn, state))
  const region = new Set(input.policies.filter(enforcedAtWaypoint).flatMap((p) => p.waypointAllowFor!))
  const gaps: Record<string, string[]> = {}
  if (region.size === 0) return gaps
  for (const p of input.policies) {
    if (p.action !== 'ALLOW' || p.dryRun || p.allowsNothing || present(p.deletedIn, state)) continue
    const covered = enforcedAtWaypoint(p) ? new Set(p.waypointAllowFor) : new Set<string>()
    const lost = p.workloads.filter((w) => region.has(w) && !covered.has(w))
    if (lost.length > 0) gaps[p.key] = [...lost].sort()
  }
  return gaps
}

function applyForward(step: PlanStep, input: SimulationInput, state: SimState): void {
  state.applied.add(step.action)
  stepKind(step.action).simulation?.forward?.(step, input, state)
}

function applyUndo(step: PlanStep, state: SimState): void {
  state.applied.delete(step.action)
  stepKind(step.action).simulation?.undo?.(step, state)
}

/** The action playing a role in the simulation's windows (restart, binding). */
function actionWith(role: SimulationRole): StepAction | undefined {
  return STEP_KINDS.find((k) => k.simulation?.role === role)?.action
}

function initialState(input: SimulationInput): SimState {
  return {
    ambientLabel: input.ambientAtStart,
    injection: true,
    waypointReady: input.waypointBoundAtStart === true,
    bound: input.waypointBoundAtStart === true,
    sidecar: new Map(
      input.workloads.map((w) => [
        workloadKey(w),
        w.proxy === 'sidecar' || w.proxy === 'sidecar-native' || (w.pods?.sidecar ?? 0) > 0,
      ]),
    ),
    optedOut: new Set(),
    applied: new Set(),
  }
}

interface Interval {
  kind: HazardKind
  policy?: string
  workloads: string[]
  start: number
  end: number // exclusive boundary index; boundaries.length = persists
}

/**
 * Hazard intervals over a boundary sequence, tracked per workload (so a workload's interval is not cut
 * when others join), then merged: workloads with the same kind, policy and interval form one hazard.
 */
function intervals(boundaries: BoundaryState[], start: BoundaryState, policies: SimPolicy[]): Interval[] {
  const closed: Interval[] = []
  const open = new Map<string, Interval>()
  const inMeshAtStart = new Set(
    Object.entries(start.dataPlanes)
      .filter(([, dp]) => dp !== 'outside')
      .map(([k]) => k),
  )
  boundaries.forEach((b, i) => {
    const seen = new Set<string>()
    const mark = (kind: HazardKind, workloads: string[], policy?: string) => {
      for (const w of workloads) {
        const id = `${kind}|${policy ?? ''}|${w}`
        seen.add(id)
        if (!open.has(id))
          open.set(id, {kind, workloads: [w], start: i, end: boundaries.length, ...(policy ? {policy} : {})})
      }
    }
    mark(
      'pod-leaves-mesh',
      Object.entries(b.dataPlanes)
        .filter(([k, dp]) => dp === 'outside' && inMeshAtStart.has(k))
        .map(([k]) => k),
    )
    for (const p of policies) {
      const row = b.policies[p.key] ?? {}
      const startRow = start.policies[p.key] ?? {}
      const wasEnforced = new Set([
        ...(startRow.sidecar ?? []),
        ...(startRow.ztunnel ?? []),
        ...(startRow.waypoint ?? []),
      ])
      mark('policy-deny-all', row['deny-all'] ?? [], p.key)
      mark(
        'policy-not-enforced',
        (row['not-enforced'] ?? []).filter((w) => wasEnforced.has(w)),
        p.key,
      )
      mark(
        'policy-degraded',
        (row.degraded ?? []).filter((w) => wasEnforced.has(w)),
        p.key,
      )
      mark('waypoint-allow-gap', b.waypointAllowGaps?.[p.key] ?? [], p.key)
    }
    for (const [id, interval] of open) {
      if (!seen.has(id)) {
        interval.end = i
        closed.push(interval)
        open.delete(id)
      }
    }
  })
  closed.push(...open.values())
  const merged = new Map<string, Interval>()
  for (const iv of closed) {
    const key = `${iv.kind}|${iv.policy ?? ''}|${iv.start}|${iv.end}`
    const existing = merged.get(key)
    if (existing) existing.workloads = [...existing.workloads, ...iv.workloads].sort()
    else merged.set(key, {...iv, workloads: [...iv.workloads]})
  }
  return [...merged.values()].sort(
    (a, b) => a.start - b.start || byCodePoint(a.kind, b.kind) || byCodePoint(a.policy ?? '', b.policy ?? ''),
  )
}

function identityHazards(input: SimulationInput): Interval[] {
  // Between binding and the restart, ambient callers reach still-sidecar destinations through the
  // waypoint, whose identity an identity-keyed ALLOW does not admit — unless a companion admits it.
  const bindIndex = input.steps.findIndex((s) => s.action === actionWith('binds-waypoint'))
  if (bindIndex === -1) return []
  return input.policies
    .filter((p) => p.identityKeyed && p.action !== 'DENY' && !p.companionIn)
    .map((p) => ({
      kind: 'waypoint-identity' as const,
      policy: p.key,
      workloads: [...p.workloads].sort(),
      start: bindIndex + 1,
      end: input.steps.length + 1,
    }))
}

function describe(kind: HazardKind, policy: string | undefined, workloads: string[]): string {
  const who = `${workloads.length} workload(s) (${workloads.join(', ')})`
  switch (kind) {
    case 'pod-leaves-mesh':
      return `${who} run outside the mesh: no sidecar and not captured by ztunnel (plaintext, rejected by STRICT peers)`
    case 'policy-deny-all':
      return `${policy} is deny-all at ztunnel for ${who}: its L7 ALLOW rules match nothing there, so only traffic the waypoint admits reaches them`
    case 'policy-not-enforced':
      return `${policy} is enforced nowhere for ${who}`
    case 'policy-degraded':
      return `${policy} is only enforced in its L4 form at ztunnel for ${who} (no waypoint copy active)`
    case 'waypoint-allow-gap':
      return `${policy} allows requests to ${who}, but the waypoint enforces other ALLOW policies for their Services and not this one: requests through the waypoint that only ${policy} allows are denied`
    case 'waypoint-identity':
      return `${policy} admits callers by identity; once the waypoint is bound, ${who} see the waypoint's identity for proxied traffic and deny it`
    case 'sidecar-callers-bypass':
      return `callers that still have sidecars never go through waypoints: the L7 policies carried to the waypoint do not apply to them until they migrate (istio/istio#51445)`
  }
}

export function simulate(input: SimulationInput): Simulation {
  const state = initialState(input)
  const start = snapshot('start', input, state)
  const apply: BoundaryState[] = [start]
  for (const step of input.steps) {
    applyForward(step, input, state)
    apply.push(snapshot(step.id, input, state))
  }
  const rollbackOrder = [...input.steps]
    .filter((s) => s.operations.length > 0 || stepKind(s.action).simulation?.replayUndoWhenReadOnly)
    .sort((a, b) => UNDO_ORDER.indexOf(a.action) - UNDO_ORDER.indexOf(b.action))
  const rollback: BoundaryState[] = []
  for (const step of rollbackOrder) {
    applyUndo(step, state)
    rollback.push(snapshot(`undo ${step.id}`, input, state))
  }

  const stepIndex = (role: SimulationRole) => input.steps.findIndex((s) => s.action === actionWith(role)) + 1 // boundary index after it
  const restartAt = stepIndex('restarts-pods')
  const deleteAt = stepIndex('replaces-sidecar-policies')
  const undoIndex = (role: SimulationRole) => rollbackOrder.findIndex((s) => s.action === actionWith(role))
  const rbRecreate = undoIndex('replaces-sidecar-policies')
  const rbRestart = undoIndex('restarts-pods')

  const hazards: Hazard[] = []
  const label = (boundaries: BoundaryState[], i: number, phase: 'apply' | 'rollback') =>
    i >= boundaries.length ? 'end' : phase === 'apply' && i === 0 ? 'start' : boundaries[i]!.after
  for (const iv of [...intervals(apply, start, input.policies), ...identityHazards(input)]) {
    // Boundary i is "after step i"; the interval ends when the step of boundary `end` is applied.
    const inRestartWindow =
      restartAt > 0 && deleteAt > 0 && iv.start >= restartAt && iv.end <= deleteAt && iv.kind !== 'pod-leaves-mesh'
    hazards.push({
      id: hazardId(
        'apply',
        iv.kind,
        [iv.policy, iv.workloads.join('+')].filter(Boolean).join('/'),
        label(apply, iv.start, 'apply'),
      ),
      kind: iv.kind,
      phase: 'apply',
      from: label(apply, iv.start, 'apply'),
      until: iv.end >= apply.length ? 'end' : apply[iv.end]!.after,
      ...(inRestartWindow ? {window: 'restart' as const} : {}),
      ...(iv.policy ? {policy: iv.policy} : {}),
      workloads: iv.workloads,
      message: describe(iv.kind, iv.policy, iv.workloads),
    })
  }
  // Rollback starts from the fully applied state; hazards already open then were reported for apply.
  const afterApply = apply[apply.length - 1]!
  const sequence = [afterApply, ...rollback]
  for (const iv of intervals(sequence, start, input.policies)) {
    if (iv.start === 0) continue
    // sequence index k is "after undo of rollbackOrder[k-1]"; the rollback restart window opens when the
    // deleted policies are re-created and closes once the restart has brought the sidecars back.
    const inWindow =
      rbRecreate >= 0 &&
      rbRestart >= 0 &&
      iv.start >= rbRecreate + 1 &&
      iv.end <= rbRestart + 1 &&
      iv.kind !== 'pod-leaves-mesh'
    hazards.push({
      id: hazardId(
        'rollback',
        iv.kind,
        [iv.policy, iv.workloads.join('+')].filter(Boolean).join('/'),
        sequence[iv.start]!.after,
      ),
      kind: iv.kind,
      phase: 'rollback',
      from: sequence[iv.start]!.after,
      until: iv.end >= sequence.length ? 'end' : sequence[iv.end]!.after,
      ...(inWindow ? {window: 'rollback-restart' as const} : {}),
      ...(iv.policy ? {policy: iv.policy} : {}),
      workloads: iv.workloads,
      message: describe(iv.kind, iv.policy, iv.workloads),
    })
  }
  // Only behaviour that ztunnel cannot keep for direct callers is lost to sidecar callers.
  const carried = input.policies
    .filter(
      (p) => (p.waypointCopyIn || p.appliedByWaypoint) && (p.deletedIn || (p.ztunnel ?? 'as-written') !== 'as-written'),
    )
    .map((p) => p.key)
    .sort()
  if (carried.length > 0) {
    hazards.push({
      id: 'apply/sidecar-callers-bypass',
      kind: 'sidecar-callers-bypass',
      phase: 'apply',
      from: input.steps.find((s) => s.action === actionWith('binds-waypoint'))?.id ?? 'start',
      until: 'end',
      window: 'sidecar-callers',
      workloads: [],
      message: `${describe('sidecar-callers-bypass', undefined, [])}: ${carried.join(', ')}`,
    })
  }
  return {apply, rollback, hazards}
}

/** Stable, shell-friendly hazard ids (what --accept-hazard takes). */
function hazardId(phase: string, kind: string, subject: string, from: string): string {
  return [phase, kind, subject, from].map((p) => p.replace(/\s+/g, '-')).join('/')
}

/** Hazards that are not inside a documented window: the plan must not proceed unless they are accepted. */
export function unexpectedHazards(sim: Simulation): Hazard[] {
  return sim.hazards.filter((h) => !h.window)
}
