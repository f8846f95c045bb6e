// Shared set-up for the tests against the test API server: a client for a token, kubeconfig files.
import {mkdtemp, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import {loadKubeConfig} from '../../src/kube/config.js'
import {HttpKubeClient} from '../../src/kube/http-client.js'
import type {KubeObject} from '../../src/planner/model.js'
import type {ClusterServer} from './server.js'

/** A server that writes kubeconfigs: the cluster tier's (ClusterServer) or the in-repo one. */
type KubeconfigWriter = Pick<ClusterServer, 'writeKubeconfig'>

export async function tempDir(prefix = 'mesh-migrate-cluster-'): Promise<string> {
  return mkdtemp(path.join(os.tmpdir(), prefix))
}

/** Writes the server's kubeconfig (for `token`) and returns its path. */
export async function kubeconfigFile(
  server: KubeconfigWriter,
  opts: {token?: string; context?: string} = {},
): Promise<string> {
  const dir = await tempDir('mesh-migrate-kubeconfig-')
  const file = path.join(dir, 'config')
  await server.writeKubeconfig(file, opts)
  return file
}

/** A KubeClient as `connect()` builds it, for `token`; no retries (unless asked) so failures surface at once. */
export async function clientFor(
  server: KubeconfigWriter,
  token?: string,
  opts: {retries?: number} = {},
): Promise<HttpKubeClient> {
  const file = await kubeconfigFile(server, token ? {token} : {})
  const kc = await loadKubeConfig({kubeconfig: file}, {})
  return new HttpKubeClient(kc, {retries: opts.retries ?? 0})
}

export async function writeText(file: string, text: string): Promise<string> {
  await writeFile(file, text)
  return file
}

export const ns = (name: string, labels: Record<string, string> = {}): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Namespace',
  metadata: {name, labels},
})

/** A running pod as the kubelet reports it. */
export function pod(
  name: string,
  namespace: string,
  opts: {
    labels?: Record<string, string>
    annotations?: Record<string, string>
    containers?: unknown[]
    initContainers?: unknown[]
    nodeName?: string
    ready?: boolean
    owner?: {kind: string; name: string; apiVersion: string}
    hostNetwork?: boolean
  } = {},
): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace,
      labels: opts.labels ?? {},
      annotations: opts.annotations ?? {},
      ...(opts.owner ? {ownerReferences: [{...opts.owner, uid: `${opts.owner.name}-uid`, controller: true}]} : {}),
    },
    spec: {
      containers: opts.containers ?? [{name: 'app', image: 'app:1'}],
      ...(opts.initContainers ? {initContainers: opts.initContainers} : {}),
      ...(opts.nodeName ? {nodeName: opts.nodeName} : {}),
      ...(opts.hostNetwork ? {hostNetwork: true} : {}),
    },
    status: {phase: 'Running', conditions: [{type: 'Ready', status: opts.ready === false ? 'False' : 'True'}]},
  }
}

/** A pod with an injected classic sidecar (status annotation + istio-proxy container), HBONE-capable or not. */
export function sidecarPod(
  name: string,
  namespace: string,
  opts: {hbone?: boolean; labels?: Record<string, string>} = {},
): KubeObject {
  return pod(name, namespace, {
    labels: {
      ...(opts.labels ?? {}),
      'security.istio.io/tlsMode': 'istio',
      ...(opts.hbone ? {'networking.istio.io/tunnel': 'http'} : {}),
    },
    annotations: {'sidecar.istio.io/status': '{"containers":["istio-proxy"],"revision":"default"}'},
    containers: [
      {name: 'app', image: 'app:1'},
      {name: 'istio-proxy', image: 'docker.io/istio/proxyv2:1.28.1'},
    ],
  })
}

/** A pod captured by ztunnel. */
export function ambientPod(name: string, namespace: string, labels: Record<string, string> = {}): KubeObject {
  return pod(name, namespace, {labels, annotations: {'ambient.istio.io/redirection': 'enabled'}})
}
