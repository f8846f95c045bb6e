// The cluster as it will be once some steps have run: their writes laid over the live objects.
// Two uses: apply checks every remaining step's preconditions before the first step that changes
// traffic (drift is caught before any traffic moves, not after the restart), and a server dry run
// of several steps checks each later step against the dry-run effects of the earlier ones (nothing
// of a dry run is persisted, so the live cluster alone would fail them).
import type {KubeClient} from '../kube/types.js'
import type {KubeObject, ObjectRef} from '../planner/model.js'
import type {Operation, PlanStep, Precondition} from '../planner/plan-types.js'
import {formatRef, operationRef, refKey} from '../planner/refs.js'
import {templateLabelsPatch} from '../planner/workloads.js'
import {type PreconditionContext, stalePreconditions} from './operations.js'
import {podTemplateOf} from '../planner/vocab.js'
import {cloneJson} from '../planner/json.js'

type Effect =
  | {kind: 'object'; object: KubeObject}
  | {kind: 'absent'}
  | {kind: 'labels'; labels: Record<string, string | null>}
  | {kind: 'annotations'; annotations: Record<string, string | null>}
  | {kind: 'template-labels'; labels: Record<string, string | null>}

function withLabels(
  labels: Record<string, string> | undefined,
  change: Record<string, string | null>,
): Record<string, string> {
  const next = {...labels}
  for (const [k, v] of Object.entries(change)) {
    if (v === null) delete next[k]
    else next[k] = v
  }
  return next
}

function mergeDeep(target: Record<string, unknown>, patch: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {...target}
  for (const [k, v] of Object.entries(patch)) {
    const t = out[k]
    out[k] =
      v && typeof v === 'object' && !Array.isArray(v) && t && typeof t === 'object' && !Array.isArray(t)
        ? mergeDeep(t as Record<string, unknown>, v as Record<string, unknown>)
        : v
  }
  return out
}

function applyEffect(obj: KubeObject | undefined, effect: Effect): KubeObject | undefined {
  switch (effect.kind) {
    case 'object':
      return cloneJson(effect.object)
    case 'absent':
      return undefined
    case 'labels':
      return obj && {...obj, metadata: {...obj.metadata, labels: withLabels(obj.metadata.labels, effect.labels)}}
    case 'annotations':
      return (
        obj && {
          ...obj,
          metadata: {...obj.metadata, annotations: withLabels(obj.metadata.annotations, effect.annotations)},
        }
      )
    case 'template-labels': {
      if (!obj) return undefined
      // The same patch the executor sends, with null (remove) applied as JSON merge patch does.
      const patch = templateLabelsPatch(obj.kind, effect.labels) as Record<string, unknown>
      const merged = mergeDeep(obj as unknown as Record<string, unknown>, patch) as unknown as KubeObject
      const template = podTemplateOf(merged)
      if (template?.metadata?.labels) template.metadata.labels = withLabels(template.metadata.labels, effect.labels)
      return merged
    }
  }
}

/**
 * A read-only view of the cluster with the writes of some steps laid over it. Live objects are read
 * once per view (a view is short-lived: one check of the remaining steps, or one dry run).
 */
export class ProjectedCluster {
  private readonly effects = new Map<string, Effect[]>()
  private readonly live = new Map<string, Promise<KubeObject | undefined>>()
  /** refKeys of objects that exist only because of a projected step (created by an earlier step of the projection). */
  readonly created = new Set<string>()

  constructor(private readonly client: KubeClient) {}

  /** Lay a step's writes over the view (restarts change nothing a precondition looks at). */
  addStep(step: PlanStep): void {
    for (const op of step.operations) this.addOperation(op)
  }

