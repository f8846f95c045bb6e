// `npm run test-cluster -- [--fixture PATH]... [--port N] [--kubeconfig-out PATH] [--pod-startup-ms N]
// [--waypoint-ready-ms N|never] [--in-repo] [--verbose]`
//
// Starts an API server with the fake control plane (istiod's injection and waypoints, istio-cni,
// ztunnel, the workload controllers), loads a fixture (default: examples/bookinfo), writes a
// kubeconfig and prints how to point mesh-migrate and kubectl at it. The API server is a real
// kube-apiserver + etcd (HTTPS, bearer token) when KUBEBUILDER_ASSETS is set or ../shared/tools/envtest
// is there; otherwise the in-repo test API server (plain http, which kubectl cannot use). Ctrl+C,
// SIGTERM, SIGHUP, or a closed stdout pipe stop everything it started and remove the kubeconfig.
import {existsSync} from 'node:fs'
import {mkdir, rm, rmdir} from 'node:fs/promises'
import path from 'node:path'
import {parseArgs} from 'node:util'

import {startTestCluster, type TestCluster, type TestClusterOptions} from '../test/support/cluster.js'
import {DEFAULT_INSTALL} from '../test/support/control-plane/index.js'
import {
  ENVTEST_SETUP,
  realApiServerAssets,
  startClusterOnRealServer,
  startRealApiServer,
} from '../test/support/real-apiserver.js'
import {REPO_ROOT} from '../test/support/shared.js'

const usage = `Usage: npm run test-cluster -- [--fixture PATH]... [--port N] [--kubeconfig-out PATH]
                            [--pod-startup-ms N] [--waypoint-ready-ms N|never] [--in-repo] [--verbose]

  --fixture PATH          manifests to load (file or directory, repeatable); default examples/bookinfo
  --port N                port of the API server (default: any free port)
  --kubeconfig-out PATH   where to write the kubeconfig (default .test-cluster/kubeconfig in the repository)
  --pod-startup-ms N      how long pods take to become ready (default 500)
  --waypoint-ready-ms N   delay before a waypoint is Programmed once its Deployment is available
                          (default 1000; "never" keeps waypoints unprogrammed)
  --in-repo               use the in-repo test API server even when a real kube-apiserver is available
  --verbose               print the control plane's errors and notices

The API server is a real kube-apiserver when KUBEBUILDER_ASSETS names a folder with kube-apiserver and
etcd (envtest's convention; ../shared/tools/envtest/setup.sh prepares one), else the in-repo test server.
`

function fail(message: string): never {
  process.stderr.write(`${message}\n\n${usage}`)
  process.exit(2)
}

function parseCliArgs() {
  try {
    return parseArgs({
      options: {
        fixture: {type: 'string', multiple: true},
        port: {type: 'string'},
        'kubeconfig-out': {type: 'string'},
        'pod-startup-ms': {type: 'string'},
        'waypoint-ready-ms': {type: 'string'},
        'in-repo': {type: 'boolean'},
        verbose: {type: 'boolean'},
        help: {type: 'boolean', short: 'h'},
      },
      allowPositionals: false,
    }).values
  } catch (error) {
    return fail((error as Error).message)
  }
}
const args = parseCliArgs()
if (args.help) {
  process.stdout.write(usage)
  process.exit(0)
}

const number = (flag: string, value: string | undefined, fallback: number): number => {
  if (value === undefined) return fallback
  const n = Number(value)
  if (!Number.isInteger(n) || n < 0) fail(`--${flag} must be a non-negative integer, not "${value}"`)
  return n
}
// npm runs scripts in the repository; paths on the command line are the user's, relative to where npm was started.
const userCwd = process.env.INIT_CWD ?? process.cwd()
const port = number('port', args.port, 0)
const podStartupMs = number('pod-startup-ms', args['pod-startup-ms'], 500)
const waypointReady =
  args['waypoint-ready-ms'] === 'never'
    ? ('never' as const)
    : number('waypoint-ready-ms', args['waypoint-ready-ms'], 1000)
const fixtures = (args.fixture ?? [path.join(REPO_ROOT, 'examples/bookinfo')]).map((f) => path.resolve(userCwd, f))
const kubeconfigPath = args['kubeconfig-out']
  ? path.resolve(userCwd, args['kubeconfig-out'])
  : path.join(REPO_ROOT, '.test-cluster/kubeconfig')
const verbose = Boolean(args.verbose)
const log = (message: string) => process.stderr.write(`${message}\n`)

interface Running {
  cluster: TestCluster
  /** One line: which server, where. */
  server: string
  /** What kubectl can do with the kubeconfig. */
  kubectl: string
  stop(): Promise<void>
}

