// `--routes httproute`: mesh VirtualServices of the migrated namespace converted to Gateway API
// HTTPRoutes with the Service as parent (GAMMA), which the namespace's waypoint serves once the
// namespace is ambient (DOMAIN §3.4, §3.5, §3.6, §7 E11/E12/E26).
//
// A VirtualService is either converted completely — every field has an exact (or a documented,
// reported) Gateway API v1.6.1 standard-channel equivalent — or kept with all its reasons: a
// VirtualService and an HTTPRoute must never serve the same host (E26), so a partly expressible one
// stays a VirtualService and none of its routes is emitted. The caller creates `httpRoutes` and
// `versionServices` and deletes `converted` in one step.
//
// Decisions (each has a test):
// - One HTTPRoute per (VirtualService, host Service): rules can differ per parent (backend ports,
//   per-port splits), and each Service's route stays separately reviewable. Name: the
//   VirtualService's, plus `-<service>` when it has several hosts, plus `-<port>` when split per port.
// - parentRef `{group: "", kind: Service, name, port}`; the port rules are in routesForParent
//   (build.ts). An HTTPRoute only, never GRPCRoute: VirtualService `http` routes match gRPC calls by
//   URI and headers, which HTTPRoute expresses for HTTP/2 traffic as well, with more filters.
// - Istio's default retry policy: a VirtualService without `retries` and an HTTPRoute (Istio turns
//   it into an internal VirtualService with no retries) both get meshConfig.defaultHttpRetryPolicy,
//   so nothing changes; any explicit `retries` cannot be written in the standard channel → kept.
// - Rule order: see precedence.ts; a VirtualService whose order Gateway API precedence would
//   change for some request is kept.
import {finding, renderFinding} from './findings/finding.js'
import {classifiedId, list, reason} from './classify/results.js'
import {isRecord} from './json.js'
import type {Finding, KubeObject, ObjectRef} from './model.js'
import {MANAGED_BY_LABEL, MANAGED_BY_VALUE} from './plan-types.js'
import {compareRefs, formatRef, refOf} from './refs.js'
import {routesForParent, type BuildContext} from './routes/build.js'
import {HTTPROUTE_API_VERSION, type HTTPRouteRule, type ServiceParentRef} from './routes/gateway-types.js'
import {resolveHost, serviceInfo, type ServiceInfo} from './routes/hosts.js'
import {analyzeHttpRoute, type AnalysisContext, type HttpDraft, type Note} from './routes/http.js'
import {joinName, shortHash} from './routes/values.js'
import {CONVERTED_FROM_ANNOTATION, VersionServices, type VersionServiceUse} from './routes/version-services.js'
import {byCodePoint} from './order.js'

export {CONVERTED_FROM_ANNOTATION} from './routes/version-services.js'

export interface RouteConversionInput {
  /** The migrated namespace (VirtualServices and Services live here). */
  namespace: string
  /** Mesh VirtualServices of this namespace for this namespace's hosts (selected by the caller). */
  virtualServices: KubeObject[]
  /** DestinationRules visible for these hosts (subset → labels). */
  destinationRules: KubeObject[]
  /** The namespace's Service objects (ports, selectors). */
  services: KubeObject[]
}

export interface RouteConversion {
  /** gateway.networking.k8s.io/v1 HTTPRoutes, sorted by name. */
  httpRoutes: KubeObject[]
  /** Per-subset Services `<svc>-<subset>` (selector = Service selector + subset labels, same ports), sorted by name. */
  versionServices: KubeObject[]
  /** VirtualServices fully expressed by the routes: the caller deletes them in the same step. */
  converted: ObjectRef[]
  /** VirtualServices that must stay, with field-level reasons. */
  kept: {ref: ObjectRef; reasons: string[]}[]
  findings: Finding[]
}

interface Converted {
  vs: KubeObject
  routes: {parent: ServiceInfo; port?: number; rules: HTTPRouteRule[]; nameParts: string[]}[]
  uses: VersionServiceUse[]
  notes: Note[]
}

