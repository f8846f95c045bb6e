// RequestAuthentication, Telemetry, WasmPlugin, EnvoyFilter, Sidecar, ServiceEntry, WorkloadEntry/Group,
// ProxyConfig, Istio Gateway, Gateway API Gateway and routes (DOMAIN §3.3, §3.6-§3.13, §8).
import {describe, expect, it} from 'vitest'
import {classifyObjects} from '../../src/planner/classify/index.js'
import type {KubeObject} from '../../src/planner/model.js'
import {bookinfoBase, classifyContext, deployment, istio, kubeGateway} from './support/classify-context.js'

function run(objects: KubeObject[], opts: Parameters<typeof classifyContext>[1] = {}) {
  const res = classifyObjects(classifyContext([...bookinfoBase(), ...objects], opts))
  const get = (kind: string, name: string, ns = 'bookinfo') =>
    res.items.find((i) => i.ref.kind === kind && i.ref.name === name && i.ref.namespace === ns)
  return {...res, get}
}

const ingressGatewayPods = deployment('ingressgateway', {istio: 'ingressgateway'})

describe('RequestAuthentication (§3.3)', () => {
  const jwt = [{issuer: 'testing@secure.istio.io', jwksUri: 'https://example/jwks.json'}]
  it('selector and selector-less ones in the namespace are re-targeted; JWT validation stops at ztunnel', () => {
    const r = run([
      istio('RequestAuthentication', 'sel', {selector: {matchLabels: {app: 'reviews'}}, jwtRules: jwt}),
      istio('RequestAuthentication', 'ns', {jwtRules: jwt}),
    ])
    expect(r.get('RequestAuthentication', 'sel')).toMatchObject({
      verdict: 'L7',
      action: 'retarget',
      scope: 'workload',
      services: ['reviews'],
    })
    expect(r.get('RequestAuthentication', 'ns')).toMatchObject({verdict: 'L7', action: 'retarget', scope: 'namespace'})
    expect(r.get('RequestAuthentication', 'sel')!.reasons.find((x) => x.startsWith('spec.jwtRules: '))).toMatch(
      /silently stops/,
    )
  })
  it('root-namespace mesh-wide RequestAuthentication is manual; root ones for the ingress gateway are skipped', () => {
    const r = run([
      istio('RequestAuthentication', 'mesh-jwt', {jwtRules: jwt}, {namespace: 'istio-system'}),
      istio(
        'RequestAuthentication',
        'ingress-jwt',
        {selector: {matchLabels: {istio: 'ingressgateway'}}, jwtRules: jwt},
        {namespace: 'istio-system'},
      ),
    ])
    expect(r.get('RequestAuthentication', 'mesh-jwt', 'istio-system')).toMatchObject({
      verdict: 'L7',
      action: 'manual',
      scope: 'mesh',
    })
    expect(r.get('RequestAuthentication', 'ingress-jwt', 'istio-system')).toBeUndefined()
  })
  it('targetRefs ones are kept; gateway-only selectors are unaffected', () => {
    const r = run([
      ingressGatewayPods,
      istio('RequestAuthentication', 'tr', {
        targetRefs: [{kind: 'Service', group: '', name: 'reviews'}],
        jwtRules: jwt,
      }),
      istio('RequestAuthentication', 'gw', {selector: {matchLabels: {istio: 'ingressgateway'}}, jwtRules: jwt}),
    ])
    expect(r.get('RequestAuthentication', 'tr')).toMatchObject({
      verdict: 'L7',
      action: 'keep',
      scope: 'targetRefs',
      services: ['reviews'],
    })
    expect(r.get('RequestAuthentication', 'gw')).toMatchObject({verdict: 'unaffected', action: 'keep'})
  })
})

