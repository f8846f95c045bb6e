// Issue 10 point 10, end to end on a real kube-apiserver: "Next:" advice that works for a plan in
// progress. `plan NS --keep-progress` re-plans from the namespace as a rollback would leave it (the
// plan's own waypoint, policy copies and labels are not taken for the user's), keeps the record of the
// applied steps the new plan leaves unchanged, and refuses — with commands that work — when an applied
// step changed. Only the Kubernetes API is used to arrange and observe.
import {readFile} from 'node:fs/promises'
import path from 'node:path'

import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {LOCK_INFO_ANNOTATION, LOCK_NAME, lockRef} from '../../src/executor/lock.js'
import {OWNER_ANNOTATION} from '../../src/executor/ownership.js'
import type {MigrationPlan} from '../../src/planner/plan-types.js'
import {specDigest} from '../../src/plan/planfile.js'
import {hasStackTrace} from '../support/cli.js'
import {startTestCluster, type TestCluster} from '../support/cluster.js'
import {cli, readPlan, REPO, workdir} from './support.js'

const NS = 'bookinfo'
const FIXTURE = path.join(REPO, 'examples/bookinfo')
const PLAN_FILE = `plans/${NS}.yaml`
const nsRef = {apiVersion: 'v1', kind: 'Namespace', name: NS}
const waypoint = {apiVersion: 'gateway.networking.k8s.io/v1', kind: 'Gateway', namespace: NS, name: 'waypoint'}
const policy = (name: string) => ({
  apiVersion: 'security.istio.io/v1',
  kind: 'AuthorizationPolicy',
  namespace: NS,
  name,
})

