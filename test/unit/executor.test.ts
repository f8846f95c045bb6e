// The executor (src/executor: applyStep, undoStep, performOperation, stalePreconditions, checkRollback) on the
// in-memory KubeClient: what it writes, what it refuses, what it records in the plan file, with which error.
// The plan is the one `mesh-migrate plan bookinfo --manifests examples/bookinfo` makes; the cluster starts as
// those manifests. Whole migrations against an API server and a control plane are the e2e tier's job.
import {mkdtemp, readFile, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import {afterEach, beforeAll, describe, expect, it, vi} from 'vitest'

import {StalePlanError, UserError} from '../../src/errors.js'
import {
  applyStep,
  checkRollback,
  checkStep,
  type ExecutionContext,
  StepFailedError,
  undoStep,
} from '../../src/executor/engine.js'
import {performOperation, stalePreconditions} from '../../src/executor/operations.js'
import {PlanState} from '../../src/executor/plan-state.js'
import {OWNER_ANNOTATION, releaseIfRolledBack} from '../../src/executor/ownership.js'
import {InterruptedError} from '../../src/executor/verify.js'
import type {KubeObject, ObjectRef} from '../../src/planner/model.js'
import {MANAGED_BY_LABEL, type Operation, PLAN_ANNOTATION, type PlanStep} from '../../src/planner/plan-types.js'
import {renderPlanFile, specDigest} from '../../src/plan/planfile.js'
import {refKey} from '../../src/planner/refs.js'
import {digestOf} from '../../src/planner/canonical.js'
import {loadManifestFiles} from '../../src/sources/manifests.js'
import {MemoryKube} from '../support/memory-kube.js'
import {offlinePlan} from '../support/offline-plan.js'
import {testExecution} from '../support/execution.js'
import {REPO_ROOT} from '../support/shared.js'

const NS = 'bookinfo'
const nsRef: ObjectRef = {apiVersion: 'v1', kind: 'Namespace', name: NS}
const waypointRef: ObjectRef = {
  apiVersion: 'gateway.networking.k8s.io/v1',
  kind: 'Gateway',
  namespace: NS,
  name: 'waypoint',
}
const policy = (name: string): ObjectRef => ({
  apiVersion: 'security.istio.io/v1',
  kind: 'AuthorizationPolicy',
  namespace: NS,
  name,
})

let manifests: KubeObject[]
let planText: string

beforeAll(async () => {
  const dir = path.join(REPO_ROOT, 'examples/bookinfo')
  manifests = (await loadManifestFiles([dir], {defaultNamespace: NS})).objects
  planText = renderPlanFile(offlinePlan(NS, manifests, {}, 'examples/bookinfo').plan)
})

afterEach(() => {
  vi.useRealTimers()
})

interface Rig {
  kube: MemoryKube
  state: PlanState
  ctx: ExecutionContext
  warnings: string[]
  step(action: string): PlanStep
}

/**
 * A fresh cluster holding the manifests, and the plan in a fresh file. Unless `unclaimed`, the namespace is
 * already recorded as this plan's (its first write claims it: tested on its own below), so each test sees
 * only the writes of the step it runs.
 */
async function rig(overrides: Partial<ExecutionContext> = {}, opts: {unclaimed?: boolean} = {}): Promise<Rig> {
  const file = path.join(await mkdtemp(path.join(os.tmpdir(), 'mesh-migrate-executor-')), 'bookinfo.yaml')
  await writeFile(file, planText)
  const state = await PlanState.load(file)
  const kube = new MemoryKube().seed(...manifests)
  if (!opts.unclaimed) {
    const owner = {plan: file, digest: specDigest(state.plan), by: 'tester', since: '2026-12-03T00:00:00.000Z'}
    kube.edit({apiVersion: 'v1', kind: 'Namespace', name: NS}, (o) => {
      o.metadata.annotations = {...o.metadata.annotations, [OWNER_ANNOTATION]: JSON.stringify(owner)}
    })
  }
  const ctx = testExecution(kube, state, overrides)
  const step = (action: string) => {
    const s = state.plan.spec.steps.find((x) => x.action === action)
    if (!s) throw new Error(`no ${action} step in ${state.plan.spec.steps.map((x) => x.action).join(', ')}`)
    return s
  }
  return {kube, state, ctx, warnings: [], step}
}

const applied = (step: PlanStep) =>
  step.operations.filter((o): o is Extract<Operation, {op: 'apply'}> => o.op === 'apply').map((o) => o.object)
const refOf = (o: KubeObject): ObjectRef => ({
  apiVersion: o.apiVersion,
  kind: o.kind,
  namespace: o.metadata.namespace!,
  name: o.metadata.name,
})
const writtenRefs = (kube: MemoryKube) => kube.writes().map((w) => `${w.verb} ${w.kind}/${w.name}`)

/** The error a promise rejects with. */
async function failure(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise
  } catch (error) {
    return error as Error
  }
  throw new Error('expected a failure')
}

