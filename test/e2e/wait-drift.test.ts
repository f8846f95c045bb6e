// Issue 19 §1 on a real kube-apiserver: a wait that cannot succeed because of drift says so by name instead of
// waiting out its timeout. verify-dataplane waits on "Services bound to the waypoint" (the waypoint stopped being
// ready); someone removes the namespace's istio.io/use-waypoint label meanwhile: apply stops within seconds (exit 3)
// naming the label, the namespace and old → new, not after its 300 s timeout.
// Only the Kubernetes API is used to arrange and observe.
import path from 'node:path'

import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import type {MigrationPlan} from '../../src/planner/plan-types.js'
import {hasStackTrace} from '../support/cli.js'
import {startTestCluster, type TestCluster, USERS} from '../support/cluster.js'
import {cli, nextRequestId, readPlan, REPO, spawnCli, waitForRequest, workdir} from './support.js'

const NS = 'bookinfo'
const FIXTURE = path.join(REPO, 'examples/bookinfo')
const nsRef = {apiVersion: 'v1', kind: 'Namespace', name: NS}

describe('a wait that drift keeps from passing stops at once, naming the drift (issue 19 §1)', () => {
  let cluster: TestCluster
  let cwd: string
  let kube: string
  let plan: MigrationPlan

  beforeAll(async () => {
    cluster = await startTestCluster({fixture: FIXTURE, quiet: true, recordRequests: true})
    kube = cluster.kubeconfigPath
    cwd = await workdir()
    const made = await cli(['plan', NS], cwd, kube)
    expect(made.code, made.stderr).toBe(0)
    plan = await readPlan(cwd, NS)
  }, 180_000)

  afterAll(async () => {
    await cluster?.stop()
  }, 60_000)

  it('verify-dataplane waiting on Services bound, the namespace unbound meanwhile: exit 3 naming istio.io/use-waypoint, long before the timeout', async () => {
    const verify = plan.spec.steps.find((s) => s.action === 'verify-dataplane')!
    const before = plan.spec.steps[plan.spec.steps.indexOf(verify) - 1]!.id
    const to = await cli(['apply', NS, '--to', before, '--yes', '--timeout', '120s'], cwd, kube)
    expect(to.code, to.stderr).toBe(0)
    // The waypoint stops being ready: istiod reports its Services WaypointIsNotReady, so verify-dataplane waits.
    cluster.controlPlane.configure({waypoint: {failure: {reason: 'AddressNotAssigned'}}})
    await cluster.waitForIdle()

    const from = nextRequestId(cluster.recorder!)
    const started = Date.now()
    const run = spawnCli(['apply', NS, '--step', '--yes', '--timeout', '300s'], cwd, kube)
    // Once the step is waiting (it reads the Services' conditions), someone removes the label.
    await waitForRequest(
      cluster.recorder!,
      (e) => e.id >= from && e.user === USERS.tool && e.resource === 'services' && e.verb === 'get',
      'reading a Service (the waypoint-bound check)',
      60_000,
    )
    await cluster.api.patch(nsRef, {metadata: {labels: {'istio.io/use-waypoint': null}}})
    const r = await run.done
    expect(hasStackTrace(r.stderr)).toBe(false)
    expect(r.code, r.stderr).toBe(3)
    expect(Date.now() - started).toBeLessThan(60_000)
    expect(r.stderr).toContain(`step ${verify.id} cannot pass its verification (it is waiting:`)
    const bind = plan.spec.steps.find((s) => s.action === 'bind-waypoint')!.id
    expect(r.stderr).toContain(
      `step ${bind}: Namespace ${NS}: label istio.io/use-waypoint changed since the step set it: "waypoint" → absent`,
    )
    expect(r.stderr).toContain(`mesh-migrate apply plans/${NS}.yaml --repair ${bind}`)
    expect((await readPlan(cwd, NS)).status?.steps.find((s) => s.id === verify.id)?.phase).toBe('Failed')
    // Nothing was written back: the label stays as the person left it.
    expect((await cluster.client.get(nsRef))!.metadata.labels).not.toHaveProperty('istio.io/use-waypoint')
  }, 360_000)
})
