// apply --fleet and rollback --fleet on the real kube-apiserver (issue 22 §2), beside test/e2e/fleet-apply.test.ts on a
// fleet of its own (examples/fleet under other names): --dry-run=server sends each namespace's steps with dryRun=All by
// waves and leaves nothing behind (no write without dryRun, plan files and namespaces as they were); Ctrl+C (SIGINT)
// of apply --fleet mid-wave behaves as in apply — the request in flight finishes, the step is recorded Interrupted,
// exit 130 — and the same command resumes it to the end; rollback --fleet --dry-run=server leaves the applied fleet
// as it is.
import {randomBytes} from 'node:crypto'
import {readFile} from 'node:fs/promises'
import path from 'node:path'

import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import type {FleetApplyResult} from '../../src/cli/contract.js'
import {lockRef} from '../../src/executor/lock.js'
import type {KubeObject} from '../../src/planner/model.js'
import {loadManifestFiles} from '../../src/sources/manifests.js'
import {hasStackTrace} from '../support/cli.js'
import {startTestCluster, type TestCluster, USERS} from '../support/cluster.js'
import {schemaProblems} from '../support/schemas.js'
import {REPO_ROOT} from '../support/shared.js'
import {cli, namespaceState, nextRequestId, readPlan, spawnCli, toolWrites, waitForRequest, workdir} from './support.js'

const RUN = randomBytes(3).toString('hex')
const NAMES = ['catalog', 'frontend', 'pay', 'shop'] as const
const N = Object.fromEntries(NAMES.map((n) => [n, `i${RUN}-${n}`])) as Record<(typeof NAMES)[number], string>
const TEAM = `fleet-interrupt-${RUN}`

async function fleetFixture(): Promise<KubeObject[]> {
  const {objects} = await loadManifestFiles([path.join(REPO_ROOT, 'examples/fleet')])
  let text = JSON.stringify(objects).replaceAll('fleet-demo', TEAM)
  for (const n of NAMES) text = text.replace(new RegExp(`(?<![\\w-])${n}(?![\\w-])`, 'g'), N[n])
  return JSON.parse(text) as KubeObject[]
}

const planTexts = () =>
  Promise.all(Object.values(N).map((ns) => readFile(path.join(cwdOf.cwd, `plans/${ns}.yaml`), 'utf8')))
const cwdOf = {cwd: ''}

