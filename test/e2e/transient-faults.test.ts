// Issue 19 §8 on a real kube-apiserver: passing faults are ridden out, permanent ones fail fast.
// - The API server is stopped for 8 s while `apply --step` waits for the waypoint (connections refused), then started
//   again on the same port with the same etcd data: the same command finishes the step, exit 0.
// - A 403 during a wait: the tool runs as a user whose RBAC grant on Gateways is deleted while it polls the
//   waypoint; it fails at once (not after --timeout) naming the verb and resource, with Error/Next, exit 1.
// The test starts its own server (test/support/envtest.ts restartApiServer): restarting the run's shared one would
// disturb the other files' tests.
import {writeFile} from 'node:fs/promises'
import path from 'node:path'

import {parseAllDocuments} from 'yaml'
import {afterAll, beforeAll, expect, it} from 'vitest'

import type {KubeObject} from '../../src/planner/model.js'
import type {StepStatus} from '../../src/planner/plan-types.js'
import {hasStackTrace} from '../support/cli.js'
import {startTestCluster, type TestCluster} from '../support/cluster.js'
import {type Envtest, ENVTEST_USERS, startEnvtest} from '../support/envtest.js'
import {describeWithRealApiServer} from '../support/real-apiserver.js'
import {cli, readPlan, REPO, spawnCli, workdir} from './support.js'

const NS = 'bookinfo'
const FIXTURE = path.join(REPO, 'examples/bookinfo')

// A small namespace with one L7 policy, so its plan has a waypoint to wait for (the 403 case).
const STOREFRONT = 'storefront'
const STOREFRONT_FIXTURE = parseAllDocuments(`
apiVersion: v1
kind: Namespace
metadata: {name: storefront, labels: {istio-injection: enabled}}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: api, namespace: storefront}
---
apiVersion: v1
kind: Service
metadata: {name: api, namespace: storefront}
spec:
  selector: {app: api}
  ports:
  - {name: http, port: 8080}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: api, namespace: storefront}
spec:
  replicas: 1
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      serviceAccountName: api
      containers:
      - {name: api, image: example/api:1, ports: [{containerPort: 8080}]}
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: api-read-only, namespace: storefront}
spec:
  selector: {matchLabels: {app: api}}
  action: ALLOW
  rules:
  - from:
    - source: {principals: ["cluster.local/ns/web/sa/web"]}
    to:
    - operation: {methods: ["GET"]}
`).map((d) => d.toJS() as KubeObject)

const GATEWAY_GROUP = 'gateway.networking.k8s.io'

