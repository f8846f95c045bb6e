// The step-by-step safety simulation (issue 5 §4): data planes and enforcement per boundary, hazards
// and their documented windows — and what plan does with hazards nobody documented.
import path from 'node:path'

import {describe, expect, it} from 'vitest'

import type {KubeObject, WorkloadItem} from '../../src/planner/model.js'
import type {PlanOptions, PlanStep} from '../../src/planner/plan-types.js'
import {simulate, unexpectedHazards} from '../../src/plan/simulate.js'
import type {SimPolicy} from '../../src/planner/simulation-state.js'
import {loadManifestFiles} from '../../src/sources/manifests.js'
import {offlinePlan} from '../support/offline-plan.js'
import {REPO_ROOT} from '../support/shared.js'

const dep = (name: string, proxy: WorkloadItem['proxy'], traits: WorkloadItem['traits'] = []): WorkloadItem => ({
  ref: {apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'ns', name},
  proxy,
  lostAnnotations: [],
  traits,
  podLabels: {app: name},
})

const nsRef = {apiVersion: 'v1', kind: 'Namespace', name: 'ns'}
const step = (
  action: PlanStep['action'],
  operations: PlanStep['operations'] = [],
  undo: PlanStep['undo']['operations'] = [],
): PlanStep => ({
  id: action,
  action,
  description: '',
  preconditions: [],
  operations,
  verify: [],
  undo: {description: '', operations: undo},
})
const restart = (names: string[]) =>
  step(
    'restart-workloads',
    names.map((n) => ({op: 'restart' as const, ref: dep(n, 'sidecar').ref})),
    names.map((n) => ({op: 'restart' as const, ref: dep(n, 'sidecar').ref})),
  )

const fullSteps = (restarted: string[]): PlanStep[] => [
  step('preflight'),
  step('create-waypoint', [
    {
      op: 'apply',
      object: {
        apiVersion: 'gateway.networking.k8s.io/v1',
        kind: 'Gateway',
        metadata: {name: 'waypoint', namespace: 'ns'},
      },
    },
  ]),
  step('wait-waypoint'),
  step('create-policies', [
    {
      op: 'apply',
      object: {
        apiVersion: 'security.istio.io/v1',
        kind: 'AuthorizationPolicy',
        metadata: {name: 'p-waypoint', namespace: 'ns'},
      },
    },
  ]),
  step(
    'bind-waypoint',
    [{op: 'label', ref: nsRef, labels: {'istio.io/use-waypoint': 'waypoint'}}],
    [{op: 'label', ref: nsRef, labels: {'istio.io/use-waypoint': null}}],
  ),
  step(
    'enable-ambient',
    [{op: 'label', ref: nsRef, labels: {'istio.io/dataplane-mode': 'ambient'}}],
    [{op: 'label', ref: nsRef, labels: {'istio.io/dataplane-mode': null}}],
  ),
  step(
    'remove-sidecar-injection',
    [{op: 'label', ref: nsRef, labels: {'istio-injection': null}}],
    [{op: 'label', ref: nsRef, labels: {'istio-injection': 'enabled'}}],
  ),
  restart(restarted),
  step('delete-sidecar-policies', [
    {
      op: 'delete',
      ref: {apiVersion: 'security.istio.io/v1', kind: 'AuthorizationPolicy', namespace: 'ns', name: 'p'},
      object: {apiVersion: 'security.istio.io/v1', kind: 'AuthorizationPolicy', metadata: {name: 'p', namespace: 'ns'}},
    },
  ]),
  step('verify-dataplane'),
]

const l7Allow: SimPolicy = {
  key: 'AuthorizationPolicy/p',
  action: 'ALLOW',
  ztunnel: 'deny-all',
  workloads: ['Deployment/a'],
  deletedIn: 'delete-sidecar-policies',
  waypointCopyIn: 'create-policies',
  companionIn: 'create-policies',
}