describe('Telemetry (§3.11)', () => {
  it('selector Telemetry is re-targeted', () => {
    const r = run([
      istio('Telemetry', 'no-logs', {selector: {matchLabels: {app: 'reviews'}}, accessLogging: [{disabled: true}]}),
    ])
    expect(r.get('Telemetry', 'no-logs')).toMatchObject({verdict: 'L7', action: 'retarget', scope: 'workload'})
  })
  // issue 10 point 1. Waypoints apply namespace-wide and root Telemetry as it is (istio/istio
  // pilot/pkg/model/telemetry.go), ztunnel none; L7 telemetry needs a waypoint
  // (https://istio.io/latest/docs/ambient/usage/waypoint/: "HTTP metrics, access logs, tracing").
  it('selector-less and root Telemetry with L7 settings are kept and need the waypoint: L7 whether or not one is planned yet', () => {
    const objs = [
      istio('Telemetry', 'ns-default', {accessLogging: [{providers: [{name: 'envoy'}]}]}),
      istio('Telemetry', 'mesh-default', {metrics: [{}]}, {namespace: 'istio-system'}),
    ]
    const without = run(objs)
    expect(without.get('Telemetry', 'ns-default')).toMatchObject({verdict: 'L7', action: 'keep', scope: 'namespace'})
    expect(without.get('Telemetry', 'ns-default')!.reasons.join('\n')).toContain('bookinfo needs a waypoint to keep it')
    expect(without.get('Telemetry', 'mesh-default', 'istio-system')).toMatchObject({
      verdict: 'L7',
      action: 'keep',
      scope: 'mesh',
    })
    const withWaypoint = run(objs, {waypointPlanned: true})
    expect(withWaypoint.get('Telemetry', 'ns-default')).toMatchObject({verdict: 'L7', action: 'keep'})
    expect(withWaypoint.get('Telemetry', 'ns-default')!.reasons.join('\n')).toContain(
      'the waypoint that will serve bookinfo applies it as it is',
    )
    expect(withWaypoint.get('Telemetry', 'mesh-default', 'istio-system')).toMatchObject({verdict: 'L7', action: 'keep'})
  })
  it('a namespace-wide Telemetry that only switches telemetry off needs no waypoint: inert', () => {
    const r = run([
      istio('Telemetry', 'no-logs', {accessLogging: [{disabled: true}], tracing: [{disableSpanReporting: true}]}),
      istio('Telemetry', 'no-metrics', {metrics: [{overrides: [{disabled: true}]}]}),
      istio('Telemetry', 'some-metrics', {
        metrics: [{overrides: [{disabled: true}, {tagOverrides: {x: {value: 'y'}}}]}],
      }),
    ])
    expect(r.get('Telemetry', 'no-logs')).toMatchObject({verdict: 'inert', action: 'keep'})
    expect(r.get('Telemetry', 'no-logs')!.reasons[0]).toContain('only switches Envoy telemetry off')
    expect(r.get('Telemetry', 'no-metrics')).toMatchObject({verdict: 'inert', action: 'keep'})
    expect(r.get('Telemetry', 'some-metrics')).toMatchObject({verdict: 'L7', action: 'keep'})
  })
  it('root selector Telemetry only applies in the root namespace: skipped', () => {
    expect(
      run([
        istio('Telemetry', 'root-sel', {selector: {matchLabels: {app: 'reviews'}}}, {namespace: 'istio-system'}),
      ]).get('Telemetry', 'root-sel', 'istio-system'),
    ).toBeUndefined()
  })
  it('accepts telemetry.istio.io/v1alpha1', () => {
    const r = run([
      istio(
        'Telemetry',
        'old',
        {selector: {matchLabels: {app: 'reviews'}}},
        {apiVersion: 'telemetry.istio.io/v1alpha1'},
      ),
    ])
    expect(r.get('Telemetry', 'old')).toMatchObject({verdict: 'L7', action: 'retarget'})
  })
})

