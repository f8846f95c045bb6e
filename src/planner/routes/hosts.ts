// Hosts, Services and DestinationRule subsets for the VirtualService → HTTPRoute conversion
// (DOMAIN §3.4, §3.5, §3.6).
import {CLUSTER_DOMAIN, hostCovers} from '../classify/hosts.js'
import {compareAge} from '../classify/objects.js'
import type {DestinationRuleSpec, Subset} from '../istio-types.js'
import type {KubeObject} from '../model.js'
import {istioProtocol} from '../services.js'
import {stringMap, isRecord} from '../json.js'

export interface ServicePortInfo {
  port: number
  name?: string
  protocol?: string
  appProtocol?: string
  targetPort?: number | string
  /** Istio treats the port as HTTP (or sniffs it), so VirtualService `http` routes apply on it. */
  http: boolean
}

export interface ServiceInfo {
  name: string
  object: KubeObject
  type: string
  headless: boolean
  selector: Record<string, string>
  ports: ServicePortInfo[]
}

// Istio protocols whose traffic goes through HTTP route tables (DOMAIN §5); `auto` is sniffed and
// may be HTTP. TCP, TLS, HTTPS (TLS passthrough), databases and UDP never see `http` routes.
const HTTP_ROUTED = new Set(['HTTP', 'HTTP2', 'HTTP_PROXY', 'GRPC', 'GRPC-Web', 'auto'])

export function serviceInfo(obj: KubeObject): ServiceInfo {
  const spec = isRecord(obj.spec) ? obj.spec : {}
  const ports: ServicePortInfo[] = []
  for (const raw of Array.isArray(spec.ports) ? spec.ports : []) {
    if (!isRecord(raw) || !Number.isInteger(raw.port)) continue
    const p: ServicePortInfo = {port: raw.port as number, http: false}
    if (typeof raw.name === 'string' && raw.name !== '') p.name = raw.name
    if (typeof raw.protocol === 'string') p.protocol = raw.protocol
    if (typeof raw.appProtocol === 'string') p.appProtocol = raw.appProtocol
    if (typeof raw.targetPort === 'number' || typeof raw.targetPort === 'string') p.targetPort = raw.targetPort
    p.http = HTTP_ROUTED.has(istioProtocol(p))
    ports.push(p)
  }
  return {
    name: obj.metadata.name,
    object: obj,
    type: typeof spec.type === 'string' ? spec.type : 'ClusterIP',
    headless: spec.clusterIP === 'None',
    selector: stringMap(spec.selector),
    ports: ports.sort((a, b) => a.port - b.port),
  }
}

export interface ResolvedHost {
  /** Lower-cased host as written. */
  host: string
  /** The Service of the namespace it names, when it names one by one of the accepted forms. */
  service?: string
  /**
   * Written as `<svc>.<ns>` or `<svc>.<ns>.svc`: Istio expands only dot-less short names
   * (ResolveShortnameToFQDN), so such a VirtualService host matched callers using exactly that name,
   * while a Service parentRef covers every caller of the Service.
   */
  partial?: boolean
  wildcard?: boolean
}

/**
 * Which Service of `namespace` a VirtualService host (or destination host) of that namespace names:
 * `reviews`, `reviews.<ns>`, `reviews.<ns>.svc` and `reviews.<ns>.svc.cluster.local` all name
 * Service `reviews`. Other namespaces, other cluster domains, ServiceEntry hosts and wildcards
 * name none.
 */
export function resolveHost(host: string, namespace: string): ResolvedHost {
  const h = host.trim().toLowerCase()
  if (h.includes('*')) return {host: h, wildcard: true}
  const parts = h.split('.')
  if (parts.length === 1) return {host: h, service: parts[0]!}
  if (parts[1] !== namespace) return {host: h}
  if (parts.length === 2) return {host: h, service: parts[0]!, partial: true}
  if (parts[2] !== 'svc') return {host: h}
  if (parts.length === 3) return {host: h, service: parts[0]!, partial: true}
  if (parts.slice(3).join('.') === CLUSTER_DOMAIN) return {host: h, service: parts[0]!}
  return {host: h}
}

export function serviceFqdn(service: string, namespace: string): string {
  return `${service}.${namespace}.svc.${CLUSTER_DOMAIN}`
}

export interface SubsetDefinition {
  labels: Record<string, string>
  destinationRule: KubeObject
  /** Traffic policy the DestinationRule applies to this subset's traffic (its own, or the rule's). */
  trafficPolicy: boolean
}

/** Fully qualified `host` of a DestinationRule (resolved against the rule's namespace). */
function destinationRuleHost(dr: KubeObject, defaultNamespace: string): string | undefined {
  const host = typeof dr.spec?.host === 'string' ? dr.spec.host.trim().toLowerCase() : ''
  if (host === '') return undefined
  if (host === '*' || host.includes('.')) return host
  return serviceFqdn(host, dr.metadata.namespace ?? defaultNamespace)
}

/**
 * The DestinationRules whose `host` covers the Service, most relevant first: workloadSelector rules
 * never apply to a waypoint or a client by host (DOMAIN §3.5) and are skipped; the Service's own
 * namespace before others, an exact host before a wildcard, then oldest first (how istiod picks
 * between competing rules).
 */
export function destinationRulesFor(service: string, namespace: string, drs: KubeObject[]): KubeObject[] {
  const fqdn = serviceFqdn(service, namespace)
  const candidates = drs.filter((dr) => {
    if (isRecord(dr.spec?.workloadSelector)) return false
    const host = destinationRuleHost(dr, namespace)
    return host !== undefined && hostCovers(host, fqdn)
  })
  const rank = (dr: KubeObject): number =>
    ((dr.metadata.namespace ?? namespace) === namespace ? 0 : 2) +
    (destinationRuleHost(dr, namespace)!.includes('*') ? 1 : 0)
  return candidates.sort((a, b) => rank(a) - rank(b) || compareAge(a, b))
}

/** The labels of `subset` for Service `service`, from the first DestinationRule that defines it. */
export function findSubset(
  service: string,
  subset: string,
  namespace: string,
  drs: KubeObject[],
): SubsetDefinition | undefined {
  for (const dr of destinationRulesFor(service, namespace, drs)) {
    const spec = (isRecord(dr.spec) ? dr.spec : {}) as DestinationRuleSpec
    const def = (Array.isArray(spec.subsets) ? spec.subsets : []).find((s: Subset) => s?.name === subset)
    if (!def) continue
    return {
      labels: stringMap(def.labels),
      destinationRule: dr,
      trafficPolicy: isRecord(def.trafficPolicy) || isRecord(spec.trafficPolicy),
    }
  }
  return undefined
}
