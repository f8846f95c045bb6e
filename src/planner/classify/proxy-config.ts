// ProxyConfig (DOMAIN §2.6, §3.12, §8): app pods have no proxy in ambient, so ProxyConfigs selecting them are
// inert. Waypoint Deployments are rendered with the ProxyConfig matching
// gateway.networking.k8s.io/gateway-name=<waypoint> in the waypoint's namespace, plus namespace/root defaults.
import type {ClassifyContext} from '../context.js'
import type {KubeObject} from '../model.js'
import type {ProxyConfigSpec} from '../istio-types.js'
import {type Classified, type KindClassifier, item, reason, workloadNames} from './results.js'
import {findObject, itemRef, namespaceOf} from './objects.js'
import {hasLabels, isProxyWorkload, noPodSelected, selectorCoverage} from './selection.js'
import {isRecord} from '../json.js'
import {isWaypointClassGateway} from './waypoints.js'
import {GATEWAY_API_GROUP, GATEWAY_NAME_LABEL} from '../vocab.js'

export function classifyProxyConfig(obj: KubeObject, ctx: ClassifyContext): Classified {
  const ref = itemRef(obj, ctx)
  const spec: ProxyConfigSpec = isRecord(obj.spec) ? obj.spec : {}
  const local = ref.namespace === ctx.namespace
  const root = ref.namespace === ctx.rootNamespace
  const reasons: string[] = []
  const selector = hasLabels(spec.selector?.matchLabels) ? spec.selector!.matchLabels : undefined

  if (selector) {
    const gatewayName = selector[GATEWAY_NAME_LABEL]
    if (gatewayName !== undefined) {
      const gw = findObject(ctx, GATEWAY_API_GROUP, 'Gateway', ref.namespace!, gatewayName)
      if (!gw || isWaypointClassGateway(gw)) {
        reasons.push(
          reason(
            `spec.selector.matchLabels[${GATEWAY_NAME_LABEL}]`,
            `configures the proxy of waypoint ${gatewayName}${gw ? '' : ' (not in the snapshot)'}: applied when istiod renders the waypoint Deployment`,
          ),
        )
        return {item: item(ref, 'L7', 'keep', reasons, {scope: 'workload'}), findings: []}
      }
      reasons.push(
        reason(
          `spec.selector.matchLabels[${GATEWAY_NAME_LABEL}]`,
          `configures gateway ${gatewayName} (class ${gw.spec?.gatewayClassName}): unaffected`,
        ),
      )
      return {item: item(ref, 'unaffected', 'keep', reasons, {scope: 'workload'}), findings: []}
    }
    const cov = selectorCoverage(ctx, selector)
    const noPod = noPodSelected(ctx, cov, 'spec.selector', ref, reasons, {scope: 'workload', services: cov.services})
    if (noPod) return noPod
    if (cov.proxiesOnly) {
      reasons.push(
        reason(
          'spec.selector',
          `matches only gateway pods (${workloadNames(cov.workloads)}), which keep their proxy: unaffected`,
        ),
      )
      return {item: item(ref, 'unaffected', 'keep', reasons, {scope: 'workload', services: cov.services}), findings: []}
    }
    reasons.push(
      reason(
        'spec.selector',
        `selects app pods (${workloadNames(cov.workloads)}), which have no proxy in ambient: concurrency, image and environment settings are inert`,
      ),
    )
    return {
      item: item(ref, 'inert', local ? 'no-effect' : 'keep', reasons, {scope: 'workload', services: cov.services}),
      findings: [],
    }
  }

  const scope = root ? 'mesh' : 'namespace'
  const where = root ? 'mesh-wide default (root namespace)' : `namespace default of ${ref.namespace}`
  if (ctx.waypointPlanned) {
    reasons.push(
      reason(
        'spec',
        `${where}: inert for app pods, applied to the waypoint Deployment the plan creates in ${ctx.namespace}`,
      ),
    )
    return {item: item(ref, 'L7', 'keep', reasons, {scope}), findings: []}
  }
  const proxies = ctx.workloads.filter(isProxyWorkload)
  if (local && proxies.length > 0) {
    reasons.push(
      reason('spec', `${where}: inert for app pods; still applies to the gateway pods ${workloadNames(proxies)}`),
    )
    return {item: item(ref, 'unaffected', 'keep', reasons, {scope}), findings: []}
  }
  reasons.push(
    reason('spec', `${where}: inert for ambient app pods (no proxy), and no waypoint is planned for ${ctx.namespace}`),
  )
  return {item: item(ref, 'inert', local ? 'no-effect' : 'keep', reasons, {scope}), findings: []}
}

function relevantElsewhere(obj: KubeObject, ctx: ClassifyContext): boolean {
  if (namespaceOf(obj, ctx) !== ctx.rootNamespace) return false
  const spec: ProxyConfigSpec = isRecord(obj.spec) ? obj.spec : {}
  return !hasLabels(spec.selector?.matchLabels)
}

export const proxyConfigClassifier: KindClassifier = {
  kinds: ['networking.istio.io/ProxyConfig'],
  relevantElsewhere,
  classify: classifyProxyConfig,
}
