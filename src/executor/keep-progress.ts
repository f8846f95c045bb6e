// `plan NS --keep-progress`: re-plan a namespace whose plan is in progress, keeping the record of the
// steps that were applied and that the new plan still contains unchanged.
//
// A live re-plan reads a cluster that already carries the plan's own writes (its waypoint, its policy
// copies, the labels it set). Planning from that would take them for the user's state: the waypoint
// would be "reused" and never deleted, the labels "already there" and never restored. So the new plan is
// made from the namespace as a rollback of the applied steps would leave it — the same rules as
// `undoStep` (only what is still marked as this plan's is removed, only labels still as the step wrote
// them are restored, to what the step recorded before its first write) — laid over the snapshot in
// memory. An applied step that comes out identical keeps its record (with what it saw before it
// wrote, which its undo needs); rollback then still removes its objects.
//
// Pure functions over plain data: no cluster access here.
import type {KubeObject, SourceSnapshot} from '../planner/model.js'
import type {MigrationPlan, Operation, PlanStep, StepStatus} from '../planner/plan-types.js'
import {canonicalize} from '../planner/canonical.js'
import {checkPlanText, specDigest, textMayHaveWritten} from '../plan/planfile.js'
import {ExitCode} from '../exit-codes.js'
import {InvalidPlanError, LockHeldError, UserError} from '../errors.js'
import {mayHaveWritten, phaseOf, rollbackSequence} from '../plan/rollback.js'
import {
  isEditedAfterApply,
  type MigrationRecord,
  recordedPlan,
  recordMayHaveWritten,
  reviewedDigest,
} from '../plan/record.js'
import {formatRef, operationRef, refKey, refOf} from '../planner/refs.js'
import {isOurs} from './operations.js'
import {replanCommand} from './plan-store.js'
import {cloneJson} from '../planner/json.js'

/** Operations that recreate pods: the pods a rollback would bring back cannot be laid over a snapshot. */
const ROLLS_PODS = new Set<Operation['op']>(['restart', 'template-labels'])

/**
 * Why the plan's progress cannot be carried into a re-plan (empty: it can be). A step in the middle
 * of running, failed or interrupted may have written part of its operations; a step that rolled pods
 * changed what the planner reads (sidecars, pod labels) in a way no in-memory undo can restore.
 */
export function keepProgressRefusals(old: MigrationPlan, file: string): string[] {
  const refusals: string[] = []
  for (const step of old.spec.steps) {
    const phase = phaseOf(old, step)
    if (phase === 'Running' || phase === 'Failed' || phase === 'Interrupted') {
      refusals.push(
        `step ${step.id} is ${phase}: it may have written only part of its operations; finish it (\`mesh-migrate apply ${file} --retry\`) or undo it (\`mesh-migrate rollback ${file} --step\`) first`,
      )
    } else if (phase === 'Applied' && step.operations.some((op) => ROLLS_PODS.has(op.op))) {
      refusals.push(
        `step ${step.id} is Applied and recreated pods: the re-plan cannot see the namespace as it was before it (sidecars, pod labels)`,
      )
    }
  }
  return refusals
}

type Before = Record<
  string,
  {existed?: boolean; labels?: Record<string, string | null>; annotations?: Record<string, string | null>}
>

function beforeOf(status: StepStatus | undefined): Before {
  return (status?.observed?.before as Before | undefined) ?? {}
}

/** Remove an object and everything it owns (ownerReferences, transitively), as the garbage collector would. */
function removeWithDependents(objects: Map<string, KubeObject>, key: string): void {
  const gone = new Set<string>()
  const uid = objects.get(key)?.metadata.uid
  objects.delete(key)
  if (uid) gone.add(uid)
  for (let changed = gone.size > 0; changed;) {
    changed = false
    for (const [k, obj] of objects) {
      if (!(obj.metadata.ownerReferences ?? []).some((o) => o.uid !== undefined && gone.has(o.uid))) continue
      objects.delete(k)
      if (obj.metadata.uid) gone.add(obj.metadata.uid)
      changed = true
    }
  }
}

function restoreLabels(
  obj: KubeObject,
  restore: Record<string, string | null>,
  wrote: Record<string, string | null>,
): KubeObject {
  return {...obj, metadata: {...obj.metadata, labels: restoredMap(obj.metadata.labels, restore, wrote)}}
}