describe('WasmPlugin (§3.10)', () => {
  it('selector plugins are re-targeted (Alpha); targetRefs ones kept; root ones manual; gateway ones unaffected', () => {
    const r = run([
      ingressGatewayPods,
      istio('WasmPlugin', 'sel', {selector: {matchLabels: {app: 'reviews'}}, url: 'oci://x'}),
      istio('WasmPlugin', 'tr', {targetRefs: [{kind: 'Service', group: '', name: 'reviews'}], url: 'oci://x'}),
      istio('WasmPlugin', 'root', {url: 'oci://x'}, {namespace: 'istio-system'}),
      istio('WasmPlugin', 'gw', {selector: {matchLabels: {istio: 'ingressgateway'}}, url: 'oci://x'}),
    ])
    expect(r.get('WasmPlugin', 'sel')).toMatchObject({verdict: 'L7', action: 'retarget'})
    expect(r.get('WasmPlugin', 'tr')).toMatchObject({verdict: 'L7', action: 'keep', scope: 'targetRefs'})
    expect(r.get('WasmPlugin', 'root', 'istio-system')).toMatchObject({verdict: 'L7', action: 'manual', scope: 'mesh'})
    expect(r.get('WasmPlugin', 'gw')).toMatchObject({verdict: 'unaffected', action: 'keep'})
  })
})

describe('EnvoyFilter (§3.9)', () => {
  const patch = {
    applyTo: 'HTTP_FILTER',
    match: {context: 'SIDECAR_INBOUND'},
    patch: {operation: 'INSERT_BEFORE', value: {}},
  }
  it('an EnvoyFilter on app sidecars is a blocker with a finding', () => {
    const r = run([istio('EnvoyFilter', 'lua', {workloadSelector: {labels: {app: 'reviews'}}, configPatches: [patch]})])
    expect(r.get('EnvoyFilter', 'lua')).toMatchObject({verdict: 'blocker', action: 'blocker', services: ['reviews']})
    expect(r.findings.find((f) => f.id === 'envoyfilter/EnvoyFilter/bookinfo/lua')).toMatchObject({
      severity: 'blocker',
      code: 'EnvoyFilterNotCarried',
    })
  })
  it('a root-namespace mesh-wide EnvoyFilter needs a person (manual)', () => {
    const r = run([istio('EnvoyFilter', 'stats', {configPatches: [patch]}, {namespace: 'istio-system'})])
    expect(r.get('EnvoyFilter', 'stats', 'istio-system')).toMatchObject({
      verdict: 'blocker',
      action: 'manual',
      scope: 'mesh',
    })
  })
  it('gateway-only EnvoyFilters are unaffected; root ones selecting the ingress gateway are skipped', () => {
    const r = run([
      istio('EnvoyFilter', 'gw-ctx', {configPatches: [{...patch, match: {context: 'GATEWAY'}}]}),
      istio(
        'EnvoyFilter',
        'filter-ratelimit',
        {workloadSelector: {labels: {istio: 'ingressgateway'}}, configPatches: [patch]},
        {namespace: 'istio-system'},
      ),
    ])
    expect(r.get('EnvoyFilter', 'gw-ctx')).toMatchObject({verdict: 'unaffected', action: 'keep'})
    expect(r.get('EnvoyFilter', 'filter-ratelimit', 'istio-system')).toBeUndefined()
  })
  it('targetRefs EnvoyFilters on a waypoint are manual (unsupported per the migration guide)', () => {
    const r = run([
      istio('EnvoyFilter', 'wp', {
        targetRefs: [{kind: 'Gateway', group: 'gateway.networking.k8s.io', name: 'waypoint'}],
        configPatches: [patch],
      }),
    ])
    expect(r.get('EnvoyFilter', 'wp')).toMatchObject({verdict: 'L7', action: 'manual', scope: 'targetRefs'})
  })
})