async function until(what: string, check: () => Promise<boolean> | boolean, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

describeWithRealApiServer('passing faults are ridden out, permanent ones fail fast (issue 19 §8)', () => {
  let server: Envtest
  let cluster: TestCluster

  beforeAll(async () => {
    server = await startEnvtest()
    cluster = await startTestCluster({
      fixture: FIXTURE,
      quiet: true,
      envtest: server,
      // The waypoint stays unprogrammed until a test says otherwise: the wait is still waiting when the fault comes.
      controlPlane: {waypoint: {readyDelayMs: 'never'}},
    })
  }, 180_000)

  afterAll(async () => {
    await cluster?.stop()
    await server?.stop()
  }, 60_000)

  const phaseOf = async (cwd: string, ns: string, action: string): Promise<StepStatus | undefined> => {
    const plan = await readPlan(cwd, ns)
    const id = plan.spec.steps.find((s) => s.action === action)!.id
    return plan.status?.steps?.find((s) => s.id === id)
  }

  it('an API server restart (8 s down) during the waypoint wait: the same `apply --step` finishes it, exit 0', async () => {
    const cwd = await workdir()
    const kube = cluster.kubeconfigPath
    expect((await cli(['plan', NS], cwd, kube)).code).toBe(0)
    const plan = await readPlan(cwd, NS)
    const createWaypoint = plan.spec.steps.find((s) => s.action === 'create-waypoint')!.id
    const to = await cli(['apply', NS, '--to', createWaypoint, '--yes', '--timeout', '120s'], cwd, kube)
    expect(to.code, to.stderr).toBe(0)

    const run = spawnCli(['apply', NS, '--step', '--yes', '--timeout', '120s'], cwd, kube)
    // wait-waypoint is recorded Running before it polls; give it a few polls of the unprogrammed Gateway.
    await until('wait-waypoint Running', async () => (await phaseOf(cwd, NS, 'wait-waypoint'))?.phase === 'Running')
    await new Promise((r) => setTimeout(r, 2000))
    let downAt = 0
    await server.restartApiServer({downMs: 8000, onDown: () => (downAt = Date.now())})
    const upAt = Date.now()
    expect(upAt - downAt).toBeGreaterThanOrEqual(8000)
    // Still waiting (not failed at the first refused connection): the waypoint can now become ready.
    expect(run.child.exitCode).toBeNull()
    cluster.controlPlane.configure({waypoint: {readyDelayMs: 200}})
    const r = await run.done
    expect(r.code, r.stderr).toBe(0)
    expect(hasStackTrace(r.stderr)).toBe(false)
    expect((await phaseOf(cwd, NS, 'wait-waypoint'))?.phase).toBe('Applied')
    // It said what it rode out: the refused connections, retried.
    expect(r.stderr).toMatch(/ECONNREFUSED.*retrying/)
  }, 240_000)

  it('a 403 during the wait (the Gateway grant removed mid-wait) fails at once naming verb and resource, exit 1', async () => {
    cluster.controlPlane.configure({waypoint: {readyDelayMs: 'never'}})
    await cluster.load(STOREFRONT_FIXTURE)
    // A user allowed everything, with Gateways granted by a binding of their own that is deleted mid-wait.
    const {groupVersions} = await cluster.client.discover()
    const groups = [...new Set(groupVersions.map((gv) => (gv.includes('/') ? gv.split('/')[0]! : '')))]
    const user = {apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: ENVTEST_USERS.nobody.name}
    const grant = async (name: string, rules: unknown[]) => {
      await cluster.api.create({
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRole',
        metadata: {name},
        rules,
      } as unknown as KubeObject)
      await cluster.api.create({
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRoleBinding',
        metadata: {name},
        roleRef: {apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name},
        subjects: [user],
      } as unknown as KubeObject)
    }
    await grant('e2e-operator', [
      {apiGroups: groups.filter((g) => g !== GATEWAY_GROUP), resources: ['*'], verbs: ['*']},
      {nonResourceURLs: ['*'], verbs: ['*']},
    ])
    await grant('e2e-operator-gateways', [{apiGroups: [GATEWAY_GROUP], resources: ['*'], verbs: ['*']}])
    const cwd = await workdir()
    const kube = path.join(cwd, 'operator.kubeconfig')
    await writeFile(kube, server.kubeconfig('nobody', {context: 'operator'}), {mode: 0o600})

    // bookinfo's routing reaches storefront's sidecars (DOMAIN E11): accepted, it is not what this test is about.
    const made = await cli(['plan', STOREFRONT, '--accept-lost', 'E11/destination/bookinfo'], cwd, kube)
    expect(made.code, made.stderr).toBe(0)
    const plan = await readPlan(cwd, STOREFRONT)
    const createWaypoint = plan.spec.steps.find((s) => s.action === 'create-waypoint')!.id
    const to = await cli(['apply', STOREFRONT, '--to', createWaypoint, '--yes', '--timeout', '120s'], cwd, kube)
    expect(to.code, to.stderr).toBe(0)

    const run = spawnCli(['apply', STOREFRONT, '--step', '--yes', '--timeout', '300s'], cwd, kube)
    await until(
      'wait-waypoint Running',
      async () => (await phaseOf(cwd, STOREFRONT, 'wait-waypoint'))?.phase === 'Running',
    )
    await new Promise((r) => setTimeout(r, 1500))
    expect(run.child.exitCode).toBeNull()
    const revokedAt = Date.now()
    await cluster.api.delete({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      name: 'e2e-operator-gateways',
    })
    const r = await run.done
    const took = Date.now() - revokedAt
    expect(r.code, r.stderr).toBe(1)
    expect(took).toBeLessThan(20_000)
    expect(hasStackTrace(r.stderr)).toBe(false)
    expect(r.stderr).toContain(`forbidden: cannot get gateways.${GATEWAY_GROUP} in namespace ${STOREFRONT}`)
    expect(r.stderr).toContain(`Next: Grant "get" on gateways.${GATEWAY_GROUP} in namespace ${STOREFRONT}`)
    expect(r.stderr).toContain('--retry')
    expect((await phaseOf(cwd, STOREFRONT, 'wait-waypoint'))?.phase).toBe('Failed')
  }, 240_000)
})