/** What istiod and the Deployment controller do for a waypoint Gateway: Programmed, an address, a ready proxy. */
function programWaypoint(kube: MemoryKube): void {
  kube.setStatus(waypointRef, {
    addresses: [{type: 'IPAddress', value: '10.96.0.10'}],
    conditions: [{type: 'Programmed', status: 'True', reason: 'Programmed'}],
  })
  if (!kube.peek({apiVersion: 'apps/v1', kind: 'Deployment', namespace: NS, name: 'waypoint'})) {
    kube.seed({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: {name: 'waypoint', namespace: NS},
      spec: {replicas: 1},
      status: {observedGeneration: 1, availableReplicas: 1},
    })
  }
}

describe('applyStep: one active plan per namespace', () => {
  it('the first write records the plan as the namespace owner, guarded by the resourceVersion it read', async () => {
    const {kube, ctx, step} = await rig({}, {unclaimed: true})
    await applyStep(ctx, step('create-policies'))
    const [claim, ...rest] = kube.writes()
    expect(`${claim?.verb} ${claim?.kind}/${claim?.name}`).toBe(`patch Namespace/${NS}`)
    expect(rest.every((w) => w.kind !== 'Namespace')).toBe(true)
    const owner = JSON.parse(
      kube.peek({apiVersion: 'v1', kind: 'Namespace', name: NS})!.metadata.annotations![OWNER_ANNOTATION]!,
    ) as {digest: string}
    expect(owner.digest).toBe(specDigest(ctx.state.plan))
  })

  it('another plan owning the namespace: refused with exit 5 before any write', async () => {
    const {kube, ctx, step} = await rig({}, {unclaimed: true})
    kube.edit({apiVersion: 'v1', kind: 'Namespace', name: NS}, (o) => {
      o.metadata.annotations = {
        [OWNER_ANNOTATION]: JSON.stringify({
          plan: 'plans/other.yaml',
          digest: 'sha256:other',
          by: 'someone',
          since: '2026-12-01T00:00:00.000Z',
        }),
      }
    })
    const error = await failure(applyStep(ctx, step('create-policies')))
    expect(error).toBeInstanceOf(UserError)
    expect((error as UserError).exitCode).toBe(5)
    expect(error.message).toContain('plans/other.yaml')
    expect(kube.writes()).toEqual([])
  })
})

describe('applyStep: writes', () => {
  it("create-policies creates each object of the step, marked as this plan's, and records Applied with what was there before", async () => {
    const {kube, state, ctx, step} = await rig()
    const s = step('create-policies')
    const objects = applied(s)
    expect(objects.length).toBeGreaterThan(0)
    const result = await applyStep(ctx, s)
    expect(result.skippedWrites).toBe(false)
    expect(writtenRefs(kube)).toEqual(objects.map((o) => `apply ${o.kind}/${o.metadata.name}`))
    for (const o of objects) {
      const live = kube.peek(refOf(o))!
      expect(live.metadata.labels?.[MANAGED_BY_LABEL]).toBe('mesh-migrate')
      expect(live.metadata.annotations?.[PLAN_ANNOTATION]).toBe(NS)
      expect(live.spec).toEqual(o.spec)
    }
    // The record is in the plan file itself, not only in memory.
    const reloaded = await PlanState.load(state.file)
    expect(reloaded.phase(s)).toBe('Applied')
    const before = reloaded.status(s.id)?.observed?.before as Record<string, unknown>
    expect(Object.keys(before).sort()).toEqual(objects.map((o) => refKey(refOf(o))).sort())
    expect(Object.values(before).every((b) => (b as {existed: boolean}).existed === false)).toBe(true)
  })

  it('re-running an applied step writes nothing: every effect is already present', async () => {
    const {kube, ctx, step} = await rig()
    await applyStep(ctx, step('create-policies'))
    const writes = kube.writes().length
    const again = await applyStep(ctx, step('create-policies'))
    expect(again.skippedWrites).toBe(true)
    expect(kube.writes().length).toBe(writes)
  })

  it('dry run: the server sees every write with dryRun, nothing is stored and the plan file keeps its bytes', async () => {
    const {kube, state, ctx, step} = await rig({dryRun: true})
    const s = step('create-policies')
    const text = await readFile(state.file, 'utf8')
    const result = await applyStep(ctx, s)
    expect(result.details.join(' ')).toContain('dryRun=All')
    const sent = kube.requests.filter((r) => r.verb === 'apply')
    expect(sent.length).toBe(applied(s).length)
    expect(sent.every((r) => r.dryRun)).toBe(true)
    expect(kube.writes()).toEqual([])
    expect(applied(s).every((o) => kube.peek(refOf(o)) === undefined)).toBe(true)
    expect(await readFile(state.file, 'utf8')).toBe(text)
  })

  it('bind-waypoint labels the namespace with a patch guarded by the resourceVersion it read, and records the labels it replaced', async () => {
    const {kube, state, ctx, step} = await rig()
    await applyStep(ctx, step('create-waypoint'))
    programWaypoint(kube)
    // The waypoint controller binds the namespace's Services once the namespace names the waypoint.
    kube.onWrite((obj) => {
      if (obj.kind !== 'Namespace' || obj.metadata.labels?.['istio.io/use-waypoint'] !== 'waypoint') return
      for (const svc of kube.objects('Service')) {
        kube.setStatus(refOf(svc), {conditions: [{type: 'istio.io/WaypointBound', status: 'True', reason: 'Accepted'}]})
      }
    })
    const readVersion = kube.peek(nsRef)!.metadata.resourceVersion
    const s = step('bind-waypoint')
    await applyStep(ctx, s)
    const patch = kube.requests.find((r) => r.verb === 'patch' && r.kind === 'Namespace')!
    expect(patch.body).toEqual({
      metadata: {labels: {'istio.io/use-waypoint': 'waypoint'}, resourceVersion: readVersion},
    })
    expect(kube.peek(nsRef)?.metadata.labels).toMatchObject({
      'istio-injection': 'enabled',
      'istio.io/use-waypoint': 'waypoint',
    })
    expect(state.phase(s)).toBe('Applied')
    expect(state.status(s.id)?.observed?.before).toEqual({[refKey(nsRef)]: {labels: {'istio.io/use-waypoint': null}}})
  })
})