/** Services named by each VirtualService's hosts, to find hosts claimed twice. */
function hostClaims(vss: KubeObject[], namespace: string, services: Map<string, ServiceInfo>): Map<string, string[]> {
  const claims = new Map<string, string[]>()
  for (const vs of vss) {
    const names = new Set(
      (list(vs.spec?.hosts) ?? [])
        .map((h) => resolveHost(h, namespace).service)
        .filter((s): s is string => s !== undefined && services.has(s)),
    )
    for (const s of names) claims.set(s, [...(claims.get(s) ?? []), vs.metadata.name])
  }
  return claims
}

function exportNote(spec: Record<string, unknown>, namespace: string): Note | undefined {
  const exportTo = list(spec.exportTo)
  if (!exportTo || exportTo.includes('*')) return undefined
  const visible = exportTo.map((e) => (e === '.' ? namespace : e)).filter((e) => e !== '~')
  return {
    topic: 'spec.exportTo',
    ...renderFinding(
      'HTTPRouteWiderAudience',
      {detail: visible.length > 0 ? `callers in ${visible.join(', ')}` : 'no namespace'},
      'warning',
    ),
  }
}

function analyzeVirtualService(
  vs: KubeObject,
  namespace: string,
  services: Map<string, ServiceInfo>,
  destinationRules: KubeObject[],
  claims: Map<string, string[]>,
  versions: VersionServices,
): {reasons: string[]; notes: Note[]; converted?: Converted} {
  const spec: Record<string, unknown> = isRecord(vs.spec) ? vs.spec : {}
  const ctx: AnalysisContext = {namespace, services, destinationRules, reasons: [], notes: []}
  const gateways = Array.isArray(spec.gateways) ? spec.gateways.map(String) : []
  const others = gateways.filter((g) => g !== 'mesh')
  if (others.length > 0 && gateways.includes('mesh')) {
    ctx.reasons.push(
      reason(
        'spec.gateways',
        `also bound to gateway(s) ${others.join(', ')}: an HTTPRoute with a Service parent serves only mesh traffic, and deleting the VirtualService would drop the gateway routing`,
      ),
    )
  } else if (others.length > 0) {
    ctx.reasons.push(
      reason(
        'spec.gateways',
        `bound to gateway(s) ${others.join(', ')} only, not to the mesh: gateway routing, not converted to a Service-parented HTTPRoute`,
      ),
    )
  }
  const hosts = Array.isArray(spec.hosts) ? spec.hosts.map(String) : []
  if (hosts.length === 0)
    ctx.reasons.push(
      reason('spec.hosts', 'no hosts: a delegate VirtualService, applied only through its parent VirtualService'),
    )
  const parents: {service: ServiceInfo; path: string}[] = []
  hosts.forEach((h, i) => {
    const path = `spec.hosts[${i}]`
    const r = resolveHost(h, namespace)
    const service = r.service !== undefined ? services.get(r.service) : undefined
    if (r.wildcard) {
      ctx.reasons.push(reason(path, `wildcard host ${h}: an HTTPRoute parentRef names one Service`))
    } else if (!service) {
      ctx.reasons.push(
        reason(
          path,
          `${h} is not a Service of ${namespace} (another namespace, a ServiceEntry host or an external name): it cannot be a Service parentRef here`,
        ),
      )
    } else if (service.type === 'ExternalName') {
      ctx.reasons.push(reason(path, `Service ${service.name} is of type ExternalName: no waypoint serves it`))
    } else if (service.headless) {
      ctx.reasons.push(
        reason(
          path,
          `Service ${service.name} is headless: callers reach pod addresses, which a Service-parented HTTPRoute on the waypoint never sees (DOMAIN §7 E9)`,
        ),
      )
    } else if (!parents.some((p) => p.service.name === service.name)) {
      parents.push({service, path})
      const rivals = (claims.get(service.name) ?? []).filter((n) => n !== vs.metadata.name)
      if (rivals.length > 0) {
        ctx.reasons.push(
          reason(
            path,
            `Service ${service.name} is also a host of VirtualService(s) ${rivals.join(', ')}: sidecars apply only one of them (IST0109) while waypoints and HTTPRoutes merge them — merge them into one VirtualService first`,
          ),
        )
      }
      if (r.partial) {
        ctx.notes.push({
          topic: path,
          ...renderFinding(
            'HTTPRoutePartialHost',
            {variant: 'analyzeVirtualService', path, host: h, serviceName: service.name},
            'warning',
          ),
        })
      }
    }
  })
  for (const section of ['tcp', 'tls'] as const) {
    if (Array.isArray(spec[section]) && (spec[section] as unknown[]).length > 0) {
      // DOMAIN §3.4, §3.6: their Gateway API form is TCPRoute/TLSRoute (Alpha, experimental channel), never an
      // HTTPRoute; the waypoint applies them as a VirtualService on its TCP chain.
      ctx.reasons.push(
        reason(
          `spec.${section}`,
          `${section} routes: their Gateway API form is ${section === 'tcp' ? 'TCPRoute' : 'TLSRoute'} (Alpha, experimental channel), not HTTPRoute, which is all --routes httproute writes; the waypoint applies them from the VirtualService`,
        ),
      )
    }
  }
  const http = Array.isArray(spec.http) ? spec.http : []
  if (http.length === 0 && !Array.isArray(spec.tcp) && !Array.isArray(spec.tls))
    ctx.reasons.push(reason('spec.http', 'no HTTP routes'))
  const drafts: HttpDraft[] = http.map((r, i) => analyzeHttpRoute(r, i, ctx))
  const exported = exportNote(spec, namespace)
  if (exported) ctx.notes.push(exported)
  if (ctx.reasons.length > 0) return {reasons: ctx.reasons, notes: ctx.notes}

  const build: BuildContext = {versions, reasons: [], notes: ctx.notes, uses: []}
  const routes: Converted['routes'] = []
  for (const {service, path} of parents) {
    const perParent = routesForParent(service, drafts, path, build)
    const split = perParent.length > 1
    for (const r of perParent) {
      const nameParts = [
        ...(parents.length > 1 ? [service.name] : []),
        ...(split && r.port !== undefined ? [String(r.port)] : []),
      ]
      routes.push({parent: service, ...(r.port === undefined ? {} : {port: r.port}), rules: r.rules, nameParts})
    }
  }
  if (build.reasons.length > 0) return {reasons: [...new Set(build.reasons)], notes: ctx.notes}
  return {reasons: [], notes: ctx.notes, converted: {vs, routes, uses: build.uses, notes: ctx.notes}}
}

