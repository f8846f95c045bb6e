// Does the cluster still show what each applied step wrote? (`status`). One line per difference,
// naming the object and the label key or field, so an operator can see who undid what.
import type {KubeClient} from '../kube/types.js'
import {
  MANAGED_BY_LABEL,
  type Operation,
  PLAN_ANNOTATION,
  type PlanStep,
  type Verification,
} from '../planner/plan-types.js'
import {formatRef, operationRef, refKey} from '../planner/refs.js'
import {podTemplateOf} from '../planner/vocab.js'
import {hasSidecar, livePods, podsByWorkload} from './observe.js'
import {firstDifference, isOurs} from './operations.js'

const shown = (v: string | null | undefined) => (v === null || v === undefined ? 'absent' : `"${v}"`)

/**
 * How a difference between an operation and the cluster reads: as drift of a step the record says is applied
 * (`status`), or as an effect not yet live, whoever was to write it (`status --by-effect`, executor/effect.ts).
 */
export interface DifferenceWording {
  key(what: string, field: 'label' | 'annotation', key: string, wrote: string | null, live: string | undefined): string
  field(what: string, field: string, wrote: unknown, live: unknown): string
  deleted(what: string): string
}

const DRIFT_WORDING: DifferenceWording = {
  key: (what, field, key, wrote, live) =>
    `${what}: ${field} ${key} changed since the step set it: ${shown(wrote)} → ${shown(live)}`,
  field: (what, field, wrote, live) =>
    `${what}: field ${field} changed since the step wrote it: ${valueText(wrote)} → ${valueText(live)}`,
  deleted: (what) => `${what} is back (the step deleted it)`,
}

export const EFFECT_WORDING: DifferenceWording = {
  key: (what, field, key, wrote, live) => `${what}: ${field} ${key} is ${shown(live)}, the step sets ${shown(wrote)}`,
  field: (what, field, wrote, live) =>
    `${what}: field ${field} is ${valueText(live)}, the step sets ${valueText(wrote)}`,
  deleted: (what) => `${what} is still present (the step deletes it)`,
}

/** Each label or annotation key whose live value is not what the step sets. */
function keyDifferences(
  wording: DifferenceWording,
  what: string,
  live: Record<string, string>,
  wrote: Record<string, string | null>,
  field: 'label' | 'annotation' = 'label',
): string[] {
  return Object.entries(wrote)
    .filter(([k, v]) => (live[k] ?? null) !== v)
    .map(([k, v]) => wording.key(what, field, k, v, live[k]))
}