function restoreAnnotations(
  obj: KubeObject,
  restore: Record<string, string | null>,
  wrote: Record<string, string | null>,
): KubeObject {
  return {...obj, metadata: {...obj.metadata, annotations: restoredMap(obj.metadata.annotations, restore, wrote)}}
}

function restoredMap(
  current: Record<string, string> | undefined,
  restore: Record<string, string | null>,
  wrote: Record<string, string | null>,
): Record<string, string> {
  const map = {...current}
  for (const [key, target] of Object.entries(restore)) {
    // A key changed by someone since the step wrote it is left as it is (rollback does the same).
    if (key in wrote && (map[key] ?? null) !== wrote[key]) continue
    if (target === null) delete map[key]
    else map[key] = target
  }
  return map
}

function undoInMemory(
  objects: Map<string, KubeObject>,
  step: PlanStep,
  status: StepStatus | undefined,
  planName: string,
): void {
  const before = beforeOf(status)
  for (const op of step.undo.operations) {
    const key = refKey(operationRef(op))
    const live = objects.get(key)
    switch (op.op) {
      case 'delete': {
        const createdHere = step.operations.some((o) => o.op === 'apply' && refKey(operationRef(o)) === key)
        if (createdHere && before[key]?.existed === true) break
        if (live && isOurs(live, planName)) removeWithDependents(objects, key)
        break
      }
      case 'apply':
        if (!live) objects.set(key, cloneJson(op.object))
        break
      case 'label': {
        const forward = step.operations.find(
          (o): o is Extract<Operation, {op: 'label'}> => o.op === 'label' && refKey(o.ref) === key,
        )
        if (live) objects.set(key, restoreLabels(live, {...op.labels, ...before[key]?.labels}, forward?.labels ?? {}))
        break
      }
      case 'annotate': {
        const forward = step.operations.find(
          (o): o is Extract<Operation, {op: 'annotate'}> => o.op === 'annotate' && refKey(o.ref) === key,
        )
        if (live)
          objects.set(
            key,
            restoreAnnotations(live, {...op.annotations, ...before[key]?.annotations}, forward?.annotations ?? {}),
          )
        break
      }
      default:
        // restart / template-labels: refused up front (keepProgressRefusals).
        break
    }
  }
}

/** The snapshot as a rollback of the old plan's applied steps would leave the namespace. */
export function asRolledBack(snapshot: SourceSnapshot, old: MigrationPlan): SourceSnapshot {
  const objects = new Map(snapshot.objects.map((o) => [refKey(refOf(o)), o] as const))
  const applied = rollbackSequence(old).steps
  for (const step of applied)
    undoInMemory(
      objects,
      step,
      old.status?.steps.find((s) => s.id === step.id),
      old.metadata.name,
    )
  return {...snapshot, objects: [...objects.values()]}
}

function stepContent(step: PlanStep): string {
  return JSON.stringify(canonicalize(step))
}

export interface CarriedProgress {
  plan: MigrationPlan
  /** Applied steps whose record the new plan keeps. */
  kept: string[]
  /** Steps of the new plan that apply must (still) run. */
  toApply: string[]
  /** Why the progress cannot be carried (empty when it is). */
  refusals: string[]
  /** The first applied step the new plan changes or drops: rolling back to before it makes the rest carriable. */
  undoFrom?: string
}

function sameTarget(a: MigrationPlan, b: MigrationPlan): boolean {
  const [x, y] = [a.spec.target, b.spec.target]
  if ('clusterID' in x && 'clusterID' in y)
    return x.clusterID && y.clusterID ? x.clusterID === y.clusterID : x.server === y.server
  return !('clusterID' in x) && !('clusterID' in y)
}

/**
 * The new plan with the records of the old plan's applied steps that it contains unchanged. An applied
 * step the new plan changes or drops is refused (its writes would be left with no step to undo them,
 * and re-applying it would record the plan's own objects as pre-existing); so is a new or changed step
 * placed before an applied one (apply would run it behind a step that depends on it).
 */
