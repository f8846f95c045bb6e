// A real kube-apiserver (+ etcd) on free loopback ports, the envtest way (../shared/tools/envtest/README.md).
//
// Interim starter for the fault proxy tests and `npm run test-cluster`: the harness's own starter
// (test/support/envtest.ts, issue 9 parts 1–2) replaces it; everything here goes through
// `realApiServerAssets()`, `startRealApiServer()` and `startClusterOnRealServer()` only, so swapping
// it is a small change.
//
// The server runs without controllers; webhook admission is disabled so it never dials a Service
// (traffic must stay on loopback). It serves HTTPS with its own self-signed certificate and knows
// the bearer tokens in TOKENS.
import {type ChildProcess, execFileSync, spawn} from 'node:child_process'
import {generateKeyPairSync} from 'node:crypto'
import {existsSync} from 'node:fs'
import {mkdtemp, readFile, rm, writeFile} from 'node:fs/promises'
import {Agent, request} from 'node:https'
import {createServer} from 'node:net'
import os from 'node:os'
import path from 'node:path'

import {stringify} from 'yaml'
import {describe} from 'vitest'

import {E2E_KUBECONFIG_ENV, startTestCluster, type TestCluster, type TestClusterOptions} from './cluster.js'
import {SHARED_DIR} from './shared.js'

export const ENVTEST_SETUP = path.join(SHARED_DIR, 'tools/envtest/setup.sh')

/** Bearer tokens the server accepts: token → user and groups. */
export const TOKENS = {
  'admin-token': {user: 'admin', groups: ['system:masters']},
  'reader-token': {user: 'reader', groups: []},
  'nobody-token': {user: 'nobody', groups: []},
} as const
export type KnownToken = keyof typeof TOKENS
export const ADMIN_TOKEN: KnownToken = 'admin-token'

let assets: string | undefined | null = null

/**
 * The folder with kube-apiserver and etcd: KUBEBUILDER_ASSETS when set (the envtest convention),
 * else what ../shared/tools/envtest/setup.sh prepares; undefined when neither is there.
 */
export function realApiServerAssets(): string | undefined {
  if (assets !== null) return assets
  const fromEnv = process.env.KUBEBUILDER_ASSETS
  if (fromEnv) assets = fromEnv
  else if (existsSync(ENVTEST_SETUP))
    assets = execFileSync(ENVTEST_SETUP, {encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit']}).trim()
  else assets = undefined
  return assets
}

export interface RealApiServer {
  /** https://127.0.0.1:PORT */
  url: string
  /** gitVersion from /version, e.g. v1.32.13. */
  version: string
  /** The server's self-signed serving certificate (PEM), to trust as the certificate authority. */
  ca: string
  caFile: string
  /** A kubeconfig for one of TOKENS (default: admin), verifying the server against `caFile`. */
  kubeconfig(token?: KnownToken): string
  stop(): Promise<void>
}

async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve))
  const {port} = server.address() as {port: number}
  await new Promise((resolve) => server.close(resolve))
  return port
}

function launch(bin: string, args: string[], logFile: string): ChildProcess {
  const child = spawn(bin, args, {stdio: ['ignore', 'ignore', 'pipe']})
  let tail = ''
  child.stderr!.on('data', (d: Buffer) => (tail = (tail + d.toString()).slice(-4000)))
  child.on('exit', () => void writeFile(logFile, tail).catch(() => undefined))
  ;(child as ChildProcess & {tail: () => string}).tail = () => tail
  return child
}

const tailOf = (c: ChildProcess) => (c as ChildProcess & {tail?: () => string}).tail?.() ?? ''

async function getJson(url: string, token: string, agent: Agent): Promise<{status: number; body: string}> {
  return new Promise((resolve, reject) => {
    const req = request(url, {agent, headers: {authorization: `Bearer ${token}`}, timeout: 2000}, (res) => {
      let body = ''
      res.on('data', (d: Buffer) => (body += d.toString()))
      res.on('end', () => resolve({status: res.statusCode ?? 0, body}))
    })
    req.on('error', reject)
    req.on('timeout', () => req.destroy(new Error('timeout')))
    req.end()
  })
}

async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise((resolve) => child.once('exit', resolve))
  child.kill('SIGTERM')
  const timer = setTimeout(() => child.kill('SIGKILL'), 5_000)
  await exited
  clearTimeout(timer)
}

