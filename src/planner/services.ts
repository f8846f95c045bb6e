// Services of the migrated namespace and their ports as Istio sees them (DOMAIN §5, §7 E9, E19, E27).
// Pure: objects in, ServiceItems and findings out.
import {finding} from './findings/finding.js'
import type {Finding, KubeObject, ObjectRef, ServiceItem, ServicePortItem, WorkloadItem} from './model.js'
import {INJECTION_IGNORED_NAMESPACES} from './namespace.js'
import {compareRefs, groupOf, refOf} from './refs.js'
import {isRecord, stringMap} from './json.js'
import {entryWorkloads} from './workload-entries.js'

/** Ports that default to TCP instead of being sniffed (SMTP, DNS, MySQL, MongoDB). */
const WELL_KNOWN_TCP_PORTS = new Set([25, 53, 3306, 27017])

/** Istio's protocol names (`protocol.Parse`, case-insensitive). */
const PROTOCOLS: Record<string, string> = {
  tcp: 'TCP',
  udp: 'UDP',
  grpc: 'GRPC',
  'grpc-web': 'GRPC-Web',
  http: 'HTTP',
  http_proxy: 'HTTP_PROXY',
  http2: 'HTTP2',
  https: 'HTTPS',
  tls: 'TLS',
  mongo: 'Mongo',
  redis: 'Redis',
  mysql: 'MySQL',
}

/** `appProtocol` values of KEP-3726 that Istio maps itself. */
const KUBERNETES_APP_PROTOCOLS: Record<string, string> = {
  'kubernetes.io/h2c': 'HTTP2',
  'kubernetes.io/ws': 'HTTP',
  'kubernetes.io/wss': 'HTTPS',
}

/** Resolved protocol meaning "no protocol known: sniffed by a waypoint". */
export const SNIFFED = 'auto'

const HTTP2_FAMILY = new Set(['HTTP2', 'GRPC', 'GRPC-Web'])
const HTTP_FAMILY = new Set(['HTTP', 'HTTP2', 'HTTP_PROXY', 'GRPC', 'GRPC-Web'])

/**
 * The protocol Istio gives a Service port (`ConvertProtocol`, DOMAIN §5): `protocol: UDP` → UDP;
 * `appProtocol` replaces the port name when set (KEP-3726 `kubernetes.io/h2c|ws|wss` mapped);
 * a `grpc-web` prefix; else the name's prefix before the first `-`. Unknown → `auto` (sniffed),
 * except ports 25, 53, 3306 and 27017, which default to TCP.
 */
export function istioProtocol(port: {port: number; name?: string; protocol?: string; appProtocol?: string}): string {
  if (port.protocol === 'UDP') return 'UDP'
  if (port.appProtocol !== undefined && KUBERNETES_APP_PROTOCOLS[port.appProtocol])
    return KUBERNETES_APP_PROTOCOLS[port.appProtocol]!
  const name = port.appProtocol ?? port.name ?? ''
  if (name.toLowerCase().startsWith('grpc-web')) return 'GRPC-Web'
  const dash = name.indexOf('-')
  const prefix = (dash >= 0 ? name.slice(0, dash) : name).toLowerCase()
  const known = Object.hasOwn(PROTOCOLS, prefix) ? PROTOCOLS[prefix] : undefined
  if (known) return known
  return WELL_KNOWN_TCP_PORTS.has(port.port) ? 'TCP' : SNIFFED
}

function portItem(raw: Record<string, unknown>): ServicePortItem | undefined {
  const port = Number(raw.port)
  if (!Number.isInteger(port)) return undefined
  const item: ServicePortItem = {
    port,
    protocol: typeof raw.protocol === 'string' ? raw.protocol : 'TCP',
    istioProtocol: SNIFFED,
  }
  if (typeof raw.name === 'string' && raw.name !== '') item.name = raw.name
  if (typeof raw.targetPort === 'number' || typeof raw.targetPort === 'string') item.targetPort = raw.targetPort
  if (typeof raw.appProtocol === 'string') item.appProtocol = raw.appProtocol
  item.istioProtocol = istioProtocol(item)
  return item
}

/**
 * Services of `namespace`, with their ports resolved as Istio does and the workloads whose pods
 * their selector matches.
 */
