// Postconditions of steps (SPEC §6, §7): each check reads the cluster and says whether it holds and
// why not; `waitUntil` polls a check until it holds, the timeout passes, or the user interrupts.
import {ExitCode} from '../exit-codes.js'
import {UserError} from '../errors.js'
import {retryWithin} from '../kube/http-client.js'
import type {KubeClient} from '../kube/types.js'
import type {ObjectRef} from '../planner/model.js'
import type {Verification} from '../planner/plan-types.js'
import {formatRef, refKey} from '../planner/refs.js'
import {condition, hasSidecar, livePods, podsByWorkload, rolloutDone} from './observe.js'
import {DATAPLANE_MODE_LABEL} from '../planner/vocab.js'

export interface CheckResult {
  ok: boolean
  /** What was seen: the reason it does not hold yet, or a summary of what holds. */
  detail: string
  /** For waits over several objects: how many are done, for a short progress line (issue 13 §10). */
  /** `done` of `total` are `state` ("rollouts done", "Services bound"); `waitingFor` names those left. */
  progress?: {done: number; total: number; state: string; waitingFor: string[]}
}

/** 72 s → "1m12s". */
export function formatElapsed(ms: number): string {
  const s = Math.floor(ms / 1000)
  return s < 60 ? `${s}s` : `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`
}

/** One short line while waiting: "4/6 rollouts done, 1m12s (waiting for Deployment shop/api, +1 more)". */
export function waitLine(result: CheckResult, elapsedMs: number): string {
  const elapsed = formatElapsed(elapsedMs)
  const p = result.progress
  if (!p) return `${result.detail} (${elapsed})`
  const [first, ...rest] = p.waitingFor
  return `${p.done}/${p.total} ${p.state}, ${elapsed}${first ? ` (waiting for ${first}${rest.length > 0 ? `, +${rest.length} more` : ''})` : ''}`
}

/** The user interrupted (Ctrl+C): expected, so a UserError; apply and rollback record the step as Interrupted. */
export class InterruptedError extends UserError {
  constructor() {
    super('interrupted', {
      exitCode: ExitCode.Interrupted,
      suggestion:
        'Re-run the same command: it finishes the interrupted step (`mesh-migrate rollback PLAN` undoes it instead).',
    })
  }
}

// The abort listener goes when the timer fires: a wait of minutes polls hundreds of times on one signal (and
// apply --fleet shares its signal between namespaces), so leaving them piles up listeners (MaxListenersExceeded).
const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const onAbort = () => {
      clearTimeout(t)
      resolve()
    }
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    signal?.addEventListener('abort', onAbort, {once: true})
  })

/** Poll `check` until it holds or `timeoutMs` passes (its API reads retried on passing faults meanwhile). */
export async function waitUntil(
  check: () => Promise<CheckResult>,
  opts: {timeoutMs: number; intervalMs?: number; signal?: AbortSignal; onProgress?: (detail: string) => void},
): Promise<CheckResult> {
  const start = Date.now()
  const deadline = start + opts.timeoutMs
  // The check's reads ride out passing faults (an API server restart, 5xx, 429) until the wait's own deadline,
  // saying so on the progress line; a 403 or another answer still fails at once.
  const budget = {
    deadline,
    ...(opts.signal ? {signal: opts.signal} : {}),
    onRetry: (m: string) => opts.onProgress?.(`${m} (${formatElapsed(Date.now() - start)})`),
  }
  let last: CheckResult
  for (;;) {
    if (opts.signal?.aborted) throw new InterruptedError()
    last = await retryWithin(budget, check)
    if (last.ok) return last
    opts.onProgress?.(waitLine(last, Date.now() - start))
    if (Date.now() >= deadline) return last
    await sleep(Math.min(opts.intervalMs ?? 1000, Math.max(0, deadline - Date.now())), opts.signal)
  }
}

export type PreflightRunner = (checks: string[]) => Promise<CheckResult>

