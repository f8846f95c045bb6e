// A real kube-apiserver for `npm run bench` (envtest convention: KUBEBUILDER_ASSETS holds kube-apiserver,
// etcd and kubectl; ../shared/tools/envtest/setup.sh prepares one). Everything on free loopback ports;
// webhook admission disabled (traffic must never leave loopback) and ServiceAccount admission too (no
// controller-manager creates the `default` ServiceAccounts the bench's Pods would need).
import {execFileSync} from 'node:child_process'
import {existsSync} from 'node:fs'
import {mkdtemp, rm} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import {startEnvtest} from '../test/support/envtest.js'

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

/** A real kube-apiserver started by the tests' starter (test/support/envtest.ts), with a kubeconfig file for the CLI. */
export async function startRealApiServer(assets: string): Promise<RealApiServer> {
  const env = await startEnvtest({assets, disableAdmission: ['ServiceAccount']})
  try {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'mesh-migrate-bench-kubeconfig-'))
    const kubeconfigPath = path.join(dir, 'kubeconfig')
    await env.writeKubeconfig(kubeconfigPath, 'admin', {context: 'bench'})
    const kubectl = existsSync(path.join(assets, 'kubectl')) ? path.join(assets, 'kubectl') : 'kubectl'
    const stop = async () => {
      await env.stop()
      await rm(dir, {recursive: true, force: true})
    }
    return {assets, kubeconfigPath, kubectl, version: env.version, stop}
  } catch (error) {
    await env.stop()
    throw error
  }
}