describe('applyStep: refusals (exit 3, nothing written)', () => {
  it('a policy edited since the plan was made: StalePlanError naming it, before any write, and no record', async () => {
    const {kube, state, ctx, step} = await rig()
    kube.edit(policy('ratings-get-only'), (o) => {
      o.spec.rules = [{to: [{operation: {methods: ['GET', 'HEAD']}}]}]
    })
    const error = await failure(applyStep(ctx, step('create-policies')))
    expect(error).toBeInstanceOf(StalePlanError)
    expect((error as StalePlanError).exitCode).toBe(3)
    expect(error.message).toContain('AuthorizationPolicy bookinfo/ratings-get-only changed since the plan was made')
    expect(kube.writes()).toEqual([])
    expect(state.phase(step('create-policies'))).toBe('Pending')
  })

  it('an object of the same name that this plan did not create is never overwritten', async () => {
    const {kube, ctx, step} = await rig()
    const [first] = applied(step('create-policies'))
    const theirs: KubeObject = {
      apiVersion: first!.apiVersion,
      kind: first!.kind,
      metadata: {name: first!.metadata.name, namespace: NS},
      spec: {action: 'DENY', rules: [{}]},
    }
    kube.seed(theirs)
    const error = await failure(applyStep(ctx, step('create-policies')))
    expect((error as UserError).exitCode).toBe(3)
    expect(error.message).toContain(
      `${first!.kind} ${NS}/${first!.metadata.name} exists and was not created by this plan`,
    )
    expect(kube.writes()).toEqual([])
    expect(kube.peek(refOf(first!))?.spec).toEqual(theirs.spec)
  })

  it('performOperation refuses to apply over a foreign object even without preconditions, and sends no apply', async () => {
    const {kube, step} = await rig()
    const op = step('create-waypoint').operations[0]!
    kube.seed({
      apiVersion: waypointRef.apiVersion,
      kind: 'Gateway',
      metadata: {name: 'waypoint', namespace: NS},
      spec: {gatewayClassName: 'other'},
    })
    const error = await failure(performOperation(kube, op, {planName: NS, dryRun: false, restartStamp: 'x'}))
    expect(error).toBeInstanceOf(StalePlanError)
    expect(kube.requests.filter((r) => r.verb === 'apply')).toEqual([])
  })

  it('a namespace label changed since the plan was made: stale, naming the label and both values', async () => {
    const {kube, ctx, step} = await rig()
    kube.edit(nsRef, (o) => {
      o.metadata.labels = {...o.metadata.labels, 'istio.io/dataplane-mode': 'none'}
    })
    const error = await failure(applyStep(ctx, step('enable-ambient')))
    expect((error as UserError).exitCode).toBe(3)
    expect(error.message).toContain('namespace label istio.io/dataplane-mode is "none", the plan expected it absent')
    expect(kube.writes()).toEqual([])
  })
})

