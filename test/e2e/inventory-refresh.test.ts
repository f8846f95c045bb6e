// Issue 19 §1 on a real kube-apiserver: before the first step that changes the data plane, apply re-reads the
// namespace's inventory and compares it with the plan's (spec.observed). Objects created after planning that the
// plan does not handle — a VirtualService with fault injection, an L7 DENY AuthorizationPolicy — stop
// `apply --all --yes` before the switch (exit 3, naming each object and its verdict, nothing written), and
// `plan NS --keep-progress` folds them into a plan that keeps the applied steps' record; apply then continues and
// carries the new DENY to the waypoint.
// Only the Kubernetes API is used to arrange and observe.
import path from 'node:path'

import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import type {MigrationPlan} from '../../src/planner/plan-types.js'
import {hasStackTrace} from '../support/cli.js'
import {startTestCluster, type TestCluster} from '../support/cluster.js'
import {cli, nextRequestId, readPlan, REPO, toolWrites, workdir} from './support.js'

const NS = 'bookinfo'
const FIXTURE = path.join(REPO, 'examples/bookinfo')
const nsRef = {apiVersion: 'v1', kind: 'Namespace', name: NS}
const policyRef = (name: string) => ({
  apiVersion: 'security.istio.io/v1',
  kind: 'AuthorizationPolicy',
  namespace: NS,
  name,
})

const FAULTY_ROUTE = {
  apiVersion: 'networking.istio.io/v1',
  kind: 'VirtualService',
  metadata: {name: 'details-chaos', namespace: NS},
  spec: {
    hosts: ['details'],
    http: [{fault: {abort: {httpStatus: 503, percentage: {value: 10}}}, route: [{destination: {host: 'details'}}]}],
  },
}

const L7_DENY = {
  apiVersion: 'security.istio.io/v1',
  kind: 'AuthorizationPolicy',
  metadata: {name: 'reviews-no-admin', namespace: NS},
  spec: {
    selector: {matchLabels: {app: 'reviews'}},
    action: 'DENY',
    rules: [{to: [{operation: {paths: ['/admin/*']}}]}],
  },
}

describe('apply re-reads the inventory before the data plane changes (issue 19 §1)', () => {
  let cluster: TestCluster
  let cwd: string
  let kube: string
  let plan: MigrationPlan

  const stepId = (p: MigrationPlan, action: string) => p.spec.steps.find((s) => s.action === action)!.id
  const nsLabels = async () => (await cluster.client.get(nsRef))!.metadata.labels ?? {}
  const migrationWrites = (from: number) =>
    toolWrites(cluster.recorder!, from)
      .filter((w) => w.kind !== 'Lease' && w.resource !== 'leases')
      .map((w) => `${w.verb} ${w.path}`)

  /** `apply --all --yes` stops before the switch: exit 3 naming `names`, nothing written, the Next: a re-plan. */
  const expectStopped = async (names: string[], extra: string[] = []) => {
    const from = nextRequestId(cluster.recorder!)
    const r = await cli(['apply', NS, '--all', '--yes', '--timeout', '120s', ...extra], cwd, kube)
    expect(hasStackTrace(r.stderr)).toBe(false)
    expect(r.code, r.stderr).toBe(3)
    expect(r.stderr).toContain(`the namespace's inventory changed since the plan was made`)
    expect(r.stderr).toContain(`apply stops before step ${stepId(plan, 'bind-waypoint')}, which changes the data plane`)
    for (const name of names) expect(r.stderr).toMatch(new RegExp(`${name}: new since the plan was made, verdict L7`))
    expect(r.stderr).toContain(`Next: Fold`)
    expect(r.stderr).toContain(`\`mesh-migrate plan ${NS} --keep-progress\``)
    // The plan has written (its waypoint): the reviewed re-plan takes over from it.
    expect(r.stderr).toContain(`\`mesh-migrate apply plans/${NS}.yaml --take-over\``)
    expect(migrationWrites(from)).toEqual([])
    const labels = await nsLabels()
    expect(labels).not.toHaveProperty('istio.io/use-waypoint')
    expect(labels).not.toHaveProperty('istio.io/dataplane-mode')
    return r
  }

  /** The Next: folds them in, keeping the record of the steps applied so far. */
  const foldIn = async (kept: string[]) => {
    const r = await cli(['plan', NS, '--keep-progress'], cwd, kube)
    expect(r.code, r.stderr).toBe(0)
    expect(r.stderr).toContain(
      `Kept the record of ${kept.length} applied step(s) the new plan leaves unchanged: ${kept.join(', ')}.`,
    )
    plan = await readPlan(cwd, NS)
    return plan
  }

  beforeAll(async () => {
    cluster = await startTestCluster({fixture: FIXTURE, quiet: true, recordRequests: true})
    kube = cluster.kubeconfigPath
    cwd = await workdir()
    const made = await cli(['plan', NS], cwd, kube)
    expect(made.code, made.stderr).toBe(0)
    plan = await readPlan(cwd, NS)
    const to = await cli(['apply', NS, '--to', stepId(plan, 'wait-waypoint'), '--yes', '--timeout', '120s'], cwd, kube)
    expect(to.code, to.stderr).toBe(0)
    plan = await readPlan(cwd, NS)
  }, 240_000)

  afterAll(async () => {
    await cluster?.stop()
  }, 60_000)

  it('a VirtualService with fault injection created after planning stops apply before the switch; --keep-progress folds it in', async () => {
    const applied = (plan.status?.steps ?? []).filter((s) => s.phase === 'Applied').map((s) => s.id)
    expect(applied).toContain(stepId(plan, 'wait-waypoint'))
    await cluster.api.create(FAULTY_ROUTE)
    await expectStopped([`VirtualService ${NS}/details-chaos`])

    const folded = await foldIn(applied)
    expect(folded.spec.inventory.some((i) => i.ref.kind === 'VirtualService' && i.ref.name === 'details-chaos')).toBe(
      true,
    )
    expect(folded.spec.observed.objects).toHaveProperty(`networking.istio.io/VirtualService/${NS}/details-chaos`)
  }, 240_000)

  it('an L7 DENY created after planning stops apply before the switch; --keep-progress folds it in and apply carries it to the waypoint', async () => {
    const applied = (plan.status?.steps ?? []).filter((s) => s.phase === 'Applied').map((s) => s.id)
    await cluster.api.create(L7_DENY)
    // The plan is the re-plan of the first test: it applies with --take-over (issue 20 §2), and is stopped the same.
    await expectStopped([`AuthorizationPolicy ${NS}/reviews-no-admin`], ['--take-over'])

    const folded = await foldIn(applied)
    const createPolicies = folded.spec.steps.find((s) => s.action === 'create-policies')!
    expect(
      createPolicies.operations.some(
        (op) => op.op === 'apply' && op.object.metadata.name === 'reviews-no-admin-waypoint',
      ),
    ).toBe(true)

    // Apply continues from where it stopped (the re-plan of a re-plan takes over from the plan first applied) and
    // carries the DENY to the waypoint.
    const r = await cli(['apply', NS, '--all', '--yes', '--timeout', '120s', '--take-over'], cwd, kube)
    expect(r.code, r.stderr).toBe(0)
    expect((await nsLabels())['istio.io/dataplane-mode']).toBe('ambient')
    const copy = await cluster.client.get(policyRef('reviews-no-admin-waypoint'))
    expect(copy?.spec?.action).toBe('DENY')
    expect(copy?.spec?.rules).toEqual(L7_DENY.spec.rules)
    expect(await cluster.client.get(policyRef('reviews-no-admin'))).toBeUndefined()
  }, 360_000)
})