/** The value at a JSON path as firstDifference gives it (`spec.rules[1].a`), for the "old → new" of a field. */
function valueAt(obj: unknown, path: string): unknown {
  if (path === '.') return obj
  let value: unknown = obj
  for (const part of path.split(/\.|(?=\[)/)) {
    if (value === null || typeof value !== 'object') return undefined
    const index = /^\[(\d+)\]$/.exec(part)
    value = index ? (value as unknown[])[Number(index[1])] : (value as Record<string, unknown>)[part]
  }
  return value
}

const valueText = (v: unknown) => (v === undefined ? 'absent' : JSON.stringify(v))

/** How to judge an operation: `planName` when the object must carry this plan's marks (drift of a recorded step). */
export interface DifferenceJudge {
  wording: DifferenceWording
  planName?: string
}

const withoutKey = (entries: Record<string, string> | undefined, key: string) =>
  Object.fromEntries(Object.entries(entries ?? {}).filter(([k]) => k !== key))

/** An applied object against the object the step writes. */
async function objectDifferences(
  client: KubeClient,
  op: Extract<Operation, {op: 'apply'}>,
  judge: DifferenceJudge,
): Promise<string[]> {
  const ref = operationRef(op)
  const live = await client.get(ref)
  if (!live) return [`${formatRef(ref)} is missing`]
  if (judge.planName !== undefined && !isOurs(live, judge.planName))
    return [
      `${formatRef(ref)} no longer carries this plan's marks (label app.kubernetes.io/managed-by, annotation mesh-migrate.io/plan)`,
    ]
  const {metadata, apiVersion: _a, kind: _k, ...content} = op.object
  const field = firstDifference(live, content)
  if (field) return [judge.wording.field(formatRef(ref), field, valueAt(content, field), valueAt(live, field))]
  const what = formatRef(ref)
  const liveLabels = live.metadata.labels ?? {}
  if (judge.planName !== undefined)
    return keyDifferences(judge.wording, what, liveLabels, metadata.labels ?? {}).slice(0, 1)
  // Judged by effect: a GitOps engine syncs the repository's copy, which has none of the tool's ownership marks.
  return [
    ...keyDifferences(judge.wording, what, liveLabels, withoutKey(metadata.labels, MANAGED_BY_LABEL)),
    ...keyDifferences(
      judge.wording,
      what,
      live.metadata.annotations ?? {},
      withoutKey(metadata.annotations, PLAN_ANNOTATION),
      'annotation',
    ),
  ].slice(0, 1)
}

/** What of the operation's writes the cluster does not show (empty: it does). */
export async function operationDifferences(
  client: KubeClient,
  op: Operation,
  judge: DifferenceJudge,
): Promise<string[]> {
  const {wording} = judge
  switch (op.op) {
    case 'apply':
      return objectDifferences(client, op, judge)
    case 'delete':
      return (await client.get(op.ref)) ? [wording.deleted(formatRef(op.ref))] : []
    case 'label':
    case 'annotate':
    case 'template-labels': {
      const live = await client.get(op.ref)
      if (!live) return [`${formatRef(op.ref)} is missing`]
      const what = formatRef(op.ref)
      if (op.op === 'label') return keyDifferences(wording, what, live.metadata.labels ?? {}, op.labels)
      if (op.op === 'annotate')
        return keyDifferences(wording, what, live.metadata.annotations ?? {}, op.annotations, 'annotation')
      const template = podTemplateOf(live)?.metadata?.labels ?? {}
      return keyDifferences(wording, `the pod template of ${what}`, template, op.labels)
    }
    case 'restart':
      // A restart's effect is in its pods, not in the timestamp (a later restart replaces it without undoing
      // anything): podDrift, and the step's own checks when judged by effect.
      return []
  }
}

type PodCheck = Extract<Verification, {check: 'pods-without-sidecar' | 'pods-captured'}>

/**
 * A restart's effect is in its pods, not in an object it wrote: what the step verified of them (no
 * sidecar, captured by ztunnel) must still hold. Pods that got their sidecar back (the injection label
 * restored and the workload restarted by someone else) are drift, named per workload.
 */
async function podDrift(client: KubeClient, step: PlanStep): Promise<string[]> {
  const checks = step.verify.filter(
    (v): v is PodCheck => v.check === 'pods-without-sidecar' || v.check === 'pods-captured',
  )
  const namespace = checks.flatMap((c) => c.refs)[0]?.namespace
  if (!namespace) return []
  const byWorkload = podsByWorkload(await livePods(client, namespace))
  const found: string[] = []
  for (const check of checks) {
    for (const ref of check.refs) {
      const pods = byWorkload.get(refKey(ref)) ?? []
      // A pod still Pending (being scheduled or started, e.g. a scale-up) gets its redirection when its sandbox is
      // set up: not captured *yet* is a passing state, not drift. Its sidecar, injected at admission, is known at once.
      const bad =
        check.check === 'pods-without-sidecar'
          ? pods.filter(hasSidecar)
          : pods.filter((p) => !p.captured && p.pod.status?.phase !== 'Pending')
      if (bad.length === 0) continue
      const what =
        check.check === 'pods-without-sidecar'
          ? 'run with a sidecar again (the step verified none had one)'
          : 'are not captured by ztunnel (ambient.istio.io/redirection is not enabled; the step verified they were)'
      found.push(
        `${formatRef(ref)}: ${bad.length} of ${pods.length} pod(s) ${what}: ${bad.map((p) => p.name).join(', ')}`,
      )
    }
  }
  return found
}

type KeyedOperation = Extract<Operation, {op: 'label' | 'annotate' | 'template-labels'}>
const keysOf = (op: KeyedOperation) => (op.op === 'annotate' ? op.annotations : op.labels)

/**
 * The operation without the keys a later applied step writes on the same object: those hold the later step's value
 * by design (canary-waypoint-50 changes the weight canary-waypoint-10 set), which is not drift of the earlier step.
 */
export function withoutSuperseded(op: Operation, later: PlanStep[]): Operation | undefined {
  if (op.op !== 'label' && op.op !== 'annotate' && op.op !== 'template-labels') return op
  const taken = new Set(
    later
      .flatMap((s) => s.operations)
      .filter((o): o is KeyedOperation => o.op === op.op && refKey(o.ref) === refKey(op.ref))
      .flatMap((o) => Object.keys(keysOf(o))),
  )
  const kept = Object.fromEntries(Object.entries(keysOf(op)).filter(([k]) => !taken.has(k)))
  if (Object.keys(kept).length === 0) return undefined
  return op.op === 'annotate' ? {...op, annotations: kept} : {...op, labels: kept}
}

/**
 * What of an applied step's writes (and of the pods it verified) the cluster no longer shows (empty: in sync).
 * `later`: the steps applied after it, whose writes of the same label or annotation keys take precedence.
 */
export async function stepDrift(
  client: KubeClient,
  step: PlanStep,
  planName: string,
  later: PlanStep[] = [],
): Promise<string[]> {
  const found: string[] = []
  for (const op of step.operations) {
    const current = withoutSuperseded(op, later)
    if (current) found.push(...(await operationDifferences(client, current, {wording: DRIFT_WORDING, planName})))
  }
  found.push(...(await podDrift(client, step)))
  return found
}