describe('Sidecar (§3.8, E24)', () => {
  it('is inert; egress isolation and REGISTRY_ONLY losses are reported', () => {
    const r = run([
      istio('Sidecar', 'default', {
        egress: [{hosts: ['./*', 'istio-system/*']}],
        outboundTrafficPolicy: {mode: 'REGISTRY_ONLY'},
      }),
    ])
    const item = r.get('Sidecar', 'default')!
    expect(item).toMatchObject({verdict: 'inert', action: 'no-effect', scope: 'namespace'})
    expect(item.reasons.find((x) => x.startsWith('spec.egress[0].hosts: '))).toMatch(/lost/)
    expect(item.reasons.find((x) => x.startsWith('spec.outboundTrafficPolicy.mode: '))).toMatch(/REGISTRY_ONLY: lost/)
    expect(r.findings.find((f) => f.id === 'E24/Sidecar/bookinfo/default')).toMatchObject({
      code: 'SidecarEgressControlLost',
      severity: 'warning',
    })
  })
  it('an allow-all Sidecar loses nothing worth a finding', () => {
    const r = run([istio('Sidecar', 'open', {egress: [{hosts: ['*/*']}], outboundTrafficPolicy: {mode: 'ALLOW_ANY'}})])
    expect(r.get('Sidecar', 'open')).toMatchObject({verdict: 'inert', action: 'no-effect'})
    expect(r.findings).toEqual([])
  })
  it('the root namespace default Sidecar is inventoried (and kept: other namespaces use it)', () => {
    const r = run([
      istio('Sidecar', 'default', {outboundTrafficPolicy: {mode: 'REGISTRY_ONLY'}}, {namespace: 'istio-system'}),
    ])
    expect(r.get('Sidecar', 'default', 'istio-system')).toMatchObject({verdict: 'inert', action: 'keep', scope: 'mesh'})
    expect(r.findings.map((f) => f.id)).toEqual(['E24/Sidecar/istio-system/default'])
  })
})

describe('ServiceEntry, WorkloadEntry, WorkloadGroup (§3.7)', () => {
  it('ServiceEntries are kept at L4; exportTo is ignored by ztunnel', () => {
    const r = run([
      istio('ServiceEntry', 'google', {
        hosts: ['www.google.com'],
        ports: [{number: 443, name: 'https', protocol: 'HTTPS'}],
        resolution: 'DNS',
        exportTo: ['.'],
      }),
    ])
    const item = r.get('ServiceEntry', 'google')!
    expect(item).toMatchObject({verdict: 'L4', action: 'keep'})
    expect(item.reasons.find((x) => x.startsWith('spec.exportTo: '))).toMatch(/ignored by ztunnel and waypoints/)
  })
  it("other namespaces' ServiceEntries are included when exported here, with their own namespace", () => {
    const r = run([
      istio('ServiceEntry', 'public', {hosts: ['a.example.com'], resolution: 'DNS'}, {namespace: 'istio-egress'}),
      istio(
        'ServiceEntry',
        'private',
        {hosts: ['b.example.com'], resolution: 'DNS', exportTo: ['.']},
        {namespace: 'istio-egress'},
      ),
    ])
    expect(r.get('ServiceEntry', 'public', 'istio-egress')).toMatchObject({
      verdict: 'L4',
      action: 'keep',
      scope: 'client-side',
    })
    expect(r.get('ServiceEntry', 'private', 'istio-egress')).toBeUndefined()
  })
  it('wildcard hosts need an egress waypoint: lost client-side unless DYNAMIC_DNS MESH_EXTERNAL bound to one', () => {
    const r = run([istio('ServiceEntry', 'wild', {hosts: ['*.example.com'], resolution: 'NONE'})])
    expect(r.get('ServiceEntry', 'wild')).toMatchObject({verdict: 'L7', action: 'lost-client-side'})
    expect(r.findings.find((f) => f.id === 'E11/ServiceEntry/bookinfo/wild')).toMatchObject({
      code: 'WildcardServiceEntryNeedsEgressWaypoint',
    })
    const ok = run([
      istio(
        'ServiceEntry',
        'wild',
        {hosts: ['*.example.com'], resolution: 'DYNAMIC_DNS', location: 'MESH_EXTERNAL'},
        {labels: {'istio.io/use-waypoint': 'egress'}},
      ),
    ])
    expect(ok.get('ServiceEntry', 'wild')).toMatchObject({verdict: 'L7', action: 'keep'})
  })
  it('VM WorkloadEntries and WorkloadGroups are blockers', () => {
    const r = run([
      istio('WorkloadEntry', 'vm', {address: '10.0.0.5', labels: {app: 'ratings-vm'}, serviceAccount: 'ratings'}),
      istio('WorkloadGroup', 'vms', {template: {serviceAccount: 'ratings'}}),
    ])
    expect(r.get('WorkloadEntry', 'vm')).toMatchObject({verdict: 'blocker', action: 'blocker'})
    expect(r.get('WorkloadGroup', 'vms')).toMatchObject({verdict: 'blocker', action: 'blocker'})
    expect(r.findings.filter((f) => f.code === 'VmWorkloadUnsupported').map((f) => f.id)).toEqual([
      'vm/WorkloadEntry/bookinfo/vm',
      'vm/WorkloadGroup/bookinfo/vms',
    ])
  })
  it('a WorkloadEntry that only backs a MESH_EXTERNAL ServiceEntry is an external endpoint, kept', () => {
    const r = run([
      istio('ServiceEntry', 'db', {
        hosts: ['db.example'],
        location: 'MESH_EXTERNAL',
        resolution: 'STATIC',
        workloadSelector: {labels: {role: 'db'}},
      }),
      istio('WorkloadEntry', 'db-1', {address: '192.0.2.1', labels: {role: 'db'}}),
    ])
    expect(r.get('WorkloadEntry', 'db-1')).toMatchObject({verdict: 'L4', action: 'keep'})
  })
})

