// The policy migration inside the plan: create-policies before bind-waypoint, delete-sidecar-policies right after
// the restart (L4 parts applied there, not earlier), their undo, and the write rules that allow exactly that.
import {readFileSync, readdirSync} from 'node:fs'
import path from 'node:path'
import {describe, expect, it} from 'vitest'
import {buildInventory} from '../../src/planner/inventory.js'
import type {KubeObject, SourceSnapshot} from '../../src/planner/model.js'
import {buildPlan} from '../../src/plan/plan-builder.js'
import type {MigrationPlan, Operation, PlanStep} from '../../src/planner/plan-types.js'
import {safetyProblems} from '../../src/plan/planfile.js'
import {refKey, refOf} from '../../src/planner/refs.js'
import {REPO_ROOT} from '../support/shared.js'
import {deployment, istio, service, yamlObjects} from './support/classify-context.js'

const EXAMPLE = path.join(REPO_ROOT, 'examples/bookinfo')
const namespace: KubeObject = {
  apiVersion: 'v1',
  kind: 'Namespace',
  metadata: {name: 'bookinfo', labels: {'istio-injection': 'enabled'}},
}

function plan(objects: KubeObject[], istioVersion?: string): MigrationPlan {
  const snapshot: SourceSnapshot = {
    namespace: 'bookinfo',
    rootNamespace: 'istio-system',
    target: {manifests: ['test']},
    objects,
    missingKinds: [],
    findings: [],
  }
  const inventory = buildInventory(snapshot, {waypointFor: 'service', ...(istioVersion ? {istioVersion} : {})})
  return buildPlan({
    inventory,
    snapshot,
    options: {rootNamespace: 'istio-system', waypointName: 'waypoint', waypointFor: 'service'},
    generator: 'test',
    ...(istioVersion ? {istioVersion} : {}),
  })
}

function step(p: MigrationPlan, id: string): PlanStep {
  const s = p.spec.steps.find((x) => x.id === id)
  if (!s) throw new Error(`no step ${id}: ${p.spec.steps.map((x) => x.id).join(', ')}`)
  return s
}

const describeOp = (op: Operation) => `${op.op} ${op.op === 'apply' ? op.object.metadata.name : op.ref.name}`