export function analyzeServices(
  objects: KubeObject[],
  namespace: string,
  workloads: WorkloadItem[],
): {services: ServiceItem[]; findings: Finding[]} {
  const findings: Finding[] = []
  const services: ServiceItem[] = []
  for (const obj of objects) {
    if (obj.kind !== 'Service' || groupOf(obj.apiVersion) !== '' || obj.metadata.namespace !== namespace) continue
    const spec = isRecord(obj.spec) ? obj.spec : {}
    const ports = (Array.isArray(spec.ports) ? spec.ports : [])
      .filter(isRecord)
      .map(portItem)
      .filter((p): p is ServicePortItem => p !== undefined)
    const selector = stringMap(spec.selector)
    const hasSelector = Object.keys(selector).length > 0
    const type = typeof spec.type === 'string' ? spec.type : 'ClusterIP'
    const matched = hasSelector
      ? [
          ...new Set(
            workloads
              .filter((w) => Object.entries(selector).every(([k, v]) => w.podLabels[k] === v))
              .map((w) => w.ref.name),
          ),
        ].sort()
      : []
    // Issue 21 §5: a Service's selector selects WorkloadEntries too (PILOT_ENABLE_K8S_SELECT_WORKLOAD_ENTRIES, on
    // by default; istio/istio pilot/pkg/serviceregistry/ambient/workloads.go workloadEntryWorkloadBuilder).
    const entries = hasSelector
      ? entryWorkloads(objects, namespace)
          .filter((e) => Object.entries(selector).every(([k, v]) => e.labels[k] === v))
          .map((e) => `${e.ref.kind}/${e.ref.name}`)
      : []
    const item: ServiceItem = {
      ref: refOf(obj),
      type,
      labels: {...(obj.metadata.labels ?? {})},
      headless: spec.clusterIP === 'None',
      ports,
      workloads: matched,
    }
    if (hasSelector) item.selector = selector
    if (entries.length > 0) item.entryWorkloads = [...new Set(entries)].sort()
    services.push(item)
    if (hasSelector && matched.length === 0 && entries.length === 0 && type !== 'ExternalName') {
      const labels = Object.entries(selector).map(([k, v]) => `${k}=${v}`)
      findings.push(
        finding(
          'ServiceWithoutWorkloads',
          item.ref,
          {service: `${namespace}/${obj.metadata.name}`, selector: labels.join(',')},
          {id: `service-no-workloads/${namespace}/${obj.metadata.name}`},
        ),
      )
    }
  }
  services.sort((a, b) => compareRefs(a.ref, b.ref))
  return {services, findings}
}

/** Gateway-controller values of `gateway.istio.io/managed` whose Services users did not write. */
const MANAGED_GATEWAY_SERVICES = new Set([
  'istio.io-gateway-controller',
  'istio.io-mesh-controller',
  'istio.io-eastwest-controller',
])

/** The port analyzer's exclusions: system namespaces, the control plane, gateway-managed Services. */
function skippedByPortAnalyzer(svc: ServiceItem): boolean {
  const labels = svc.labels ?? {}
  if (INJECTION_IGNORED_NAMESPACES.includes(svc.ref.namespace ?? '')) return true
  if (labels.istio !== undefined || labels.release === 'istio') return true
  return (
    labels['gateway.istio.io/managed'] !== undefined && MANAGED_GATEWAY_SERVICES.has(labels['gateway.istio.io/managed'])
  )
}

function portLabel(p: ServicePortItem): string {
  return `${p.name ?? '(unnamed)'} (port: ${p.port}, targetPort: ${p.targetPort ?? p.port})`
}

/**
 * Findings about Service ports once the namespace is ambient (DOMAIN §5): ports a waypoint would
 * have to sniff (IST0118; warnings only when a waypoint is planned), ExternalName port names
 * (IST0150), headless Services behind a service waypoint (E9), HTTP/2 and gRPC ports that lose
 * per-request balancing (E27), UDP ports.
 */
export function servicePortFindings(
  services: ServiceItem[],
  opts: {waypointPlanned: boolean; waypointFor: 'service' | 'workload' | 'all'},
): Finding[] {
  const podTrafficToo = opts.waypointFor !== 'service'
  const findings: Finding[] = []
  for (const svc of services) {
    if (skippedByPortAnalyzer(svc)) continue
    const f: ServicePortFacts = {
      svc,
      name: `${svc.ref.namespace ?? ''}/${svc.ref.name}`,
      ref: svc.ref,
      opts,
      podTrafficToo,
    }
    if (svc.type === 'ExternalName') findings.push(...externalNamePorts(f))
    else findings.push(...SERVICE_PORT_ANALYZERS.flatMap((analyze) => analyze(f)))
  }
  return findings
}

