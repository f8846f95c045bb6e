// Runs the test API server in the foreground for humans: `npx tsx test/support/apiserver/main.ts
// [--port N] [--kubeconfig FILE] [--builtin]`. Prints the URL and writes a kubeconfig.
import {startApiServer} from './index.js'

const args = process.argv.slice(2)
const arg = (name: string) => {
  const i = args.indexOf(name)
  return i >= 0 ? args[i + 1] : undefined
}

const server = await startApiServer({
  ...(arg('--port') ? {port: Number(arg('--port'))} : {}),
  ...(args.includes('--builtin') ? {crdFiles: 'builtin' as const} : {}),
})
const kubeconfig = arg('--kubeconfig') ?? '.mesh-migrate-tmp-kubeconfig.yaml'
await server.writeKubeconfig(kubeconfig)
process.stderr.write(
  `test API server listening on ${server.url}\nkubeconfig written to ${kubeconfig} (KUBECONFIG=${kubeconfig} kubectl get ns)\n`,
)
const stop = () => {
  void server.close().then(() => process.exit(0))
}
process.on('SIGINT', stop)
process.on('SIGTERM', stop)
