// Issue 19 §5 and §6 on a real kube-apiserver (one cluster, the scenarios run in order):
// - §5 a way out after an edited spec: the plan applied in part, its spec edited in place; `status` and `show` still
//   show the progress (the validation error as a warning, exit 4), `plan --keep-progress` re-plans from the cluster's
//   record, and `rollback` of the edited file undoes what the record says ran, back to the exact prior labels and
//   objects;
// - §6 interrupted steps are visible: Ctrl+C inside restart-workloads after 2 rollouts; `status` shows the step
//   Interrupted with which rollouts happened and which did not, and the hazard window that leaves.
// Only the Kubernetes API is used to arrange and observe.
import {copyFile, mkdir, readFile, writeFile} from 'node:fs/promises'
import path from 'node:path'

import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {RESTARTED_AT} from '../../src/executor/operations.js'
import {recordFromObject, recordRef} from '../../src/executor/record-store.js'
import type {MigrationPlan} from '../../src/planner/plan-types.js'
import {hasStackTrace, runCli} from '../support/cli.js'
import {startTestCluster, type TestCluster, USERS} from '../support/cluster.js'
import {cli, namespaceState, readPlan, REPO, spawnCli, waitForRequest, workdir} from './support.js'

const NS = 'bookinfo'
const FIXTURE = path.join(REPO, 'examples/bookinfo')
const PLAN_FILE = `plans/${NS}.yaml`

interface StatusJson {
  plans: {
    progressFrom: string
    invalid?: string[]
    openWindows: string[]
    steps: {id: string; phase: string; progress?: {done: string[]; notDone: string[]}}[]
  }[]
}

