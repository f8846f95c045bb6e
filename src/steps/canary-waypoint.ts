// canary-waypoint (--waypoint-canary 10,50; Istio >= 1.31, Alpha): when the namespace is bound to a primary waypoint
// the plan replaces by its own, shift its Services to the plan's waypoint gradually before bind-waypoint promotes it.
// One step per weight: the namespace gets istio.io/use-waypoint-canary=<the plan's waypoint> and the ANNOTATION
// istio.io/use-waypoint-canary-weight=<weight> (the share of new connections ztunnel sends to the canary).
// Upstream: istio/istio releasenotes/notes/60801-weighted-waypoint-canary.yaml,
// pilot/pkg/serviceregistry/ambient/waypoints.go (buildWeightedWaypoints: nothing without a primary); istio.io ambient
// waypoint page, "Shift traffic between waypoints" (a namespace canary applies only to Services inheriting their
// primary from the namespace; promotion sets use-waypoint and removes the canary label and annotation). Pure.
import type {ObjectRef} from '../planner/model.js'
import type {Operation, PlanStep} from '../planner/plan-types.js'
import {
  USE_WAYPOINT_CANARY_LABEL,
  USE_WAYPOINT_CANARY_NAMESPACE_LABEL,
  USE_WAYPOINT_CANARY_WEIGHT_ANNOTATION,
  USE_WAYPOINT_LABEL,
  USE_WAYPOINT_NAMESPACE_LABEL,
  WAYPOINT_CANARY_MIN_ISTIO,
} from '../planner/vocab.js'
import {objectFor} from './shared.js'
import type {StepContext, StepKind} from './types.js'

/** The primary waypoint the namespace is bound to today, when the plan replaces it by its own; else undefined. */
export function replacedPrimary(
  labels: Record<string, string>,
  ns: string,
  waypointName: string,
): {name: string; namespace: string} | undefined {
  const name = labels[USE_WAYPOINT_LABEL]
  // "none" opts out of waypoints: there is no primary to shift traffic from.
  if (name === undefined || name === '' || name === 'none') return undefined
  const namespace = labels[USE_WAYPOINT_NAMESPACE_LABEL] || ns
  if (name === waypointName && namespace === ns) return undefined
  return {name, namespace}
}

/** Why --waypoint-canary cannot be planned for this namespace (a usage error, exit 2), or undefined. */
export function waypointCanaryRefusal(input: {
  labels: Record<string, string>
  ns: string
  waypointName: string
  istioVersion: string | undefined
  /** Where the version came from ("--istio-version" or "the serving istiod"). */
  versionSource?: string
}): {message: string; suggestion: string} | undefined {
  const {ns, waypointName, istioVersion} = input
  const minor = /^v?1\.(\d+)/.exec(istioVersion ?? '')
  const needed = Number(WAYPOINT_CANARY_MIN_ISTIO.split('.')[1])
  if (!minor || Number(minor[1]) < needed)
    return {
      message: `--waypoint-canary needs Istio >= ${WAYPOINT_CANARY_MIN_ISTIO} (the weighted waypoint canary, istio.io/use-waypoint-canary, is Alpha since ${WAYPOINT_CANARY_MIN_ISTIO}); ${istioVersion ? `found ${istioVersion} (${input.versionSource ?? 'the serving istiod'})` : 'the Istio version is unknown (pass --istio-version when planning from manifests)'}`,
      suggestion: `Leave out --waypoint-canary: bind-waypoint binds the waypoint in one step, gated by its readiness check (mesh-migrate plan ${ns}), or upgrade istiod to ${WAYPOINT_CANARY_MIN_ISTIO} first.`,
    }
  if (!replacedPrimary(input.labels, ns, waypointName))
    return {
      message: `--waypoint-canary shifts traffic from a primary waypoint to the plan's, and namespace ${ns} is bound to none the plan replaces (${input.labels[USE_WAYPOINT_LABEL] ? `${USE_WAYPOINT_LABEL}=${input.labels[USE_WAYPOINT_LABEL]}` : `no ${USE_WAYPOINT_LABEL}`}): upstream sends a canary share only next to a primary (istio/istio pilot/pkg/serviceregistry/ambient/waypoints.go buildWeightedWaypoints returns nothing without one; istio.io "Shift traffic between waypoints")`,
      suggestion: `Leave out --waypoint-canary: bind-waypoint binds ${waypointName} directly, and only once it is Programmed and ready (its precondition), then verifies every Service is bound (mesh-migrate plan ${ns}).`,
    }
  return undefined
}

/** The problem with the weights of --waypoint-canary (increasing integers in 1..99), or undefined. */
export function canaryWeightsProblem(weights: string): {weights?: number[]; problem?: string} {
  const parts = weights.split(',').map((w) => w.trim())
  if (parts.some((p) => !/^\d+$/.test(p)))
    return {problem: `"${weights}" is not a comma-separated list of integers (e.g. 10,50)`}
  const list = parts.map(Number)
  if (list.some((w) => w < 1 || w > 99))
    return {problem: 'every weight must be between 1 and 99 (0 sends nothing to the canary; bind-waypoint does 100)'}
  if (list.some((w, i) => i > 0 && w <= list[i - 1]!))
    return {problem: `the weights must increase (${list.join(', ')})`}
  return {weights: list}
}

