import {describe, expect, it} from 'vitest'
import {trafficPolicyFields} from '../../src/planner/classify/destination-rule.js'
import {classifyObjects} from '../../src/planner/classify/index.js'
import type {TrafficPolicy} from '../../src/planner/istio-types.js'
import type {KubeObject} from '../../src/planner/model.js'
import {bookinfoBase, classifyContext, deployment, istio} from './support/classify-context.js'

function dr(name: string, spec: Record<string, unknown>, namespace = 'bookinfo'): KubeObject {
  return istio('DestinationRule', name, spec, {namespace})
}

function run(objects: KubeObject[], opts: Parameters<typeof classifyContext>[1] = {}) {
  const res = classifyObjects(classifyContext([...bookinfoBase(), ...objects], opts))
  const byName = (name: string, ns = 'bookinfo') =>
    res.items.find((i) => i.ref.kind === 'DestinationRule' && i.ref.name === name && i.ref.namespace === ns)
  return {...res, byName}
}

describe('DestinationRule traffic-policy table (DOMAIN §3.5)', () => {
  it.each([
    ['connectionPool', {connectionPool: {tcp: {maxConnections: 1}}}, 'applied'],
    ['outlierDetection', {outlierDetection: {consecutive5xxErrors: 1}}, 'applied'],
    ['loadBalancer', {loadBalancer: {simple: 'ROUND_ROBIN'}}, 'applied'],
    ['tls.mode SIMPLE', {tls: {mode: 'SIMPLE'}}, 'applied'],
    ['tls.mode MUTUAL', {tls: {mode: 'MUTUAL'}}, 'applied'],
    ['tls.mode ISTIO_MUTUAL', {tls: {mode: 'ISTIO_MUTUAL'}}, 'inert'],
    ['tls.mode DISABLE', {tls: {mode: 'DISABLE'}}, 'inert'],
    ['proxyProtocol', {proxyProtocol: {version: 'V1'}}, 'applied'],
    ['tunnel', {tunnel: {protocol: 'CONNECT', targetHost: 'x', targetPort: 1}}, 'applied'],
    ['retryBudget', {retryBudget: {percent: 20}}, 'applied'],
  ])('%s is %s at the waypoint', (_name, tp, kind) => {
    const f = trafficPolicyFields(tp as TrafficPolicy, 'spec.trafficPolicy')
    expect(kind === 'applied' ? f.applied.length : f.inert.length).toBeGreaterThan(0)
    expect(kind === 'applied' ? f.inert : f.applied).toEqual([])
  })

  it('portLevelSettings are walked with their own paths', () => {
    const f = trafficPolicyFields(
      {
        tls: {mode: 'ISTIO_MUTUAL'},
        portLevelSettings: [
          {port: {number: 8000}, tls: {mode: 'DISABLE'}},
          {port: {number: 9}, connectionPool: {}},
        ],
      } as TrafficPolicy,
      'spec.trafficPolicy',
    )
    expect(f.inert.map((r) => r.split(':')[0])).toEqual([
      'spec.trafficPolicy.tls.mode',
      'spec.trafficPolicy.portLevelSettings[0].tls.mode',
    ])
    expect(f.applied.map((r) => r.split(':')[0])).toEqual(['spec.trafficPolicy.portLevelSettings[1].connectionPool'])
  })
})