describe('ProxyConfig (§3.12)', () => {
  it('app-pod ProxyConfigs are inert; waypoint ones are kept', () => {
    const r = run([
      kubeGateway('waypoint', 'istio-waypoint'),
      istio('ProxyConfig', 'app', {selector: {matchLabels: {app: 'reviews'}}, concurrency: 2}),
      istio('ProxyConfig', 'wp', {
        selector: {matchLabels: {'gateway.networking.k8s.io/gateway-name': 'waypoint'}},
        concurrency: 4,
      }),
    ])
    expect(r.get('ProxyConfig', 'app')).toMatchObject({verdict: 'inert', action: 'no-effect'})
    expect(r.get('ProxyConfig', 'wp')).toMatchObject({verdict: 'L7', action: 'keep'})
  })
  it('namespace and root defaults apply to a planned waypoint', () => {
    const objs = [
      istio('ProxyConfig', 'ns', {concurrency: 2}),
      istio('ProxyConfig', 'mesh', {concurrency: 2}, {namespace: 'istio-system'}),
    ]
    const no = run(objs)
    expect(no.get('ProxyConfig', 'ns')).toMatchObject({verdict: 'inert', action: 'no-effect'})
    expect(no.get('ProxyConfig', 'mesh', 'istio-system')).toMatchObject({verdict: 'inert', action: 'keep'})
    const yes = run(objs, {waypointPlanned: true})
    expect(yes.get('ProxyConfig', 'ns')).toMatchObject({verdict: 'L7', action: 'keep'})
  })
})

