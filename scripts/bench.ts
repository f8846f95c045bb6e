// npm run bench — what mesh-migrate costs, measured (never asserted in tests):
//   1. CLI start-up: --help and offline commands against bare `node` start-up;
//   2. planning time on the example and on a large generated namespace;
//   3. API requests per command against the in-repo test cluster: one paginated LIST per kind for an
//      inventory, one cluster-wide LIST per kind for census — counted from the server's request log.
// Wall times are medians of repeated whole-process runs; request counts are exact.
import {spawn} from 'node:child_process'
import {mkdtemp, mkdir, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

import {stringify} from 'yaml'

import {startTestCluster} from '../test/support/cluster.js'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const BIN = path.join(ROOT, 'bin/run.js')
const RUNS = Number(process.env.BENCH_RUNS ?? 9)

interface Timing {
  name: string
  min: number
  median: number
  max: number
}

/**
 * Run the CLI once. Asynchronously: the test API server lives in this process, and a synchronous
 * spawn would block the event loop that has to answer the child's requests.
 */
function run(args: string[], opts: {cwd?: string; env?: NodeJS.ProcessEnv} = {}): Promise<{code: number | null; stderr: string; ms: number}> {
  return new Promise((resolve, reject) => {
    const start = process.hrtime.bigint()
    const child = spawn(process.execPath, args, {cwd: opts.cwd ?? ROOT, env: {...process.env, NO_COLOR: '1', ...opts.env}, stdio: ['ignore', 'ignore', 'pipe']})
    let stderr = ''
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
    child.on('error', reject)
    child.on('close', (code) => resolve({code, stderr, ms: Number(process.hrtime.bigint() - start) / 1e6}))
  })
}

async function time(name: string, args: string[], opts: {cwd?: string; env?: NodeJS.ProcessEnv} = {}): Promise<Timing> {
  process.stderr.write(`  ${name}…\n`)
  const samples: number[] = []
  // One warm-up run (file-system cache), then the counted runs.
  for (let i = 0; i <= RUNS; i++) {
    const r = await run(args, opts)
    if (r.code !== 0 && r.code !== 10) throw new Error(`${name}: exit ${r.code}: ${r.stderr.slice(0, 500)}`)
    if (i > 0) samples.push(r.ms)
  }
  samples.sort((a, b) => a - b)
  return {name, min: samples[0]!, median: samples[Math.floor(samples.length / 2)]!, max: samples.at(-1)!}
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)))
  return rows.map((r) => r.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!))).join('   ')).join('\n')
}

const ms = (n: number) => `${n.toFixed(0)} ms`

/** A namespace with `n` Deployments/Services, L4 and L7 policies and VirtualServices, plus `others` namespaces of config. */
async function largeFixture(dir: string, n: number, others: number): Promise<void> {
  const docs: unknown[] = [{apiVersion: 'v1', kind: 'Namespace', metadata: {name: 'big', labels: {'istio-injection': 'enabled'}}}]
  for (let i = 0; i < n; i++) {
    const app = `svc-${i}`
    docs.push(
      {apiVersion: 'v1', kind: 'Service', metadata: {name: app, namespace: 'big'}, spec: {selector: {app}, ports: [{name: 'http', port: 8080}]}},
      {apiVersion: 'apps/v1', kind: 'Deployment', metadata: {name: app, namespace: 'big'}, spec: {selector: {matchLabels: {app}}, template: {metadata: {labels: {app}}, spec: {containers: [{name: app, image: `example/${app}:1`}]}}}},
      i % 2 === 0
        ? {apiVersion: 'security.istio.io/v1', kind: 'AuthorizationPolicy', metadata: {name: `${app}-get`, namespace: 'big'}, spec: {selector: {matchLabels: {app}}, action: 'ALLOW', rules: [{to: [{operation: {methods: ['GET']}}]}]}}
        : {apiVersion: 'security.istio.io/v1', kind: 'AuthorizationPolicy', metadata: {name: `${app}-from`, namespace: 'big'}, spec: {selector: {matchLabels: {app}}, action: 'ALLOW', rules: [{from: [{source: {namespaces: ['big']}}]}]}},
      {apiVersion: 'networking.istio.io/v1', kind: 'VirtualService', metadata: {name: app, namespace: 'big'}, spec: {hosts: [app], http: [{route: [{destination: {host: app}}], timeout: '2s'}]}},
    )
  }
  for (let j = 0; j < others; j++) {
    const ns = `other-${j}`
    docs.push({apiVersion: 'v1', kind: 'Namespace', metadata: {name: ns, labels: {'istio-injection': 'enabled'}}})
    for (let k = 0; k < 20; k++) docs.push({apiVersion: 'networking.istio.io/v1', kind: 'DestinationRule', metadata: {name: `dr-${k}`, namespace: ns}, spec: {host: `svc-${k}.${ns}.svc.cluster.local`, trafficPolicy: {connectionPool: {tcp: {maxConnections: 100}}}}})
  }
  await mkdir(dir, {recursive: true})
  await writeFile(path.join(dir, 'big.yaml'), docs.map((d) => stringify(d)).join('---\n'))
}

