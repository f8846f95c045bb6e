// `npm run test-cluster -- [--fixture PATH]... [--port N] [--kubeconfig-out PATH] [--pod-startup-ms N]
// [--waypoint-ready-ms N|never] [--verbose]`
//
// Starts the in-repo test API server with the fake control plane (istiod's injection and waypoints,
// istio-cni, ztunnel, the workload controllers), loads a fixture (default: examples/bookinfo), writes
// a kubeconfig and prints how to point mesh-migrate (or kubectl) at it. Ctrl+C stops everything and
// removes the kubeconfig.
import {mkdir, rm} from 'node:fs/promises'
import path from 'node:path'
import {parseArgs} from 'node:util'

import {startTestCluster} from '../test/support/cluster.js'
import {DEFAULT_INSTALL} from '../test/support/control-plane/index.js'
import {REPO_ROOT} from '../test/support/shared.js'

const usage = `Usage: npm run test-cluster -- [--fixture PATH]... [--port N] [--kubeconfig-out PATH]
                            [--pod-startup-ms N] [--waypoint-ready-ms N|never] [--verbose]

  --fixture PATH          manifests to load (file or directory, repeatable); default examples/bookinfo
  --port N                port of the API server (default: any free port)
  --kubeconfig-out PATH   where to write the kubeconfig (default .test-cluster/kubeconfig)
  --pod-startup-ms N      how long pods take to become ready (default 500)
  --waypoint-ready-ms N   delay before a waypoint is Programmed once its Deployment is available
                          (default 1000; "never" keeps waypoints unprogrammed)
  --verbose               print the control plane's errors and notices
`

function fail(message: string): never {
  process.stderr.write(`${message}\n\n${usage}`)
  process.exit(2)
}

let args
try {
  args = parseArgs({
    options: {
      fixture: {type: 'string', multiple: true},
      port: {type: 'string'},
      'kubeconfig-out': {type: 'string'},
      'pod-startup-ms': {type: 'string'},
      'waypoint-ready-ms': {type: 'string'},
      verbose: {type: 'boolean'},
      help: {type: 'boolean', short: 'h'},
    },
    allowPositionals: false,
  }).values
} catch (error) {
  fail((error as Error).message)
}
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
const port = number('port', args.port, 0)
const podStartupMs = number('pod-startup-ms', args['pod-startup-ms'], 500)
const waypointReady = args['waypoint-ready-ms'] === 'never' ? ('never' as const) : number('waypoint-ready-ms', args['waypoint-ready-ms'], 1000)
const fixtures = (args.fixture ?? [path.join(REPO_ROOT, 'examples/bookinfo')]).map((f) => path.resolve(f))
const kubeconfigPath = path.resolve(args['kubeconfig-out'] ?? path.join(REPO_ROOT, '.test-cluster/kubeconfig'))
const log = (message: string) => process.stderr.write(`${message}\n`)

await mkdir(path.dirname(kubeconfigPath), {recursive: true})
log('starting the test API server and the fake control plane…')
const cluster = await startTestCluster({
  inRepo: true,
  fixture: fixtures,
  kubeconfigPath,
  port,
  quiet: !args.verbose,
  controlPlane: {podStartupMs, waypoint: {readyDelayMs: waypointReady}, log: (message, level) => (level === 'error' || args.verbose ? log(message) : undefined)},
}).catch((error: unknown) => {
  log(`could not start the test cluster: ${error instanceof Error ? error.message : String(error)}`)
  process.exit(1)
})

const namespaces = (await cluster.api.list((await cluster.api.resource('v1', 'Namespace'))!)).items
  .map((n) => n.metadata.name)
  .filter((n) => !['default', 'kube-system', 'kube-public', 'kube-node-lease', 'istio-system'].includes(n))
const example = namespaces[0] ?? 'NAMESPACE'
const relative = path.relative(process.cwd(), kubeconfigPath) || kubeconfigPath

process.stdout.write(`
Test cluster ready: API server ${cluster.server!.url}, Istio ${DEFAULT_INSTALL.version} (ambient profile) on ${(await cluster.api.list((await cluster.api.resource('v1', 'Node'))!)).items.length} nodes.
Loaded ${fixtures.map((f) => path.relative(process.cwd(), f) || f).join(', ')} — namespaces: ${namespaces.join(', ') || '(none)'}.

  export KUBECONFIG=${kubeconfigPath}

  mesh-migrate census                     # or bin/run.js census from this checkout
  mesh-migrate inventory ${example}
  mesh-migrate plan ${example}
  mesh-migrate apply ${example} --step
  kubectl get pods -n ${example}             # kubectl works too

Ctrl+C stops the cluster (and removes ${relative}).
`)

let stopping = false
const stop = async (signal: string) => {
  if (stopping) return
  stopping = true
  log(`\n${signal}: stopping the test cluster…`)
  await cluster.stop().catch((error: unknown) => log(`stopping failed: ${String(error)}`))
  await rm(kubeconfigPath, {force: true})
  process.exit(0)
}
process.on('SIGINT', () => void stop('SIGINT'))
process.on('SIGTERM', () => void stop('SIGTERM'))
