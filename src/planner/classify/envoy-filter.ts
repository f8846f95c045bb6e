// EnvoyFilter (DOMAIN §3.9, §8): raw Envoy patches have no ztunnel equivalent, sidecar-selected and
// selector-less/root EnvoyFilters are not applied to waypoints, and the migrate guide calls EnvoyFilter on
// waypoints unsupported (code attaches targetRefs ones; Alpha). Never auto-translated: a person decides.
import {finding} from '../findings/finding.js'
import type {ClassifyContext} from '../context.js'
import type {KubeObject} from '../model.js'
import type {EnvoyFilterSpec} from '../istio-types.js'
import {formatRef} from '../refs.js'
import {type Classified, type KindClassifier, classifiedId, item, reason, uniqSorted, workloadNames} from './results.js'
import {allServices, hasLabels, noPodSelected, selectorCoverage} from './selection.js'
import {analyzeTargetRefs, targetRefsOf} from './waypoints.js'
import {isRecord} from '../json.js'
import {itemRef, namespaceOf} from './objects.js'
import {NETWORKING} from '../vocab.js'

function contexts(spec: EnvoyFilterSpec): string[] {
  const patches = Array.isArray(spec.configPatches) ? spec.configPatches : []
  return patches.map((p) => String(p?.match?.context ?? 'ANY'))
}

export function classifyEnvoyFilter(obj: KubeObject, ctx: ClassifyContext): Classified {
  const ref = itemRef(obj, ctx)
  const spec: EnvoyFilterSpec = isRecord(obj.spec) ? obj.spec : {}
  const local = ref.namespace === ctx.namespace
  const root = ref.namespace === ctx.rootNamespace
  const reasons: string[] = []
  const ctxs = contexts(spec)
  const patchText = `${ctxs.length} configPatch(es), context ${uniqSorted(ctxs).join('/') || 'none'}`

  if (targetRefsOf(spec).length > 0) {
    const t = analyzeTargetRefs(obj, ctx)
    reasons.push(...t.reasons)
    if (!t.waypoint)
      return {item: item(ref, 'unaffected', 'keep', reasons, {scope: 'targetRefs', services: t.services}), findings: []}
    reasons.push(
      reason(
        'spec.configPatches',
        `${patchText}: attached to a waypoint; istiod applies targetRefs EnvoyFilters to waypoints (Alpha) but the migrate guide calls them unsupported — verify by hand`,
      ),
    )
    return {item: item(ref, 'L7', 'manual', reasons, {scope: 'targetRefs', services: t.services}), findings: []}
  }

  const selector = hasLabels(spec.workloadSelector?.labels) ? spec.workloadSelector!.labels : undefined
  const scope = selector ? 'workload' : root ? 'mesh' : 'namespace'
  if (ctxs.length > 0 && ctxs.every((c) => c === 'GATEWAY')) {
    reasons.push(
      reason(
        'spec.configPatches',
        `${patchText}: every patch matches context GATEWAY, so it only changes gateways, which keep their Envoy`,
      ),
    )
    return {item: item(ref, 'unaffected', 'keep', reasons, {scope}), findings: []}
  }
  const cov = selectorCoverage(ctx, selector)
  const services = selector ? cov.services : allServices(ctx)
  const noPod = noPodSelected(ctx, cov, 'spec.workloadSelector', ref, reasons, {scope, services})
  if (noPod) return noPod
  if (cov.proxiesOnly) {
    reasons.push(
      reason(
        'spec.workloadSelector',
        `matches only gateway/waypoint pods (${workloadNames(cov.workloads)}), which keep their Envoy: unaffected`,
      ),
    )
    return {item: item(ref, 'unaffected', 'keep', reasons, {scope, services}), findings: []}
  }
  const who = selector
    ? workloadNames(cov.workloads)
    : root
      ? 'every sidecar of the mesh'
      : `every sidecar of ${ref.namespace}`
  reasons.push(
    reason(
      selector ? 'spec.workloadSelector' : 'spec',
      `patches the Envoy of ${who}: ambient pods have no Envoy, ztunnel cannot be patched, and waypoints do not take selector/namespace EnvoyFilters`,
    ),
  )
  reasons.push(
    reason(
      'spec.configPatches',
      `${patchText}: stops applying once the pods are ambient; never translated automatically`,
    ),
  )

  const name = formatRef(ref)
  const findings = [
    finding(
      'EnvoyFilterNotCarried',
      ref,
      {
        name,
        detail: selector
          ? workloadNames(cov.workloads)
          : `namespace ${local ? ctx.namespace : `${ref.namespace} (mesh-wide)`}`,
        namespace: ctx.namespace,
      },
      {id: classifiedId('envoyfilter', ref), severity: 'blocker'},
    ),
  ]
  return {item: item(ref, 'blocker', local ? 'blocker' : 'manual', reasons, {scope, services}), findings}
}

/** Root-namespace EnvoyFilters apply to matching workloads of every namespace (selector-less: all of them). */
function relevantElsewhere(obj: KubeObject, ctx: ClassifyContext): boolean {
  if (namespaceOf(obj, ctx) !== ctx.rootNamespace) return false
  const spec: EnvoyFilterSpec = isRecord(obj.spec) ? obj.spec : {}
  if (targetRefsOf(spec).length > 0) return false
  const sel = spec.workloadSelector?.labels
  return !hasLabels(sel) || selectorCoverage(ctx, sel).workloads.length > 0
}

export const envoyFilterClassifier: KindClassifier = {
  kinds: [`${NETWORKING}/EnvoyFilter`],
  relevantElsewhere,
  classify: classifyEnvoyFilter,
}