describe('bookinfo example', () => {
  const objects = readdirSync(EXAMPLE)
    .filter((f) => f.endsWith('.yaml'))
    .sort()
    .flatMap((f) => yamlObjects(readFileSync(path.join(EXAMPLE, f), 'utf8')))
  const p = plan(objects)

  it('create-policies comes before bind-waypoint and creates the copies and companions; its undo deletes exactly them', () => {
    const ids = p.spec.steps.map((s) => s.id)
    expect(ids.indexOf('create-policies')).toBeLessThan(ids.indexOf('bind-waypoint'))
    expect(ids.indexOf('wait-waypoint')).toBeLessThan(ids.indexOf('create-policies'))
    const s = step(p, 'create-policies')
    expect(s.operations.map(describeOp)).toEqual([
      'apply details-no-delete-waypoint',
      'apply productpage-ingress-only-waypoint',
      'apply productpage-ingress-only-ztunnel',
      'apply ratings-get-only-waypoint',
      'apply ratings-get-only-ztunnel',
      'apply reviews-from-productpage-waypoint',
      'apply reviews-from-productpage-ztunnel',
    ])
    const created = s.operations.map((o) => refKey(refOf((o as Extract<Operation, {op: 'apply'}>).object)))
    expect(s.undo.operations.map((o) => (o.op === 'delete' ? refKey(o.ref) : 'not a delete'))).toEqual(created)
    // The originals it copies must not have changed since the plan was made.
    expect(
      s.preconditions.filter((c) => c.check === 'object-unchanged').map((c) => (c as {ref: {name: string}}).ref.name),
    ).toEqual(['details-no-delete', 'productpage-ingress-only', 'ratings-get-only', 'reviews-from-productpage'])
    expect(s.description).toContain('cluster.local/ns/bookinfo/sa/waypoint')
  })

  it('delete-sidecar-policies applies the L4 part of the L7 ALLOW, then deletes the superseded originals; undo re-creates them and deletes the L4 part', () => {
    const ids = p.spec.steps.map((s) => s.id)
    expect(ids.indexOf('restart-workloads')).toBe(ids.indexOf('delete-sidecar-policies') - 1)
    const s = step(p, 'delete-sidecar-policies')
    expect(s.operations.map(describeOp)).toEqual([
      'apply ratings-get-only-l4',
      'delete details-no-delete',
      'delete ratings-get-only',
    ])
    expect(s.undo.operations.map(describeOp)).toEqual([
      'apply details-no-delete',
      'apply ratings-get-only',
      'delete ratings-get-only-l4',
    ])
    const stored = s.operations.find((o) => o.op === 'delete' && o.ref.name === 'ratings-get-only') as Extract<
      Operation,
      {op: 'delete'}
    >
    expect(stored.object!.spec.rules[0].to[0].operation.methods).toEqual(['GET'])
    expect(s.verify).toEqual([
      {
        check: 'objects-absent',
        refs: [
          expect.objectContaining({name: 'details-no-delete'}),
          expect.objectContaining({name: 'ratings-get-only'}),
        ],
      },
      {check: 'objects-present', refs: [expect.objectContaining({name: 'ratings-get-only-l4'})]},
    ])
  })

  it('passes the safety rules; delete-sidecar-policies may create AuthorizationPolicies in the namespace and nothing else', () => {
    expect(safetyProblems(p)).toEqual([])
    const tampered = structuredClone(p)
    const s = tampered.spec.steps.find((x) => x.id === 'delete-sidecar-policies')!
    const l4 = (s.operations[0] as Extract<Operation, {op: 'apply'}>).object
    s.operations.push({
      op: 'apply',
      object: {...structuredClone(l4), kind: 'RequestAuthentication', metadata: {...l4.metadata, name: 'x'}},
    })
    s.operations.push({op: 'apply', object: {...structuredClone(l4), metadata: {...l4.metadata, namespace: 'other'}}})
    s.undo.operations.push({
      op: 'delete',
      ref: {apiVersion: 'v1', kind: 'Service', namespace: 'bookinfo', name: 'ratings'},
      object: {apiVersion: 'v1', kind: 'Service', metadata: {name: 'ratings', namespace: 'bookinfo'}},
    })
    expect(safetyProblems(tampered).map((x) => x.message)).toEqual([
      'this step may not create RequestAuthentication (security.istio.io/RequestAuthentication)',
      'writes to namespace "other", outside the plan\'s namespace "bookinfo"',
      'this step may not delete Service',
    ])
  })
})

describe('without a waypoint', () => {
  it('an E22 rewrite still gets create-policies (before the switch) and delete-sidecar-policies (after the restart)', () => {
    const p = plan(
      [
        namespace,
        deployment('reviews-v1', {app: 'reviews'}),
        service('reviews', {app: 'reviews'}),
        istio('AuthorizationPolicy', 'by-sa', {
          selector: {matchLabels: {app: 'reviews'}},
          rules: [{when: [{key: 'source.serviceAccount', values: ['productpage']}]}],
        }),
      ],
      '1.26',
    )
    // The classifier still counts when: source.serviceAccount as needing a waypoint; the plan's decision does not.
    const create = step(p, 'create-policies')
    expect(create.operations.map(describeOp)).toContain('apply by-sa-l4')
    expect(step(p, 'delete-sidecar-policies').operations.map(describeOp)).toContain('delete by-sa')
    expect(safetyProblems(p)).toEqual([])
  })

  it('a namespace with only L4 policies and no waypoint has neither step', () => {
    const p = plan([
      namespace,
      deployment('reviews-v1', {app: 'reviews'}),
      service('reviews', {app: 'reviews'}),
      istio('AuthorizationPolicy', 'l4', {
        selector: {matchLabels: {app: 'reviews'}},
        rules: [{from: [{source: {principals: ['cluster.local/ns/bookinfo/sa/productpage']}}]}],
      }),
    ])
    expect(p.spec.summary.waypointRequired).toBe(false)
    expect(p.spec.steps.map((s) => s.id)).not.toContain('create-policies')
    expect(p.spec.steps.map((s) => s.id)).not.toContain('delete-sidecar-policies')
  })
})