describe('applyStep: conflicts and failures', () => {
  it('a 409 for a label patch that went through (the answer was lost, the resend conflicted): re-read, counted done', async () => {
    const {kube, state, ctx, step} = await rig()
    kube.failNext({verb: 'patch', kind: 'Namespace', status: 409, reason: 'Conflict', afterWrite: true})
    const s = step('remove-sidecar-injection')
    await applyStep(ctx, s)
    expect(state.phase(s)).toBe('Applied')
    expect(kube.peek(nsRef)?.metadata.labels?.['istio-injection']).toBeUndefined()
    expect(kube.requests.filter((r) => r.verb === 'patch')).toHaveLength(1)
  })

  it('a 409 from an unrelated relabel between read and patch: re-read and retried, their change kept (issue 10 point 17)', async () => {
    const {kube, state, ctx, step} = await rig()
    const stop = kube.onRequest((req) => {
      if (req.verb !== 'patch' || req.kind !== 'Namespace') return
      kube.edit(nsRef, (o) => {
        o.metadata.labels = {...o.metadata.labels, team: 'payments'}
      })
      stop()
    })
    const s = step('remove-sidecar-injection')
    await applyStep(ctx, s)
    expect(state.phase(s)).toBe('Applied')
    expect(state.status(s.id)?.attempts).toBe(1)
    // Two patches: the one refused with 409, and the one sent after reading the namespace again.
    expect(kube.requests.filter((r) => r.verb === 'patch' && r.kind === 'Namespace')).toHaveLength(2)
    expect(kube.peek(nsRef)?.metadata.labels).toEqual({team: 'payments'})
  })

  it('a 409 because the label the step changes was changed meanwhile: Failed, exit 1, their value kept; --retry reports it stale', async () => {
    const {kube, state, ctx, step} = await rig()
    const stop = kube.onRequest((req) => {
      if (req.verb !== 'patch' || req.kind !== 'Namespace') return
      kube.edit(nsRef, (o) => {
        o.metadata.labels = {...o.metadata.labels, 'istio-injection': 'disabled'}
      })
      stop()
    })
    const s = step('remove-sidecar-injection')
    const error = await failure(applyStep(ctx, s))
    expect(error).toBeInstanceOf(UserError)
    expect((error as UserError).exitCode).toBe(1)
    expect(error.message).toContain('409 Conflict')
    expect(state.phase(s)).toBe('Failed')
    expect(kube.peek(nsRef)?.metadata.labels).toMatchObject({'istio-injection': 'disabled'})
  })

  it('a write the server forbids (403): Failed, exit 1, with the permission to grant and the retry path', async () => {
    const {kube, state, ctx, step} = await rig()
    kube.forbid('patch', 'security.istio.io', 'authorizationpolicies', NS)
    const s = step('create-policies')
    const error = (await failure(applyStep(ctx, s))) as UserError
    expect(error.exitCode).toBe(1)
    expect(error.message).toContain('403 Forbidden')
    expect(error.suggestion).toContain('Grant "patch" on authorizationpolicies.security.istio.io in namespace bookinfo')
    expect(error.suggestion).toContain('--retry')
    expect(state.phase(s)).toBe('Failed')
    expect(kube.writes()).toEqual([])
  })

  it('interrupted between two writes: recorded Interrupted; the retry writes the rest and keeps the first observation', async () => {
    const controller = new AbortController()
    const {kube, state, ctx, step} = await rig({signal: controller.signal})
    const s = step('create-policies')
    const objects = applied(s)
    let applies = 0
    const stop = kube.onRequest((req) => {
      if (req.verb === 'apply' && ++applies === 2) controller.abort()
    })
    await expect(applyStep(ctx, s)).rejects.toBeInstanceOf(InterruptedError)
    stop()
    expect(state.phase(s)).toBe('Interrupted')
    expect(objects.filter((o) => kube.peek(refOf(o))).length).toBe(2)

    await applyStep({...ctx, signal: new AbortController().signal}, s)
    expect(state.phase(s)).toBe('Applied')
    expect(objects.every((o) => kube.peek(refOf(o)))).toBe(true)
    // The objects written before the interruption were absent before the step: the retry must not say they existed.
    const before = state.status(s.id)?.observed?.before as Record<string, {existed: boolean}>
    expect(objects.map((o) => before[refKey(refOf(o))]?.existed)).toEqual(objects.map(() => false))
  })
})

