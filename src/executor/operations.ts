// The primitive writes of a step, each idempotent: a write whose effect is already present is skipped,
// so re-running an interrupted step converges (SPEC §7 "Crash safety").
import {StalePlanError} from '../errors.js'
import {KubeApiError} from '../kube/errors.js'
import type {KubeClient} from '../kube/types.js'
import {objectFingerprint} from '../planner/canonical.js'
import type {KubeObject, ObjectRef} from '../planner/model.js'
import {
  MANAGED_BY_LABEL,
  MANAGED_BY_VALUE,
  type Operation,
  PLAN_ANNOTATION,
  type Precondition,
} from '../planner/plan-types.js'
import {formatRef, refKey} from '../planner/refs.js'
import {templateLabelsPatch} from '../planner/workloads.js'
import {podTemplateOf} from '../planner/vocab.js'

export const RESTARTED_AT = 'kubectl.kubernetes.io/restartedAt'

export function isOurs(obj: KubeObject | undefined, planName: string): boolean {
  return (
    obj?.metadata.labels?.[MANAGED_BY_LABEL] === MANAGED_BY_VALUE &&
    obj.metadata.annotations?.[PLAN_ANNOTATION] === planName
  )
}

function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true
  if (typeof a !== typeof b || a === null || b === null || typeof a !== 'object') return false
  if (Array.isArray(a) !== Array.isArray(b)) return false
  if (Array.isArray(a))
    return a.length === (b as unknown[]).length && a.every((v, i) => deepEqual(v, (b as unknown[])[i]))
  const ka = Object.keys(a as object).filter((k) => (a as Record<string, unknown>)[k] !== undefined)
  const kb = Object.keys(b as object).filter((k) => (b as Record<string, unknown>)[k] !== undefined)
  return (
    ka.length === kb.length &&
    ka.every((k) => deepEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]))
  )
}

/** Every field of `wanted` has the same value in `actual` (server defaults may add more). */
export function containsAll(actual: unknown, wanted: unknown): boolean {
  if (wanted === null || typeof wanted !== 'object') return deepEqual(actual, wanted)
  if (Array.isArray(wanted))
    return Array.isArray(actual) && actual.length === wanted.length && wanted.every((w, i) => containsAll(actual[i], w))
  if (actual === null || typeof actual !== 'object' || Array.isArray(actual)) return false
  return Object.entries(wanted).every(
    ([k, v]) => v === undefined || containsAll((actual as Record<string, unknown>)[k], v),
  )
}

/**
 * Where `actual` first departs from `wanted` (a JSON path like `spec.rules[0].to`), or undefined when it
 * has every field of `wanted` — what a drift report names.
 */
export function firstDifference(actual: unknown, wanted: unknown, path = ''): string | undefined {
  if (wanted === null || typeof wanted !== 'object') return deepEqual(actual, wanted) ? undefined : path || '.'
  if (Array.isArray(wanted)) {
    if (!Array.isArray(actual) || actual.length !== wanted.length) return path || '.'
    for (const [i, w] of wanted.entries()) {
      const d = firstDifference(actual[i], w, `${path}[${i}]`)
      if (d) return d
    }
    return undefined
  }
  if (actual === null || typeof actual !== 'object' || Array.isArray(actual)) return path || '.'
  for (const [k, v] of Object.entries(wanted)) {
    if (v === undefined) continue
    const d = firstDifference((actual as Record<string, unknown>)[k], v, path ? `${path}.${k}` : k)
    if (d) return d
  }
  return undefined
}

function labelsOf(obj: KubeObject | undefined): Record<string, string> {
  return obj?.metadata.labels ?? {}
}

function annotationsOf(obj: KubeObject | undefined): Record<string, string> {
  return obj?.metadata.annotations ?? {}
}

/** The object has every wanted label value (null: the label is absent). */
export const labelsMatch = (live: Record<string, string>, want: Record<string, string | null>) =>
  Object.entries(want).every(([k, v]) => (v === null ? !(k in live) : live[k] === v))

