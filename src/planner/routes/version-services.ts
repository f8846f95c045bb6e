// Per-version Services standing in for DestinationRule subsets: an HTTPRoute cannot name a subset,
// so `reviews` subset `v1` becomes Service `reviews-v1` selecting the pods of `reviews` that carry
// the subset's labels (DOMAIN §3.5, the migrate-policies docs example).
import {cloneJson, isRecord} from '../json.js'
import type {KubeObject} from '../model.js'
import {MANAGED_BY_LABEL, MANAGED_BY_VALUE} from '../plan-types.js'
import type {ServiceInfo} from './hosts.js'
import {DNS_LABEL, joinName} from './values.js'
import {byCodePoint} from '../order.js'

export const CONVERTED_FROM_ANNOTATION = 'mesh-migrate.io/converted-from'
// Service spec fields that change which endpoints a client gets or how they are picked by ztunnel
// and waypoints; copied so that a version Service behaves as its subset did.
const COPIED_SPEC_FIELDS = ['publishNotReadyAddresses', 'trafficDistribution', 'ipFamilyPolicy', 'ipFamilies'] as const
const COPIED_ANNOTATIONS = ['networking.istio.io/traffic-distribution']

export interface VersionServiceUse {
  name: string
  base: ServiceInfo
  subset: string
  selector: Record<string, string>
  /** An equivalent Service already exists (e.g. bookinfo-versions.yaml): use it, create nothing. */
  existing: boolean
  /** The DestinationRule whose traffic policy applied to the subset's traffic (and not to the version Service's). */
  trafficPolicyFrom?: KubeObject
}

interface Planned extends VersionServiceUse {
  convertedFrom: Set<string>
}

/** The Service name for a subset: `<service>-<subset>`, a DNS-1035 label of at most 63 characters. */
export function versionServiceName(service: string, subset: string): string | undefined {
  const name = joinName(63, service, subset.toLowerCase())
  return DNS_LABEL.test(name) ? name : undefined
}

/** The effective targetPort (defaulting to the port) of `port` on a Service object, or undefined when it has no such port. */
function targetPortOf(svc: KubeObject, port: number): unknown {
  const ports: unknown[] = Array.isArray(svc.spec?.ports) ? svc.spec.ports : []
  const p = ports.find((x): x is Record<string, unknown> => isRecord(x) && x.port === port)
  return p === undefined ? undefined : (p.targetPort ?? port)
}

function sameSelector(a: Record<string, string>, b: unknown): boolean {
  if (!isRecord(b)) return false
  const keys = Object.keys(a)
  return keys.length === Object.keys(b).length && keys.every((k) => b[k] === a[k])
}

/**
 * The version Services the converted VirtualServices need. `use` is tentative (a VirtualService may
 * still be kept for another reason); `commit` records it for a converted one.
 */
export class VersionServices {
  private readonly planned = new Map<string, Planned>()

  constructor(
    private readonly namespace: string,
    private readonly existing: Map<string, KubeObject>,
  ) {}

  /**
   * The Service to use for `subset` of `base` (labels from the DestinationRule), for traffic to the
   * given ports; or why there can be none.
   */
  use(
    base: ServiceInfo,
    subset: string,
    labels: Record<string, string>,
    ports: number[],
  ): VersionServiceUse | {problem: string} {
    if (Object.keys(base.selector).length === 0) {
      return {
        problem: `Service ${base.name} has no selector (endpoints managed by hand): a version Service cannot select the subset's pods`,
      }
    }
    for (const [k, v] of Object.entries(labels)) {
      if (base.selector[k] !== undefined && base.selector[k] !== v) {
        return {
          problem: `subset ${subset} label ${k}=${v} contradicts Service ${base.name}'s selector ${k}=${base.selector[k]}: the subset selects no pod`,
        }
      }
    }
    const name = versionServiceName(base.name, subset)
    if (!name) return {problem: `subset name ${subset} gives no valid Service name`}
    const selector = {...base.selector, ...labels}
    const prior = this.planned.get(name)
    if (prior && (prior.base.name !== base.name || prior.subset !== subset)) {
      return {problem: `version Service name ${name} is also needed for ${prior.base.name} subset ${prior.subset}`}
    }
    const found = this.existing.get(name)
    if (found) {
      const equivalent =
        sameSelector(selector, found.spec?.selector) &&
        ports.every(
          (p) => targetPortOf(found, p) !== undefined && targetPortOf(found, p) === targetPortOf(base.object, p),
        )
      if (!equivalent) {
        return {
          problem: `Service ${name} already exists and does not select exactly ${Object.entries(selector)
            .map(([k, v]) => `${k}=${v}`)
            .join(',')} with the ports of ${base.name}`,
        }
      }
      return {name, base, subset, selector, existing: true}
    }
    return {name, base, subset, selector, existing: false}
  }

  commit(uses: VersionServiceUse[], virtualService: string): void {
    for (const use of uses) {
      const prior = this.planned.get(use.name)
      if (prior) prior.convertedFrom.add(virtualService)
      else this.planned.set(use.name, {...use, convertedFrom: new Set([virtualService])})
    }
  }

  /** Service objects to create, sorted by name (existing equivalent Services are not re-created). */
  objects(): KubeObject[] {
    return [...this.planned.values()]
      .filter((p) => !p.existing)
      .sort((a, b) => byCodePoint(a.name, b.name))
      .map((p) => this.build(p))
  }

  private build(p: Planned): KubeObject {
    const baseSpec = isRecord(p.base.object.spec) ? p.base.object.spec : {}
    const annotations: Record<string, string> = {[CONVERTED_FROM_ANNOTATION]: [...p.convertedFrom].sort().join(',')}
    for (const key of COPIED_ANNOTATIONS) {
      const v = p.base.object.metadata.annotations?.[key]
      if (v !== undefined) annotations[key] = v
    }
    const spec: Record<string, unknown> = {
      selector: p.selector,
      ports: p.base.ports.map((port) => {
        const out: Record<string, unknown> = {}
        if (port.name !== undefined) out.name = port.name
        out.port = port.port
        if (port.targetPort !== undefined) out.targetPort = port.targetPort
        if (port.protocol !== undefined) out.protocol = port.protocol
        if (port.appProtocol !== undefined) out.appProtocol = port.appProtocol
        return out
      }),
    }
    for (const field of COPIED_SPEC_FIELDS) if (baseSpec[field] !== undefined) spec[field] = cloneJson(baseSpec[field])
    return {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: {
        name: p.name,
        namespace: this.namespace,
        labels: {[MANAGED_BY_LABEL]: MANAGED_BY_VALUE},
        annotations,
      },
      spec,
    }
  }
}