function httpRouteObject(
  name: string,
  namespace: string,
  vsName: string,
  parent: ServiceInfo,
  port: number | undefined,
  rules: HTTPRouteRule[],
): KubeObject {
  const parentRef: ServiceParentRef = {group: '', kind: 'Service', name: parent.name}
  if (port !== undefined) parentRef.port = port
  return {
    apiVersion: HTTPROUTE_API_VERSION,
    kind: 'HTTPRoute',
    metadata: {
      name,
      namespace,
      labels: {[MANAGED_BY_LABEL]: MANAGED_BY_VALUE},
      annotations: {[CONVERTED_FROM_ANNOTATION]: vsName},
    },
    spec: {parentRefs: [parentRef], rules},
  }
}

function versionNotes(uses: VersionServiceUse[]): Note[] {
  const notes: Note[] = []
  const seen = new Set<string>()
  for (const use of uses) {
    if (seen.has(use.name)) continue
    seen.add(use.name)
    if (use.existing) {
      notes.push({
        topic: use.name,
        ...renderFinding(
          'HTTPRouteVersionServiceExists',
          {versionService: use.name, baseName: use.base.name, subset: use.subset},
          'info',
        ),
      })
    }
  }
  return notes
}

function trafficPolicyNotes(vs: KubeObject, uses: VersionServiceUse[]): Note[] {
  const notes: Note[] = []
  const seen = new Set<string>()
  for (const use of uses) {
    if (!use.trafficPolicyFrom || seen.has(use.name)) continue
    seen.add(use.name)
    notes.push({
      topic: use.name,
      ...renderFinding(
        'HTTPRouteVersionServiceTrafficPolicy',
        {
          refOf: formatRef(refOf(use.trafficPolicyFrom)),
          baseName: use.base.name,
          subset: use.subset,
          versionService: use.name,
          metadataName: vs.metadata.name,
        },
        'warning',
      ),
    })
  }
  return notes
}

