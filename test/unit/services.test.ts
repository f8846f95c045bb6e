import {describe, expect, it} from 'vitest'
import type {KubeObject, ServiceItem, WorkloadItem} from '../../src/planner/model.js'
import {analyzeServices, istioProtocol, servicePortFindings} from '../../src/planner/services.js'

const NS = 'shop'

function service(
  name: string,
  spec: Record<string, unknown>,
  labels: Record<string, string> = {},
  namespace = NS,
): KubeObject {
  return {apiVersion: 'v1', kind: 'Service', metadata: {name, namespace, labels}, spec}
}

function workload(name: string, podLabels: Record<string, string>, kind = 'Deployment'): WorkloadItem {
  return {
    ref: {apiVersion: 'apps/v1', kind, namespace: NS, name},
    proxy: 'sidecar',
    lostAnnotations: [],
    traits: [],
    podLabels,
  }
}

describe('istioProtocol (ConvertProtocol, DOMAIN §5)', () => {
  it.each([
    // [port, name, protocol, appProtocol, expected]
    [80, 'http', 'TCP', undefined, 'HTTP'],
    [80, 'http-web', 'TCP', undefined, 'HTTP'],
    [80, 'HTTP2-api', 'TCP', undefined, 'HTTP2'],
    [443, 'https', 'TCP', undefined, 'HTTPS'],
    [9000, 'tcp-db', 'TCP', undefined, 'TCP'],
    [9000, 'tls', 'TCP', undefined, 'TLS'],
    [9000, 'grpc', 'TCP', undefined, 'GRPC'],
    [9000, 'grpc-web', 'TCP', undefined, 'GRPC-Web'],
    [9000, 'grpc-web-ui', 'TCP', undefined, 'GRPC-Web'],
    [9000, 'grpc-api', 'TCP', undefined, 'GRPC'],
    [27018, 'mongo', 'TCP', undefined, 'Mongo'],
    [6379, 'redis', 'TCP', undefined, 'Redis'],
    [3307, 'mysql-main', 'TCP', undefined, 'MySQL'],
    [9000, 'udp-stats', 'TCP', undefined, 'UDP'],
    [9000, 'http_proxy', 'TCP', undefined, 'HTTP_PROXY'],
    // protocol: UDP wins over everything.
    [53, 'http', 'UDP', 'http', 'UDP'],
    // appProtocol replaces the name, even when the name would be recognised.
    [8080, 'web', 'TCP', 'http', 'HTTP'],
    [8080, 'http', 'TCP', 'custom.example/thing', 'auto'],
    [8080, 'x', 'TCP', 'kubernetes.io/h2c', 'HTTP2'],
    [8080, 'x', 'TCP', 'kubernetes.io/ws', 'HTTP'],
    [8443, 'x', 'TCP', 'kubernetes.io/wss', 'HTTPS'],
    [8080, 'x', 'TCP', 'grpc', 'GRPC'],
    // Unknown names and unnamed ports are sniffed…
    [8080, 'web', 'TCP', undefined, 'auto'],
    [8080, undefined, 'TCP', undefined, 'auto'],
    [8080, 'foo', 'SCTP', undefined, 'auto'],
    // …except the well-known ports, which default to TCP.
    [25, undefined, 'TCP', undefined, 'TCP'],
    [53, 'dns', 'TCP', undefined, 'TCP'],
    [3306, 'db', 'TCP', undefined, 'TCP'],
    [27017, undefined, 'TCP', undefined, 'TCP'],
  ])('port %s name %s protocol %s appProtocol %s → %s', (port, name, protocol, appProtocol, expected) => {
    const p: {port: number; name?: string; protocol?: string; appProtocol?: string} = {port, protocol}
    if (name !== undefined) p.name = name
    if (appProtocol !== undefined) p.appProtocol = appProtocol
    expect(istioProtocol(p)).toBe(expected)
  })

  it('defaults the Kubernetes protocol to TCP', () => {
    expect(istioProtocol({port: 8080, name: 'http'})).toBe('HTTP')
  })
})

