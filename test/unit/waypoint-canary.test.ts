// Istio 1.31's weighted waypoint canary (issue 21 §10): `plan NS --waypoint-canary 10,50` shifts the Services of a
// namespace bound to a primary waypoint the plan replaces to the plan's waypoint, one canary-waypoint step per weight,
// before bind-waypoint promotes it. Upstream (istio/istio at 86c9f01): releasenotes/notes/60801-weighted-waypoint-
// canary.yaml (label istio.io/use-waypoint-canary, optional istio.io/use-waypoint-canary-namespace, ANNOTATION
// istio.io/use-waypoint-canary-weight 0-100, missing = 0; Alpha since 1.31; Service, ServiceEntry, Namespace);
// pilot/pkg/serviceregistry/ambient/waypoints.go buildWeightedWaypoints (nothing without a primary); istio.io ambient
// waypoint page "Shift traffic between waypoints" (a namespace canary applies only to Services inheriting their primary
// from the namespace; promotion: use-waypoint = the canary, the canary label and annotation removed; invalid canaries
// fall back to the primary: CanaryInvalidWeight, CanarySameAsPrimary).
import {mkdtemp, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import {stringify} from 'yaml'
import {beforeAll, describe, expect, it} from 'vitest'

import {applyStep, undoStep} from '../../src/executor/engine.js'
import {OWNER_ANNOTATION} from '../../src/executor/ownership.js'
import {PlanState} from '../../src/executor/plan-state.js'
import type {KubeObject, ObjectRef} from '../../src/planner/model.js'
import type {MigrationPlan, PlanStep} from '../../src/planner/plan-types.js'
import {checkPlanText, renderPlanFile, specDigest} from '../../src/plan/planfile.js'
import {rollbackSequence} from '../../src/plan/rollback.js'
import {loadManifestFiles} from '../../src/sources/manifests.js'
import {canaryWeightsProblem, waypointCanaryRefusal} from '../../src/steps/canary-waypoint.js'
import {MemoryKube} from '../support/memory-kube.js'
import {offlinePlan} from '../support/offline-plan.js'
import {testExecution} from '../support/execution.js'
import {REPO_ROOT} from '../support/shared.js'

const NS = 'bookinfo'
const CANARY = 'istio.io/use-waypoint-canary'
const WEIGHT = 'istio.io/use-waypoint-canary-weight'
const USE = 'istio.io/use-waypoint'
const nsRef: ObjectRef = {apiVersion: 'v1', kind: 'Namespace', name: NS}
const waypointRef: ObjectRef = {
  apiVersion: 'gateway.networking.k8s.io/v1',
  kind: 'Gateway',
  namespace: NS,
  name: 'waypoint',
}

let manifests: KubeObject[]
let plan: MigrationPlan

/** bookinfo bound today to an older waypoint of its own namespace: the primary the plan replaces. */
function boundToOldWaypoint(objects: KubeObject[]): KubeObject[] {
  return objects.map((o) =>
    o.kind === 'Namespace'
      ? {...o, metadata: {...o.metadata, labels: {...o.metadata.labels, [USE]: 'waypoint-old'}}}
      : o,
  )
}

beforeAll(async () => {
  const dir = path.join(REPO_ROOT, 'examples/bookinfo')
  manifests = boundToOldWaypoint((await loadManifestFiles([dir], {defaultNamespace: NS})).objects)
  plan = offlinePlan(NS, manifests, {waypointCanary: [10, 50]}, 'examples/bookinfo', '1.31').plan
})

const noWarning = (m: string) => {
  throw new Error(`unexpected warning: ${m}`)
}
const stepsOf = (p: MigrationPlan, action: string) => p.spec.steps.filter((s) => s.action === action)

describe('planning --waypoint-canary', () => {
  it('a canary-waypoint step per weight, between create-policies and bind-waypoint', () => {
    const ids = plan.spec.steps.map((s) => s.id)
    expect(ids.indexOf('canary-waypoint-10')).toBe(ids.indexOf('create-policies') + 1)
    expect(ids.indexOf('canary-waypoint-50')).toBe(ids.indexOf('canary-waypoint-10') + 1)
    expect(ids.indexOf('bind-waypoint')).toBe(ids.indexOf('canary-waypoint-50') + 1)
  })

  it('the first step sets the weight then the canary label; each is verified and undone exactly', () => {
    const [first, second] = stepsOf(plan, 'canary-waypoint') as [PlanStep, PlanStep]
    expect(first.operations).toEqual([
      {op: 'annotate', ref: nsRef, annotations: {[WEIGHT]: '10'}},
      {op: 'label', ref: nsRef, labels: {[CANARY]: 'waypoint'}},
    ])
    expect(first.undo.operations).toEqual([
      {op: 'label', ref: nsRef, labels: {[CANARY]: null}},
      {op: 'annotate', ref: nsRef, annotations: {[WEIGHT]: null}},
    ])
    expect(second.operations).toEqual([{op: 'annotate', ref: nsRef, annotations: {[WEIGHT]: '50'}}])
    expect(second.undo.operations).toEqual([{op: 'annotate', ref: nsRef, annotations: {[WEIGHT]: '10'}}])
    for (const s of [first, second]) {
      expect(s.preconditions).toContainEqual({check: 'waypoint-ready', ref: waypointRef})
      expect(s.verify.map((v) => v.check)).toEqual(['namespace-labels', 'waypoint-ready', 'waypoint-bound'])
    }
    expect(second.preconditions[0]).toEqual({
      check: 'namespace-labels',
      labels: {[USE]: 'waypoint-old', 'istio.io/use-waypoint-namespace': null, [CANARY]: 'waypoint'},
    })
  })

  it('bind-waypoint promotes: use-waypoint = the plan waypoint, the canary label and annotation removed; its undo restores the canary at the last weight', () => {
    const [bind] = stepsOf(plan, 'bind-waypoint') as [PlanStep]
    expect(bind.operations).toEqual([
      {op: 'label', ref: nsRef, labels: {[USE]: 'waypoint', [CANARY]: null}},
      {op: 'annotate', ref: nsRef, annotations: {[WEIGHT]: null}},
    ])
    expect(bind.undo.operations).toEqual([
      {op: 'label', ref: nsRef, labels: {[USE]: 'waypoint-old', [CANARY]: 'waypoint'}},
      {op: 'annotate', ref: nsRef, annotations: {[WEIGHT]: '50'}},
    ])
  })

  it('without the flag, bind-waypoint is as before (no canary writes)', () => {
    const plain = offlinePlan(NS, manifests, {}, 'examples/bookinfo', '1.31').plan
    expect(stepsOf(plain, 'canary-waypoint')).toEqual([])
    expect(stepsOf(plain, 'bind-waypoint')[0]!.operations).toEqual([
      {op: 'label', ref: nsRef, labels: {[USE]: 'waypoint'}},
    ])
  })

  it('rollback undoes the later canary step first (each restores what the one before left)', () => {
    const applied = structuredClone(plan)
    applied.status = {
      steps: applied.spec.steps
        .filter((s) => s.action === 'canary-waypoint')
        .map((s) => ({id: s.id, phase: 'Applied' as const})),
    } as MigrationPlan['status']
    expect(rollbackSequence(applied).steps.map((s) => s.id)).toEqual(['canary-waypoint-50', 'canary-waypoint-10'])
  })
})

describe('refusals (exit 2 in the command)', () => {
  const labels = {[USE]: 'waypoint-old'}
  it('below Istio 1.31: names the version needed and the one found', () => {
    const r = waypointCanaryRefusal({labels, ns: NS, waypointName: 'waypoint', istioVersion: '1.30.2'})
    expect(r?.message).toContain('needs Istio >= 1.31')
    expect(r?.message).toContain('found 1.30.2 (the serving istiod)')
    expect(
      waypointCanaryRefusal({labels, ns: NS, waypointName: 'waypoint', istioVersion: undefined})?.message,
    ).toContain('--istio-version')
    expect(waypointCanaryRefusal({labels, ns: NS, waypointName: 'waypoint', istioVersion: '1.31'})).toBeUndefined()
  })

  it('without a primary waypoint (the sidecar -> ambient case): cites buildWeightedWaypoints and says to bind directly', () => {
    for (const without of [{}, {[USE]: 'none'}, {[USE]: 'waypoint'}] as Record<string, string>[]) {
      const r = waypointCanaryRefusal({
        labels: without,
        ns: NS,
        waypointName: 'waypoint',
        istioVersion: '1.31',
      })
      expect(r?.message).toContain('buildWeightedWaypoints')
      expect(r?.suggestion).toContain('bind-waypoint binds waypoint directly')
    }
    // A primary in another namespace is one the plan replaces.
    expect(
      waypointCanaryRefusal({
        labels: {[USE]: 'waypoint', 'istio.io/use-waypoint-namespace': 'infra'},
        ns: NS,
        waypointName: 'waypoint',
        istioVersion: '1.31',
      }),
    ).toBeUndefined()
  })

  it('weights: increasing integers in 1..99', () => {
    expect(canaryWeightsProblem('10,50')).toEqual({weights: [10, 50]})
    expect(canaryWeightsProblem('50,10').problem).toContain('must increase')
    expect(canaryWeightsProblem('10,10').problem).toContain('must increase')
    expect(canaryWeightsProblem('0,50').problem).toContain('between 1 and 99')
    expect(canaryWeightsProblem('10,100').problem).toContain('between 1 and 99')
    expect(canaryWeightsProblem('10.5').problem).toContain('integers')
    expect(canaryWeightsProblem('').problem).toContain('integers')
  })
})

describe('validate: the write rules of the canary', () => {
  const problems = (p: MigrationPlan) => checkPlanText(stringify(p, {aliasDuplicateObjects: false})).problems
  it('the plan is valid and round-trips through the file', () => {
    const text = renderPlanFile(plan)
    const checked = checkPlanText(text)
    expect(checked.problems).toEqual([])
    expect(renderPlanFile(checked.plan!)).toBe(text)
  })

  it('an annotation other than the canary weight, or on another kind, is refused', () => {
    const other = structuredClone(plan)
    const step = other.spec.steps.find((s) => s.id === 'canary-waypoint-10')!
    step.operations[0] = {op: 'annotate', ref: nsRef, annotations: {'sidecar.istio.io/inject': 'false'}}
    expect(
      problems(other)
        .map((p) => p.message)
        .join('\n'),
    ).toContain('may not change annotation "sidecar.istio.io/inject"')
    const onService = structuredClone(plan)
    onService.spec.steps.find((s) => s.id === 'canary-waypoint-10')!.operations[0] = {
      op: 'annotate',
      ref: {apiVersion: 'v1', kind: 'Service', namespace: NS, name: 'reviews'},
      annotations: {[WEIGHT]: '10'},
    }
    expect(
      problems(onService)
        .map((p) => p.message)
        .join('\n'),
    ).toContain('may not change annotations of Service')
    const elsewhere = structuredClone(plan)
    elsewhere.spec.steps.find((s) => s.id === 'canary-waypoint-10')!.operations[0] = {
      op: 'annotate',
      ref: {apiVersion: 'v1', kind: 'Namespace', name: 'kube-system'},
      annotations: {[WEIGHT]: '10'},
    }
    expect(
      problems(elsewhere)
        .map((p) => p.message)
        .join('\n'),
    ).toContain("outside the plan's namespace")
  })
})

describe('executor: canary steps on the in-memory cluster', () => {
  async function rig() {
    const file = path.join(await mkdtemp(path.join(os.tmpdir(), 'mesh-migrate-canary-')), 'bookinfo.yaml')
    await writeFile(file, renderPlanFile(plan))
    const state = await PlanState.load(file)
    const kube = new MemoryKube().seed(...manifests)
    const owner = {plan: file, digest: specDigest(state.plan), by: 'tester', since: '2026-12-03T00:00:00.000Z'}
    kube.edit(nsRef, (o) => {
      o.metadata.annotations = {...o.metadata.annotations, [OWNER_ANNOTATION]: JSON.stringify(owner)}
    })
    // What istiod and the Deployment controller do: the plan's waypoint exists, Programmed, with a ready proxy.
    kube.seed(
      stepsOf(state.plan, 'create-waypoint')[0]!.operations.flatMap((o) => (o.op === 'apply' ? [o.object] : []))[0]!,
    )
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
    })
    // The Services are bound to the primary today (istiod's WaypointBound condition).
    for (const svc of manifests.filter((o) => o.kind === 'Service'))
      kube.setStatus(
        {apiVersion: 'v1', kind: 'Service', namespace: NS, name: svc.metadata.name},
        {
          conditions: [{type: 'istio.io/WaypointBound', status: 'True', reason: 'Bound'}],
        },
      )
    const ctx = testExecution(kube, state)
    const step = (id: string) => state.plan.spec.steps.find((s) => s.id === id)!
    const ns = () => kube.peek(nsRef)!.metadata
    return {kube, ctx, step, ns}
  }

  it('applies 10 then 50, promotes with bind-waypoint, and undoes each back to exactly what was there', async () => {
    const {ctx, step, ns} = await rig()
    await applyStep(ctx, step('canary-waypoint-10'))
    expect(ns().labels?.[CANARY]).toBe('waypoint')
    expect(ns().annotations?.[WEIGHT]).toBe('10')
    await applyStep(ctx, step('canary-waypoint-50'))
    expect(ns().annotations?.[WEIGHT]).toBe('50')
    await applyStep(ctx, step('bind-waypoint'))
    expect(ns().labels?.[USE]).toBe('waypoint')
    expect(ns().labels?.[CANARY]).toBeUndefined()
    expect(ns().annotations?.[WEIGHT]).toBeUndefined()

    await undoStep(ctx, step('bind-waypoint'), noWarning)
    expect(ns().labels?.[USE]).toBe('waypoint-old')
    expect(ns().labels?.[CANARY]).toBe('waypoint')
    expect(ns().annotations?.[WEIGHT]).toBe('50')
    await undoStep(ctx, step('canary-waypoint-50'), noWarning)
    expect(ns().annotations?.[WEIGHT]).toBe('10')
    await undoStep(ctx, step('canary-waypoint-10'), noWarning)
    expect(ns().labels?.[CANARY]).toBeUndefined()
    expect(ns().annotations?.[WEIGHT]).toBeUndefined()
    expect(ns().labels?.[USE]).toBe('waypoint-old')
  })

  it('an annotation changed by someone since the step is left as it is, with a warning', async () => {
    const {kube, ctx, step, ns} = await rig()
    await applyStep(ctx, step('canary-waypoint-10'))
    kube.edit(nsRef, (o) => {
      o.metadata.annotations = {...o.metadata.annotations, [WEIGHT]: '25'}
    })
    const warnings: string[] = []
    await undoStep(ctx, step('canary-waypoint-10'), (m) => warnings.push(m))
    expect(ns().annotations?.[WEIGHT]).toBe('25')
    expect(warnings.join('\n')).toContain(WEIGHT)
    expect(ns().labels?.[CANARY]).toBeUndefined()
  })

  it('the canary step is not applied while the plan waypoint is not ready (never shift traffic to it)', async () => {
    const {kube, ctx, step, ns} = await rig()
    kube.setStatus(waypointRef, {conditions: [{type: 'Programmed', status: 'False', reason: 'Pending'}]})
    await expect(applyStep(ctx, step('canary-waypoint-10'))).rejects.toThrow()
    expect(ns().labels?.[CANARY]).toBeUndefined()
    expect(ns().annotations?.[WEIGHT]).toBeUndefined()
  })
})
