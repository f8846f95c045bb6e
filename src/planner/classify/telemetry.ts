// Telemetry (DOMAIN §3.11, §8). ztunnel does not read Telemetry (it emits its own L4 metrics). Waypoints
// apply root-namespace and namespace-wide (no selector, no targetRefs) Telemetry of their namespace and of the
// Service's namespace, plus targetRefs Telemetry; selector Telemetry is ignored everywhere in ambient.
import type {ClassifyContext} from '../context.js'
import type {KubeObject} from '../model.js'
import type {TelemetrySpec} from '../istio-types.js'
import {type Classified, type KindClassifier, item, reason, workloadNames} from './results.js'
import {allServices, hasLabels, noPodSelected, selectorCoverage} from './selection.js'
import {classifyByTargetRefs, targetRefsOf} from './waypoints.js'
import {isRecord} from '../json.js'
import {itemRef, namespaceOf} from './objects.js'
import {TELEMETRY} from '../vocab.js'

function configured(spec: TelemetrySpec): string {
  const parts = (['metrics', 'accessLogging', 'tracing'] as const).filter(
    (k) => Array.isArray(spec[k]) && spec[k]!.length > 0,
  )
  return parts.length > 0 ? parts.join(', ') : 'no metrics/accessLogging/tracing'
}

/** An entry that only switches something off: `accessLogging[].disabled`, `tracing[].disableSpanReporting`, metrics overrides all `disabled`. */
function onlyDisables(key: 'metrics' | 'accessLogging' | 'tracing', entry: unknown): boolean {
  if (!isRecord(entry)) return false
  if (key === 'accessLogging') return entry.disabled === true
  if (key === 'tracing') return entry.disableSpanReporting === true
  const overrides = Array.isArray(entry.overrides) ? entry.overrides : []
  return (
    overrides.length > 0 && overrides.every((o) => isRecord(o) && o.disabled === true && o.tagOverrides === undefined)
  )
}

/**
 * The L7 telemetry a Telemetry turns on or shapes (access logs, spans, request metrics): only an Envoy proxy
 * produces it, so in ambient only a waypoint keeps it (ztunnel has no Telemetry support and emits its own L4
 * metrics and logs). Entries that only switch something off need no waypoint: without one there is nothing to
 * switch off. Sources: istio/istio pilot/pkg/model/telemetry.go (waypoints apply namespace/root Telemetry),
 * https://istio.io/latest/docs/ambient/usage/waypoint/ ("HTTP metrics, access logs, tracing" need a waypoint).
 */
export function telemetryNeedingWaypoint(spec: TelemetrySpec): string[] {
  return (['metrics', 'accessLogging', 'tracing'] as const).filter(
    (k) => Array.isArray(spec[k]) && spec[k]!.some((e) => !onlyDisables(k, e)),
  )
}

export function classifyTelemetry(obj: KubeObject, ctx: ClassifyContext): Classified {
  const ref = itemRef(obj, ctx)
  const spec: TelemetrySpec = isRecord(obj.spec) ? obj.spec : {}
  const root = ref.namespace === ctx.rootNamespace
  const reasons: string[] = []

  if (targetRefsOf(spec).length > 0) return classifyByTargetRefs(obj, ctx, ref, reasons)

  const selector = hasLabels(spec.selector?.matchLabels) ? spec.selector!.matchLabels : undefined
  if (selector) {
    const cov = selectorCoverage(ctx, selector)
    const noPod = noPodSelected(ctx, cov, 'spec.selector', ref, reasons, {scope: 'workload', services: cov.services})
    if (noPod) return noPod
    if (cov.proxiesOnly) {
      reasons.push(
        reason(
          'spec.selector',
          `matches only gateway/waypoint pods (${workloadNames(cov.workloads)}): unaffected (IST0166 if it selects a waypoint: use targetRefs)`,
        ),
      )
      return {item: item(ref, 'unaffected', 'keep', reasons, {scope: 'workload', services: cov.services}), findings: []}
    }
    reasons.push(
      reason(
        'spec.selector',
        `selects ${workloadNames(cov.workloads)}: ztunnel ignores Telemetry and waypoints ignore selector Telemetry — ${configured(spec)} settings stop applying`,
      ),
    )
    reasons.push(reason('spec', 'carry it to the waypoint with targetRefs'))
    return {item: item(ref, 'L7', 'retarget', reasons, {scope: 'workload', services: cov.services}), findings: []}
  }

  const scope = root ? 'mesh' : 'namespace'
  const where = root ? `root-namespace (mesh-wide)` : 'namespace-wide'
  const l7 = telemetryNeedingWaypoint(spec)
  if (ctx.waypointPlanned) {
    reasons.push(
      reason(
        'spec',
        `${where} Telemetry (${configured(spec)}): ztunnel has no Telemetry support; the waypoint that will serve ${ctx.namespace} applies it as it is, to the traffic it proxies (Service-addressed calls from ambient clients)`,
      ),
    )
    return {item: item(ref, 'L7', 'keep', reasons, {scope, services: allServices(ctx)}), findings: []}
  }
  if (l7.length > 0) {
    // Counted by needsWaypoint: the plan deploys the namespace's waypoint and binds it, and the second
    // classification pass (waypointPlanned) writes the reason above.
    reasons.push(
      reason(
        'spec',
        `${where} Telemetry (${l7.join(', ')}): L7 telemetry exists only where a waypoint proxies the traffic (ztunnel has no Telemetry support): ${ctx.namespace} needs a waypoint to keep it`,
      ),
    )
    return {item: item(ref, 'L7', 'keep', reasons, {scope, services: allServices(ctx)}), findings: []}
  }
  const what =
    configured(spec) === 'no metrics/accessLogging/tracing'
      ? 'configures no metrics, access logging or tracing'
      : `only switches Envoy telemetry off (${configured(spec)}), and without a waypoint there is none to switch off`
  reasons.push(
    reason('spec', `${where} Telemetry ${what} (ztunnel emits its own L4 metrics, reporter="source"): nothing is lost`),
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
