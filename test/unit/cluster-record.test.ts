// Issue 19 §2 and issue 20 §3/§4: the plan's record in the cluster. Its format (versioned, the JSON schema in
// schemas/), the merge rules between the plan file's status and the record, the store over the in-memory client
// (written before the file, a lost answer's 409 resolved), each refusal (another plan's record: exit 5; a malformed
// record), and the refresh before every write (drift in an applied step: exit 3 naming step, object, old → new).
import {mkdtemp, readFile, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import {Ajv} from 'ajv'
import {beforeAll, describe, expect, it} from 'vitest'

import {ClusterConnection, PlanSession} from '../../src/cli/plan-session.js'
import {ExitCode} from '../../src/exit-codes.js'
import {StalePlanError, UserError} from '../../src/errors.js'
import {applyStep, undoStep} from '../../src/executor/engine.js'
import {OWNER_ANNOTATION} from '../../src/executor/ownership.js'
import {ClusterRecord, recordFromObject, recordRef} from '../../src/executor/record-store.js'
import type {KubeObject} from '../../src/planner/model.js'
import type {MigrationPlan, StepStatus} from '../../src/planner/plan-types.js'
import {renderPlanFile, specDigest} from '../../src/plan/planfile.js'
import {
  type MigrationRecord,
  mergeRecord,
  parseRecordText,
  RECORD_API_VERSION,
  RECORD_DATA_KEY,
  RECORD_SCHEMA,
  recordOf,
} from '../../src/plan/record.js'
import {loadManifestFiles} from '../../src/sources/manifests.js'
import {testExecution} from '../support/execution.js'
import {MemoryKube} from '../support/memory-kube.js'
import {offlinePlan} from '../support/offline-plan.js'
import {REPO_ROOT} from '../support/shared.js'

const NS = 'bookinfo'
const nsRef = {apiVersion: 'v1', kind: 'Namespace', name: NS}
const ajv = new Ajv({allErrors: true, strict: false})
const validate = ajv.compile(RECORD_SCHEMA)
const schemaProblems = (d: unknown) => (validate(d) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath}`))

let manifests: KubeObject[]
let plan: MigrationPlan
let digest: string

beforeAll(async () => {
  manifests = (await loadManifestFiles([path.join(REPO_ROOT, 'examples/bookinfo')], {defaultNamespace: NS})).objects
  plan = offlinePlan(NS, manifests, {}, 'examples/bookinfo').plan
  digest = specDigest(plan)
})

const stepStatus = (id: string, phase: StepStatus['phase'], at = '2026-12-04T10:00:00.000Z'): StepStatus => ({
  id,
  phase,
  at,
  by: 'alice',
})

const withStatus = (steps: StepStatus[], extra: {replaces?: string} = {}): MigrationPlan => ({
  ...plan,
  status: {specDigest: digest, ...extra, steps},
})

const record = (steps: StepStatus[], specDigest = digest): MigrationRecord => ({
  ...recordOf(withStatus(steps), 'plans/bookinfo.yaml', specDigest, 'alice'),
  updated: {at: '2026-12-04T10:00:00.000Z', by: 'alice'},
})

describe('the record format', () => {
  it('is a versioned document that its JSON schema accepts; schemas/migration-record.json is that schema', async () => {
    const id = plan.spec.steps[1]!.id
    const doc = record([{...stepStatus(id, 'Applied'), observed: {before: {x: {labels: {a: null}}}}, attempts: 1}])
    expect(doc.apiVersion).toBe(RECORD_API_VERSION)
    expect(doc.kind).toBe('MigrationRecord')
    expect(doc.plan).toEqual({name: NS, namespace: NS, specDigest: digest, file: 'plans/bookinfo.yaml'})
    expect(schemaProblems(doc)).toEqual([])
    const committed = JSON.parse(await readFile(path.join(REPO_ROOT, 'schemas/migration-record.json'), 'utf8'))
    expect(committed).toEqual(JSON.parse(JSON.stringify(RECORD_SCHEMA)))
  })

  it('is refused when it is not JSON, of another version, or breaks the schema', () => {
    expect(parseRecordText('{', schemaProblems).problems[0]).toMatch(/not JSON/)
    const other = JSON.stringify({...record([]), apiVersion: 'mesh-migrate.io/v9'})
    expect(parseRecordText(other, schemaProblems).problems[0]).toMatch(/apiVersion "mesh-migrate.io\/v9" is not/)
    const bad = JSON.stringify(record([{...stepStatus('x', 'Applied'), phase: 'Done' as StepStatus['phase']}]))
    expect(parseRecordText(bad, schemaProblems).problems).toEqual(['/steps/0/phase'])
    const noDigest = JSON.stringify({...record([]), plan: {...record([]).plan, specDigest: 'abc'}})
    expect(parseRecordText(noDigest, schemaProblems).problems).toEqual(['/plan/specDigest'])
    expect(parseRecordText(JSON.stringify(record([])), schemaProblems).record).toBeDefined()
  })

  it('a malformed record ConfigMap is an error naming it and what to do', () => {
    const ref = recordRef(NS, NS)
    const obj = {apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: ref.name, namespace: NS}, data: {}}
    expect(() => recordFromObject(obj as KubeObject, ref)).toThrow(
      `the migration record ConfigMap ${NS}/mesh-migrate-record-${NS} cannot be read: it has no ${RECORD_DATA_KEY}`,
    )
    expect(recordFromObject(undefined, ref)).toBeUndefined()
  })
})

describe('merge rules between the file status and the record', () => {
  it('1. no record: the file status stands', () => {
    const file = withStatus([stepStatus(plan.spec.steps[1]!.id, 'Applied')])
    expect(mergeRecord(file, digest, undefined)).toEqual({use: 'file', status: file.status})
  })

  it("2. the plan's own record wins over the file, each disagreement named (a teammate's file without status)", () => {
    const [a, b] = [plan.spec.steps[1]!.id, plan.spec.steps[2]!.id]
    const merged = mergeRecord(plan, digest, record([stepStatus(a, 'Applied'), stepStatus(b, 'RolledBack')]))
    expect(merged.use).toBe('record')
    if (merged.use !== 'record') return
    expect(merged.status.steps.map((s) => [s.id, s.phase])).toEqual([
      [a, 'Applied'],
      [b, 'RolledBack'],
    ])
    expect(merged.differences).toEqual([
      `step ${a}: the file says no record, the cluster Applied at 2026-12-04T10:00:00.000Z`,
      `step ${b}: the file says no record, the cluster RolledBack at 2026-12-04T10:00:00.000Z`,
    ])
  })

  it("2. a stale copy (Applied in the file, RolledBack in the cluster) acts on the cluster's, with its before values", () => {
    const id = plan.spec.steps[1]!.id
    const stale = withStatus([{...stepStatus(id, 'Applied'), observed: {before: {k: {labels: {x: 'file'}}}}}])
    const truth = {...stepStatus(id, 'Applied', '2026-12-04T11:00:00.000Z'), observed: {before: {k: {labels: {}}}}}
    const merged = mergeRecord(stale, digest, record([truth]))
    expect(merged.use === 'record' && merged.status.steps).toEqual([truth])
    expect(merged.use === 'record' && merged.differences).toEqual([
      `step ${id}: the file says Applied at 2026-12-04T10:00:00.000Z, the cluster Applied at 2026-12-04T11:00:00.000Z`,
    ])
    const same = mergeRecord(withStatus([truth]), digest, record([truth]))
    expect(same.use === 'record' && same.differences).toEqual([])
  })

  it('3. a re-plan that says it replaces the recorded plan keeps its own status', () => {
    const older = `sha256:${'1'.repeat(64)}`
    const file = withStatus([stepStatus(plan.spec.steps[1]!.id, 'Applied')], {replaces: older})
    expect(mergeRecord(file, digest, record([stepStatus('x', 'Applied')], older))).toEqual({
      use: 'successor',
      status: file.status,
    })
  })

  it("4. another plan's record with nothing left applied is replaced; 5. one that may have written is refused", () => {
    const older = `sha256:${'2'.repeat(64)}`
    const gone = mergeRecord(plan, digest, record([stepStatus('x', 'RolledBack')], older))
    expect(gone.use).toBe('file')
    for (const phase of ['Applied', 'Running', 'Failed', 'Interrupted'] as const)
      expect(mergeRecord(plan, digest, record([stepStatus('x', phase)], older)).use).toBe('other-plan')
  })
})

/** The plan in a file of its own, a cluster holding the manifests, claimed by this plan. */
async function rig(text = renderPlanFile(plan)) {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'mesh-migrate-record-'))
  const file = path.join(dir, 'bookinfo.yaml')
  await writeFile(file, text)
  const kube = new MemoryKube().seed(...manifests)
  const owner = {plan: file, digest, by: 'tester', since: '2026-12-04T00:00:00.000Z'}
  kube.edit(nsRef, (o) => {
    o.metadata.annotations = {...o.metadata.annotations, [OWNER_ANNOTATION]: JSON.stringify(owner)}
  })
  const notes: string[] = []
  const session = await PlanSession.load(file, ClusterConnection.of(kube), (m) => notes.push(m))
  return {dir, file, kube, session, notes}
}

const storedRecord = (kube: MemoryKube) => recordFromObject(kube.peek(recordRef(NS, NS)), recordRef(NS, NS))

describe('the store: the cluster first, then the file', () => {
  it('every transition of a step is in the ConfigMap before the plan file, with who, when and the digest', async () => {
    const {file, kube, session} = await rig()
    await session.adoptRecord(kube)
    const step = plan.spec.steps.find((s) => s.action === 'create-waypoint')!
    // At each write of the file, the cluster already holds the same status.
    const seenAtFileWrite: string[] = []
    const save = session.state.save.bind(session.state)
    session.state.save = async () => {
      seenAtFileWrite.push(storedRecord(kube)!.steps.find((s) => s.id === step.id)!.phase)
      await save()
    }
    await applyStep(testExecution(kube, session.state), step)
    expect(seenAtFileWrite).toEqual(['Running', 'Running', 'Applied'])
    const rec = storedRecord(kube)!
    expect(rec.plan.specDigest).toBe(digest)
    expect(rec.updated.by).toBe('tester')
    const applied = rec.steps.find((s) => s.id === step.id)!
    expect(applied.phase).toBe('Applied')
    expect(applied.observed?.before).toEqual({[`gateway.networking.k8s.io/Gateway/${NS}/waypoint`]: {existed: false}})
    // A ConfigMap: readable with less privilege than a Secret, and it holds no Secret data.
    expect(kube.peek(recordRef(NS, NS))!.kind).toBe('ConfigMap')
    expect(await readFile(file, 'utf8')).toContain('phase: Applied')
  })

  it('a 409 from its own earlier write whose answer was lost is read again and written, once', async () => {
    const {kube, session} = await rig()
    await session.adoptRecord(kube)
    const store = ClusterRecord.of(kube, session.state.plan)
    await store.read()
    session.state.plan.status = {specDigest: digest, steps: [stepStatus(plan.spec.steps[1]!.id, 'Running')]}
    await store.write(session.state.plan, 'f', 'tester')
    // Another ClusterRecord (an earlier write of ours the first never saw) moves the resourceVersion on.
    await ClusterRecord.of(kube, session.state.plan).write(session.state.plan, 'f', 'tester')
    session.state.plan.status.steps[0]!.phase = 'Applied'
    await store.write(session.state.plan, 'f', 'tester')
    expect(storedRecord(kube)!.steps[0]!.phase).toBe('Applied')
  })
})

describe('refusals', () => {
  it("another plan's record that may have written: exit 5 naming its file and who wrote it; nothing written", async () => {
    const {kube, session} = await rig()
    const other = {...record([stepStatus('x', 'Applied')], `sha256:${'3'.repeat(64)}`)}
    other.plan.file = 'plans/elsewhere.yaml'
    kube.seed({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {name: recordRef(NS, NS).name, namespace: NS},
      data: {[RECORD_DATA_KEY]: JSON.stringify(other)},
    } as KubeObject)
    const before = kube.writes().length
    const error = await session.adoptRecord(kube).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(UserError)
    expect((error as UserError).exitCode).toBe(ExitCode.Locked)
    expect((error as UserError).message).toContain(
      `namespace ${NS} is being migrated by another plan: plans/elsewhere.yaml (its record in the cluster`,
    )
    expect((error as UserError).message).toContain('last written by alice')
    expect(kube.writes().length).toBe(before)
  })

  it('a teammate whose file has no status reads the progress from the cluster, saying where they differ', async () => {
    const first = await rig()
    await first.session.adoptRecord(first.kube)
    const step = plan.spec.steps.find((s) => s.action === 'create-waypoint')!
    await applyStep(testExecution(first.kube, first.session.state), step)
    // The reviewed file, as merged (no status), in another directory, against the same cluster.
    const dir = await mkdtemp(path.join(os.tmpdir(), 'mesh-migrate-record-teammate-'))
    await writeFile(path.join(dir, 'bookinfo.yaml'), renderPlanFile(plan))
    const notes: string[] = []
    const teammate = await PlanSession.load(path.join(dir, 'bookinfo.yaml'), ClusterConnection.of(first.kube), (m) =>
      notes.push(m),
    )
    expect(teammate.state.phase(step)).toBe('Pending')
    await teammate.adoptRecord(first.kube)
    expect(teammate.state.phase(step)).toBe('Applied')
    expect(notes.join('\n')).toContain(`step ${step.id}: the file says no record, the cluster Applied at`)
    // Its rollback undoes exactly what the record says: the waypoint the first operator created.
    await undoStep(testExecution(first.kube, teammate.state), step, () => undefined)
    expect(
      first.kube.peek({apiVersion: 'gateway.networking.k8s.io/v1', kind: 'Gateway', namespace: NS, name: 'waypoint'}),
    ).toBeUndefined()
    expect(storedRecord(first.kube)!.steps.find((s) => s.id === step.id)!.phase).toBe('RolledBack')
  })
})

describe('refresh before every write', () => {
  it('drift in an applied step stops the next step before it writes: exit 3 naming step, object, label, old → new', async () => {
    const {kube, session} = await rig()
    await session.adoptRecord(kube)
    const ctx = testExecution(kube, session.state)
    const steps = plan.spec.steps
    const bind = steps.find((s) => s.action === 'bind-waypoint')!
    // bind-waypoint recorded Applied (the record as the apply that ran it left it); then someone unbinds by hand.
    await session.state.record(bind.id, {phase: 'Applied', by: 'alice'})
    kube.edit(nsRef, (o) => {
      delete o.metadata.labels!['istio.io/use-waypoint']
    })
    const next = steps[steps.indexOf(bind) + 1]!
    const writes = kube.writes().length
    const error = await applyStep(ctx, next).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(StalePlanError)
    expect((error as StalePlanError).message).toContain(
      `step ${bind.id}: Namespace ${NS}: label istio.io/use-waypoint changed since the step set it: "waypoint" → absent`,
    )
    expect((error as StalePlanError).suggestion).toContain(`--repair ${bind.id}`)
    expect(kube.writes().length).toBe(writes)
    expect(session.state.phase(next)).toBe('Pending')
  })
})
