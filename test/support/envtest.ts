// A real kube-apiserver for the tests, the envtest way (controller-runtime's envtest convention):
// etcd + kube-apiserver from the folder KUBEBUILDER_ASSETS names, on free loopback ports, HTTPS with
// the server's self-signed certificate, token users, RBAC. No controllers, scheduler or kubelets:
// the fake control plane (test/support/control-plane) plays them.
//
//   const env = await startEnvtest()        // ~4 s
//   env.url                                  // https://127.0.0.1:PORT
//   env.version                              // "v1.32.13" (the server's /version gitVersion)
//   env.kubeconfig('reader')                 // kubeconfig text for one of ENVTEST_USERS
//   await env.writeKubeconfig(file, 'admin') // the same, written to a file
//   await env.stop()                         // kills exactly the two processes it started, removes its folder
//
// Where the binaries come from (envtestAssets): KUBEBUILDER_ASSETS when set; else, when
// ../shared/tools/envtest/ exists, what its setup.sh prepares; else none (callers fall back or skip).
//
// Webhook admission is disabled (MutatingAdmissionWebhook, ValidatingAdmissionWebhook): a real
// server *calls* registered webhooks, and Istio's injector is a Service on a cluster IP that is not
// on this machine — traffic must never leave loopback. The configurations are still stored and read.
import {type ChildProcess, execFile, spawn} from 'node:child_process'
import {generateKeyPairSync} from 'node:crypto'
import {existsSync} from 'node:fs'
import {mkdir, mkdtemp, readFile, rm, writeFile} from 'node:fs/promises'
import {createServer} from 'node:net'
import os from 'node:os'
import path from 'node:path'
import {promisify} from 'node:util'

import {inject} from 'vitest'

import {SHARED_DIR} from './shared.js'

export const ENVTEST_DIR = path.join(SHARED_DIR, 'tools/envtest')
export const ASSETS_ENV = 'KUBEBUILDER_ASSETS'

/**
 * The token users of the test server. Names match what the in-repo server used (USERS in
 * cluster.ts), so field managers and request logs still tell the tool, the harness and the control
 * plane apart.
 */
export const ENVTEST_USERS = {
  /** The tool's identity (cluster admin). */
  admin: {name: 'admin', groups: ['system:masters']},
  /** Reads what the tool reads (ClusterRole mesh-migrate-test-reader), writes nothing. */
  reader: {name: 'reader', groups: []},
  /** No RBAC grant at all: every request is Forbidden by the real authorizer. */
  nobody: {name: 'nobody', groups: []},
  /** The fake control plane (acts cluster-wide, as kube-controller-manager and istiod do). */
  controlPlane: {
    name: 'system:serviceaccount:istio-system:mesh-migrate-test-control-plane',
    groups: ['system:serviceaccounts', 'system:masters'],
  },
  /** The test harness arranging state. */
  harness: {name: 'mesh-migrate-test-harness', groups: ['system:masters']},
} as const

export type EnvtestUser = keyof typeof ENVTEST_USERS

/** What a running test server is, serialisable (vitest's provide/inject hands it to test workers). */
export interface EnvtestInfo {
  url: string
  version: string
  /** PEM of the server's self-signed serving certificate chain (use as certificate-authority). */
  caPem: string
  /** user → bearer token. */
  tokens: Record<EnvtestUser, string>
}

export interface Envtest extends EnvtestInfo {
  kubeconfig(user?: EnvtestUser, opts?: {context?: string}): string
  writeKubeconfig(file: string, user?: EnvtestUser, opts?: {context?: string}): Promise<void>
  /**
   * Stops the kube-apiserver this call started (SIGTERM, by PID), keeps it down for `downMs` (connections to its port
   * are refused meanwhile; `onDown` is called once it is gone), then starts it again on the same port with the same
   * etcd data and certificate; resolves once /readyz answers 200 again.
   */
  restartApiServer(opts: {downMs: number; onDown?: () => void}): Promise<void>
  /** Kills the etcd and kube-apiserver this call started (by PID) and removes their folder. */
  stop(): Promise<void>
}

/** The ClusterRole of the read-only user: get/list/watch on everything the tool reads (view-like, cluster-wide). */
export const READER_ROLE = 'mesh-migrate-test-reader'

/** Kubeconfig text for `user` of a running server (TLS verified against the server's own certificate). */
export function envtestKubeconfig(
  info: EnvtestInfo,
  user: EnvtestUser = 'admin',
  opts: {context?: string} = {},
): string {
  return tokenKubeconfig(info.url, info.tokens[user], {...opts, caPem: info.caPem, user})
}