export interface VerifyContext {
  client: KubeClient
  namespace: string
  preflight?: PreflightRunner
}

function missingPods(refs: ObjectRef[], byWorkload: Map<string, unknown[]>): string[] {
  return refs.filter((r) => (byWorkload.get(refKey(r))?.length ?? 0) === 0).map(formatRef)
}

/** How many running pods a workload should have now (0: none expected, e.g. scaled to 0, a Job, or gone). */
async function podsWanted(client: KubeClient, ref: ObjectRef): Promise<number> {
  if (ref.kind === 'Job' || ref.kind === 'CronJob') return 0
  const obj = await client.get(ref)
  if (!obj) return 0
  switch (obj.kind) {
    case 'Deployment':
    case 'StatefulSet':
    case 'ReplicaSet':
      return typeof obj.spec?.replicas === 'number' ? obj.spec.replicas : 1
    case 'DaemonSet':
      return obj.status?.desiredNumberScheduled ?? 0
    default:
      // A bare Pod that exists but is not running has finished; other kinds have no replica count to go by.
      return 0
  }
}

/**
 * A pod check over a workload without any running pod holds vacuously: while it should have pods (replicas > 0)
 * they are still coming up, and the check must wait for them instead of passing.
 */
async function podsNotUpYet(
  client: KubeClient,
  refs: ObjectRef[],
  byWorkload: Map<string, unknown[]>,
): Promise<CheckResult | undefined> {
  const waiting: string[] = []
  for (const ref of refs) {
    if ((byWorkload.get(refKey(ref))?.length ?? 0) > 0) continue
    const wanted = await podsWanted(client, ref)
    if (wanted > 0) waiting.push(`${formatRef(ref)} (${wanted} wanted)`)
  }
  return waiting.length > 0 ? {ok: false, detail: `no running pods yet for ${waiting.join(', ')}`} : undefined
}

type CheckOf<K extends Verification['check']> = (
  v: Extract<Verification, {check: K}>,
  ctx: VerifyContext,
) => Promise<CheckResult>

/** A wait over several objects: "4/6 rollouts done" while some are left (issue 13 §10). */
function counted(total: number, pending: string[], state: string, ok: string): CheckResult {
  if (pending.length === 0) return {ok: true, detail: ok}
  return {
    ok: false,
    detail: pending.join('; '),
    progress: {done: total - pending.length, total, state, waitingFor: pending},
  }
}

const objectsPresent: CheckOf<'objects-present'> = async (v, {client}) => {
  const missing: string[] = []
  for (const ref of v.refs) if (!(await client.get(ref))) missing.push(formatRef(ref))
  return missing.length === 0
    ? {ok: true, detail: `${v.refs.length} object(s) present`}
    : {ok: false, detail: `missing: ${missing.join(', ')}`}
}

const objectsAbsent: CheckOf<'objects-absent'> = async (v, {client}) => {
  const present: string[] = []
  for (const ref of v.refs) if (await client.get(ref)) present.push(formatRef(ref))
  return present.length === 0
    ? {ok: true, detail: `${v.refs.length} object(s) gone`}
    : {ok: false, detail: `still present: ${present.join(', ')}`}
}

const namespaceLabels: CheckOf<'namespace-labels'> = async (v, {client, namespace}) => {
  const ns = await client.get({apiVersion: 'v1', kind: 'Namespace', name: namespace})
  const labels = ns?.metadata.labels ?? {}
  const wrong = Object.entries(v.labels).filter(([k, want]) => (want === null ? k in labels : labels[k] !== want))
  return wrong.length === 0
    ? {ok: true, detail: 'namespace labels as planned'}
    : {
        ok: false,
        detail: wrong
          .map(
            ([k, want]) =>
              `${k} is ${labels[k] === undefined ? 'absent' : `"${labels[k]}"`}, want ${want === null ? 'absent' : `"${want}"`}`,
          )
          .join('; '),
      }
}

