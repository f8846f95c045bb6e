// Running a fleet by waves on the real kube-apiserver (issue 22): examples/fleet (catalog → frontend → pay ⇄ shop,
// a cycle in wave 3). A later wave is refused before an earlier one with nothing written (exit 5, naming the wave,
// the namespace and the edge); `apply --fleet` killed with SIGKILL mid-wave converges when run again; the waves run
// in order (the steps' recorded times: every step of wave N before any of wave N+1; in the cycle, both plans up to
// bind-waypoint before either goes on); every namespace ends ambient; `rollback --fleet` restores every namespace's
// labels and objects exactly.
import {randomBytes} from 'node:crypto'
import {readFile} from 'node:fs/promises'
import path from 'node:path'

import {parse, parseAllDocuments} from 'yaml'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import type {FleetApplyResult, PlanStatus} from '../../src/cli/contract.js'
import type {KubeObject} from '../../src/planner/model.js'
import {refOf} from '../../src/planner/refs.js'
import type {MigrationPlan} from '../../src/planner/plan-types.js'
import {loadManifestFiles} from '../../src/sources/manifests.js'
import {hasStackTrace, runCli} from '../support/cli.js'
import {startTestCluster, type TestCluster, waitForCrds} from '../support/cluster.js'
import {schemaProblems} from '../support/schemas.js'
import {hasShared, REPO_ROOT, upstream} from '../support/shared.js'
import {cli, namespaceState, nextRequestId, readPlan, spawnCli, toolWrites, workdir} from './support.js'

const RUN = randomBytes(3).toString('hex')
const NAMES = ['catalog', 'frontend', 'pay', 'shop'] as const
const N = Object.fromEntries(NAMES.map((n) => [n, `w${RUN}-${n}`])) as Record<(typeof NAMES)[number], string>
const TEAM = `fleet-apply-${RUN}`
const WAVES = [[N.catalog], [N.frontend], [N.pay, N.shop]]

async function fleetFixture(): Promise<KubeObject[]> {
  const {objects} = await loadManifestFiles([path.join(REPO_ROOT, 'examples/fleet')])
  let text = JSON.stringify(objects).replaceAll('fleet-demo', TEAM)
  for (const n of NAMES) text = text.replace(new RegExp(`(?<![\\w-])${n}(?![\\w-])`, 'g'), N[n])
  return JSON.parse(text) as KubeObject[]
}

const times = (plan: MigrationPlan, ids?: string[]) =>
  (plan.status?.steps ?? []).filter((s) => !ids || ids.includes(s.id)).map((s) => Date.parse(s.at))

