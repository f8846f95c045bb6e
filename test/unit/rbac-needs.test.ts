// The permissions a plan needs (issue 21 §9): a closed table from what a plan can name — operations, preconditions,
// verifications, undo preconditions — to the requests the executor sends for it (src/executor/operations.ts,
// verify.ts, undo-checks.ts, ownership.ts, lock.ts), so that preflight's rbac check asks for all of them.
import {describe, expect, it} from 'vitest'

import type {Operation} from '../../src/planner/plan-types.js'
import type {MigrationPlan, PlanStep} from '../../src/planner/plan-types.js'
import {type AccessTable, OPERATION_ACCESS, planAccessNeeds} from '../../src/preflight/rbac.js'

const NS = 'shop'
const cronJob = {apiVersion: 'batch/v1', kind: 'CronJob', namespace: NS, name: 'nightly'}
const deployment = {apiVersion: 'apps/v1', kind: 'Deployment', namespace: NS, name: 'web'}

function planOf(steps: PlanStep[]): MigrationPlan {
  return {
    apiVersion: 'mesh-migrate.io/v1alpha1',
    kind: 'MigrationPlan',
    metadata: {name: NS, namespace: NS, generator: 'test'},
    spec: {steps} as MigrationPlan['spec'],
  }
}

const show = (plan: MigrationPlan) =>
  planAccessNeeds(plan).map(
    (n) => `${n.verb} ${n.kind}${n.namespace ? ` ${n.namespace}` : ''}${n.name ? `/${n.name}` : ''}`,
  )

describe('planAccessNeeds', () => {
  it('template-labels (pod-level opt-ins on controllers, CronJobs included) needs get and patch, forward and undo', () => {
    const plan = planOf([
      {
        id: 'restart-workloads',
        action: 'restart-workloads',
        description: '',
        preconditions: [],
        operations: [{op: 'template-labels', ref: cronJob, labels: {'sidecar.istio.io/inject': null}}],
        verify: [],
        undo: {
          description: '',
          operations: [{op: 'template-labels', ref: cronJob, labels: {'sidecar.istio.io/inject': 'true'}}],
        },
      },
    ])
    const patch = planAccessNeeds(plan).find((n) => n.verb === 'patch' && n.kind === 'CronJob')
    expect(patch).toEqual({
      verb: 'patch',
      apiVersion: 'batch/v1',
      kind: 'CronJob',
      namespace: NS,
      name: 'nightly',
      why: ['step restart-workloads', 'rollback of restart-workloads'],
    })
    expect(show(plan)).toContain('get CronJob shop/nightly')
  })

  it("counts the reads of an undo's preconditions and of its verify, and the namespace owner record", () => {
    const plan = planOf([
      {
        id: 'remove-sidecar-injection',
        action: 'remove-sidecar-injection',
        description: '',
        preconditions: [],
        operations: [
          {op: 'label', ref: {apiVersion: 'v1', kind: 'Namespace', name: NS}, labels: {'istio.io/rev': null}},
        ],
        verify: [],
        undo: {
          description: '',
          preconditions: [
            {check: 'revision-injects', revision: 'canary'},
            {check: 'pods-stay-in-mesh', allowed: []},
          ],
          operations: [
            {op: 'label', ref: {apiVersion: 'v1', kind: 'Namespace', name: NS}, labels: {'istio.io/rev': 'canary'}},
          ],
          verify: [{check: 'pods-with-sidecar', refs: [deployment]}],
        },
      },
    ])
    const needs = planAccessNeeds(plan)
    // undo-checks.ts checkRevisionInjects: a cluster-wide list of the injection webhooks.
    expect(needs).toContainEqual({
      verb: 'list',
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'MutatingWebhookConfiguration',
      why: ['rollback of remove-sidecar-injection'],
    })
    const shown = show(plan)
    // checkPodsStayInMesh and pods-with-sidecar (observe.ts livePods, verify.ts podsNotUpYet).
    for (const read of ['list Pod shop', 'list ReplicaSet shop', 'list Job shop', 'get Deployment shop/web'])
      expect(shown).toContain(read)
    // ownership.ts claimNamespace: the plan's first write records it on the Namespace.
    expect(needs.find((n) => n.verb === 'patch' && n.kind === 'Namespace')?.why).toContain(
      'recording the plan as the namespace owner',
    )
  })

  it('a plan that writes nothing does not ask to record an owner', () => {
    expect(show(planOf([]))).toEqual([
      'create Lease shop',
      'get Lease shop/mesh-migrate-lock',
      'patch Lease shop/mesh-migrate-lock',
      'delete Lease shop/mesh-migrate-lock',
      'get Namespace/shop',
    ])
  })

  it('the tables are closed over the unions of plan-types.ts: a missing kind does not compile', () => {
    const {'template-labels': _omitted, ...withoutTemplateLabels} = OPERATION_ACCESS
    // @ts-expect-error — 'template-labels' is missing: every Operation kind must say what it needs.
    const incomplete: AccessTable<Operation, 'op'> = withoutTemplateLabels
    expect(Object.keys(incomplete)).not.toContain('template-labels')
    // @ts-expect-error — a kind that is not an Operation is refused too.
    const stray: AccessTable<Operation, 'op'> = {...OPERATION_ACCESS, scale: () => []}
    expect(Object.keys(stray)).toContain('scale')
  })
})
