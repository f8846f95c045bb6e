// The plan's record in the cluster (src/plan/record.ts says what it is and why a ConfigMap): read it, and write
// it before the plan file at every step transition (PlanState.record). The executor holds the namespace's lock
// while it writes, so it is the only writer; a conflict is its own earlier write whose answer was lost, or a
// teammate's hand edit, and is resolved by reading again.
import {createRequire} from 'node:module'

import type {ErrorObject} from 'ajv'

import {UserError} from '../errors.js'
import {KubeApiError} from '../kube/errors.js'
import type {KubeClient} from '../kube/types.js'
import type {KubeObject, ObjectRef} from '../planner/model.js'
import {
  type MigrationRecord,
  parseRecordText,
  RECORD_DATA_KEY,
  RECORD_SCHEMA,
  recordName,
  recordOf,
} from '../plan/record.js'
import {MANAGED_BY_LABEL, MANAGED_BY_VALUE, type MigrationPlan} from '../planner/plan-types.js'

type Validator = ((data: unknown) => boolean) & {errors?: ErrorObject[] | null}
let validator: Validator | undefined

/** The record's schema problems (ajv, compiled once: the schema is small). */
function schemaProblems(data: unknown): string[] {
  if (!validator) {
    const {Ajv} = createRequire(import.meta.url)('ajv') as typeof import('ajv')
    validator = new Ajv({allErrors: true, strict: false}).compile(RECORD_SCHEMA) as Validator
  }
  return validator(data) ? [] : (validator.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? ''}`)
}

export function recordRef(namespace: string, planName: string): ObjectRef {
  return {apiVersion: 'v1', kind: 'ConfigMap', namespace, name: recordName(planName)}
}

/** Read and check a record's ConfigMap (undefined: none). A malformed record is an error naming the object. */
export function recordFromObject(obj: KubeObject | undefined, ref: ObjectRef): MigrationRecord | undefined {
  if (!obj) return undefined
  const text = (obj as {data?: Record<string, string>}).data?.[RECORD_DATA_KEY]
  const {record, problems} =
    typeof text === 'string' ? parseRecordText(text, schemaProblems) : {problems: [`it has no ${RECORD_DATA_KEY}`]}
  if (record) return record
  throw new UserError(
    `the migration record ConfigMap ${ref.namespace}/${ref.name} cannot be read: ${problems.slice(0, 3).join('; ')}`,
    {
      suggestion: `It is written by mesh-migrate only: see who changed it (\`kubectl -n ${ref.namespace} get configmap ${ref.name} -o yaml\`), restore it from the plan file's status, or delete it if no step of the namespace's plan was ever applied.`,
    },
  )
}

/** The record of plan `planName` in `namespace` (plan --keep-progress reads it before any plan is loaded). */
export function readRecord(
  client: KubeClient,
  namespace: string,
  planName: string,
): Promise<MigrationRecord | undefined> {
  return new ClusterRecord(client, recordRef(namespace, planName)).read()
}

export class ClusterRecord {
  private resourceVersion: string | undefined

  constructor(
    private readonly client: KubeClient,
    readonly ref: ObjectRef,
  ) {}

  static of(client: KubeClient, plan: MigrationPlan): ClusterRecord {
    return new ClusterRecord(client, recordRef(plan.metadata.namespace, plan.metadata.name))
  }

  async read(): Promise<MigrationRecord | undefined> {
    const obj = await this.client.get(this.ref)
    this.resourceVersion = obj?.metadata.resourceVersion
    return recordFromObject(obj, this.ref)
  }

  /** Write the plan's status as the record (create it the first time). */
  async write(plan: MigrationPlan, file: string, by: string): Promise<void> {
    const digest = plan.status!.specDigest
    const text = JSON.stringify(recordOf(plan, file, digest, by))
    for (let attempt = 0; ; attempt++) {
      try {
        const written = this.resourceVersion
          ? await this.client.mergePatch(this.ref, {
              metadata: {resourceVersion: this.resourceVersion},
              data: {[RECORD_DATA_KEY]: text},
            })
          : await this.client.create(this.object(text))
        this.resourceVersion = written.metadata.resourceVersion
        return
      } catch (error) {
        // Our own earlier write whose answer was lost, or the record created in between: read it again, once.
        if (!(error instanceof KubeApiError && error.status === 409) || attempt > 0) throw error
        const current = await this.read()
        if (current && current.plan.specDigest !== digest && current.plan.specDigest !== plan.status?.replaces)
          throw new UserError(
            `the migration record ${this.ref.namespace}/${this.ref.name} was written by another plan (${current.plan.file}, by ${current.updated.by}) while this one held the lock`,
          )
      }
    }
  }

  private object(text: string): KubeObject {
    return {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        name: this.ref.name,
        namespace: this.ref.namespace!,
        labels: {[MANAGED_BY_LABEL]: MANAGED_BY_VALUE},
      },
      data: {[RECORD_DATA_KEY]: text},
    } as KubeObject
  }
}
