// Does the cluster still show what each applied step wrote? (`status`). One line per difference,
// naming the object and the label key or field, so an operator can see who undid what.
import type {KubeClient} from '../kube/types.js'
import type {Operation, PlanStep, Verification} from '../planner/plan-types.js'
import {formatRef, operationRef, refKey} from '../planner/refs.js'
import {podTemplateOf} from '../planner/vocab.js'
import {hasSidecar, livePods, podsByWorkload} from './observe.js'
import {firstDifference, isOurs} from './operations.js'

const shown = (v: string | null | undefined) => (v === null || v === undefined ? 'absent' : `"${v}"`)

/** One changed label or annotation: what the step set → what the cluster has now. */
function labelDrift(
  what: string,
  live: Record<string, string>,
  wrote: Record<string, string | null>,
  field: 'label' | 'annotation' = 'label',
): string[] {
  return Object.entries(wrote)
    .filter(([k, v]) => (live[k] ?? null) !== v)
    .map(([k, v]) => `${what}: ${field} ${k} changed since the step set it: ${shown(v)} → ${shown(live[k])}`)
}

/** The value at a JSON path as firstDifference gives it (`spec.rules[1].a`), for the "old → new" of a field. */
export function valueAt(obj: unknown, path: string): unknown {
  if (path === '.') return obj
  let value: unknown = obj
  for (const part of path.split(/\.|(?=\[)/)) {
    if (value === null || typeof value !== 'object') return undefined
    const index = /^\[(\d+)\]$/.exec(part)
    value = index ? (value as unknown[])[Number(index[1])] : (value as Record<string, unknown>)[part]
  }
  return value
}

export const valueText = (v: unknown) => (v === undefined ? 'absent' : JSON.stringify(v))

async function operationDrift(client: KubeClient, op: Operation, planName: string): Promise<string[]> {
  switch (op.op) {
    case 'apply': {
      const ref = operationRef(op)
      const live = await client.get(ref)
      if (!live) return [`${formatRef(ref)} is missing`]
      if (!isOurs(live, planName))
        return [
          `${formatRef(ref)} no longer carries this plan's marks (label app.kubernetes.io/managed-by, annotation mesh-migrate.io/plan)`,
        ]
      const {metadata, apiVersion: _a, kind: _k, ...content} = op.object
      const field = firstDifference(live, content)
      if (field)
        return [
          `${formatRef(ref)}: field ${field} changed since the step wrote it: ${valueText(valueAt(content, field))} → ${valueText(valueAt(live, field))}`,
        ]
      return labelDrift(formatRef(ref), live.metadata.labels ?? {}, metadata.labels ?? {}).slice(0, 1)
    }
    case 'delete':
      return (await client.get(op.ref)) ? [`${formatRef(op.ref)} is back (the step deleted it)`] : []
    case 'label': {
      const live = await client.get(op.ref)
      return live
        ? labelDrift(formatRef(op.ref), live.metadata.labels ?? {}, op.labels)
        : [`${formatRef(op.ref)} is missing`]
    }
    case 'annotate': {
      const live = await client.get(op.ref)
      return live
        ? labelDrift(formatRef(op.ref), live.metadata.annotations ?? {}, op.annotations, 'annotation')
        : [`${formatRef(op.ref)} is missing`]
    }
    case 'template-labels': {
      const live = await client.get(op.ref)
      return live
        ? labelDrift(`the pod template of ${formatRef(op.ref)}`, podTemplateOf(live)?.metadata?.labels ?? {}, op.labels)
        : [`${formatRef(op.ref)} is missing`]
    }
    case 'restart':
      // A later restart replaces the timestamp without undoing anything: the timestamp is not drift (the
      // pods' proxy state is: podDrift).
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
    if (current) found.push(...(await operationDrift(client, current, planName)))
  }
  found.push(...(await podDrift(client, step)))
  return found
}
