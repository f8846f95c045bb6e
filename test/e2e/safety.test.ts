// Refusals before any write (issue 4 "Done when", SPEC §7 "Safety model"): a stale plan (the cluster
// changed since it was made) exits 3, a plan edited after its first apply exits 4 listing every
// problem, a plan applied to another cluster exits 3 naming both, a lock held by another operator exits
// 5 naming them, and a command that would have to ask with nobody to answer exits 2. Each refusal is
// checked in the request log: the tool (user USERS.tool) wrote nothing to the namespace's objects — at
// most it took and released its own Lease, which is how it makes sure the state it judged is not being
// changed by another operator — and nothing at all when the refusal needs no cluster.
import {mkdir, readFile, writeFile} from 'node:fs/promises'
import path from 'node:path'

import {stringify} from 'yaml'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {LOCK_INFO_ANNOTATION, lockRef} from '../../src/executor/lock.js'
import type {KubeObject} from '../../src/planner/model.js'
import type {MigrationPlan} from '../../src/planner/plan-types.js'
import type {RequestLogEntry} from '../support/apiserver/index.js'
import {hasStackTrace, runCli} from '../support/cli.js'
import {type Envtest, runEnvtest, startEnvtest} from '../support/envtest.js'
import {E2E_KUBECONFIG_ENV, startTestCluster, type TestCluster, USERS} from '../support/cluster.js'
import {cli, nextRequestId, readPlan, REPO, toolWrites, workdir} from './support.js'
import {planOf} from '../support/plan-file.js'

const NS = 'bookinfo'
const FIXTURE = path.join(REPO, 'examples/bookinfo')
const PLAN_FILE = `plans/${NS}.yaml`
// On the run's real server the fault proxy records the tool's requests (recordRequests); a cluster named by
// MESH_MIGRATE_E2E_KUBECONFIG has neither.
const external = Boolean(process.env[E2E_KUBECONFIG_ENV]) && !runEnvtest()
if (external)
  process.stderr.write(
    `\n[mesh-migrate tests] ${E2E_KUBECONFIG_ENV} is set: skipping the refusal tests (they read the in-repo test API server's request log).\n`,
  )

const nsRef = {apiVersion: 'v1', kind: 'Namespace', name: NS}
const isLockLease = (e: RequestLogEntry) =>
  e.group === 'coordination.k8s.io' &&
  e.resource === 'leases' &&
  (e.name === undefined || e.name === 'mesh-migrate-lock')
/** Kubernetes MicroTime. */
const microTime = (date: Date) => date.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z')