export function carryProgress(old: MigrationPlan, fresh: MigrationPlan): CarriedProgress {
  const refusals: string[] = []
  if (!sameTarget(old, fresh))
    refusals.push(
      `the plan in progress was made for another ${'clusterID' in old.spec.target ? `cluster (${old.spec.target.context}, ${old.spec.target.server})` : 'source (manifests)'}: its progress belongs there`,
    )
  const kept: StepStatus[] = []
  let undoFrom: string | undefined
  for (const step of old.spec.steps) {
    if (phaseOf(old, step) !== 'Applied') continue
    const now = fresh.spec.steps.find((s) => s.id === step.id)
    if (!now)
      refusals.push(
        `step ${step.id} was applied and the new plan has no such step: its writes would stay with nothing to undo them`,
      )
    else if (stepContent(now) !== stepContent(step))
      refusals.push(`step ${step.id} was applied and the new plan changes it (${changedParts(step, now)})`)
    else {
      kept.push(old.status!.steps.find((s) => s.id === step.id)!)
      continue
    }
    undoFrom ??= step.id
  }
  const keptIds = new Set(kept.map((s) => s.id))
  const lastKept = fresh.spec.steps.findLastIndex((s) => keptIds.has(s.id))
  const behind = fresh.spec.steps.slice(0, lastKept).filter((s) => !keptIds.has(s.id))
  for (const s of behind)
    refusals.push(
      `the new plan's step ${s.id} would run after the applied step ${fresh.spec.steps[lastKept]!.id} that comes after it`,
    )
  // Rolled back to before the first such step, the steps after it are no longer ahead of it.
  if (behind.length > 0)
    undoFrom ??= fresh.spec.steps.slice(fresh.spec.steps.indexOf(behind[0]!)).find((s) => keptIds.has(s.id))?.id
  const order = fresh.spec.steps.map((s) => s.id)
  kept.sort((x, y) => order.indexOf(x.id) - order.indexOf(y.id))
  const digest = specDigest(fresh)
  // status.replaces: the first write of the new plan takes over the old one's record in the cluster (record.ts). The
  // reviewed plan's digest (the record's): an old plan taken from the record may hold an edited spec. An old plan that
  // is itself a re-plan not applied since (its status still says what it replaces) never took the record over: the new
  // plan replaces what the old one would have.
  const replaces = old.status?.replaces ?? old.status?.specDigest ?? specDigest(old)
  const plan: MigrationPlan =
    kept.length > 0
      ? {...fresh, status: {specDigest: digest, ...(replaces !== digest ? {replaces} : {}), steps: kept}}
      : fresh
  return {
    plan,
    kept: [...keptIds],
    toApply: fresh.spec.steps.filter((s) => !keptIds.has(s.id)).map((s) => s.id),
    refusals,
    ...(undoFrom ? {undoFrom} : {}),
  }
}

/** Which parts of an applied step the new plan changes, for the refusal (objects named when they differ). */
function changedParts(old: PlanStep, now: PlanStep): string {
  const parts: string[] = []
  const refsOf = (s: PlanStep) => new Map(s.operations.map((o) => [refKey(operationRef(o)), o] as const))
  const [a, b] = [refsOf(old), refsOf(now)]
  for (const [key, op] of b) if (!a.has(key)) parts.push(`adds ${formatRef(operationRef(op))}`)
  for (const [key, op] of a) if (!b.has(key)) parts.push(`drops ${formatRef(operationRef(op))}`)
  for (const [key, op] of b)
    if (a.has(key) && JSON.stringify(canonicalize(op)) !== JSON.stringify(canonicalize(a.get(key))))
      parts.push(`writes ${formatRef(operationRef(op))} differently`)
  if (parts.length === 0)
    parts.push(
      JSON.stringify(canonicalize(old.preconditions)) !== JSON.stringify(canonicalize(now.preconditions))
        ? 'its preconditions'
        : 'its description, verification or undo',
    )
  return parts.join(', ')
}

function refuseKeep(file: string, namespace: string, refusals: string[], undoFrom?: string): never {
  const until = undoFrom
    ? `it undoes the last applied step: repeat until step ${undoFrom} is rolled back`
    : 'it undoes the last applied step: repeat until the steps named are rolled back'
  throw new UserError(`cannot keep the progress of ${file}:\n${refusals.map((r) => `  - ${r}`).join('\n')}`, {
    exitCode: ExitCode.Failure,
    suggestion: `Undo the steps named with \`mesh-migrate rollback ${file} --step --confirm ${namespace}\` (${until}), then re-run \`${replanCommand(namespace, file, '--keep-progress')}\`; or roll the whole plan back (\`mesh-migrate rollback ${file} --confirm ${namespace}\`) and plan again; \`${replanCommand(namespace, file, '--force')}\` replaces the plan and loses its record of what was applied (rollback can then no longer undo those steps).`,
  })
}