/** The backquoted commands of a "Next:" line (or any advice), in order. */
function commandsIn(text: string): string[] {
  return [...text.matchAll(/`(mesh-migrate [^`]+)`/g)].map((m) => m[1]!)
}

describe('plan --keep-progress: a re-plan of a plan in progress keeps what is unchanged', () => {
  let cluster: TestCluster
  let cwd: string
  let kube: string
  let plan: MigrationPlan

  const idOf = (action: string) => plan.spec.steps.find((s) => s.action === action)!.id
  const phases = async () =>
    Object.fromEntries(((await readPlan(cwd, NS)).status?.steps ?? []).map((s) => [s.id, s.phase]))
  const run = (args: string[]) => cli(args, cwd, kube)

  beforeAll(async () => {
    cluster = await startTestCluster({fixture: FIXTURE, quiet: true})
    cwd = await workdir()
    kube = cluster.kubeconfigPath
    const r = await run(['plan', NS])
    expect(r.code, r.stderr).toBe(0)
    plan = await readPlan(cwd, NS)
    const upTo = await run(['apply', NS, '--to', idOf('create-policies'), '--yes', '--timeout', '60s'])
    expect(upTo.code, upTo.stderr).toBe(0)
  }, 180_000)

  afterAll(async () => {
    await cluster?.stop()
  }, 60_000)

  it('unchanged namespace: the re-plan is the same plan, every applied step kept; the waypoint it created is not "reused"', async () => {
    const applied = Object.keys(await phases())
    expect(applied).toContain(idOf('create-waypoint'))
    // A plain re-plan is refused, and its advice names the re-plan that keeps progress.
    const plain = await run(['plan', NS])
    expect(plain.code).toBe(1)
    expect(plain.stderr).toContain(`mesh-migrate plan ${NS} --keep-progress`)

    const r = await run(['plan', NS, '--keep-progress'])
    expect(r.code, r.stderr).toBe(0)
    expect(hasStackTrace(r.stderr)).toBe(false)
    expect(r.stderr).toContain(
      `Kept the record of ${applied.length} applied step(s) the new plan leaves unchanged: ${applied.join(', ')}.`,
    )
    expect(r.stderr).toContain(`To apply: ${idOf('bind-waypoint')}`)
    const again = await readPlan(cwd, NS)
    // Planned from the namespace as a rollback would leave it: the same spec, so the waypoint is still
    // created (and deleted by rollback) by this plan, not taken for one the namespace already had.
    expect(specDigest(again)).toBe(specDigest(plan))
    expect(again.spec.steps.map((s) => s.action)).toContain('create-waypoint')
    expect(Object.values(await phases()).every((p) => p === 'Applied')).toBe(true)
    expect(Object.keys(await phases())).toEqual(applied)
  }, 120_000)

  it('refused (exit 5, nothing written) while another operator holds the namespace lock: that apply writes the record it would re-plan', async () => {
    const startedAt = new Date().toISOString()
    const now = new Date().toISOString().replace(/\.(\d{3})Z$/, '.$1000Z')
    const info = {
      holder: 'alice@jumphost/4242/abc123',
      who: 'alice@jumphost',
      command: `apply ${PLAN_FILE}`,
      plan: PLAN_FILE,
      startedAt,
    }
    await cluster.api.create({
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: {name: LOCK_NAME, namespace: NS, annotations: {[LOCK_INFO_ANNOTATION]: JSON.stringify(info)}},
      spec: {holderIdentity: info.holder, leaseDurationSeconds: 60, acquireTime: now, renewTime: now},
    })
    try {
      const before = await readFile(path.join(cwd, PLAN_FILE), 'utf8')
      const r = await run(['plan', NS, '--keep-progress'])
      expect(r.code, r.stderr).toBe(5)
      expect(hasStackTrace(r.stderr)).toBe(false)
      expect(r.stderr).toContain(
        `namespace ${NS} is locked by alice@jumphost process 4242 (apply ${PLAN_FILE}, since ${startedAt}): it is writing the record --keep-progress would re-plan`,
      )
      expect(r.stderr).toContain(`mesh-migrate unlock ${NS}`)
      expect(await readFile(path.join(cwd, PLAN_FILE), 'utf8')).toBe(before)
    } finally {
      await cluster.api.delete(lockRef(NS))
    }
  }, 120_000)

  it('an L7 policy edited after create-policies: apply stops (exit 3) naming --keep-progress; that is refused for the changed applied step, with commands that work', async () => {
    await cluster.api.patch(policy('details-no-delete'), {
      spec: {rules: [{to: [{operation: {methods: ['DELETE', 'PUT']}}]}]},
    })
    const stopped = await run(['apply', NS, '--step', '--yes', '--timeout', '60s'])
    expect(stopped.code, stopped.stderr).toBe(3)
    expect(stopped.stderr).toContain(`\`mesh-migrate plan ${NS} --keep-progress\``)

    // The Next advice, run as printed: refused (exit 1) because create-policies was applied and changes.
    const keep = commandsIn(stopped.stderr).find((c) => c.includes('--keep-progress'))!
    const refused = await run(keep.split(' ').slice(1))
    expect(refused.code, refused.stderr).toBe(1)
    expect(hasStackTrace(refused.stderr)).toBe(false)
    expect(refused.stderr).toContain(
      `step ${idOf('create-policies')} was applied and the new plan changes it (writes AuthorizationPolicy ${NS}/details-no-delete-waypoint differently)`,
    )
    // Nothing was written: the plan file still records the old spec.
    expect(specDigest(await readPlan(cwd, NS))).toBe(specDigest(plan))

    // Its advice, run as printed: roll back the last applied step, then re-plan keeping the rest.
    const [rollbackStep, replan] = commandsIn(refused.stderr)
    expect(rollbackStep).toBe(`mesh-migrate rollback ${PLAN_FILE} --step --confirm ${NS}`)
    expect(replan).toBe(`mesh-migrate plan ${NS} --keep-progress`)
    const undone = await run([...rollbackStep!.split(' ').slice(1), '--timeout', '60s'])
    expect(undone.code, undone.stderr).toBe(0)
    expect(await cluster.api.get(policy('details-no-delete-waypoint'))).toBeUndefined()
    const kept = await run(replan!.split(' ').slice(1))
    expect(kept.code, kept.stderr).toBe(0)
    expect(kept.stderr).toContain(`Kept the record of`)
    expect(kept.stderr).toContain(idOf('create-waypoint'))
    expect(kept.stderr).toMatch(new RegExp(`To apply: ${idOf('create-policies')}, ${idOf('bind-waypoint')}`))
    const now = await phases()
    expect(now[idOf('create-waypoint')]).toBe('Applied')
    expect(now[idOf('create-policies')]).toBeUndefined()
  }, 180_000)

  it('apply continues after the kept steps with the new plan; rollback still removes the waypoint the plan created before the re-plan', async () => {
    // The re-plan's spec differs from the one first applied: without --take-over it is another plan (issue 20 §2).
    const refused = await run(['apply', NS, '--to', idOf('bind-waypoint'), '--yes', '--timeout', '60s'])
    expect(refused.code, refused.stderr).toBe(5)
    expect(refused.stderr).toContain('--take-over')
    const r = await run(['apply', NS, '--to', idOf('bind-waypoint'), '--yes', '--timeout', '60s', '--take-over'])
    expect(r.code, r.stderr).toBe(0)
    // Only the steps not kept ran: create-waypoint was not re-applied.
    expect(r.stdout).not.toContain(`${idOf('create-waypoint')}:`)
    const copy = (await cluster.api.get(policy('details-no-delete-waypoint')))!
    expect(JSON.stringify(copy.spec.rules)).toContain('PUT')
    expect((await cluster.api.get(nsRef))!.metadata.labels?.['istio.io/use-waypoint']).toBe('waypoint')

    const rollback = await run(['rollback', NS, '--confirm', NS, '--timeout', '60s'])
    expect(rollback.code, rollback.stderr).toBe(0)
    expect(await cluster.api.get(waypoint)).toBeUndefined()
    expect(await cluster.api.get(policy('details-no-delete-waypoint'))).toBeUndefined()
    const ns = (await cluster.api.get(nsRef))!
    expect(ns.metadata.labels).not.toHaveProperty('istio.io/use-waypoint')
    expect(ns.metadata.annotations?.[OWNER_ANNOTATION]).toBeUndefined()
    // Fully rolled back: a plain re-plan replaces it.
    const fresh = await run(['plan', NS])
    expect(fresh.code, fresh.stderr).toBe(0)
    expect(await readFile(path.join(cwd, PLAN_FILE), 'utf8')).not.toContain('status:')
  }, 180_000)
})
