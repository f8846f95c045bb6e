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

/** Namespaces of later waves that depend on `namespace` and whose plans may have written (still ambient, partly). */
export async function startedDependants(loaded: LoadedFleet, namespace: string): Promise<FleetDependency[]> {
  const out: FleetDependency[] = []
  for (const [to, edges] of crossWaveEdges(loaded.fleet, namespace, 'after')) {
    const member = await readFleetMember(loaded, to)
    const plan = member.plan
    if (!plan || !plan.spec.steps.some((s) => mayHaveWritten(phaseOf(plan, s)))) continue
    const progress = `${appliedCount(plan)} of ${plan.spec.steps.length} steps applied`
    out.push({namespace: to, wave: waveOf(loaded.fleet, to)!, plan: member.file, progress, edges})
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
 * Refuses to apply `namespace` while an earlier wave it depends on is not fully applied (exit 5), unless
 * `ignore`: then the dependencies are returned, to be warned about and recorded in the plan's status.
 */
export async function checkFleetOrder(
  planFile: string,
  namespace: string,
  ignore: boolean,
): Promise<{fleetFile: string; pending: FleetDependency[]} | undefined> {
  const loaded = await loadFleetBeside(planFile)
  if (!loaded) return undefined
  const wave = waveOf(loaded.fleet, namespace)
  if (wave === undefined) return undefined
  const pending = await pendingDependencies(loaded, namespace)
  if (pending.length === 0) return undefined
  if (ignore) return {fleetFile: loaded.file, pending}
  const earliest = Math.min(...pending.map((d) => d.wave))
  throw new FleetOrderError(
    `${namespace} is in wave ${wave} of ${loaded.file}, and ${pending.length === 1 ? 'a namespace' : `${pending.length} namespaces`} of an earlier wave it depends on ${pending.length === 1 ? 'is' : 'are'} not fully applied; nothing was written:\n${describeDependencies(pending)}`,
    `Apply the earlier wave(s) first: \`mesh-migrate apply --fleet ${loaded.file} --to-wave ${wave - 1}\` (or \`mesh-migrate apply ${pending[0]!.namespace} --all\`${earliest < wave - 1 ? ', wave by wave' : ''}); --ignore-fleet-order applies anyway and records who overrode the order in ${planFile}.`,
  )
}

export function hasPlan(loaded: LoadedFleet, ns: string): boolean {
  const entry = loaded.fleet.spec.namespaces.find((n) => n.name === ns)
  return entry !== undefined && (entry.plan !== undefined || entry.result !== 'nothing-to-migrate')
}

export const membersOf = (loaded: LoadedFleet, wave: number): string[] =>
  loaded.fleet.spec.waves.find((w) => w.wave === wave)?.namespaces ?? []