describe('applyStep: verification polling', () => {
  it('a waypoint that never becomes ready: the step fails after the timeout, saying what was seen', async () => {
    const {kube, state, ctx, step} = await rig()
    await applyStep(ctx, step('create-waypoint'))
    const s = step('wait-waypoint')
    const error = await failure(applyStep(ctx, s))
    expect(error).toBeInstanceOf(StepFailedError)
    expect(error.message).toContain('verification waypoint-ready did not pass')
    expect(error.message).toContain('Gateway bookinfo/waypoint is not Programmed yet')
    expect(state.phase(s)).toBe('Failed')
    expect(kube.writes().filter((w) => w.kind !== 'Gateway')).toEqual([])
  })

  it('polls until the waypoint is ready (fake clock): progress reports what it waits for, then Applied', async () => {
    vi.useFakeTimers({toFake: ['setTimeout', 'clearTimeout', 'Date']})
    const progress: string[] = []
    const {kube, state, ctx, step} = await rig({timeoutMs: 60_000, onProgress: (m) => progress.push(m)})
    await applyStep(ctx, step('create-waypoint'))
    const started = Date.now()
    // istiod programs the waypoint 5 s (of the fake clock) after the wait began.
    kube.onRequest((req) => {
      if (
        req.verb === 'get' &&
        req.kind === 'Gateway' &&
        Date.now() - started >= 5_000 &&
        !kube.peek(waypointRef)?.status
      )
        programWaypoint(kube)
    })
    const s = step('wait-waypoint')
    let done = false
    const running = applyStep(ctx, s).finally(() => (done = true))
    // Advance the clock only while the executor sleeps between polls; let real I/O (the plan file) run otherwise.
    while (!done) {
      if (vi.getTimerCount() > 0) await vi.advanceTimersToNextTimerAsync()
      else await new Promise((r) => setImmediate(r))
    }
    await running
    expect(state.phase(s)).toBe('Applied')
    expect(Date.now() - started).toBeGreaterThanOrEqual(5_000)
    expect(Date.now() - started).toBeLessThan(7_000)
    expect(progress.length).toBeGreaterThanOrEqual(5)
    // Each progress line carries the time waited so far (issue 13 §10), on the fake clock.
    expect(progress[0]).toBe('waiting: Gateway bookinfo/waypoint is not Programmed yet (0s)')
    expect(Number(/\((\d+)s\)$/.exec(progress.at(-1)!)?.[1])).toBeGreaterThanOrEqual(4)
    expect(state.status(s.id)?.message).toContain('waypoint-ready: Programmed, address 10.96.0.10')
  })

  it('a 403 during the wait fails the step at once, naming verb and resource, not after its timeout (issue 19 §8)', async () => {
    vi.useFakeTimers({toFake: ['setTimeout', 'clearTimeout', 'Date']})
    const {kube, state, ctx, step} = await rig({timeoutMs: 300_000})
    await applyStep(ctx, step('create-waypoint'))
    const started = Date.now()
    let gets = 0
    // Someone removes this identity's read of Gateways while the wait polls (its third read is refused).
    kube.onRequest((req) => {
      if (req.verb === 'get' && req.kind === 'Gateway' && ++gets === 3)
        kube.forbid('get', 'gateway.networking.k8s.io', 'gateways', NS)
    })
    const s = step('wait-waypoint')
    let done = false
    const running = applyStep(ctx, s)
      .catch((e: unknown) => e as Error)
      .finally(() => (done = true))
    while (!done) {
      if (vi.getTimerCount() > 0) await vi.advanceTimersToNextTimerAsync()
      else await new Promise((r) => setImmediate(r))
    }
    const error = (await running) as UserError
    expect(error).toBeInstanceOf(StepFailedError)
    expect(error.exitCode).toBe(1)
    expect(error.message).toContain(
      'step wait-waypoint failed: forbidden: cannot get gateways.gateway.networking.k8s.io in namespace bookinfo, so waypoint-ready cannot be checked',
    )
    expect(error.suggestion).toContain('Grant "get" on gateways.gateway.networking.k8s.io in namespace bookinfo')
    expect(error.suggestion).toContain(`Then \`mesh-migrate apply ${state.file} --retry\``)
    expect(gets).toBe(3)
    expect(Date.now() - started).toBeLessThan(5_000)
    expect(state.phase(s)).toBe('Failed')
  })
})

describe('applyStep: a copy of a kept policy is judged against the live original (issue 20 §5)', () => {
  it('a copy widened together with the recorded fingerprint of its rules: exit 4 before any write, naming both', async () => {
    const {kube, state, ctx, step} = await rig()
    await applyStep(ctx, step('create-waypoint'))
    programWaypoint(kube)
    await applyStep(ctx, step('wait-waypoint'))
    const s = step('create-policies')
    const copy = applied(s).find((o) => o.metadata.name === 'reviews-from-productpage-waypoint')!
    // An allow-all copy, and the fingerprint recomputed to match it: validate cannot tell; the live original can.
    copy.spec = {...copy.spec, rules: [{}]}
    const {targetRefs: _t, ...rules} = copy.spec as Record<string, unknown>
    state.plan.spec.observed.keptRules!['reviews-from-productpage'] = digestOf(rules)
    const before = kube.writes().length
    const error = await failure(applyStep(ctx, s))
    expect((error as UserError).exitCode).toBe(4)
    expect(error.message).toContain(
      'step create-policies would create a policy that is not what the planner derives from its original as the cluster has it (a copy is the original retargeted, nothing wider): AuthorizationPolicy "reviews-from-productpage-waypoint" is not reviews-from-productpage retargeted: spec.rules is [{}]',
    )
    expect(error.message).toContain('(compared with the live AuthorizationPolicy bookinfo/reviews-from-productpage)')
    expect(kube.writes().length).toBe(before)
    expect(state.phase(s)).toBe('Pending')
  })

  it('the copies as planned pass the check against the live originals', async () => {
    const {kube, state, ctx, step} = await rig()
    await applyStep(ctx, step('create-waypoint'))
    programWaypoint(kube)
    await applyStep(ctx, step('wait-waypoint'))
    await applyStep(ctx, step('create-policies'))
    expect(state.phase(step('create-policies'))).toBe('Applied')
    expect(kube.peek(policy('reviews-from-productpage-waypoint'))).toBeDefined()
  })
})

