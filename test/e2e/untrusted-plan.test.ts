// Issue 20 on the real kube-apiserver: a plan file is input. A spec edited after the first apply with its digest
// recomputed is another plan (§2); a tampered `status` is refused before rollback writes what it says (§4); a
// holder whose lock was broken with `unlock --force` stops before its next write (§6).
import {readFile, writeFile} from 'node:fs/promises'
import path from 'node:path'

import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {NamespaceLock} from '../../src/executor/lock.js'
import {OWNER_ANNOTATION} from '../../src/executor/ownership.js'
import type {MigrationPlan} from '../../src/planner/plan-types.js'
import {checkPlanText, renderPlanFile, specDigest} from '../../src/plan/planfile.js'
import {hasStackTrace, runCli} from '../support/cli.js'
import {startTestCluster, type TestCluster} from '../support/cluster.js'
import {cli, REPO, workdir} from './support.js'

const NS = 'bookinfo'
const FIXTURE = path.join(REPO, 'examples/bookinfo')
const PLAN_FILE = `plans/${NS}.yaml`
const nsRef = {apiVersion: 'v1', kind: 'Namespace', name: NS}

describe('untrusted plan files on the real kube-apiserver (issue 20)', () => {
  let cluster: TestCluster
  let cwd: string
  let kube: string
  let reviewed: string

  const load = async (): Promise<MigrationPlan> =>
    checkPlanText(await readFile(path.join(cwd, PLAN_FILE), 'utf8')).plan!
  const save = (plan: MigrationPlan) => writeFile(path.join(cwd, PLAN_FILE), renderPlanFile(plan))
  const labels = async () => (await cluster.api.get(nsRef))?.metadata.labels ?? {}

  beforeAll(async () => {
    cluster = await startTestCluster({fixture: FIXTURE, quiet: true})
    cwd = await workdir()
    kube = cluster.kubeconfigPath
    expect((await cli(['plan', NS], cwd, kube)).code).toBe(0)
    const plan = await load()
    const first = plan.spec.steps.find((s) => s.operations.length > 0)!
    const r = await cli(['apply', NS, '--to', first.id, '--yes', '--timeout', '60s'], cwd, kube)
    expect(r.code, r.stderr).toBe(0)
    expect((await cluster.api.get(nsRef))!.metadata.annotations?.[OWNER_ANNOTATION]).toBeDefined()
    reviewed = await readFile(path.join(cwd, PLAN_FILE), 'utf8')
  }, 180_000)

  afterAll(async () => {
    await cluster?.stop()
  }, 60_000)

  it('a spec edited in place after the first apply, status.specDigest recomputed, is refused by apply (exit 5); nothing is written', async () => {
    const plan = await load()
    const bind = plan.spec.steps.find((s) => s.action === 'bind-waypoint')!
    const op = bind.operations.find((o) => o.op === 'label')!
    if (op.op !== 'label') throw new Error('expected a label operation')
    op.labels = Object.fromEntries(
      Object.keys(op.labels).map((k) => [k, k === 'istio.io/use-waypoint' ? 'evil' : op.labels[k]!]),
    )
    plan.status!.specDigest = specDigest(plan)
    await save(plan)
    // Offline, the edit cannot be told from a reviewed plan: the file is consistent with itself.
    const offline = await runCli(['validate', NS], {cwd})
    expect(offline.code, offline.stderr).toBe(0)
    expect(offline.stderr).toContain('Checked offline')
    // With the cluster in view it is seen: the namespace's owner has another digest.
    const live = await cli(['validate', NS, '--cluster'], cwd, kube)
    expect(live.code, live.stderr).toBe(4)
    expect(live.stderr).toContain(`namespace ${NS} is owned by another plan: ${PLAN_FILE}`)
    const before = await labels()
    const r = await cli(['apply', NS, '--all', '--yes', '--timeout', '60s'], cwd, kube)
    expect(r.code, r.stderr).toBe(5)
    expect(hasStackTrace(r.stderr)).toBe(false)
    expect(r.stderr).toContain(`${PLAN_FILE} is not the plan first applied to namespace ${NS}`)
    expect(r.stderr).toContain(`git checkout -- ${PLAN_FILE}`)
    expect(await labels()).toEqual(before)
    await writeFile(path.join(cwd, PLAN_FILE), reviewed)
  }, 120_000)

  it('a tampered status (a label the step never wrote) is refused by rollback (exit 4) before any write', async () => {
    const plan = await load()
    const record = plan.status!.steps.find((s) => s.phase === 'Applied')!
    record.observed = {
      ...record.observed,
      before: {
        ...(record.observed?.before as Record<string, unknown>),
        [`core/Namespace//${NS}`]: {labels: {'pod-security.kubernetes.io/enforce': 'privileged'}},
      },
    }
    await save(plan)
    const before = await labels()
    const r = await cli(['rollback', NS, '--confirm', NS, '--timeout', '60s'], cwd, kube)
    expect(r.code, r.stderr).toBe(4)
    expect(hasStackTrace(r.stderr)).toBe(false)
    expect(r.stderr).toMatch(/status\.steps\[\d+\]\.observed\.before/)
    expect(await labels()).toEqual(before)
    expect(before['pod-security.kubernetes.io/enforce']).toBeUndefined()
    const validate = await runCli(['validate', NS], {cwd})
    expect(validate.code).toBe(4)
    // The applied step does not write the Namespace at all: its record may not name it.
    expect(validate.stderr).toMatch(/observed\.before\["core\/Namespace\/\/bookinfo"\]: step \S+ writes no such object/)
    await writeFile(path.join(cwd, PLAN_FILE), reviewed)
  }, 120_000)

  it('unlock refuses a live holder (naming its process and host) unless --force; the fenced holder then stops before its next write', async () => {
    const lock = await NamespaceLock.acquire(cluster.client, {
      namespace: NS,
      command: 'apply plans/bookinfo.yaml',
      plan: PLAN_FILE,
      timeoutMs: 0,
    })
    const fenced = lock.fenced(cluster.client)
    const cm = {apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: 'fencing-probe', namespace: NS}}
    await fenced.create(cm)
    const refused = await cli(['unlock', NS, '--confirm', NS], cwd, kube)
    expect(refused.code, refused.stderr).toBe(5)
    expect(refused.stderr).toContain(`process ${process.pid}`)
    expect(refused.stderr).toMatch(/@[^ ]+ process \d+ \(apply plans\/bookinfo\.yaml/)
    expect(refused.stderr).toContain('--force')
    const forced = await cli(['unlock', NS, '--confirm', NS, '--force'], cwd, kube)
    expect(forced.code, forced.stderr).toBe(0)
    // The next write is refused before it is sent: the ConfigMap keeps its data.
    await expect(
      fenced.mergePatch({apiVersion: 'v1', kind: 'ConfigMap', namespace: NS, name: 'fencing-probe'}, {data: {x: '1'}}),
    ).rejects.toThrow(/lost the lock on namespace bookinfo: the lock was broken/)
    expect(
      (await cluster.api.get({apiVersion: 'v1', kind: 'ConfigMap', namespace: NS, name: 'fencing-probe'}))!.data,
    ).toBeUndefined()
    await lock.release()
  }, 60_000)
})
