// What the end-to-end migrations observe at every step boundary, and the mesh invariants of SPEC §8
// checked on it — from the cluster's pods and objects, independently of what the tool recorded.
import {type ChildProcess, spawn} from 'node:child_process'
import {mkdtemp, readFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import {hasSidecar, livePods} from '../../src/executor/observe.js'
import type {KubeClient} from '../../src/kube/types.js'
import {cleanObject, stableJson} from '../../src/planner/canonical.js'
import type {KubeObject} from '../../src/planner/model.js'
import type {MigrationPlan} from '../../src/planner/plan-types.js'
import type {DataPlane} from '../../src/plan/simulate.js'
import type {RequestLogEntry, TestApiServer} from '../support/apiserver/index.js'
import {BIN, type CliResult, runCli} from '../support/cli.js'
import {RUN_LABEL, USERS} from '../support/cluster.js'
import {REPO_ROOT} from '../support/shared.js'
import {planOf} from '../support/plan-file.js'
import {byCodePoint} from '../../src/planner/order.js'

/** A request log: the in-repo test server's, or the fault proxy's in front of a real server. */
export type RequestLog = Pick<TestApiServer, 'requests' | 'requestsMatching'>

export interface Observed {
  labels: Record<string, string>
  /** workload key ("Kind/name") → data plane of all its pods, or "mixed" while they disagree. */
  dataPlanes: Record<string, DataPlane | 'mixed'>
  /** Names of the AuthorizationPolicies in the namespace. */
  policies: Set<string>
  waypointReady: boolean
}

/** A working directory for one scenario (the tool writes plans/ relative to it). */
export async function workdir(): Promise<string> {
  return mkdtemp(path.join(os.tmpdir(), 'mesh-migrate-e2e-work-'))
}

export function cli(args: string[], cwd: string, kubeconfig: string): Promise<CliResult> {
  return runCli([...args, '--kubeconfig', kubeconfig], {cwd})
}

/** A CLI run in the background, to interrupt (SIGINT) or kill (SIGKILL) while it works. */
export interface BackgroundCli {
  child: ChildProcess
  /** What it wrote to stderr so far. */
  stderr: () => string
  /** Resolves when it exits; `code` is null when a signal ended it. */
  done: Promise<CliResult & {signal: NodeJS.Signals | null}>
}

/** Like `cli`, without waiting: the same environment (CI=true, NO_COLOR) as runCli. */
export function spawnCli(args: string[], cwd: string, kubeconfig: string): BackgroundCli {
  const child = spawn(process.execPath, [BIN, ...args, '--kubeconfig', kubeconfig], {
    cwd,
    env: {...process.env, NO_COLOR: '1', CI: 'true'},
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()))
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()))
  const done = new Promise<CliResult & {signal: NodeJS.Signals | null}>((resolve, reject) => {
    child.on('error', reject)
    child.on('close', (code, signal) => resolve({code, signal, stdout, stderr}))
  })
  return {child, stderr: () => stderr, done}
}

/**
 * Waits until the request log (the server runs in the test process, the CLI in another) shows a
 * request for which `match` holds. Polls; fails with `what` when nothing matched in time.
 */
export async function waitForRequest(
  server: RequestLog,
  match: (e: RequestLogEntry) => boolean,
  what: string,
  timeoutMs = 30_000,
): Promise<RequestLogEntry> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const found = server.requests.find(match)
    if (found) return found
    if (Date.now() > deadline) {
      // The last requests seen, so a miss says what happened instead.
      const last = server.requests
        .slice(-12)
        .map((e) => `${e.verb} ${e.kind ?? e.resource ?? ''}${e.name ? `/${e.name}` : ''} → ${e.status ?? '…'}`)
      throw new Error(`no request ${what} within ${timeoutMs / 1000}s; the last ones: ${last.join(', ')}`)
    }
    await new Promise((r) => setTimeout(r, 10))
  }
}

/** Waits until the server has finished a request (answered it or dropped the connection). */
export async function waitForCompletion(entry: RequestLogEntry, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (entry.finishedAt === undefined) {
    if (Date.now() > deadline)
      throw new Error(`request ${entry.method} ${entry.path} did not finish within ${timeoutMs / 1000}s`)
    await new Promise((r) => setTimeout(r, 10))
  }
}