/** Whether an operation's effect is already in the cluster. */
export async function effectPresent(
  client: KubeClient,
  op: Operation,
  planName: string,
  restartStamp: string | undefined,
): Promise<boolean> {
  switch (op.op) {
    case 'apply': {
      const live = await client.get({
        apiVersion: op.object.apiVersion,
        kind: op.object.kind,
        namespace: op.object.metadata.namespace,
        name: op.object.metadata.name,
      })
      if (!live || !isOurs(live, planName)) return false
      const {metadata: _m, apiVersion: _a, kind: _k, ...content} = op.object
      return containsAll(live, content) && containsAll(live.metadata.labels ?? {}, op.object.metadata.labels ?? {})
    }
    case 'delete':
      return (await client.get(op.ref)) === undefined
    case 'label':
      return labelsMatch(labelsOf(await client.get(op.ref)), op.labels)
    case 'annotate':
      return labelsMatch(annotationsOf(await client.get(op.ref)), op.annotations)
    case 'template-labels':
      return labelsMatch(podTemplateOf(await client.get(op.ref))?.metadata?.labels ?? {}, op.labels)
    case 'restart': {
      if (!restartStamp) return false
      const live = await client.get(op.ref)
      return live?.spec?.template?.metadata?.annotations?.[RESTARTED_AT] === restartStamp
    }
  }
}

export interface PreconditionContext {
  namespace: string
  planName: string
  /** Objects the plan stores in full (from its delete operations), by refKey: the content a manifests-made plan compares against. */
  stored: Map<string, KubeObject>
  /** The plan was made from manifests: live objects carry server defaults the manifests did not. */
  fromManifests: boolean
  /** Label values this step itself writes: seeing them means the step already ran. */
  targetLabels: Record<string, string | null>
  /** Objects this step deletes: their absence means the step already ran. */
  deletes: Set<string>
  /** How to wait out a readiness blip before calling it a change (a real apply; a dry run judges at once). */
  readiness?: {timeoutMs: number; signal?: AbortSignal; onProgress?: (detail: string) => void}
}

/**
 * How long a waypoint that exists but is not ready is waited for before the step stops (capped by --timeout):
 * a blip passes in seconds, and wait-waypoint already waited the full timeout for it to become ready.
 */
const READINESS_BLIP_MS = 30_000