describe('apply --fleet: waves in order, enforced, resumable, rolled back', () => {
  let cluster: TestCluster
  let cwd: string
  let kube: string
  const before: Record<string, string> = {}

  beforeAll(async () => {
    cluster = await startTestCluster({fixture: await fleetFixture(), quiet: true, recordRequests: true})
    cwd = await workdir()
    kube = cluster.kubeconfigPath
    for (const ns of Object.values(N)) before[ns] = await namespaceState(cluster.client, ns)
    const plan = await cli(
      [
        'plan',
        '-l',
        `team=${TEAM}`,
        '--accept-lost',
        `E11/destination/${N.shop}`,
        '--accept-lost',
        `*/VirtualService/${N.frontend}/shop-timeout`,
      ],
      cwd,
      kube,
    )
    expect(plan.code, plan.stderr).toBe(0)
  }, 180_000)
  afterAll(async () => {
    await cluster?.stop()
  })

  it('refuses a later wave before an earlier one (exit 5), naming the wave, the namespace and the edge; nothing written', async () => {
    const planBefore = await readFile(path.join(cwd, `plans/${N.frontend}.yaml`), 'utf8')
    const from = nextRequestId(cluster.recorder!)
    const r = await cli(['apply', N.frontend, '--all', '--yes'], cwd, kube)
    expect(hasStackTrace(r.stderr)).toBe(false)
    expect(r.code, r.stderr).toBe(5)
    expect(r.stderr).toContain(`${N.frontend} is in wave 2 of plans/fleet.yaml`)
    expect(r.stderr).toContain(`${N.catalog} (wave 1, plans/${N.catalog}.yaml: 0 of`)
    expect(r.stderr).toMatch(new RegExp(`${N.catalog} → ${N.frontend} \\(routing\\): VirtualService ${N.catalog}/`))
    expect(r.stderr).toContain('--ignore-fleet-order')
    expect(toolWrites(cluster.recorder!, from)).toEqual([])
    expect(await readFile(path.join(cwd, `plans/${N.frontend}.yaml`), 'utf8')).toBe(planBefore)
    expect(await namespaceState(cluster.client, N.frontend)).toBe(before[N.frontend])

    // Without a terminal and without --yes, apply --fleet asks nobody: exit 2, before anything is written.
    const noYes = await cli(['apply', '--fleet', '--all'], cwd, kube)
    expect(noYes.code, noYes.stderr).toBe(2)
    expect(noYes.stderr).toContain('pass --yes')
    expect(toolWrites(cluster.recorder!, from)).toEqual([])

    // status --fleet: every plan by wave, nothing applied yet: changes pending (10).
    const status = await cli(['status', '--fleet', '--detailed-exitcode'], cwd, kube)
    expect(status.code, status.stderr).toBe(10)
    expect(status.stdout).toMatch(new RegExp(`^1\\s+${N.catalog}\\s+not-started\\s+0/\\d+\\s+0`, 'm'))
    expect(status.stdout).toMatch(new RegExp(`^3\\s+${N.shop}\\s+not-started`, 'm'))
  }, 120_000)

  it('SIGKILL of apply --fleet mid-wave, then the same command again: it resumes and converges', async () => {
    const run = spawnCli(['apply', '--fleet', '--all', '--yes', '--parallel', '2', '--timeout', '60s'], cwd, kube)
    // Kill it once wave 1 has written (a step of catalog Applied) and before it is done.
    const deadline = Date.now() + 60_000
    for (;;) {
      const steps = (await readPlan(cwd, N.catalog)).status?.steps ?? []
      if (steps.some((s) => s.phase === 'Applied' && s.id !== 'preflight')) break
      if (Date.now() > deadline) throw new Error(`apply --fleet wrote nothing in 60s:\n${run.stderr()}`)
      await new Promise((r) => setTimeout(r, 50))
    }
    run.child.kill('SIGKILL')
    expect((await run.done).signal).toBe('SIGKILL')
    const killed = await readPlan(cwd, N.catalog)
    expect(killed.status!.steps.filter((s) => s.phase === 'Applied').length).toBeLessThan(killed.spec.steps.length)
    expect((await readPlan(cwd, N.frontend)).status).toBeUndefined()

    const again = await cli(
      ['apply', '--fleet', '--all', '--yes', '--parallel', '2', '--timeout', '60s', '-o', 'json'],
      cwd,
      kube,
    )
    expect(again.code, again.stderr).toBe(0)
    expect(schemaProblems(again.stdout, 'FleetApplyResult')).toEqual([])
    // Progress without a terminal: plain lines, each naming its wave and namespace, the step n/m and its state.
    expect(again.stderr).toMatch(new RegExp(`wave 3 ${N.shop}: step \\d+/\\d+ enable-ambient: applied and verified`))
    const result = JSON.parse(again.stdout) as FleetApplyResult
    expect(result.result).toBe('complete')
    expect(result.namespaces.map((n) => `${n.wave} ${n.namespace} ${n.state} ${n.remaining.length}`)).toEqual([
      `1 ${N.catalog} applied 0`,
      `2 ${N.frontend} applied 0`,
      `3 ${N.pay} applied 0`,
      `3 ${N.shop} applied 0`,
    ])
  }, 400_000)

  it('ran wave 1 completely before wave 2 started, and so on (recorded times); the cycle went to bind-waypoint first', async () => {
    const plans = Object.fromEntries(
      await Promise.all(Object.values(N).map(async (ns) => [ns, await readPlan(cwd, ns)] as const)),
    )
    for (const plan of Object.values(plans)) {
      expect(plan.status!.steps.map((s) => s.phase)).toEqual(plan.spec.steps.map(() => 'Applied'))
    }
    for (let w = 0; w + 1 < WAVES.length; w++) {
      const lastOfWave = Math.max(...WAVES[w]!.flatMap((ns) => times(plans[ns]!)))
      const firstOfNext = Math.min(...WAVES[w + 1]!.flatMap((ns) => times(plans[ns]!)))
      expect(lastOfWave, `wave ${w + 1} ended before wave ${w + 2} began`).toBeLessThanOrEqual(firstOfNext)
    }
    // The cycle's protocol: every plan of it up to bind-waypoint, then the rest.
    const upTo = (plan: MigrationPlan) =>
      plan.spec.steps.slice(0, plan.spec.steps.findIndex((s) => s.id === 'bind-waypoint') + 1).map((s) => s.id)
    const after = (plan: MigrationPlan) => plan.spec.steps.map((s) => s.id).filter((id) => !upTo(plan).includes(id))
    const cycle = [plans[N.pay]!, plans[N.shop]!]
    expect(cycle.every((p) => upTo(p).length > 0)).toBe(true)
    expect(Math.max(...cycle.flatMap((p) => times(p, upTo(p))))).toBeLessThanOrEqual(
      Math.min(...cycle.flatMap((p) => times(p, after(p)))),
    )
    for (const ns of Object.values(N)) {
      const labels = (await cluster.client.get({apiVersion: 'v1', kind: 'Namespace', name: ns}))!.metadata.labels
      expect(labels?.['istio.io/dataplane-mode'], ns).toBe('ambient')
    }
    // status --fleet: every plan applied, in sync with the cluster, no lock left: nothing pending (0).
    const status = await cli(['status', '--fleet', '--detailed-exitcode', '-o', 'json'], cwd, kube)
    expect(status.code, status.stderr).toBe(0)
    expect(schemaProblems(status.stdout, 'StatusReport')).toEqual([])
    const report = JSON.parse(status.stdout) as {fleet: string; plans: PlanStatus[]}
    expect(report.fleet).toBe('plans/fleet.yaml')
    expect(report.plans.map((p) => `${p.wave} ${p.namespace} ${p.state} ${p.drifted} ${p.lock ?? '-'}`)).toEqual([
      `1 ${N.catalog} applied 0 -`,
      `2 ${N.frontend} applied 0 -`,
      `3 ${N.pay} applied 0 -`,
      `3 ${N.shop} applied 0 -`,
    ])
  }, 60_000)

  it('rollback of wave 1 alone warns that the later waves still count on it (the mirror image)', async () => {
    const r = await cli(['rollback', N.catalog, '--dry-run=server'], cwd, kube)
    expect(r.code, r.stderr).toBe(0)
    expect(r.stderr).toContain(`depend on ${N.catalog} are still (partly) applied`)
    for (const ns of [N.frontend, N.pay, N.shop]) expect(r.stderr).toContain(`${N.catalog} → ${ns} (routing)`)
  }, 60_000)

  it('rollback --fleet --confirm fleet undoes the waves in reverse: every namespace exactly as before', async () => {
    const r = await cli(['rollback', '--fleet', '--confirm', 'fleet', '--parallel', '2', '-o', 'json'], cwd, kube)
    expect(r.code, r.stderr).toBe(0)
    const result = JSON.parse(r.stdout) as FleetApplyResult
    expect(schemaProblems(r.stdout, 'FleetApplyResult')).toEqual([])
    expect(result.waves).toEqual([3, 2, 1])
    expect(result.namespaces.every((n) => n.state === 'rolled-back')).toBe(true)
    for (const ns of Object.values(N)) expect(await namespaceState(cluster.client, ns), ns).toBe(before[ns])
  }, 400_000)

  it('--ignore-fleet-order applies ahead of the order and records who overrode it', async () => {
    // The fleet is rolled back: wave 1 is pending again. Here the read-only first step of wave 2.
    const ignored = await cli(['apply', N.frontend, '--to', 'preflight', '--yes', '--ignore-fleet-order'], cwd, kube)
    expect(ignored.code, ignored.stderr).toBe(0)
    expect(ignored.stderr).toContain('ahead of the order of plans/fleet.yaml (--ignore-fleet-order')
    const overrides = (await readPlan(cwd, N.frontend)).status?.fleetOrderOverrides ?? []
    expect(overrides).toEqual([
      expect.objectContaining({
        fleet: 'plans/fleet.yaml',
        pending: [expect.stringMatching(new RegExp(`^${N.catalog} \\(wave 1: 0 of \\d+ steps applied\\)$`))],
      }),
    ])
    expect(overrides[0]!.by.length).toBeGreaterThan(0)
    expect((await runCli(['validate', `plans/${N.frontend}.yaml`], {cwd})).code).toBe(0)
  }, 60_000)

  it.skipIf(!hasShared)(
    "show --fleet -o argocd and -o flux: accepted by the server with the engines' CRDs (strict field validation)",
    async () => {
      const files = [
        upstream('crds/argo-cd/applicationset-crd.yaml'),
        upstream('crds/flux/kustomize.toolkit.fluxcd.io_kustomizations.yaml'),
      ]
      const crds = (await loadManifestFiles(files)).objects.filter((o) => o.kind === 'CustomResourceDefinition')
      expect(crds.length).toBe(2)
      for (const crd of crds) if (!(await cluster.api.get(refOf(crd)))) await cluster.api.create(crd)
      await waitForCrds(cluster.api, crds.map(refOf))
      for (const name of ['argocd', 'flux-system'])
        if (!(await cluster.api.get({apiVersion: 'v1', kind: 'Namespace', name})))
          await cluster.api.create({apiVersion: 'v1', kind: 'Namespace', metadata: {name}})

      const argo = await runCli(['show', '--fleet', '-o', 'argocd', '--repo-url', 'https://git.example/platform.git'], {
        cwd,
      })
      expect(argo.code, argo.stderr).toBe(0)
      const [appSet, ...rest] = parseAllDocuments(argo.stdout).map((d) => d.toJS() as KubeObject)
      expect(rest).toEqual([])
      expect(appSet!.spec.strategy.type).toBe('RollingSync')
      expect(
        appSet!.spec.strategy.rollingSync.steps.map(
          (s: {matchExpressions: {values: string[]}[]}) => s.matchExpressions[0]!.values,
        ),
      ).toEqual([['1'], ['2'], ['3']])
      await cluster.api.create(appSet!, {fieldValidation: 'Strict'})

      // Each namespace's overlay: the changes in step order (sync-wave), restarts as a pod-template annotation.
      const overlay = path.join(cwd, 'gitops', N.catalog)
      const kustomization = parse(await readFile(path.join(overlay, 'kustomization.yaml'), 'utf8')) as {
        resources: string[]
        patches: {path: string}[]
      }
      const docs = await Promise.all(
        [...kustomization.resources, ...kustomization.patches.map((p) => p.path)]
          .sort()
          .map(async (f) => parse(await readFile(path.join(overlay, f), 'utf8')) as KubeObject),
      )
      const waves = docs.map((d) => Number(d.metadata.annotations!['argocd.argoproj.io/sync-wave']))
      expect(waves).toEqual([...waves].sort((a, b) => a - b))
      const plan = await readPlan(cwd, N.catalog)
      const position = (action: string) => String(plan.spec.steps.findIndex((s) => s.action === action) + 1)
      expect(docs.find((d) => d.kind === 'Gateway')!.metadata.annotations!['argocd.argoproj.io/sync-wave']).toBe(
        position('create-waypoint'),
      )
      expect(
        docs.find(
          (d) =>
            d.kind === 'Deployment' && d.spec?.template?.metadata?.annotations?.['kubectl.kubernetes.io/restartedAt'],
        )!.metadata.annotations!['argocd.argoproj.io/sync-wave'],
      ).toBe(position('restart-workloads'))

      const flux = await runCli(['show', '--fleet', '-o', 'flux'], {cwd})
      expect(flux.code, flux.stderr).toBe(0)
      const kustomizations = parseAllDocuments(flux.stdout).map((d) => d.toJS() as KubeObject)
      expect(
        kustomizations.map(
          (k) => `${k.metadata.name} <- ${(k.spec.dependsOn ?? []).map((d: {name: string}) => d.name).join(',')}`,
        ),
      ).toEqual([
        `mesh-migrate-${N.catalog} <- `,
        `mesh-migrate-${N.frontend} <- mesh-migrate-${N.catalog}`,
        `mesh-migrate-${N.pay} <- mesh-migrate-${N.frontend}`,
        `mesh-migrate-${N.shop} <- mesh-migrate-${N.frontend}`,
      ])
      expect(kustomizations[0]!.spec.healthChecks).toEqual(
        expect.arrayContaining([
          expect.objectContaining({kind: 'Gateway', namespace: N.catalog}),
          expect.objectContaining({kind: 'Deployment', namespace: N.catalog}),
        ]),
      )
      for (const k of kustomizations) await cluster.api.create(k, {fieldValidation: 'Strict'})

      // Strict validation is on: a field the CRD does not know is refused.
      const wrong = {
        ...kustomizations[0]!,
        metadata: {name: 'mesh-migrate-wrong', namespace: 'flux-system'},
        spec: {...kustomizations[0]!.spec, notAField: true},
      }
      await expect(cluster.api.create(wrong, {fieldValidation: 'Strict'})).rejects.toThrow(/notAField/)
    },
    120_000,
  )

  it('the verification gate Job of docs/gitops.md (image as a parameter) is accepted by the server under strict validation', async () => {
    const doc = await readFile(path.join(REPO_ROOT, 'docs/gitops.md'), 'utf8')
    const gate = doc.slice(doc.indexOf('### The verification gate'))
    const block = /```yaml\n([\s\S]*?)```/.exec(gate)![1]!
    const job = parse(
      block.replaceAll('IMAGE', 'registry.example/mesh-migrate:1').replaceAll('NAMESPACE', N.catalog),
    ) as KubeObject
    expect(job.metadata.annotations!['argocd.argoproj.io/hook']).toBe('PostSync')
    const container = job.spec.template.spec.containers[0]
    // It runs `mesh-migrate status PLAN --by-effect --detailed-exitcode` whatever the image's entrypoint is: judged by
    // what is live, since the engine records nothing (test/e2e/gitops-gate.test.ts runs it after a sync).
    expect([...container.command, ...container.args]).toEqual([
      'mesh-migrate',
      'status',
      `/plans/${N.catalog}.yaml`,
      '--by-effect',
      '--detailed-exitcode',
    ])
    await cluster.api.create({...job, metadata: {...job.metadata, namespace: N.catalog}}, {fieldValidation: 'Strict'})
  }, 60_000)
})