describe('simulate', () => {
  it('follows data planes through apply and rollback: sidecar until the restart, ambient after, sidecar again after the rollback restart', () => {
    const sim = simulate({
      namespace: 'ns',
      workloads: [dep('a', 'sidecar')],
      steps: fullSteps(['a']),
      policies: [l7Allow],
      ambientAtStart: false,
    })
    expect(sim.apply.map((b) => b.dataPlanes['Deployment/a'])).toEqual([
      'sidecar',
      'sidecar',
      'sidecar',
      'sidecar',
      'sidecar',
      'sidecar',
      'sidecar',
      'sidecar',
      'ambient',
      'ambient',
      'ambient',
    ])
    expect(sim.rollback.map((b) => [b.after, b.dataPlanes['Deployment/a']])).toEqual([
      ['undo delete-sidecar-policies', 'ambient'],
      ['undo remove-sidecar-injection', 'ambient'],
      ['undo restart-workloads', 'sidecar'],
      ['undo enable-ambient', 'sidecar'],
      ['undo bind-waypoint', 'sidecar'],
      ['undo create-policies', 'sidecar'],
      ['undo wait-waypoint', 'sidecar'],
      ['undo create-waypoint', 'sidecar'],
    ])
  })

  it('says where the L7 ALLOW is enforced at each boundary: sidecar, deny-all in the restart window, waypoint after', () => {
    const sim = simulate({
      namespace: 'ns',
      workloads: [dep('a', 'sidecar')],
      steps: fullSteps(['a']),
      policies: [l7Allow],
      ambientAtStart: false,
    })
    const where = sim.apply.map((b) => Object.keys(b.policies['AuthorizationPolicy/p'] ?? {})[0])
    expect(where).toEqual([
      'sidecar',
      'sidecar',
      'sidecar',
      'sidecar',
      'sidecar',
      'sidecar',
      'sidecar',
      'sidecar',
      'deny-all',
      'waypoint',
      'waypoint',
    ])
  })

  it('marks the deny-all interval as inside the documented restart window, and the rollback one as well', () => {
    const sim = simulate({
      namespace: 'ns',
      workloads: [dep('a', 'sidecar')],
      steps: fullSteps(['a']),
      policies: [l7Allow],
      ambientAtStart: false,
    })
    const denyAll = sim.hazards.filter((h) => h.kind === 'policy-deny-all')
    expect(denyAll.map((h) => [h.phase, h.from, h.until, h.window])).toEqual([
      ['apply', 'restart-workloads', 'delete-sidecar-policies', 'restart'],
      ['rollback', 'undo delete-sidecar-policies', 'undo restart-workloads', 'rollback-restart'],
    ])
    expect(unexpectedHazards(sim)).toEqual([])
    expect(sim.hazards.find((h) => h.kind === 'sidecar-callers-bypass')?.window).toBe('sidecar-callers')
  })

  it('flags pods captured at enable-ambient (no sidecar today) whose L7 ALLOW becomes deny-all long before the restart', () => {
    const sim = simulate({
      namespace: 'ns',
      workloads: [dep('a', 'sidecar'), dep('legacy', 'none', ['inject-opt-out'])],
      steps: fullSteps(['a']),
      policies: [{...l7Allow, workloads: ['Deployment/a', 'Deployment/legacy']}],
      ambientAtStart: false,
    })
    const unexpected = unexpectedHazards(sim)
    // From the switch until the originals go — and during rollback from the re-creation until the
    // ambient label goes: legacy is never restarted, so no restart window covers it.
    expect(unexpected.map((h) => [h.phase, h.kind, h.from, h.until, h.workloads])).toEqual([
      ['apply', 'policy-deny-all', 'enable-ambient', 'delete-sidecar-policies', ['Deployment/legacy']],
      ['rollback', 'policy-deny-all', 'undo delete-sidecar-policies', 'undo enable-ambient', ['Deployment/legacy']],
    ])
    // The restarted workload's deny-all interval is the documented restart window.
    expect(
      sim.hazards.find(
        (h) => h.kind === 'policy-deny-all' && h.workloads.includes('Deployment/a') && h.phase === 'apply',
      )?.window,
    ).toBe('restart')
  })

  it('flags a policy nobody enforces once its pods are ambient when no waypoint copy exists', () => {
    const sim = simulate({
      namespace: 'ns',
      workloads: [dep('a', 'sidecar')],
      steps: fullSteps(['a']),
      policies: [
        {key: 'AuthorizationPolicy/deny-delete', action: 'DENY', ztunnel: 'no-op', workloads: ['Deployment/a']},
      ],
      ambientAtStart: false,
    })
    expect(unexpectedHazards(sim).map((h) => [h.kind, h.from, h.until])).toEqual([
      ['policy-not-enforced', 'restart-workloads', 'end'],
    ])
  })

  it('flags an identity-keyed ALLOW without a companion: the waypoint identity is denied from binding on', () => {
    const sim = simulate({
      namespace: 'ns',
      workloads: [dep('a', 'sidecar')],
      steps: fullSteps(['a']),
      policies: [
        {
          key: 'AuthorizationPolicy/from-b',
          action: 'ALLOW',
          ztunnel: 'as-written',
          workloads: ['Deployment/a'],
          identityKeyed: true,
          waypointCopyIn: 'create-policies',
        },
      ],
      ambientAtStart: false,
    })
    expect(unexpectedHazards(sim).map((h) => [h.kind, h.from])).toEqual([['waypoint-identity', 'bind-waypoint']])
  })

  it('flags pods leaving the mesh when a rollback would remove the ambient label before the sidecars are back', () => {
    // A plan whose workloads are ambient but whose restart cannot re-inject them (no injection label to restore).
    const steps = fullSteps(['a']).filter((s) => s.action !== 'remove-sidecar-injection')
    const sim = simulate({
      namespace: 'ns',
      workloads: [dep('a', 'sidecar')],
      steps,
      policies: [],
      ambientAtStart: false,
    })
    expect(sim.apply.at(-1)!.dataPlanes['Deployment/a']).toBe('sidecar')
    // Without removing injection the restart re-injects: the pods never leave sidecar mode, no hazard.
    expect(sim.hazards.filter((h) => h.kind === 'pod-leaves-mesh')).toEqual([])
  })
})

