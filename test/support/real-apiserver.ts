// A real kube-apiserver (+ etcd) with fixed bearer tokens, for the fault proxy tests and `npm run test-cluster`:
// an adapter over test/support/envtest.ts, which starts it (the envtest way, ../shared/tools/envtest/README.md:
// loopback ports, webhook admission disabled so it never dials a Service, HTTPS with its own certificate).
import {execFileSync} from 'node:child_process'
import {existsSync} from 'node:fs'
import {writeFile} from 'node:fs/promises'
import path from 'node:path'

import {describe} from 'vitest'

import {E2E_KUBECONFIG_ENV, startTestCluster, type TestCluster, type TestClusterOptions} from './cluster.js'
import {type EnvtestUser, startEnvtest} from './envtest.js'
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
  /** A kubeconfig for one of TOKENS (default: admin), verifying the server against `ca`. */
  kubeconfig(token?: KnownToken): string
  stop(): Promise<void>
}

/** TOKENS' users as envtest.ts knows them. */
const USER_OF: Record<KnownToken, EnvtestUser> = {
  'admin-token': 'admin',
  'reader-token': 'reader',
  'nobody-token': 'nobody',
}

/**
 * Starts etcd and kube-apiserver from `assetsDir` through test/support/envtest.ts (free loopback ports, or the
 * API on `port`), with the fixed tokens of TOKENS; resolves once /readyz answers 200.
 */
export async function startRealApiServer(assetsDir: string, opts: {port?: number} = {}): Promise<RealApiServer> {
  const env = await startEnvtest({
    assets: assetsDir,
    tokens: Object.fromEntries(Object.entries(USER_OF).map(([token, user]) => [user, token])),
    ...(opts.port ? {apiPort: opts.port} : {}),
  })
  return {
    url: env.url,
    version: env.version,
    ca: env.caPem,
    kubeconfig: (token: KnownToken = ADMIN_TOKEN) => env.kubeconfig(USER_OF[token], {context: USER_OF[token]}),
    stop: () => env.stop(),
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
