// `plan -A`, `plan -l SELECTOR`, `plan NS1 NS2 …`: one read of the source for the whole fleet, one plan
// file per namespace and the fleet overview plans/fleet.yaml (issue 11 §4). The planning itself is the
// pure planFleet; this reads, refuses to overwrite plans in progress, and writes.
import {mkdir} from 'node:fs/promises'
import path from 'node:path'

import {UsageError, UserError} from '../errors.js'
import {defaultPlanPath, PLANS_DIR, readTextFile, writeFileAtomic} from '../executor/plan-store.js'
import {FLEET_FILE, type FleetInput, type FleetPlan, planFleet, selectNamespaces} from '../plan/fleet.js'
import {renderFleetFile} from '../plan/fleet-file.js'
import {checkPlanText, hasStarted, recordsNoStatus, renderPlanFile} from '../plan/planfile.js'
import {mapLimit} from '../sources/cluster.js'
import type {ObjectSource} from '../sources/source.js'

/** Plan files written at once by plan -A. */
const PLAN_WRITE_CONCURRENCY = 8

/** What plan -A/-l/NS… asks for: the fleet planner's own inputs (FleetInput), plus where to read and how to write. */
export interface FleetPlanRequest extends Pick<
  FleetInput,
  'selection' | 'options' | 'inventory' | 'generator' | 'istioVersion' | 'trustDomain'
> {
  /** Opens the source the fleet is read from (manifests, or the context's cluster). */
  openSource: () => Promise<ObjectSource>
  rootNamespace: string
  force: boolean
  /** Progress and warnings: a line on the command's stderr. */
  note: (message: string) => void
}

/** The plans on disk (file → text), read a few at a time: re-planning compares each new plan with its file. */
async function plansOnDisk(files: string[]): Promise<Map<string, string>> {
  const texts = await mapLimit(files, PLAN_WRITE_CONCURRENCY, (file) => readTextFile(file).catch(() => undefined))
  return new Map(files.flatMap((file, i) => (texts[i] === undefined ? [] : [[file, texts[i]] as const])))
}

/** Namespaces whose plan on disk has applied steps: regenerating it would lose its progress record. */
function plansInProgress(onDisk: Map<string, string>): string[] {
  // A plan never applied (what plan -A wrote last time) needs no parsing: hundreds of them would be parsed and
  // validated whole before re-planning.
  return [...onDisk].flatMap(([file, text]) => {
    const plan = recordsNoStatus(text) ? undefined : checkPlanText(text).plan
    return plan && hasStarted(plan) ? [file] : []
  })
}

async function selected(request: FleetPlanRequest) {
  const source = await request.openSource()
  const read = await source.fleet({rootNamespace: request.rootNamespace})
  let picked: ReturnType<typeof selectNamespaces>
  try {
    picked = selectNamespaces(read.namespaces, request.selection, request.rootNamespace)
  } catch (error) {
    throw new UsageError(`--selector: ${(error as Error).message}`)
  }
  if (picked.unknown.length > 0) {
    throw new UserError(
      `namespace(s) ${picked.unknown.join(', ')} do not exist in ${'manifests' in source.target ? 'the manifests' : `context ${source.target.context}`}`,
      {
        suggestion: 'Check the names (kubectl get namespaces) and the --context; to plan from files, pass --manifests.',
      },
    )
  }
  if (picked.selected.length === 0) {
    throw new UserError('no namespace matches the selection', {
      suggestion: 'Check the selector (kubectl get namespaces -l SELECTOR), or name the namespaces.',
    })
  }
  const clash = path.parse(FLEET_FILE).name
  if (picked.selected.includes(clash)) {
    throw new UserError(
      `namespace "${clash}" would be planned to ${defaultPlanPath(clash)}, the fleet overview's file`,
      {
        suggestion: `Leave it out of the selection and plan it on its own: mesh-migrate plan ${clash} --out plans/namespace-${clash}.yaml`,
      },
    )
  }
  return {read, namespaces: picked.selected}
}

/** Plans the fleet and writes every plan, then plans/fleet.yaml (each file atomically). */
export async function runFleetPlan(request: FleetPlanRequest): Promise<FleetPlan> {
  const {read, namespaces} = await selected(request)
  const onDisk = await plansOnDisk(namespaces.map((ns) => defaultPlanPath(ns)))
  const inProgress = request.force ? [] : plansInProgress(onDisk)
  if (inProgress.length > 0) {
    throw new UserError(
      `${inProgress.join(', ')} ha${inProgress.length === 1 ? 's' : 've'} applied steps: refusing to overwrite plans in progress`,
      {
        suggestion:
          'Finish or roll them back first (`mesh-migrate apply NS`, `mesh-migrate rollback NS --confirm NS`), re-plan each on its own keeping its progress (`mesh-migrate plan NS --keep-progress`), leave those namespaces out of the selection, or pass --force (their progress records are lost).',
      },
    )
  }
  const snapshots = []
  for (const ns of namespaces) snapshots.push(await read.snapshot(ns))
  const {fleet, plans} = planFleet({
    snapshots,
    ...(read.objects ? {objects: read.objects()} : {}),
    selection: request.selection,
    options: request.options,
    inventory: request.inventory,
    generator: request.generator,
    ...(request.istioVersion ? {istioVersion: request.istioVersion} : {}),
    ...(request.trustDomain ? {trustDomain: request.trustDomain} : {}),
    planPath: (ns) => defaultPlanPath(ns),
    fleetPath: path.join(PLANS_DIR, FLEET_FILE),
    keepEmpty: 'namespaces' in request.selection,
  })

  await mkdir(PLANS_DIR, {recursive: true})
  // Each file is written atomically (and synced) on its own: a few at a time, so that hundreds of plans do not
  // wait on each other's fsync.
  const changed = await mapLimit(plans, PLAN_WRITE_CONCURRENCY, async (plan) => {
    const file = defaultPlanPath(plan.metadata.namespace)
    const text = renderPlanFile(plan)
    if (onDisk.get(file) === text) return false
    await writeFileAtomic(file, text, request.note)
    return true
  })
  const written = changed.filter(Boolean).length
  const fleetFile = path.join(PLANS_DIR, FLEET_FILE)
  const fleetText = renderFleetFile(fleet)
  if ((await readTextFile(fleetFile).catch(() => undefined)) !== fleetText)
    await writeFileAtomic(fleetFile, fleetText, request.note)
  request.note(
    `Wrote ${fleetFile} and ${plans.length} plan(s) (${written} changed, ${plans.length - written} unchanged); ${fleet.spec.namespaces.length - plans.length} namespace(s) have nothing to migrate.`,
  )
  return fleet
}
