// Safety holes of issue 10 (points 9, 11, 13, 14), end to end. Only the Kubernetes API is used to
// arrange and observe (the harness's `api` and `client`), so this runs on the in-repo server and on a
// real kube-apiserver alike:
// - a server dry run of every step gets through all of them and says so on every line (13);
// - an L7 policy edited after create-policies stops apply before bind-waypoint (exit 3), with advice
//   that works for a plan in progress (9, 10);
// - status --detailed-exitcode exits 10 on drift, naming the object and the field (14);
// - a second plan of the namespace is refused (exit 5, naming the owning plan) until the first is
//   fully rolled back (11).
import {readFile} from 'node:fs/promises'
import path from 'node:path'

import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {OWNER_ANNOTATION} from '../../src/executor/ownership.js'
import type {MigrationPlan} from '../../src/planner/plan-types.js'
import {hasStackTrace} from '../support/cli.js'
import {startTestCluster, type TestCluster} from '../support/cluster.js'
import {cli, readPlan, REPO, workdir} from './support.js'

const NS = 'bookinfo'
const FIXTURE = path.join(REPO, 'examples/bookinfo')
const PLAN_FILE = `plans/${NS}.yaml`
const nsRef = {apiVersion: 'v1', kind: 'Namespace', name: NS}
const policy = (name: string) => ({
  apiVersion: 'security.istio.io/v1',
  kind: 'AuthorizationPolicy',
  namespace: NS,
  name,
})