/** What no longer matches the plan, one line per difference; empty when the step may run. */
export async function stalePreconditions(
  client: KubeClient,
  preconditions: Precondition[],
  ctx: PreconditionContext,
): Promise<string[]> {
  const problems: string[] = []
  for (const p of preconditions) {
    switch (p.check) {
      case 'namespace-labels': {
        const ns = await client.get({apiVersion: 'v1', kind: 'Namespace', name: ctx.namespace})
        if (!ns) {
          problems.push(`namespace ${ctx.namespace} does not exist`)
          break
        }
        const live = labelsOf(ns)
        for (const [key, expected] of Object.entries(p.labels)) {
          const actual = live[key] ?? null
          if (actual === expected) continue
          if (key in ctx.targetLabels && ctx.targetLabels[key] === actual) continue
          problems.push(
            `namespace label ${key} is ${actual === null ? 'absent' : `"${actual}"`}, the plan expected ${expected === null ? 'it absent' : `"${expected}"`}`,
          )
        }
        break
      }
      case 'object-unchanged': {
        const live = await client.get(p.ref)
        if (!live) {
          if (!ctx.deletes.has(refKey(p.ref))) problems.push(`${formatRef(p.ref)} no longer exists`)
          break
        }
        if (objectFingerprint(live) === p.fingerprint) break
        const stored = ctx.stored.get(refKey(p.ref))
        // Manifests carry no server defaults: accept a live object that has everything the manifest said.
        if (ctx.fromManifests && stored && objectFingerprint(stored) === p.fingerprint) {
          const {metadata: _m, apiVersion: _a, kind: _k, ...content} = stored
          if (containsAll(live, content)) break
        }
        problems.push(`${formatRef(p.ref)} changed since the plan was made`)
        break
      }
      case 'object-absent-or-ours': {
        const live = await client.get(p.ref)
        if (live && !isOurs(live, ctx.planName))
          problems.push(`${formatRef(p.ref)} exists and was not created by this plan`)
        break
      }
      case 'object-present': {
        if (!(await client.get(p.ref))) problems.push(`${formatRef(p.ref)} no longer exists`)
        break
      }
      case 'waypoint-ready': {
        // The readiness gate of DOMAIN §4.2: a bound waypoint that is not ready is bypassed silently. A waypoint
        // that exists but is not ready at this instant (its proxy restarting, its status catching up after an
        // API server restart) is waited for a while (ctx.readiness) before it counts as a change.
        const {runCheck, waitUntil} = await import('./verify.js')
        const check = () => runCheck({check: 'waypoint-ready', ref: p.ref}, {client, namespace: ctx.namespace})
        const waitFor = ctx.readiness && (await client.get(p.ref)) ? ctx.readiness : undefined
        const ready = waitFor
          ? await waitUntil(check, {...waitFor, timeoutMs: Math.min(waitFor.timeoutMs, READINESS_BLIP_MS)})
          : await check()
        if (!ready.ok)
          problems.push(
            `the waypoint is not ready${waitFor ? ` (waited ${Math.round(Math.min(waitFor.timeoutMs, READINESS_BLIP_MS) / 1000)}s)` : ''}: ${ready.detail}`,
          )
        break
      }
    }
  }
  return problems
}

/**
 * A merge patch guarded by the resourceVersion just read (409 if someone changed the object since).
 * When the connection drops after the server applied it, the client resends it with the now old
 * resourceVersion and gets 409 although the write went through: on 409 the object is read again and
 * the write counts as done when the object shows its effect (`applied`). A 409 caused by an unrelated
 * writer (another controller annotating the namespace) is retried on the fresh resourceVersion while
 * `unchanged` holds — the values the write is about are still those it was decided on; otherwise the
 * conflict is thrown.
 */
export async function guardedMergePatch(
  client: KubeClient,
  ref: ObjectRef,
  patch: Record<string, unknown>,
  applied: (live: KubeObject | undefined) => boolean,
  opts: {dryRun: boolean; unchanged?: (live: KubeObject) => boolean},
): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await client.mergePatch(ref, patch, {dryRun: opts.dryRun})
      return
    } catch (error) {
      if (opts.dryRun || !(error instanceof KubeApiError && error.status === 409)) throw error
      const live = await client.get(ref)
      if (applied(live)) return
      if (!live || !opts.unchanged?.(live) || attempt >= CONFLICT_RETRIES) throw error
      const metadata = (patch.metadata ?? {}) as Record<string, unknown>
      patch = {...patch, metadata: {...metadata, resourceVersion: live.metadata.resourceVersion}}
    }
  }
}

/** How often a write is retried after conflicts with unrelated writers. */
const CONFLICT_RETRIES = 5

/** The object's labels (or pod-template labels) still have the values `seen` recorded for these keys. */
export function labelsStill(
  seen: Record<string, string | null>,
  of: (live: KubeObject) => Record<string, string>,
): (live: KubeObject) => boolean {
  return (live) => {
    const now = of(live)
    return Object.entries(seen).every(([k, v]) => (now[k] ?? null) === v)
  }
}

export interface OperationResult {
  wrote: boolean
  /** What was there before the write, for the step's record. */
  before?: unknown
}

