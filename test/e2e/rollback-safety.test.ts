// Rollback keeps the plan's record true and refuses what would hurt (review findings on the executor):
// an undo that fails or is interrupted is recorded as such (not left looking Applied), apply refuses to
// run a step behind one a half-finished rollback left applied, a dry run writes nothing (not even the
// plan file), and labels someone changed since the step wrote them are left alone.
import {copyFile, readFile} from 'node:fs/promises'
import path from 'node:path'

import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {applyStep, checkRollback, type ExecutionContext, undoStep} from '../../src/executor/engine.js'
import {rollbackSequence} from '../../src/plan/rollback.js'
import {OWNER_ANNOTATION, readOwner} from '../../src/executor/ownership.js'
import {PlanState} from '../../src/executor/plan-state.js'
import type {KubeObject} from '../../src/planner/model.js'
import {
  MANAGED_BY_LABEL,
  MANAGED_BY_VALUE,
  PLAN_ANNOTATION,
  type PlanStep,
  type StepStatus,
} from '../../src/planner/plan-types.js'
import {hasStackTrace} from '../support/cli.js'
import {runEnvtest} from '../support/envtest.js'
import {E2E_KUBECONFIG_ENV, startTestCluster, type TestCluster, USERS} from '../support/cluster.js'
import {
  cli,
  namespaceState,
  nextRequestId,
  observe,
  type Observed,
  readPlan,
  REPO,
  spawnCli,
  toolWrites,
  waitForRequest,
  workdir,
} from './support.js'

const NS = 'payments'
const FIXTURE = path.join(REPO, 'test/e2e/fixtures/l4-only.yaml')
const PLAN_FILE = `plans/${NS}.yaml`
// On the run's real server the fault proxy records the tool's requests (recordRequests); a cluster named by
// MESH_MIGRATE_E2E_KUBECONFIG has neither.
const external = Boolean(process.env[E2E_KUBECONFIG_ENV]) && !runEnvtest()
if (external)
  process.stderr.write(
    `\n[mesh-migrate tests] ${E2E_KUBECONFIG_ENV} is set: skipping the rollback-safety tests (they inject faults into the in-repo test API server).\n`,
  )