describe('DestinationRule classification (DOMAIN §3.5, E11, E13)', () => {
  it('ISTIO_MUTUAL-only DR for own Services is inert, no effect', () => {
    const r = run([dr('reviews', {host: 'reviews', trafficPolicy: {tls: {mode: 'ISTIO_MUTUAL'}}})])
    expect(r.byName('reviews')).toMatchObject({verdict: 'inert', action: 'no-effect', services: ['reviews']})
    expect(r.byName('reviews')!.reasons).toContain(
      'spec.trafficPolicy.tls.mode: ISTIO_MUTUAL: ignored at waypoints and by ztunnel; mesh traffic is HBONE (mTLS) anyway',
    )
  })

  it('tls.mode DISABLE no longer disables mesh mTLS', () => {
    const r = run([
      dr('reviews', {host: 'reviews.bookinfo.svc.cluster.local', trafficPolicy: {tls: {mode: 'DISABLE'}}}),
    ])
    expect(r.byName('reviews')!.reasons.find((x) => x.startsWith('spec.trafficPolicy.tls.mode'))).toMatch(
      /no longer disables mesh mTLS/,
    )
  })

  it('connection pools and outlier detection for own Services need a waypoint: L7 keep', () => {
    const r = run([
      dr('reviews', {
        host: 'reviews',
        trafficPolicy: {connectionPool: {tcp: {maxConnections: 1}}, outlierDetection: {consecutive5xxErrors: 1}},
      }),
    ])
    expect(r.byName('reviews')).toMatchObject({verdict: 'L7', action: 'keep', services: ['reviews']})
    expect(r.byName('reviews')!.reasons.some((x) => x.startsWith('spec.trafficPolicy.connectionPool: '))).toBe(true)
  })

  it('unreferenced subsets alone have no effect; subsets used by the converted VirtualService are re-targeted', () => {
    const subsets = [
      {name: 'v1', labels: {version: 'v1'}},
      {name: 'v2', labels: {version: 'v2'}},
    ]
    expect(run([dr('reviews', {host: 'reviews', subsets})]).byName('reviews')).toMatchObject({
      verdict: 'inert',
      action: 'no-effect',
    })
    const vs = istio('VirtualService', 'reviews', {
      hosts: ['reviews'],
      http: [{route: [{destination: {host: 'reviews', subset: 'v2'}}]}],
    })
    const r = run([vs, dr('reviews', {host: 'reviews', subsets})])
    expect(r.byName('reviews')).toMatchObject({verdict: 'L7', action: 'retarget'})
    expect(r.byName('reviews')!.reasons).toContain(
      'spec.subsets[1]: subset v2: used by VirtualService bookinfo/reviews; HTTPRoute cannot reference subsets: create one Service per version',
    )
    expect(r.byName('reviews')!.reasons).toContain(
      'spec.subsets[0]: subset v1: not referenced by any mesh VirtualService — no effect',
    )
  })

  it("subsets used only by another namespace's VirtualService are kept for those sidecar clients", () => {
    const vs = istio(
      'VirtualService',
      'to-reviews',
      {
        hosts: ['reviews.bookinfo.svc.cluster.local'],
        exportTo: ['.'],
        http: [{route: [{destination: {host: 'reviews.bookinfo.svc.cluster.local', subset: 'v1'}}]}],
      },
      {namespace: 'frontend'},
    )
    const r = run([vs, dr('reviews', {host: 'reviews', subsets: [{name: 'v1', labels: {version: 'v1'}}]})])
    expect(r.byName('reviews')).toMatchObject({verdict: 'unaffected', action: 'keep'})
  })

  // Issue 21 §4. istio/istio pilot/pkg/model/sidecar.go SidecarScope.DestinationRule: a workloadSelector rule is used
  // only for outbound traffic of proxies of its own namespace whose labels it matches; push_context.go
  // setDestinationRules never exports it; waypoints resolve only rules without one (DOMAIN §3.5). Once the selected
  // pods are ambient nothing applies it: a client-side loss, reported like client-side routing (E11).
  it('a workloadSelector DR for the selected sidecars is lost client-side, with what the destination waypoint would need (sidecar.go DestinationRule)', () => {
    const r = run(
      [
        dr('client', {
          host: 'ratings',
          workloadSelector: {matchLabels: {app: 'reviews'}},
          trafficPolicy: {connectionPool: {tcp: {maxConnections: 1}}},
        }),
      ],
      {waypointPlanned: true},
    )
    const i = r.byName('client')!
    expect(i).toMatchObject({verdict: 'L7', action: 'lost-client-side', scope: 'client-side', services: ['ratings']})
    const f = r.findings.find((x) => x.code === 'SelectorDestinationRuleLost')!
    expect(f).toMatchObject({id: 'E11/DestinationRule/bookinfo/client', severity: 'error'})
    expect(f.message).toContain('outbound traffic of reviews-v1, reviews-v2 only (workloadSelector)')
    expect(f.message).toContain(
      'the waypoint this plan deploys in bookinfo would need these settings in a DestinationRule for ratings.bookinfo.svc.cluster.local without workloadSelector, in bookinfo',
    )
    expect(f.message).toContain('not only the selected ones')
  })

  it('the message names the rule the destination waypoint resolves today, which a carried rule would replace (no merging)', () => {
    const r = run(
      [
        dr('ratings', {host: 'ratings', trafficPolicy: {outlierDetection: {consecutive5xxErrors: 5}}}),
        dr('client', {
          host: 'ratings',
          workloadSelector: {matchLabels: {app: 'reviews'}},
          trafficPolicy: {connectionPool: {tcp: {maxConnections: 1}}},
        }),
      ],
      {waypointPlanned: true},
    )
    const f = r.findings.find((x) => x.code === 'SelectorDestinationRuleLost')!
    expect(f.message).toContain('it resolves DestinationRule bookinfo/ratings today')
  })

  it('carried when the destination waypoint resolves a rule with the same settings: unaffected, no finding', () => {
    const tp = {connectionPool: {tcp: {maxConnections: 1}}}
    const r = run(
      [
        dr('ratings', {host: 'ratings', trafficPolicy: tp}),
        dr('client', {host: 'ratings', workloadSelector: {matchLabels: {app: 'reviews'}}, trafficPolicy: tp}),
      ],
      {waypointPlanned: true},
    )
    expect(r.byName('client')).toMatchObject({verdict: 'unaffected', action: 'keep'})
    expect(r.byName('client')!.reasons.join('\n')).toContain(
      'carried: the waypoint this plan deploys in bookinfo resolves',
    )
    expect(r.findings.some((x) => x.code === 'SelectorDestinationRuleLost')).toBe(false)
  })

  it("a destination without a waypoint needs one: the message says so (another namespace's Service)", () => {
    const r = run([
      dr('client', {
        host: 'api.backend.svc.cluster.local',
        workloadSelector: {matchLabels: {app: 'reviews'}},
        trafficPolicy: {tls: {mode: 'SIMPLE'}},
      }),
    ])
    expect(r.byName('client')).toMatchObject({verdict: 'L7', action: 'lost-client-side'})
    const f = r.findings.find((x) => x.code === 'SelectorDestinationRuleLost')!
    expect(f.message).toContain(
      'api.backend.svc.cluster.local has no waypoint: it would need one (istio.io/use-waypoint',
    )
  })

  it('only inert settings (ISTIO_MUTUAL), a selector matching no pod, or only gateways: nothing lost', () => {
    const r = run([
      deployment('ingress', {istio: 'ingressgateway'}),
      dr('mtls', {
        host: 'ratings',
        workloadSelector: {matchLabels: {app: 'reviews'}},
        trafficPolicy: {tls: {mode: 'ISTIO_MUTUAL'}},
      }),
      dr('nobody', {
        host: 'ratings',
        workloadSelector: {matchLabels: {app: 'none'}},
        trafficPolicy: {connectionPool: {}},
      }),
      dr('gw', {
        host: 'ratings',
        workloadSelector: {matchLabels: {istio: 'ingressgateway'}},
        trafficPolicy: {connectionPool: {}},
      }),
    ])
    expect(r.byName('mtls')).toMatchObject({verdict: 'inert', action: 'no-effect'})
    expect(r.byName('nobody')).toMatchObject({verdict: 'inert', action: 'no-effect'})
    expect(r.byName('gw')).toMatchObject({verdict: 'unaffected', action: 'keep'})
    expect(r.findings.some((x) => x.code === 'SelectorDestinationRuleLost')).toBe(false)
  })

  it('a workloadSelector DR of another namespace never applies here (push_context.go: not exported)', () => {
    const r = run([
      dr(
        'other',
        {
          host: 'ratings.bookinfo.svc.cluster.local',
          workloadSelector: {matchLabels: {app: 'x'}},
          trafficPolicy: {connectionPool: {}},
        },
        'frontend',
      ),
    ])
    expect(r.byName('other', 'frontend')).toBeUndefined()
  })

  it('a root-namespace DR for our hosts is what the waypoint resolves when no closer DR exists (E13)', () => {
    const root = dr(
      'mesh-pools',
      {host: '*.local', trafficPolicy: {connectionPool: {http: {http1MaxPendingRequests: 10}}}},
      'istio-system',
    )
    const r = run([root])
    expect(r.byName('mesh-pools', 'istio-system')).toMatchObject({
      verdict: 'L7',
      action: 'keep',
      services: ['details', 'productpage', 'ratings', 'reviews'],
    })
    const shadowed = run([root, dr('reviews', {host: 'reviews', trafficPolicy: {tls: {mode: 'ISTIO_MUTUAL'}}})])
    const item = shadowed.byName('mesh-pools', 'istio-system')!
    expect(item.services).toEqual(['details', 'productpage', 'ratings'])
    expect(item.reasons).toContain(
      'spec.host: not used for reviews: the waypoint resolves DestinationRule bookinfo/reviews first (DRs are not merged across namespaces, E13)',
    )
  })

  it('a DR in a third namespace for our hosts is never used by our waypoint (E13)', () => {
    const r = run([
      dr(
        'reviews-pools',
        {host: 'reviews.bookinfo.svc.cluster.local', exportTo: ['.'], trafficPolicy: {outlierDetection: {}}},
        'frontend',
      ),
    ])
    expect(r.byName('reviews-pools', 'frontend')).toMatchObject({
      verdict: 'L7',
      action: 'lost-client-side',
      scope: 'client-side',
    })
    expect(r.findings.find((f) => f.id === 'E13/DestinationRule/frontend/reviews-pools')).toMatchObject({
      code: 'DestinationRuleNotUsedByWaypoint',
      severity: 'error',
    })
  })

  it('TLS origination for an external host is lost for ambient clients (E11)', () => {
    const r = run([dr('originate-tls', {host: 'www.googleapis.com', trafficPolicy: {tls: {mode: 'SIMPLE'}}})])
    expect(r.byName('originate-tls')).toMatchObject({verdict: 'L7', action: 'lost-client-side', scope: 'client-side'})
    const f = r.findings.find((x) => x.id === 'E11/DestinationRule/bookinfo/originate-tls')!
    expect(f.message).toMatch(/TLS origination/)
  })

  it('TLS origination next to a ServiceEntry bound to an egress waypoint is applied there', () => {
    const se = istio(
      'ServiceEntry',
      'httpbin-org',
      {
        hosts: ['httpbin.org'],
        ports: [{number: 80, name: 'http', protocol: 'HTTP', targetPort: 443}],
        resolution: 'DNS',
      },
      {namespace: 'istio-egress', labels: {'istio.io/use-waypoint': 'waypoint'}},
    )
    const r = run([
      se,
      dr('httpbin-org-tls', {host: 'httpbin.org', trafficPolicy: {tls: {mode: 'SIMPLE'}}}, 'istio-egress'),
    ])
    expect(r.byName('httpbin-org-tls', 'istio-egress')).toMatchObject({verdict: 'unaffected', action: 'keep'})
  })

  it('a client-side DR with only ISTIO_MUTUAL is inert', () => {
    const r = run([
      dr('httpbin', {host: 'httpbin.foo.svc.cluster.local', trafficPolicy: {tls: {mode: 'ISTIO_MUTUAL'}}}),
    ])
    expect(r.byName('httpbin')).toMatchObject({verdict: 'inert', action: 'no-effect', scope: 'client-side'})
  })

  it('DRs of other namespaces not exported here and not about our hosts are skipped', () => {
    const r = run([dr('private', {host: 'cart', exportTo: ['.'], trafficPolicy: {connectionPool: {}}}, 'shop')])
    expect(r.byName('private', 'shop')).toBeUndefined()
  })
})