describe('apply --fleet: --dry-run=server, Ctrl+C, resume; rollback --fleet --dry-run=server', () => {
  let cluster: TestCluster
  let kube: string
  const before: Record<string, string> = {}
  /** Writes the tool sent for real (a dry run's carry dryRun=All). */
  const realWrites = (from: number) => toolWrites(cluster.recorder!, from).filter((e) => !e.dryRun)

  beforeAll(async () => {
    cluster = await startTestCluster({fixture: await fleetFixture(), quiet: true, recordRequests: true})
    cwdOf.cwd = await workdir()
    kube = cluster.kubeconfigPath
    for (const ns of Object.values(N)) before[ns] = await namespaceState(cluster.client, ns)
    const accept = [
      '--accept-lost',
      `E11/destination/${N.shop}`,
      '--accept-lost',
      `*/VirtualService/${N.frontend}/shop-timeout`,
    ]
    const plan = await cli(['plan', '-l', `team=${TEAM}`, ...accept], cwdOf.cwd, kube)
    expect(plan.code, plan.stderr).toBe(0)
  }, 180_000)
  afterAll(async () => {
    await cluster?.stop()
  })

  it('apply --fleet --all --dry-run=server: every namespace by waves, every write a dry run, nothing left behind', async () => {
    const texts = await planTexts()
    const from = nextRequestId(cluster.recorder!)
    const r = await cli(['apply', '--fleet', '--all', '--dry-run=server', '-o', 'json'], cwdOf.cwd, kube)
    expect(hasStackTrace(r.stderr)).toBe(false)
    expect(r.code, r.stderr).toBe(0)
    expect(schemaProblems(r.stdout, 'FleetApplyResult')).toEqual([])
    const result = JSON.parse(r.stdout) as FleetApplyResult
    expect(result.dryRun).toBe(true)
    expect(result.result).toBe('complete')
    expect(result.namespaces.map((n) => `${n.wave} ${n.namespace} ${n.state} ${n.remaining.length}`)).toEqual([
      `1 ${N.catalog} applied 0`,
      `2 ${N.frontend} applied 0`,
      `3 ${N.pay} applied 0`,
      `3 ${N.shop} applied 0`,
    ])
    expect(r.stderr).toContain('[server dry run]')
    // Writes were sent (as dry runs), none for real; the plans and the namespaces are as they were.
    expect(toolWrites(cluster.recorder!, from).length).toBeGreaterThan(0)
    expect(realWrites(from)).toEqual([])
    expect(await planTexts()).toEqual(texts)
    for (const ns of Object.values(N)) expect(await namespaceState(cluster.client, ns), ns).toBe(before[ns])
  }, 300_000)

  it('Ctrl+C of apply --fleet mid-wave: the step in flight is recorded Interrupted, exit 130; the same command resumes it to the end', async () => {
    // The waypoint never gets ready while we interrupt: catalog's wait-waypoint is in flight.
    cluster.controlPlane.configure({waypoint: {readyDelayMs: 'never'}})
    const args = ['apply', '--fleet', '--all', '--yes', '--parallel', '2', '--timeout', '120s']
    const from = nextRequestId(cluster.recorder!)
    const run = spawnCli([...args, '-o', 'json'], cwdOf.cwd, kube)
    await waitForRequest(
      cluster.recorder!,
      (e) =>
        e.id >= from &&
        e.user === USERS.tool &&
        e.verb === 'get' &&
        e.kind === 'Gateway' &&
        e.namespace === N.catalog &&
        e.name === 'waypoint',
      `polling ${N.catalog}'s waypoint`,
      120_000,
    )
    const stepOf = async (ns: string, action: string) => {
      const plan = await readPlan(cwdOf.cwd, ns)
      const id = plan.spec.steps.find((s) => s.action === action)!.id
      return plan.status?.steps.find((s) => s.id === id)?.phase
    }
    // Recorded Running before it polls: Ctrl+C lands in the step.
    for (let i = 0; i < 200 && (await stepOf(N.catalog, 'wait-waypoint')) !== 'Running'; i++)
      await new Promise((r) => setTimeout(r, 50))
    run.child.kill('SIGINT')
    const r = await run.done
    expect(hasStackTrace(r.stderr)).toBe(false)
    expect(r.code, r.stderr).toBe(130)
    expect(r.stderr).toContain('Interrupted')
    const result = JSON.parse(r.stdout) as FleetApplyResult
    expect(schemaProblems(r.stdout, 'FleetApplyResult')).toEqual([])
    expect(result.result).toBe('interrupted')
    // Next: the same command, as typed.
    expect(result.next).toContain('mesh-migrate apply --fleet --all --yes --parallel 2 --timeout 120s')
    expect(result.namespaces.map((n) => `${n.namespace} ${n.state}`)).toEqual([
      `${N.catalog} interrupted`,
      `${N.frontend} not-started`,
      `${N.pay} not-started`,
      `${N.shop} not-started`,
    ])
    expect(await stepOf(N.catalog, 'wait-waypoint')).toBe('Interrupted')
    // Nothing of the next waves was written; the lock is given back (no Lease left in catalog).
    for (const ns of [N.frontend, N.pay, N.shop]) expect(await namespaceState(cluster.client, ns), ns).toBe(before[ns])
    expect((await cluster.api.get(lockRef(N.catalog)))?.spec?.holderIdentity).toBeUndefined()

    cluster.controlPlane.configure({waypoint: {readyDelayMs: 200}})
    const again = await cli([...args, '-o', 'json'], cwdOf.cwd, kube)
    expect(again.code, again.stderr).toBe(0)
    const resumed = JSON.parse(again.stdout) as FleetApplyResult
    expect(resumed.result).toBe('complete')
    expect(resumed.namespaces.every((n) => n.state === 'applied')).toBe(true)
    expect(await stepOf(N.catalog, 'wait-waypoint')).toBe('Applied')
    for (const ns of Object.values(N)) {
      const labels = (await cluster.client.get({apiVersion: 'v1', kind: 'Namespace', name: ns}))!.metadata.labels
      expect(labels?.['istio.io/dataplane-mode'], ns).toBe('ambient')
    }
  }, 600_000)

  it('rollback --fleet --dry-run=server: every undo a dry run, the applied fleet left as it is', async () => {
    const texts = await planTexts()
    const states = Object.fromEntries(
      await Promise.all(Object.values(N).map(async (ns) => [ns, await namespaceState(cluster.client, ns)] as const)),
    )
    const from = nextRequestId(cluster.recorder!)
    const r = await cli(
      ['rollback', '--fleet', '--confirm', 'fleet', '--dry-run=server', '-o', 'json'],
      cwdOf.cwd,
      kube,
    )
    expect(hasStackTrace(r.stderr)).toBe(false)
    expect(r.code, r.stderr).toBe(0)
    const result = JSON.parse(r.stdout) as FleetApplyResult
    expect(schemaProblems(r.stdout, 'FleetApplyResult')).toEqual([])
    expect(result.dryRun).toBe(true)
    expect(result.waves).toEqual([3, 2, 1])
    expect(result.namespaces.every((n) => n.state === 'rolled-back')).toBe(true)
    expect(toolWrites(cluster.recorder!, from).length).toBeGreaterThan(0)
    expect(realWrites(from)).toEqual([])
    expect(await planTexts()).toEqual(texts)
    for (const ns of Object.values(N)) expect(await namespaceState(cluster.client, ns), ns).toBe(states[ns])
  }, 300_000)
  it('rollback --fleet: the first failure stops the other running namespace after its step (stopped, not failed); the same command then finishes', async () => {
    // pay's undo cannot write its Namespace (403); shop, in the same wave, is rolling back at the same time.
    const fault = cluster.recorder!.faults.add({
      match: {resource: 'namespaces', name: N.pay, verb: 'patch', user: USERS.tool},
      status: 403,
      name: 'pay-forbidden',
    })
    const args = ['rollback', '--fleet', '--confirm', 'fleet', '--parallel', '2']
    const r = await cli([...args, '-o', 'json'], cwdOf.cwd, kube)
    fault.remove()
    expect(hasStackTrace(r.stderr)).toBe(false)
    expect(schemaProblems(r.stdout, 'FleetApplyResult')).toEqual([])
    const result = JSON.parse(r.stdout) as FleetApplyResult
    expect(r.code, r.stderr).not.toBe(0)
    expect(result.result).toBe('failed')
    const by = Object.fromEntries(result.namespaces.map((n) => [n.namespace, n]))
    expect(by[N.pay]!.state).toBe('failed')
    expect(by[N.pay]!.error!.step).toBeDefined()
    expect(r.stderr).toContain(`Error: ${N.pay} at step ${by[N.pay]!.error!.step}`)
    // shop stopped after the undo it was running, with undos left: not failed, not finished.
    expect(by[N.shop]!.state).toBe('stopped')
    expect(by[N.shop]!.error).toBeUndefined()
    const shop = await readPlan(cwdOf.cwd, N.shop)
    expect((shop.status?.steps ?? []).filter((st) => st.phase === 'Applied').length).toBeGreaterThan(0)
    // Nothing of the earlier waves was started.
    expect([by[N.frontend]!.state, by[N.catalog]!.state]).toEqual(['not-started', 'not-started'])
    expect(result.next).toContain('mesh-migrate rollback --fleet')

    const again = await cli([...args, '-o', 'json'], cwdOf.cwd, kube)
    expect(again.code, again.stderr).toBe(0)
    const done = JSON.parse(again.stdout) as FleetApplyResult
    expect(done.result).toBe('complete')
    for (const ns of Object.values(N)) expect(await namespaceState(cluster.client, ns), ns).toBe(before[ns])
  }, 400_000)
})
