// Issue 10, `status` on a real kube-apiserver:
// - point 17 (last bullet): restart-workloads is compared with the pods' proxy state it verified — pods
//   that got their sidecar back are drift, named per workload, and `--detailed-exitcode` exits 10;
// - point 14: against another cluster (a second real server, with the same namespace not migrated)
//   status says the plan belongs to another cluster instead of reporting drift.
// Only the Kubernetes API is used to arrange and observe.
import {mkdir, readFile, writeFile} from 'node:fs/promises'
import path from 'node:path'

import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {podProxyState} from '../../src/planner/workloads.js'
import type {MigrationPlan} from '../../src/planner/plan-types.js'
import {hasStackTrace} from '../support/cli.js'
import {type Envtest, runEnvtest, startEnvtest} from '../support/envtest.js'
import {startTestCluster, type TestCluster} from '../support/cluster.js'
import {cli, readPlan, REPO, workdir} from './support.js'

const NS = 'bookinfo'
const FIXTURE = path.join(REPO, 'examples/bookinfo')
const PLAN_FILE = `plans/${NS}.yaml`
const nsRef = {apiVersion: 'v1', kind: 'Namespace', name: NS}

interface StatusJson {
  plans: {
    drifted: number
    pending: number
    otherCluster?: string
    steps: {id: string; drift?: string; driftDetail?: string}[]
  }[]
}

describe('status: restart-workloads drift from the pods, and a plan of another cluster', () => {
  let cluster: TestCluster
  let other: TestCluster
  let otherServer: Envtest | undefined
  let cwd: string
  let plan: MigrationPlan

  const restartId = () => plan.spec.steps.find((s) => s.action === 'restart-workloads')!.id
  const status = async (dir: string, kube: string, extra: string[] = []) => {
    const r = await cli(['status', NS, '-o', 'json', ...extra], dir, kube)
    expect(hasStackTrace(r.stderr)).toBe(false)
    return {code: r.code, stderr: r.stderr, result: (JSON.parse(r.stdout) as StatusJson).plans[0]!}
  }

  beforeAll(async () => {
    // "Another cluster" on the real server is a second real server (two harnesses on one would take turns).
    otherServer = runEnvtest() ? await startEnvtest() : undefined
    ;[cluster, other] = await Promise.all([
      startTestCluster({fixture: FIXTURE, quiet: true}),
      startTestCluster({fixture: FIXTURE, quiet: true, ...(otherServer ? {envtest: otherServer} : {})}),
    ])
    cwd = await workdir()
    const made = await cli(['plan', NS], cwd, cluster.kubeconfigPath)
    expect(made.code, made.stderr).toBe(0)
    plan = await readPlan(cwd, NS)
    const applied = await cli(['apply', NS, '--all', '--yes', '--timeout', '120s'], cwd, cluster.kubeconfigPath)
    expect(applied.code, applied.stderr).toBe(0)
  }, 360_000)

  afterAll(async () => {
    await Promise.all([cluster?.stop(), other?.stop()])
    await otherServer?.stop()
  }, 60_000)

  it('against another cluster (the same namespace, not migrated there): "the plan belongs to another cluster", no drift, exit 0 with --detailed-exitcode', async () => {
    const otherDir = await workdir()
    await mkdir(path.join(otherDir, 'plans'))
    await writeFile(path.join(otherDir, PLAN_FILE), await readFile(path.join(cwd, PLAN_FILE), 'utf8'))
    const target = plan.spec.target as {clusterID: string; context: string; server: string}
    const {code, result} = await status(otherDir, other.kubeconfigPath, ['--detailed-exitcode'])
    expect(code).toBe(0)
    expect(result.otherCluster).toContain(
      `context ${target.context} (${target.server}, kube-system uid ${target.clusterID})`,
    )
    expect(result.drifted).toBe(0)
    expect(result.steps.every((s) => s.drift !== 'drifted')).toBe(true)
    const table = await cli(['status', NS], otherDir, other.kubeconfigPath)
    expect(table.code, table.stderr).toBe(0)
    expect(table.stdout).toContain('the plan belongs to another cluster (no drift check)')
    // The same plan on its own cluster is checked: everything applied, nothing drifted.
    const own = await status(cwd, cluster.kubeconfigPath, ['--detailed-exitcode'])
    expect(own.code, own.stderr).toBe(0)
    expect(own.result.otherCluster).toBeUndefined()
    expect(own.result.steps.find((s) => s.id === restartId())!.drift).toBe('in-sync')
  }, 120_000)

  it('pods with their sidecar back after restart-workloads are drift, naming the workloads and pods; --detailed-exitcode exits 10', async () => {
    // Someone brings sidecars back behind the plan's back: the injection label and a rollout restart.
    await cluster.api.patch(nsRef, {metadata: {labels: {'istio-injection': 'enabled'}}})
    const restarted = plan.spec.steps
      .find((s) => s.id === restartId())!
      .operations.flatMap((op) => (op.op === 'restart' && op.ref.kind === 'Deployment' ? [op.ref] : []))
    expect(restarted.length).toBeGreaterThan(0)
    for (const ref of restarted)
      await cluster.api.patch(ref, {
        spec: {template: {metadata: {annotations: {'kubectl.kubernetes.io/restartedAt': new Date().toISOString()}}}},
      })
    const podsResource = (await cluster.client.resourceFor('v1', 'Pod'))!
    const deadline = Date.now() + 90_000
    let pods = await cluster.client.list(podsResource, {namespace: NS})
    const settled = () =>
      pods
        .filter((p) => !p.metadata.deletionTimestamp && !p.metadata.name.startsWith('waypoint'))
        .every((p) => podProxyState(p) === 'sidecar' || podProxyState(p) === 'sidecar-native')
    while (!settled() && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 1000))
      pods = await cluster.client.list(podsResource, {namespace: NS})
    }
    expect(settled()).toBe(true)

    const {code, result} = await status(cwd, cluster.kubeconfigPath, ['--detailed-exitcode'])
    expect(code).toBe(10)
    const row = result.steps.find((s) => s.id === restartId())!
    expect(row.drift).toBe('drifted')
    for (const ref of restarted)
      expect(row.driftDetail).toMatch(
        new RegExp(
          `Deployment ${NS}/${ref.name}: (\\d+) of \\1 pod\\(s\\) run with a sidecar again \\(the step verified none had one\\): ${ref.name}-`,
        ),
      )
  }, 180_000)
})
