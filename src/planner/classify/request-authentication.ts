// RequestAuthentication (DOMAIN §3.3, §8): ztunnel never reads it; waypoints apply it only through targetRefs
// (not selector, not selector-less, not root-namespace). Without a targetRefs copy, JWT validation silently
// stops for ambient pods — and ALLOW policies on requestPrincipals / request.auth.* become deny-all at ztunnel,
// DENY notRequestPrincipals becomes a no-op.
import type {ClassifyContext} from '../context.js'
import type {KubeObject} from '../model.js'
import type {RequestAuthenticationSpec} from '../istio-types.js'
import {type Classified, type KindClassifier, item, reason, workloadNames} from './results.js'
import {allServices, hasLabels, noPodSelected, selectorCoverage} from './selection.js'
import {classifyByTargetRefs, targetRefsOf} from './waypoints.js'
import {isRecord} from '../json.js'
import {itemRef, namespaceOf} from './objects.js'
import {SECURITY} from '../vocab.js'

export function classifyRequestAuthentication(obj: KubeObject, ctx: ClassifyContext): Classified {
  const ref = itemRef(obj, ctx)
  const spec: RequestAuthenticationSpec = isRecord(obj.spec) ? obj.spec : {}
  const local = ref.namespace === ctx.namespace
  const root = ref.namespace === ctx.rootNamespace
  const reasons: string[] = []
  const jwt = Array.isArray(spec.jwtRules) ? spec.jwtRules.length : 0

  if (targetRefsOf(spec).length > 0) return classifyByTargetRefs(obj, ctx, ref, reasons)

  const selector = hasLabels(spec.selector?.matchLabels) ? spec.selector!.matchLabels : undefined
  const cov = selectorCoverage(ctx, selector)
  const scope = selector ? 'workload' : root ? 'mesh' : 'namespace'
  const services = selector ? cov.services : allServices(ctx)
  const noPod = selector ? noPodSelected(ctx, cov, 'spec.selector', ref, reasons, {scope, services}) : undefined
  if (noPod) return noPod
  if (cov.proxiesOnly) {
    reasons.push(
      reason(
        'spec.selector',
        `matches only gateway/waypoint pods (${workloadNames(cov.workloads)}), which keep their own proxy: unaffected`,
      ),
    )
    return {item: item(ref, 'unaffected', 'keep', reasons, {scope, services}), findings: []}
  }

  reasons.push(
    reason(
      selector ? 'spec.selector' : 'spec',
      selector
        ? `selects ${workloadNames(cov.workloads)}: ztunnel ignores RequestAuthentication and waypoints ignore selector policies`
        : `no selector (${root ? 'mesh-wide, root namespace' : 'namespace-wide'}): ztunnel ignores RequestAuthentication and waypoints ignore selector-less ones`,
    ),
  )
  reasons.push(
    reason(
      'spec.jwtRules',
      `${jwt} JWT rule(s): validation silently stops for ambient pods — invalid tokens are no longer rejected, ALLOW policies on requestPrincipals/request.auth.* become deny-all at ztunnel and DENY notRequestPrincipals becomes a no-op`,
    ),
  )
  if (local) {
    reasons.push(reason('spec', 'carry it to the waypoint with targetRefs (Beta) before the pods restart'))
    return {item: item(ref, 'L7', 'retarget', reasons, {scope, services}), findings: []}
  }
  reasons.push(
    reason(
      'metadata.namespace',
      `lives in ${ref.namespace}: the plan cannot move it; create a targetRefs copy in ${ctx.namespace} (Service/Gateway) or a GatewayClass istio-waypoint copy in ${ctx.rootNamespace}`,
    ),
  )
  return {item: item(ref, 'L7', 'manual', reasons, {scope, services}), findings: []}
}

function relevantElsewhere(obj: KubeObject, ctx: ClassifyContext): boolean {
  if (namespaceOf(obj, ctx) !== ctx.rootNamespace) return false
  const spec: RequestAuthenticationSpec = isRecord(obj.spec) ? obj.spec : {}
  const refs = targetRefsOf(spec)
  if (refs.length > 0) return refs.some(({ref}) => ref.kind === 'GatewayClass' && ref.name === 'istio-waypoint')
  const sel = spec.selector?.matchLabels
  return !hasLabels(sel) || selectorCoverage(ctx, sel).workloads.length > 0
}

export const requestAuthenticationClassifier: KindClassifier = {
  kinds: [`${SECURITY}/RequestAuthentication`],
  relevantElsewhere,
  classify: classifyRequestAuthentication,
}