describe('an edited plan and an interrupted step (issue 19 §5, §6)', () => {
  let cluster: TestCluster
  let cwd: string
  let kube: string
  let plan: MigrationPlan
  let startState: string

  const stepId = (action: string) => plan.spec.steps.find((s) => s.action === action)!.id
  const appliedUpTo = (id: string) =>
    plan.spec.steps.slice(0, plan.spec.steps.findIndex((s) => s.id === id) + 1).map((s) => s.id)
  const statusJson = (r: {stdout: string}) => (JSON.parse(r.stdout) as StatusJson).plans[0]!

  beforeAll(async () => {
    cluster = await startTestCluster({fixture: FIXTURE, quiet: true, recordRequests: true})
    kube = cluster.kubeconfigPath
    cwd = await workdir()
    const made = await cli(['plan', NS], cwd, kube)
    expect(made.code, made.stderr).toBe(0)
    plan = await readPlan(cwd, NS)
    startState = await namespaceState(cluster.client, NS)
  }, 180_000)

  afterAll(async () => {
    await cluster?.stop()
  }, 60_000)

  it('§5: an edited plan shows its progress, re-plans from the record, and rolls back to the exact prior state', async () => {
    const ambient = stepId('enable-ambient')
    const to = await cli(['apply', NS, '--to', ambient, '--yes', '--timeout', '180s'], cwd, kube)
    expect(to.code, to.stderr).toBe(0)
    const applied = appliedUpTo(ambient)

    // The spec edited in place after the first apply (an option a reviewer never saw).
    const file = path.join(cwd, PLAN_FILE)
    const text = await readFile(file, 'utf8')
    expect(text).toContain('optedOut: keep-out')
    await writeFile(file, text.replace('optedOut: keep-out', 'optedOut: enroll'))
    expect((await cli(['apply', NS, '--step', '--yes'], cwd, kube)).code).toBe(4)

    // status: the progress from the record, the validation error as a warning on stderr, exit 4 (never in sync).
    const status = await cli(['status', NS, '-o', 'json'], cwd, kube)
    expect(status.code, status.stderr).toBe(4)
    expect(hasStackTrace(status.stderr)).toBe(false)
    expect(status.stderr).toContain(
      `Warning: ${PLAN_FILE} is not a valid plan: spec: spec was edited after the first apply`,
    )
    const report = statusJson(status)
    expect(report.progressFrom).toBe('cluster')
    expect(report.invalid?.[0]).toContain('spec was edited after the first apply')
    expect(report.steps.filter((s) => s.phase === 'Applied').map((s) => s.id)).toEqual(applied)
    expect((await cli(['status', NS, '--detailed-exitcode'], cwd, kube)).code).toBe(4)
    const table = await cli(['status', NS], cwd, kube)
    expect(table.stdout).toContain(`in-progress, ${applied.length}/${plan.spec.steps.length} applied`)

    // show: the plan with its progress, the same warning, exit 4.
    const show = await runCli(['show', NS], {cwd})
    expect(show.code, show.stderr).toBe(4)
    expect(show.stderr).toContain('spec was edited after the first apply')
    expect(show.stdout).toContain(ambient)

    // plan --keep-progress in a copy of the working directory: re-planned from the cluster's record (the edited file
    // is what it replaces); the new plan keeps the applied steps' records, is valid, and status agrees.
    const copy = await workdir()
    await mkdir(path.join(copy, 'plans'))
    await copyFile(file, path.join(copy, PLAN_FILE))
    const replanned = await cli(['plan', NS, '--keep-progress'], copy, kube)
    expect(replanned.code, replanned.stderr).toBe(0)
    expect(replanned.stderr).toContain(`Kept the record of ${applied.length} applied step(s)`)
    const kept = await readPlan(copy, NS)
    expect(kept.status?.steps.filter((s) => s.phase === 'Applied').map((s) => s.id)).toEqual(applied)
    // With what each step saw before it wrote (the undo data), as the record holds it.
    const recorded = recordFromObject(await cluster.client.get(recordRef(NS, NS)), recordRef(NS, NS))!
    const bind = stepId('bind-waypoint')
    expect(kept.status!.steps.find((s) => s.id === bind)!.observed?.before).toEqual(
      recorded.steps.find((s) => s.id === bind)!.observed?.before,
    )
    expect(recorded.steps.find((s) => s.id === bind)!.observed?.before).toBeDefined()
    expect((await runCli(['validate', NS], {cwd: copy})).code).toBe(0)
    const copyStatus = await cli(['status', NS, '-o', 'json'], copy, kube)
    expect(copyStatus.code, copyStatus.stderr).toBe(0)
    expect(
      statusJson(copyStatus)
        .steps.filter((s) => s.phase === 'Applied')
        .map((s) => s.id),
    ).toEqual(applied)

    // rollback of the edited file: from the record's steps and undo data, to the exact prior labels and objects.
    const undone = await cli(['rollback', NS, '--confirm', NS, '--timeout', '180s'], cwd, kube)
    expect(undone.code, undone.stderr).toBe(0)
    expect(undone.stderr).toContain('using the record in the cluster')
    expect(undone.stdout).toContain(`Rolled back ${applied.length} step(s)`)
    await cluster.waitForIdle()
    expect(await namespaceState(cluster.client, NS)).toBe(startState)
    const record = recordFromObject(await cluster.client.get(recordRef(NS, NS)), recordRef(NS, NS))!
    expect(record.steps.every((s) => s.phase === 'RolledBack')).toBe(true)
    // The file keeps its edit; only its status was rewritten.
    const after = await readFile(file, 'utf8')
    expect(after).toContain('optedOut: enroll')
    expect(after).toContain('phase: RolledBack')
    // Fully rolled back: a plain plan replaces it.
    const fresh = await cli(['plan', NS], cwd, kube)
    expect(fresh.code, fresh.stderr).toBe(0)
    plan = await readPlan(cwd, NS)
  }, 600_000)

  it('§6: Ctrl+C inside restart-workloads after 2 rollouts: status shows Interrupted, which rollouts happened, and the hazard', async () => {
    const restart = stepId('restart-workloads')
    const restartStep = plan.spec.steps.find((s) => s.id === restart)!
    const workloads = restartStep.operations.length
    expect(workloads).toBeGreaterThan(2)
    const upTo = plan.spec.steps[plan.spec.steps.indexOf(restartStep) - 1]!.id
    const prefix = await cli(['apply', NS, '--to', upTo, '--yes', '--timeout', '180s'], cwd, kube)
    expect(prefix.code, prefix.stderr).toBe(0)

    // The record's write after the 2nd rollout is held for a while: Ctrl+C arrives while it is in flight, so the
    // step stops after exactly 2 of its restarts (apply stops after the request in flight).
    const recorder = cluster.recorder!
    const recordName = recordRef(NS, NS).name
    const from = recorder.requests.at(-1)?.id ?? 0
    const fault = recorder.faults.add({
      match: {verb: 'patch', resource: 'configmaps', name: recordName, user: USERS.tool},
      after: 2,
      times: 1,
      latencyMs: 4000,
      name: 'hold the record write after the 2nd rollout',
    })
    const run = spawnCli(['apply', NS, '--step', '--yes', '--timeout', '120s'], cwd, kube)
    try {
      await waitForRequest(
        recorder,
        (e) =>
          e.id > from && e.user === USERS.tool && e.verb === 'patch' && e.name === recordName && e.fault !== undefined,
        'the held record write',
        60_000,
      )
      run.child.kill('SIGINT')
      const r = await run.done
      expect(r.code, r.stderr).toBe(130)
    } finally {
      fault.remove()
    }

    const status = await cli(['status', NS, '-o', 'json'], cwd, kube)
    expect(status.code, status.stderr).toBe(0)
    const report = statusJson(status)
    const row = report.steps.find((s) => s.id === restart)!
    expect(row.phase).toBe('Interrupted')
    expect(row.progress!.done).toHaveLength(2)
    expect(row.progress!.notDone).toHaveLength(workloads - 2)
    // What status says happened is what the cluster shows: the restarted Deployments carry the restart stamp.
    const restarted: string[] = []
    for (const op of restartStep.operations) {
      if (op.op !== 'restart') continue
      const live = await cluster.client.get(op.ref)
      if (live?.spec?.template?.metadata?.annotations?.[RESTARTED_AT])
        restarted.push(`restart ${op.ref.kind} ${NS}/${op.ref.name}`)
    }
    expect(row.progress!.done.sort()).toEqual(restarted.sort())
    expect(report.openWindows.join('\n')).toContain(`2 of ${workloads} workloads restarted`)
    expect(report.openWindows.join('\n')).toContain(`still run with sidecars`)

    const table = await cli(['status', NS], cwd, kube)
    expect(table.stdout).toContain(`Step ${restart} is Interrupted after 2 of ${workloads} operation(s):`)
    expect(table.stdout).toContain('not done: restart Deployment')
    expect(table.stdout).toContain('hazard window')

    // --retry finishes it: the 4 others restart, the 2 done are not restarted again.
    const retry = await cli(['apply', NS, '--retry', '--yes', '--timeout', '180s'], cwd, kube)
    expect(retry.code, retry.stderr).toBe(0)
    const done = await cli(['status', NS, '-o', 'json'], cwd, kube)
    expect(statusJson(done).steps.find((s) => s.id === restart)!.phase).toBe('Applied')
    expect(statusJson(done).steps.find((s) => s.id === restart)!.progress).toBeUndefined()
  }, 600_000)
})
