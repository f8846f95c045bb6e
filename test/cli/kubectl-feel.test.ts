// Issue 24 through the built CLI, offline, at 80 and 200 columns (COLUMNS set here, never inherited):
// usage errors of flags without values, `version`, the root help in workflow order, the Mermaid gantt
// as Mermaid's own parser reads it, names and ids kept whole in tables, and a black-holed API server.
import {spawn} from 'node:child_process'
import {mkdtemp, writeFile} from 'node:fs/promises'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'

import stringWidth from 'string-width'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {BIN, cliEnv, hasStackTrace, runCli} from '../support/cli.js'
import {bashCompletions, BIN_DIR, kubectlPluginCompletions} from '../support/completion.js'
import {parseGantt} from '../support/mermaid.js'
import {schemaProblems} from '../support/schemas.js'

const PLAN = 'plans/examples/bookinfo.yaml'
const WIDTHS = ['80', '200'] as const
/** No kubeconfig: nothing these tests run may reach a cluster by accident. */
const OFFLINE = {KUBECONFIG: '/nonexistent/kubeconfig'}

describe.each(WIDTHS)('usage errors at %s columns', (columns) => {
  const env = {...OFFLINE, COLUMNS: columns}

  it('a flag without its value exits 2 with Error/Next, and -o json prints an Error document', async () => {
    for (const args of [
      ['apply', PLAN, '--to'],
      ['status', PLAN, '--request-timeout'],
    ]) {
      const flag = args.at(-1)!
      const r = await runCli(args, {env})
      expect(r.code, args.join(' ')).toBe(2)
      expect(r.stdout).toBe('')
      expect(r.stderr).toContain(`Error: ${flag} expects a value`)
      expect(r.stderr).toContain(`Next: Give ${flag} a value (${flag}=VALUE), or leave the flag out.`)
      expect(r.stderr).not.toContain('›')
      const json = await runCli([...args.slice(0, -1), '-o', 'json', flag], {env})
      expect(json.code).toBe(2)
      expect(schemaProblems(json.stdout, 'Error')).toEqual([])
      expect(JSON.parse(json.stdout).error).toMatchObject({name: 'UsageError', exitCode: 2})
    }
  }, 120_000)

  it('a bare --dry-run names the values it takes', async () => {
    const r = await runCli(['apply', PLAN, '--dry-run'], {env})
    expect(r.code).toBe(2)
    expect(r.stderr).toContain('Error: --dry-run expects one of these values: none, server')
    expect(r.stderr).toContain('Next: Give --dry-run one of its values: --dry-run=none, --dry-run=server.')
  }, 60_000)

  it('a repeated -o takes the last value, as kubectl does', async () => {
    const yaml = await runCli(['show', PLAN, '-o', 'json', '-o', 'yaml'], {env})
    expect(yaml.code).toBe(0)
    expect(yaml.stdout).toMatch(/^apiVersion: mesh-migrate.io\/v1alpha1\nkind: MigrationPlan\n/)
    const json = await runCli(['show', PLAN, '--output=yaml', '-ojson'], {env})
    expect(json.code).toBe(0)
    expect(JSON.parse(json.stdout).kind).toBe('MigrationPlan')
    // Any other flag given twice is still refused, as a usage error.
    const twice = await runCli(['apply', PLAN, '--to', 'a', '--to', 'b'], {env})
    expect(twice.code).toBe(2)
    expect(twice.stderr).toContain('Next: Give --to once.')
  }, 60_000)
})