describe('safety ahead of time: dry runs, drift before traffic moves, one plan per namespace', () => {
  let cluster: TestCluster
  let cwd: string
  let kube: string
  let plan: MigrationPlan

  const stepOf = (action: string) => plan.spec.steps.find((s) => s.action === action)!
  const phaseOf = async (action: string, file = NS) =>
    (await readPlan(cwd, file)).status?.steps.find((s) => s.id === stepOf(action).id)?.phase ?? 'Pending'
  const labels = async () => (await cluster.api.get(nsRef))?.metadata.labels ?? {}

  beforeAll(async () => {
    cluster = await startTestCluster({fixture: FIXTURE, quiet: true})
    cwd = await workdir()
    kube = cluster.kubeconfigPath
    const r = await cli(['plan', NS], cwd, kube)
    expect(r.code, r.stderr).toBe(0)
    plan = await readPlan(cwd, NS)
  }, 120_000)

  afterAll(async () => {
    await cluster?.stop()
  }, 60_000)

  it('apply --all --dry-run=server on a fresh plan gets through every step, and every line says it was a server dry run', async () => {
    const before = await readFile(path.join(cwd, PLAN_FILE), 'utf8')
    const labelsBefore = await labels()
    const r = await cli(['apply', NS, '--all', '--dry-run=server'], cwd, kube)
    expect(r.code, r.stderr).toBe(0)
    expect(hasStackTrace(r.stderr)).toBe(false)
    // Both streams: the step outcomes and details are results (stdout), the rest is progress (stderr).
    const lines = `${r.stdout}\n${r.stderr}`.split('\n').filter((l) => l.trim() !== '')
    expect(lines.filter((l) => !l.includes('[server dry run]'))).toEqual([])
    expect(r.stdout).toContain(
      `[server dry run] Step ${plan.spec.steps.length}/${plan.spec.steps.length} ${plan.spec.steps.at(-1)!.id}: `,
    )
    // Every step was reached, the last one included.
    for (const step of plan.spec.steps)
      expect(r.stderr).toContain(`${step.id}: ${step.description.split('\n')[0]!.slice(0, 40)}`)
    // Read-only steps send nothing, so nothing of them is "accepted by the server".
    expect(r.stderr).toMatch(/\[server dry run\] wait-waypoint — read-only, nothing sent/)
    expect(r.stderr).not.toMatch(/wait-waypoint — accepted/)
    expect(r.stderr).toMatch(/\[server dry run\] bind-waypoint — accepted by the server, nothing persisted/)
    // The waypoint exists only as a dry-run object: its readiness is named as not checked, and why.
    expect(r.stdout).toContain(
      `not checked in a dry run: Gateway ${NS}/waypoint ready: it is created by an earlier step of this run, and only istiod can program it`,
    )
    // Nothing persisted, nothing recorded.
    expect(await readFile(path.join(cwd, PLAN_FILE), 'utf8')).toBe(before)
    expect(await labels()).toEqual(labelsBefore)
    expect(
      await cluster.api.get({
        apiVersion: 'gateway.networking.k8s.io/v1',
        kind: 'Gateway',
        namespace: NS,
        name: 'waypoint',
      }),
    ).toBeUndefined()
  }, 120_000)

  it('an L7 policy edited after create-policies stops apply before bind-waypoint (exit 3), naming it and the later step that needs it', async () => {
    const upTo = await cli(['apply', NS, '--to', stepOf('create-policies').id, '--yes', '--timeout', '60s'], cwd, kube)
    expect(upTo.code, upTo.stderr).toBe(0)
    const original = (await cluster.api.get(policy('details-no-delete')))!
    await cluster.api.patch(policy('details-no-delete'), {
      spec: {rules: [{to: [{operation: {methods: ['DELETE', 'PUT']}}]}]},
    })
    try {
      const r = await cli(['apply', NS, '--step', '--yes', '--timeout', '60s'], cwd, kube)
      expect(r.code, r.stderr).toBe(3)
      expect(hasStackTrace(r.stderr)).toBe(false)
      expect(r.stderr).toContain(`apply stops before step ${stepOf('bind-waypoint').id} (nothing was written by it)`)
      expect(r.stderr).toContain(
        `AuthorizationPolicy ${NS}/details-no-delete changed since the plan was made (precondition of step ${stepOf('delete-sidecar-policies').id})`,
      )
      // Advice for a plan in progress: a plain re-plan would be refused, so it names what works.
      expect(r.stderr).toContain(`mesh-migrate rollback ${PLAN_FILE} --confirm ${NS}`)
      expect(r.stderr).toContain(`mesh-migrate plan ${NS} --force`)
      // Traffic did not move: the namespace is not bound, nothing is switched.
      expect(await labels()).not.toHaveProperty('istio.io/use-waypoint')
      expect(await labels()).not.toHaveProperty('istio.io/dataplane-mode')
      expect(await phaseOf('bind-waypoint')).toBe('Pending')
      // A plain re-plan is indeed refused for a plan in progress.
      const replan = await cli(['plan', NS], cwd, kube)
      expect(replan.code).toBe(1)
      expect(replan.stderr).toContain('refusing to overwrite a plan in progress')
    } finally {
      await cluster.api.patch(policy('details-no-delete'), {spec: {rules: original.spec.rules}})
    }
  }, 120_000)

  it('status --detailed-exitcode exits 10 when what an applied step wrote drifted, naming the object and the field', async () => {
    const copy = policy('details-no-delete-waypoint')
    const action = (await cluster.api.get(copy))!.spec.action
    await cluster.api.patch(copy, {spec: {action: 'AUDIT'}})
    try {
      const r = await cli(['status', NS, '--detailed-exitcode', '-o', 'json'], cwd, kube)
      expect(r.code, r.stderr).toBe(10)
      const [result] = (
        JSON.parse(r.stdout) as {
          plans: {drifted: number; state: string; steps: {id: string; drift?: string; driftDetail?: string}[]}[]
        }
      ).plans
      expect(result!.drifted).toBe(1)
      expect(result!.state).toBe('in-progress')
      const row = result!.steps.find((s) => s.id === stepOf('create-policies').id)!
      expect(row.drift).toBe('drifted')
      expect(row.driftDetail).toBe(
        `AuthorizationPolicy ${NS}/details-no-delete-waypoint: field spec.action changed since the step wrote it: ${JSON.stringify(action)} → "AUDIT"`,
      )
    } finally {
      await cluster.api.patch(copy, {spec: {action}})
    }
    const synced = await cli(['status', NS, '-o', 'json'], cwd, kube)
    expect((JSON.parse(synced.stdout) as {plans: {drifted: number}[]}).plans[0]!.drifted).toBe(0)
  }, 60_000)

  it('a second plan of the namespace is refused before any write (exit 5, naming the owner) until the first is fully rolled back', async () => {
    const second = 'plans/second.yaml'
    const made = await cli(['plan', NS, '--out', second, '--waypoint-name', 'waypoint-b'], cwd, kube)
    expect(made.code, made.stderr).toBe(0)
    const owner = JSON.parse((await cluster.api.get(nsRef))!.metadata.annotations![OWNER_ANNOTATION]!) as {plan: string}
    expect(owner.plan).toBe(PLAN_FILE)

    for (const args of [
      ['--step', '--yes'],
      ['--all', '--dry-run=server'],
    ]) {
      const r = await cli(['apply', second, ...args], cwd, kube)
      expect(r.code, r.stderr).toBe(5)
      expect(hasStackTrace(r.stderr)).toBe(false)
      expect(r.stderr).toContain(`namespace ${NS} is being migrated by another plan: ${PLAN_FILE}`)
      expect(r.stderr).toContain(`mesh-migrate rollback ${PLAN_FILE} --confirm ${NS}`)
    }
    expect(await readFile(path.join(cwd, second), 'utf8')).not.toContain('status:')
    expect(
      await cluster.api.get({
        apiVersion: 'gateway.networking.k8s.io/v1',
        kind: 'Gateway',
        namespace: NS,
        name: 'waypoint-b',
      }),
    ).toBeUndefined()
    // The second plan's rollback is refused too (issue 19: the cluster's record is the first plan's, which applied
    // steps): the first plan's objects are untouched.
    const noop = await cli(['rollback', second, '--confirm', NS], cwd, kube)
    expect(noop.code, noop.stderr).toBe(5)
    expect(noop.stderr).toContain(`namespace ${NS} is being migrated by another plan: ${PLAN_FILE}`)
    expect(
      await cluster.api.get({
        apiVersion: 'gateway.networking.k8s.io/v1',
        kind: 'Gateway',
        namespace: NS,
        name: 'waypoint',
      }),
    ).toBeDefined()
    expect(await cluster.api.get(policy('details-no-delete-waypoint'))).toBeDefined()

    // Fully rolled back, the first plan gives the namespace up; the second may then apply.
    const rollback = await cli(['rollback', NS, '--confirm', NS, '--timeout', '60s'], cwd, kube)
    expect(rollback.code, rollback.stderr).toBe(0)
    expect(rollback.stderr).toContain(`namespace ${NS} is free for another plan`)
    expect((await cluster.api.get(nsRef))!.metadata.annotations?.[OWNER_ANNOTATION]).toBeUndefined()
    // The second plan was made while the first plan's objects were there (it took them for the namespace's
    // own): re-made on the namespace as it is now, it may apply.
    const remade = await cli(['plan', NS, '--out', second, '--waypoint-name', 'waypoint-b'], cwd, kube)
    expect(remade.code, remade.stderr).toBe(0)
    const next = await cli(['apply', second, '--step', '--yes', '--timeout', '60s'], cwd, kube)
    expect(next.code, next.stderr).toBe(0)
    // The read-only preflight step writes nothing, so it claims nothing either.
    expect((await cluster.api.get(nsRef))!.metadata.annotations?.[OWNER_ANNOTATION]).toBeUndefined()
  }, 180_000)

  it('stopping inside a hazard window (after restart-workloads) warns which policy is degraded until which step; status shows it', async () => {
    const second = 'plans/second.yaml'
    const restart = stepOf('restart-workloads').id
    const r = await cli(['apply', second, '--to', restart, '--yes', '--timeout', '90s'], cwd, kube)
    expect(r.code, r.stderr).toBe(0)
    // Its first write made it the namespace's owner.
    expect(JSON.parse((await cluster.api.get(nsRef))!.metadata.annotations![OWNER_ANNOTATION]!).plan).toBe(second)
    expect(r.stderr).toContain('Warning: stopped inside 1 hazard window(s); until they close:')
    expect(r.stderr).toMatch(
      new RegExp(
        `  - AuthorizationPolicy/ratings-get-only: AuthorizationPolicy/ratings-get-only is deny-all at ztunnel .* — until step ${stepOf('delete-sidecar-policies').id} is applied`,
      ),
    )
    const status = await cli(['status', second, '-o', 'json'], cwd, kube)
    const [result] = (JSON.parse(status.stdout) as {plans: {openWindows: string[]}[]}).plans
    expect(result!.openWindows).toHaveLength(1)
    expect(result!.openWindows[0]).toContain('AuthorizationPolicy/ratings-get-only')
    // Closed by the next step: no window, no warning.
    const next = await cli(['apply', second, '--step', '--yes', '--timeout', '90s'], cwd, kube)
    expect(next.code, next.stderr).toBe(0)
    expect(next.stderr).not.toContain('hazard window')
    expect(
      (
        JSON.parse((await cli(['status', second, '-o', 'json'], cwd, kube)).stdout) as {
          plans: {openWindows: string[]}[]
        }
      ).plans[0]!.openWindows,
    ).toEqual([])
  }, 240_000)
})
