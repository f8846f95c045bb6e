// Helpers for the fake control plane's tests: read and change objects through the API, the way a
// user (or the tool) would, with the harness's identity.
import {randomBytes} from 'node:crypto'

import type {KubeObject} from '../../src/planner/model.js'
import {E2E_KUBECONFIG_ENV, type TestCluster} from '../support/cluster.js'
import {byCodePoint} from '../../src/planner/order.js'

/** Tests that read the in-repo server's request log cannot run against an external cluster. */
export const onExternalCluster = !!process.env[E2E_KUBECONFIG_ENV]

export async function get(
  c: TestCluster,
  apiVersion: string,
  kind: string,
  namespace: string | undefined,
  name: string,
): Promise<KubeObject | undefined> {
  return c.api.get({apiVersion, kind, name, ...(namespace ? {namespace} : {})})
}

export async function mustGet(
  c: TestCluster,
  apiVersion: string,
  kind: string,
  namespace: string | undefined,
  name: string,
): Promise<KubeObject> {
  const obj = await get(c, apiVersion, kind, namespace, name)
  if (!obj) throw new Error(`${kind} ${namespace ?? ''}/${name} does not exist`)
  return obj
}

export async function list(
  c: TestCluster,
  apiVersion: string,
  kind: string,
  namespace?: string,
  labelSelector?: string,
): Promise<KubeObject[]> {
  const res = await c.api.resource(apiVersion, kind)
  if (!res) throw new Error(`${kind} is not served`)
  return (await c.api.list(res, {...(namespace ? {namespace} : {}), ...(labelSelector ? {labelSelector} : {})})).items
}

export async function pods(c: TestCluster, namespace: string, labelSelector?: string): Promise<KubeObject[]> {
  return (await list(c, 'v1', 'Pod', namespace, labelSelector)).sort((a, b) =>
    byCodePoint(a.metadata.name, b.metadata.name),
  )
}

export async function create(c: TestCluster, obj: KubeObject): Promise<KubeObject> {
  return c.api.create(obj)
}

export async function patch(
  c: TestCluster,
  apiVersion: string,
  kind: string,
  namespace: string | undefined,
  name: string,
  body: unknown,
  subresource?: string,
): Promise<KubeObject> {
  return c.api.patch(
    {apiVersion, kind, name, ...(namespace ? {namespace} : {})},
    body,
    subresource ? {subresource} : {},
  )
}

export async function labelNamespace(
  c: TestCluster,
  name: string,
  labels: Record<string, string | null>,
): Promise<void> {
  await patch(c, 'v1', 'Namespace', undefined, name, {metadata: {labels}})
}

/** `kubectl rollout restart`: the restartedAt template annotation. */
export async function restart(
  c: TestCluster,
  kind: 'Deployment' | 'StatefulSet' | 'DaemonSet',
  namespace: string,
  name: string,
): Promise<void> {
  await patch(c, 'apps/v1', kind, namespace, name, {
    spec: {template: {metadata: {annotations: {'kubectl.kubernetes.io/restartedAt': new Date().toISOString()}}}},
  })
}

export function condition(
  obj: KubeObject | undefined,
  type: string,
): {status: string; reason?: string; message?: string} | undefined {
  return (
    obj?.status?.conditions as {type: string; status: string; reason?: string; message?: string}[] | undefined
  )?.find((c) => c.type === type)
}

export function containerNames(pod: KubeObject): {containers: string[]; init: string[]} {
  return {
    containers: ((pod.spec?.containers ?? []) as {name: string}[]).map((x) => x.name),
    init: ((pod.spec?.initContainers ?? []) as {name: string}[]).map((x) => x.name),
  }
}

let counter = 0
const run = randomBytes(2).toString('hex')
/** A namespace name unique to this run (external clusters may be shared). */
export function uniqueName(prefix: string): string {
  counter++
  return `${prefix}-${run}-${counter}`
}

export function deployment(
  namespace: string,
  name: string,
  opts: {
    replicas?: number
    labels?: Record<string, string>
    annotations?: Record<string, string>
    spec?: Record<string, unknown>
    podSpec?: Record<string, unknown>
    strategy?: unknown
  } = {},
): KubeObject {
  const labels = {app: name, ...(opts.labels ?? {})}
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {name, namespace},
    spec: {
      replicas: opts.replicas ?? 1,
      selector: {matchLabels: {app: name}},
      ...(opts.strategy ? {strategy: opts.strategy} : {}),
      template: {
        metadata: {labels, ...(opts.annotations ? {annotations: opts.annotations} : {})},
        spec: {
          containers: [{name: 'app', image: 'registry.example/app:1.0', ports: [{containerPort: 8080}]}],
          ...(opts.podSpec ?? {}),
        },
      },
      ...(opts.spec ?? {}),
    },
  }
}

export function namespaceObject(name: string, labels: Record<string, string> = {}): KubeObject {
  return {apiVersion: 'v1', kind: 'Namespace', metadata: {name, labels}}
}