describe('Gateways (§1, §3.13, E1, E8)', () => {
  it('an Istio networking Gateway is unaffected', () => {
    const r = run([
      istio('Gateway', 'bookinfo-gateway', {
        selector: {istio: 'ingressgateway'},
        servers: [{port: {number: 80, name: 'http', protocol: 'HTTP'}, hosts: ['*']}],
      }),
    ])
    expect(r.get('Gateway', 'bookinfo-gateway')).toMatchObject({
      verdict: 'unaffected',
      action: 'keep',
      scope: 'gateway',
      ref: {apiVersion: 'networking.istio.io/v1'},
    })
  })
  it('an existing waypoint is kept; without istio.io/rev in a revisioned namespace it is flagged (E1)', () => {
    const r = run(
      [kubeGateway('waypoint', 'istio-waypoint', 'bookinfo', {labels: {'istio.io/waypoint-for': 'service'}})],
      {namespaceLabels: {'istio.io/rev': 'canary', 'istio.io/use-waypoint': 'waypoint'}},
    )
    const item = r.get('Gateway', 'waypoint')!
    expect(item).toMatchObject({verdict: 'L7', action: 'keep'})
    expect(item.reasons).toContain(
      'metadata.name: Services of bookinfo bound to it: details, productpage, ratings, reviews',
    )
    expect(r.findings.find((f) => f.id === 'E1/Gateway/bookinfo/waypoint')).toMatchObject({
      code: 'WaypointWithoutRevision',
    })
  })
  it('a class istio gateway is unaffected but its pods get captured (E8)', () => {
    const r = run([
      kubeGateway('ingress', 'istio', 'bookinfo', {listeners: [{name: 'http', port: 80, protocol: 'HTTP'}]}),
    ])
    const item = r.get('Gateway', 'ingress')!
    expect(item).toMatchObject({verdict: 'unaffected', action: 'keep'})
    expect(item.reasons.find((x) => x.startsWith('metadata.labels: '))).toMatch(/E8/)
  })
  it('a shared waypoint of another namespace must admit this namespace', () => {
    const labels = {
      'istio.io/use-waypoint': 'egress-gateway',
      'istio.io/use-waypoint-namespace': 'common-infrastructure',
    }
    const same = run([kubeGateway('egress-gateway', 'istio-waypoint', 'common-infrastructure')], {
      namespaceLabels: labels,
    })
    expect(same.get('Gateway', 'egress-gateway', 'common-infrastructure')).toMatchObject({
      verdict: 'blocker',
      action: 'blocker',
    })
    expect(same.findings.find((f) => f.code === 'SharedWaypointDeniesNamespace')).toBeDefined()
    const selector = [
      {
        name: 'mesh',
        port: 15008,
        protocol: 'HBONE',
        allowedRoutes: {
          namespaces: {from: 'Selector', selector: {matchLabels: {'kubernetes.io/metadata.name': 'bookinfo'}}},
        },
      },
    ]
    const ok = run([kubeGateway('egress-gateway', 'istio-waypoint', 'common-infrastructure', {listeners: selector})], {
      namespaceLabels: labels,
    })
    expect(ok.get('Gateway', 'egress-gateway', 'common-infrastructure')).toMatchObject({verdict: 'L7', action: 'keep'})
  })
})