describe('applyStep: a wait that drift keeps from passing (issue 19 §1)', () => {
  it('bind-waypoint waits on "Services bound" while someone removes istio.io/use-waypoint: exit 3 at once, naming the label, old → new', async () => {
    const {kube, state, ctx, step} = await rig({timeoutMs: 300_000})
    await applyStep(ctx, step('create-waypoint'))
    programWaypoint(kube)
    // Someone unbinds the namespace right after the step labels it: the Services can never be bound.
    kube.onWrite((obj) => {
      if (obj.kind === 'Namespace' && obj.metadata.labels?.['istio.io/use-waypoint'] === 'waypoint')
        kube.edit(nsRef, (o) => delete o.metadata.labels!['istio.io/use-waypoint'])
    })
    const s = step('bind-waypoint')
    const started = Date.now()
    const error = await failure(applyStep(ctx, s))
    // Not the 300 s timeout: the first unmet poll looks for drift.
    expect(Date.now() - started).toBeLessThan(5_000)
    expect(error).toBeInstanceOf(StalePlanError)
    expect((error as UserError).exitCode).toBe(3)
    expect(error.message).toContain(`step ${s.id} cannot pass its verification (it is waiting: `)
    expect(error.message).toContain(
      `step ${s.id}: Namespace ${NS}: label istio.io/use-waypoint changed since the step set it: "waypoint" → absent`,
    )
    expect((error as UserError).suggestion).toContain('--retry')
    expect(state.phase(s)).toBe('Failed')
  })

  it('a wait not met without drift keeps waiting until its timeout (the drift check does not end it)', async () => {
    const {kube, ctx, step} = await rig({timeoutMs: 1_500})
    await applyStep(ctx, step('create-waypoint'))
    programWaypoint(kube)
    const error = await failure(applyStep(ctx, step('bind-waypoint')))
    expect(error).toBeInstanceOf(StepFailedError)
    expect(error.message).toContain('verification waypoint-bound did not pass within 2s')
  })
})

describe('undoStep', () => {
  it("deletes exactly what the step created, each with its uid as precondition; leaves an object no longer marked as this plan's", async () => {
    const {kube, state, ctx, step} = await rig()
    const s = step('create-policies')
    await applyStep(ctx, s)
    const [kept, ...rest] = applied(s)
    kube.edit(refOf(kept!), (o) => {
      delete o.metadata.annotations![PLAN_ANNOTATION]
    })
    const uids = Object.fromEntries(rest.map((o) => [o.metadata.name, kube.peek(refOf(o))!.metadata.uid]))
    const warnings: string[] = []
    await undoStep(ctx, s, (m) => warnings.push(m))
    const deletes = kube.requests.filter((r) => r.verb === 'delete')
    expect(deletes.map((d) => d.name).sort()).toEqual(rest.map((o) => o.metadata.name).sort())
    expect(deletes.every((d) => d.preconditions?.uid === uids[d.name!])).toBe(true)
    expect(kube.peek(refOf(kept!))).toBeDefined()
    expect(warnings).toEqual([
      `${kept!.kind} ${NS}/${kept!.metadata.name} is not marked as created by this plan any more: left in place`,
    ])
    expect(state.phase(s)).toBe('RolledBack')
    // What the manifests had is untouched.
    expect(
      manifests.every(
        (m) =>
          kube.peek(refOf({...m, metadata: {...m.metadata, namespace: m.metadata.namespace ?? NS}})) ||
          m.kind === 'Namespace',
      ),
    ).toBe(true)
  })

  it('restores the namespace labels the step replaced; a label someone changed since is left, with a warning', async () => {
    const {kube, state, ctx, step} = await rig()
    const s = step('remove-sidecar-injection')
    await applyStep(ctx, s)
    expect(kube.peek(nsRef)?.metadata.labels?.['istio-injection']).toBeUndefined()
    await undoStep(ctx, s, () => undefined)
    expect(kube.peek(nsRef)?.metadata.labels?.['istio-injection']).toBe('enabled')
    expect(state.phase(s)).toBe('RolledBack')

    const e = step('enable-ambient')
    await applyStep(ctx, e)
    kube.edit(nsRef, (o) => {
      o.metadata.labels = {...o.metadata.labels, 'istio.io/dataplane-mode': 'none'}
    })
    const warnings: string[] = []
    const details = await undoStep(ctx, e, (m) => warnings.push(m))
    expect(kube.peek(nsRef)?.metadata.labels?.['istio.io/dataplane-mode']).toBe('none')
    expect(warnings.join('\n')).toContain(
      'label istio.io/dataplane-mode is "none", but the plan wrote "ambient"; someone changed it since, so it is left as it is',
    )
    expect(details.join(' ')).toContain('left as changed since')
  })

  it('an undo interrupted before its write is recorded Interrupted, and nothing is written', async () => {
    const controller = new AbortController()
    const {kube, state, ctx, step} = await rig({signal: controller.signal})
    const s = step('remove-sidecar-injection')
    await applyStep(ctx, s)
    const writes = kube.writes().length
    controller.abort()
    await expect(undoStep(ctx, s, () => undefined)).rejects.toBeInstanceOf(InterruptedError)
    expect(state.phase(s)).toBe('Interrupted')
    expect(kube.writes().length).toBe(writes)
  })
})

