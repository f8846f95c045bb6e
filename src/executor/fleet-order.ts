// Fleet order (issue 22 §1): a namespace listed in plans/fleet.yaml is applied only once every namespace of an
// earlier wave that it depends on (an edge `from → to` of the fleet file) is fully applied; rolling back a
// namespace whose dependants of later waves may still be ambient is the mirror image (a warning). The fleet file
// sits next to the plan (plans/fleet.yaml beside plans/NS.yaml); without one, or when it does not list the
// namespace, there is no order to keep.
import path from 'node:path'

import {ExitCode} from '../exit-codes.js'
import {InvalidPlanError, UserError} from '../errors.js'
import {readTextFile} from './plan-store.js'
import type {FleetPlan} from '../plan/fleet.js'
import {checkFleetText, FLEET_FILE} from '../plan/fleet-file.js'
import type {FleetEdge} from '../planner/fleet-waves.js'
import type {MigrationPlan} from '../planner/plan-types.js'
import {checkPlanText} from '../plan/planfile.js'
import {mayHaveWritten, phaseOf} from '../plan/rollback.js'

const NAMESPACE_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/

export interface LoadedFleet {
  file: string
  fleet: FleetPlan
}

/** A namespace of another wave the order depends on, as its plan file records it now. */
export interface FleetDependency {
  namespace: string
  wave: number
  plan: string
  /** "3 of 14 steps applied", "no plan file", … */
  progress: string
  edges: FleetEdge[]
}

/** Refused: an earlier wave this namespace depends on is not fully applied (exit 5, as another holder's lock). */
export class FleetOrderError extends UserError {
  constructor(message: string, suggestion: string) {
    super(message, {exitCode: ExitCode.Locked, suggestion})
  }
}

/** plans/fleet.yaml next to `planFile`, when there is one; an invalid one is refused (exit 4): the order is unknown. */
export async function loadFleetBeside(planFile: string): Promise<LoadedFleet | undefined> {
  const file = path.join(path.dirname(planFile), FLEET_FILE)
  const text = await readTextFile(file, 'fleet file').catch(() => undefined)
  if (text === undefined) return undefined
  return parseFleet(file, text)
}

/** The fleet file's data; problems are exit 4, and every namespace name is checked before it becomes a path. */
export function parseFleet(file: string, text: string): LoadedFleet {
  const checked = checkFleetText(text)
  if (!checked.fleet) throw new InvalidPlanError(file, checked.problems)
  const fleet = checked.fleet
  const bad = fleet.spec.namespaces.findIndex((n) => !NAMESPACE_NAME.test(n.name) || n.name.length > 63)
  if (bad !== -1)
    throw new InvalidPlanError(file, [{path: `spec.namespaces[${bad}].name`, message: 'not a namespace name'}])
  return {file, fleet}
}

/** Where the fleet keeps the plan of `namespace`: plans/<ns>.yaml beside the fleet file (never outside it). */
export function fleetPlanPath(loaded: LoadedFleet, namespace: string): string {
  return path.join(path.dirname(loaded.file), `${namespace}.yaml`)
}

export function waveOf(fleet: FleetPlan, namespace: string): number | undefined {
  return fleet.spec.namespaces.find((n) => n.name === namespace)?.wave
}

/** The plan of a fleet namespace as its file records it now; undefined when there is none or it is not valid. */
export async function readFleetMember(
  loaded: LoadedFleet,
  namespace: string,
): Promise<{file: string; plan?: MigrationPlan; problem?: string}> {
  const file = fleetPlanPath(loaded, namespace)
  let text: string
  try {
    text = await readTextFile(file, 'plan file')
  } catch {
    return {file, problem: 'no plan file'}
  }
  const checked = checkPlanText(text)
  if (!checked.plan || checked.problems.length > 0) return {file, problem: 'plan file not valid'}
  return {file, plan: checked.plan}
}

const appliedCount = (plan: MigrationPlan) => plan.spec.steps.filter((s) => phaseOf(plan, s) === 'Applied').length

/** Every step Applied (a plan with nothing to migrate is done by definition). */
export function fullyApplied(plan: MigrationPlan): boolean {
  return appliedCount(plan) === plan.spec.steps.length
}

