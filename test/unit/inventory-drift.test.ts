// Issue 19 §1: the inventory read again before the data plane changes, against the plan's spec.observed. New or
// changed objects whose verdict is neither unaffected nor inert are reported (apply stops on them); removed ones are
// listed apart; inert or unaffected ones and changes the planner does not read are not.
import path from 'node:path'

import {beforeAll, describe, expect, it} from 'vitest'

import {buildInventory} from '../../src/planner/inventory.js'
import type {KubeObject, SourceSnapshot} from '../../src/planner/model.js'
import type {MigrationPlan} from '../../src/planner/plan-types.js'
import {buildPlan} from '../../src/plan/plan-builder.js'
import {compareInventory} from '../../src/plan/inventory-drift.js'
import {checkPlanText, renderPlanFile} from '../../src/plan/planfile.js'
import {loadManifestFiles} from '../../src/sources/manifests.js'
import {REPO_ROOT} from '../support/shared.js'

const NS = 'bookinfo'
let objects: KubeObject[]
let plan: MigrationPlan

const snapshotOf = (objs: KubeObject[]): SourceSnapshot => ({
  namespace: NS,
  rootNamespace: 'istio-system',
  target: {manifests: ['examples/bookinfo']},
  objects: objs,
  missingKinds: [],
  findings: [],
})

/** The inventory built from `objs` against the plan made from the fixture. */
function compare(objs: KubeObject[], against: MigrationPlan = plan) {
  const snapshot = snapshotOf(objs)
  return compareInventory(against, buildInventory(snapshot, {waypointFor: 'service'}), snapshot)
}

const named = (name: string, kind = 'AuthorizationPolicy') =>
  objects.find((o) => o.kind === kind && o.metadata.name === name)!
const without = (name: string, kind = 'AuthorizationPolicy') => objects.filter((o) => o !== named(name, kind))
const policy = (name: string, spec: Record<string, unknown>): KubeObject => ({
  apiVersion: 'security.istio.io/v1',
  kind: 'AuthorizationPolicy',
  metadata: {name, namespace: NS},
  spec,
})
const changes = (r: ReturnType<typeof compare>) =>
  r.changes.map((c) => `${c.change} ${c.ref.kind}/${c.ref.name} ${c.verdict}`)

beforeAll(async () => {
  objects = (await loadManifestFiles([path.join(REPO_ROOT, 'examples/bookinfo')])).objects
  const snapshot = snapshotOf(objects)
  plan = buildPlan({
    inventory: buildInventory(snapshot, {waypointFor: 'service'}),
    snapshot,
    options: {rootNamespace: 'istio-system', waypointName: 'waypoint', waypointFor: 'service'},
    generator: 'test',
  })
})

describe('compareInventory', () => {
  it('the plan records a fingerprint of every object whose verdict matters, and survives its file encoding', () => {
    const recorded = Object.keys(plan.spec.observed.objects ?? {})
    const mattering = plan.spec.inventory.filter((i) => i.verdict !== 'inert' && i.verdict !== 'unaffected')
    expect(recorded.length).toBe(mattering.length)
    expect(recorded).toContain(`security.istio.io/AuthorizationPolicy/${NS}/details-no-delete`)
    expect(checkPlanText(renderPlanFile(plan)).plan!.spec.observed.objects).toEqual(plan.spec.observed.objects)
  })

  it('nothing changed: unchanged, no changes', () => {
    expect(compare(objects)).toEqual({unchanged: true, changes: [], removed: []})
  })

  it('a new L7 DENY AuthorizationPolicy is a new object, verdict L7', () => {
    const deny = policy('reviews-no-admin', {
      selector: {matchLabels: {app: 'reviews'}},
      action: 'DENY',
      rules: [{to: [{operation: {paths: ['/admin/*']}}]}],
    })
    const r = compare([...objects, deny])
    expect(r.unchanged).toBe(false)
    expect(changes(r)).toEqual(['new AuthorizationPolicy/reviews-no-admin L7'])
    expect(r.changes[0]!.reasons.length).toBeGreaterThan(0)
  })

  it('a new VirtualService with fault injection is a new object', () => {
    const vs: KubeObject = {
      apiVersion: 'networking.istio.io/v1',
      kind: 'VirtualService',
      metadata: {name: 'details-chaos', namespace: NS},
      spec: {
        hosts: ['details'],
        http: [{fault: {abort: {httpStatus: 503, percentage: {value: 10}}}, route: [{destination: {host: 'details'}}]}],
      },
    }
    expect(changes(compare([...objects, vs]))).toEqual(['new VirtualService/details-chaos L7'])
  })

  it('an object the plan saw, edited since (fault injection added to a route), is changed', () => {
    const edited = structuredClone(named('ratings', 'VirtualService'))
    ;(edited.spec!.http as Record<string, unknown>[])[0]!.fault = {delay: {fixedDelay: '5s', percentage: {value: 50}}}
    const r = compare([...without('ratings', 'VirtualService'), edited])
    expect(changes(r)).toEqual(['changed VirtualService/ratings L7'])
  })

  it("an edited policy a pending step checks itself (object-unchanged) is left to that step's precondition", () => {
    const edited = structuredClone(named('details-no-delete'))
    ;(edited.spec!.rules as unknown[]).push({to: [{operation: {methods: ['PUT']}}]})
    const checks = plan.spec.steps.flatMap((s) => s.preconditions)
    expect(checks.some((p) => p.check === 'object-unchanged' && p.ref.name === 'details-no-delete')).toBe(true)
    const r = compare([...without('details-no-delete'), edited])
    expect(r.unchanged).toBe(false)
    expect(r.changes).toEqual([])
  })

  it('metadata the planner does not read (a GitOps label) is no change', () => {
    const labelled = structuredClone(named('details-no-delete'))
    labelled.metadata.labels = {'argocd.argoproj.io/instance': 'bookinfo'}
    expect(compare([...without('details-no-delete'), labelled])).toEqual({unchanged: true, changes: [], removed: []})
  })

  it('a removed object is listed as removed, and does not stop apply', () => {
    const r = compare(without('ratings-get-only'))
    expect(r.changes).toEqual([])
    expect(r.removed.map((ref) => ref.name)).toEqual(['ratings-get-only'])
  })

  it('a new object whose verdict is inert (a policy selecting no workload) or unaffected does not stop apply', () => {
    const inert = policy('nobody', {
      selector: {matchLabels: {app: 'no-such-app'}},
      action: 'DENY',
      rules: [{to: [{operation: {paths: ['/x']}}]}],
    })
    const ingressOnly: KubeObject = {
      ...structuredClone(named('bookinfo', 'VirtualService')),
      metadata: {name: 'bookinfo-2', namespace: NS},
    }
    const r = compare([...objects, inert, ingressOnly])
    expect(r.unchanged).toBe(false)
    expect(r.changes).toEqual([])
  })

  it('a plan without per-object fingerprints (written before them) tells new objects, and changes by their classification', () => {
    const older = structuredClone(plan)
    delete older.spec.observed.objects
    const deny = policy('reviews-no-admin', {
      selector: {matchLabels: {app: 'reviews'}},
      action: 'DENY',
      rules: [{to: [{operation: {paths: ['/admin/*']}}]}],
    })
    expect(changes(compare([...objects, deny], older))).toEqual(['new AuthorizationPolicy/reviews-no-admin L7'])
    expect(compare(objects, older).changes).toEqual([])
  })
})
