// The migration record kept in the cluster (issue 19): what each step of a plan did, written before the plan
// file's `status` at every transition, in the migrated namespace. The cluster is the truth: a teammate holding
// only the reviewed plan file (no `status`) sees the true progress and can continue or roll back exactly, and a
// copy of the plan whose `status` is stale acts on what the cluster says was applied (issue 20 §3, §4).
//
// Where: a ConfigMap `mesh-migrate-record-<plan name>` in the plan's namespace (deleted with the namespace, owned by
// nothing else). A ConfigMap, not a Secret: the record holds label values, "existed" flags and restart stamps,
// never Secret data (the tool never reads Secrets), and reading it needs only `get configmaps` in the namespace,
// which fewer roles grant less dangerously than Secrets.
//
// Pure: the document's format, its schema, and the merge rules between the file's `status` and the record.
import {stepStatus} from '../planner/plan-schema.js'
import type {MigrationPlan, PlanProblem, PlanStatus, PlanStep, StepStatus} from '../planner/plan-types.js'
import {digestProblems, safetyProblems, specDigest} from './planfile.js'
import {mayHaveWritten} from './rollback.js'
import {statusProblems} from './status-checks.js'

/**
 * v1alpha2 (issue 19 §5, §6) adds `appliedSteps`: each step that ran, as it ran (its operations and its undo, with
 * the objects it deleted), so that a rollback needs no plan file; and `observed.done` in a step's record: the
 * operations it completed, in order (per-workload progress of an interrupted restart). v1alpha1 is still read.
 */
export const RECORD_API_VERSION = 'mesh-migrate.io/v1alpha2'
export const RECORD_V1ALPHA1 = 'mesh-migrate.io/v1alpha1'
export const RECORD_KIND = 'MigrationRecord'
/** The key of the ConfigMap's `data` holding the record (JSON). */
export const RECORD_DATA_KEY = 'record.json'
/** Bound on what is read back: a ConfigMap holds at most 1 MiB. */
export const RECORD_MAX_BYTES = 1024 * 1024

/** The ConfigMap holding a plan's record, in the plan's namespace. */
export function recordName(planName: string): string {
  return `mesh-migrate-record-${planName}`
}

export interface MigrationRecord {
  apiVersion: typeof RECORD_API_VERSION | typeof RECORD_V1ALPHA1
  kind: typeof RECORD_KIND
  plan: {
    name: string
    namespace: string
    /** The reviewed spec's digest: the plan's identity. */
    specDigest: string
    /** The plan file as the operator who wrote the record named it (for messages; never an identity). */
    file: string
  }
  /** Who wrote the record last, and when. */
  updated: {at: string; by: string}
  /** Every step that ran, in plan order, as the plan file's status.steps holds them. */
  steps: StepStatus[]
  /**
   * v1alpha2: the spec of every step in `steps` as it ran (id, action, operations, undo with the objects it deleted):
   * the undo data of a rollback when the plan file is edited or lost. Absent in a v1alpha1 record.
   */
  appliedSteps?: PlanStep[]
}

/** JSON Schema (draft-07) of the record document (schemas/migration-record.json). */
export const RECORD_SCHEMA = {
  $id: 'https://mesh-migrate.io/schemas/migration-record-v1alpha2.json',
  $schema: 'http://json-schema.org/draft-07/schema#',
  title: 'MigrationRecord',
  description:
    "A plan's record of execution, kept in the migrated namespace (ConfigMap mesh-migrate-record-<plan name>, data key record.json).",
  type: 'object',
  additionalProperties: false,
  required: ['apiVersion', 'kind', 'plan', 'updated', 'steps'],
  properties: {
    apiVersion: {enum: [RECORD_API_VERSION, RECORD_V1ALPHA1]},
    kind: {const: RECORD_KIND},
    plan: {
      type: 'object',
      additionalProperties: false,
      required: ['name', 'namespace', 'specDigest', 'file'],
      properties: {
        name: {type: 'string', minLength: 1},
        namespace: {type: 'string', minLength: 1},
        specDigest: {type: 'string', pattern: '^sha256:[0-9a-f]{64}$'},
        file: {type: 'string'},
      },
    },
    updated: {
      type: 'object',
      additionalProperties: false,
      required: ['at', 'by'],
      properties: {at: {type: 'string'}, by: {type: 'string'}},
    },
    steps: {type: 'array', items: stepStatus},
    appliedSteps: {
      description:
        "The spec of each recorded step as it ran: what rollback undoes when the plan file is edited or lost (its writes are checked against the step kinds' write rules before use).",
      type: 'array',
      items: {
        type: 'object',
        required: ['id', 'action', 'operations', 'undo'],
        properties: {
          id: {type: 'string', minLength: 1},
          action: {type: 'string'},
          operations: {type: 'array', items: {type: 'object'}},
          undo: {
            type: 'object',
            required: ['operations'],
            properties: {operations: {type: 'array', items: {type: 'object'}}},
          },
        },
      },
    },
  },
} as const