  addOperation(op: Operation): void {
    const key = refKey(operationRef(op))
    const effect: Effect | undefined =
      op.op === 'apply'
        ? {kind: 'object', object: op.object}
        : op.op === 'delete'
          ? {kind: 'absent'}
          : op.op === 'label'
            ? {kind: 'labels', labels: op.labels}
            : op.op === 'annotate'
              ? {kind: 'annotations', annotations: op.annotations}
              : op.op === 'template-labels'
                ? {kind: 'template-labels', labels: op.labels}
                : undefined
    if (!effect) return
    this.effects.set(key, [...(this.effects.get(key) ?? []), effect])
    if (op.op === 'apply') this.created.add(key)
    if (op.op === 'delete') this.created.delete(key)
  }

  async get(ref: ObjectRef): Promise<KubeObject | undefined> {
    const key = refKey(ref)
    if (!this.live.has(key)) this.live.set(key, this.client.get(ref))
    let obj = await this.live.get(key)!
    for (const effect of this.effects.get(key) ?? []) obj = applyEffect(obj, effect)
    return obj && cloneJson(obj)
  }

  /** A KubeClient whose reads see the projection; everything else goes to the real client. */
  asClient(): KubeClient {
    const client = this.client
    return {
      context: client.context,
      server: client.server,
      discover: () => client.discover(),
      resourceFor: (v, k) => client.resourceFor(v, k),
      list: (r, o) => client.list(r, o),
      get: (ref) => this.get(ref),
      create: (o, w) => client.create(o, w),
      apply: (o, w) => client.apply(o, w),
      mergePatch: (r, p, w) => client.mergePatch(r, p, w),
      delete: (r, w) => client.delete(r, w),
      canI: (a) => client.canI(a),
      serverVersion: () => client.serverVersion(),
    }
  }
}

/** What a precondition check needs to know about the step itself (its own writes mean "already ran"). */
export function ownWrites(step: PlanStep): Pick<PreconditionContext, 'targetLabels' | 'deletes'> {
  const targetLabels: Record<string, string | null> = {}
  const deletes = new Set<string>()
  for (const op of step.operations) {
    if (op.op === 'label') Object.assign(targetLabels, op.labels)
    if (op.op === 'delete') deletes.add(refKey(op.ref))
  }
  return {targetLabels, deletes}
}

/**
 * The preconditions of a step that can be judged on a projection: a waypoint created by a projected
 * step cannot be ready yet (istiod programs it only once it really exists), so its readiness is left
 * to the step's own check at apply time. `skipped` says which were left out and why.
 */
export function projectablePreconditions(
  step: PlanStep,
  projection: ProjectedCluster,
): {checks: Precondition[]; skipped: string[]} {
  const checks: Precondition[] = []
  const skipped: string[] = []
  for (const p of step.preconditions) {
    if (p.check === 'waypoint-ready' && projection.created.has(refKey(p.ref))) {
      skipped.push(
        `${formatRef(p.ref)} ready: it is created by an earlier step of this run, and only istiod can program it`,
      )
      continue
    }
    checks.push(p)
  }
  return {checks, skipped}
}

export interface LaterStepProblem {
  step: PlanStep
  problems: string[]
}

/**
 * Check the preconditions of every step after `steps[0]` against the cluster as the steps before it
 * will leave it. Waypoint readiness is not judged ahead (it is a controller's state that changes on
 * its own; each step checks it when it runs). Returns the steps whose preconditions already fail.
 */
export async function laterStepProblems(
  client: KubeClient,
  steps: PlanStep[],
  ctx: Omit<PreconditionContext, 'targetLabels' | 'deletes'>,
): Promise<LaterStepProblem[]> {
  const projection = new ProjectedCluster(client)
  const view = projection.asClient()
  const found: LaterStepProblem[] = []
  for (const [i, step] of steps.entries()) {
    if (i > 0) {
      const checks = step.preconditions.filter((p) => p.check !== 'waypoint-ready')
      const problems = await stalePreconditions(view, checks, {...ctx, ...ownWrites(step)})
      if (problems.length > 0) found.push({step, problems})
    }
    projection.addStep(step)
  }
  return found
}