export const canaryWaypoint: StepKind = {
  action: 'canary-waypoint',
  summary:
    'Optional (--waypoint-canary, Istio >= 1.31): shift the Services from the primary waypoint to the plan’s, one step per weight',
  writes: {
    label: {kinds: ['/Namespace'], keys: [USE_WAYPOINT_CANARY_LABEL, USE_WAYPOINT_CANARY_NAMESPACE_LABEL]},
    annotate: {kinds: ['/Namespace'], keys: [USE_WAYPOINT_CANARY_WEIGHT_ANNOTATION]},
  },
  plan: (ctx) => {
    const weights = ctx.options.waypointCanary ?? []
    const primary = replacedPrimary(ctx.labels, ctx.ns, ctx.options.waypointName)
    if (!ctx.waypoint || weights.length === 0 || !primary) return {}
    return {steps: weights.map((_weight, i) => canaryStep(ctx, primary, weights, i))}
  },
}

function canaryStep(
  ctx: StepContext,
  primary: {name: string; namespace: string},
  weights: number[],
  i: number,
): PlanStep {
  const {ns, nsRef, labels, binding, options, snapshot, waypoint} = ctx
  const weight = weights[i]!
  const annotations = objectFor(snapshot, nsRef)?.metadata.annotations ?? {}
  // The canary label (and no canary namespace: the plan's waypoint is in the Services' namespace) set by the first step.
  const canaryLabels: Record<string, string | null> = {
    [USE_WAYPOINT_CANARY_LABEL]: options.waypointName,
    ...(labels[USE_WAYPOINT_CANARY_NAMESPACE_LABEL] !== undefined ? {[USE_WAYPOINT_CANARY_NAMESPACE_LABEL]: null} : {}),
  }
  const before =
    i === 0
      ? Object.fromEntries(Object.keys(canaryLabels).map((k) => [k, labels[k] ?? null]))
      : {[USE_WAYPOINT_CANARY_LABEL]: options.waypointName}
  const previousWeight = i === 0 ? (annotations[USE_WAYPOINT_CANARY_WEIGHT_ANNOTATION] ?? null) : String(weights[i - 1])
  const weightOp: Operation = {
    op: 'annotate',
    ref: nsRef,
    annotations: {[USE_WAYPOINT_CANARY_WEIGHT_ANNOTATION]: String(weight)},
  }
  // The weight first: a weight without the canary label sends nothing; the label then starts the shift at that weight.
  const operations: Operation[] = i === 0 ? [weightOp, {op: 'label', ref: nsRef, labels: canaryLabels}] : [weightOp]
  const primaryRef: ObjectRef = {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'Gateway',
    namespace: primary.namespace,
    name: primary.name,
  }
  const services = binding.bound.map((s) => s.ref.name)
  return {
    id: `canary-waypoint-${weight}`,
    action: 'canary-waypoint',
    description: `Send ${weight}% of the new connections to the Services of namespace ${ns} that inherit its ${USE_WAYPOINT_LABEL} (${services.join(', ') || 'none'}) through ${options.waypointName}, the rest through the primary waypoint ${primary.namespace}/${primary.name}: ${i === 0 ? `label the namespace ${USE_WAYPOINT_CANARY_LABEL}=${options.waypointName} and annotate it` : 'annotate the namespace'} ${USE_WAYPOINT_CANARY_WEIGHT_ANNOTATION}=${weight} (Istio >= ${WAYPOINT_CANARY_MIN_ISTIO}, Alpha; ztunnel splits per connection, established connections stay; an invalid canary falls back to the primary, reported in the Services' istio.io/WaypointBound condition).`,
    preconditions: [
      {
        check: 'namespace-labels',
        labels: {
          [USE_WAYPOINT_LABEL]: labels[USE_WAYPOINT_LABEL] ?? null,
          [USE_WAYPOINT_NAMESPACE_LABEL]: labels[USE_WAYPOINT_NAMESPACE_LABEL] ?? null,
          ...before,
        },
      },
      // Never send a share to a waypoint that is not ready (a bound waypoint that is not ready is bypassed silently).
      {check: 'waypoint-ready', ref: waypoint!.ref},
    ],
    operations,
    verify: [
      {check: 'namespace-labels', labels: canaryLabels},
      {check: 'waypoint-ready', ref: waypoint!.ref},
      // The Services still report a bound waypoint (the primary; an unusable canary only falls back to it).
      {check: 'waypoint-bound', ref: primaryRef, services},
    ],
    undo: {
      description: `Restore ${[
        ...(i === 0 ? Object.entries(before).map(([k, v]) => (v === null ? `no ${k}` : `${k}=${v}`)) : []),
        previousWeight === null
          ? `no ${USE_WAYPOINT_CANARY_WEIGHT_ANNOTATION} annotation`
          : `${USE_WAYPOINT_CANARY_WEIGHT_ANNOTATION}=${previousWeight}`,
      ].join(', ')} on namespace ${ns}${i === 0 ? ': all traffic goes through the primary waypoint again' : ''}.`,
      // The label first: without the canary label the weight sends nothing.
      operations: [
        ...(i === 0 ? [{op: 'label' as const, ref: nsRef, labels: before}] : []),
        {op: 'annotate', ref: nsRef, annotations: {[USE_WAYPOINT_CANARY_WEIGHT_ANNOTATION]: previousWeight}},
      ],
    },
  }
}