/** Programmed, an address, and a running proxy: the detail names the first missing (short: no count needed). */
const waypointReady: CheckOf<'waypoint-ready'> = async (v, {client}) => {
  const name = formatRef(v.ref)
  const notYet = (detail: string): CheckResult => ({ok: false, detail})
  const gw = await client.get(v.ref)
  if (!gw) return notYet(`${name} does not exist`)
  const programmed = condition(gw, 'Programmed')
  if (programmed?.status !== 'True') {
    return notYet(
      `${name} is not Programmed${programmed ? ` (${programmed.reason ?? ''}${programmed.message ? `: ${programmed.message}` : ''})` : ' yet'}`,
    )
  }
  if (!Array.isArray(gw.status?.addresses) || gw.status.addresses.length === 0) {
    return notYet(`${name} has no status.addresses yet (istiod ignores the waypoint until it has)`)
  }
  // Programmed only says the Service exists; a waypoint with no running proxy still drops traffic.
  const deployment = await client.get({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    namespace: v.ref.namespace,
    name: v.ref.name,
  })
  const available = deployment?.status?.availableReplicas ?? 0
  if (available < 1) return notYet(`waypoint Deployment ${v.ref.namespace}/${v.ref.name} has no available replica yet`)
  return {
    ok: true,
    detail: `Programmed, address ${gw.status.addresses[0]?.value ?? '?'}, ${available} replica(s) available`,
  }
}

const rolloutsComplete: CheckOf<'rollouts-complete'> = async (v, {client}) => {
  const pending: string[] = []
  for (const ref of v.refs) {
    const obj = await client.get(ref)
    if (!obj) pending.push(`${formatRef(ref)} is gone`)
    else {
      const r = rolloutDone(obj)
      if (!r.done) pending.push(`${formatRef(ref)}: ${r.detail}`)
    }
  }
  return counted(v.refs.length, pending, 'rollouts done', `${v.refs.length} rollout(s) complete`)
}

/** Some of `total` pods are not there yet: the wait line counts them and names those left. */
function podsLeft(detail: string, total: number, state: string, left: string[]): CheckResult {
  return {ok: false, detail, progress: {done: total - left.length, total, state, waitingFor: left}}
}

const podsWithoutSidecar: CheckOf<'pods-without-sidecar'> = async (v, {client, namespace}) => {
  const byWorkload = podsByWorkload(await livePods(client, namespace))
  const pods = v.refs.flatMap((r) => byWorkload.get(refKey(r)) ?? [])
  const offenders = pods.filter(hasSidecar).map((p) => p.name)
  if (offenders.length > 0) {
    return podsLeft(
      `pods still with a sidecar: ${offenders.join(', ')}`,
      pods.length,
      'pods without sidecar',
      offenders,
    )
  }
  const notUp = await podsNotUpYet(client, v.refs, byWorkload)
  if (notUp) return notUp
  const noPods = missingPods(v.refs, byWorkload)
  return {
    ok: true,
    detail: `${pods.length} pod(s) without sidecar${noPods.length > 0 ? `; no running pods for ${noPods.join(', ')}` : ''}`,
  }
}

/** An undo's postcondition: the restart brought the sidecars back (the injection label is back on the namespace). */
const podsWithSidecar: CheckOf<'pods-with-sidecar'> = async (v, {client, namespace}) => {
  const byWorkload = podsByWorkload(await livePods(client, namespace))
  const pods = v.refs.flatMap((r) => byWorkload.get(refKey(r)) ?? [])
  const offenders = pods.filter((p) => !hasSidecar(p)).map((p) => p.name)
  if (offenders.length > 0) {
    const detail = `pods without a sidecar: ${offenders.join(', ')}; is the injection label back on the namespace?`
    return podsLeft(detail, pods.length, 'pods with sidecar', offenders)
  }
  const notUp = await podsNotUpYet(client, v.refs, byWorkload)
  if (notUp) return notUp
  return {ok: true, detail: `${pods.length} pod(s) have their sidecar back`}
}