async function main(): Promise<void> {
  const tmp = await mkdtemp(path.join(os.tmpdir(), 'mesh-migrate-bench-'))
  const big = path.join(tmp, 'big')
  await largeFixture(big, 300, 50)

  process.stderr.write(`Timing whole processes, ${RUNS} runs each after a warm-up (node ${process.version}, ${os.cpus().length} CPUs)…\n`)
  const timings: Timing[] = []
  for (const [name, args] of [
    ['node -e "" (bare start-up)', ['-e', '']],
    ['mesh-migrate --help', [BIN, '--help']],
    ['mesh-migrate validate (example plan)', [BIN, 'validate', 'plans/examples/bookinfo.yaml']],
    ['inventory bookinfo --manifests (example)', [BIN, 'inventory', 'bookinfo', '--manifests', 'examples/bookinfo', '-o', 'json']],
    ['plan bookinfo --manifests (example)', [BIN, 'plan', 'bookinfo', '--manifests', 'examples/bookinfo', '--out', path.join(tmp, 'bookinfo.yaml')]],
    ['inventory big --manifests -o json (300 services, 50 other namespaces)', [BIN, 'inventory', 'big', '--manifests', big, '-o', 'json']],
    ['plan big --manifests (300 services, 50 other namespaces)', [BIN, 'plan', 'big', '--manifests', big, '--accept-lost', 'E11/*', '--out', path.join(tmp, 'big.yaml')]],
  ] as const) {
    timings.push(await time(name, [...args]))
  }

  // Against the in-repo API server with the example loaded.
  const cluster = await startTestCluster({fixture: path.join(ROOT, 'examples/bookinfo'), quiet: true})
  const requestRows: string[][] = [['command (against the test cluster)', 'requests', 'LISTs (first pages)', 'GETs', 'median']]
  try {
    const server = cluster.server!
    const kube = ['--kubeconfig', cluster.kubeconfigPath]
    const cwd = await mkdtemp(path.join(tmp, 'work-'))
    for (const [name, args] of [
      ['inventory bookinfo', ['inventory', 'bookinfo', '-o', 'json']],
      ['plan bookinfo', ['plan', 'bookinfo']],
      ['census', ['census', '-o', 'json']],
      ['preflight bookinfo', ['preflight', 'bookinfo', '-o', 'json']],
    ] as const) {
      server.resetRequestLog()
      const r = await run([BIN, ...args, ...kube], {cwd})
      if (r.code !== 0) throw new Error(`${name}: exit ${r.code}: ${r.stderr.slice(0, 500)}`)
      const mine = server.requests.filter((e) => e.user === 'admin')
      const lists = mine.filter((e) => e.verb === 'list' && !e.query.continue).length
      const gets = mine.filter((e) => e.verb === 'get').length
      const t = await time(name, [BIN, ...args, ...kube], {cwd})
      requestRows.push([name, String(mine.length), String(lists), String(gets), ms(t.median)])
    }
  } finally {
    await cluster.stop()
  }

  const bare = timings[0]!.median
  process.stdout.write(`\n${table([
    ['command', 'min', 'median', 'max', 'median − bare node'],
    ...timings.map((t) => [t.name, ms(t.min), ms(t.median), ms(t.max), t === timings[0] ? '' : `+${ms(t.median - bare)}`]),
  ])}\n\n${table(requestRows)}\n\nRequests are the tool's own (the fake control plane's are excluded); discovery is one GET per group-version and is included in "requests".\n`)
}

await main()