describe('checkRollback: E1, the revision to restore must still inject', () => {
  /** A plan of a revision-labelled namespace (istio.io/rev=canary instead of istio-injection). */
  async function revisionRig(): Promise<Rig> {
    const objects = manifests.map((o) =>
      o.kind === 'Namespace' ? {...o, metadata: {...o.metadata, labels: {'istio.io/rev': 'canary'}}} : o,
    )
    const {plan} = offlinePlan(NS, objects, {}, 'examples/bookinfo')
    const r = await rig()
    await writeFile(r.state.file, renderPlanFile(plan))
    const state = await PlanState.load(r.state.file)
    const kube = new MemoryKube().seed(...objects)
    return {
      ...r,
      kube,
      state,
      ctx: {...r.ctx, client: kube, state},
      step: (action) => state.plan.spec.steps.find((s) => s.action === action)!,
    }
  }
  const webhook = (labels: Record<string, string>): KubeObject => ({
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'MutatingWebhookConfiguration',
    metadata: {name: `istio-sidecar-injector-${Object.values(labels).join('-')}`, labels},
    webhooks: [{name: 'rev.namespace.sidecar-injector.istio.io'}],
  })

  it('refuses (exit 3) before any write when no webhook injects for the revision; passes when one does, or a tag of that name', async () => {
    const {kube, ctx, step} = await revisionRig()
    const s = step('remove-sidecar-injection')
    expect(s.undo.operations).toContainEqual(expect.objectContaining({op: 'label', labels: {'istio.io/rev': 'canary'}}))
    await applyStep(ctx, s)
    const writes = kube.writes().length
    const error = await failure(checkRollback(ctx, [s], () => undefined))
    expect(error).toBeInstanceOf(StalePlanError)
    expect(error.message).toContain('revision "canary" no longer has an injection webhook')
    expect(kube.writes().length).toBe(writes)

    kube.seed(webhook({'istio.io/tag': 'canary'}))
    await expect(checkRollback(ctx, [s], () => undefined)).resolves.toBeUndefined()
  })

  it('cannot list webhooks (403): warns and lets the rollback go on', async () => {
    const {kube, ctx, step} = await revisionRig()
    const s = step('remove-sidecar-injection')
    await applyStep(ctx, s)
    kube.forbid('list', 'admissionregistration.k8s.io', 'mutatingwebhookconfigurations')
    const warnings: string[] = []
    await checkRollback(ctx, [s], (m) => warnings.push(m))
    expect(warnings).toEqual([
      'cannot check that revision canary still exists (no permission to list MutatingWebhookConfigurations)',
    ])
  })
})

describe('performOperation and stalePreconditions', () => {
  const deploymentRef: ObjectRef = {apiVersion: 'apps/v1', kind: 'Deployment', namespace: NS, name: 'reviews-v1'}

  it('restart stamps the pod template once: the same stamp again is not a write', async () => {
    const {kube} = await rig()
    const op: Operation = {op: 'restart', ref: deploymentRef}
    const generation = kube.peek(deploymentRef)!.metadata.generation!
    expect(
      await performOperation(kube, op, {planName: NS, dryRun: false, restartStamp: '2025-01-01T00:00:00Z'}),
    ).toEqual({wrote: true})
    const live = kube.peek(deploymentRef)!
    expect(live.spec.template.metadata.annotations['kubectl.kubernetes.io/restartedAt']).toBe('2025-01-01T00:00:00Z')
    expect(live.metadata.generation).toBe(generation + 1)
    expect(
      await performOperation(kube, op, {planName: NS, dryRun: false, restartStamp: '2025-01-01T00:00:00Z'}),
    ).toEqual({wrote: false})
    expect(kube.writes()).toHaveLength(1)
  })

  it('delete is guarded by the uid it read: an object replaced in between is not deleted (409)', async () => {
    const {kube} = await rig()
    const ref = policy('ratings-get-only')
    const original = kube.peek(ref)!
    kube.onRequest((req) => {
      if (req.verb !== 'delete') return
      kube.remove(ref)
      kube.seed({...original, metadata: {...original.metadata, uid: 'replacement'}})
    })
    const error = await failure(
      performOperation(kube, {op: 'delete', ref, object: original}, {planName: NS, dryRun: false, restartStamp: 'x'}),
    )
    expect(error.message).toContain('409 Conflict')
    expect(kube.peek(ref)?.metadata.uid).toBe('replacement')
  })

  it('stalePreconditions: the step\'s own label value and its own deletions mean "already ran", not "stale"', async () => {
    const {kube} = await rig()
    kube.edit(nsRef, (o) => {
      delete o.metadata.labels!['istio-injection']
    })
    kube.remove(policy('ratings-get-only'))
    const ctx = {
      namespace: NS,
      planName: NS,
      stored: new Map(),
      fromManifests: true,
      targetLabels: {'istio-injection': null},
      deletes: new Set([refKey(policy('ratings-get-only'))]),
    }
    const checks = [
      {check: 'namespace-labels' as const, labels: {'istio-injection': 'enabled'}},
      {check: 'object-unchanged' as const, ref: policy('ratings-get-only'), fingerprint: 'sha256:whatever'},
    ]
    expect(await stalePreconditions(kube, checks, ctx)).toEqual([])
    expect(await stalePreconditions(kube, checks, {...ctx, targetLabels: {}, deletes: new Set()})).toEqual([
      'namespace label istio-injection is absent, the plan expected "enabled"',
      'AuthorizationPolicy bookinfo/ratings-get-only no longer exists',
    ])
    kube.remove(nsRef)
    expect(await stalePreconditions(kube, [checks[0]!], ctx)).toEqual(['namespace bookinfo does not exist'])
  })
})