const podsCaptured: CheckOf<'pods-captured'> = async (v, {client, namespace}) => {
  const byWorkload = podsByWorkload(await livePods(client, namespace))
  const pods = v.refs.flatMap((r) => byWorkload.get(refKey(r)) ?? [])
  const offenders = pods.filter((p) => !p.captured).map((p) => `${p.name}${hasSidecar(p) ? ' (has a sidecar)' : ''}`)
  if (offenders.length > 0) {
    const detail = `pods not captured by ztunnel (ambient.istio.io/redirection != enabled): ${offenders.join(', ')}`
    return podsLeft(detail, pods.length, 'pods captured', offenders)
  }
  const notUp = await podsNotUpYet(client, v.refs, byWorkload)
  if (notUp) return notUp
  return {ok: true, detail: `${pods.length} pod(s) captured by ztunnel`}
}

const podsOptedOut: CheckOf<'pods-opted-out'> = async (v, {client, namespace}) => {
  const pending: string[] = []
  for (const ref of v.refs) {
    const obj = await client.get(ref)
    if (obj && ref.kind !== 'Pod') {
      const r = rolloutDone(obj)
      if (!r.done) pending.push(`${formatRef(ref)}: ${r.detail}`)
    }
  }
  const byWorkload = podsByWorkload(await livePods(client, namespace))
  const offenders = v.refs.flatMap((r) =>
    (byWorkload.get(refKey(r)) ?? [])
      .filter((p) => p.pod.metadata.labels?.[DATAPLANE_MODE_LABEL] !== 'none')
      .map((p) => p.name),
  )
  if (pending.length > 0 || offenders.length > 0) {
    return {
      ok: false,
      detail: [
        ...pending,
        ...(offenders.length > 0 ? [`pods without ${DATAPLANE_MODE_LABEL}=none: ${offenders.join(', ')}`] : []),
      ].join('; '),
    }
  }
  const notUp = await podsNotUpYet(client, v.refs, byWorkload)
  if (notUp) return notUp
  return {ok: true, detail: `pods of ${v.refs.length} workload(s) stay out of ambient (${DATAPLANE_MODE_LABEL}=none)`}
}

const waypointBound: CheckOf<'waypoint-bound'> = async (v, {client, namespace}) => {
  const unbound: string[] = []
  for (const name of v.services) {
    const svc = await client.get({apiVersion: 'v1', kind: 'Service', namespace, name})
    const bound = condition(svc, 'istio.io/WaypointBound')
    if (bound?.status !== 'True') unbound.push(`${name}${bound ? ` (${bound.reason ?? 'False'})` : ''}`)
  }
  if (unbound.length === 0) return {ok: true, detail: `${v.services.length} Service(s) bound to ${v.ref.name}`}
  return {
    ok: false,
    detail: `not bound to ${formatRef(v.ref)}: ${unbound.join(', ')}`,
    progress: {
      done: v.services.length - unbound.length,
      total: v.services.length,
      state: 'Services bound',
      waitingFor: unbound,
    },
  }
}

const CHECKS: {[K in Verification['check']]: CheckOf<K>} = {
  preflight: async (v, ctx) =>
    ctx.preflight ? ctx.preflight(v.checks) : {ok: true, detail: 'preflight checks skipped'},
  'objects-present': objectsPresent,
  'objects-absent': objectsAbsent,
  'namespace-labels': namespaceLabels,
  'waypoint-ready': waypointReady,
  'rollouts-complete': rolloutsComplete,
  'pods-without-sidecar': podsWithoutSidecar,
  'pods-with-sidecar': podsWithSidecar,
  'pods-captured': podsCaptured,
  'pods-opted-out': podsOptedOut,
  'waypoint-bound': waypointBound,
}

/** Read the cluster once for one verification: does it hold, and if not, why (and how far along a wait is). */
export async function runCheck(v: Verification, ctx: VerifyContext): Promise<CheckResult> {
  return (CHECKS[v.check] as CheckOf<typeof v.check>)(v as never, ctx)
}
