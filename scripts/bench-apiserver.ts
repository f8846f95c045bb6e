// A real kube-apiserver for `npm run bench` (envtest convention: KUBEBUILDER_ASSETS holds kube-apiserver,
// etcd and kubectl; ../shared/tools/envtest/setup.sh prepares one). Everything on free loopback ports;
// webhook admission disabled (traffic must never leave loopback) and ServiceAccount admission too (no
// controller-manager creates the `default` ServiceAccounts the bench's Pods would need).
import {type ChildProcess, execFileSync, spawn} from 'node:child_process'
import {existsSync} from 'node:fs'
import https from 'node:https'
import {mkdtemp, rm, writeFile} from 'node:fs/promises'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'

export interface RealApiServer {
  assets: string
  kubeconfigPath: string
  kubectl: string
  version: string
  stop(): Promise<void>
}

/** KUBEBUILDER_ASSETS, else what ../shared/tools/envtest/setup.sh prepares, else undefined. */
export function envtestAssets(root: string): string | undefined {
  const fromEnv = process.env.KUBEBUILDER_ASSETS
  if (fromEnv && existsSync(path.join(fromEnv, 'kube-apiserver'))) return fromEnv
  const setup = path.resolve(root, '../shared/tools/envtest/setup.sh')
  if (!existsSync(setup)) return undefined
  try {
    return execFileSync(setup, {encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore']}).trim()
  } catch {
    return undefined
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer()
    s.once('error', reject)
    s.listen(0, '127.0.0.1', () => {
      const {port} = s.address() as net.AddressInfo
      s.close(() => resolve(port))
    })
  })
}

/** GET over HTTPS from the self-signed server (the bench's own requests only; the CLI reads the kubeconfig). */
function get(url: string, token: string): Promise<{ok: boolean; body: string}> {
  return new Promise((resolve, reject) => {
    https
      .get(url, {headers: {Authorization: `Bearer ${token}`}, rejectUnauthorized: false}, (res) => {
        let body = ''
        res.on('data', (d: Buffer) => (body += d.toString()))
        res.on('end', () => resolve({ok: res.statusCode === 200, body}))
      })
      .on('error', reject)
  })
}

async function waitReady(url: string, token: string, child: ChildProcess, what: string): Promise<void> {
  const deadline = Date.now() + 60_000
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${what} exited (${child.exitCode})`)
    try {
      const {ok} = await get(url, token)
      if (ok) return
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 200))
  }
  throw new Error(`${what} not ready after 60 s`)
}

export async function startRealApiServer(assets: string): Promise<RealApiServer> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'mesh-migrate-bench-apiserver-'))
  const [etcdPort, peerPort, apiPort] = [await freePort(), await freePort(), await freePort()]
  const token = 'bench-admin-token'
  await writeFile(path.join(dir, 'tokens.csv'), `${token},admin,admin-uid,"system:masters"\n`)
  execFileSync('openssl', ['genrsa', '-out', path.join(dir, 'sa.key'), '2048'], {stdio: 'ignore'})
  execFileSync('openssl', ['rsa', '-in', path.join(dir, 'sa.key'), '-pubout', '-out', path.join(dir, 'sa.pub')], {
    stdio: 'ignore',
  })
  const children: ChildProcess[] = []
  const stop = async () => {
    for (const c of children.reverse()) if (c.exitCode === null) c.kill('SIGTERM')
    await Promise.all(children.map((c) => (c.exitCode === null ? new Promise((r) => c.once('exit', r)) : undefined)))
    await rm(dir, {recursive: true, force: true})
  }
  try {
    const etcd = spawn(
      path.join(assets, 'etcd'),
      [
        '--data-dir',
        path.join(dir, 'etcd'),
        '--listen-client-urls',
        `http://127.0.0.1:${etcdPort}`,
        '--advertise-client-urls',
        `http://127.0.0.1:${etcdPort}`,
        '--listen-peer-urls',
        `http://127.0.0.1:${peerPort}`,
        '--initial-advertise-peer-urls',
        `http://127.0.0.1:${peerPort}`,
        '--initial-cluster',
        `default=http://127.0.0.1:${peerPort}`,
      ],
      {stdio: 'ignore'},
    )
    children.push(etcd)
    const apiserver = spawn(
      path.join(assets, 'kube-apiserver'),
      [
        '--bind-address=127.0.0.1',
        `--secure-port=${apiPort}`,
        '--advertise-address=127.0.0.1',
        `--etcd-servers=http://127.0.0.1:${etcdPort}`,
        `--cert-dir=${path.join(dir, 'certs')}`,
        `--token-auth-file=${path.join(dir, 'tokens.csv')}`,
        '--authorization-mode=RBAC',
        '--service-account-issuer=https://kubernetes.default.svc',
        `--service-account-key-file=${path.join(dir, 'sa.pub')}`,
        `--service-account-signing-key-file=${path.join(dir, 'sa.key')}`,
        '--service-cluster-ip-range=10.96.0.0/16',
        '--allow-privileged=true',
        '--disable-admission-plugins=MutatingAdmissionWebhook,ValidatingAdmissionWebhook,ServiceAccount',
      ],
      {stdio: 'ignore'},
    )
    children.push(apiserver)
    const server = `https://127.0.0.1:${apiPort}`
    await waitReady(`${server}/readyz`, token, apiserver, 'kube-apiserver')
    const kubeconfigPath = path.join(dir, 'kubeconfig')
    await writeFile(
      kubeconfigPath,
      [
        'apiVersion: v1',
        'kind: Config',
        'current-context: bench',
        'clusters:',
        '- name: bench',
        '  cluster:',
        `    server: ${server}`,
        '    insecure-skip-tls-verify: true',
        'users:',
        '- name: admin',
        '  user:',
        `    token: ${token}`,
        'contexts:',
        '- name: bench',
        '  context:',
        '    cluster: bench',
        '    user: admin',
      ].join('\n') + '\n',
    )
    const kubectl = existsSync(path.join(assets, 'kubectl')) ? path.join(assets, 'kubectl') : 'kubectl'
    const version = (JSON.parse((await get(`${server}/version`, token)).body) as {gitVersion: string}).gitVersion
    return {assets, kubeconfigPath, kubectl, version, stop}
  } catch (error) {
    await stop()
    throw error
  }
}