/** Edges of the fleet into `namespace` from an earlier wave (into: true), or out of it into a later wave. */
function crossWaveEdges(fleet: FleetPlan, namespace: string, direction: 'before' | 'after'): Map<string, FleetEdge[]> {
  const mine = waveOf(fleet, namespace)
  const out = new Map<string, FleetEdge[]>()
  if (mine === undefined) return out
  for (const e of fleet.spec.edges) {
    const other = direction === 'before' ? e.from : e.to
    if ((direction === 'before' ? e.to : e.from) !== namespace) continue
    const wave = waveOf(fleet, other)
    if (wave === undefined || (direction === 'before' ? wave >= mine : wave <= mine)) continue
    out.set(other, [...(out.get(other) ?? []), e])
  }
  return out
}

/** Namespaces of earlier waves that `namespace` depends on and that are not fully applied, with the edges why. */
export async function pendingDependencies(loaded: LoadedFleet, namespace: string): Promise<FleetDependency[]> {
  const out: FleetDependency[] = []
  for (const [from, edges] of crossWaveEdges(loaded.fleet, namespace, 'before')) {
    const entry = loaded.fleet.spec.namespaces.find((n) => n.name === from)!
    if (entry.result === 'nothing-to-migrate' && entry.plan === undefined) continue
    const member = await readFleetMember(loaded, from)
    if (member.plan && fullyApplied(member.plan)) continue
    const progress = member.plan
      ? `${appliedCount(member.plan)} of ${member.plan.spec.steps.length} steps applied`
      : member.problem!
    out.push({namespace: from, wave: entry.wave, plan: member.file, progress, edges})
  }
  return out
}

/** The other namespaces of `namespace`'s cycle that depend on it (an edge out of it), with the edges. */
function cycleDependants(fleet: FleetPlan, namespace: string): Map<string, FleetEdge[]> {
  const out = new Map<string, FleetEdge[]>()
  const cycle = fleet.spec.cycles.find((c) => c.namespaces.includes(namespace))
  for (const e of cycle?.edges ?? [])
    if (e.from === namespace && e.to !== namespace) out.set(e.to, [...(out.get(e.to) ?? []), e])
  return out
}

/** Whether the plan may have written past its bind-waypoint step (its namespace may be switched, partly). */
function pastBindWritten(plan: MigrationPlan): boolean {
  const bind = plan.spec.steps.findIndex((s) => s.id === 'bind-waypoint')
  return plan.spec.steps.some((s, i) => i > bind && mayHaveWritten(phaseOf(plan, s)))
}

/**
 * Namespaces of later waves that depend on `namespace` and whose plans may have written (still ambient, partly), and
 * those of its cycle that depend on it and may have written past their bind-waypoint step.
 */
export async function startedDependants(loaded: LoadedFleet, namespace: string): Promise<FleetDependency[]> {
  const out: FleetDependency[] = []
  for (const [to, edges] of cycleDependants(loaded.fleet, namespace)) {
    const member = await readFleetMember(loaded, to)
    if (!member.plan || !pastBindWritten(member.plan)) continue
    const progress = `${appliedCount(member.plan)} of ${member.plan.spec.steps.length} steps applied`
    out.push({namespace: to, wave: waveOf(loaded.fleet, to)!, plan: member.file, progress, edges})
  }
  for (const [to, edges] of crossWaveEdges(loaded.fleet, namespace, 'after')) {
    const member = await readFleetMember(loaded, to)
    const plan = member.plan
    if (!plan || !plan.spec.steps.some((s) => mayHaveWritten(phaseOf(plan, s)))) continue
    const progress = `${appliedCount(plan)} of ${plan.spec.steps.length} steps applied`
    out.push({namespace: to, wave: waveOf(loaded.fleet, to)!, plan: member.file, progress, edges})
  }
  return out
}

/**
 * The other namespaces of `namespace`'s cycle that it depends on (an edge into it) and that have not applied their
 * bind-waypoint step: the cycle's protocol binds every waypoint of the cycle before any of its namespaces switches, and
 * the plans count on it (their inventories leave out the routing those waypoints keep: plan/fleet-routing.ts).
 */