describe("releaseIfRolledBack: rollback's final write, the owner annotation (issue 19 §8)", () => {
  it('a 409 caused by its own earlier send (applied, the answer lost, resent): done, not a failure', async () => {
    const {kube, state} = await rig()
    kube.failNext({verb: 'patch', kind: 'Namespace', status: 409, reason: 'Conflict', afterWrite: true})
    await expect(releaseIfRolledBack(kube, state)).resolves.toBe(true)
    expect(kube.peek(nsRef)?.metadata.annotations?.[OWNER_ANNOTATION]).toBeUndefined()
  })

  it('a 409 from an unrelated write to the Namespace: read again and re-applied while the plan still owns it', async () => {
    const {kube, state} = await rig()
    kube.failNext({verb: 'patch', kind: 'Namespace', status: 409, reason: 'Conflict'})
    await expect(releaseIfRolledBack(kube, state)).resolves.toBe(true)
    expect(kube.peek(nsRef)?.metadata.annotations?.[OWNER_ANNOTATION]).toBeUndefined()
    expect(kube.writes().filter((w) => w.kind === 'Namespace')).toHaveLength(1)
  })

  it('a 409 because another plan claimed the namespace meanwhile: its claim is left alone and the conflict reported', async () => {
    const {kube, state} = await rig()
    const other = {plan: 'plans/other.yaml', digest: 'sha256:other', by: 'someone', since: '2026-12-04T00:00:00.000Z'}
    const stop = kube.onRequest((req) => {
      if (req.verb !== 'patch' || req.kind !== 'Namespace') return
      stop()
      kube.edit(nsRef, (o) => {
        o.metadata.annotations = {...o.metadata.annotations, [OWNER_ANNOTATION]: JSON.stringify(other)}
      })
    })
    const error = (await failure(releaseIfRolledBack(kube, state))) as UserError
    expect(error.message).toContain('409')
    expect(JSON.parse(kube.peek(nsRef)?.metadata.annotations?.[OWNER_ANNOTATION] ?? '{}')).toMatchObject({
      plan: 'plans/other.yaml',
    })
  })
})

describe('checkStep: a readiness blip of the waypoint is not "the cluster changed" (issue 19 §8)', () => {
  /** Run `promise` while advancing the fake clock whenever only timers are left. */
  async function driven<T>(promise: Promise<T>): Promise<T> {
    let done = false
    const running = promise.finally(() => (done = true))
    while (!done) {
      if (vi.getTimerCount() > 0) await vi.advanceTimersToNextTimerAsync()
      else await new Promise((r) => setImmediate(r))
    }
    return running
  }

  it('bind-waypoint: a waypoint that is not ready for 5 s (its proxy restarting) is waited for, then the step may run', async () => {
    vi.useFakeTimers({toFake: ['setTimeout', 'clearTimeout', 'Date']})
    const progress: string[] = []
    const {kube, ctx, step} = await rig({timeoutMs: 300_000, onProgress: (m) => progress.push(m)})
    await applyStep(ctx, step('create-waypoint'))
    const started = Date.now()
    kube.onRequest((req) => {
      if (req.verb === 'get' && req.kind === 'Gateway' && Date.now() - started >= 5_000) programWaypoint(kube)
    })
    const {stale} = await driven(checkStep(ctx, step('bind-waypoint')))
    expect(stale).toEqual([])
    expect(Date.now() - started).toBeGreaterThanOrEqual(5_000)
    expect(progress[0]).toContain('waiting for the waypoint: Gateway bookinfo/waypoint is not Programmed')
  })

  it('one that stays not ready is a problem after 30 s (not the whole --timeout), saying it waited', async () => {
    vi.useFakeTimers({toFake: ['setTimeout', 'clearTimeout', 'Date']})
    const {ctx, step} = await rig({timeoutMs: 300_000})
    await applyStep(ctx, step('create-waypoint'))
    const started = Date.now()
    const {stale} = await driven(checkStep(ctx, step('bind-waypoint')))
    expect(stale).toEqual([
      expect.stringContaining('the waypoint is not ready (waited 30s): Gateway bookinfo/waypoint'),
    ])
    expect(Date.now() - started).toBeLessThan(32_000)
  })

  it('a waypoint that does not exist is a change at once (no wait)', async () => {
    vi.useFakeTimers({toFake: ['setTimeout', 'clearTimeout', 'Date']})
    const {ctx, step} = await rig({timeoutMs: 300_000})
    const started = Date.now()
    const {stale} = await driven(checkStep(ctx, step('bind-waypoint')))
    expect(stale).toEqual([expect.stringContaining('does not exist')])
    expect(Date.now() - started).toBeLessThan(1_000)
  })
})