describe('Gateway API routes (§3.6)', () => {
  const backend = [{backendRefs: [{name: 'reviews-v1', port: 9080}]}]
  it('a Service-parented route needs a waypoint bound to its parent', () => {
    const r = run([
      istio('HTTPRoute', 'reviews', {
        parentRefs: [{group: '', kind: 'Service', name: 'reviews', port: 9080}],
        rules: backend,
      }),
    ])
    const item = r.get('HTTPRoute', 'reviews')!
    expect(item).toMatchObject({verdict: 'L7', action: 'keep', scope: 'mesh-routing', services: ['reviews']})
    expect(item.reasons[0]).toMatch(/MissingUseWaypointLabel/)
  })
  it('a route on a waypoint parent is kept; on an ingress Gateway it is unaffected', () => {
    const r = run([
      kubeGateway('waypoint', 'istio-waypoint'),
      kubeGateway('ingress', 'istio'),
      istio('HTTPRoute', 'on-waypoint', {parentRefs: [{name: 'waypoint'}], rules: backend}),
      istio('HTTPRoute', 'on-ingress', {
        parentRefs: [{name: 'ingress'}],
        rules: [{backendRefs: [{name: 'productpage', port: 9080}]}],
      }),
    ])
    expect(r.get('HTTPRoute', 'on-waypoint')).toMatchObject({verdict: 'L7', action: 'keep'})
    const ingress = r.get('HTTPRoute', 'on-ingress')!
    expect(ingress).toMatchObject({verdict: 'unaffected', action: 'keep', scope: 'gateway', services: ['productpage']})
    expect(ingress.reasons.find((x) => x.startsWith('spec.rules: '))).toMatch(/ingress-use-waypoint/)
  })
  it("consumer routes are lost: ours for another namespace (E11), another namespace's for ours (E12)", () => {
    const r = run([
      istio('HTTPRoute', 'to-cart', {
        parentRefs: [{group: '', kind: 'Service', name: 'cart', namespace: 'shop'}],
        rules: backend,
      }),
      istio(
        'HTTPRoute',
        'to-reviews',
        {parentRefs: [{group: '', kind: 'Service', name: 'reviews', namespace: 'bookinfo'}], rules: backend},
        {namespace: 'frontend'},
      ),
    ])
    expect(r.get('HTTPRoute', 'to-cart')).toMatchObject({
      verdict: 'L7',
      action: 'lost-client-side',
      scope: 'client-side',
    })
    expect(r.get('HTTPRoute', 'to-reviews', 'frontend')).toMatchObject({
      verdict: 'L7',
      action: 'lost-client-side',
      services: ['reviews'],
    })
    expect(r.findings.map((f) => f.id)).toEqual(
      expect.arrayContaining(['E11/HTTPRoute/bookinfo/to-cart/parent-0', 'E12/HTTPRoute/frontend/to-reviews/parent-0']),
    )
  })
  it('kind Service without group defaults to the Gateway API group: not a Service parent', () => {
    const item = run([
      istio('HTTPRoute', 'httpbin', {parentRefs: [{kind: 'Service', name: 'reviews'}], rules: backend}),
    ]).get('HTTPRoute', 'httpbin')!
    expect(item).toMatchObject({verdict: 'unaffected'})
    expect(item.reasons[0]).toMatch(/group: ""/)
  })
  it('TCPRoute and TLSRoute on waypoints are Alpha; GRPCRoute is classified like HTTPRoute', () => {
    const r = run([
      istio('TCPRoute', 'tcp', {
        parentRefs: [{group: '', kind: 'Service', name: 'ratings'}],
        rules: [{backendRefs: [{name: 'ratings', port: 3306}]}],
      }),
      istio(
        'TLSRoute',
        'tls',
        {
          parentRefs: [{group: '', kind: 'Service', name: 'ratings'}],
          rules: [{backendRefs: [{name: 'ratings', port: 443}]}],
        },
        {apiVersion: 'gateway.networking.k8s.io/v1alpha3'},
      ),
      istio('GRPCRoute', 'grpc', {
        parentRefs: [{group: '', kind: 'Service', name: 'ratings'}],
        rules: [{backendRefs: [{name: 'ratings', port: 9090}]}],
      }),
    ])
    expect(r.get('TCPRoute', 'tcp')!.reasons).toContain('kind: TCPRoute on waypoints is Alpha')
    expect(r.get('TLSRoute', 'tls')).toMatchObject({verdict: 'L7', action: 'keep'})
    expect(r.get('GRPCRoute', 'grpc')).toMatchObject({verdict: 'L7', action: 'keep', services: ['ratings']})
  })
  it('a ServiceEntry parent needs the entry bound to an (egress) waypoint', () => {
    const item = run([
      istio('HTTPRoute', 'ext', {
        parentRefs: [{group: 'networking.istio.io', kind: 'ServiceEntry', name: 'httpbin-ext'}],
        rules: [{timeouts: {request: '3s'}}],
      }),
    ]).get('HTTPRoute', 'ext')!
    expect(item).toMatchObject({verdict: 'L7', action: 'keep'})
    expect(item.reasons[0]).toMatch(/not bound/)
  })
})