/**
 * Kubeconfig text for a bearer token at `server`: TLS verified with `caPem`, or, for a plain-http
 * loopback server (the fault proxy), `insecure-skip-tls-verify` as the tool requires for http.
 */
export function tokenKubeconfig(
  server: string,
  token: string,
  opts: {context?: string; caPem?: string; user?: string} = {},
): string {
  const context = opts.context ?? 'envtest'
  const user = opts.user ?? 'user'
  const cluster = opts.caPem
    ? {server, 'certificate-authority-data': Buffer.from(opts.caPem).toString('base64')}
    : {server, 'insecure-skip-tls-verify': true}
  return JSON.stringify(
    {
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{name: 'envtest', cluster}],
      users: [{name: user, user: {token}}],
      contexts: [{name: context, context: {cluster: 'envtest', user}}],
      'current-context': context,
    },
    null,
    2,
  )
}

const execFileP = promisify(execFile)

/**
 * The KUBEBUILDER_ASSETS folder: the variable when set, else ../shared/tools/envtest/setup.sh's
 * folder when the shared tools are present, else undefined.
 */
export async function envtestAssets(): Promise<string | undefined> {
  const fromEnv = process.env[ASSETS_ENV]
  if (fromEnv) return fromEnv
  const setup = path.join(ENVTEST_DIR, 'setup.sh')
  if (!existsSync(setup)) return undefined
  const {stdout} = await execFileP(setup, [], {encoding: 'utf8'})
  return stdout.trim().split('\n').at(-1)
}

/** A port nobody listens on right now (the kernel picks it); a race with others is retried by the caller. */
async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer()
    s.once('error', reject)
    s.listen(0, '127.0.0.1', () => {
      const {port} = s.address() as {port: number}
      s.close(() => resolve(port))
    })
  })
}

/**
 * Children still running. If this process exits without stop() (a worker ended while a test that
 * started a server timed out), they are killed on the way out: kube-apiserver would die of SIGPIPE
 * on its next log line, but a quiet etcd would be left behind.
 */
const running = new Set<ChildProcess>()
process.on('exit', () => {
  for (const child of running) {
    try {
      if (child.pid !== undefined && child.exitCode === null) process.kill(child.pid, 'SIGKILL')
    } catch {
      // already gone
    }
  }
})

function startProcess(
  bin: string,
  args: string[],
  logFile: string,
): {child: ChildProcess; exited: Promise<number | null>; log: () => Promise<string>} {
  const child = spawn(bin, args, {stdio: ['ignore', 'pipe', 'pipe']})
  const chunks: Buffer[] = []
  child.stdout!.on('data', (d: Buffer) => chunks.push(d))
  child.stderr!.on('data', (d: Buffer) => chunks.push(d))
  running.add(child)
  const exited = new Promise<number | null>((resolve) =>
    child.on('exit', (code) => {
      running.delete(child)
      resolve(code)
    }),
  )
  child.on('error', () => undefined)
  const log = async () => {
    const text = Buffer.concat(chunks).toString()
    await writeFile(logFile, text).catch(() => undefined)
    return text
  }
  return {child, exited, log}
}

async function stopProcess(p: {child: ChildProcess; exited: Promise<number | null>}): Promise<void> {
  if (p.child.exitCode !== null || p.child.signalCode !== null || p.child.pid === undefined) return
  process.kill(p.child.pid, 'SIGTERM')
  const timeout = new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), 10_000).unref())
  if ((await Promise.race([p.exited, timeout])) === 'timeout') {
    process.kill(p.child.pid, 'SIGKILL')
    await p.exited
  }
}

