// `npm run control-plane -- --kubeconfig FILE [--context NAME] [--install] [--pod-startup-ms N]
// [--waypoint-ready-ms N|never] [--verbose]`
//
// Runs only the fake control plane (workload controllers, kubelet, injection, istio-cni, istiod's
// waypoint handling) against an existing API server — e.g. an envtest kube-apiserver, or a test API
// server started elsewhere. With --install it first creates the control-plane fixture (istiod,
// webhooks, ztunnel and istio-cni DaemonSets, Nodes, GatewayClasses) where missing. Ctrl+C stops it.
import {parseArgs} from 'node:util'

import {clusterApiFromKubeconfig, installControlPlane, startControlPlane} from '../test/support/control-plane/index.js'

const usage = `Usage: npm run control-plane -- --kubeconfig FILE [--context NAME] [--install]
                             [--pod-startup-ms N] [--waypoint-ready-ms N|never] [--verbose]

  --kubeconfig FILE       the API server to act on (its credentials are the controllers')
  --context NAME          kubeconfig context (default: the current one)
  --install               create the control-plane fixture first (objects that exist are kept)
  --pod-startup-ms N      how long pods take to become ready (default 500)
  --waypoint-ready-ms N   delay before a waypoint is Programmed (default 1000; "never")
  --verbose               print notices as well as errors
`

function fail(message: string): never {
  process.stderr.write(`${message}\n\n${usage}`)
  process.exit(2)
}

let args
try {
  args = parseArgs({
    options: {
      kubeconfig: {type: 'string'},
      context: {type: 'string'},
      install: {type: 'boolean'},
      'pod-startup-ms': {type: 'string'},
      'waypoint-ready-ms': {type: 'string'},
      verbose: {type: 'boolean'},
      help: {type: 'boolean', short: 'h'},
    },
  }).values
} catch (error) {
  fail((error as Error).message)
}
if (args.help) {
  process.stdout.write(usage)
  process.exit(0)
}
if (!args.kubeconfig) fail('--kubeconfig FILE is required')

const number = (flag: string, value: string | undefined, fallback: number): number => {
  if (value === undefined) return fallback
  const n = Number(value)
  if (!Number.isInteger(n) || n < 0) fail(`--${flag} must be a non-negative integer, not "${value}"`)
  return n
}
const log = (message: string) => process.stderr.write(`${message}\n`)

try {
  const api = await clusterApiFromKubeconfig(args.kubeconfig, args.context ? {context: args.context} : {})
  if (args.install) {
    const installed = await installControlPlane(api)
    log(
      `control-plane fixture: ${installed.created.length} object(s) created, ${installed.existing.length} already there`,
    )
  }
  const controlPlane = await startControlPlane(api, {
    podStartupMs: number('pod-startup-ms', args['pod-startup-ms'], 500),
    waypoint: {
      readyDelayMs:
        args['waypoint-ready-ms'] === 'never' ? 'never' : number('waypoint-ready-ms', args['waypoint-ready-ms'], 1000),
    },
    log: (message, level) => (level === 'error' || args.verbose ? log(message) : undefined),
  })
  log(
    `fake control plane running against ${api.server} (context ${api.kubeConfig.getCurrentContext()}); Ctrl+C stops it`,
  )
  let stopping = false
  const stop = (signal: string) => {
    if (stopping) return
    stopping = true
    log(`\n${signal}: stopping the control plane`)
    controlPlane.stop()
    process.exit(0)
  }
  process.on('SIGINT', () => stop('SIGINT'))
  process.on('SIGTERM', () => stop('SIGTERM'))
} catch (error) {
  log(`control plane: ${error instanceof Error ? error.message : String(error)}`)
  const suggestion = (error as {suggestion?: string}).suggestion
  if (suggestion) log(suggestion)
  process.exit(1)
}
