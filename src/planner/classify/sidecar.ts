// Sidecar (networking.istio.io) (DOMAIN §3.8, §7 E24, §8): no effect in ambient — ztunnel ignores it and
// waypoints always use the default scope (IST0167). What is lost: egress host isolation, per-workload
// REGISTRY_ONLY, inbound port/bind settings. ztunnel implements no outboundTrafficPolicy at all.
import {finding} from '../findings/finding.js'
import type {ClassifyContext} from '../context.js'
import type {Finding, KubeObject} from '../model.js'
import type {SidecarSpec} from '../istio-types.js'
import {formatRef} from '../refs.js'
import {type Classified, type KindClassifier, classifiedId, item, list, reason, workloadNames} from './results.js'
import {allServices, hasLabels, noPodSelected, selectorCoverage} from './selection.js'
import {isRecord} from '../json.js'
import {itemRef, namespaceOf} from './objects.js'
import {NETWORKING} from '../vocab.js'

export function classifySidecar(obj: KubeObject, ctx: ClassifyContext): Classified {
  const ref = itemRef(obj, ctx)
  const spec: SidecarSpec = isRecord(obj.spec) ? obj.spec : {}
  const local = ref.namespace === ctx.namespace
  const root = ref.namespace === ctx.rootNamespace
  const reasons: string[] = []
  const selector = hasLabels(spec.workloadSelector?.labels) ? spec.workloadSelector!.labels : undefined
  const cov = selectorCoverage(ctx, selector)
  const scope = selector ? 'workload' : root ? 'mesh' : 'namespace'
  const services = selector ? cov.services : allServices(ctx)
  const action = local ? 'no-effect' : 'keep'

  const noPod = noPodSelected(ctx, cov, 'spec.workloadSelector', ref, reasons, {scope, services})
  if (noPod) return noPod
  reasons.push(
    reason(
      selector ? 'spec.workloadSelector' : 'spec',
      `${selector ? `applies to ${workloadNames(cov.workloads)}` : root ? 'mesh-wide default Sidecar (root namespace, no selector)' : `namespace-wide Sidecar of ${ref.namespace}`}: no effect on ambient pods (ztunnel ignores Sidecar; waypoints use the default scope; IST0167)`,
    ),
  )

  const lost: string[] = []
  ;(Array.isArray(spec.egress) ? spec.egress : []).forEach((eg, i) => {
    const hosts = list(eg?.hosts) ?? []
    if (hosts.length > 0 && !hosts.every((h) => h === '*/*' || h === '*')) {
      lost.push('egress host isolation')
      reasons.push(
        reason(
          `spec.egress[${i}].hosts`,
          `egress restricted to ${hosts.join(', ')}: lost — ambient pods can reach every service of the mesh`,
        ),
      )
    } else if (hosts.length > 0) {
      reasons.push(reason(`spec.egress[${i}].hosts`, 'egress to all hosts: nothing lost'))
    }
    if (eg?.port !== undefined || eg?.bind !== undefined || eg?.captureMode !== undefined) {
      reasons.push(
        reason(`spec.egress[${i}]`, 'egress listener port/bind/captureMode settings: no equivalent in ambient'),
      )
    }
  })
  const mode = spec.outboundTrafficPolicy?.mode
  if (mode === 'REGISTRY_ONLY') {
    lost.push('REGISTRY_ONLY outbound policy')
    reasons.push(
      reason(
        'spec.outboundTrafficPolicy.mode',
        'REGISTRY_ONLY: lost — ztunnel passes traffic to destinations outside the registry (it implements no outboundTrafficPolicy)',
      ),
    )
  } else if (mode !== undefined) {
    reasons.push(
      reason(
        'spec.outboundTrafficPolicy.mode',
        `${mode}: same as ambient behaviour (ztunnel passes unknown destinations through)`,
      ),
    )
  }
  if (spec.outboundTrafficPolicy?.egressProxy !== undefined) {
    lost.push('egressProxy')
    reasons.push(reason('spec.outboundTrafficPolicy.egressProxy', 'egress proxy for unknown destinations: lost'))
  }
  ;(Array.isArray(spec.ingress) ? spec.ingress : []).forEach((_, i) => {
    lost.push('inbound listener settings')
    reasons.push(
      reason(
        `spec.ingress[${i}]`,
        'inbound port/bind/TLS settings of the sidecar: lost (ztunnel captures all inbound TCP)',
      ),
    )
  })
  if (spec.inboundConnectionPool !== undefined)
    reasons.push(reason('spec.inboundConnectionPool', 'sidecar inbound connection pool: lost'))

  const findings: Finding[] = []
  const restrictive = lost.filter((l) => l !== 'inbound listener settings')
  if (restrictive.length > 0) {
    findings.push(
      finding(
        'SidecarEgressControlLost',
        ref,
        {
          ref: formatRef(ref),
          restrictive: [...new Set(restrictive)],
          detail: selector ? workloadNames(cov.workloads) : `every workload of ${local ? ctx.namespace : 'the mesh'}`,
        },
        {id: classifiedId('E24', ref), severity: 'warning'},
      ),
    )
  }
  return {item: item(ref, 'inert', action, reasons, {scope, services}), findings}
}

/** The root namespace's selector-less Sidecar is the mesh default for every namespace without its own. */
function relevantElsewhere(obj: KubeObject, ctx: ClassifyContext): boolean {
  if (namespaceOf(obj, ctx) !== ctx.rootNamespace) return false
  const spec: SidecarSpec = isRecord(obj.spec) ? obj.spec : {}
  return !hasLabels(spec.workloadSelector?.labels)
}

export const sidecarClassifier: KindClassifier = {
  kinds: [`${NETWORKING}/Sidecar`],
  relevantElsewhere,
  classify: classifySidecar,
}