describe.skipIf(external)('refusals before any write', () => {
  let cluster: TestCluster
  let otherServer: Envtest | undefined
  /** Another cluster with the same namespace: the plan was not made for it. */
  let other: TestCluster
  let cwd: string
  let kube: string
  let plan: MigrationPlan
  let plannedText: string

  const server = () => cluster.recorder!
  const stepOf = (action: string) => plan.spec.steps.find((s) => s.action === action)!
  const phaseOf = async (action: string) =>
    (await readPlan(cwd, NS)).status?.steps.find((s) => s.id === stepOf(action).id)?.phase ?? 'Pending'
  /** Everything the tool sent from `from` on, on a cluster. */
  const toolRequests = (c: TestCluster, from: number) =>
    c.recorder!.requestsMatching({user: USERS.tool}).filter((e) => e.id >= from)
  /** Writes the tool sent from `from` on, other than taking and releasing its own lock. */
  const objectWrites = (from: number) =>
    toolWrites(server(), from)
      .filter((e) => !isLockLease(e))
      .map((e) => `${e.verb} ${e.path}`)
  const applyNext = (extra: string[] = []) =>
    cli(['apply', NS, '--step', '--yes', '--timeout', '60s', ...extra], cwd, kube)

  /** A refusal: the exit code, no stack trace, the plan file untouched by it, no write to the namespace's objects. */
  async function expectRefused(
    run: () => Promise<{code: number | null; stderr: string}>,
    code: number,
    opts: {noRequests?: boolean; file?: string} = {},
  ): Promise<string> {
    const file = opts.file ?? path.join(cwd, PLAN_FILE)
    const before = await readFile(file, 'utf8')
    const from = nextRequestId(server())
    const r = await run()
    expect(r.code, r.stderr).toBe(code)
    expect(hasStackTrace(r.stderr), r.stderr).toBe(false)
    expect(objectWrites(from)).toEqual([])
    if (opts.noRequests) expect(toolRequests(cluster, from).map((e) => `${e.verb} ${e.path}`)).toEqual([])
    const after = await readFile(file, 'utf8')
    // begin() may record the reviewed digest before the first write; the steps' records never change.
    expect(planOf(after).status?.steps ?? []).toEqual(planOf(before).status?.steps ?? [])
    return r.stderr
  }

  beforeAll(async () => {
    // "Another cluster" on the real server is a second real server (two harnesses on one would take turns).
    otherServer = runEnvtest() ? await startEnvtest() : undefined
    ;[cluster, other] = await Promise.all([
      startTestCluster({fixture: FIXTURE, quiet: true, recordRequests: true}),
      startTestCluster({
        fixture: FIXTURE,
        quiet: true,
        recordRequests: true,
        ...(otherServer ? {envtest: otherServer} : {}),
      }),
    ])
    cwd = await workdir()
    kube = cluster.kubeconfigPath
    const r = await cli(['plan', NS], cwd, kube)
    expect(r.code, r.stderr).toBe(0)
    plan = await readPlan(cwd, NS)
    plannedText = await readFile(path.join(cwd, PLAN_FILE), 'utf8')
  }, 120_000)

  afterAll(async () => {
    await Promise.all([cluster?.stop(), other?.stop()])
    await otherServer?.stop()
  }, 60_000)

  it('apply without --yes where nobody can answer (CI=true) exits 2 naming --yes, before touching the cluster', async () => {
    const stderr = await expectRefused(() => cli(['apply', NS, '--step'], cwd, kube), 2, {noRequests: true})
    expect(stderr).toContain('CI is set')
    expect(stderr).toContain('--yes')
  })

  it('stale plan: istio-injection removed by someone else after plan — preflight exits 3 naming the label and saying to re-plan', async () => {
    await cluster.api.patch(nsRef, {metadata: {labels: {'istio-injection': null}}})
    try {
      const stderr = await expectRefused(() => applyNext(), 3)
      expect(stderr).toContain(`step ${stepOf('preflight').id} would act on a different state`)
      expect(stderr).toContain('namespace label istio-injection is absent, the plan expected "enabled"')
      expect(stderr).toContain('Re-run `mesh-migrate plan')
    } finally {
      await cluster.api.patch(nsRef, {metadata: {labels: {'istio-injection': 'enabled'}}})
    }
    expect(await phaseOf('preflight')).toBe('Pending')
    expect(await cluster.api.get(lockRef(NS))).toBeUndefined()
  })

  it('wrong cluster: the plan applied with the kubeconfig of another cluster exits 3 naming both; --allow-other-cluster proceeds', async () => {
    const otherDir = await workdir()
    await mkdir(path.join(otherDir, 'plans'))
    const copy = path.join(otherDir, PLAN_FILE)
    await writeFile(copy, plannedText)
    const target = plan.spec.target as {clusterID: string; context: string; server: string}
    const from = nextRequestId(other.recorder!)
    const r = await cli(['apply', NS, '--step', '--yes'], otherDir, other.kubeconfigPath)
    expect(r.code, r.stderr).toBe(3)
    expect(hasStackTrace(r.stderr)).toBe(false)
    expect(r.stderr).toContain('the plan was made for another cluster')
    // Both contexts, with what tells them apart (server and kube-system uid).
    expect(r.stderr).toContain(`context ${target.context} (${target.server}, kube-system uid ${target.clusterID})`)
    expect(r.stderr).toContain(`the current context ${other.client.context} is ${other.client.server}`)
    expect(target.server).not.toBe(other.client.server)
    expect(r.stderr).toContain('--context')
    expect(r.stderr).toContain('re-plan')
    expect(r.stderr).toContain('--allow-other-cluster')
    expect(toolWrites(other.recorder!, from)).toEqual([])
    expect(await readFile(copy, 'utf8')).toBe(plannedText)

    const allowed = await cli(
      ['apply', NS, '--step', '--yes', '--allow-other-cluster', '--timeout', '60s'],
      otherDir,
      other.kubeconfigPath,
    )
    expect(allowed.code, allowed.stderr).toBe(0)
    expect(allowed.stderr).toContain('Proceeding because of --allow-other-cluster')
    expect((await readPlan(otherDir, NS)).status?.steps.find((s) => s.id === stepOf('preflight').id)?.phase).toBe(
      'Applied',
    )
  }, 60_000)

  it('tampered plan: a spec edited after the first apply exits 4 listing every problem; an unknown field likewise', async () => {
    const first = await applyNext()
    expect(first.code, first.stderr).toBe(0)
    const applied = planOf(await readFile(path.join(cwd, PLAN_FILE), 'utf8'))

    // Another namespace added to an operation, and a label value changed.
    const edited = structuredClone(applied)
    const bind = edited.spec.steps.find((s) => s.action === 'bind-waypoint')!
    const label = bind.operations[0]!
    if (label.op === 'label') label.labels['istio.io/use-waypoint'] = 'attacker-waypoint'
    bind.operations.push({
      op: 'label',
      ref: {apiVersion: 'v1', kind: 'Namespace', name: 'default'},
      labels: {'istio-injection': null},
    })
    const editedFile = path.join(cwd, 'tampered-spec.yaml')
    await writeFile(editedFile, stringify(edited))
    const stderr = await expectRefused(() => cli(['apply', editedFile, '--step', '--yes'], cwd, kube), 4, {
      noRequests: true,
      file: editedFile,
    })
    const index = edited.spec.steps.indexOf(bind)
    expect(stderr).toContain('is not a valid plan (3 problems)')
    expect(stderr).toContain(
      `spec.steps[${index}].operations[1]: writes to Namespace "default", outside the plan's namespace "${NS}"`,
    )
    expect(stderr).toContain(`spec.steps[${index}].operations[1]: this step may not change label "istio-injection"`)
    expect(stderr).toContain('spec: spec was edited after the first apply')
    expect(stderr).toContain('regenerate it with `mesh-migrate plan NAMESPACE`')

    // A field the schema does not know.
    const unknown = structuredClone(applied) as unknown as {spec: {steps: Record<string, unknown>[]}}
    unknown.spec.steps[1]!.runAsRoot = true
    const unknownFile = path.join(cwd, 'tampered-field.yaml')
    await writeFile(unknownFile, stringify(unknown))
    const schemaErr = await expectRefused(() => cli(['apply', unknownFile, '--step', '--yes'], cwd, kube), 4, {
      noRequests: true,
      file: unknownFile,
    })
    expect(schemaErr).toContain('runAsRoot')
    expect(schemaErr).toContain('spec.steps[1]')

    // validate, the pull-request gate, says the same of both files.
    const validate = await runCli(['validate', editedFile, unknownFile], {cwd})
    expect(validate.code, validate.stderr).toBe(4)
    expect(validate.stderr).toContain(`${editedFile}: spec: spec was edited after the first apply`)
    expect(validate.stderr).toContain('runAsRoot')
  }, 60_000)

  it('rollback without --confirm (no terminal) exits 2 naming --confirm NS; --confirm with another namespace exits 2', async () => {
    const noConfirm = await expectRefused(() => cli(['rollback', NS], cwd, kube), 2, {noRequests: true})
    expect(noConfirm).toContain(`--confirm ${NS}`)
    const wrong = await expectRefused(() => cli(['rollback', NS, '--confirm', 'default'], cwd, kube), 2, {
      noRequests: true,
    })
    expect(wrong).toContain(`--confirm default does not match the plan's namespace ${NS}`)
    expect(wrong).toContain(`--confirm ${NS}`)
  })

  it('stale plan: a policy the plan carries and deletes edited, then deleted, by someone else — create-policies exits 3 naming it', async () => {
    const upTo = await cli(['apply', NS, '--to', stepOf('wait-waypoint').id, '--yes', '--timeout', '60s'], cwd, kube)
    expect(upTo.code, upTo.stderr).toBe(0)
    const policy = {
      apiVersion: 'security.istio.io/v1',
      kind: 'AuthorizationPolicy',
      namespace: NS,
      name: 'details-no-delete',
    }
    const original = (await cluster.api.get(policy))!
    await cluster.api.patch(policy, {spec: {rules: [{to: [{operation: {methods: ['DELETE', 'PUT']}}]}]}})
    const edited = await expectRefused(() => applyNext(), 3)
    expect(edited).toContain(`step ${stepOf('create-policies').id} would act on a different state`)
    expect(edited).toContain(`AuthorizationPolicy ${NS}/details-no-delete changed since the plan was made`)
    expect(edited).toContain(`mesh-migrate rollback ${PLAN_FILE} --confirm ${NS}`)
    await cluster.api.patch(policy, {spec: {rules: original.spec.rules}})

    const ratings = {...policy, name: 'ratings-get-only'}
    const ratingsObject = (await cluster.api.get(ratings))!
    await cluster.api.delete(ratings)
    const deleted = await expectRefused(() => applyNext(), 3)
    expect(deleted).toContain(`AuthorizationPolicy ${NS}/ratings-get-only no longer exists`)
    expect(await phaseOf('create-policies')).toBe('Pending')

    // Put back as it was, the plan is current again.
    const {metadata, ...content} = ratingsObject
    await cluster.api.create({
      ...content,
      metadata: {name: metadata.name, namespace: NS, ...(metadata.labels ? {labels: metadata.labels} : {})},
    } as KubeObject)
    const resumed = await applyNext()
    expect(resumed.code, resumed.stderr).toBe(0)
  }, 60_000)

  it('held lock: a Lease renewed by another operator exits 5 naming them; --lock-timeout waits, then exits 5; an expired Lease is taken over', async () => {
    const info = {
      holder: 'alice@jumphost/4242/abc123',
      who: 'alice@jumphost',
      command: `apply ${PLAN_FILE}`,
      plan: PLAN_FILE,
      startedAt: new Date().toISOString(),
    }
    const lease = (renewed: Date): KubeObject => ({
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: {name: 'mesh-migrate-lock', namespace: NS, annotations: {[LOCK_INFO_ANNOTATION]: JSON.stringify(info)}},
      spec: {
        holderIdentity: info.holder,
        leaseDurationSeconds: 60,
        acquireTime: microTime(renewed),
        renewTime: microTime(renewed),
      },
    })
    await cluster.api.create(lease(new Date()))

    const held = await expectRefused(() => applyNext(), 5)
    expect(held).toContain(
      `namespace ${NS} is locked by alice@jumphost process 4242 (apply ${PLAN_FILE}, since ${info.startedAt})`,
    )
    expect(held).toContain(`mesh-migrate unlock ${NS}`)
    const waited = await expectRefused(() => applyNext(['--lock-timeout', '2s']), 5)
    expect(waited).toContain(
      `Namespace ${NS} is locked by alice@jumphost process 4242 (apply ${PLAN_FILE}, since ${info.startedAt}); waiting up to 2s`,
    )
    expect(waited).toContain(`namespace ${NS} is locked by alice@jumphost`)
    expect((await cluster.api.get(lockRef(NS)))?.spec?.holderIdentity).toBe(info.holder)

    // Alice's apply died two minutes ago: its lease ran out.
    const twoMinutesAgo = new Date(Date.now() - 120_000)
    await cluster.api.patch(lockRef(NS), {
      spec: {acquireTime: microTime(twoMinutesAgo), renewTime: microTime(twoMinutesAgo)},
    })
    const takeover = await applyNext()
    expect(takeover.code, takeover.stderr).toBe(0)
    expect(takeover.stderr).toContain(
      `Taking over an expired lock left by alice@jumphost process 4242 (apply ${PLAN_FILE}, since ${info.startedAt})`,
    )
    expect(await phaseOf('bind-waypoint')).toBe('Applied')
    expect(await cluster.api.get(lockRef(NS))).toBeUndefined()
  }, 60_000)

  it('stale plan: istio.io/dataplane-mode=none set by someone else — enable-ambient exits 3 naming the label', async () => {
    await cluster.api.patch(nsRef, {metadata: {labels: {'istio.io/dataplane-mode': 'none'}}})
    const stderr = await expectRefused(() => applyNext(), 3)
    expect(stderr).toContain(`step ${stepOf('enable-ambient').id} would act on a different state`)
    expect(stderr).toContain('namespace label istio.io/dataplane-mode is "none", the plan expected it absent')
    // The plan is in progress: a plain re-plan would be refused, so the advice is rollback (or plan --force).
    expect(stderr).toContain(`mesh-migrate rollback ${PLAN_FILE} --confirm ${NS}`)
    expect(stderr).toContain(`mesh-migrate plan ${NS} --force`)
    expect((await cluster.api.get(nsRef))?.metadata.labels?.['istio.io/dataplane-mode']).toBe('none')
    expect(await phaseOf('enable-ambient')).toBe('Pending')
  })
})
