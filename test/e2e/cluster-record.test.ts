// Issue 19 on a real kube-apiserver (one cluster for the scenarios, run in order):
// - §1 refresh before every write: `apply --to bind-waypoint`, the namespace unbound by hand, then `apply --step`
//   exits 3 naming istio.io/use-waypoint with nothing written; `apply --repair bind-waypoint` puts it back;
// - §2 the record in the cluster: a second working directory holding only the reviewed plan (as merged, no
//   status) gets `status` right from the record, and `rollback` from there returns the namespace to the exact
//   labels and objects it had before the migration; the first directory's copy then agrees (issue 20 §3: a
//   stale copy rolls back only what the record says is applied: nothing).
// Only the Kubernetes API is used to arrange and observe.
import {mkdir, readFile, writeFile} from 'node:fs/promises'
import path from 'node:path'

import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {recordFromObject, recordRef} from '../../src/executor/record-store.js'
import type {MigrationPlan} from '../../src/planner/plan-types.js'
import {hasStackTrace} from '../support/cli.js'
import {startTestCluster, type TestCluster} from '../support/cluster.js'
import {cli, namespaceState, nextRequestId, readPlan, REPO, toolWrites, workdir} from './support.js'

const NS = 'bookinfo'
const FIXTURE = path.join(REPO, 'examples/bookinfo')
const PLAN_FILE = `plans/${NS}.yaml`
const nsRef = {apiVersion: 'v1', kind: 'Namespace', name: NS}

interface StatusJson {
  plans: {progressFrom: string; pending: number; drifted: number | null; steps: {id: string; phase: string}[]}[]
}

describe('the cluster holds the truth (issue 19)', () => {
  let cluster: TestCluster
  let cwd: string
  let kube: string
  let reviewed: string
  let plan: MigrationPlan
  let startState: string

  const stepId = (action: string) => plan.spec.steps.find((s) => s.action === action)!.id
  const nsLabels = async () => (await cluster.client.get(nsRef))!.metadata.labels ?? {}
  /** Writes the tool sent from `from` on, other than its lock (the Lease is how it holds the namespace). */
  const migrationWrites = (from: number) =>
    toolWrites(cluster.recorder!, from)
      .filter((w) => w.kind !== 'Lease' && w.resource !== 'leases')
      .map((w) => `${w.verb} ${w.path}`)

  beforeAll(async () => {
    cluster = await startTestCluster({fixture: FIXTURE, quiet: true, recordRequests: true})
    kube = cluster.kubeconfigPath
    cwd = await workdir()
    const made = await cli(['plan', NS], cwd, kube)
    expect(made.code, made.stderr).toBe(0)
    reviewed = await readFile(path.join(cwd, PLAN_FILE), 'utf8')
    plan = await readPlan(cwd, NS)
    startState = await namespaceState(cluster.client, NS)
  }, 180_000)

  afterAll(async () => {
    await cluster?.stop()
  }, 60_000)

  it('drift in an applied step: exit 3 naming istio.io/use-waypoint, nothing written; --repair puts it back', async () => {
    const bind = stepId('bind-waypoint')
    const to = await cli(['apply', NS, '--to', bind, '--yes', '--timeout', '120s'], cwd, kube)
    expect(to.code, to.stderr).toBe(0)
    expect(await nsLabels()).toHaveProperty('istio.io/use-waypoint')
    await cluster.api.patch(nsRef, {metadata: {labels: {'istio.io/use-waypoint': null}}})
    const from = nextRequestId(cluster.recorder!)
    const r = await cli(['apply', NS, '--step', '--yes', '--timeout', '60s'], cwd, kube)
    expect(hasStackTrace(r.stderr)).toBe(false)
    expect(r.code, r.stderr).toBe(3)
    expect(r.stderr).toContain(
      `step ${bind}: Namespace ${NS}: label istio.io/use-waypoint changed since the step set it: "waypoint" → absent`,
    )
    expect(r.stderr).toContain(`mesh-migrate apply ${PLAN_FILE} --repair ${bind}`)
    expect(migrationWrites(from)).toEqual([])
    expect(await nsLabels()).not.toHaveProperty('istio.io/dataplane-mode')

    // status shows the same drift, and --detailed-exitcode exits 10.
    const status = await cli(['status', NS, '--detailed-exitcode'], cwd, kube)
    expect(status.code, status.stderr).toBe(10)
    expect(status.stdout).toContain('istio.io/use-waypoint changed since the step set it: "waypoint" → absent')

    // The Next: works.
    const repaired = await cli(['apply', NS, '--repair', bind, '--yes', '--timeout', '120s'], cwd, kube)
    expect(repaired.code, repaired.stderr).toBe(0)
    expect((await nsLabels())['istio.io/use-waypoint']).toBe('waypoint')
    expect((await cli(['status', NS, '--detailed-exitcode'], cwd, kube)).stdout).not.toContain('drifted')

    // A step already applied (the record says so): nothing to do, and the next pending step named (a result: stdout).
    const earlier = plan.spec.steps[1]!.id
    const next = plan.spec.steps[plan.spec.steps.findIndex((s) => s.id === bind) + 1]!.id
    const again = await cli(['apply', NS, '--to', earlier, '--yes'], cwd, kube)
    expect(again.code, again.stderr).toBe(0)
    expect(again.stdout).toContain(
      `Step ${earlier} of ${PLAN_FILE} is already applied, with every step before it; nothing to do. The next pending step is ${next}.`,
    )
  }, 360_000)

  it('a second directory with only the reviewed plan sees true progress and rolls back to the exact prior state', async () => {
    // Further along: every step up to restart-workloads.
    const restart = stepId('restart-workloads')
    const more = await cli(['apply', NS, '--to', restart, '--yes', '--timeout', '180s'], cwd, kube)
    expect(more.code, more.stderr).toBe(0)
    const record = recordFromObject(await cluster.client.get(recordRef(NS, NS)), recordRef(NS, NS))!
    const applied = plan.spec.steps.slice(0, plan.spec.steps.findIndex((s) => s.id === restart) + 1).map((s) => s.id)
    expect(record.steps.filter((s) => s.phase === 'Applied').map((s) => s.id)).toEqual(applied)

    const teammate = await workdir()
    await mkdir(path.join(teammate, 'plans'))
    await writeFile(path.join(teammate, PLAN_FILE), reviewed)
    const status = await cli(['status', NS, '-o', 'json'], teammate, kube)
    expect(status.code, status.stderr).toBe(0)
    const [report] = (JSON.parse(status.stdout) as StatusJson).plans
    expect(report!.progressFrom).toBe('cluster')
    expect(report!.steps.filter((s) => s.phase === 'Applied').map((s) => s.id)).toEqual(applied)
    expect(report!.drifted).toBe(0)
    expect(status.stderr).toContain('its status differs from the record in the cluster')

    const undone = await cli(['rollback', NS, '--confirm', NS, '--timeout', '180s'], teammate, kube)
    expect(undone.code, undone.stderr).toBe(0)
    expect(undone.stdout).toContain(`Rolled back ${applied.length} step(s)`)
    await cluster.waitForIdle()
    expect(await namespaceState(cluster.client, NS)).toBe(startState)

    // The first directory's copy still says Applied: the record wins, and there is nothing left to undo.
    const stale = await cli(['rollback', NS, '--confirm', NS, '--timeout', '60s'], cwd, kube)
    expect(stale.code, stale.stderr).toBe(0)
    expect(stale.stdout).toContain('Nothing to roll back')
    expect(stale.stderr).toContain('using the cluster')
    expect(await namespaceState(cluster.client, NS)).toBe(startState)
  }, 600_000)
})