describe.skipIf(external)('rollback safety', () => {
  let cluster: TestCluster
  let cwd: string
  let kube: string
  let startState: string
  let start: Observed

  const server = () => cluster.recorder!
  const planPath = () => path.join(cwd, PLAN_FILE)
  const record = async (id: string): Promise<StepStatus | undefined> =>
    (await readPlan(cwd, NS)).status?.steps.find((s) => s.id === id)
  const phases = async () =>
    Object.fromEntries(((await readPlan(cwd, NS)).status?.steps ?? []).map((s) => [s.id, s.phase]))
  const rollback = (extra: string[] = []) =>
    cli(['rollback', NS, '--confirm', NS, '--timeout', '60s', ...extra], cwd, kube)
  const applyAll = async () => {
    const r = await cli(['apply', NS, '--all', '--yes', '--timeout', '60s'], cwd, kube)
    expect(r.code, r.stderr).toBe(0)
    await cluster.waitForIdle()
  }

  beforeAll(async () => {
    cluster = await startTestCluster({fixture: FIXTURE, quiet: true, recordRequests: true})
    cwd = await workdir()
    kube = cluster.kubeconfigPath
    const r = await cli(['plan', NS], cwd, kube)
    expect(r.code, r.stderr).toBe(0)
    startState = await namespaceState(cluster.client, NS)
    start = await observe(cluster.client, NS)
    await applyAll()
  }, 120_000)

  afterAll(async () => {
    await cluster?.stop()
  }, 60_000)

  it('rollback --dry-run=server leaves the plan file byte for byte as it was and writes nothing', async () => {
    const before = await readFile(planPath(), 'utf8')
    const from = nextRequestId(server())
    const r = await rollback(['--dry-run=server'])
    expect(r.code, r.stderr).toBe(0)
    expect(await readFile(planPath(), 'utf8')).toBe(before)
    // Every write the tool sent was a dry run.
    expect(
      toolWrites(server(), from)
        .filter((w) => !w.dryRun)
        .map((w) => `${w.verb} ${w.path}`),
    ).toEqual([])
    expect(toolWrites(server(), from).length).toBeGreaterThan(0)
    expect(Object.values(await phases()).every((p) => p === 'Applied')).toBe(true)
  }, 60_000)

  it('an undo that fails is recorded Failed ("rollback failed: …", re-run rollback), not left looking Applied', async () => {
    const fault = server().faults.add({
      match: {user: USERS.tool, verb: 'patch', kind: 'Namespace'},
      status: 403,
      message: 'namespaces "payments" is forbidden: injected for the test',
      times: 1,
      name: 'forbid-undo',
    })
    let r
    try {
      r = await rollback()
    } finally {
      fault.remove()
    }
    expect(r.code, r.stderr).not.toBe(0)
    expect(hasStackTrace(r.stderr), r.stderr).toBe(false)
    const failed = await record('remove-sidecar-injection')
    expect(failed?.phase).toBe('Failed')
    expect(failed?.message).toMatch(/^rollback failed: .*forbidden/)
    expect(failed?.message).toContain(`mesh-migrate rollback ${PLAN_FILE}`)
    expect((await record('verify-dataplane'))?.phase).toBe('RolledBack')
    // The steps not reached are untouched.
    expect((await record('restart-workloads'))?.phase).toBe('Applied')
    expect((await record('enable-ambient'))?.phase).toBe('Applied')
  }, 60_000)

  it('an undo interrupted by Ctrl+C is recorded Interrupted (rollback finishes it); apply then refuses to run a step behind it', async () => {
    // Hold the first restart of the undo of restart-workloads, and press Ctrl+C while it is in flight.
    const fault = server().faults.add({
      match: {user: USERS.tool, verb: 'patch', kind: 'Deployment'},
      latencyMs: 1000,
      times: 1,
      name: 'hold-undo-restart',
    })
    try {
      const run = spawnCli(['rollback', NS, '--confirm', NS, '--timeout', '60s'], cwd, kube)
      await waitForRequest(
        server(),
        (e) => e.fault === 'hold-undo-restart',
        'held for the undo of restart-workloads',
        60_000,
      )
      run.child.kill('SIGINT')
      const done = await run.done
      expect(done.code, done.stderr).toBe(130)
    } finally {
      fault.remove()
    }
    // The failed step of the previous test was picked up again and finished.
    expect((await record('remove-sidecar-injection'))?.phase).toBe('RolledBack')
    const interrupted = await record('restart-workloads')
    expect(interrupted?.phase).toBe('Interrupted')
    expect(interrupted?.message).toContain('rollback of this step was interrupted')
    expect(interrupted?.message).toContain(`mesh-migrate rollback ${PLAN_FILE}`)
    expect((await record('enable-ambient'))?.phase).toBe('Applied')

    // remove-sidecar-injection is RolledBack, restart-workloads after it may have written: apply must not
    // re-run the former alone.
    const from = nextRequestId(server())
    const apply = await cli(['apply', NS, '--step', '--yes'], cwd, kube)
    expect(apply.code, apply.stderr).toBe(1)
    expect(apply.stderr).toContain('inconsistent')
    expect(apply.stderr).toContain(
      'step remove-sidecar-injection is RolledBack but the later step restart-workloads is Interrupted',
    )
    expect(apply.stderr).toContain(`mesh-migrate rollback ${PLAN_FILE}`)
    expect(toolWrites(server(), from).filter((e) => e.resource !== 'leases')).toEqual([])

    const again = await rollback()
    expect(again.code, again.stderr).toBe(0)
    await cluster.waitForIdle()
    expect(Object.values(await phases()).every((p) => p === 'RolledBack')).toBe(true)
    expect(await namespaceState(cluster.client, NS)).toEqual(startState)
    expect((await observe(cluster.client, NS)).dataPlanes).toEqual(start.dataPlanes)
  }, 120_000)

  it('a label someone changed since the step wrote it is left as it is, with a warning naming the key, its value and what the plan wrote', async () => {
    await applyAll()
    const nsRef = {apiVersion: 'v1', kind: 'Namespace', name: NS}
    // Someone opts the namespace out of ambient after the migration.
    await cluster.api.patch(nsRef, {metadata: {labels: {'istio.io/dataplane-mode': 'none'}}})
    await cluster.waitForIdle()
    const r = await rollback()
    expect(r.code, r.stderr).toBe(0)
    expect(r.stderr).toContain('label istio.io/dataplane-mode is "none", but the plan wrote "ambient"')
    expect(r.stderr).toContain('left as it is')
    const ns = await cluster.api.get(nsRef)
    expect(ns?.metadata.labels?.['istio.io/dataplane-mode']).toBe('none')
    // The labels nobody touched were restored.
    expect(ns?.metadata.labels?.['istio-injection']).toBe('enabled')
    expect(Object.values(await phases()).every((p) => p === 'RolledBack')).toBe(true)
    await cluster.api.patch(nsRef, {metadata: {labels: {'istio.io/dataplane-mode': null}}})
    await cluster.waitForIdle()
    expect(await namespaceState(cluster.client, NS)).toEqual(startState)
  }, 120_000)

  it("undo does not delete an object the step's record shows existed before the step wrote it; one the step created is deleted", async () => {
    // A scratch copy of the plan with one extra step creating an AuthorizationPolicy (the file is the step's record).
    const file = path.join(cwd, 'scratch.yaml')
    await copyFile(planPath(), file)
    const state = await PlanState.load(file)
    const planName = state.plan.metadata.name
    const policy = (name: string, ports: string[]): KubeObject => ({
      apiVersion: 'security.istio.io/v1',
      kind: 'AuthorizationPolicy',
      metadata: {
        name,
        namespace: NS,
        labels: {[MANAGED_BY_LABEL]: MANAGED_BY_VALUE},
        annotations: {[PLAN_ANNOTATION]: planName},
      },
      spec: {selector: {matchLabels: {app: 'ledger'}}, action: 'ALLOW', rules: [{to: [{operation: {ports}}]}]},
    })
    const createStep = (id: string, object: KubeObject): PlanStep => {
      const ref = {apiVersion: object.apiVersion, kind: object.kind, namespace: NS, name: object.metadata.name}
      const step: PlanStep = {
        id,
        action: 'create-policies',
        description: id,
        preconditions: [],
        operations: [{op: 'apply', object}],
        verify: [],
        undo: {description: 'delete it', operations: [{op: 'delete', ref, object}]},
      }
      state.plan.spec.steps.push(step)
      return step
    }
    const warnings: string[] = []
    const ctx: ExecutionContext = {
      client: cluster.client,
      state,
      who: 'test',
      dryRun: false,
      timeoutMs: 30_000,
      signal: new AbortController().signal,
    }

    // Both steps are in the scratch plan before its first write: its identity is its spec's digest (issue 20 §2).
    const existing = createStep('scratch-existing', policy('scratch-existing', ['7000']))
    const created = createStep('scratch-created', policy('scratch-created', ['7000']))
    // Existed before (an earlier version of it, still marked as this plan's): the step overwrites it.
    await cluster.api.create(policy('scratch-existing', ['7001']))
    await applyStep(ctx, existing)
    expect(state.status(existing.id)?.observed?.before).toEqual({
      'security.istio.io/AuthorizationPolicy/payments/scratch-existing': {existed: true},
    })
    await undoStep(ctx, existing, (m) => warnings.push(m))
    expect(
      await cluster.api.get({
        apiVersion: 'security.istio.io/v1',
        kind: 'AuthorizationPolicy',
        namespace: NS,
        name: 'scratch-existing',
      }),
    ).toBeDefined()
    expect(warnings.join('\n')).toContain(
      `AuthorizationPolicy ${NS}/scratch-existing existed before step scratch-existing wrote it: left in place`,
    )
    expect(state.status(existing.id)?.phase).toBe('RolledBack')

    // Created by the step: deleted.
    await applyStep(ctx, created)
    await undoStep(ctx, created, (m) => warnings.push(m))
    expect(
      await cluster.api.get({
        apiVersion: 'security.istio.io/v1',
        kind: 'AuthorizationPolicy',
        namespace: NS,
        name: 'scratch-created',
      }),
    ).toBeUndefined()
    await cluster.api.delete({
      apiVersion: 'security.istio.io/v1',
      kind: 'AuthorizationPolicy',
      namespace: NS,
      name: 'scratch-existing',
    })
    // The scratch plan (another spec than plans/payments.yaml) claimed the namespace with its first write; its steps
    // were undone one by one here, not by `rollback`, which would release the claim: release it as rollback would.
    expect(readOwner(await cluster.api.get(nsRef))?.plan).toBe(file)
    await cluster.api.patch(nsRef, {metadata: {annotations: {[OWNER_ANNOTATION]: null}}})
  }, 60_000)

  /** A Deployment created after the migration: its pods have no sidecar and are captured by ztunnel. */
  const newDeployment = (name: string, templateLabels: Record<string, string> = {}): KubeObject => ({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {name, namespace: NS},
    spec: {
      replicas: 1,
      selector: {matchLabels: {app: name}},
      template: {
        metadata: {labels: {app: name, ...templateLabels}},
        spec: {serviceAccountName: 'api', containers: [{name, image: `example/${name}:1`}]},
      },
    },
  })
  const deploymentRef = (name: string) => ({apiVersion: 'apps/v1', kind: 'Deployment', namespace: NS, name})
  const nsRef = {apiVersion: 'v1', kind: 'Namespace', name: NS}

  it('rollback refuses (exit 3, before any write) to remove istio.io/dataplane-mode while pods that were not sidecar-less before the plan would fall out of the mesh', async () => {
    await applyAll()
    await cluster.api.create(newDeployment('newapp'))
    await cluster.waitForIdle()
    expect((await observe(cluster.client, NS)).dataPlanes['Deployment/newapp']).toBe('ambient')

    const before = await readFile(planPath(), 'utf8')
    const from = nextRequestId(server())
    const r = await rollback()
    expect(r.code, r.stderr).toBe(3)
    expect(hasStackTrace(r.stderr), r.stderr).toBe(false)
    expect(r.stderr).toContain(
      `removing istio.io/dataplane-mode from namespace ${NS} would take running pods out of the mesh`,
    )
    expect(r.stderr).toContain(`Deployment ${NS}/newapp: pod(s) newapp-`)
    expect(r.stderr).toContain(`kubectl label namespace ${NS} istio-injection=enabled`)
    expect(r.stderr).toContain(`kubectl rollout restart -n ${NS} deployment/newapp`)
    // The workloads of the plan were restarted by it and get their sidecars back in the rollback: not named.
    expect(r.stderr).not.toContain('Deployment payments/ledger')
    expect(
      toolWrites(server(), from)
        .filter((e) => e.resource !== 'leases')
        .map((e) => `${e.verb} ${e.path}`),
    ).toEqual([])
    expect(await readFile(planPath(), 'utf8')).toBe(before)

    // Doing what it says: the injection label back, newapp restarted with a sidecar; rollback then finishes.
    await cluster.api.patch(nsRef, {metadata: {labels: {'istio-injection': 'enabled'}}})
    await cluster.api.patch(deploymentRef('newapp'), {
      spec: {template: {metadata: {annotations: {'kubectl.kubernetes.io/restartedAt': new Date().toISOString()}}}},
    })
    await cluster.waitForIdle()
    expect((await observe(cluster.client, NS)).dataPlanes['Deployment/newapp']).toBe('sidecar')
    const again = await rollback()
    expect(again.code, again.stderr).toBe(0)
    expect(Object.values(await phases()).every((p) => p === 'RolledBack')).toBe(true)
    await cluster.api.delete(deploymentRef('newapp'))
    await cluster.waitForIdle()
    expect(await namespaceState(cluster.client, NS)).toEqual(startState)
  }, 180_000)

  it('the undo of enable-ambient checks again right before the label write: a sidecar-less pod that appeared during the rollback stops it (exit 3, recorded Failed)', async () => {
    await applyAll()
    const state = await PlanState.load(planPath())
    const ctx: ExecutionContext = {
      client: cluster.client,
      state,
      who: 'test',
      dryRun: false,
      timeoutMs: 60_000,
      signal: new AbortController().signal,
    }
    const warn = () => undefined
    const {steps} = rollbackSequence(state.plan)
    await checkRollback(ctx, steps, warn)
    const index = steps.findIndex((s) => s.action === 'enable-ambient')
    for (const step of steps.slice(0, index)) await undoStep(ctx, step, warn)
    // While the rollback restarts the workloads, someone deploys a workload opted out of injection.
    await cluster.api.create(newDeployment('optout', {'sidecar.istio.io/inject': 'false'}))
    await cluster.waitForIdle()
    expect((await observe(cluster.client, NS)).dataPlanes['Deployment/optout']).toBe('ambient')

    const enableAmbient = steps[index]!
    await expect(undoStep(ctx, enableAmbient, warn)).rejects.toMatchObject({
      exitCode: 3,
      message: expect.stringContaining(`Deployment ${NS}/optout: pod(s) optout-`),
    })
    expect((await cluster.api.get(nsRef))?.metadata.labels?.['istio.io/dataplane-mode']).toBe('ambient')
    const failed = await record(enableAmbient.id)
    expect(failed?.phase).toBe('Failed')
    expect(failed?.message).toMatch(/^rollback failed: removing istio.io\/dataplane-mode/)

    await cluster.api.delete(deploymentRef('optout'))
    await cluster.waitForIdle()
    const finish = await rollback()
    expect(finish.code, finish.stderr).toBe(0)
    await cluster.waitForIdle()
    expect(Object.values(await phases()).every((p) => p === 'RolledBack')).toBe(true)
    expect(await namespaceState(cluster.client, NS)).toEqual(startState)
    expect((await observe(cluster.client, NS)).dataPlanes).toEqual(start.dataPlanes)

    // status: rolled-back steps are not compared with the cluster (their effects are gone on purpose).
    const status = await cli(['status', NS, '-o', 'json'], cwd, kube)
    expect(status.code, status.stderr).toBe(0)
    const [report] = (JSON.parse(status.stdout) as {plans: {steps: {id: string; phase: string; drift?: string}[]}[]})
      .plans
    expect(report!.steps.filter((s) => s.phase === 'RolledBack').map((s) => s.drift)).toEqual(
      report!.steps.map(() => 'n/a'),
    )
  }, 180_000)
})
