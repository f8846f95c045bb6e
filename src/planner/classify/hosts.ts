// Hosts as Istio resolves them (short names, wildcards, Service FQDNs) and exportTo visibility.
import type {ClassifyContext} from '../context.js'
import {list} from './results.js'
import {allServices, hasOwnService} from './selection.js'

/** Kubernetes cluster domain assumed when matching wildcard hosts against Service FQDNs. */
export const CLUSTER_DOMAIN = 'cluster.local'

// --- exportTo ------------------------------------------------------------------------------------

/**
 * Whether a VirtualService / DestinationRule / ServiceEntry in `objectNamespace` is visible to `namespace`.
 * Absent exportTo = `*` (Istio's default); `.` = own namespace; `~` = nobody.
 */
export function exportedTo(exportTo: unknown, objectNamespace: string, namespace: string): boolean {
  const entries = list(exportTo)
  if (!entries) return true
  return entries.some((e) => e === '*' || (e === '.' && objectNamespace === namespace) || e === namespace)
}

// --- hosts ---------------------------------------------------------------------------------------

export interface HostTarget {
  /** As written. */
  host: string
  /** Short names resolved against the object's namespace (Istio's ResolveShortnameToFQDN). */
  fqdn: string
  wildcard: boolean
  /** Namespace and name of the Kubernetes Service the host names, when it names one exactly. */
  serviceNamespace?: string
  serviceName?: string
  /** Services of the migrated namespace this host covers (exactly or by wildcard). */
  ownServices: string[]
}

export function resolveHost(host: string, objectNamespace: string): string {
  if (host === '*' || host.includes('.') || host.includes(':')) return host.toLowerCase()
  return `${host}.${objectNamespace}.svc.${CLUSTER_DOMAIN}`.toLowerCase()
}

export function serviceFqdn(name: string, namespace: string): string {
  return `${name}.${namespace}.svc.${CLUSTER_DOMAIN}`
}

/** Whether a (possibly wildcard) host pattern covers a concrete FQDN. */
export function hostCovers(pattern: string, fqdn: string): boolean {
  if (pattern === '*') return true
  if (pattern.startsWith('*.')) return fqdn.endsWith(pattern.slice(1))
  return pattern === fqdn
}

const SERVICE_FQDN = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?)\.([a-z0-9]([-a-z0-9]*[a-z0-9])?)\.svc(\..+)?$/

/** The Kubernetes Service a resolved host names exactly (`name.ns.svc[.domain]`), if it names one. */
export function serviceOfHost(fqdn: string): {name: string; namespace: string} | undefined {
  const m = fqdn.startsWith('*') ? null : SERVICE_FQDN.exec(fqdn)
  return m ? {name: m[1]!, namespace: m[3]!} : undefined
}

/** The namespace of the Kubernetes Service a resolved host names (`name.ns.svc[.domain]`), if it names one. */
export function hostServiceNamespace(fqdn: string): string | undefined {
  return fqdn.startsWith('*') ? undefined : SERVICE_FQDN.exec(fqdn)?.[3]
}

export function hostTarget(host: string, objectNamespace: string, ctx: ClassifyContext): HostTarget {
  const fqdn = resolveHost(host, objectNamespace)
  const wildcard = fqdn.startsWith('*')
  const out: HostTarget = {host, fqdn, wildcard, ownServices: []}
  const m = wildcard ? null : SERVICE_FQDN.exec(fqdn)
  if (m) {
    out.serviceName = m[1]!
    out.serviceNamespace = m[3]!
  }
  if (wildcard) {
    out.ownServices = allServices(ctx).filter((s) => hostCovers(fqdn, serviceFqdn(s, ctx.namespace)))
  } else if (out.serviceNamespace === ctx.namespace && hasOwnService(ctx, out.serviceName!)) {
    out.ownServices = [out.serviceName!]
  }
  return out
}