function toFinding(note: Note, ref: ObjectRef): Finding {
  // The note was rendered from the catalogue (renderFinding); the finding names the VirtualService it is about.
  const {code, severity, message, fix} = note
  const f: Finding = {
    id: classifiedId(code, ref, note.topic),
    code,
    severity,
    message: `${formatRef(ref)}: ${message}`,
    ref,
  }
  if (fix) f.fix = fix
  return f
}

export function convertVirtualServices(input: RouteConversionInput): RouteConversion {
  const namespace = input.namespace
  const ownServices = input.services.filter(
    (s) => s.kind === 'Service' && (s.metadata.namespace ?? namespace) === namespace,
  )
  const services = new Map(ownServices.map((s) => [s.metadata.name, serviceInfo(s)]))
  const versions = new VersionServices(namespace, new Map(ownServices.map((s) => [s.metadata.name, s])))
  const vss = [...input.virtualServices].sort((a, b) => byCodePoint(a.metadata.name, b.metadata.name))
  const claims = hostClaims(vss, namespace, services)

  const result: RouteConversion = {httpRoutes: [], versionServices: [], converted: [], kept: [], findings: []}
  const convertedList: Converted[] = []
  for (const vs of vss) {
    const ref = refOf(vs)
    const analysis = analyzeVirtualService(vs, namespace, services, input.destinationRules, claims, versions)
    if (!analysis.converted) {
      result.kept.push({ref, reasons: analysis.reasons})
      result.findings.push(
        finding(
          'VirtualServiceKept',
          ref,
          {
            variant: 'convertVirtualServices',
            ref: formatRef(ref),
            length: analysis.reasons.length,
            reasons: analysis.reasons[0],
          },
          {id: classifiedId('VirtualServiceKept', ref), severity: 'warning'},
        ),
      )
      for (const note of analysis.notes) if (note.alsoWhenKept) result.findings.push(toFinding(note, ref))
      continue
    }
    versions.commit(analysis.converted.uses, vs.metadata.name)
    convertedList.push(analysis.converted)
    result.converted.push(ref)
    const notes = [
      ...analysis.notes,
      ...versionNotes(analysis.converted.uses),
      ...trafficPolicyNotes(vs, analysis.converted.uses),
    ]
    for (const note of notes) result.findings.push(toFinding(note, ref))
  }

  // Names: `<vs>[-<service>][-<port>]`, DNS-1123, at most 253 characters. Two conversions can still
  // meet on one name (VirtualService `a` host `b` and VirtualService `a-b`): both then get a hash of
  // what they are converted from.
  const named = convertedList.flatMap((c) =>
    c.routes.map((r) => ({c, r, name: joinName(253, c.vs.metadata.name, ...r.nameParts)})),
  )
  const counts = new Map<string, number>()
  for (const n of named) counts.set(n.name, (counts.get(n.name) ?? 0) + 1)
  for (const n of named) {
    const name =
      counts.get(n.name)! > 1 ? joinName(253, n.name, shortHash([n.c.vs.metadata.name, ...n.r.nameParts])) : n.name
    result.httpRoutes.push(httpRouteObject(name, namespace, n.c.vs.metadata.name, n.r.parent, n.r.port, n.r.rules))
  }

  result.httpRoutes.sort((a, b) => byCodePoint(a.metadata.name, b.metadata.name))
  result.versionServices = versions.objects()
  result.converted.sort(compareRefs)
  result.kept.sort((a, b) => compareRefs(a.ref, b.ref))
  const byId = new Map(result.findings.map((f) => [f.id, f]))
  result.findings = [...byId.values()].sort((a, b) => byCodePoint(a.id, b.id))
  return result
}