export const WRITE_VERBS = ['create', 'update', 'patch', 'delete', 'deletecollection'] as const

/** The id the next request will get: pass it to `toolWrites` to look at what a command sent. */
export function nextRequestId(server: RequestLog): number {
  return (server.requests.at(-1)?.id ?? 0) + 1
}

/**
 * Reviews (SelfSubjectReview: who am I, for the plan's record; access reviews) are queries sent as a
 * create: the server answers and persists nothing, so they are not writes.
 */
export const isReview = (e: RequestLogEntry) =>
  e.group === 'authentication.k8s.io' || e.group === 'authorization.k8s.io'

/** Writes the tool (not the harness or the control plane) sent from request `fromId` on. */
export function toolWrites(server: RequestLog, fromId: number): RequestLogEntry[] {
  return server
    .requestsMatching({user: USERS.tool, verb: [...WRITE_VERBS]})
    .filter((e) => e.id >= fromId && !isReview(e))
}

export async function readPlan(cwd: string, namespace: string): Promise<MigrationPlan> {
  return planOf(await readFile(path.join(cwd, 'plans', `${namespace}.yaml`), 'utf8'))
}

async function list(client: KubeClient, apiVersion: string, kind: string, namespace: string): Promise<KubeObject[]> {
  const res = await client.resourceFor(apiVersion, kind)
  return res ? client.list(res, {namespace}) : []
}

export async function observe(client: KubeClient, namespace: string): Promise<Observed> {
  const ns = await client.get({apiVersion: 'v1', kind: 'Namespace', name: namespace})
  const pods = await livePods(client, namespace)
  const byWorkload = new Map<string, DataPlane[]>()
  for (const p of pods) {
    if (!p.owner || p.pod.metadata.labels?.['gateway.istio.io/managed'] === 'istio.io-mesh-controller') continue
    const key = `${p.owner.kind}/${p.owner.name}`
    const dp: DataPlane = hasSidecar(p) ? 'sidecar' : p.captured ? 'ambient' : 'outside'
    byWorkload.set(key, [...(byWorkload.get(key) ?? []), dp])
  }
  const dataPlanes: Observed['dataPlanes'] = {}
  for (const [key, states] of byWorkload) dataPlanes[key] = states.every((s) => s === states[0]) ? states[0]! : 'mixed'
  const policies = new Set(
    (await list(client, 'security.istio.io/v1', 'AuthorizationPolicy', namespace)).map((p) => p.metadata.name),
  )
  const gateways = (await list(client, 'gateway.networking.k8s.io/v1', 'Gateway', namespace)).filter(
    (g) => g.spec?.gatewayClassName === 'istio-waypoint',
  )
  const waypointReady = gateways.some(
    (g) =>
      (g.status?.conditions ?? []).some(
        (c: {type: string; status: string}) => c.type === 'Programmed' && c.status === 'True',
      ) && (g.status?.addresses ?? []).length > 0,
  )
  const labels = {...(ns?.metadata.labels ?? {})}
  delete labels[RUN_LABEL] // the harness's bookkeeping (namespaceState says why)
  return {labels, dataPlanes, policies, waypointReady}
}

/**
 * SPEC §8 mesh invariants at one boundary:
 * 1. no workload that was in the mesh at the start has a pod outside it;
 * 2. every policy that was enforced at the start is still enforced — by the destination sidecar (the
 *    original exists), by ztunnel as written (an L4 original exists), or by the waypoint (its copy exists,
 *    the waypoint is ready and the namespace bound) — except inside the documented restart windows.
 */