/** The record of `plan` as it stands (its status), written by `by`. */
export function recordOf(plan: MigrationPlan, file: string, digest: string, by: string): MigrationRecord {
  const steps = plan.status?.steps ?? []
  return {
    apiVersion: RECORD_API_VERSION,
    kind: RECORD_KIND,
    plan: {name: plan.metadata.name, namespace: plan.metadata.namespace, specDigest: digest, file},
    updated: {at: new Date().toISOString(), by},
    steps,
    appliedSteps: plan.spec.steps.filter((s) => steps.some((r) => r.id === s.id)),
  }
}

/** Does any step of the record say it may have written (Applied, Running, Failed, Interrupted)? */
export function recordMayHaveWritten(record: MigrationRecord): boolean {
  return record.steps.some((s) => mayHaveWritten(s.phase))
}

export type RecordMerge =
  /** No record, or one of a plan that left nothing behind: the file's status stands. */
  | {use: 'file'; status: PlanStatus | undefined; note?: string}
  /** The record of this plan: its steps replace the file's status; `differences` says where they disagreed. */
  | {use: 'record'; status: PlanStatus; differences: string[]}
  /** The file re-plans the recorded plan (plan --keep-progress / --force wrote status.replaces): the file's status stands. */
  | {use: 'successor'; status: PlanStatus | undefined}
  /** The record is another plan's, which may have written: this plan may not act (exit 5). */
  | {use: 'other-plan'; record: MigrationRecord}

const phaseAt = (s: StepStatus | undefined) =>
  s ? `${s.phase}${s.phase === 'Pending' ? '' : ` at ${s.at}`}` : 'no record'

/**
 * The merge rules between the plan file's `status` and the cluster's record (docs/contract.md, "The record in the
 * cluster"):
 * 1. no record: the file's status;
 * 2. the record's digest is the plan's: the record's steps, whatever the file says (each disagreement named);
 * 3. another digest, and the file says it replaces that digest (status.replaces): the file's status (the re-plan
 *    carried what it kept; its first write replaces the record);
 * 4. another digest, and nothing of that plan may have written (all Pending/RolledBack): the file's status;
 * 5. otherwise another plan owns the namespace: refused.
 */
export function mergeRecord(plan: MigrationPlan, digest: string, record: MigrationRecord | undefined): RecordMerge {
  const file = plan.status
  if (!record) return {use: 'file', status: file}
  if (record.plan.specDigest === digest) {
    const differences: string[] = []
    const ids = new Set([...(file?.steps ?? []), ...record.steps].map((s) => s.id))
    for (const step of plan.spec.steps) {
      if (!ids.has(step.id)) continue
      const inFile = file?.steps.find((s) => s.id === step.id)
      const inRecord = record.steps.find((s) => s.id === step.id)
      if (inFile?.phase === inRecord?.phase && inFile?.at === inRecord?.at) continue
      differences.push(`step ${step.id}: the file says ${phaseAt(inFile)}, the cluster ${phaseAt(inRecord)}`)
    }
    const order = plan.spec.steps.map((s) => s.id)
    const steps = record.steps
      .filter((s) => order.includes(s.id))
      .sort((a, b) => order.indexOf(a.id) - order.indexOf(b.id))
    return {use: 'record', status: {specDigest: digest, steps}, differences}
  }
  if (file?.replaces === record.plan.specDigest) return {use: 'successor', status: file}
  if (!recordMayHaveWritten(record))
    return {
      use: 'file',
      status: file,
      note: `the cluster's record is of an earlier plan (${record.plan.file}), fully rolled back: this plan replaces it`,
    }
  return {use: 'other-plan', record}
}