/** Polls `check` until it is true; fails with the process log when the process exits or time runs out. */
async function waitUntil(
  what: string,
  check: () => Promise<boolean>,
  proc: {exited: Promise<number | null>; log: () => Promise<string>},
  timeoutMs: number,
): Promise<void> {
  let exitCode: number | null | undefined
  void proc.exited.then((c) => (exitCode = c))
  const deadline = Date.now() + timeoutMs
  for (;;) {
    if (exitCode !== undefined)
      throw new Error(`${what} exited (${exitCode}) before it was ready:\n${(await proc.log()).slice(-3000)}`)
    if (await check().catch(() => false)) return
    if (Date.now() > deadline)
      throw new Error(`${what} was not ready within ${timeoutMs / 1000}s:\n${(await proc.log()).slice(-3000)}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

/** An HTTPS request to the server, trusting its own certificate. */
async function serverRequest(
  info: {url: string; caPem: string},
  token: string,
  method: string,
  urlPath: string,
  body?: unknown,
): Promise<{status: number; body: string}> {
  const https = await import('node:https')
  return new Promise((resolve, reject) => {
    const req = https.request(
      `${info.url}${urlPath}`,
      {
        method,
        ca: info.caPem,
        headers: {Authorization: `Bearer ${token}`, ...(body ? {'Content-Type': 'application/json'} : {})},
      },
      (res) => {
        let text = ''
        res.on('data', (d: Buffer) => (text += d.toString()))
        res.on('end', () => resolve({status: res.statusCode ?? 0, body: text}))
      },
    )
    req.on('error', reject)
    req.end(body ? JSON.stringify(body) : undefined)
  })
}

async function grantReader(info: EnvtestInfo): Promise<void> {
  const admin = info.tokens.admin
  const role = {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: {name: READER_ROLE},
    rules: [{apiGroups: ['*'], resources: ['*'], verbs: ['get', 'list', 'watch']}],
  }
  const binding = {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: {name: READER_ROLE},
    roleRef: {apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: READER_ROLE},
    subjects: [{apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: ENVTEST_USERS.reader.name}],
  }
  for (const [plural, obj] of [
    ['clusterroles', role],
    ['clusterrolebindings', binding],
  ] as const) {
    const r = await serverRequest(info, admin, 'POST', `/apis/rbac.authorization.k8s.io/v1/${plural}`, obj)
    if (r.status !== 201) throw new Error(`could not create ${plural}/${READER_ROLE}: ${r.status} ${r.body}`)
  }
}

/** What a caller may fix about a server: tokens (per user; random otherwise) and the API port (free otherwise). */
export interface EnvtestOptions {
  assets?: string
  tokens?: Partial<Record<EnvtestUser, string>>
  apiPort?: number
  /**
   * Admission plugins to disable besides the webhooks (which never are: a webhook's Service would resolve off
   * this machine); the bench disables ServiceAccount (no controller-manager creates `default` ServiceAccounts).
   */
  disableAdmission?: string[]
}

async function startOnce(assets: string, dir: string, opts: EnvtestOptions): Promise<Envtest> {
  const [etcdClient, etcdPeer, apiPort] = [await freePort(), await freePort(), opts.apiPort ?? (await freePort())]
  const {privateKey, publicKey} = generateKeyPairSync('rsa', {modulusLength: 2048})
  await writeFile(path.join(dir, 'sa.key'), privateKey.export({type: 'pkcs1', format: 'pem'}))
  await writeFile(path.join(dir, 'sa.pub'), publicKey.export({type: 'spki', format: 'pem'}))
  const tokens = Object.fromEntries(
    Object.keys(ENVTEST_USERS).map((u) => [
      u,
      opts.tokens?.[u as EnvtestUser] ??
        `${u}-${Math.random().toString(36).slice(2)}${Math.random().toString(36).slice(2)}`,
    ]),
  ) as Record<EnvtestUser, string>
  const csv = Object.entries(ENVTEST_USERS).map(
    ([u, {name, groups}]) =>
      `${tokens[u as EnvtestUser]},${name},${u}-uid${groups.length > 0 ? `,"${groups.join(',')}"` : ''}`,
  )
  await writeFile(path.join(dir, 'tokens.csv'), `${csv.join('\n')}\n`)
  await mkdir(path.join(dir, 'certs'), {recursive: true})

  const etcdUrl = `http://127.0.0.1:${etcdClient}`
  const etcd = startProcess(
    path.join(assets, 'etcd'),
    [
      '--data-dir',
      path.join(dir, 'etcd'),
      '--listen-client-urls',
      etcdUrl,
      '--advertise-client-urls',
      etcdUrl,
      '--listen-peer-urls',
      `http://127.0.0.1:${etcdPeer}`,
      '--initial-advertise-peer-urls',
      `http://127.0.0.1:${etcdPeer}`,
      '--initial-cluster',
      `default=http://127.0.0.1:${etcdPeer}`,
      '--unsafe-no-fsync',
    ],
    path.join(dir, 'etcd.log'),
  )
  let apiserver: ReturnType<typeof startProcess> | undefined
  const stop = async () => {
    if (apiserver) await stopProcess(apiserver)
    await stopProcess(etcd)
    await rm(dir, {recursive: true, force: true})
  }
  try {
    await waitUntil('etcd', async () => (await fetch(`${etcdUrl}/health`)).ok, etcd, 30_000)
    const url = `https://127.0.0.1:${apiPort}`
    const certFile = path.join(dir, 'certs', 'apiserver.crt')
    let caPem = ''
    // The same arguments on every start: the same port, etcd (its data) and certificates (kept in --cert-dir, so a
    // restarted server presents the certificate kubeconfigs already trust).
    const launch = async () => {
      apiserver = startProcess(
        path.join(assets, 'kube-apiserver'),
        [
          '--bind-address=127.0.0.1',
          `--secure-port=${apiPort}`,
          '--advertise-address=127.0.0.1',
          `--etcd-servers=${etcdUrl}`,
          `--cert-dir=${path.join(dir, 'certs')}`,
          `--token-auth-file=${path.join(dir, 'tokens.csv')}`,
          '--authorization-mode=RBAC',
          '--service-account-issuer=https://kubernetes.default.svc',
          `--service-account-key-file=${path.join(dir, 'sa.pub')}`,
          `--service-account-signing-key-file=${path.join(dir, 'sa.key')}`,
          '--service-cluster-ip-range=10.96.0.0/16',
          '--allow-privileged=true',
          `--disable-admission-plugins=${['MutatingAdmissionWebhook', 'ValidatingAdmissionWebhook', ...(opts.disableAdmission ?? [])].join(',')}`,
        ],
        path.join(dir, 'kube-apiserver.log'),
      )
      await waitUntil(
        'kube-apiserver',
        async () => {
          if (!caPem) {
            if (!existsSync(certFile)) return false
            caPem = await readFile(certFile, 'utf8')
          }
          return (await serverRequest({url, caPem}, tokens.admin, 'GET', '/readyz')).status === 200
        },
        apiserver,
        60_000,
      )
    }
    await launch()
    const version = JSON.parse((await serverRequest({url, caPem}, tokens.admin, 'GET', '/version')).body)
      .gitVersion as string
    const info: EnvtestInfo = {url, version, caPem, tokens}
    await grantReader(info)
    return {
      ...info,
      kubeconfig: (user, opts) => envtestKubeconfig(info, user, opts),
      writeKubeconfig: (file, user, opts) => writeFile(file, envtestKubeconfig(info, user, opts)),
      restartApiServer: async ({downMs, onDown}) => {
        if (apiserver) await stopProcess(apiserver)
        onDown?.()
        await new Promise((r) => setTimeout(r, downMs))
        await launch()
      },
      stop,
    }
  } catch (error) {
    await stop().catch(() => undefined)
    throw error
  }
}

/**
 * Starts etcd + kube-apiserver from `assets` (default: envtestAssets()) on free loopback ports.
 * Retries twice with other ports when a process cannot start (another program may take a probed
 * port between the probe and the bind).
 */
export async function startEnvtest(opts: EnvtestOptions = {}): Promise<Envtest> {
  const assets = opts.assets ?? (await envtestAssets())
  if (!assets)
    throw new Error(
      `no kube-apiserver: set ${ASSETS_ENV} (e.g. export ${ASSETS_ENV}=$(${path.join(ENVTEST_DIR, 'setup.sh')}))`,
    )
  for (const bin of ['etcd', 'kube-apiserver'])
    if (!existsSync(path.join(assets, bin))) throw new Error(`${ASSETS_ENV}=${assets} has no ${bin}`)
  let lastError: unknown
  for (let attempt = 0; attempt < 3; attempt++) {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'mesh-migrate-envtest-run-'))
    try {
      return await startOnce(assets, dir, opts)
    } catch (error) {
      lastError = error
    }
  }
  throw lastError
}

// ---------------------------------------------------------------------------------------------
// One server per test run

declare module 'vitest' {
  interface ProvidedContext {
    /** The run's real kube-apiserver (test/support/envtest-global-setup.ts), absent when there is none. */
    envtest?: EnvtestInfo
  }
}

/**
 * The real server the test run started (vitest globalSetup of the cluster project), or undefined
 * outside such a run (other projects, scripts) or when no kube-apiserver binary is available.
 */
export function runEnvtest(): EnvtestInfo | undefined {
  try {
    return inject('envtest')
  } catch {
    return undefined // not inside a vitest worker
  }
}
