// WasmPlugin (DOMAIN §3.10, §8): selector plugins stop applying to ambient pods; waypoints take WasmPlugins
// only through targetRefs (Alpha). Root-namespace plugins apply to matching workloads of every namespace.
import type {ClassifyContext} from '../context.js'
import type {KubeObject} from '../model.js'
import type {WasmPluginSpec} from '../istio-types.js'
import {type Classified, type KindClassifier, item, reason, workloadNames} from './results.js'
import {allServices, hasLabels, noPodSelected, selectorCoverage} from './selection.js'
import {classifyByTargetRefs, targetRefsOf} from './waypoints.js'
import {isRecord} from '../json.js'
import {itemRef, namespaceOf} from './objects.js'
import {EXTENSIONS} from '../vocab.js'

export function classifyWasmPlugin(obj: KubeObject, ctx: ClassifyContext): Classified {
  const ref = itemRef(obj, ctx)
  const spec: WasmPluginSpec = isRecord(obj.spec) ? obj.spec : {}
  const local = ref.namespace === ctx.namespace
  const root = ref.namespace === ctx.rootNamespace
  const reasons: string[] = []
  const what = `Wasm plugin ${spec.url ?? '(no url)'}${spec.phase ? ` (phase ${spec.phase})` : ''}`

  if (targetRefsOf(spec).length > 0)
    return classifyByTargetRefs(obj, ctx, ref, reasons, reason('spec', `${what} on a waypoint: Alpha in ambient`))

  const selector = hasLabels(spec.selector?.matchLabels) ? spec.selector!.matchLabels : undefined
  const cov = selectorCoverage(ctx, selector)
  const scope = selector ? 'workload' : root ? 'mesh' : 'namespace'
  const services = selector ? cov.services : allServices(ctx)
  const noPod = noPodSelected(ctx, cov, 'spec.selector', ref, reasons, {scope, services})
  if (noPod) return noPod
  if (cov.proxiesOnly) {
    reasons.push(
      reason(
        'spec.selector',
        `matches only gateway/waypoint pods (${workloadNames(cov.workloads)}): unaffected (IST0166 if it selects a waypoint: use targetRefs)`,
      ),
    )
    return {item: item(ref, 'unaffected', 'keep', reasons, {scope, services}), findings: []}
  }
  reasons.push(
    reason(
      selector ? 'spec.selector' : 'spec',
      `${what} runs in the sidecars of ${selector ? workloadNames(cov.workloads) : root ? 'every workload of the mesh' : `every workload of ${ref.namespace}`}; ztunnel cannot run it and waypoints ignore selector plugins — it stops applying`,
    ),
  )
  if (local) {
    reasons.push(reason('spec', 'carry it to the waypoint with targetRefs (WasmPlugin on waypoints is Alpha)'))
    return {item: item(ref, 'L7', 'retarget', reasons, {scope, services}), findings: []}
  }
  reasons.push(
    reason(
      'metadata.namespace',
      `lives in ${ref.namespace}: the plan cannot move it; create a targetRefs copy for ${ctx.namespace}'s waypoint`,
    ),
  )
  return {item: item(ref, 'L7', 'manual', reasons, {scope, services}), findings: []}
}

function relevantElsewhere(obj: KubeObject, ctx: ClassifyContext): boolean {
  if (namespaceOf(obj, ctx) !== ctx.rootNamespace) return false
  const spec: WasmPluginSpec = isRecord(obj.spec) ? obj.spec : {}
  if (targetRefsOf(spec).length > 0) return false
  const sel = spec.selector?.matchLabels
  return !hasLabels(sel) || selectorCoverage(ctx, sel).workloads.length > 0
}

export const wasmPluginClassifier: KindClassifier = {
  kinds: [`${EXTENSIONS}/WasmPlugin`],
  relevantElsewhere,
  classify: classifyWasmPlugin,
}