/** What the Service port analyzers read. */
interface ServicePortFacts {
  svc: ServiceItem
  /** `namespace/name`, for ids and messages. */
  name: string
  ref: ObjectRef
  opts: {waypointPlanned: boolean; waypointFor: 'service' | 'workload' | 'all'}
  /** The waypoint serves workload traffic too (waypoint-for workload/all): the HTTP inspector stays on for every port. */
  podTrafficToo: boolean
}

/** IST0150: ExternalName ports named tcp or without a protocol. */
function externalNamePorts({svc, name, ref}: ServicePortFacts): Finding[] {
  const findings: Finding[] = []
  for (const p of svc.ports) {
    if (p.istioProtocol !== SNIFFED && p.name !== 'tcp') continue
    const naming = p.name === 'tcp' ? '"tcp"' : 'without a protocol'
    findings.push(
      finding(
        'ExternalNamePortNameNoProtocol',
        ref,
        {port: portLabel(p), service: name, naming},
        {id: `IST0150/${name}/${p.port}`},
      ),
    )
  }
  return findings
}

/** IST0118: ports a waypoint would sniff; waypoint-sniffing: server-first ports behind a workload waypoint. */
function portProtocols({svc, name, ref, opts, podTrafficToo}: ServicePortFacts): Finding[] {
  const findings: Finding[] = []
  for (const p of svc.ports) {
    if (p.istioProtocol === SNIFFED) {
      // DOMAIN §5/E19: a port a waypoint would have to sniff must get an explicit protocol first (or be
      // accepted as sniffed, --accept-hazard): server-first protocols stall behind the HTTP inspector.
      const id = `IST0118/${name}/${p.port}`
      const args = {port: portLabel(p), service: name}
      findings.push(
        opts.waypointPlanned
          ? finding(
              'PortNameNoProtocol',
              ref,
              {...args, id, variant: podTrafficToo ? 'blockerPodTraffic' : 'blocker'},
              {id, severity: 'blocker'},
            )
          : finding('PortNameNoProtocol', ref, {...args, variant: 'noWaypoint'}, {id, severity: 'info'}),
      )
    } else if (
      opts.waypointPlanned &&
      podTrafficToo &&
      !HTTP_FAMILY.has(p.istioProtocol) &&
      p.istioProtocol !== 'UDP'
    ) {
      findings.push(
        finding(
          'WaypointSniffsProtocol',
          ref,
          {port: portLabel(p), service: name, protocol: p.istioProtocol},
          {id: `waypoint-sniffing/${name}/${p.port}`, severity: p.istioProtocol === 'MySQL' ? 'warning' : 'info'},
        ),
      )
    }
  }
  return findings
}

/** UDP ports: neither ztunnel nor waypoints proxy them. */
function udpPorts({svc, name, ref}: ServicePortFacts): Finding[] {
  const findings: Finding[] = []
  const udp = svc.ports.filter((p) => p.istioProtocol === 'UDP')
  if (udp.length > 0) {
    findings.push(finding('UdpPort', ref, {service: name, ports: udp.map((p) => String(p.port))}, {id: `udp/${name}`}))
  }
  return findings
}

/** E27: HTTP/2 and gRPC ports lose per-request balancing at ztunnel. */
function http2Ports({svc, name, ref, opts}: ServicePortFacts): Finding[] {
  const findings: Finding[] = []
  const http2 = svc.ports.filter((p) => HTTP2_FAMILY.has(p.istioProtocol))
  if (http2.length > 0) {
    const ports = http2.map((p) => `${p.port} (${p.istioProtocol})`).join(', ')
    findings.push(
      finding(
        'PerConnectionBalancing',
        ref,
        {variant: opts.waypointPlanned ? 'waypoint' : 'ztunnel', service: name, ports},
        {id: `E27/${name}`, severity: opts.waypointPlanned ? 'info' : 'warning'},
      ),
    )
  }
  return findings
}

/** E9: headless Services behind a service waypoint. */
function headlessBehindServiceWaypoint({svc, name, ref, opts}: ServicePortFacts): Finding[] {
  const findings: Finding[] = []
  if (svc.headless && opts.waypointPlanned && opts.waypointFor === 'service') {
    findings.push(
      finding('StatefulRestartLimits', ref, {variant: 'headlessService', service: name}, {id: `E9/headless/${name}`}),
    )
  }
  return findings
}

/** The analyzers of a non-ExternalName Service, in the order their findings appear in the plan. */
const SERVICE_PORT_ANALYZERS: Array<(f: ServicePortFacts) => Finding[]> = [
  portProtocols,
  udpPorts,
  http2Ports,
  headlessBehindServiceWaypoint,
]
