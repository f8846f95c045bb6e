// The plan file's `status` is input too (issue 20 §4): apply and rollback write it, but anyone who can edit the
// file can edit it, and the digest covers only `spec`. Rollback restores the labels a step recorded in
// `observed.before`, so a tampered record would make rollback write labels no step ever wrote (say
// pod-security.kubernetes.io/enforce=privileged). A record is only accepted when it is something the step could
// have observed: the objects its operations name, the label keys they write, and — where the step's
// preconditions fix them — the values those keys had before it wrote. Pure.
import {formatRef, operationRef, refKey} from '../planner/refs.js'
import type {Operation, PlanStep, MigrationPlan} from '../planner/plan-types.js'
import type {PlanProblem} from '../planner/plan-types.js'
import {isRecord} from '../planner/json.js'
import {groupOf} from '../planner/refs.js'

/** What apply records in a step's `observed` (engine.ts applyStep): nothing else is ever written there. */
const OBSERVED_KEYS = new Set(['before', 'restartedAt', 'done'])

/** How `observed.done` names an operation the step completed (per-workload progress, issue 19 §6). */
export function doneEntry(op: Operation): string {
  return `${op.op} ${refKey(operationRef(op))}`
}

/** The namespace label values the step's preconditions fix (what the step saw before its first write). */
function expectedNamespaceLabels(step: PlanStep): Record<string, string | null> {
  const out: Record<string, string | null> = {}
  for (const p of step.preconditions) if (p.check === 'namespace-labels') Object.assign(out, p.labels)
  return out
}

const labelValue = (v: unknown) => (v === null || v === undefined ? 'absent' : JSON.stringify(v))

type KeyedOp = Extract<Operation, {op: 'label' | 'template-labels' | 'annotate'}>
const isLabelOp = (op: Operation): op is Extract<Operation, {op: 'label' | 'template-labels'}> =>
  op.op === 'label' || op.op === 'template-labels'

/** What apply records of an object for each kind of operation on it (engine.ts, operations.ts). */
function recordedKeys(ops: Operation[]): Set<string> {
  return new Set(ops.map((op) => (isLabelOp(op) ? 'labels' : op.op === 'annotate' ? 'annotations' : 'existed')))
}

/** The recorded values of one field (labels or annotations) against the keys the step's operations write. */
function keyedProblems(step: PlanStep, ops: KeyedOp[], field: 'labels' | 'annotations', seenValues: unknown): string[] {
  if (!isRecord(seenValues)) return [`${field} must be a mapping`]
  const what = field === 'labels' ? 'label' : 'annotation'
  const writes = Object.assign({}, ...ops.map((op) => (op.op === 'annotate' ? op.annotations : op.labels))) as Record<
    string,
    string | null
  >
  const ref = operationRef(ops[0]!)
  const isNamespace = groupOf(ref.apiVersion) === '' && ref.kind === 'Namespace'
  const fixed =
    isNamespace && field === 'labels' && ops.some((op) => op.op === 'label') ? expectedNamespaceLabels(step) : {}
  const problems: string[] = []
  for (const [key, seen] of Object.entries(seenValues)) {
    if (!(key in writes)) {
      problems.push(
        `${what} "${key}" is not one the step writes on ${formatRef(ref)} (${Object.keys(writes).join(', ')}): rollback would set it`,
      )
    } else if (seen !== null && typeof seen !== 'string') {
      problems.push(`${what} "${key}" must be a string or null`)
    } else if (key in fixed && fixed[key] !== seen) {
      problems.push(
        `${what} "${key}" is recorded as ${labelValue(seen)} before the step, but the step only runs when it is ${labelValue(fixed[key])} (its precondition): rollback would set ${labelValue(seen)}`,
      )
    }
  }
  return problems
}