describe.each(WIDTHS)('version and root help at %s columns', (columns) => {
  const env = {...OFFLINE, COLUMNS: columns}

  it('version prints the client and Node versions, and says why there is no cluster', async () => {
    const r = await runCli(['version'], {env})
    expect(r.code).toBe(0)
    expect(r.stdout).toMatch(/^Client Version: \d+\.\d+\.\d+\nNode Version: v\d+\.\d+\.\d+\n$/)
    expect(r.stderr).toContain('Note: no cluster version: none of the files in $KUBECONFIG exist')
    const json = await runCli(['version', '-o', 'json'], {env})
    expect(json.code).toBe(0)
    expect(schemaProblems(json.stdout, 'Version')).toEqual([])
    const doc = JSON.parse(json.stdout)
    expect(doc.node.version).toMatch(/^v\d+\./)
    expect(doc.cluster.istio).toBeUndefined()
    expect(doc.cluster.error).toContain('$KUBECONFIG')
  }, 60_000)

  it('root help lists the commands in workflow order', async () => {
    const r = await runCli(['--help'], {env: {...env, OCLIF_COLUMNS: columns}})
    expect(r.code).toBe(0)
    const listed = [...r.stdout.matchAll(/^ {2}([a-z]+) {2,}/gm)].map((m) => m[1])
    expect(listed.slice(0, 10)).toEqual([
      'census',
      'inventory',
      'preflight',
      'plan',
      'show',
      'validate',
      'apply',
      'status',
      'rollback',
      'unlock',
    ])
    expect(listed).toContain('version')
  }, 60_000)
})

describe.each(WIDTHS)('show -o markdown at %s columns: the gantt as Mermaid reads it', (columns) => {
  it('parses, and lays the steps out one after another', async () => {
    const r = await runCli(['show', PLAN, '-o', 'markdown'], {env: {...OFFLINE, COLUMNS: columns}})
    expect(r.code).toBe(0)
    const text = /```mermaid\n([\s\S]*?)```/.exec(r.stdout)?.[1]
    expect(text).toBeDefined()
    const tasks = await parseGantt(text!)
    const steps = tasks.filter((t) => t.section === 'Steps')
    expect(steps.map((s) => s.task.split(' ')[1])).toEqual([
      'start',
      'preflight',
      'create-waypoint',
      'wait-waypoint',
      'create-policies',
      'bind-waypoint',
      'enable-ambient',
      'remove-sidecar-injection',
      'restart-workloads',
      'delete-sidecar-policies',
      'verify-dataplane',
    ])
    // Step k occupies [k, k+1): each starts where the one before it ends, none overlaps another.
    steps.forEach((s, k) => expect([s.start, s.end], s.task).toEqual([k, k + 1]))
    // The data plane: sidecar until restart-workloads (step 8), ambient after it, end to end.
    const dataPlane = tasks.filter((t) => t.section === 'Data plane').map((t) => [t.task, t.start, t.end])
    expect(dataPlane).toEqual([
      ['6 workloads sidecar', 0, 8],
      ['6 workloads ambient', 8, 11],
    ])
    const hazard = tasks.find((t) => t.task.startsWith('AuthorizationPolicy/ratings-get-only deny-all'))
    expect([hazard?.start, hazard?.end]).toEqual([8, 9])
  }, 60_000)

  it('the parser used here rejects what Mermaid cannot draw (the check can fail)', async () => {
    await expect(parseGantt('gantt\n  dateFormat x\n  section S\n  a task without data\n')).rejects.toThrow(
      /Parse error/,
    )
  })
})

/** A loopback listener that accepts connections and never answers: no TLS handshake, no HTTP. */
let blackHole: net.Server
let blackHoleConfig: string
const held: net.Socket[] = []

beforeAll(async () => {
  blackHole = net.createServer((socket) => held.push(socket))
  await new Promise<void>((resolve) => blackHole.listen(0, '127.0.0.1', resolve))
  const {port} = blackHole.address() as net.AddressInfo
  const dir = await mkdtemp(path.join(os.tmpdir(), 'mesh-migrate-blackhole-'))
  blackHoleConfig = path.join(dir, 'kubeconfig')
  await writeFile(
    blackHoleConfig,
    [
      'apiVersion: v1',
      'kind: Config',
      `clusters: [{name: silent, cluster: {server: "https://127.0.0.1:${port}", insecure-skip-tls-verify: true}}]`,
      'users: [{name: admin, user: {token: t0ken}}]',
      'contexts: [{name: admin, context: {cluster: silent, user: admin}}]',
      'current-context: admin',
    ].join('\n'),
  )
})

afterAll(async () => {
  for (const socket of held) socket.destroy()
  await new Promise((resolve) => blackHole.close(resolve))
})