describe('analyzeServices', () => {
  it('reads ports, type, labels, headless, and matches workloads by pod labels', () => {
    const objs = [
      service(
        'web',
        {
          selector: {app: 'web'},
          ports: [
            {name: 'http', port: 80, targetPort: 'http-port'},
            {port: 9090, protocol: 'UDP'},
          ],
        },
        {'istio.io/use-waypoint': 'wp'},
      ),
      service('db', {selector: {app: 'db'}, clusterIP: 'None', ports: [{port: 5432}]}),
      service('ext', {type: 'ExternalName', externalName: 'x.example.com', ports: [{name: 'https', port: 443}]}),
      service('manual', {ports: [{port: 80, name: 'http', appProtocol: 'kubernetes.io/h2c'}]}),
      service('ghost', {selector: {app: 'nothing'}, ports: [{port: 80}]}),
      service('other-ns', {selector: {app: 'web'}}, {}, 'elsewhere'),
      {apiVersion: 'serving.knative.dev/v1', kind: 'Service', metadata: {name: 'kn', namespace: NS}, spec: {}},
    ]
    const workloads = [
      workload('web-v1', {app: 'web', version: 'v1'}),
      workload('web-v2', {app: 'web', version: 'v2'}),
      workload('web-v1', {app: 'web', version: 'v1'}, 'StatefulSet'),
      workload('db', {app: 'db'}, 'StatefulSet'),
      workload('other', {app: 'other'}),
    ]
    const {services, findings} = analyzeServices(objs, NS, workloads)
    expect(services.map((s) => s.ref.name)).toEqual(['db', 'ext', 'ghost', 'manual', 'web'])
    const web = services.find((s) => s.ref.name === 'web')!
    expect(web).toEqual({
      ref: {apiVersion: 'v1', kind: 'Service', namespace: NS, name: 'web'},
      type: 'ClusterIP',
      labels: {'istio.io/use-waypoint': 'wp'},
      selector: {app: 'web'},
      headless: false,
      ports: [
        {name: 'http', port: 80, targetPort: 'http-port', protocol: 'TCP', istioProtocol: 'HTTP'},
        {port: 9090, protocol: 'UDP', istioProtocol: 'UDP'},
      ],
      workloads: ['web-v1', 'web-v2'],
    })
    expect(services.find((s) => s.ref.name === 'db')).toMatchObject({
      headless: true,
      workloads: ['db'],
      ports: [{port: 5432, istioProtocol: 'auto'}],
    })
    expect(services.find((s) => s.ref.name === 'ext')).toMatchObject({type: 'ExternalName', workloads: []})
    const manual = services.find((s) => s.ref.name === 'manual')!
    expect(manual.selector).toBeUndefined()
    expect(manual.ports[0]).toMatchObject({appProtocol: 'kubernetes.io/h2c', istioProtocol: 'HTTP2'})
    expect(findings.map((f) => f.id)).toEqual([`service-no-workloads/${NS}/ghost`])
    expect(JSON.parse(JSON.stringify(services))).toEqual(services)
  })
})

