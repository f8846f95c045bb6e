// `plan NAMESPACE` and `plan -A | -l SELECTOR | NS1 NS2…` as actions (issue 23 §2): the plan file that may be
// (over)written, the read of the namespace, the plan (or fleet) and its files, the preflight preview of a live
// cluster and the exit code the plan earns — over an injected io and an object source the command opens (manifests
// or a cluster). The plan command parses and checks flags, runs one of them and renders the result.
import {mkdir} from 'node:fs/promises'
import path from 'node:path'

import type {FleetPlanRequest} from '../cli/fleet-plan.js'
import {LockHeldError, UsageError, UserError} from '../errors.js'
import {asRolledBack, carryProgressOrRefuse, progressToKeep, progressWithRecord} from '../executor/keep-progress.js'
import {liveHolder, lockHeldSuggestion} from '../executor/lock.js'
import {readTextFile, replanCommand, writeFileAtomic} from '../executor/plan-store.js'
import {readRecord} from '../executor/record-store.js'
import {KubeApiError} from '../kube/errors.js'
import type {FleetPlan} from '../plan/fleet.js'
import {buildPlan} from '../plan/plan-builder.js'
import {checkPlanText, parsePlanText, renderPlanFile, specDigest, textMayHaveWritten} from '../plan/planfile.js'
import {buildInventory, type InventoryOptions} from '../planner/inventory.js'
import type {Inventory, SourceSnapshot} from '../planner/model.js'
import type {MigrationPlan, PlanOptions} from '../planner/plan-types.js'
import {waypointCanaryRefusal} from '../steps/canary-waypoint.js'
import {ClusterSource} from '../sources/cluster.js'
import {requireNamespace} from '../sources/open.js'
import type {ObjectSource} from '../sources/source.js'
import {stderrPainter} from '../ui/color.js'
import {type Io, writeErr} from '../ui/io.js'
import {ExitCode} from '../exit-codes.js'

/** What every plan of a run is made with (the flags' values; acceptances are given once, for the fleet too). */
export interface PlanRun {
  options: PlanOptions
  inventory: InventoryOptions
  /** `mesh-migrate/<version>`, recorded in the plan. */
  generator: string
  /** --istio-version, when the cluster's cannot be read. */
  istioVersion?: string
  /** --trust-domain. */
  trustDomain?: string
  rootNamespace: string
  /** --force: overwrite plans in progress, losing their record. */
  force: boolean
  /** --detailed-exitcode: exit 10 when there are steps, 0 when there are none. */
  detailedExitcode: boolean
}

/** The plan of one namespace. */
export interface PlanOneOptions extends PlanRun {
  namespace: string
  /** Where the plan goes: a path, or - for stdout. */
  out: string
  /** --keep-progress: re-plan the plan in progress at `out`, keeping the record of its unchanged applied steps. */
  keepProgress: boolean
  /** With --out -: whether the plan file's text goes to stdout (not when stdout carries a JSON or YAML document). */
  planTextToStdout: boolean
}

/** Opens the object source the command's flags name (manifests, or the context's cluster): after the plan file is checked. */
export type OpenSource = () => Promise<ObjectSource>

/**
 * `plan NAMESPACE`: the plan, written to its file (or stdout), with the preflight preview on stderr for a live
 * cluster, and the exit code it earns on the io (1 blockers; with --detailed-exitcode 10 steps, 0 none).
 */
export async function planNamespace(options: PlanOneOptions, openSource: OpenSource, io: Io): Promise<MigrationPlan> {
  const target = await planFileTarget(options)
  const {plan, source, inventory, snapshot} = await buildNamespacePlan(options, target, await openSource(), io)
  await writePlan(options, target.previousText, plan, io)
  // On a live cluster, show now what the preflight step will check at apply time.
  if (source instanceof ClusterSource && plan.spec.steps.length > 0) {
    const {runPreflight} = await import('../preflight/runner.js')
    const {renderPreflight} = await import('../preflight/view.js')
    // The preflight table goes to stderr: laid out for its terminal (emit lays stdout's result out for stdout's).
    const {setTableLayout, terminalWidth} = await import('../ui/table.js')
    setTableLayout({width: terminalWidth(io.env, io.stderr)})
    const diagnostics = await runPreflight(source.client, options.namespace, {
      plan,
      inventory,
      snapshot,
      rootNamespace: options.rootNamespace,
    })
    writeErr(
      io,
      `\nPreflight (re-checked by the preflight step when you apply):\n${renderPreflight(diagnostics, stderrPainter(io))}`,
    )
  }
  setPlanExitCode(options, plan, io)
  return plan
}

/** The plan file `out` replaces (if any), and the plan in progress it holds with --keep-progress. */
interface PlanFileTarget {
  previousText: string | undefined
  inProgress: MigrationPlan | undefined
}

