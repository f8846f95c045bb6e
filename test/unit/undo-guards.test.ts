// Undo guards (issue 12 §2): what rollback checks before an undo writes and waits for after it is written in the
// plan by the planner (src/plan/undo-guards.ts), checked by validate, and the executor runs on that data alone.
import {mkdtemp, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import {beforeAll, describe, expect, it} from 'vitest'

import {StalePlanError} from '../../src/errors.js'
import {applyStep, checkRollback, StepFailedError, undoStep} from '../../src/executor/engine.js'
import {PlanState} from '../../src/executor/plan-state.js'
import type {KubeObject, ObjectRef} from '../../src/planner/model.js'
import type {MigrationPlan, PlanOptions, PlanStep} from '../../src/planner/plan-types.js'
import {checkPlanText, renderPlanFile} from '../../src/plan/planfile.js'
import {requiredUndoGuards, undoGuardsOf} from '../../src/plan/undo-guards.js'
import {loadManifestFiles} from '../../src/sources/manifests.js'
import {MemoryKube} from '../support/memory-kube.js'
import {offlinePlan} from '../support/offline-plan.js'
import {testExecution} from '../support/execution.js'
import {REPO_ROOT} from '../support/shared.js'

const NS = 'bookinfo'
const deployment = (name: string): ObjectRef => ({apiVersion: 'apps/v1', kind: 'Deployment', namespace: NS, name})

let manifests: KubeObject[]

beforeAll(async () => {
  manifests = (await loadManifestFiles([path.join(REPO_ROOT, 'examples/bookinfo')], {defaultNamespace: NS})).objects
})

/** The plan `mesh-migrate plan bookinfo` makes, of the bookinfo manifests changed by `edit`. */
function planOf(
  edit: (o: KubeObject) => KubeObject = (o) => o,
  options: Partial<PlanOptions> = {},
): {plan: MigrationPlan; objects: KubeObject[]} {
  const objects = manifests.map((o) => edit(structuredClone(o)))
  return {plan: offlinePlan(NS, objects, options, 'examples/bookinfo').plan, objects}
}

const stepOf = (plan: MigrationPlan, action: string): PlanStep => plan.spec.steps.find((s) => s.action === action)!

/** The plan written to a file and read back the way validate reads it. */
function validated(plan: MigrationPlan): {plan?: MigrationPlan; problems: {path: string; message: string}[]} {
  return checkPlanText(renderPlanFile(plan))
}

describe('the planner writes each undo its guards', () => {
  it('enable-ambient: pods-stay-in-mesh, allowing the workloads it verifies as captured before the plan', () => {
    // reviews-v3 opted out of injection, enrolled (--opted-out enroll): ztunnel captures it at enable-ambient.
    const {plan} = planOf(
      (o) => {
        if (o.kind === 'Deployment' && o.metadata.name === 'reviews-v3')
          o.spec.template.metadata.labels = {...o.spec.template.metadata.labels, 'sidecar.istio.io/inject': 'false'}
        return o
      },
      {optedOut: 'enroll'},
    )
    const step = stepOf(plan, 'enable-ambient')
    expect(step.verify).toContainEqual({check: 'pods-captured', refs: [deployment('reviews-v3')]})
    expect(step.undo.preconditions).toEqual([{check: 'pods-stay-in-mesh', allowed: [deployment('reviews-v3')]}])
    expect(validated(plan).problems).toEqual([])
  })

  it('restart-workloads: waits for its rollouts and for every restarted workload to have its sidecar back', () => {
    const {plan} = planOf()
    const step = stepOf(plan, 'restart-workloads')
    const restarted = step.undo.operations.map((o) => (o as {ref: ObjectRef}).ref)
    expect(restarted.length).toBeGreaterThan(0)
    expect(step.undo.verify).toEqual([
      {check: 'rollouts-complete', refs: restarted},
      {check: 'pods-with-sidecar', refs: restarted},
    ])
  })

  it('E1: restoring istio.io/rev, on the namespace or on a pod template (E4 opt-in), needs that revision to inject', () => {
    const {plan} = planOf((o) => {
      if (o.kind === 'Namespace') o.metadata.labels = {'istio.io/rev': 'canary'}
      if (o.kind === 'Deployment' && o.metadata.name === 'ratings-v1')
        o.spec.template.metadata.labels = {...o.spec.template.metadata.labels, 'istio.io/rev': 'stable'}
      return o
    })
    expect(stepOf(plan, 'remove-sidecar-injection').undo.preconditions).toEqual([
      {check: 'revision-injects', revision: 'canary'},
    ])
    expect(stepOf(plan, 'restart-workloads').undo.preconditions).toEqual([
      {check: 'revision-injects', revision: 'stable'},
    ])
  })

  it('read-only steps and steps that only create or delete carry no guards (nothing is written for them)', () => {
    const {plan} = planOf()
    for (const action of ['preflight', 'create-waypoint', 'wait-waypoint', 'create-policies']) {
      const step = stepOf(plan, action)
      expect(step.undo.preconditions, action).toBeUndefined()
      expect(step.undo.verify, action).toBeUndefined()
    }
  })
})

describe('validate checks the guards against what the undo writes', () => {
  it('a guard removed from the file is reported, naming the step and why it is needed', () => {
    const {plan} = planOf()
    const tampered = structuredClone(plan)
    const enable = stepOf(tampered, 'enable-ambient')
    delete enable.undo.preconditions
    const index = tampered.spec.steps.indexOf(enable)
    expect(validated(tampered).problems).toEqual([
      {
        path: `spec.steps[${index}].undo.preconditions`,
        message:
          'missing "pods-stay-in-mesh": the undo removes istio.io/dataplane-mode=ambient, which takes sidecar-less pods out of the mesh',
      },
    ])
  })

  it('pods-stay-in-mesh may allow only workloads the step verified as captured before the plan', () => {
    const {plan} = planOf()
    const tampered = structuredClone(plan)
    stepOf(tampered, 'enable-ambient').undo.preconditions = [
      {check: 'pods-stay-in-mesh', allowed: [deployment('productpage-v1')]},
    ]
    expect(validated(tampered).problems.map((p) => p.message)).toEqual([
      'pods-stay-in-mesh allows Deployment bookinfo/productpage-v1, which the step does not verify as captured before the plan (pods-captured)',
    ])
  })

  it('a missing pods-with-sidecar verification is reported with the workloads it must cover', () => {
    const {plan} = planOf()
    const tampered = structuredClone(plan)
    const restart = stepOf(tampered, 'restart-workloads')
    restart.undo.verify = restart.undo.verify!.filter((v) => v.check !== 'pods-with-sidecar')
    const [problem, ...rest] = validated(tampered).problems
    expect(rest).toEqual([])
    expect(problem!.message).toMatch(
      /^missing "pods-with-sidecar" for Deployment bookinfo\/details-v1, .*: the undo restarts them to bring their sidecars back$/,
    )
  })

  it('a plan written before guards existed (no undo carries any) is valid, and rollback runs the rule’s guards', () => {
    const {plan} = planOf()
    const older = structuredClone(plan)
    for (const step of older.spec.steps) {
      delete step.undo.preconditions
      delete step.undo.verify
    }
    const read = validated(older)
    expect(read.problems).toEqual([])
    for (const step of read.plan!.spec.steps) {
      const planned = stepOf(plan, step.action)
      expect(undoGuardsOf(read.plan!, step)).toEqual(requiredUndoGuards(planned))
      expect(undoGuardsOf(plan, planned)).toEqual({
        preconditions: planned.undo.preconditions ?? [],
        verify: planned.undo.verify ?? [],
      })
    }
  })
})

/** A pod of a Deployment (through its ReplicaSet), with or without a sidecar, captured by ztunnel or not. */
function podOf(name: string, opts: {sidecar: boolean; captured: boolean}): KubeObject[] {
  const rs = `${name}-7d9f`
  return [
    {
      apiVersion: 'apps/v1',
      kind: 'ReplicaSet',
      metadata: {
        name: rs,
        namespace: NS,
        ownerReferences: [{apiVersion: 'apps/v1', kind: 'Deployment', name, controller: true, uid: `${name}-uid`}],
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: `${rs}-x1`,
        namespace: NS,
        ownerReferences: [{apiVersion: 'apps/v1', kind: 'ReplicaSet', name: rs, controller: true, uid: `${rs}-uid`}],
        annotations: {
          ...(opts.sidecar ? {'sidecar.istio.io/status': '{"containers":["istio-proxy"]}'} : {}),
          ...(opts.captured ? {'ambient.istio.io/redirection': 'enabled'} : {}),
        },
      },
      spec: {containers: [{name: 'app'}, ...(opts.sidecar ? [{name: 'istio-proxy'}] : [])]},
      status: {phase: 'Running'},
    },
  ]
}

describe('rollback runs on the guards in the plan', () => {
  async function rig(plan: MigrationPlan, objects: KubeObject[]) {
    const file = path.join(await mkdtemp(path.join(os.tmpdir(), 'mesh-migrate-guards-')), 'bookinfo.yaml')
    await writeFile(file, renderPlanFile(plan))
    const state = await PlanState.load(file)
    const kube = new MemoryKube().seed(...objects)
    return {kube, state, ctx: testExecution(kube, state)}
  }

  it('pods-stay-in-mesh: refuses while a captured sidecar-less pod of a workload it does not allow would leave the mesh', async () => {
    const {plan, objects} = planOf()
    const {kube, state, ctx} = await rig(plan, [...objects, ...podOf('details-v1', {sidecar: false, captured: true})])
    const enable = stepOf(state.plan, 'enable-ambient')
    await applyStep(ctx, enable)
    const writes = kube.writes().length
    const error = await checkRollback(ctx, [enable], () => undefined).catch((e: Error) => e)
    expect(error).toBeInstanceOf(StalePlanError)
    expect((error as Error).message).toContain('Deployment bookinfo/details-v1: pod(s) details-v1-7d9f-x1')
    expect(kube.writes().length).toBe(writes)

    // What the plan allows is what the executor allows: no inference of its own.
    enable.undo.preconditions = [{check: 'pods-stay-in-mesh', allowed: [deployment('details-v1')]}]
    await expect(checkRollback(ctx, [enable], () => undefined)).resolves.toBeUndefined()
    await undoStep(ctx, enable, () => undefined)
    expect(kube.peek({apiVersion: 'v1', kind: 'Namespace', name: NS})?.metadata.labels).not.toHaveProperty(
      'istio.io/dataplane-mode',
    )
  })

  it('an undo whose pods-with-sidecar does not hold fails the rollback of that step, saying what it saw', async () => {
    const {plan, objects} = planOf()
    const {state, ctx} = await rig(plan, [...objects, ...podOf('details-v1', {sidecar: false, captured: true})])
    const restart = stepOf(state.plan, 'restart-workloads')
    restart.undo = {
      description: restart.undo.description,
      operations: [],
      verify: [{check: 'pods-with-sidecar', refs: [deployment('details-v1')]}],
    }
    const error = await undoStep(ctx, restart, () => undefined).catch((e: Error) => e)
    expect(error).toBeInstanceOf(StepFailedError)
    expect((error as Error).message).toBe(
      'the rollback of step restart-workloads failed: pods-with-sidecar did not hold: pods without a sidecar: details-v1-7d9f-x1; is the injection label back on the namespace?',
    )
    expect(state.status(restart.id)?.phase).toBe('Failed')
  })
})
