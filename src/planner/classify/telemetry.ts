// Telemetry (DOMAIN §3.11, §8). ztunnel does not read Telemetry (it emits its own L4 metrics). Waypoints
// apply root-namespace and namespace-wide (no selector, no targetRefs) Telemetry of their namespace and of the
// Service's namespace, plus targetRefs Telemetry; selector Telemetry is ignored everywhere in ambient.
import type {ClassifyContext} from '../context.js'
import type {KubeObject} from '../model.js'
import type {TelemetrySpec} from '../istio-types.js'
import {
  type Classified,
  type KindClassifier,
  TELEMETRY,
  allServices,
  analyzeTargetRefs,
  hasLabels,
  isRecord,
  item,
  itemRef,
  namespaceOf,
  reason,
  selectorCoverage,
  targetRefsOf,
  workloadNames,
} from './common.js'

function configured(spec: TelemetrySpec): string {
  const parts = (['metrics', 'accessLogging', 'tracing'] as const).filter((k) => Array.isArray(spec[k]) && spec[k]!.length > 0)
  return parts.length > 0 ? parts.join(', ') : 'no metrics/accessLogging/tracing'
}

export function classifyTelemetry(obj: KubeObject, ctx: ClassifyContext): Classified {
  const ref = itemRef(obj, ctx)
  const spec: TelemetrySpec = isRecord(obj.spec) ? obj.spec : {}
  const local = ref.namespace === ctx.namespace
  const root = ref.namespace === ctx.rootNamespace
  const reasons: string[] = []

  if (targetRefsOf(spec).length > 0) {
    const t = analyzeTargetRefs(obj, ctx)
    reasons.push(...t.reasons)
    return {item: item(ref, t.waypoint ? 'L7' : 'unaffected', 'keep', reasons, {scope: 'targetRefs', services: t.services}), findings: []}
  }

  const selector = hasLabels(spec.selector?.matchLabels) ? spec.selector!.matchLabels : undefined
  if (selector) {
    const cov = selectorCoverage(ctx, selector)
    if (cov.unmatched) {
      reasons.push(reason('spec.selector', 'matches no workload of the namespace: no effect now (re-run plan if such pods are added)'))
      return {item: item(ref, 'inert', local ? 'no-effect' : 'keep', reasons, {scope: 'workload', services: cov.services}), findings: []}
    }
    if (cov.proxiesOnly) {
      reasons.push(reason('spec.selector', `matches only gateway/waypoint pods (${workloadNames(cov.workloads)}): unaffected (IST0166 if it selects a waypoint: use targetRefs)`))
      return {item: item(ref, 'unaffected', 'keep', reasons, {scope: 'workload', services: cov.services}), findings: []}
    }
    reasons.push(reason('spec.selector', `selects ${workloadNames(cov.workloads)}: ztunnel ignores Telemetry and waypoints ignore selector Telemetry — ${configured(spec)} settings stop applying`))
    reasons.push(reason('spec', 'carry it to the waypoint with targetRefs'))
    return {item: item(ref, 'L7', 'retarget', reasons, {scope: 'workload', services: cov.services}), findings: []}
  }

  const scope = root ? 'mesh' : 'namespace'
  const where = root ? `root-namespace (mesh-wide)` : 'namespace-wide'
  if (ctx.waypointPlanned) {
    reasons.push(reason('spec', `${where} Telemetry (${configured(spec)}): ignored by ztunnel, applied by the waypoint that will serve ${ctx.namespace}`))
    return {item: item(ref, 'L7', 'keep', reasons, {scope, services: allServices(ctx)}), findings: []}
  }
  reasons.push(
    reason('spec', `${where} Telemetry (${configured(spec)}): ztunnel ignores it (it emits its own L4 metrics, reporter="source"); it would apply at a waypoint, but none is planned for ${ctx.namespace}`),
  )
  return {item: item(ref, 'inert', 'keep', reasons, {scope, services: allServices(ctx)}), findings: []}
}

/** Only namespace-wide Telemetry of the root namespace applies elsewhere (selector Telemetry applies to its own namespace). */
function relevantElsewhere(obj: KubeObject, ctx: ClassifyContext): boolean {
  if (namespaceOf(obj, ctx) !== ctx.rootNamespace) return false
  const spec: TelemetrySpec = isRecord(obj.spec) ? obj.spec : {}
  return targetRefsOf(spec).length === 0 && !hasLabels(spec.selector?.matchLabels)
}

export const telemetryClassifier: KindClassifier = {
  kinds: [`${TELEMETRY}/Telemetry`],
  relevantElsewhere,
  classify: classifyTelemetry,
}