describe('remaining rules', () => {
  it('targetRefs Telemetry is kept', () => {
    const r = run([
      istio('Telemetry', 'tr', {targetRefs: [{kind: 'Service', group: '', name: 'ratings'}], tracing: [{}]}),
    ])
    expect(r.get('Telemetry', 'tr')).toMatchObject({
      verdict: 'L7',
      action: 'keep',
      scope: 'targetRefs',
      services: ['ratings'],
    })
  })
  it('a DYNAMIC_DNS ServiceEntry without an egress waypoint needs a person', () => {
    const r = run([
      istio('ServiceEntry', 'dyn', {hosts: ['api.example.com'], resolution: 'DYNAMIC_DNS', location: 'MESH_EXTERNAL'}),
    ])
    expect(r.get('ServiceEntry', 'dyn')).toMatchObject({verdict: 'L7', action: 'manual'})
  })
  it('an EnvoyFilter whose selector matches nothing has no effect', () => {
    const r = run([
      istio('EnvoyFilter', 'none', {
        workloadSelector: {labels: {app: 'nothing'}},
        configPatches: [{applyTo: 'CLUSTER'}],
      }),
    ])
    expect(r.get('EnvoyFilter', 'none')).toMatchObject({verdict: 'inert', action: 'no-effect'})
    expect(r.findings).toEqual([])
  })
  it('a class istio Gateway already labelled dataplane-mode none gets no capture warning', () => {
    const r = run([kubeGateway('ingress', 'istio', 'bookinfo', {labels: {'istio.io/dataplane-mode': 'none'}})])
    expect(r.get('Gateway', 'ingress')!.reasons.some((x) => x.includes('GatewayApiGatewayCaptured'))).toBe(false)
  })
  it('a mesh VirtualService naming an own Service and an external host is re-targeted; the external part is lost', () => {
    const r = run([
      istio('VirtualService', 'mixed', {
        hosts: ['reviews', 'api.example.com'],
        http: [{route: [{destination: {host: 'reviews'}}]}],
      }),
    ])
    const item = r.get('VirtualService', 'mixed')!
    expect(item).toMatchObject({verdict: 'L7', action: 'retarget', services: ['reviews']})
    expect(item.reasons).toContain(
      'spec.hosts: api.example.com: not a Service of bookinfo; client-side routing for it is lost for ambient callers (E11)',
    )
  })
  it('a VirtualService without hosts routes nothing', () => {
    expect(
      run([istio('VirtualService', 'empty', {http: [{route: [{destination: {host: 'reviews'}}]}]})]).get(
        'VirtualService',
        'empty',
      ),
    ).toMatchObject({verdict: 'inert', action: 'no-effect'})
  })
})

describe('AuthorizationPolicy on GatewayClass istio-waypoint', () => {
  const byClass = {
    targetRefs: [{kind: 'GatewayClass', group: 'gateway.networking.k8s.io', name: 'istio-waypoint'}],
    rules: [{to: [{operation: {methods: ['GET']}}]}],
  }
  it("from the root namespace it applies at this namespace's waypoints", () => {
    const r = run([istio('AuthorizationPolicy', 'all-waypoints', byClass, {namespace: 'istio-system'})], {
      waypointPlanned: true,
    })
    expect(r.get('AuthorizationPolicy', 'all-waypoints', 'istio-system')).toMatchObject({
      verdict: 'L7',
      action: 'keep',
      scope: 'targetRefs',
      services: ['details', 'productpage', 'ratings', 'reviews'],
    })
  })
  it('outside the root namespace it is invalid (not attached)', () => {
    const item = run([istio('AuthorizationPolicy', 'misplaced', byClass)]).get('AuthorizationPolicy', 'misplaced')!
    expect(item).toMatchObject({verdict: 'unaffected', action: 'keep'})
    expect(item.reasons[0]).toMatch(/only honoured for policies in the root namespace istio-system \(status Invalid\)/)
  })
})
