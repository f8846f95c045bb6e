// Issue 9 item 6: `npm run control-plane -- --kubeconfig F --install` works against a bare
// kube-apiserver (envtest: no controllers) that has the Istio and Gateway API CRDs, and `plan` →
// `apply --all --yes` → `rollback --confirm bookinfo` of examples/bookinfo (header routing, L7
// policies) ends with the namespace exactly as before: same labels, same objects.
//
// The test starts its own bare server (startEnvtest): the script installs cluster-wide objects
// (istio-system, Nodes, webhooks, GatewayClasses) that nothing removes, which must not leak into the
// run's shared server.
import {type ChildProcess, spawn} from 'node:child_process'
import {mkdtemp, rm} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {connect} from '../../src/kube/http-client.js'
import type {KubeClient} from '../../src/kube/types.js'
import {loadManifestFiles} from '../../src/sources/manifests.js'
import {hasStackTrace} from '../support/cli.js'
import {ensureCrds} from '../support/cluster.js'
import {clusterApiFromKubeconfigText, type ClusterApi} from '../support/control-plane/index.js'
import {type Envtest, envtestAssets, startEnvtest} from '../support/envtest.js'
import {hasShared} from '../support/shared.js'
import {cli, namespaceState, observe, readPlan, REPO, workdir} from './support.js'

const assets = await envtestAssets().catch(() => undefined)
const runnable = assets !== undefined && hasShared
if (!runnable)
  process.stderr.write(
    `\n[mesh-migrate tests] skipping the control-plane script round trip: it needs a kube-apiserver (KUBEBUILDER_ASSETS) and ../shared (the CRDs).\n`,
  )

const NS = 'bookinfo'

async function untilTrue(what: string, check: () => Promise<boolean>, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${timeoutMs / 1000}s`)
    await new Promise((r) => setTimeout(r, 250))
  }
}

/** Every Deployment of the namespace rolled out and available (what `kubectl rollout status` waits for). */
async function rolledOut(client: KubeClient): Promise<boolean> {
  const res = await client.resourceFor('apps/v1', 'Deployment')
  const deployments = await client.list(res!, {namespace: NS})
  return (
    deployments.length > 0 &&
    deployments.every((d) => {
      const want = d.spec?.replicas ?? 1
      return (
        d.status?.observedGeneration === d.metadata.generation &&
        d.status?.updatedReplicas === want &&
        d.status?.availableReplicas === want &&
        (d.status?.replicas ?? 0) === want
      )
    })
  )
}

describe.runIf(runnable)('npm run control-plane -- --install against a bare kube-apiserver', () => {
  let env: Envtest
  let dir: string
  let kubeconfig: string
  let script: ChildProcess
  let scriptLog = ''
  let harness: ClusterApi
  let client: KubeClient
  let cwd: string

  beforeAll(async () => {
    env = await startEnvtest({assets: assets!})
    dir = await mkdtemp(path.join(os.tmpdir(), 'mesh-migrate-cp-script-'))
    kubeconfig = path.join(dir, 'kubeconfig')
    await env.writeKubeconfig(kubeconfig, 'admin')
    harness = await clusterApiFromKubeconfigText(env.kubeconfig('harness'), {
      userAgent: 'mesh-migrate-test-harness',
      fieldManager: 'mesh-migrate-test-harness',
    })
    await ensureCrds(harness)
    script = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        path.join(REPO, 'scripts/control-plane.ts'),
        '--kubeconfig',
        kubeconfig,
        '--install',
        '--pod-startup-ms',
        '20',
        '--waypoint-ready-ms',
        '100',
      ],
      {cwd: REPO, stdio: ['ignore', 'ignore', 'pipe']},
    )
    script.stderr!.on('data', (d: Buffer) => (scriptLog += d.toString()))
    await untilTrue(
      'the control plane script to start',
      async () => {
        if (script.exitCode !== null)
          throw new Error(`the control plane script exited (${script.exitCode}):\n${scriptLog}`)
        return scriptLog.includes('fake control plane running')
      },
      60_000,
    )
    // The workloads arrive as from `kubectl apply -f examples/bookinfo`: Namespace first.
    const {objects} = await loadManifestFiles([path.join(REPO, 'examples/bookinfo')])
    objects.sort((a, b) => Number(b.kind === 'Namespace') - Number(a.kind === 'Namespace'))
    for (const o of objects) await harness.create(o)
    client = await connect({kubeconfig, env: {}})
    await untilTrue('bookinfo to roll out', () => rolledOut(client))
    cwd = await workdir()
  }, 180_000)

  afterAll(async () => {
    if (script && script.exitCode === null) script.kill('SIGTERM')
    await env?.stop()
    if (dir) await rm(dir, {recursive: true, force: true})
  })

  it('installs, then plan → apply --all → rollback returns the namespace to its exact labels and objects', async () => {
    expect(scriptLog).toMatch(/control-plane fixture: \d+ object\(s\) created/)
    const before = await namespaceState(client, NS)
    const start = await observe(client, NS)
    expect(Object.values(start.dataPlanes).every((dp) => dp === 'sidecar')).toBe(true)

    const plan = await cli(['plan', NS], cwd, kubeconfig)
    expect(plan.code, plan.stderr).toBe(0)
    const planned = await readPlan(cwd, NS)
    expect(planned.spec.blockers).toEqual([])
    expect(planned.spec.summary.waypointRequired).toBe(true)

    const apply = await cli(['apply', NS, '--all', '--yes', '--timeout', '120s'], cwd, kubeconfig)
    expect(hasStackTrace(apply.stderr), apply.stderr).toBe(false)
    expect(apply.code, `${apply.stderr}\n--- control plane:\n${scriptLog}`).toBe(0)
    const migrated = await observe(client, NS)
    expect(migrated.labels['istio.io/dataplane-mode']).toBe('ambient')
    expect(migrated.waypointReady).toBe(true)
    expect(Object.values(migrated.dataPlanes).every((dp) => dp === 'ambient')).toBe(true)
    expect(await namespaceState(client, NS)).not.toEqual(before)

    const rollback = await cli(['rollback', NS, '--confirm', NS, '--timeout', '120s'], cwd, kubeconfig)
    expect(rollback.code, `${rollback.stderr}\n--- control plane:\n${scriptLog}`).toBe(0)
    await untilTrue('bookinfo to roll out again', () => rolledOut(client))
    expect(await namespaceState(client, NS)).toEqual(before)
    expect((await observe(client, NS)).dataPlanes).toEqual(start.dataPlanes)
  }, 420_000)
})