const clusterOptions = (): Omit<TestClusterOptions, 'inRepo' | 'kubeconfigPath' | 'port' | 'crds'> => ({
  fixture: fixtures,
  quiet: !verbose,
  controlPlane: {
    podStartupMs,
    waypoint: {readyDelayMs: waypointReady},
    log: (message, level) => (level === 'error' || verbose ? log(message) : undefined),
  },
})

async function startOnRealServer(assets: string): Promise<Running> {
  log(`starting kube-apiserver and etcd from ${assets}, then the fake control plane…`)
  const real = await startRealApiServer(assets, {port})
  try {
    const cluster = await startClusterOnRealServer(real, kubeconfigPath, clusterOptions())
    return {
      cluster,
      server: `kube-apiserver ${real.version} at ${real.url} (HTTPS, bearer token; from ${assets})`,
      kubectl: 'kubectl works with it too',
      // The server and its etcd data go away: stopping the control plane is enough, no clean-up through the API.
      stop: async () => {
        cluster.controlPlane.stop()
        await real.stop()
      },
    }
  } catch (error) {
    await real.stop()
    throw error
  }
}

async function startInRepo(reason: string): Promise<Running> {
  log(`${reason}: starting the in-repo test API server (test/support/apiserver) and the fake control plane…`)
  const cluster = await startTestCluster({...clusterOptions(), inRepo: true, kubeconfigPath, port})
  return {
    cluster,
    server: `the in-repo test API server at ${cluster.server!.url} (plain http; not a real kube-apiserver)`,
    kubectl:
      'kubectl cannot use it: kubectl sends no credentials to a plain-http server, so the server sees\n' +
      '  system:anonymous and refuses. For kubectl, run with KUBEBUILDER_ASSETS set (a real kube-apiserver).',
    stop: () => cluster.stop(),
  }
}

function start(): Promise<Running> {
  if (args['in-repo']) return startInRepo('--in-repo')
  const assets = realApiServerAssets()
  if (assets) return startOnRealServer(assets)
  return startInRepo(`no real kube-apiserver: KUBEBUILDER_ASSETS is not set and ${ENVTEST_SETUP} is not there`)
}

async function banner(running: Running): Promise<string> {
  const {cluster} = running
  const systemNamespaces = ['default', 'kube-system', 'kube-public', 'kube-node-lease', 'istio-system']
  const namespaces = (await cluster.api.list((await cluster.api.resource('v1', 'Namespace'))!)).items
    .map((n) => n.metadata.name)
    .filter((n) => !systemNamespaces.includes(n))
  const nodes = (await cluster.api.list((await cluster.api.resource('v1', 'Node'))!)).items.length
  const example = namespaces[0] ?? 'NAMESPACE'
  return `
Test cluster ready: ${running.server},
Istio ${DEFAULT_INSTALL.version} (ambient profile, played by the fake control plane) on ${nodes} nodes.
Loaded ${fixtures.map((f) => path.relative(userCwd, f) || f).join(', ')} — namespaces: ${namespaces.join(', ') || '(none)'}.

  export KUBECONFIG=${kubeconfigPath}

  mesh-migrate census                     # or bin/run.js census from this checkout
  mesh-migrate inventory ${example}
  mesh-migrate plan ${example}
  mesh-migrate apply ${example} --step
  kubectl get pods -n ${example}

${running.kubectl}

Ctrl+C stops the cluster and removes ${kubeconfigPath}.
`
}

// ---------------------------------------------------------------------------------------------

const kubeconfigDir = path.dirname(kubeconfigPath)
const createdDir = !existsSync(kubeconfigDir)
await mkdir(kubeconfigDir, {recursive: true})

const starting = start()
let stopping = false
/** Stops what this process started (by handle, never by name) and removes the kubeconfig (and its folder if this run made it). */
async function stop(why: string, code: number): Promise<never> {
  if (!stopping) {
    stopping = true
    log(`\n${why}: stopping the test cluster…`)
    const running = await starting.catch(() => undefined)
    await running?.stop().catch((error: unknown) => log(`stopping failed: ${String(error)}`))
    await rm(kubeconfigPath, {force: true})
    if (createdDir) await rmdir(kubeconfigDir).catch(() => undefined)
  }
  return process.exit(code)
}
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => void stop(signal, 0))
// `npm run test-cluster | head`: once the reader is gone, writing fails with EPIPE — stop rather than crash and leave everything behind.
process.stdout.on(
  'error',
  (error: NodeJS.ErrnoException) => void stop(`stdout closed (${error.code ?? error.message})`, 0),
)

const running = await starting.catch(async (error: unknown) => {
  log(`could not start the test cluster: ${error instanceof Error ? error.message : String(error)}`)
  return stop('start failed', 1)
})
if (!stopping) process.stdout.write(await banner(running))