/** Run the CLI, noting when (ms after start) the first stderr line containing `marker` came. */
function runTimed(args: string[], env: NodeJS.ProcessEnv, marker: string) {
  return new Promise<{code: number | null; stdout: string; stderr: string; markerAt?: number; endedAt: number}>(
    (resolve, reject) => {
      const started = Date.now()
      const child = spawn(process.execPath, [BIN, ...args], {env: cliEnv({CI: undefined, ...env})})
      let stdout = ''
      let stderr = ''
      let markerAt: number | undefined
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()))
      child.stderr.on('data', (d: Buffer) => {
        stderr += d.toString()
        if (markerAt === undefined && stderr.includes(marker)) markerAt = Date.now() - started
      })
      child.on('error', reject)
      child.on('close', (code) =>
        resolve({code, stdout, stderr, ...(markerAt === undefined ? {} : {markerAt}), endedAt: Date.now() - started}),
      )
    },
  )
}

describe.each(WIDTHS)('a server that accepts connections and never answers, at %s columns', (columns) => {
  it('says what the command waits for within 15 s and fails with Error/Next within a minute', async () => {
    const r = await runTimed(
      ['inventory', 'bookinfo'],
      {KUBECONFIG: blackHoleConfig, COLUMNS: columns},
      'Waiting for the API server',
    )
    expect(r.code).toBe(1)
    expect(r.markerAt, r.stderr).toBeLessThan(15_000)
    expect(r.endedAt).toBeLessThan(60_000)
    const {port} = blackHole.address() as net.AddressInfo
    expect(r.stderr).toMatch(
      new RegExp(
        `Waiting for the API server https://127\\.0\\.0\\.1:${port} \\(context admin\\): no answer for 5s to GET /api`,
      ),
    )
    expect(r.stderr).toContain(`Error: read API discovery`)
    expect(r.stderr).toContain(`(TLS handshake with 127.0.0.1:${port} timed out after 10s)`)
    expect(r.stderr).toMatch(/^Next: Check the kubeconfig's server URL and port/m)
    expect(hasStackTrace(r.stderr)).toBe(false)
    expect(r.stdout).toBe('')
  }, 90_000)

  it('an explicit --request-timeout is what bounds the request once connected', async () => {
    const r = await runCli(['version', '-o', 'json', '--request-timeout', '2s'], {
      env: {KUBECONFIG: blackHoleConfig, COLUMNS: columns},
    })
    expect(r.code).toBe(0)
    expect(schemaProblems(r.stdout, 'Version')).toEqual([])
    expect(JSON.parse(r.stdout).cluster.error).toContain('the request timed out')
  }, 90_000)
})

/** A namespace whose findings have long ids: an L7-only ALLOW leaves an L4 part that allows everything. */
const WEB = `apiVersion: v1
kind: Namespace
metadata: {name: web, labels: {istio-injection: enabled}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: frontend, namespace: web}
spec:
  selector: {matchLabels: {app: frontend}}
  template:
    metadata: {labels: {app: frontend}}
    spec: {containers: [{name: app, image: nginx}]}
---
apiVersion: v1
kind: Service
metadata: {name: frontend, namespace: web}
spec: {selector: {app: frontend}, ports: [{port: 80, name: http}]}
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: frontend-get-only, namespace: web}
spec:
  selector: {matchLabels: {app: frontend}}
  action: ALLOW
  rules: [{to: [{operation: {methods: [GET]}}]}]
`
const LONG_ID = 'retarget/AuthorizationPolicy/web/frontend-get-only/l4-part-allows-all'

describe.each(WIDTHS)('names and ids whole at %s columns', (columns) => {
  const env = {...OFFLINE, COLUMNS: columns}
  const width = Number(columns)
  /** Every line's whitespace-separated words. */
  const words = (text: string) => new Set(text.split(/\s+/))

  it('plan: the finding ids --accept-lost takes and every object reference stay whole on one line', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'mesh-migrate-names-'))
    await writeFile(path.join(dir, 'web.yaml'), WEB)
    const r = await runCli(['plan', 'web', '--manifests', 'web.yaml'], {cwd: dir, env})
    expect(r.code, r.stderr).toBe(0)
    const seen = words(r.stdout)
    expect(seen).toContain(LONG_ID)
    for (const ref of ['web/frontend-get-only-waypoint', 'web/frontend-get-only-ztunnel', 'web/frontend-get-only-l4'])
      expect(seen, ref).toContain(ref)
    // What is wider than the terminal is a row carrying a word that alone does not fit beside its columns.
    if (width === 200) expect(Math.max(...r.stdout.split('\n').map((l) => stringWidth(l)))).toBeLessThanOrEqual(200)
    // Free text is cut between words, never inside one.
    for (const line of r.stdout.split('\n').filter((l) => l.endsWith('…'))) expect(line).toMatch(/ \S+…$/)
    const wide = await runCli(['show', 'plans/web.yaml', '-o', 'wide'], {cwd: dir, env})
    expect(wide.code).toBe(0)
    expect(wide.stdout).not.toContain('…')
    expect(words(wide.stdout)).toContain(LONG_ID)
  }, 60_000)

  it('show: the step table keeps object names whole (no bookinfo/productpage-ingress-only- / waypoint)', async () => {
    const r = await runCli(['show', PLAN], {env})
    expect(r.code).toBe(0)
    const seen = words(r.stdout)
    for (const ref of [
      'bookinfo/productpage-ingress-only-waypoint',
      'bookinfo/reviews-from-productpage-ztunnel',
      'E18/PeerAuthentication/bookinfo/default/strict',
      'E21/AuthorizationPolicy/bookinfo/productpage-ingress-only',
    ])
      expect(seen, ref).toContain(ref)
    expect(r.stdout).not.toMatch(/-\n\s+waypoint\b/)
  }, 60_000)
})