export function invariantViolations(
  plan: MigrationPlan,
  start: Observed,
  now: Observed,
  opts: {inRestartWindow: boolean},
): string[] {
  const problems: string[] = []
  for (const [workload, dp] of Object.entries(now.dataPlanes)) {
    const before = start.dataPlanes[workload]
    if (before && before !== 'outside' && (dp === 'outside' || dp === 'mixed'))
      problems.push(`${workload} was in the mesh and now has pods outside it (${dp})`)
  }
  const bound = now.labels['istio.io/use-waypoint'] !== undefined
  for (const p of plan.spec.policies) {
    if (!p.key.startsWith('AuthorizationPolicy/') || p.key.split('/').length !== 2) continue
    const name = p.key.split('/')[1]!
    const originalPresent = now.policies.has(name)
    const copyPresent = now.policies.has(`${name}-waypoint`)
    const waypointActive = copyPresent && now.waypointReady && bound
    for (const workload of p.workloads) {
      const dp = now.dataPlanes[workload]
      if (!dp || start.dataPlanes[workload] === 'outside') continue
      let enforced: boolean
      if (dp === 'sidecar') enforced = originalPresent || waypointActive
      else if (dp === 'ambient')
        enforced = waypointActive || (originalPresent && (p.ztunnel ?? 'as-written') === 'as-written')
      else enforced = false
      if (!enforced && !opts.inRestartWindow)
        problems.push(
          `${p.key} is not enforced for ${workload} (${dp}; original ${originalPresent ? 'present' : 'absent'}, waypoint copy ${copyPresent ? 'present' : 'absent'}, waypoint ${now.waypointReady ? 'ready' : 'not ready'}, ${bound ? 'bound' : 'unbound'})`,
        )
    }
  }
  return problems
}

/** The predicted data planes of a boundary, restricted to workloads that have pods. */
export function comparableDataPlanes(
  predicted: Record<string, DataPlane>,
  observed: Observed['dataPlanes'],
): {predicted: Record<string, string>; observed: Record<string, string>} {
  const keys = Object.keys(observed).sort()
  return {
    predicted: Object.fromEntries(keys.map((k) => [k, predicted[k] ?? '(not predicted)'])),
    observed: Object.fromEntries(keys.map((k) => [k, observed[k]!])),
  }
}

const STATE_KINDS: [string, string][] = [
  ['security.istio.io/v1', 'AuthorizationPolicy'],
  ['security.istio.io/v1', 'PeerAuthentication'],
  ['security.istio.io/v1', 'RequestAuthentication'],
  ['networking.istio.io/v1', 'VirtualService'],
  ['networking.istio.io/v1', 'DestinationRule'],
  ['networking.istio.io/v1', 'Gateway'],
  ['gateway.networking.k8s.io/v1', 'Gateway'],
  ['gateway.networking.k8s.io/v1', 'HTTPRoute'],
  ['networking.k8s.io/v1', 'NetworkPolicy'],
  ['v1', 'Service'],
  ['apps/v1', 'Deployment'],
]

// Fields that change on every write or rollout without changing what the namespace is.
function comparable(o: KubeObject): unknown {
  const c = cleanObject(o)
  const annotations = {...(c.metadata.annotations ?? {})}
  delete annotations['deployment.kubernetes.io/revision']
  const spec = structuredClone(c.spec ?? {})
  // A rollout restart leaves its timestamp (kubectl rollout restart does too); rolling back restarts again.
  if (o.kind === 'Deployment' && spec.template?.metadata?.annotations) {
    delete spec.template.metadata.annotations['kubectl.kubernetes.io/restartedAt']
    if (Object.keys(spec.template.metadata.annotations).length === 0) delete spec.template.metadata.annotations
  }
  if (o.kind === 'Service') {
    delete spec.clusterIP
    delete spec.clusterIPs
  }
  return {kind: o.kind, name: o.metadata.name, labels: c.metadata.labels ?? {}, annotations, spec}
}

/** The namespace's labels and objects, comparable between two moments (the pre-plan state and after rollback). */
export async function namespaceState(client: KubeClient, namespace: string): Promise<string> {
  const ns = await client.get({apiVersion: 'v1', kind: 'Namespace', name: namespace})
  const objects: unknown[] = []
  for (const [apiVersion, kind] of STATE_KINDS) {
    for (const o of await list(client, apiVersion, kind, namespace)) {
      if (o.metadata.labels?.['gateway.istio.io/managed']) continue
      objects.push(comparable({...o, apiVersion, kind}))
    }
  }
  objects.sort((a, b) => byCodePoint(stableJson(a), stableJson(b)))
  // The harness marks the namespaces it created on a shared server with its run id: bookkeeping of
  // the test, different on every cluster, not state of the namespace.
  const labels = {...(ns?.metadata.labels ?? {})}
  delete labels[RUN_LABEL]
  // Key order is not state: compare canonical JSON, pretty-printed so a failure diff is readable.
  return JSON.stringify(JSON.parse(stableJson({labels, objects})), null, 1)
}

export const REPO = REPO_ROOT