/** The plan file that may be (over)written: a plan in progress is not replaced without --force or --keep-progress. */
async function planFileTarget({namespace, out, force, keepProgress}: PlanOneOptions): Promise<PlanFileTarget> {
  const previousText = out === '-' ? undefined : await readTextFile(out).catch(() => undefined)
  const inProgress = keepProgress ? progressToKeep(previousText, out, namespace) : undefined
  // A fully rolled-back plan has nothing left to undo: it may be replaced.
  if (previousText !== undefined && !force && !keepProgress && textMayHaveWritten(previousText)) {
    throw new UserError(`${out} has applied steps: refusing to overwrite a plan in progress`, {
      suggestion: `Finish it with \`mesh-migrate apply ${out}\`, undo it with \`mesh-migrate rollback ${out} --confirm ${namespace}\` (then plan replaces it), or re-plan keeping the record of the applied steps the new plan leaves unchanged: \`${replanCommand(namespace, out, '--keep-progress')}\`; --force overwrites it now, losing its record of what was applied (rollback can then no longer undo those steps).`,
    })
  }
  return {previousText, inProgress}
}

/** Read the namespace (cluster or manifests), classify it and build the plan: pure from here on. */
async function buildNamespacePlan(
  options: PlanOneOptions,
  {previousText, inProgress: inFile}: PlanFileTarget,
  source: ObjectSource,
  io: Io,
): Promise<{plan: MigrationPlan; source: ObjectSource; inventory: Inventory; snapshot: SourceSnapshot}> {
  const {namespace, out, keepProgress} = options
  // --keep-progress: the progress is the cluster's record of the plan at `out` (issue 19 §5), even of an edited file.
  const record =
    keepProgress && previousText !== undefined && source instanceof ClusterSource
      ? await readRecord(source.client, namespace, namespace)
      : undefined
  const inProgress = keepProgress ? progressWithRecord(inFile ?? validPlan(previousText), record, out) : undefined
  if ((inProgress || record) && source instanceof ClusterSource) await refuseWhileWriting(source, namespace)
  const read = requireNamespace(await source.snapshot(namespace, {rootNamespace: options.rootNamespace}))
  // The plan's own writes are not the user's state: plan from the namespace as its rollback would leave it.
  const snapshot = inProgress ? asRolledBack(read, inProgress) : read
  refuseCanary(options, snapshot)
  const inventory = buildInventory(snapshot, options.inventory)
  const fresh = buildPlan({
    inventory,
    snapshot,
    options: options.options,
    generator: options.generator,
    ...(options.istioVersion ? {istioVersion: options.istioVersion} : {}),
    ...(options.trustDomain ? {trustDomain: options.trustDomain} : {}),
  })
  const plan = inProgress
    ? keepProgressOf(inProgress, fresh, out, io)
    : options.force
      ? replacing(fresh, previousText)
      : fresh
  return {plan, source, inventory, snapshot}
}

/** Why a namespace needs no step, in the words of its data-plane mode. */
function nothingToMigrateWhy(plan: MigrationPlan): string {
  switch (plan.spec.summary.from) {
    case 'ambient':
      return 'it is already in ambient mode'
    case 'none':
      return 'none of its pods is in the mesh and nothing injects sidecars there (no istio-injection or istio.io/rev label)'
    default:
      return `its data-plane mode is ${plan.spec.summary.from} and no step applies`
  }
}

/** The plan file (or stdout for --out -); none when there is nothing to migrate, untouched when unchanged. */
async function writePlan(
  {namespace, out, planTextToStdout}: PlanOneOptions,
  previousText: string | undefined,
  plan: MigrationPlan,
  io: Io,
): Promise<void> {
  const text = renderPlanFile(plan)
  const nothingToDo = plan.spec.steps.length === 0 && plan.spec.blockers.length === 0
  if (out === '-') {
    if (planTextToStdout) io.stdout.write(text)
  } else if (nothingToDo) {
    // A plan without steps would only be a file to review and merge for nothing.
    writeErr(
      io,
      `Nothing to migrate in namespace ${namespace}: ${nothingToMigrateWhy(plan)}. No plan file written${previousText !== undefined ? ` (${out} from an earlier plan is left as it is)` : ''}.`,
    )
  } else if (previousText === text) {
    writeErr(io, `${out} is up to date (unchanged).`)
  } else {
    await mkdir(path.dirname(out), {recursive: true})
    await writeFileAtomic(out, text, (m) => writeErr(io, m))
    writeErr(io, `Wrote ${out}.`)
  }
}

function setPlanExitCode({namespace, out, detailedExitcode}: PlanOneOptions, plan: MigrationPlan, io: Io): void {
  const blockers = plan.spec.summary.blockers
  if (blockers > 0) {
    io.setExitCode(ExitCode.Failure)
    writeErr(
      io,
      `The plan has ${blockers} blocker(s); it cannot be applied until they are resolved (mesh-migrate show ${out === '-' ? namespace : out}).`,
    )
  } else if (detailedExitcode) {
    io.setExitCode(plan.spec.steps.length > 0 ? ExitCode.ChangesPending : ExitCode.Ok)
  }
}