/** A kubeconfig whose server refuses connections (a closed loopback port) and whose context sets `namespace`. */
async function refusingKubeconfig(namespace?: string): Promise<string> {
  const closed = net.createServer()
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve))
  const {port} = closed.address() as net.AddressInfo
  await new Promise((resolve) => closed.close(resolve))
  const file = path.join(await mkdtemp(path.join(os.tmpdir(), 'mesh-migrate-ctx-')), 'kubeconfig')
  const ns = namespace ? `, namespace: ${namespace}` : ''
  await writeFile(
    file,
    [
      'apiVersion: v1',
      'kind: Config',
      `clusters: [{name: c, cluster: {server: "https://127.0.0.1:${port}", insecure-skip-tls-verify: true}}]`,
      'users: [{name: u, user: {token: t0ken}}]',
      `contexts: [{name: admin, context: {cluster: c, user: u${ns}}}, {name: other, context: {cluster: c, user: u, namespace: shop}}]`,
      'current-context: admin',
    ].join('\n'),
  )
  return file
}

describe.each(WIDTHS)('the namespace of the context at %s columns', (columns) => {
  it('is taken when -n and the argument are absent, and said on stderr', async () => {
    const kubeconfig = await refusingKubeconfig('bookinfo')
    for (const [args, expected] of [
      [['inventory'], 'namespace bookinfo (from context admin)'],
      [['preflight'], 'namespace bookinfo (from context admin)'],
      [['plan', '--out', '-'], 'namespace bookinfo (from context admin)'],
      [['inventory', '--context', 'other'], 'namespace shop (from context other)'],
    ] as const) {
      const r = await runCli([...args], {env: {KUBECONFIG: kubeconfig, COLUMNS: columns}})
      expect(r.stderr.split('\n')[0], args.join(' ')).toBe(expected)
      // It went on to the cluster (which refuses): the namespace was taken, not refused as missing.
      expect(r.code).toBe(1)
      expect(r.stderr).toContain('no answer from https://127.0.0.1:')
    }
    // Given explicitly, nothing is said about the context.
    const given = await runCli(['inventory', 'reviews'], {env: {KUBECONFIG: kubeconfig, COLUMNS: columns}})
    expect(given.stderr).not.toContain('(from context')
  }, 120_000)

  it('a context without a namespace is a usage error that says how to give one', async () => {
    const kubeconfig = await refusingKubeconfig()
    const r = await runCli(['inventory'], {env: {KUBECONFIG: kubeconfig, COLUMNS: columns}})
    expect(r.code).toBe(2)
    expect(r.stderr).toContain('Error: missing the namespace')
    expect(r.stderr).toContain('kubectl config set-context --current --namespace NAMESPACE')
  }, 60_000)
})

