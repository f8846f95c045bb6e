// The end-to-end test cluster: an API server, the control-plane fixture, the fake control plane and
// a fixture of workloads and Istio config, with a kubeconfig for the tool.
//
// - Inside the vitest run's cluster project with a real kube-apiserver (test/support/envtest.ts,
//   started once per run when KUBEBUILDER_ASSETS is set or ../shared/tools/envtest exists): that
//   server, with its token users (the tool is "admin", the harness and the control plane have their own).
// - MESH_MIGRATE_E2E_KUBECONFIG set: that cluster (e.g. an envtest kube-apiserver without
//   controllers). The Istio and Gateway API CRDs are installed from ../shared when missing; fixture
//   namespaces must not exist yet (the harness refuses to touch namespaces it did not create) and
//   everything the harness created is deleted again by stop().
// - Otherwise: the in-repo test API server (test/support/apiserver) on loopback.
//
// Three identities talk to the cluster: the tool (the kubeconfig handed out, user "admin" in-repo),
// the control plane and the harness (their own tokens in-repo), so the request log tells them apart.
import {randomBytes} from 'node:crypto'
import {existsSync} from 'node:fs'
import {mkdtemp, readdir, rm, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import {connect} from '../../src/kube/http-client.js'
import type {KubeClient} from '../../src/kube/types.js'
import type {KubeObject, ObjectRef} from '../../src/planner/model.js'
import {loadManifestFiles} from '../../src/sources/manifests.js'
import {startApiServer, type ApiServerOptions, type TestApiServer} from './apiserver/index.js'
import {
  type ClusterApi,
  clusterApiFromKubeconfig,
  clusterApiFromKubeconfigText,
  type ControlPlane,
  type ControlPlaneOptionsInput,
  type InstalledControlPlane,
  installControlPlane,
  type InstallOptionsInput,
  isConflict,
  startControlPlane,
  uninstallControlPlane,
} from './control-plane/index.js'
import {type EnvtestInfo, envtestKubeconfig, runEnvtest, tokenKubeconfig} from './envtest.js'
import {type FaultProxy, startFaultProxy} from './fault-proxy.js'
import {CRDS_DIR} from './shared.js'

export const E2E_KUBECONFIG_ENV = 'MESH_MIGRATE_E2E_KUBECONFIG'

/** Who sent a request, as the in-repo server's request log records it. */
export const USERS = {
  tool: 'admin',
  controlPlane: 'system:serviceaccount:istio-system:mesh-migrate-test-control-plane',
  harness: 'mesh-migrate-test-harness',
} as const

const CONTROL_PLANE_TOKEN = 'control-plane-token'
const HARNESS_TOKEN = 'harness-token'
/** Label on namespaces the harness created on an external cluster (value: the run id). */
export const RUN_LABEL = 'mesh-migrate.io/e2e-run'

export type Fixture = string | string[] | KubeObject[]

export interface TestClusterOptions {
  /** Manifest files/directories, or objects, created after the control plane. */
  fixture?: Fixture
  /** Run-time behaviour of the fake control plane (delays, failures). */
  controlPlane?: ControlPlaneOptionsInput
  /** The control-plane fixture (installControlPlane options); false = install nothing, Nodes included (pods then wait for a Node). */
  install?: InstallOptionsInput | false
  /** In-repo server only: which CRDs it registers (default: the upstream ones from ../shared). */
  crds?: ApiServerOptions['crdFiles']
  /** Where to write the tool's kubeconfig (in-repo server only; default: a temporary file). */
  kubeconfigPath?: string
  /** In-repo server only: port to listen on (default: any free port). */
  port?: number
  /** Wait for the control plane to settle after loading (default true). */
  waitForIdle?: boolean
  /** Suppress the test server's notices. */
  quiet?: boolean
  /** Start the in-repo server even when MESH_MIGRATE_E2E_KUBECONFIG is set (npm run test-cluster). */
  inRepo?: boolean
  /**
   * On the real server: send the tool's requests through a loopback fault proxy
   * (test/support/fault-proxy.ts), so tests can count them and inject faults (`recorder`). In-repo the
   * server itself records every request.
   */
  recordRequests?: boolean
  /** This real server instead of the run's (a second cluster, e.g. startEnvtest() in a test). */
  envtest?: EnvtestInfo
}

/**
 * Where tests read the requests sent and inject faults: the in-repo server (every identity's
 * requests), or the fault proxy in front of the real server (the tool's requests only).
 */
export type RequestRecorder = Pick<TestApiServer, 'requests' | 'requestsMatching' | 'resetRequestLog' | 'faults'>

export interface TestCluster {
  /** The kubeconfig the tool uses (--kubeconfig). */
  kubeconfigPath: string
  /** The tool's view of the cluster (src/kube), with the tool's identity. */
  client: KubeClient
  /** The harness's own client, to arrange state in tests without counting as the tool. */
  api: ClusterApi
  controlPlane: ControlPlane
  /** The in-repo server (absent on an external cluster). */
  server?: TestApiServer
  /** The run's real kube-apiserver, when the cluster is that one (its tokens: reader, nobody, …). */
  envtest?: EnvtestInfo
  /** The request log and faults: the in-repo server, or the fault proxy with `recordRequests` on the real server. */
  recorder?: RequestRecorder
  external: boolean
  installed?: InstalledControlPlane
  /** Creates more objects (namespaces first), then waits for the control plane unless told not to. */
  load(fixture: Fixture, opts?: {waitForIdle?: boolean}): Promise<KubeObject[]>
  waitForIdle(opts?: {timeoutMs?: number}): Promise<void>
  stop(): Promise<void>
}

// ---------------------------------------------------------------------------------------------
// CRDs on an external cluster

async function upstreamCrds(): Promise<KubeObject[]> {
  if (!existsSync(CRDS_DIR)) return []
  const files = [path.join(CRDS_DIR, 'istio-crds.yaml')]
  const gatewayDir = path.join(CRDS_DIR, 'gateway-api-standard')
  for (const f of (await readdir(gatewayDir)).sort())
    if (f.startsWith('gateway.networking.k8s.io_')) files.push(path.join(gatewayDir, f))
  const {objects} = await loadManifestFiles(files)
  return objects.filter((o) => o.kind === 'CustomResourceDefinition')
}

/** Creates the CRDs the suite needs when the cluster lacks them, and waits until they are Established. */
export async function ensureCrds(api: ClusterApi): Promise<void> {
  const crds = await upstreamCrds()
  const required = [
    ['networking.istio.io/v1', 'VirtualService'],
    ['security.istio.io/v1', 'AuthorizationPolicy'],
    ['gateway.networking.k8s.io/v1', 'Gateway'],
  ] as const
  if (crds.length === 0) {
    const missing = []
    for (const [v, k] of required) if (!(await api.resource(v, k))) missing.push(`${k} (${v})`)
    if (missing.length > 0)
      throw new Error(
        `the cluster does not serve ${missing.join(', ')} and ${CRDS_DIR} is not there to install the CRDs from`,
      )
    return
  }
  const created: ObjectRef[] = []
  for (const crd of crds) {
    const ref = {apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', name: crd.metadata.name}
    if (await api.get(ref)) continue
    await api.create(crd)
    created.push(ref)
  }
  await waitForCrds(api, created)
}

/** Waits until the CRDs are Established (served), then makes `api` discover their kinds. */
export async function waitForCrds(api: ClusterApi, crds: ObjectRef[]): Promise<void> {
  const deadline = Date.now() + 60_000
  for (const ref of crds) {
    for (;;) {
      const crd = await api.get(ref)
      if (
        (crd?.status?.conditions ?? []).some(
          (c: {type: string; status: string}) => c.type === 'Established' && c.status === 'True',
        )
      )
        break
      if (Date.now() > deadline) throw new Error(`CRD ${ref.name} did not become Established`)
      await new Promise((r) => setTimeout(r, 100))
    }
  }
  if (crds.length > 0) api.refreshDiscovery()
}

// ---------------------------------------------------------------------------------------------
// One harness at a time on an external cluster

/** Kubernetes MicroTime (RFC 3339 with microseconds). */
const microTime = () => new Date().toISOString().replace(/\.(\d{3})Z$/, '.$1000Z')

const LOCK = {
  apiVersion: 'coordination.k8s.io/v1',
  kind: 'Lease',
  namespace: 'default',
  name: 'mesh-migrate-e2e-harness',
}
const LOCK_SECONDS = 30

/**
 * Two fake control planes on one cluster would fight over the same objects (as two controller
 * managers without leader election would), so on an external cluster test files take turns: a Lease
 * held while a harness runs, renewed every few seconds, taken over when its holder stopped renewing.
 * Returns the release function.
 */
async function acquireClusterLock(
  api: ClusterApi,
  holder: string,
  log: (m: string) => void,
): Promise<() => Promise<void>> {
  let announced = false
  for (;;) {
    const lease = await api.get(LOCK)
    try {
      if (!lease) {
        await api.create({
          ...LOCK,
          metadata: {name: LOCK.name, namespace: LOCK.namespace},
          spec: {
            holderIdentity: holder,
            leaseDurationSeconds: LOCK_SECONDS,
            acquireTime: microTime(),
            renewTime: microTime(),
          },
        })
        break
      }
      const renewed = Date.parse(lease.spec?.renewTime ?? lease.spec?.acquireTime ?? '')
      const expired =
        Number.isNaN(renewed) || renewed + (lease.spec?.leaseDurationSeconds ?? LOCK_SECONDS) * 1000 < Date.now()
      if (expired || !lease.spec?.holderIdentity) {
        await api.patch(LOCK, {
          metadata: {resourceVersion: lease.metadata.resourceVersion},
          spec: {
            holderIdentity: holder,
            acquireTime: microTime(),
            renewTime: microTime(),
            leaseDurationSeconds: LOCK_SECONDS,
          },
        })
        break
      }
    } catch (error) {
      // Someone else was faster: look again.
      if (!isConflict(error)) throw error
    }
    if (!announced) {
      log(
        `waiting for the end-to-end harness of ${lease?.spec?.holderIdentity ?? 'another run'} on this cluster (Lease default/${LOCK.name})`,
      )
      announced = true
    }
    await new Promise((r) => setTimeout(r, 500))
  }
  const timer = setInterval(() => {
    void api.patch(LOCK, {spec: {holderIdentity: holder, renewTime: microTime()}}).catch(() => undefined)
  }, 5000)
  timer.unref()
  return async () => {
    clearInterval(timer)
    const lease = await api.get(LOCK).catch(() => undefined)
    if (lease?.spec?.holderIdentity === holder)
      await api.delete(LOCK, {preconditions: {uid: lease.metadata.uid!}}).catch(() => undefined)
  }
}

/**
 * Waits for deleted namespaces to go (the fake namespace controller empties and finalizes them); pods
 * still terminating after 60 s (their kubelet is gone) are removed with a zero grace period, as
 * `kubectl delete --force` would, so that nothing is left Terminating on the server.
 */
async function removeNamespaces(api: ClusterApi, names: string[]): Promise<void> {
  const present = async (ns: string) =>
    (await api.get({apiVersion: 'v1', kind: 'Namespace', name: ns}).catch(() => undefined)) !== undefined
  const waitGone = async (ms: number) => {
    const deadline = Date.now() + ms
    for (const ns of names)
      while ((await present(ns)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200))
  }
  await waitGone(60_000)
  const pods = await api.resource('v1', 'Pod')
  for (const ns of names) {
    if (!pods || !(await present(ns))) continue
    const {items} = await api.list(pods, {namespace: ns}).catch(() => ({items: [] as KubeObject[]}))
    for (const pod of items)
      await api
        .delete({apiVersion: 'v1', kind: 'Pod', namespace: ns, name: pod.metadata.name}, {gracePeriodSeconds: 0})
        .catch(() => undefined)
  }
  await waitGone(30_000)
}

// ---------------------------------------------------------------------------------------------
// Fixtures

async function fixtureObjects(fixture: Fixture): Promise<KubeObject[]> {
  if (fixture.length > 0 && typeof fixture[0] === 'object') return structuredClone(fixture as KubeObject[])
  const paths = (typeof fixture === 'string' ? [fixture] : (fixture as string[])).map((p) => path.resolve(p))
  return (await loadManifestFiles(paths)).objects
}

/** Creation order: what others refer to first (namespaces, CRDs, accounts, config, Services), workloads, then the rest. */
function creationRank(o: KubeObject): number {
  const order = ['Namespace', 'CustomResourceDefinition', 'ServiceAccount', 'ConfigMap', 'Secret', 'Service']
  const i = order.indexOf(o.kind)
  if (i >= 0) return i
  return ['Deployment', 'StatefulSet', 'DaemonSet', 'Job', 'CronJob', 'Pod'].includes(o.kind) ? 10 : 20
}

const refOf = (o: KubeObject): ObjectRef => ({
  apiVersion: o.apiVersion,
  kind: o.kind,
  name: o.metadata.name,
  ...(o.metadata.namespace ? {namespace: o.metadata.namespace} : {}),
})

// ---------------------------------------------------------------------------------------------

export async function startTestCluster(opts: TestClusterOptions = {}): Promise<TestCluster> {
  const externalKubeconfig = process.env[E2E_KUBECONFIG_ENV]
  // An explicit MESH_MIGRATE_E2E_KUBECONFIG (a cluster the test chose, e.g. a second real server) wins over the run's server.
  const envtest =
    opts.inRepo || (externalKubeconfig !== undefined && externalKubeconfig !== '' && !opts.envtest)
      ? undefined
      : (opts.envtest ?? runEnvtest())
  const external =
    envtest !== undefined || (!opts.inRepo && externalKubeconfig !== undefined && externalKubeconfig !== '')
  const runId = randomBytes(4).toString('hex')
  let server: TestApiServer | undefined
  let tmpDir: string | undefined
  let kubeconfigPath: string
  let api: ClusterApi
  let controlPlaneApi: ClusterApi

  let releaseLock: (() => Promise<void>) | undefined
  let proxy: FaultProxy | undefined
  if (envtest) {
    // Each identity has its own token on the real server, as in-repo (the request logs and field managers tell them apart).
    tmpDir = await mkdtemp(path.join(os.tmpdir(), 'mesh-migrate-e2e-'))
    kubeconfigPath = opts.kubeconfigPath ? path.resolve(opts.kubeconfigPath) : path.join(tmpDir, 'kubeconfig')
    if (opts.recordRequests) {
      proxy = await startFaultProxy({target: envtest.url, ca: envtest.caPem})
      await writeFile(kubeconfigPath, tokenKubeconfig(proxy.url, envtest.tokens.admin))
    } else {
      await writeFile(kubeconfigPath, envtestKubeconfig(envtest, 'admin'))
    }
    api = await clusterApiFromKubeconfigText(envtestKubeconfig(envtest, 'harness'), {
      userAgent: 'mesh-migrate-test-harness',
      fieldManager: 'mesh-migrate-test-harness',
    })
    controlPlaneApi = await clusterApiFromKubeconfigText(envtestKubeconfig(envtest, 'controlPlane'))
  } else if (externalKubeconfig && !opts.inRepo) {
    kubeconfigPath = path.resolve(externalKubeconfig)
    api = await clusterApiFromKubeconfig(kubeconfigPath, {
      userAgent: 'mesh-migrate-test-harness',
      fieldManager: 'mesh-migrate-test-harness',
    })
    controlPlaneApi = api.as({
      userAgent: 'mesh-migrate-test-control-plane',
      fieldManager: 'mesh-migrate-test-control-plane',
    })
  } else {
    server = await startApiServer({
      ...(opts.crds ? {crdFiles: opts.crds} : {}),
      ...(opts.port !== undefined ? {port: opts.port} : {}),
      ...(opts.quiet ? {quiet: true} : {}),
      tokens: {
        [CONTROL_PLANE_TOKEN]: {user: USERS.controlPlane, groups: ['system:serviceaccounts'], permissions: 'all'},
        [HARNESS_TOKEN]: {user: USERS.harness, groups: ['system:masters'], permissions: 'all'},
      },
    })
    if (opts.kubeconfigPath) {
      kubeconfigPath = path.resolve(opts.kubeconfigPath)
    } else {
      tmpDir = await mkdtemp(path.join(os.tmpdir(), 'mesh-migrate-e2e-'))
      kubeconfigPath = path.join(tmpDir, 'kubeconfig')
    }
    await server.writeKubeconfig(kubeconfigPath)
    api = await clusterApiFromKubeconfigText(server.kubeconfig({token: HARNESS_TOKEN}), {
      userAgent: 'mesh-migrate-test-harness',
      fieldManager: 'mesh-migrate-test-harness',
    })
    controlPlaneApi = await clusterApiFromKubeconfigText(server.kubeconfig({token: CONTROL_PLANE_TOKEN}))
  }
  if (external) {
    releaseLock = await acquireClusterLock(api, `${os.hostname()}/${process.pid}/${runId}`, (m) =>
      process.stderr.write(`[test-cluster] ${m}\n`),
    )
    try {
      await ensureCrds(api)
    } catch (error) {
      await releaseLock()
      throw error
    }
  }

  const createdNamespaces: string[] = []
  const createdClusterObjects: ObjectRef[] = []
  let installed: InstalledControlPlane | undefined
  let controlPlane: ControlPlane | undefined

  const cleanup = async () => {
    if (external) {
      try {
        // The fake control plane still runs: it finalizes the namespaces (an envtest server has no
        // namespace controller) and confirms the deletion of their pods.
        for (const ns of [...createdNamespaces].reverse())
          await api.delete({apiVersion: 'v1', kind: 'Namespace', name: ns}).catch(() => undefined)
        for (const ref of [...createdClusterObjects].reverse()) await api.delete(ref).catch(() => undefined)
        // The fixture's namespaces must be gone while the kubelets still run: a pod is only removed once
        // its node's kubelet confirms it, and uninstalling deletes the Nodes. A namespace left Terminating
        // would keep the next test file's namespace controller busy for ever (seen with a shared server).
        await removeNamespaces(api, createdNamespaces)
        if (installed) await uninstallControlPlane(api, installed)
        await removeNamespaces(
          api,
          (installed?.created ?? []).filter((r) => r.kind === 'Namespace').map((r) => r.name),
        )
        // CRDs stay: deleting them would delete every object of their kinds on a shared cluster.
      } finally {
        controlPlane?.stop()
        await releaseLock?.()
      }
    } else {
      controlPlane?.stop()
    }
    await server?.close()
    await proxy?.close()
    if (tmpDir) await rm(tmpDir, {recursive: true, force: true})
  }

  try {
    if (opts.install !== false) installed = await installControlPlane(api, opts.install ?? {})
    controlPlane = await startControlPlane(controlPlaneApi, opts.controlPlane ?? {})
    const cp = controlPlane

    const load = async (fixture: Fixture, loadOpts: {waitForIdle?: boolean} = {}): Promise<KubeObject[]> => {
      const objects = (await fixtureObjects(fixture)).sort((a, b) => creationRank(a) - creationRank(b))
      const namespaces = new Set<string>(objects.filter((o) => o.kind === 'Namespace').map((o) => o.metadata.name))
      for (const o of objects) if (o.metadata.namespace) namespaces.add(o.metadata.namespace)
      const out: KubeObject[] = []
      for (const ns of namespaces) {
        const declared = objects.find((o) => o.kind === 'Namespace' && o.metadata.name === ns)
        const existing = await api.get({apiVersion: 'v1', kind: 'Namespace', name: ns})
        if (existing) {
          if (external && existing.metadata.labels?.[RUN_LABEL] !== runId) {
            throw new Error(
              `namespace ${ns} already exists on the cluster of ${E2E_KUBECONFIG_ENV}; the end-to-end suite only works in namespaces it creates (delete it, or use another cluster)`,
            )
          }
          if (declared) {
            // Labels the fixture declares win (re-loading a namespace with other labels).
            out.push(
              await api.patch(
                {apiVersion: 'v1', kind: 'Namespace', name: ns},
                {metadata: {labels: declared.metadata.labels ?? {}, annotations: declared.metadata.annotations ?? {}}},
              ),
            )
          }
          continue
        }
        const body: KubeObject = declared
          ? structuredClone(declared)
          : {apiVersion: 'v1', kind: 'Namespace', metadata: {name: ns}}
        if (external) body.metadata.labels = {...(body.metadata.labels ?? {}), [RUN_LABEL]: runId}
        out.push(await api.create(body))
        createdNamespaces.push(ns)
      }
      for (const o of objects) {
        if (o.kind === 'Namespace') continue
        const {status, ...rest} = o
        let body = rest as KubeObject
        // Pods created directly still go through the injection webhook and the scheduler.
        if (o.kind === 'Pod' && o.apiVersion === 'v1') body = cp.admitPod(body).pod
        if (!(await api.resource(body.apiVersion, body.kind)))
          throw new Error(`the cluster does not serve ${body.kind} (${body.apiVersion})`)
        const created = await api.create(body)
        if (!body.metadata.namespace)
          createdClusterObjects.push(refOf({...created, apiVersion: body.apiVersion, kind: body.kind}))
        if (status !== undefined) await api.patch(refOf(body), {status}, {subresource: 'status'}).catch(() => undefined)
        out.push({...created, apiVersion: body.apiVersion, kind: body.kind})
      }
      if (loadOpts.waitForIdle ?? true) await cp.waitForIdle()
      return out
    }

    if (opts.fixture !== undefined) await load(opts.fixture, {waitForIdle: false})
    if (opts.waitForIdle ?? true) await cp.waitForIdle()

    const client = await connect({kubeconfig: kubeconfigPath, env: {}})
    return {
      kubeconfigPath,
      client,
      api,
      controlPlane: cp,
      ...(server ? {server} : {}),
      ...(envtest ? {envtest} : {}),
      ...(server || proxy ? {recorder: server ?? proxy} : {}),
      external,
      ...(installed ? {installed} : {}),
      load,
      waitForIdle: (o) => cp.waitForIdle(o),
      stop: cleanup,
    }
  } catch (error) {
    await cleanup().catch(() => undefined)
    throw error
  }
}