/** Starts etcd and kube-apiserver from `assetsDir` on free loopback ports; resolves once /readyz answers 200. */
export async function startRealApiServer(
  assetsDir: string,
  opts: {timeoutMs?: number; port?: number} = {},
): Promise<RealApiServer> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'mesh-migrate-kube-apiserver-'))
  const [etcdPort, peerPort, apiPort] = [await freePort(), await freePort(), opts.port || (await freePort())]
  const {publicKey, privateKey} = generateKeyPairSync('rsa', {modulusLength: 2048})
  await writeFile(path.join(dir, 'sa.key'), privateKey.export({type: 'pkcs8', format: 'pem'}))
  await writeFile(path.join(dir, 'sa.pub'), publicKey.export({type: 'spki', format: 'pem'}))
  await writeFile(
    path.join(dir, 'tokens.csv'),
    Object.entries(TOKENS)
      .map(([token, u]) => `${token},${u.user},${u.user}-uid${u.groups.length ? `,"${u.groups.join(',')}"` : ''}`)
      .join('\n') + '\n',
  )
  const etcdUrl = `http://127.0.0.1:${etcdPort}`
  const peerUrl = `http://127.0.0.1:${peerPort}`
  const etcd = launch(
    path.join(assetsDir, 'etcd'),
    [
      '--data-dir',
      path.join(dir, 'etcd'),
      '--listen-client-urls',
      etcdUrl,
      '--advertise-client-urls',
      etcdUrl,
      '--listen-peer-urls',
      peerUrl,
      '--initial-advertise-peer-urls',
      peerUrl,
      '--initial-cluster',
      `default=${peerUrl}`,
    ],
    path.join(dir, 'etcd.log'),
  )
  const apiserver = launch(
    path.join(assetsDir, 'kube-apiserver'),
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
      // Never dial a webhook's Service (off this machine); the fake control plane injects instead.
      '--disable-admission-plugins=MutatingAdmissionWebhook,ValidatingAdmissionWebhook',
    ],
    path.join(dir, 'kube-apiserver.log'),
  )
  // Whatever happens to this process, the servers it started do not outlive it.
  const killOnExit = () => {
    for (const c of [apiserver, etcd]) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL')
  }
  process.once('exit', killOnExit)
  const stop = async () => {
    process.off('exit', killOnExit)
    await stopProcess(apiserver)
    await stopProcess(etcd)
    await rm(dir, {recursive: true, force: true})
  }

  const url = `https://127.0.0.1:${apiPort}`
  const agent = new Agent({rejectUnauthorized: false})
  const deadline = Date.now() + (opts.timeoutMs ?? 60_000)
  try {
    for (;;) {
      for (const [name, c] of [
        ['etcd', etcd],
        ['kube-apiserver', apiserver],
      ] as const) {
        if (c.exitCode !== null || c.signalCode !== null)
          throw new Error(
            `${name} exited (${c.exitCode ?? c.signalCode}): ${tailOf(c).split('\n').slice(-5).join('\n')}`,
          )
      }
      const ready = await getJson(`${url}/readyz`, ADMIN_TOKEN, agent).catch(() => undefined)
      if (ready?.status === 200) break
      if (Date.now() > deadline)
        throw new Error(`kube-apiserver at ${url} not ready: ${ready ? `${ready.status} ${ready.body}` : 'no answer'}`)
      await new Promise((r) => setTimeout(r, 200))
    }
    const version = (JSON.parse((await getJson(`${url}/version`, ADMIN_TOKEN, agent)).body) as {gitVersion: string})
      .gitVersion
    const caFile = path.join(dir, 'certs', 'apiserver.crt')
    const ca = await readFile(caFile, 'utf8')
    const kubeconfig = (token: KnownToken = ADMIN_TOKEN) => {
      const user = TOKENS[token].user
      return stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [
          {
            name: 'kube-apiserver',
            cluster: {server: url, 'certificate-authority-data': Buffer.from(ca).toString('base64')},
          },
        ],
        users: [{name: user, user: {token}}],
        contexts: [{name: user, context: {cluster: 'kube-apiserver', user}}],
        'current-context': user,
      })
    }
    return {url, version, ca, caFile, kubeconfig, stop}
  } catch (error) {
    await stop()
    throw error
  } finally {
    agent.destroy()
  }
}

/** Whether a real server can be started here (without starting or preparing anything yet). */
export const hasRealApiServer = Boolean(process.env.KUBEBUILDER_ASSETS) || existsSync(ENVTEST_SETUP)

let noticeShown = false
/** `describe` that skips, with a visible notice, when no real kube-apiserver is available. */
export function describeWithRealApiServer(name: string, fn: () => void): void {
  if (hasRealApiServer) {
    describe(name, fn)
    return
  }
  if (!noticeShown) {
    noticeShown = true
    process.stderr.write(
      `\n[mesh-migrate tests] KUBEBUILDER_ASSETS is not set and ${ENVTEST_SETUP} is not present: skipping the tests that need a real kube-apiserver (${name} and others).\n`,
    )
  }
  describe.skip(`${name} (needs a real kube-apiserver: KUBEBUILDER_ASSETS)`, fn)
}

/**
 * The fake control plane and a fixture on a real server, through startTestCluster's external mode
 * (MESH_MIGRATE_E2E_KUBECONFIG, set for the call only). Writes the admin kubeconfig to `kubeconfigPath`;
 * the cluster's tool client, harness and control plane all use it.
 */
export async function startClusterOnRealServer(
  real: RealApiServer,
  kubeconfigPath: string,
  opts: Omit<TestClusterOptions, 'inRepo' | 'kubeconfigPath' | 'port' | 'crds'> = {},
): Promise<TestCluster> {
  await writeFile(kubeconfigPath, real.kubeconfig(), {mode: 0o600})
  const saved = process.env[E2E_KUBECONFIG_ENV]
  process.env[E2E_KUBECONFIG_ENV] = kubeconfigPath
  try {
    return await startTestCluster(opts)
  } finally {
    if (saved === undefined) delete process.env[E2E_KUBECONFIG_ENV]
    else process.env[E2E_KUBECONFIG_ENV] = saved
  }
}