describe.each(WIDTHS)('completion in bash at %s columns', (columns) => {
  let dir: string
  let kubeconfig: string
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'mesh-migrate-complete-'))
    await writeFile(path.join(dir, 'web.yaml'), WEB)
    const planned = await runCli(['plan', 'web', '--manifests', 'web.yaml'], {cwd: dir, env: OFFLINE})
    expect(planned.code, planned.stderr).toBe(0)
    kubeconfig = await refusingKubeconfig('web')
  }, 60_000)
  const complete = (words: string[]) =>
    bashCompletions(words, {cwd: dir, env: {KUBECONFIG: kubeconfig, COLUMNS: columns}})

  it('commands in workflow order, flags, -o formats, --context contexts', async () => {
    expect(await complete(['ro'])).toEqual(['rollback'])
    expect((await complete([''])).slice(0, 4)).toEqual(['census', 'inventory', 'preflight', 'plan'])
    // show's -o values, the fleet's GitOps hand-off (argocd, flux; issue 22) included.
    expect(await complete(['show', 'plans/web.yaml', '-o', ''])).toEqual([
      'table',
      'wide',
      'markdown',
      'patches',
      'json',
      'yaml',
      'argocd',
      'flux',
    ])
    expect(await complete(['apply', '--dry-run', ''])).toEqual(['none', 'server'])
    expect(await complete(['plan', '--context', ''])).toEqual(['admin', 'other'])
    expect(await complete(['apply', '--dr'])).toEqual(['--dry-run'])
  }, 120_000)

  it('apply/rollback: plan files and namespaces with plans; --to: the step ids of the plan on the line', async () => {
    expect(await complete(['apply', ''])).toEqual(['web', 'plans/web.yaml'])
    expect(await complete(['rollback', 'w'])).toEqual(['web'])
    expect(await complete(['apply', 'web', '--to', 'cr'])).toEqual(['create-waypoint', 'create-policies'])
    expect(await complete(['apply', '--to', 'delete'])).toEqual(['delete-sidecar-policies'])
    // No plan of that name: nothing to offer (and no error in the shell).
    expect(await complete(['apply', 'nope', '--to', ''])).toEqual([])
  }, 120_000)

  it('kubectl mesh-migrate <TAB>: kubectl_complete-mesh_migrate answers in cobra __complete format', async () => {
    const out = await kubectlPluginCompletions(['apply', 'web', '--to', 'wait'], {
      cwd: dir,
      env: {KUBECONFIG: kubeconfig, COLUMNS: columns},
    })
    expect(out).toEqual(['wait-waypoint', ':4'])
    // The plugin itself runs from bin/ on PATH, without npm link.
    const {execFile} = await import('node:child_process')
    const help = await new Promise<string>((resolve, reject) =>
      execFile(
        'kubectl-mesh_migrate',
        ['--help'],
        {env: cliEnv({PATH: `${BIN_DIR}${path.delimiter}${process.env.PATH}`})},
        (e, o) => (e ? reject(e) : resolve(o)),
      ),
    )
    expect(help).toContain('kubectl mesh-migrate')
  }, 120_000)

  it('zsh and fish scripts call back into the CLI the same way', async () => {
    for (const shell of ['zsh', 'fish']) {
      const r = await runCli(['completion', shell], {env: {COLUMNS: columns}})
      expect(r.code).toBe(0)
      expect(r.stdout).toContain('mesh-migrate __complete')
    }
    const bad = await runCli(['completion', 'tcsh'], {env: {COLUMNS: columns}})
    expect(bad.code).toBe(2)
  }, 60_000)
})