/**
 * The plan in progress at `file` whose record a re-plan is to keep; undefined when there is no plan
 * there or it has applied nothing (a plain re-plan then). Refused when the progress cannot be carried.
 */
export function progressToKeep(
  previousText: string | undefined,
  file: string,
  namespace: string,
): MigrationPlan | undefined {
  if (previousText === undefined || !textMayHaveWritten(previousText)) return undefined
  const checked = checkPlanText(previousText)
  // An edited spec is the thing being replaced: the steps that ran and their progress come from the cluster's
  // record (progressWithRecord), judged there.
  if (checked.problems.length > 0 && isEditedAfterApply(checked.plan)) return checked.plan!
  if (!checked.plan || checked.problems.length > 0) throw new InvalidPlanError(file, checked.problems)
  const refusals = keepProgressRefusals(checked.plan, file)
  if (refusals.length > 0) refuseKeep(file, namespace, refusals)
  return checked.plan
}

/**
 * `plan NS --keep-progress` with the cluster's record (issue 19 §5): the progress to keep is the record's when it is
 * of the plan in the file (the reviewed digest: status.specDigest once applied, whatever the spec says now), with
 * each step as it ran; the file's status only when there is no record. The file read here may be `inFile` (a plan
 * with progress, possibly edited) or, for a teammate's copy without status, just `previous`. Refused: an edited file
 * with no record of it (exit 4), another plan's record that may have written (exit 5), or progress that cannot be
 * carried (refuseKeep).
 */
export function progressWithRecord(
  previous: MigrationPlan | undefined,
  record: MigrationRecord | undefined,
  file: string,
): MigrationPlan | undefined {
  if (!previous) return undefined
  const namespace = previous.metadata.namespace
  const edited = isEditedAfterApply(previous)
  const digest = reviewedDigest(previous)
  if (record && record.plan.specDigest === digest) {
    const {plan, problems} = recordedPlan(previous, record)
    if (problems.length > 0)
      throw new UserError(
        `cannot keep the progress of ${file} from the record in the cluster:\n${problems.map((p) => `  - ${p}`).join('\n')}`,
        {
          exitCode: ExitCode.Invalid,
          suggestion: `Restore the reviewed plan (\`git checkout -- ${file}\`) and re-run \`${replanCommand(namespace, file, '--keep-progress')}\`.`,
        },
      )
    if (!recordMayHaveWritten(record)) return undefined
    const refusals = keepProgressRefusals(plan, file)
    if (refusals.length > 0) refuseKeep(file, namespace, refusals)
    return plan
  }
  if (record && recordMayHaveWritten(record) && previous.status?.replaces !== record.plan.specDigest)
    throw new LockHeldError(
      `namespace ${namespace} is being migrated by another plan: ${record.plan.file} (its record in the cluster: digest ${record.plan.specDigest.slice(0, 19)}…, last written by ${record.updated.by} at ${record.updated.at}); ${file} is a different plan (digest ${digest.slice(0, 19)}…)`,
      `Re-plan from the reviewed copy of that plan: put it at ${file} (e.g. \`git checkout -- ${file}\`) and re-run \`${replanCommand(namespace, file, '--keep-progress')}\`; or finish or undo it from there first.`,
    )
  if (edited)
    throw new UserError(
      `${file} was edited after its first apply and the cluster holds no record of it: the steps that ran cannot be taken from an edited spec`,
      {
        exitCode: ExitCode.Invalid,
        suggestion: `Restore the reviewed plan (\`git checkout -- ${file}\`) and re-run \`${replanCommand(namespace, file, '--keep-progress')}\` (or plan from manifests with the reviewed file in place).`,
      },
    )
  return previous.status && previous.status.steps.some((s) => mayHaveWritten(s.phase)) ? previous : undefined
}

/** carryProgress, refused with what to do instead. */
export function carryProgressOrRefuse(old: MigrationPlan, fresh: MigrationPlan, file: string): CarriedProgress {
  const carried = carryProgress(old, fresh)
  if (carried.refusals.length > 0) refuseKeep(file, fresh.metadata.namespace, carried.refusals, carried.undoFrom)
  return carried
}
