// The mesh's trust domain, which every principal the plan writes is in (issue 21 point 8). Pure.
//
// istiod reads meshConfig from the ConfigMap `istio` (default revision) or `istio-<revision>` in the root namespace,
// key `mesh` (YAML). Workload certificates, the waypoint's included, are issued as spiffe://<trustDomain>/ns/<ns>/sa/<sa>
// (istio/istio pilot/pkg/serviceregistry/ambient/workloads.go pickTrustDomain), and ztunnel compares the principals
// of an AuthorizationPolicy with them literally (pilot/pkg/serviceregistry/ambient/authorization.go copies
// `principals` as written, no alias rewriting), while sidecars and waypoints also accept cluster.local and
// meshConfig.trustDomainAliases for the trust domain (pilot/pkg/security/trustdomain/bundle.go).
import {parse} from 'yaml'

import type {KubeObject} from './model.js'
import {isRecord} from './json.js'
import {REVISION_LABEL, TAG_LABEL} from './vocab.js'

export const DEFAULT_TRUST_DOMAIN = 'cluster.local'

/** The trust domain the plan's principals use, and where it was read (recorded in spec.observed.trustDomain). */
export interface TrustDomain {
  name: string
  /** meshConfig.trustDomainAliases: sidecars and waypoints treat principals in these as the trust domain's. */
  aliases?: string[]
  /** `--trust-domain`, `ConfigMap <ns>/<name>`, or `default` (no mesh config seen). */
  source: string
}

// A DNS name (RFC 1123 subdomain, as SPIFFE trust domains are), without ports or paths.
const TRUST_DOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/

/** Why a trust domain cannot be used in a principal, or undefined when it can. */
export function trustDomainProblem(name: string): string | undefined {
  if (name.length === 0 || name.length > 255 || !TRUST_DOMAIN.test(name))
    return 'must be a lowercase DNS name (a-z, 0-9, "-", "."), at most 255 characters, as SPIFFE trust domains are'
  return undefined
}

/** The mesh ConfigMap names istiod of this revision (or tag) reads, most specific first. */
function meshConfigMapNames(objects: KubeObject[], revision: string | undefined): string[] {
  // A revision tag (istio.io/tag on the injector webhook) stands for the revision in the webhook's istio.io/rev.
  const tagged = objects
    .filter(
      (o) => o.kind === 'MutatingWebhookConfiguration' && o.metadata.labels?.[TAG_LABEL] === (revision ?? 'default'),
    )
    .map((o) => o.metadata.labels?.[REVISION_LABEL])
    .filter((r): r is string => typeof r === 'string' && r !== '' && r !== 'default')
  const names = revision && revision !== 'default' ? [`istio-${revision}`] : ['istio']
  for (const r of tagged) names.push(`istio-${r}`)
  return [...new Set(names)]
}

/**
 * The trust domain of the mesh as seen from `namespace` (its istio.io/rev picks the control plane): `override`
 * (--trust-domain) first, else meshConfig.trustDomain of the revision's mesh ConfigMap in the root namespace, else
 * cluster.local. A ConfigMap whose `mesh` is not YAML is reported in `problem`.
 */
export function meshTrustDomain(opts: {
  objects: KubeObject[]
  rootNamespace: string
  revision?: string
  override?: string
}): TrustDomain & {problem?: string} {
  if (opts.override !== undefined) return {name: opts.override, source: '--trust-domain'}
  for (const name of meshConfigMapNames(opts.objects, opts.revision)) {
    const cm = opts.objects.find(
      (o) =>
        o.kind === 'ConfigMap' &&
        o.apiVersion === 'v1' &&
        o.metadata.namespace === opts.rootNamespace &&
        o.metadata.name === name,
    )
    if (!cm) continue
    const source = `ConfigMap ${opts.rootNamespace}/${name}`
    const text = isRecord(cm.data) && typeof cm.data.mesh === 'string' ? cm.data.mesh : ''
    let mesh: unknown
    try {
      mesh = parse(text)
    } catch (error) {
      return {
        name: DEFAULT_TRUST_DOMAIN,
        source: 'default',
        problem: `${source} key mesh is not YAML (${String(error).split('\n')[0]})`,
      }
    }
    const config = isRecord(mesh) ? mesh : {}
    const trustDomain =
      typeof config.trustDomain === 'string' && config.trustDomain !== '' ? config.trustDomain : DEFAULT_TRUST_DOMAIN
    const problem = trustDomainProblem(trustDomain)
    if (problem)
      return {
        name: DEFAULT_TRUST_DOMAIN,
        source: 'default',
        problem: `${source}: trustDomain "${trustDomain}" ${problem}`,
      }
    const aliases = (Array.isArray(config.trustDomainAliases) ? config.trustDomainAliases : [])
      .map(String)
      .filter((a) => a !== trustDomain && trustDomainProblem(a) === undefined)
    return {name: trustDomain, ...(aliases.length > 0 ? {aliases: [...new Set(aliases)].sort()} : {}), source}
  }
  return {name: DEFAULT_TRUST_DOMAIN, source: 'default'}
}