/** A record read back from the cluster: its problems against the format, or the record. */
export function parseRecordText(
  text: string,
  validate: (data: unknown) => string[],
): {record?: MigrationRecord; problems: string[]} {
  if (text.length > RECORD_MAX_BYTES) return {problems: [`it is larger than ${RECORD_MAX_BYTES} bytes`]}
  let data: unknown
  try {
    data = JSON.parse(text)
  } catch (error) {
    return {problems: [`it is not JSON: ${(error as Error).message}`]}
  }
  const version = (data as {apiVersion?: unknown} | null)?.apiVersion
  if (version !== RECORD_API_VERSION && version !== RECORD_V1ALPHA1)
    return {
      problems: [
        `apiVersion ${JSON.stringify(version)} is not ${RECORD_API_VERSION} (or ${RECORD_V1ALPHA1}) (a record written by another version of mesh-migrate?)`,
      ],
    }
  const problems = validate(data)
  return problems.length > 0 ? {problems} : {record: data as MigrationRecord, problems: []}
}

/**
 * A plan file whose spec was edited after its first apply (issue 19 §5): the one problem that still lets `status`,
 * `show`, `rollback` and `plan --keep-progress` read it (they take the steps that ran from the cluster's record).
 * Its other problems are reported with it.
 */
export function isEditedAfterApply(plan: MigrationPlan | undefined): boolean {
  return plan !== undefined && digestProblems(plan).length > 0
}

/**
 * The plan as the cluster's record says it ran: the record's steps as its status (digest: the reviewed spec's), and
 * each recorded step's spec as it ran in place of the file's (a step the file no longer has is kept, after the
 * others). `problems`: why it cannot be undone from the record — a step that may have written with no spec in it
 * (a v1alpha1 record), or a recorded write outside the step kinds' write rules (the record is not trusted blindly).
 */
export function recordedPlan(plan: MigrationPlan, record: MigrationRecord): {plan: MigrationPlan; problems: string[]} {
  const ran = new Map((record.appliedSteps ?? []).map((s) => [s.id, s] as const))
  const problems: string[] = []
  for (const s of record.steps)
    if (mayHaveWritten(s.phase) && !ran.has(s.id))
      problems.push(
        `the record (${record.apiVersion}) does not hold the spec of step ${s.id} as it ran, which its undo needs`,
      )
  const inFile = new Set(plan.spec.steps.map((s) => s.id))
  const steps = [
    ...plan.spec.steps.map((s) => ran.get(s.id) ?? s),
    ...[...ran.values()].filter((s) => !inFile.has(s.id)),
  ]
  const recorded: MigrationPlan = {
    ...plan,
    spec: {...plan.spec, steps},
    status: {specDigest: record.plan.specDigest, steps: record.steps},
  }
  const unsafe: PlanProblem[] =
    problems.length > 0
      ? []
      : safetyProblems({...recorded, spec: {...recorded.spec, steps: [...ran.values()]}}).filter((p) =>
          p.path.startsWith('spec.steps'),
        )
  // What the record says each step saw before it wrote is checked as the file's status is (status-checks.ts).
  const tampered = problems.length > 0 || unsafe.length > 0 ? [] : statusProblems(recorded)
  problems.push(...[...unsafe, ...tampered].map((p) => `the record's ${p.path.replace(/^spec\./, '')}: ${p.message}`))
  return {plan: recorded, problems}
}

/** The digest the file's progress belongs to: the reviewed spec's (status.specDigest) once a step was applied. */
export function reviewedDigest(plan: MigrationPlan): string {
  return isEditedAfterApply(plan) ? plan.status!.specDigest : specDigest(plan)
}