describe('plan with the simulation', () => {
  async function bookinfoObjects(): Promise<KubeObject[]> {
    return (await loadManifestFiles([path.join(REPO_ROOT, 'examples/bookinfo')])).objects
  }
  const options = (extra: Partial<PlanOptions> = {}): PlanOptions => ({
    rootNamespace: 'istio-system',
    waypointName: 'waypoint',
    waypointFor: 'service',
    ...extra,
  })

  it('records only documented hazards for the bookinfo example', async () => {
    const {plan} = offlinePlan('bookinfo', await bookinfoObjects(), options())
    expect(plan.spec.hazards.length).toBeGreaterThan(0)
    expect(plan.spec.hazards.every((h) => h.window !== undefined)).toBe(true)
    expect(plan.spec.blockers).toEqual([])
  })

  it('blocks on a hazard without a documented window until it is accepted, then records the acceptance', async () => {
    const objects = await bookinfoObjects()
    // A pod outside the mesh today, enrolled by choice, under an L7 ALLOW.
    objects.push({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: {name: 'ratings-legacy', namespace: 'bookinfo'},
      spec: {
        selector: {matchLabels: {app: 'ratings'}},
        template: {
          metadata: {labels: {app: 'ratings', version: 'legacy', 'sidecar.istio.io/inject': 'false'}},
          spec: {containers: [{name: 'r', image: 'r'}]},
        },
      },
    })
    const planWith = (extra: Partial<PlanOptions>) => offlinePlan('bookinfo', objects, options(extra)).plan
    const blocked = planWith({optedOut: 'enroll'})
    const hazardBlockers = blocked.spec.blockers.filter((b) => b.code === 'UnexpectedHazard')
    expect(hazardBlockers.length).toBeGreaterThan(0)
    for (const b of hazardBlockers) expect(b.message).toContain('ratings-legacy')
    const ids = hazardBlockers.map((b) => b.id.replace(/^hazard\//, ''))
    for (const [i, b] of hazardBlockers.entries()) expect(b.fix).toContain(`--accept-hazard ${ids[i]}`)

    const accepted = planWith({optedOut: 'enroll', acceptHazards: ids})
    expect(accepted.spec.blockers.filter((b) => b.code === 'UnexpectedHazard')).toEqual([])
    for (const id of ids) expect(accepted.spec.hazards.find((h) => h.id === id)?.accepted).toBe(true)

    // Keeping it out of the mesh (the default) removes the hazard altogether.
    const kept = planWith({})
    expect(kept.spec.blockers.filter((b) => b.code === 'UnexpectedHazard')).toEqual([])
    expect(kept.spec.steps.map((s) => s.action)).toContain('opt-out-workloads')
  })
})

describe('accepting ids', () => {
  it('matches exact ids and * patterns, nothing else', async () => {
    const {idMatcher} = await import('../../src/plan/plan-builder.js')
    const m = idMatcher(['E12/VirtualService/other/reviews', 'E11/DestinationRule/*'])
    expect(m('E12/VirtualService/other/reviews')).toBe(true)
    expect(m('E12/VirtualService/other/ratings')).toBe(false)
    expect(m('E11/DestinationRule/other-1/dr-0')).toBe(true)
    expect(m('E11/VirtualService/other-1/vs')).toBe(false)
    expect(idMatcher(['a.b*'])('aXb-c')).toBe(false)
    expect(idMatcher(['a.b*'])('a.b-c')).toBe(true)
  })
})