/** The new plan with the kept records of the plan in progress, saying what was kept and what apply runs. */
function keepProgressOf(old: MigrationPlan, fresh: MigrationPlan, out: string, io: Io): MigrationPlan {
  const {plan, kept, toApply} = carryProgressOrRefuse(old, fresh, out)
  writeErr(
    io,
    `Kept the record of ${kept.length} applied step(s) the new plan leaves unchanged: ${kept.join(', ') || 'none'}.`,
  )
  writeErr(
    io,
    toApply.length > 0
      ? `To apply: ${toApply.join(', ')} (\`mesh-migrate apply ${out}\` continues from there).`
      : 'Every step of the new plan is applied.',
  )
  return plan
}

/**
 * --force over a plan that has written: the new plan says it replaces it (status.replaces), so that its first write
 * takes over the old plan's record in the cluster instead of being refused as another plan's (src/plan/record.ts).
 * The old record is lost, as --force says.
 */
function replacing(fresh: MigrationPlan, previousText: string | undefined): MigrationPlan {
  if (previousText === undefined) return fresh
  const old = (parsePlanText(previousText).data as {status?: {specDigest?: unknown}} | undefined)?.status?.specDigest
  const digest = specDigest(fresh)
  if (typeof old !== 'string' || !/^sha256:[0-9a-f]{64}$/.test(old) || old === digest) return fresh
  return {...fresh, status: {specDigest: digest, replaces: old, steps: []}}
}

/** The plan file's plan when it is valid (a teammate's reviewed copy, no progress of its own). */
function validPlan(text: string | undefined): MigrationPlan | undefined {
  const checked = text === undefined ? undefined : checkPlanText(text)
  return checked?.plan && checked.problems.length === 0 ? checked.plan : undefined
}

/** --waypoint-canary needs Istio >= 1.31 and a primary waypoint the plan replaces (exit 2 otherwise, saying why). */
function refuseCanary(options: PlanOneOptions, snapshot: SourceSnapshot): void {
  if (options.options.waypointCanary === undefined) return
  const namespace = options.namespace
  const ns = snapshot.objects.find((o) => o.kind === 'Namespace' && o.metadata.name === namespace)
  const refusal = waypointCanaryRefusal({
    labels: ns?.metadata.labels ?? {},
    ns: namespace,
    waypointName: options.options.waypointName,
    istioVersion: options.istioVersion ?? snapshot.istioVersion,
    versionSource: options.istioVersion ? '--istio-version' : 'the serving istiod',
  })
  if (refusal) throw new UsageError(refusal.message, refusal.suggestion)
}

/**
 * --keep-progress rewrites the record of a plan in progress: not while an apply or rollback holds the namespace's
 * lock (it writes that record). Read-only (plan needs no write permission): the Lease is read, not taken.
 */
async function refuseWhileWriting(source: ClusterSource, namespace: string): Promise<void> {
  // Without permission to read Leases there is nothing to tell: the re-plan goes on, as before this check.
  const holder = await liveHolder(source.client, namespace).catch((error: unknown) => {
    if (error instanceof KubeApiError && error.status === 403) return undefined
    throw error
  })
  if (holder)
    throw new LockHeldError(
      `namespace ${namespace} is locked by ${holder}: it is writing the record --keep-progress would re-plan`,
      lockHeldSuggestion(namespace),
    )
}

/** The namespaces of a fleet plan: named, every one (-A), or those a label selector matches (-l). */
export type FleetSelection = FleetPlanRequest['selection']

/**
 * `plan -A`, `plan -l SELECTOR`, `plan NS1 NS2…`: every namespace's plan under plans/ and plans/fleet.yaml (progress
 * on stderr), with the exit code the fleet earns on the io (1 when a plan has blockers; with --detailed-exitcode 10
 * when a plan has steps).
 */
export async function planFleet(
  run: PlanRun,
  selection: FleetSelection,
  openSource: OpenSource,
  io: Io,
): Promise<FleetPlan> {
  const {runFleetPlan} = await import('../cli/fleet-plan.js')
  const fleet = await runFleetPlan({
    openSource,
    rootNamespace: run.rootNamespace,
    selection,
    options: run.options,
    inventory: run.inventory,
    generator: run.generator,
    ...(run.istioVersion ? {istioVersion: run.istioVersion} : {}),
    ...(run.trustDomain ? {trustDomain: run.trustDomain} : {}),
    force: run.force,
    note: (m) => writeErr(io, m),
  })
  if (fleet.spec.summary.blocked > 0) {
    io.setExitCode(ExitCode.Failure)
    writeErr(
      io,
      `${fleet.spec.summary.blocked} plan(s) have blockers; they cannot be applied until resolved (mesh-migrate show --fleet).`,
    )
  } else if (run.detailedExitcode) {
    io.setExitCode(fleet.spec.namespaces.some((n) => n.steps > 0) ? ExitCode.ChangesPending : ExitCode.Ok)
  }
  return fleet
}