describe('servicePortFindings', () => {
  const svc = (
    name: string,
    spec: Record<string, unknown>,
    labels: Record<string, string> = {},
    namespace = NS,
  ): ServiceItem => analyzeServices([service(name, spec, labels, namespace)], namespace, []).services[0]!

  const plain = svc('api', {
    selector: {app: 'api'},
    ports: [
      {port: 8080, targetPort: 8080},
      {name: 'http', port: 80},
      {name: 'tcp-db', port: 5432},
    ],
  })

  it('without a waypoint: unnamed ports are info (ztunnel does not sniff)', () => {
    const f = servicePortFindings([plain], {waypointPlanned: false, waypointFor: 'service'})
    expect(f.map((x) => [x.id, x.severity])).toEqual([[`IST0118/${NS}/api/8080`, 'info']])
    expect(f[0]!.message).toMatch(/ztunnel does not sniff/)
    expect(f[0]!.message).toContain('(unnamed) (port: 8080, targetPort: 8080)')
  })

  it('with a waypoint: a blocker with the server-first caveat, acceptable by its id', () => {
    const f = servicePortFindings([plain], {waypointPlanned: true, waypointFor: 'service'})
    expect(f.map((x) => [x.id, x.severity])).toEqual([[`IST0118/${NS}/api/8080`, 'blocker']])
    expect(f[0]!.fix).toContain(`--accept-hazard IST0118/${NS}/api/8080`)
    expect(f[0]!.message).toMatch(/server-first protocols/)
    expect(f[0]!.message).not.toMatch(/workload\/all/)
    expect(f[0]!.fix).toMatch(/appProtocol/)
  })

  it('waypoint-for workload/all: sniffing also on declared non-HTTP ports, and the caveat on unnamed ones', () => {
    const f = servicePortFindings([plain], {waypointPlanned: true, waypointFor: 'all'})
    expect(f.map((x) => x.id)).toEqual([`IST0118/${NS}/api/8080`, `waypoint-sniffing/${NS}/api/5432`])
    expect(f[0]!.message).toMatch(/workload\/all/)
    const mysql = svc('db', {selector: {app: 'db'}, ports: [{name: 'mysql', port: 3307}]})
    expect(servicePortFindings([mysql], {waypointPlanned: true, waypointFor: 'workload'})[0]).toMatchObject({
      code: 'WaypointSniffsProtocol',
      severity: 'warning',
    })
    expect(servicePortFindings([mysql], {waypointPlanned: false, waypointFor: 'workload'})).toEqual([])
  })

  it('skips system namespaces, the control plane and gateway-managed Services', () => {
    const unnamed = {selector: {app: 'x'}, ports: [{port: 8080}]}
    const skipped = [
      svc('a', unnamed, {}, 'kube-system'),
      svc('b', unnamed, {}, 'kube-public'),
      svc('c', unnamed, {istio: 'pilot'}),
      svc('d', unnamed, {release: 'istio'}),
      svc('e', unnamed, {'gateway.istio.io/managed': 'istio.io-mesh-controller'}),
      svc('f', unnamed, {'gateway.istio.io/managed': 'istio.io-gateway-controller'}),
      svc('g', {...unnamed, clusterIP: 'None'}, {'gateway.istio.io/managed': 'istio.io-eastwest-controller'}),
    ]
    expect(servicePortFindings(skipped, {waypointPlanned: true, waypointFor: 'all'})).toEqual([])
    expect(
      servicePortFindings([svc('h', unnamed, {release: 'other'})], {waypointPlanned: true, waypointFor: 'service'}),
    ).toHaveLength(1)
  })

  it('ExternalName: IST0150 for unnamed, unknown and "tcp" port names only', () => {
    const ext = (name: string, portName?: string) =>
      svc(name, {
        type: 'ExternalName',
        externalName: 'x.example.com',
        ports: [{port: 443, ...(portName ? {name: portName} : {})}],
      })
    const f = servicePortFindings(
      [ext('a', 'nginx'), ext('b'), ext('c', 'tcp'), ext('d', 'https'), ext('e', 'tcp-x')],
      {waypointPlanned: false, waypointFor: 'service'},
    )
    expect(f.map((x) => [x.id, x.code, x.severity])).toEqual([
      [`IST0150/${NS}/a/443`, 'ExternalNamePortNameNoProtocol', 'warning'],
      [`IST0150/${NS}/b/443`, 'ExternalNamePortNameNoProtocol', 'warning'],
      [`IST0150/${NS}/c/443`, 'ExternalNamePortNameNoProtocol', 'warning'],
    ])
  })

  it('headless Services behind a service waypoint (E9)', () => {
    const headless = svc('db', {selector: {app: 'db'}, clusterIP: 'None', ports: [{name: 'tcp', port: 5432}]})
    expect(servicePortFindings([headless], {waypointPlanned: true, waypointFor: 'service'}).map((f) => f.id)).toEqual([
      `E9/headless/${NS}/db`,
    ])
    expect(servicePortFindings([headless], {waypointPlanned: false, waypointFor: 'service'})).toEqual([])
    expect(
      servicePortFindings([headless], {waypointPlanned: true, waypointFor: 'workload'}).map((f) => f.code),
    ).not.toContain('StatefulRestartLimits')
  })

  it('HTTP/2 and gRPC ports lose per-request balancing without a waypoint (E27)', () => {
    const grpc = svc('rpc', {
      selector: {app: 'rpc'},
      ports: [
        {name: 'grpc', port: 9000},
        {name: 'http', port: 80},
        {port: 81, appProtocol: 'kubernetes.io/h2c'},
      ],
    })
    const without = servicePortFindings([grpc], {waypointPlanned: false, waypointFor: 'service'})
    expect(without).toEqual([
      expect.objectContaining({id: `E27/${NS}/rpc`, code: 'PerConnectionBalancing', severity: 'warning'}),
    ])
    expect(without[0]!.message).toContain('9000 (GRPC), 81 (HTTP2)')
    expect(without[0]!.message).toMatch(/per connection/)
    expect(servicePortFindings([grpc], {waypointPlanned: true, waypointFor: 'service'})[0]).toMatchObject({
      code: 'PerConnectionBalancing',
      severity: 'info',
    })
  })

  it('UDP ports are reported as not proxied', () => {
    const dns = svc('dns', {
      selector: {app: 'dns'},
      ports: [
        {name: 'dns', port: 53, protocol: 'UDP'},
        {name: 'dns-tcp', port: 53, protocol: 'TCP'},
      ],
    })
    const f = servicePortFindings([dns], {waypointPlanned: false, waypointFor: 'service'})
    expect(f.map((x) => [x.id, x.severity])).toEqual([[`udp/${NS}/dns`, 'info']])
    expect(f[0]!.message).toMatch(/neither ztunnel nor waypoints proxy UDP/)
  })
})