/** Perform one write (or, with dryRun, have the server validate it). */
export async function performOperation(
  client: KubeClient,
  op: Operation,
  opts: {planName: string; dryRun: boolean; restartStamp: string},
): Promise<OperationResult> {
  switch (op.op) {
    case 'apply': {
      const ref = {
        apiVersion: op.object.apiVersion,
        kind: op.object.kind,
        namespace: op.object.metadata.namespace,
        name: op.object.metadata.name,
      }
      const live = await client.get(ref)
      if (live && !isOurs(live, opts.planName)) {
        throw new StalePlanError(`${formatRef(ref)} exists and was not created by this plan; refusing to overwrite it`)
      }
      await client.apply(op.object, {dryRun: opts.dryRun, force: true})
      return {wrote: true, before: {existed: live !== undefined}}
    }
    case 'delete': {
      const live = await client.get(op.ref)
      if (!live) return {wrote: false, before: {existed: false}}
      await client.delete(op.ref, {
        dryRun: opts.dryRun,
        ...(live.metadata.uid ? {preconditions: {uid: live.metadata.uid}} : {}),
      })
      return {wrote: true, before: {existed: true}}
    }
    case 'label': {
      const live = await client.get(op.ref)
      if (!live) throw new StalePlanError(`${formatRef(op.ref)} does not exist`)
      const previous = Object.fromEntries(Object.keys(op.labels).map((k) => [k, live.metadata.labels?.[k] ?? null]))
      // resourceVersion makes the patch fail with 409 if someone changed the object since we read it.
      await guardedMergePatch(
        client,
        op.ref,
        {metadata: {labels: op.labels, resourceVersion: live.metadata.resourceVersion}},
        (now) => labelsMatch(labelsOf(now), op.labels),
        {dryRun: opts.dryRun, unchanged: labelsStill(previous, labelsOf)},
      )
      return {wrote: true, before: {labels: previous}}
    }
    case 'annotate': {
      const live = await client.get(op.ref)
      if (!live) throw new StalePlanError(`${formatRef(op.ref)} does not exist`)
      const previous = Object.fromEntries(
        Object.keys(op.annotations).map((k) => [k, live.metadata.annotations?.[k] ?? null]),
      )
      await guardedMergePatch(
        client,
        op.ref,
        {metadata: {annotations: op.annotations, resourceVersion: live.metadata.resourceVersion}},
        (now) => labelsMatch(annotationsOf(now), op.annotations),
        {dryRun: opts.dryRun, unchanged: labelsStill(previous, annotationsOf)},
      )
      return {wrote: true, before: {annotations: previous}}
    }
    case 'template-labels': {
      const live = await client.get(op.ref)
      if (!live) throw new StalePlanError(`${formatRef(op.ref)} does not exist`)
      const current = podTemplateOf(live)?.metadata?.labels ?? {}
      const previous = Object.fromEntries(Object.keys(op.labels).map((k) => [k, current[k] ?? null]))
      const patch = templateLabelsPatch(live.kind, op.labels)
      ;(patch as {metadata?: unknown}).metadata = {resourceVersion: live.metadata.resourceVersion}
      await guardedMergePatch(
        client,
        op.ref,
        patch,
        (now) => labelsMatch(podTemplateOf(now)?.metadata?.labels ?? {}, op.labels),
        {dryRun: opts.dryRun, unchanged: labelsStill(previous, (o) => podTemplateOf(o)?.metadata?.labels ?? {})},
      )
      return {wrote: true, before: {labels: previous}}
    }
    case 'restart': {
      const live = await client.get(op.ref)
      if (!live) throw new StalePlanError(`${formatRef(op.ref)} does not exist`)
      if (live.spec?.template?.metadata?.annotations?.[RESTARTED_AT] === opts.restartStamp) return {wrote: false}
      await client.mergePatch(
        op.ref,
        {spec: {template: {metadata: {annotations: {[RESTARTED_AT]: opts.restartStamp}}}}},
        {dryRun: opts.dryRun},
      )
      return {wrote: true}
    }
  }
}