export async function unboundCyclePeers(loaded: LoadedFleet, namespace: string): Promise<FleetDependency[]> {
  const cycle = loaded.fleet.spec.cycles.find((c) => c.namespaces.includes(namespace))
  if (!cycle) return []
  const byPeer = new Map<string, FleetEdge[]>()
  for (const e of cycle.edges)
    if (e.to === namespace && e.from !== namespace) byPeer.set(e.from, [...(byPeer.get(e.from) ?? []), e])
  const out: FleetDependency[] = []
  for (const [peer, edges] of byPeer) {
    const member = await readFleetMember(loaded, peer)
    const plan = member.plan
    const bind = plan?.spec.steps.find((s) => s.id === 'bind-waypoint')
    if (plan && (!bind || phaseOf(plan, bind) === 'Applied')) continue
    const progress = plan
      ? `bind-waypoint not applied, ${appliedCount(plan)} of ${plan.spec.steps.length} steps applied`
      : member.problem!
    out.push({namespace: peer, wave: waveOf(loaded.fleet, peer)!, plan: member.file, progress, edges})
  }
  return out
}

/** One line per dependency, each edge with its reason: "fa (wave 1, plans/fa.yaml: 3 of 14 steps applied): …". */
export function describeDependencies(deps: FleetDependency[]): string {
  return deps
    .flatMap((d) => [
      `  - ${d.namespace} (wave ${d.wave}, ${d.plan}: ${d.progress}):`,
      ...d.edges.map((e) => `      ${e.from} → ${e.to} (${e.kind}): ${e.reason}`),
    ])
    .join('\n')
}

/**
 * Refuses to apply `namespace` while an earlier wave it depends on is not fully applied, or, when the run goes past its
 * bind-waypoint step (`pastBind`), while a namespace of its cycle it depends on has not bound its waypoint (exit 5),
 * unless `ignore`: then the dependencies are returned, to be warned about and recorded in the plan's status.
 */
export async function checkFleetOrder(
  planFile: string,
  namespace: string,
  ignore: boolean,
  pastBind = true,
): Promise<{fleetFile: string; pending: FleetDependency[]} | undefined> {
  const loaded = await loadFleetBeside(planFile)
  if (!loaded) return undefined
  const wave = waveOf(loaded.fleet, namespace)
  if (wave === undefined) return undefined
  const pending = await pendingDependencies(loaded, namespace)
  const peers = pastBind ? await unboundCyclePeers(loaded, namespace) : []
  if (pending.length === 0 && peers.length === 0) return undefined
  if (ignore) return {fleetFile: loaded.file, pending: [...pending, ...peers]}
  const override = `--ignore-fleet-order applies anyway and records who overrode the order in ${planFile}`
  if (pending.length > 0) {
    const earliest = Math.min(...pending.map((d) => d.wave))
    throw new FleetOrderError(
      `${namespace} is in wave ${wave} of ${loaded.file}, and ${pending.length === 1 ? 'a namespace' : `${pending.length} namespaces`} of an earlier wave it depends on ${pending.length === 1 ? 'is' : 'are'} not fully applied; nothing was written:\n${describeDependencies(pending)}`,
      `Apply the earlier wave(s) first: \`mesh-migrate apply --fleet ${loaded.file} --to-wave ${wave - 1}\` (or \`mesh-migrate apply ${pending[0]!.namespace} --all\`${earliest < wave - 1 ? ', wave by wave' : ''}); ${override}.`,
    )
  }
  throw new FleetOrderError(
    `${namespace} is in a cycle of ${loaded.file} (wave ${wave}) with ${peers.length === 1 ? 'a namespace' : `${peers.length} namespaces`} it depends on that ${peers.length === 1 ? 'has' : 'have'} not bound ${peers.length === 1 ? 'its waypoint' : 'their waypoints'}: the cycle's waypoints are bound before any of its namespaces goes past bind-waypoint; nothing was written:\n${describeDependencies(peers)}`,
    `Bind ${peers.length === 1 ? 'its' : 'their'} waypoint${peers.length === 1 ? '' : 's'} first: \`mesh-migrate apply ${peers[0]!.namespace} --to bind-waypoint\`${peers.length > 1 ? ' (and the others)' : ''}, or run the wave as the cycle's protocol says: \`mesh-migrate apply --fleet ${loaded.file} --wave ${wave}\`; \`mesh-migrate apply ${namespace} --to bind-waypoint\` may run now; ${override}.`,
  )
}

export function hasPlan(loaded: LoadedFleet, ns: string): boolean {
  const entry = loaded.fleet.spec.namespaces.find((n) => n.name === ns)
  return entry !== undefined && (entry.plan !== undefined || entry.result !== 'nothing-to-migrate')
}

export const membersOf = (loaded: LoadedFleet, wave: number): string[] =>
  loaded.fleet.spec.waves.find((w) => w.wave === wave)?.namespaces ?? []