/** One recorded observation of one object, against the operations of the step that wrote it. */
function beforeProblems(step: PlanStep, ops: Operation[], value: unknown): string[] {
  if (!isRecord(value)) return ['must be a mapping (what the step saw of the object)']
  const problems: string[] = []
  const allowed = recordedKeys(ops)
  const kinds = [...new Set(ops.map((op) => op.op))].join('/')
  for (const key of Object.keys(value))
    if (!allowed.has(key)) problems.push(`"${key}" is never recorded for a ${kinds} operation`)
  if ('existed' in value && typeof value.existed !== 'boolean') problems.push('existed must be true or false')
  const labelOps = ops.filter(isLabelOp)
  if ('labels' in value && labelOps.length > 0) problems.push(...keyedProblems(step, labelOps, 'labels', value.labels))
  const annotateOps = ops.filter((op): op is Extract<Operation, {op: 'annotate'}> => op.op === 'annotate')
  if ('annotations' in value && annotateOps.length > 0)
    problems.push(...keyedProblems(step, annotateOps, 'annotations', value.annotations))
  return problems
}

/** One step's record: its `observed` holds only what the step itself could have seen. */
function stepRecordProblems(step: PlanStep, observed: unknown, base: string): PlanProblem[] {
  if (observed === undefined) return []
  if (!isRecord(observed)) return [{path: `${base}.observed`, message: 'must be a mapping'}]
  const problems: PlanProblem[] = []
  for (const key of Object.keys(observed))
    if (!OBSERVED_KEYS.has(key))
      problems.push({path: `${base}.observed.${key}`, message: 'unknown field: apply never records it'})
  const restartedAt = observed.restartedAt
  if (restartedAt !== undefined) {
    if (!step.operations.some((op) => op.op === 'restart'))
      problems.push({path: `${base}.observed.restartedAt`, message: `step ${step.id} restarts nothing`})
    else if (typeof restartedAt !== 'string' || Number.isNaN(Date.parse(restartedAt)))
      problems.push({path: `${base}.observed.restartedAt`, message: 'must be a timestamp'})
  }
  const done = observed.done
  if (done !== undefined) {
    const entries = new Set(step.operations.map(doneEntry))
    if (!Array.isArray(done) || done.some((d) => typeof d !== 'string' || !entries.has(d)))
      problems.push({
        path: `${base}.observed.done`,
        message: `must list operations of step ${step.id} ("<op> <object>", as apply records them)`,
      })
  }
  const before = observed.before
  if (before === undefined) return problems
  if (!isRecord(before)) return [...problems, {path: `${base}.observed.before`, message: 'must be a mapping'}]
  const byKey = new Map<string, Operation[]>()
  for (const op of step.operations) {
    const key = refKey(operationRef(op))
    byKey.set(key, [...(byKey.get(key) ?? []), op])
  }
  for (const [key, value] of Object.entries(before)) {
    const path = `${base}.observed.before["${key}"]`
    const op = byKey.get(key)
    if (!op) {
      problems.push({path, message: `step ${step.id} writes no such object: its record names only what it writes`})
      continue
    }
    for (const message of beforeProblems(step, op, value)) problems.push({path, message})
  }
  return problems
}

/**
 * Problems with `status`: records of steps the spec does not have, a step recorded twice, and records holding
 * what their step could not have observed.
 */
export function statusProblems(plan: MigrationPlan): PlanProblem[] {
  const status = plan.status
  if (!status) return []
  const problems: PlanProblem[] = []
  const seen = new Set<string>()
  status.steps.forEach((record, i) => {
    const base = `status.steps[${i}]`
    const step = plan.spec.steps.find((s) => s.id === record.id)
    if (!step) {
      problems.push({path: `${base}.id`, message: `the spec has no step "${record.id}"`})
      return
    }
    if (seen.has(record.id)) problems.push({path: `${base}.id`, message: `step "${record.id}" is recorded twice`})
    seen.add(record.id)
    problems.push(...stepRecordProblems(step, record.observed, base))
  })
  return problems
}
