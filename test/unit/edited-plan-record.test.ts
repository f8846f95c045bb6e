// Issue 19 §5 and §6: the record's v1alpha2 format (each step as it ran), a plan edited after its first apply read and
// rolled back from the record (and each refusal: no record, another plan's, a record without the steps or with writes
// no step may make), plan --keep-progress from the record, and per-operation progress with the hazard window of a
// step stopped part-way.
import {mkdtemp, readFile, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import {Ajv} from 'ajv'
import {beforeAll, describe, expect, it} from 'vitest'

import {ClusterConnection, PlanSession} from '../../src/cli/plan-session.js'
import {UserError} from '../../src/errors.js'
import {refKey} from '../../src/planner/refs.js'
import {ExitCode} from '../../src/exit-codes.js'
import {applyStep, StepFailedError, undoStep} from '../../src/executor/engine.js'
import {progressWithRecord} from '../../src/executor/keep-progress.js'
import {OWNER_ANNOTATION} from '../../src/executor/ownership.js'
import {PlanState} from '../../src/executor/plan-state.js'
import {recordFromObject, recordRef} from '../../src/executor/record-store.js'
import {partialProgress} from '../../src/plan/interrupted.js'
import {checkPlanText, renderPlanFile, specDigest} from '../../src/plan/planfile.js'
import {
  isEditedAfterApply,
  type MigrationRecord,
  parseRecordText,
  RECORD_API_VERSION,
  RECORD_SCHEMA,
  RECORD_V1ALPHA1,
  recordedPlan,
  recordOf,
} from '../../src/plan/record.js'
import {doneEntry, statusProblems} from '../../src/plan/status-checks.js'
import type {KubeObject} from '../../src/planner/model.js'
import type {MigrationPlan, PlanStep, StepStatus} from '../../src/planner/plan-types.js'
import {loadManifestFiles} from '../../src/sources/manifests.js'
import {testExecution} from '../support/execution.js'
import {MemoryKube} from '../support/memory-kube.js'
import {offlinePlan} from '../support/offline-plan.js'
import {REPO_ROOT} from '../support/shared.js'

const NS = 'bookinfo'
const nsRef = {apiVersion: 'v1', kind: 'Namespace', name: NS}
const validate = new Ajv({allErrors: true, strict: false}).compile(RECORD_SCHEMA)
const schemaProblems = (d: unknown) => (validate(d) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath}`))

let manifests: KubeObject[]
let plan: MigrationPlan
let digest: string

beforeAll(async () => {
  manifests = (await loadManifestFiles([path.join(REPO_ROOT, 'examples/bookinfo')], {defaultNamespace: NS})).objects
  plan = offlinePlan(NS, manifests, {}, 'examples/bookinfo').plan
  digest = specDigest(plan)
})

const step = (action: string): PlanStep => plan.spec.steps.find((s) => s.action === action)!
const applied = (id: string, extra: Partial<StepStatus> = {}): StepStatus => ({
  id,
  phase: 'Applied',
  at: '2026-12-04T10:00:00.000Z',
  by: 'alice',
  ...extra,
})
const withStatus = (steps: StepStatus[]): MigrationPlan => ({...plan, status: {specDigest: digest, steps}})
/** The plan with its spec edited after the first apply (an option nobody reviewed). */
const edited = (p: MigrationPlan): MigrationPlan => ({
  ...p,
  spec: {...p.spec, options: {...p.spec.options, optedOut: 'enroll'}},
})

describe('the record format v1alpha2', () => {
  it('holds each recorded step as it ran, and only those; its schema accepts it; v1alpha1 is still read', () => {
    const id = step('create-waypoint').id
    const record = recordOf(withStatus([applied(id)]), 'plans/bookinfo.yaml', digest, 'alice')
    expect(record.apiVersion).toBe(RECORD_API_VERSION)
    expect(record.appliedSteps).toEqual([step('create-waypoint')])
    expect(schemaProblems(JSON.parse(JSON.stringify(record)))).toEqual([])
    const old = {...record, apiVersion: RECORD_V1ALPHA1}
    delete (old as Partial<MigrationRecord>).appliedSteps
    expect(parseRecordText(JSON.stringify(old), schemaProblems).record?.apiVersion).toBe(RECORD_V1ALPHA1)
    expect(new Set(schemaProblems({...record, appliedSteps: [{id}]}))).toEqual(new Set(['/appliedSteps/0']))
  })
})

describe('a plan edited after its first apply, from the record', () => {
  it('is recognised as edited (and a plan never applied is not)', () => {
    const id = step('create-waypoint').id
    expect(isEditedAfterApply(edited(withStatus([applied(id)])))).toBe(true)
    expect(isEditedAfterApply(withStatus([applied(id)]))).toBe(false)
    expect(isEditedAfterApply(edited(plan))).toBe(false)
  })

  it('recordedPlan: the record steps replace the edited ones, the status is the record', () => {
    const bind = step('bind-waypoint')
    const record = recordOf(withStatus([applied(bind.id)]), 'plans/bookinfo.yaml', digest, 'alice')
    const tamperedFile = edited(withStatus([applied(bind.id)]))
    tamperedFile.spec.steps = tamperedFile.spec.steps.map((s) =>
      s.id === bind.id ? {...s, undo: {...s.undo, operations: []}} : s,
    )
    const {plan: recorded, problems} = recordedPlan(tamperedFile, record)
    expect(problems).toEqual([])
    expect(recorded.spec.steps.find((s) => s.id === bind.id)).toEqual(bind)
    expect(recorded.status).toEqual({specDigest: digest, steps: [applied(bind.id)]})
  })

  it('recordedPlan refuses a v1alpha1 record (no steps as they ran), a write no step may make, a tampered before', () => {
    const bind = step('bind-waypoint')
    const record = recordOf(withStatus([applied(bind.id)]), 'plans/bookinfo.yaml', digest, 'alice')
    const v1 = {...record, apiVersion: RECORD_V1ALPHA1, appliedSteps: undefined} as unknown as MigrationRecord
    expect(recordedPlan(edited(plan), v1).problems[0]).toContain(
      `the record (${RECORD_V1ALPHA1}) does not hold the spec of step ${bind.id} as it ran`,
    )
    const unsafeStep: PlanStep = {
      ...bind,
      undo: {
        ...bind.undo,
        operations: [{op: 'label', ref: nsRef, labels: {'pod-security.kubernetes.io/enforce': 'privileged'}}],
      },
    }
    const unsafe = recordedPlan(edited(plan), {...record, appliedSteps: [unsafeStep]}).problems
    expect(unsafe.join('\n')).toContain('pod-security.kubernetes.io/enforce')
    const ambient = step('enable-ambient')
    const ambientRecord = recordOf(withStatus([applied(ambient.id)]), 'plans/bookinfo.yaml', digest, 'alice')
    const before = {[refKey(nsRef)]: {labels: {'pod-security.kubernetes.io/enforce': 'privileged'}}}
    const tampered = {...ambientRecord, steps: [applied(ambient.id, {observed: {before}})]}
    expect(recordedPlan(edited(plan), tampered).problems.join('\n')).toContain('is not one the step writes')
  })
})

/** The plan applied by `actions` in a file of its own, then edited in place; a cluster that holds what it did. */
async function appliedThenEdited(actions: string[]) {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'mesh-migrate-edited-'))
  const file = path.join(dir, 'bookinfo.yaml')
  await writeFile(file, renderPlanFile(plan))
  const kube = new MemoryKube().seed(...manifests)
  const start = labelsOf(kube)
  const first = await PlanSession.load(file, ClusterConnection.of(kube), () => undefined)
  await first.adoptRecord(kube)
  for (const action of actions) {
    // Without a control plane the Services are never bound: bind-waypoint wrote its labels, then is recorded Failed
    // (a step that may have written, which rollback undoes the same way).
    await applyStep(testExecution(kube, first.state), step(action)).catch((error: unknown) => {
      if (!(error instanceof StepFailedError)) throw error
    })
    // What istiod does for the waypoint: Programmed, with an address and a ready proxy.
    if (action === 'create-waypoint') programWaypoint(kube)
  }
  const text = await readFile(file, 'utf8')
  expect(text).toContain('rootNamespace: istio-system')
  await writeFile(file, text.replace('rootNamespace: istio-system', 'rootNamespace: istio-edited'))
  return {dir, file, kube, start}
}

const waypointRef = {apiVersion: 'gateway.networking.k8s.io/v1', kind: 'Gateway', namespace: NS, name: 'waypoint'}

function programWaypoint(kube: MemoryKube): void {
  kube.setStatus(waypointRef, {
    addresses: [{type: 'IPAddress', value: '10.96.0.10'}],
    conditions: [{type: 'Programmed', status: 'True', reason: 'Programmed'}],
  })
  kube.seed({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {name: 'waypoint', namespace: NS},
    spec: {replicas: 1},
    status: {observedGeneration: 1, availableReplicas: 1},
  } as KubeObject)
}

/** The labels of every object bind-waypoint labels (the Namespace, its Services). */
function labelsOf(kube: MemoryKube): string {
  const refs = step('bind-waypoint').operations.flatMap((op) => (op.op === 'label' ? [op.ref] : []))
  return JSON.stringify([nsRef, ...refs].map((r) => kube.peek(r)?.metadata.labels ?? {}))
}

describe('loading and adopting an edited plan', () => {
  it('PlanState.load refuses it (exit 4) unless allowEdited, which keeps its problems', async () => {
    const {file} = await appliedThenEdited(['create-waypoint'])
    const refused = await PlanState.load(file).catch((e: unknown) => e)
    expect((refused as UserError).exitCode).toBe(ExitCode.Invalid)
    const state = await PlanState.load(file, {allowEdited: true})
    expect(state.edited?.[0]?.message).toContain('spec was edited after the first apply')
  })

  it('rollback: undone from the record to the exact prior labels and objects; the file keeps its edit', async () => {
    const {file, kube, start} = await appliedThenEdited(['create-waypoint', 'bind-waypoint'])
    const notes: string[] = []
    const session = await PlanSession.load(file, ClusterConnection.of(kube), (m) => notes.push(m), {allowEdited: true})
    expect(notes[0]).toContain(`Warning: ${file} is not a valid plan`)
    await session.adoptRecord(kube)
    expect(notes.join('\n')).toContain('using the record in the cluster')
    const ctx = testExecution(kube, session.state)
    for (const action of ['bind-waypoint', 'create-waypoint']) await undoStep(ctx, step(action), () => undefined)
    expect(labelsOf(kube)).toBe(start)
    expect(kube.peek(waypointRef)).toBeUndefined()
    const text = await readFile(file, 'utf8')
    expect(text).toContain('rootNamespace: istio-edited')
    expect(checkPlanText(text).plan?.status?.steps.map((s) => s.phase)).toEqual(['RolledBack', 'RolledBack'])
    const record = recordFromObject(kube.peek(recordRef(NS, NS)), recordRef(NS, NS))!
    expect(record.plan.specDigest).toBe(digest)
    expect(record.steps.map((s) => s.phase)).toEqual(['RolledBack', 'RolledBack'])
  })

  it('rollback without a record of the reviewed plan: exit 4 with git checkout as the way out; status still reads it', async () => {
    const {file, kube} = await appliedThenEdited(['create-waypoint'])
    kube.remove(recordRef(NS, NS))
    const session = await PlanSession.load(file, ClusterConnection.of(kube), () => undefined, {allowEdited: true})
    const error = (await session.adoptRecord(kube).catch((e: unknown) => e)) as UserError
    expect(error.exitCode).toBe(ExitCode.Invalid)
    expect(error.message).toContain('there is no record of it in the cluster')
    expect(error.suggestion).toContain(`git checkout -- ${file}`)
    await session.adoptRecord(kube, {readOnly: true, progressOnly: true})
    expect(session.state.phase(step('create-waypoint'))).toBe('Applied')
  })

  it('the owner of the namespace is still the reviewed plan (its digest)', async () => {
    const {file, kube} = await appliedThenEdited(['create-waypoint'])
    const owner = JSON.parse(kube.peek(nsRef)!.metadata.annotations![OWNER_ANNOTATION]!) as {digest: string}
    expect(owner.digest).toBe(digest)
    const session = await PlanSession.load(file, ClusterConnection.of(kube), () => undefined, {allowEdited: true})
    await session.adoptRecord(kube)
    await undoStep(testExecution(kube, session.state), step('create-waypoint'), () => undefined)
  })
})

describe('plan --keep-progress from the record', () => {
  const waypoint = () => step('create-waypoint').id
  const record = () => recordOf(withStatus([applied(waypoint())]), 'plans/bookinfo.yaml', digest, 'alice')

  it('an edited file: the progress and the steps are the record’s', () => {
    const kept = progressWithRecord(edited(withStatus([applied(waypoint())])), record(), 'plans/bookinfo.yaml')!
    expect(kept.status).toEqual({specDigest: digest, steps: [applied(waypoint())]})
    // A teammate's reviewed copy without status gets the same.
    expect(progressWithRecord(plan, record(), 'plans/bookinfo.yaml')?.status?.steps).toEqual([applied(waypoint())])
  })

  it('refused: an edited file without a record (exit 4), another plan’s record (exit 5)', () => {
    const noRecord = (() => {
      try {
        progressWithRecord(edited(withStatus([applied(waypoint())])), undefined, 'plans/bookinfo.yaml')
      } catch (e) {
        return e as UserError
      }
    })()
    expect(noRecord?.exitCode).toBe(ExitCode.Invalid)
    expect(noRecord?.message).toContain('the cluster holds no record of it')
    const other = {...record(), plan: {...record().plan, specDigest: `sha256:${'4'.repeat(64)}`, file: 'x.yaml'}}
    expect(() => progressWithRecord(plan, other, 'plans/bookinfo.yaml')).toThrow(/being migrated by another plan/)
  })
})

describe('per-operation progress of a step stopped part-way (§6)', () => {
  it('apply records each completed operation in observed.done; status checks refuse one the step does not have', async () => {
    const {kube} = await appliedThenEdited([])
    const dir = await mkdtemp(path.join(os.tmpdir(), 'mesh-migrate-done-'))
    await writeFile(path.join(dir, 'b.yaml'), renderPlanFile(plan))
    const session = await PlanSession.load(path.join(dir, 'b.yaml'), ClusterConnection.of(kube), () => undefined)
    await session.adoptRecord(kube)
    const create = step('create-policies')
    await applyStep(testExecution(kube, session.state), step('create-waypoint'))
    await applyStep(testExecution(kube, session.state), create)
    expect(session.state.status(create.id)?.observed?.done).toEqual(create.operations.map(doneEntry))
    const forged = withStatus([applied(create.id, {observed: {done: ['restart apps/Deployment/bookinfo/x']}})])
    expect(statusProblems(forged).map((p) => p.path)).toEqual(['status.steps[0].observed.done'])
  })

  it('restart-workloads interrupted after 2 rollouts: done/not done, and the hazard window from its kind', () => {
    const restart = step('restart-workloads')
    const done = restart.operations.slice(0, 2).map(doneEntry)
    const status: StepStatus = {...applied(restart.id), phase: 'Interrupted', observed: {done}}
    const progress = partialProgress(plan, restart, status)!
    expect(progress.done).toHaveLength(2)
    expect(progress.notDone).toHaveLength(restart.operations.length - 2)
    expect(progress.done[0]).toMatch(/^restart Deployment bookinfo\//)
    const n = new Set(restart.operations.map((o) => ('ref' in o ? o.ref.name : ''))).size
    expect(progress.hazards[0]).toContain(`2 of ${n} workloads restarted`)
    expect(progress.hazards[0]).toContain('still run with sidecars')
    // The plan's own hazards opened by this step, for the workloads already restarted only.
    const opened = plan.spec.hazards.filter((h) => h.phase === 'apply' && h.from === restart.id)
    const rolled = restart.operations.slice(0, 2).map((o) => ('ref' in o ? `${o.ref.kind}/${o.ref.name}` : ''))
    const expected = opened.filter((h) => h.workloads.some((w) => rolled.includes(w))).length
    expect(progress.hazards).toHaveLength(1 + expected)
    // Applied, Pending or a read-only step: nothing to show.
    expect(partialProgress(plan, restart, applied(restart.id))).toBeUndefined()
    expect(partialProgress(plan, restart, undefined)).toBeUndefined()
  })
})
