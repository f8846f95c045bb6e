// VirtualService → HTTPRoute conversion rules (src/planner/routes.ts and src/planner/routes/*).
import {describe, expect, it} from 'vitest'
import type {KubeObject} from '../../src/planner/model.js'
import {CONVERTED_FROM_ANNOTATION, convertVirtualServices, type RouteConversion} from '../../src/planner/routes.js'
import {comparePrecedence, mayOverlap, precedenceConflicts, prefixCovers} from '../../src/planner/routes/precedence.js'
import {gatewayDuration, mirrorShare, parseGoDuration} from '../../src/planner/routes/values.js'

const NS = 'shop'

function service(name: string, spec: Record<string, unknown> = {}, metadata: Record<string, unknown> = {}): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {name, namespace: NS, ...metadata},
    spec: {selector: {app: name}, ports: [{name: 'http', port: 9080}], ...spec},
  }
}

const SERVICES: KubeObject[] = [
  service('reviews'),
  service('ratings'),
  service('api', {
    ports: [
      {name: 'http', port: 8080, targetPort: 8080},
      {name: 'grpc', port: 9090, appProtocol: 'grpc'},
    ],
  }),
  service('db', {ports: [{name: 'mysql', port: 3306}]}),
  service('headless', {clusterIP: 'None'}),
  service('external', {type: 'ExternalName', externalName: 'example.com', selector: undefined}),
  service('manual', {selector: undefined}),
]

function destinationRule(
  name: string,
  host: string,
  subsets: {name: string; labels: Record<string, string>; trafficPolicy?: unknown}[],
  extra: Record<string, unknown> = {},
  namespace = NS,
): KubeObject {
  return {
    apiVersion: 'networking.istio.io/v1',
    kind: 'DestinationRule',
    metadata: {name, namespace},
    spec: {host, subsets, ...extra},
  }
}

const RULES: KubeObject[] = [
  destinationRule('reviews', 'reviews', [
    {name: 'v1', labels: {version: 'v1'}},
    {name: 'v2', labels: {version: 'v2'}},
  ]),
  destinationRule('api', 'api.shop.svc.cluster.local', [{name: 'canary', labels: {track: 'canary'}}]),
]

function virtualService(
  name: string,
  spec: Record<string, unknown>,
  metadata: Record<string, unknown> = {},
): KubeObject {
  return {
    apiVersion: 'networking.istio.io/v1',
    kind: 'VirtualService',
    metadata: {name, namespace: NS, ...metadata},
    spec,
  }
}

/** A VirtualService for `reviews` with one http entry. */
function oneRoute(http: Record<string, unknown>, extra: Record<string, unknown> = {}, name = 'reviews'): KubeObject {
  return virtualService(name, {hosts: ['reviews'], http: [http], ...extra})
}

const toReviews = {route: [{destination: {host: 'reviews'}}]}

function run(vss: KubeObject[], opts: {services?: KubeObject[]; rules?: KubeObject[]} = {}): RouteConversion {
  return convertVirtualServices({
    namespace: NS,
    virtualServices: vss,
    destinationRules: opts.rules ?? RULES,
    services: opts.services ?? SERVICES,
  })
}

function onlyRoute(out: RouteConversion): KubeObject {
  expect(out.kept).toEqual([])
  expect(out.httpRoutes).toHaveLength(1)
  return out.httpRoutes[0]!
}

function rules(out: RouteConversion): any[] {
  return onlyRoute(out).spec.rules
}

function keptReasons(out: RouteConversion): string[] {
  expect(out.httpRoutes).toEqual([])
  expect(out.converted).toEqual([])
  expect(out.kept).toHaveLength(1)
  return out.kept[0]!.reasons
}

function codes(out: RouteConversion): string[] {
  return out.findings.map((f) => f.code)
}

describe('hosts', () => {
  it.each([
    ['reviews', false],
    [`reviews.${NS}`, true],
    [`reviews.${NS}.svc`, true],
    [`reviews.${NS}.svc.cluster.local`, false],
    ['REVIEWS', false],
  ])('%s names Service reviews', (host, partial) => {
    const out = run([virtualService('r', {hosts: [host], http: [toReviews]})])
    expect(onlyRoute(out).spec.parentRefs).toEqual([{group: '', kind: 'Service', name: 'reviews', port: 9080}])
    expect(codes(out).includes('HTTPRoutePartialHost')).toBe(partial)
  })

  it.each([
    ['reviews.other.svc.cluster.local', /is not a Service of shop/],
    ['reviews.other', /is not a Service of shop/],
    [`reviews.${NS}.svc.example.org`, /is not a Service of shop/],
    ['api.example.com', /is not a Service of shop/],
    ['nosuch', /is not a Service of shop/],
    [`*.${NS}.svc.cluster.local`, /wildcard host/],
    ['*', /wildcard host/],
    ['headless', /headless/],
    ['external', /ExternalName/],
  ])('%s cannot be a Service parent: kept', (host, why) => {
    const reasons = keptReasons(run([virtualService('r', {hosts: [host], http: [toReviews]})]))
    expect(reasons.some((r) => r.startsWith('spec.hosts[0]: ') && why.test(r))).toBe(true)
  })

  it('a VirtualService with several hosts gets one route per Service, named after both', () => {
    const out = run([
      virtualService('multi', {hosts: ['reviews', 'ratings', `reviews.${NS}.svc.cluster.local`], http: [toReviews]}),
    ])
    expect(out.httpRoutes.map((r) => [r.metadata.name, r.spec.parentRefs[0].name])).toEqual([
      ['multi-ratings', 'ratings'],
      ['multi-reviews', 'reviews'],
    ])
    expect(out.converted.map((r) => r.name)).toEqual(['multi'])
  })

  it('one bad host keeps the whole VirtualService (never half converted)', () => {
    const reasons = keptReasons(
      run([virtualService('multi', {hosts: ['reviews', 'api.example.com'], http: [toReviews]})]),
    )
    expect(reasons).toEqual([
      'spec.hosts[1]: api.example.com is not a Service of shop (another namespace, a ServiceEntry host or an external name): it cannot be a Service parentRef here',
    ])
  })

  it('two VirtualServices for one Service are both kept (IST0109: sidecars use one, waypoints merge)', () => {
    const out = run([
      oneRoute(toReviews, {}, 'a'),
      virtualService('b', {hosts: [`reviews.${NS}.svc.cluster.local`], http: [toReviews]}),
      oneRoute(toReviews, {hosts: ['ratings']}, 'c'),
    ])
    expect(out.kept.map((k) => k.ref.name)).toEqual(['a', 'b'])
    expect(out.kept[0]!.reasons[0]).toMatch(/also a host of VirtualService\(s\) b/)
    expect(out.converted.map((r) => r.name)).toEqual(['c'])
  })

  it('gateways: mesh only converts; mesh plus a gateway, or a gateway only, is kept', () => {
    expect(run([oneRoute(toReviews, {gateways: ['mesh']})]).converted).toHaveLength(1)
    expect(keptReasons(run([oneRoute(toReviews, {gateways: ['mesh', 'istio-system/ingress']})]))[0]).toMatch(
      /^spec\.gateways: also bound to gateway\(s\) istio-system\/ingress/,
    )
    expect(keptReasons(run([oneRoute(toReviews, {gateways: ['ingress']})]))[0]).toMatch(
      /^spec\.gateways: bound to gateway\(s\) ingress only/,
    )
  })

  it('no hosts (a delegate VirtualService), tcp and tls sections are kept', () => {
    expect(keptReasons(run([virtualService('d', {http: [toReviews]})]))[0]).toMatch(
      /^spec\.hosts: no hosts: a delegate/,
    )
    // issue 10 point 7: tcp/tls routes are TCPRoute/TLSRoute material, never HTTPRoute (DOMAIN §3.4, §3.6).
    expect(keptReasons(run([oneRoute(toReviews, {tcp: [{route: [{destination: {host: 'reviews'}}]}]})]))).toEqual([
      'spec.tcp: tcp routes: their Gateway API form is TCPRoute (Alpha, experimental channel), not HTTPRoute, which is all --routes httproute writes; the waypoint applies them from the VirtualService',
    ])
    expect(
      keptReasons(
        run([
          oneRoute(toReviews, {tls: [{match: [{sniHosts: ['reviews']}], route: [{destination: {host: 'reviews'}}]}]}),
        ]),
      )[0],
    ).toMatch(/^spec\.tls: tls routes: their Gateway API form is TLSRoute/)
  })

  it('exportTo narrower than "*" is reported: a Service-parented HTTPRoute serves every namespace', () => {
    const narrow = run([oneRoute(toReviews, {exportTo: ['.']})])
    expect(narrow.converted).toHaveLength(1)
    expect(narrow.findings.find((f) => f.code === 'HTTPRouteWiderAudience')?.message).toMatch(/callers in shop/)
    expect(codes(run([oneRoute(toReviews, {exportTo: ['*']})]))).not.toContain('HTTPRouteWiderAudience')
    expect(codes(run([oneRoute(toReviews)]))).not.toContain('HTTPRouteWiderAudience')
  })
})

describe('parentRef port and backend ports', () => {
  it('single-port Service: the parentRef names the port (as the istio.io example does)', () => {
    expect(onlyRoute(run([oneRoute(toReviews)])).spec.parentRefs).toEqual([
      {group: '', kind: 'Service', name: 'reviews', port: 9080},
    ])
  })

  it('multi-port Service, same rules on every port: one route without port', () => {
    const out = run([
      virtualService('api', {hosts: ['api'], http: [{route: [{destination: {host: 'api', port: {number: 8080}}}]}]}),
    ])
    const route = onlyRoute(out)
    expect(route.metadata.name).toBe('api')
    expect(route.spec.parentRefs).toEqual([{group: '', kind: 'Service', name: 'api'}])
    expect(route.spec.rules).toEqual([{backendRefs: [{name: 'api', port: 8080, weight: 1}]}])
  })

  it('multi-port Service, destination without port: one route per port, each to the port of the request', () => {
    const out = run([virtualService('api', {hosts: ['api'], http: [{route: [{destination: {host: 'api'}}]}]})])
    expect(
      out.httpRoutes.map((r) => [r.metadata.name, r.spec.parentRefs[0].port, r.spec.rules[0].backendRefs[0].port]),
    ).toEqual([
      ['api-8080', 8080, 8080],
      ['api-9090', 9090, 9090],
    ])
    expect(codes(out)).toContain('HTTPRoutePerPort')
  })

  it('a match port restricts its rule to that port', () => {
    const out = run([
      virtualService('api', {
        hosts: ['api'],
        http: [
          {match: [{port: 9090, uri: {prefix: '/admin'}}], route: [{destination: {host: 'api', port: {number: 9090}}}]},
          {route: [{destination: {host: 'api', port: {number: 8080}}}]},
        ],
      }),
    ])
    const byPort = Object.fromEntries(out.httpRoutes.map((r) => [r.spec.parentRefs[0].port, r.spec.rules]))
    expect(byPort[8080]).toEqual([{backendRefs: [{name: 'api', port: 8080, weight: 1}]}])
    expect(byPort[9090]).toEqual([
      {matches: [{path: {type: 'PathPrefix', value: '/admin'}}], backendRefs: [{name: 'api', port: 9090, weight: 1}]},
      {backendRefs: [{name: 'api', port: 8080, weight: 1}]},
    ])
  })

  it('a match on a port that is not an HTTP port never applied: dropped and reported', () => {
    const out = run([
      oneRoute({match: [{port: 7777}], route: [{destination: {host: 'ratings'}}]}),
      oneRoute(toReviews, {hosts: ['ratings']}, 'ratings'),
    ])
    expect(out.kept.map((k) => k.reasons)).toEqual([
      ['spec.hosts[0]: no http route applies to any HTTP port of Service reviews'],
    ])
    expect(
      codes(
        run([
          virtualService('r', {
            hosts: ['reviews'],
            http: [{match: [{port: 7777}], route: [{destination: {host: 'ratings'}}]}, toReviews],
          }),
        ]),
      ),
    ).toContain('HTTPRouteMatchNeverApplied')
  })

  it('a Service without HTTP port (Istio protocol TCP) is kept', () => {
    expect(
      keptReasons(run([virtualService('db', {hosts: ['db'], http: [{route: [{destination: {host: 'db'}}]}]})]))[0],
    ).toMatch(/has no port Istio treats as HTTP/)
  })

  it('destination port: explicit, else the single port, else the request port; a missing port is kept', () => {
    const single = run([oneRoute({route: [{destination: {host: 'ratings'}}]})])
    expect(rules(single)[0].backendRefs).toEqual([{name: 'ratings', port: 9080, weight: 1}])
    // reviews (9080) → api (8080, 9090) without a port: 9080 is no port of api.
    expect(keptReasons(run([oneRoute({route: [{destination: {host: 'api'}}]})]))[0]).toMatch(
      /^spec\.http\[0\]\.route\[0\]\.destination\.port: Service api has several ports and none is 9080/,
    )
    expect(keptReasons(run([oneRoute({route: [{destination: {host: 'reviews', port: {number: 1234}}}]})]))).toEqual([
      'spec.http[0].route[0].destination.port: Service reviews has no port 1234',
    ])
  })

  it('destinations outside the namespace or of type ExternalName are kept', () => {
    expect(
      keptReasons(run([oneRoute({route: [{destination: {host: 'reviews.other.svc.cluster.local'}}]})]))[0],
    ).toMatch(/needs a ReferenceGrant/)
    expect(keptReasons(run([oneRoute({route: [{destination: {host: 'external'}}]})]))[0]).toMatch(/ExternalName/)
  })
})

describe('weights', () => {
  it.each([
    ['single, unweighted', [{destination: {host: 'reviews'}}], [1]],
    ['single, weight 0 (Istio still sends everything)', [{destination: {host: 'reviews'}, weight: 0}], [1]],
    ['single, weight 100', [{destination: {host: 'reviews'}, weight: 100}], [100]],
    [
      '90/10',
      [
        {destination: {host: 'reviews', subset: 'v1'}, weight: 90},
        {destination: {host: 'reviews', subset: 'v2'}, weight: 10},
      ],
      [90, 10],
    ],
    [
      '100 and an unweighted one (which gets nothing)',
      [{destination: {host: 'reviews', subset: 'v1'}, weight: 100}, {destination: {host: 'reviews', subset: 'v2'}}],
      [100, 0],
    ],
  ])('%s', (_name, route, weights) => {
    expect(rules(run([oneRoute({route})]))[0].backendRefs.map((b: {weight: number}) => b.weight)).toEqual(weights)
  })

  it('several destinations without weights are invalid Istio: kept', () => {
    const reasons = keptReasons(
      run([
        oneRoute({
          route: [{destination: {host: 'reviews', subset: 'v1'}}, {destination: {host: 'reviews', subset: 'v2'}}],
        }),
      ]),
    )
    expect(reasons).toEqual([
      'spec.http[0].route: 2 destinations without weights: invalid in Istio ("total destination weight = 0"), nothing to convert',
    ])
  })
})

describe('subsets and version Services', () => {
  it('a subset becomes Service <svc>-<subset>: selector plus subset labels, same ports, managed and annotated', () => {
    const api = service(
      'api',
      {
        ports: [
          {name: 'http', port: 8080, targetPort: 'web', protocol: 'TCP'},
          {name: 'grpc', port: 9090, appProtocol: 'grpc'},
        ],
        trafficDistribution: 'PreferClose',
        sessionAffinity: 'ClientIP',
      },
      {annotations: {'networking.istio.io/traffic-distribution': 'PreferClose', other: 'x'}},
    )
    const out = run(
      [
        virtualService('api', {
          hosts: ['api'],
          http: [{route: [{destination: {host: 'api', subset: 'canary', port: {number: 8080}}}]}],
        }),
      ],
      {services: [api]},
    )
    expect(out.versionServices).toEqual([
      {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: {
          name: 'api-canary',
          namespace: NS,
          labels: {'app.kubernetes.io/managed-by': 'mesh-migrate'},
          annotations: {[CONVERTED_FROM_ANNOTATION]: 'api', 'networking.istio.io/traffic-distribution': 'PreferClose'},
        },
        spec: {
          selector: {app: 'api', track: 'canary'},
          ports: [
            {name: 'http', port: 8080, targetPort: 'web', protocol: 'TCP'},
            {name: 'grpc', port: 9090, appProtocol: 'grpc'},
          ],
          trafficDistribution: 'PreferClose',
        },
      },
    ])
    expect(onlyRoute(out).spec.rules[0].backendRefs).toEqual([{name: 'api-canary', port: 8080, weight: 1}])
  })

  it('an unknown subset keeps the VirtualService and is an error finding', () => {
    const out = run([oneRoute({route: [{destination: {host: 'reviews', subset: 'v9'}}]})])
    expect(keptReasons(out)).toEqual([
      'spec.http[0].route[0].destination.subset: no DestinationRule defines subset v9 for reviews: no version Service can stand for it',
    ])
    expect(out.findings.map((f) => [f.code, f.severity])).toEqual([
      ['VirtualServiceKept', 'warning'],
      ['VirtualServiceSubsetUnknown', 'error'],
    ])
  })

  it('DestinationRules: workloadSelector ones are ignored, the Service namespace wins over others', () => {
    const rulesIn = [
      destinationRule('sel', 'reviews', [{name: 'v1', labels: {version: 'from-selector-rule'}}], {
        workloadSelector: {matchLabels: {app: 'x'}},
      }),
      destinationRule(
        'root',
        `reviews.${NS}.svc.cluster.local`,
        [{name: 'v1', labels: {version: 'from-root'}}],
        {},
        'istio-system',
      ),
      destinationRule('local', 'reviews', [{name: 'v1', labels: {version: 'local'}}]),
    ]
    const out = run([oneRoute({route: [{destination: {host: 'reviews', subset: 'v1'}}]})], {rules: rulesIn})
    expect(out.versionServices[0]!.spec.selector).toEqual({app: 'reviews', version: 'local'})
    const onlyRoot = run([oneRoute({route: [{destination: {host: 'reviews', subset: 'v1'}}]})], {
      rules: rulesIn.slice(0, 2),
    })
    expect(onlyRoot.versionServices[0]!.spec.selector).toEqual({app: 'reviews', version: 'from-root'})
  })

  it("the DestinationRule's traffic policy does not follow traffic to a version Service: warning", () => {
    const withPolicy = [
      destinationRule('reviews', 'reviews', [{name: 'v1', labels: {version: 'v1'}}], {
        trafficPolicy: {loadBalancer: {simple: 'RANDOM'}},
      }),
    ]
    const out = run([oneRoute({route: [{destination: {host: 'reviews', subset: 'v1'}}]})], {rules: withPolicy})
    expect(out.converted).toHaveLength(1)
    expect(out.findings.find((f) => f.code === 'HTTPRouteVersionServiceTrafficPolicy')).toMatchObject({
      severity: 'warning',
      fix: expect.stringMatching(/DestinationRule for host reviews-v1/),
    })
    expect(codes(run([oneRoute({route: [{destination: {host: 'reviews', subset: 'v1'}}]})]))).not.toContain(
      'HTTPRouteVersionServiceTrafficPolicy',
    )
  })

  it('an equivalent existing Service is reused; a different one with that name keeps the VirtualService', () => {
    const existing = service('reviews-v1', {selector: {app: 'reviews', version: 'v1'}})
    const reused = run([oneRoute({route: [{destination: {host: 'reviews', subset: 'v1'}}]})], {
      services: [...SERVICES, existing],
    })
    expect(reused.versionServices).toEqual([])
    expect(rules(reused)[0].backendRefs[0].name).toBe('reviews-v1')
    expect(codes(reused)).toContain('HTTPRouteVersionServiceExists')
    const other = service('reviews-v1', {selector: {app: 'something-else'}})
    expect(
      keptReasons(
        run([oneRoute({route: [{destination: {host: 'reviews', subset: 'v1'}}]})], {services: [...SERVICES, other]}),
      )[0],
    ).toMatch(
      /^spec\.http\[0\]\.route\[0\]\.destination\.subset: Service reviews-v1 already exists and does not select exactly app=reviews,version=v1/,
    )
    const otherTarget = service('reviews-v1', {
      selector: {app: 'reviews', version: 'v1'},
      ports: [{port: 9080, targetPort: 8080}],
    })
    expect(
      run([oneRoute({route: [{destination: {host: 'reviews', subset: 'v1'}}]})], {services: [...SERVICES, otherTarget]})
        .kept,
    ).toHaveLength(1)
  })

  it('a Service without selector, or subset labels contradicting it, cannot get version Services', () => {
    const rulesIn = [
      destinationRule('manual', 'manual', [{name: 'v1', labels: {version: 'v1'}}]),
      destinationRule('reviews', 'reviews', [{name: 'odd', labels: {app: 'other'}}]),
    ]
    expect(
      keptReasons(run([oneRoute({route: [{destination: {host: 'manual', subset: 'v1'}}]})], {rules: rulesIn}))[0],
    ).toMatch(/has no selector/)
    expect(
      keptReasons(run([oneRoute({route: [{destination: {host: 'reviews', subset: 'odd'}}]})], {rules: rulesIn}))[0],
    ).toMatch(/contradicts Service reviews's selector app=reviews/)
  })

  it('a version Service needed by two VirtualServices is created once, annotated with both', () => {
    const out = run([
      oneRoute({route: [{destination: {host: 'reviews', subset: 'v1'}}]}, {}, 'b'),
      oneRoute({route: [{destination: {host: 'reviews', subset: 'v1'}}]}, {hosts: ['ratings']}, 'a'),
    ])
    expect(
      out.versionServices.map((s) => [s.metadata.name, s.metadata.annotations![CONVERTED_FROM_ANNOTATION]]),
    ).toEqual([['reviews-v1', 'a,b']])
  })

  it('two subsets whose version Service names coincide keep the VirtualService', () => {
    const services = [...SERVICES, service('a'), service('a-b')]
    const rulesIn = [
      destinationRule('a', 'a', [{name: 'b-c', labels: {v: '1'}}]),
      destinationRule('a-b', 'a-b', [{name: 'c', labels: {v: '2'}}]),
    ]
    const http = {
      route: [
        {destination: {host: 'a', subset: 'b-c'}, weight: 50},
        {destination: {host: 'a-b', subset: 'c'}, weight: 50},
      ],
    }
    expect(keptReasons(run([virtualService('x', {hosts: ['a'], http: [http]})], {services, rules: rulesIn}))).toEqual([
      'spec.http[0].route[1].destination.subset: version Service name a-b-c is also needed for a subset b-c',
    ])
    // Across VirtualServices: the first (by name) gets the name, the second is kept.
    const out = run(
      [
        virtualService('x', {hosts: ['a'], http: [{route: [http.route[0]]}]}),
        virtualService('y', {hosts: ['a-b'], http: [{route: [http.route[1]]}]}),
      ],
      {services, rules: rulesIn},
    )
    expect(out.converted.map((r) => r.name)).toEqual(['x'])
    expect(out.kept.map((k) => k.reasons)).toEqual([
      ['spec.http[0].route[0].destination.subset: version Service name a-b-c is also needed for a subset b-c'],
    ])
  })

  it('a kept VirtualService contributes no version Service', () => {
    const out = run([
      virtualService('reviews', {
        hosts: ['reviews'],
        http: [
          {match: [{headers: {x: {exact: '1'}}}], route: [{destination: {host: 'reviews', subset: 'v2'}}]},
          {fault: {abort: {httpStatus: 500}}, route: [{destination: {host: 'reviews', subset: 'v1'}}]},
        ],
      }),
    ])
    expect(keptReasons(out)).toEqual(['spec.http[1].fault: fault injection (delay/abort): Gateway API has none'])
    expect(out.versionServices).toEqual([])
  })
})

describe('matches', () => {
  it.each([
    ['uri exact', {uri: {exact: '/a'}}, {path: {type: 'Exact', value: '/a'}}],
    ['uri prefix', {uri: {prefix: '/a'}}, {path: {type: 'PathPrefix', value: '/a'}}],
    ['uri regex', {uri: {regex: '/a/[0-9]+'}}, {path: {type: 'RegularExpression', value: '/a/[0-9]+'}}],
    [
      'header exact',
      {headers: {'end-user': {exact: 'jason'}}},
      {headers: [{name: 'end-user', type: 'Exact', value: 'jason'}]},
    ],
    [
      'header regex',
      {headers: {'x-v': {regex: 'v[12]'}}},
      {headers: [{name: 'x-v', type: 'RegularExpression', value: 'v[12]'}]},
    ],
    [
      'header prefix → regex',
      {headers: {'x-v': {prefix: 'a.b*'}}},
      {headers: [{name: 'x-v', type: 'RegularExpression', value: 'a\\.b\\*.*'}]},
    ],
    [
      'header presence → regex',
      {headers: {'x-v': {}}},
      {headers: [{name: 'x-v', type: 'RegularExpression', value: '.*'}]},
    ],
    [
      'header exact empty → regex',
      {headers: {'x-v': {exact: ''}}},
      {headers: [{name: 'x-v', type: 'RegularExpression', value: '^$'}]},
    ],
    [
      'query exact and regex',
      {queryParams: {b: {regex: '[0-9]+'}, a: {exact: '1'}}},
      {
        queryParams: [
          {name: 'a', type: 'Exact', value: '1'},
          {name: 'b', type: 'RegularExpression', value: '[0-9]+'},
        ],
      },
    ],
    ['method', {method: {exact: 'GET'}}, {method: 'GET'}],
    [
      'everything at once',
      {
        uri: {exact: '/a'},
        method: {exact: 'POST'},
        headers: {h: {exact: 'v'}},
        queryParams: {q: {exact: 'x'}},
        name: 'm1',
      },
      {
        path: {type: 'Exact', value: '/a'},
        method: 'POST',
        headers: [{name: 'h', type: 'Exact', value: 'v'}],
        queryParams: [{name: 'q', type: 'Exact', value: 'x'}],
      },
    ],
  ])('%s', (_name, match, expected) => {
    expect(rules(run([oneRoute({match: [match], ...toReviews})]))[0].matches).toEqual([expected])
  })

  it('several match entries (OR) become several matches of one rule', () => {
    expect(
      rules(run([oneRoute({match: [{uri: {exact: '/a'}}, {headers: {x: {exact: '1'}}}], ...toReviews})]))[0].matches,
    ).toEqual([{path: {type: 'Exact', value: '/a'}}, {headers: [{name: 'x', type: 'Exact', value: '1'}]}])
  })

  it('an empty match entry, or no match, is a rule without matches', () => {
    expect(rules(run([oneRoute({match: [{}], ...toReviews})]))).toEqual([
      {backendRefs: [{name: 'reviews', port: 9080, weight: 1}]},
    ])
    expect(rules(run([oneRoute({match: [], ...toReviews})]))).toEqual([
      {backendRefs: [{name: 'reviews', port: 9080, weight: 1}]},
    ])
  })

  it('PathPrefix semantics: "/a" no longer matches "/ab", "/a/" now also matches "/a"; "/" is the same', () => {
    const noSlash = run([oneRoute({match: [{uri: {prefix: '/a'}}], ...toReviews})])
    expect(noSlash.findings.find((f) => f.code === 'HTTPRoutePathPrefixSemantics')).toMatchObject({
      severity: 'warning',
      message: expect.stringMatching(/"\/ax"/),
    })
    const slash = run([oneRoute({match: [{uri: {prefix: '/a/'}}], ...toReviews})])
    expect(slash.findings.find((f) => f.code === 'HTTPRoutePathPrefixSemantics')?.message).toMatch(
      /also matches "\/a" itself/,
    )
    expect(codes(run([oneRoute({match: [{uri: {prefix: '/'}}], ...toReviews})]))).not.toContain(
      'HTTPRoutePathPrefixSemantics',
    )
  })

  it('a header prefix converted to a regular expression is reported (info)', () => {
    expect(
      run([oneRoute({match: [{headers: {x: {prefix: 'a'}}}], ...toReviews})]).findings.find(
        (f) => f.code === 'HTTPRouteHeaderPrefixAsRegex',
      )?.severity,
    ).toBe('info')
  })

  it.each([
    [
      'uri without slash',
      {uri: {exact: 'a'}},
      /^spec\.http\[0\]\.match\[0\]\.uri: exact "a" is not a valid HTTPRoute path: must be an absolute path/,
    ],
    ['uri with //', {uri: {prefix: '/a//b'}}, /must not contain "\/\/"/],
    ['uri with #', {uri: {exact: '/a#b'}}, /must not contain "#"/],
    ['uri ending /..', {uri: {prefix: '/a/..'}}, /must not end with "\/\.\."/],
    ['uri with a space', {uri: {exact: '/a b'}}, /outside RFC 3986/],
    ['ignoreUriCase', {uri: {prefix: '/a'}, ignoreUriCase: true}, /ignoreUriCase: case-insensitive URI match/],
    ['header pseudo name', {headers: {':authority': {exact: 'x'}}}, /header name ":authority" is not an HTTP token/],
    ['headers differing by case', {headers: {'X-A': {exact: '1'}, 'x-a': {exact: '2'}}}, /matched twice/],
    ['query prefix', {queryParams: {q: {prefix: 'a'}}}, /query parameter prefix match/],
    ['query presence', {queryParams: {q: {}}}, /presence match/],
    ['method regex', {method: {regex: 'GET|POST'}}, /method match/],
    ['method outside the enum', {method: {exact: 'PURGE'}}, /method match/],
    ['withoutHeaders', {withoutHeaders: {x: {exact: '1'}}}, /withoutHeaders: negative header match/],
    [
      'sourceLabels',
      {sourceLabels: {app: 'productpage'}},
      /sourceLabels: source label match: Gateway API has none, and waypoints drop it.*DOMAIN §3\.4/,
    ],
    ['sourceNamespace', {sourceNamespace: 'web'}, /sourceNamespace: source namespace match/],
    ['match gateways without mesh', {gateways: ['ingress']}, /gateways: match restricted to gateways ingress/],
    ['authority', {authority: {exact: 'reviews:9080'}}, /authority: authority match/],
    ['scheme', {scheme: {exact: 'http'}}, /scheme: scheme match/],
    ['statPrefix', {statPrefix: 'x'}, /statPrefix: route statistics prefix/],
    ['unknown field', {future: true}, /future: unknown match field/],
  ])('%s: kept', (_name, match, why) => {
    const reasons = keptReasons(run([oneRoute({match: [match], ...toReviews})]))
    expect(
      reasons.some((r) => why.test(r)),
      reasons.join('\n'),
    ).toBe(true)
  })

  it('match gateways [mesh] is the same as none', () => {
    expect(
      rules(run([oneRoute({match: [{gateways: ['mesh'], uri: {exact: '/a'}}], ...toReviews})]))[0].matches,
    ).toEqual([{path: {type: 'Exact', value: '/a'}}])
  })

  it('limits: 17 header matches, 17 rules', () => {
    const headers = Object.fromEntries(Array.from({length: 17}, (_, i) => [`h${i}`, {exact: 'x'}]))
    expect(keptReasons(run([oneRoute({match: [{headers}], ...toReviews})]))).toEqual([
      'spec.http[0].match[0].headers: 17 header matches: an HTTPRoute match holds at most 16',
    ])
    const http = Array.from({length: 17}, (_, i) => ({match: [{uri: {exact: `/p${i}`}}], ...toReviews}))
    expect(keptReasons(run([virtualService('reviews', {hosts: ['reviews'], http})]))).toEqual([
      'spec.http: 17 rules for port 9080: an HTTPRoute holds at most 16',
    ])
  })
})

describe('rule order (Istio first match vs Gateway API precedence)', () => {
  const to = (subset: string) => ({route: [{destination: {host: 'reviews', subset}}]})
  it.each([
    [
      'exact after an overlapping prefix',
      [
        {match: [{uri: {prefix: '/api'}}], ...to('v1')},
        {match: [{uri: {exact: '/api/health'}}], ...to('v2')},
      ],
      'spec.http[1].match[0]',
    ],
    [
      'longer prefix after a shorter one',
      [
        {match: [{uri: {prefix: '/api'}}], ...to('v1')},
        {match: [{uri: {prefix: '/api/v2'}}], ...to('v2')},
      ],
      'spec.http[1].match[0]',
    ],
    [
      'path prefix after a header-only match',
      [
        {match: [{headers: {x: {exact: '1'}}}], ...to('v1')},
        {match: [{uri: {prefix: '/foo'}}], ...to('v2')},
      ],
      'spec.http[1].match[0]',
    ],
    [
      'more headers after fewer',
      [
        {match: [{headers: {a: {exact: '1'}}}], ...to('v1')},
        {match: [{headers: {a: {exact: '1'}, b: {exact: '2'}}}], ...to('v2')},
      ],
      'spec.http[1].match[0]',
    ],
    [
      'a method after a match without',
      [
        {match: [{uri: {prefix: '/a'}}], ...to('v1')},
        {match: [{uri: {prefix: '/a'}, method: {exact: 'GET'}}], ...to('v2')},
      ],
      'spec.http[1].match[0]',
    ],
    [
      'catch-all after a regex (Istio ranks every PathPrefix, even "/", above regex)',
      [{match: [{uri: {regex: '/api/v[0-9]+/.*'}}], ...to('v1')}, to('v2')],
      'spec.http[1]',
    ],
    [
      'a rule after a catch-all (unreachable in Istio)',
      [to('v1'), {match: [{headers: {x: {exact: '1'}}}], ...to('v2')}],
      'spec.http[1].match[0]',
    ],
    [
      'exact path matching an earlier regex',
      [
        {match: [{uri: {regex: '/a/[0-9]+'}}], ...to('v1')},
        {match: [{uri: {exact: '/a/1'}}], ...to('v2')},
      ],
      'spec.http[1].match[0]',
    ],
  ])('%s: kept', (_name, http, overtaking) => {
    const reasons = keptReasons(run([virtualService('reviews', {hosts: ['reviews'], http})]))
    expect(
      reasons.some((r) => r.startsWith(`${overtaking}: Gateway API precedence`)),
      reasons.join('\n'),
    ).toBe(true)
  })

  it.each([
    [
      'disjoint exact and prefix',
      [
        {match: [{uri: {exact: '/a'}}], ...to('v1')},
        {match: [{uri: {prefix: '/b'}}], ...to('v2')},
      ],
    ],
    [
      'prefixes that share characters but not a segment',
      [
        {match: [{uri: {prefix: '/api'}}], ...to('v1')},
        {match: [{uri: {prefix: '/apix/y'}}], ...to('v2')},
      ],
    ],
    [
      'already in precedence order',
      [
        {match: [{uri: {prefix: '/api/v2'}}], ...to('v1')},
        {match: [{uri: {prefix: '/api'}}], ...to('v2')},
      ],
    ],
    [
      'reordered but different header values',
      [
        {match: [{headers: {x: {exact: '1'}}}], ...to('v1')},
        {match: [{uri: {prefix: '/foo'}, headers: {x: {exact: '2'}}}], ...to('v2')},
      ],
    ],
    [
      'reordered but different methods',
      [
        {match: [{uri: {prefix: '/foo'}, method: {exact: 'GET'}}], ...to('v1')},
        {match: [{uri: {exact: '/foo'}, method: {exact: 'POST'}}], ...to('v2')},
      ],
    ],
    [
      'reordered but the same action',
      [
        {match: [{uri: {prefix: '/a'}}], ...to('v1')},
        {match: [{uri: {exact: '/a/b'}}], ...to('v1')},
      ],
    ],
    [
      'exact path that the earlier regex does not match',
      [
        {match: [{uri: {regex: '/a/[0-9]+'}}], ...to('v1')},
        {match: [{uri: {exact: '/a/b'}}], ...to('v2')},
      ],
    ],
    [
      'header regex that cannot match the other exact value',
      [
        {match: [{headers: {x: {regex: '[0-9]+'}}}], ...to('v1')},
        {match: [{uri: {prefix: '/a'}, headers: {x: {exact: 'abc'}}}], ...to('v2')},
      ],
    ],
    [
      'the docs example: header match, then default',
      [{match: [{headers: {'end-user': {exact: 'jason'}}}], ...to('v2')}, to('v1')],
    ],
  ])('%s: converted in VirtualService order', (_name, http) => {
    const out = run([virtualService('reviews', {hosts: ['reviews'], http})])
    expect(onlyRoute(out).spec.rules.map((r: {backendRefs: {name: string}[]}) => r.backendRefs[0]!.name)).toEqual(
      http.map((h) => `reviews-${h.route[0]!.destination.subset}`),
    )
  })

  it('comparePrecedence follows Istio: Exact > PathPrefix (longest, trailing "/" ignored) > RegularExpression, then method, headers, query', () => {
    const sorted = [
      {path: {type: 'RegularExpression' as const, value: '/very/long/regex/.*'}},
      {},
      {path: {type: 'PathPrefix' as const, value: '/ab/'}},
      {path: {type: 'PathPrefix' as const, value: '/abc'}},
      {path: {type: 'Exact' as const, value: '/x'}},
      {headers: [{name: 'a', type: 'Exact' as const, value: '1'}]},
      {method: 'GET'},
    ].sort(comparePrecedence)
    expect(sorted).toEqual([
      {path: {type: 'Exact', value: '/x'}},
      {path: {type: 'PathPrefix', value: '/abc'}},
      {path: {type: 'PathPrefix', value: '/ab/'}},
      {method: 'GET'},
      {headers: [{name: 'a', type: 'Exact', value: '1'}]},
      {},
      {path: {type: 'RegularExpression', value: '/very/long/regex/.*'}},
    ])
  })

  it('prefixCovers and mayOverlap use path segments and decidable value conflicts', () => {
    expect(prefixCovers('/a', '/a')).toBe(true)
    expect(prefixCovers('/a/', '/a')).toBe(true)
    expect(prefixCovers('/a', '/a/b')).toBe(true)
    expect(prefixCovers('/a', '/ab')).toBe(false)
    expect(prefixCovers('/', '/anything')).toBe(true)
    expect(
      mayOverlap(
        {headers: [{name: 'X', type: 'Exact', value: '1'}]},
        {headers: [{name: 'x', type: 'Exact', value: '2'}]},
      ),
    ).toBe(false)
    expect(
      mayOverlap(
        {queryParams: [{name: 'Q', type: 'Exact', value: '1'}]},
        {queryParams: [{name: 'q', type: 'Exact', value: '2'}]},
      ),
    ).toBe(true)
    // RE2-only syntax cannot be checked in JavaScript: assumed to overlap.
    expect(mayOverlap({path: {type: 'RegularExpression', value: '(?i)/A'}}, {path: {type: 'Exact', value: '/b'}})).toBe(
      true,
    )
    expect(precedenceConflicts([])).toEqual([])
  })
})

describe('route features', () => {
  it.each([
    ['0.5s', '500ms'],
    ['1.5s', '1s500ms'],
    ['90m', '1h30m'],
    ['1m30s', '1m30s'],
    ['250ms', '250ms'],
    ['2h', '2h'],
  ])('timeout %s → timeouts.request %s', (timeout, request) => {
    expect(rules(run([oneRoute({...toReviews, timeout})]))[0].timeouts).toEqual({request})
  })

  it('timeout 0s (disabled) is the default: no timeouts; sub-millisecond timeouts are kept', () => {
    expect(rules(run([oneRoute({...toReviews, timeout: '0s'})]))[0].timeouts).toBeUndefined()
    expect(keptReasons(run([oneRoute({...toReviews, timeout: '1500us'})]))[0]).toMatch(
      /^spec\.http\[0\]\.timeout: 1500us: not a duration Gateway API can write/,
    )
    expect(keptReasons(run([oneRoute({...toReviews, timeout: 'soon'})]))[0]).toMatch(/^spec\.http\[0\]\.timeout/)
  })

  it.each([
    ['attempts and perTryTimeout', {attempts: 3, perTryTimeout: '2s'}],
    ['retryOn', {attempts: 2, retryOn: '5xx,connect-failure,gateway-error,reset'}],
    ['disabled (attempts 0)', {attempts: 0}],
  ])('retries (%s) cannot be written in the standard channel: kept', (_name, retries) => {
    const reasons = keptReasons(run([oneRoute({...toReviews, retries})]))
    expect(reasons).toHaveLength(1)
    expect(reasons[0]).toMatch(
      /^spec\.http\[0\]\.retries: retry policy: HTTPRoute `retry` is not in the v1\.6\.1 standard-channel CRD.*mesh default retry policy/,
    )
  })

  it('no retries: converted without finding (both get the mesh default retry policy)', () => {
    expect(run([oneRoute(toReviews)]).findings).toEqual([])
  })

  it('route headers → RequestHeaderModifier/ResponseHeaderModifier; destination headers → backendRef filters', () => {
    const out = run([
      oneRoute({
        headers: {
          request: {set: {'x-b': '2', 'x-a': '1'}, add: {'x-c': '3'}, remove: ['x-z', 'x-y']},
          response: {remove: ['server']},
        },
        route: [
          {destination: {host: 'reviews'}, headers: {request: {set: {'x-dest': 'd'}}, response: {add: {'x-r': 'r'}}}},
        ],
      }),
    ])
    expect(rules(out)).toEqual([
      {
        filters: [
          {
            type: 'RequestHeaderModifier',
            requestHeaderModifier: {
              set: [
                {name: 'x-a', value: '1'},
                {name: 'x-b', value: '2'},
              ],
              add: [{name: 'x-c', value: '3'}],
              remove: ['x-y', 'x-z'],
            },
          },
          {type: 'ResponseHeaderModifier', responseHeaderModifier: {remove: ['server']}},
        ],
        backendRefs: [
          {
            name: 'reviews',
            port: 9080,
            weight: 1,
            filters: [
              {type: 'RequestHeaderModifier', requestHeaderModifier: {set: [{name: 'x-dest', value: 'd'}]}},
              {type: 'ResponseHeaderModifier', responseHeaderModifier: {add: [{name: 'x-r', value: 'r'}]}},
            ],
          },
        ],
      },
    ])
  })

  it.each([
    ['pseudo-header', {request: {set: {':authority': 'x'}}}, /pseudo-headers/],
    ['empty value', {request: {add: {'x-a': ''}}}, /header value must be 1 to 4096/],
    [
      '17 headers',
      {request: {set: Object.fromEntries(Array.from({length: 17}, (_, i) => [`h${i}`, 'v']))}},
      /17 headers: a header modifier holds at most 16/,
    ],
  ])('header modifier with %s: kept', (_name, headers, why) => {
    expect(keptReasons(run([oneRoute({...toReviews, headers})])).some((r) => why.test(r))).toBe(true)
  })

  it.each([
    [
      'mirror + mirrorPercentage 50',
      {mirror: {host: 'ratings'}, mirrorPercentage: {value: 50}},
      [{backendRef: {name: 'ratings', port: 9080}, percent: 50}],
    ],
    [
      'mirror + mirrorPercentage 12.5',
      {mirror: {host: 'ratings'}, mirrorPercentage: {value: 12.5}},
      [{backendRef: {name: 'ratings', port: 9080}, fraction: {numerator: 1, denominator: 8}}],
    ],
    ['mirror without percentage (100 %)', {mirror: {host: 'ratings'}}, [{backendRef: {name: 'ratings', port: 9080}}]],
    [
      'deprecated mirrorPercent',
      {mirror: {host: 'ratings'}, mirrorPercent: 30},
      [{backendRef: {name: 'ratings', port: 9080}, percent: 30}],
    ],
    [
      'mirrors with a subset',
      {
        mirrors: [
          {destination: {host: 'reviews', subset: 'v2'}, percentage: {value: 5}},
          {destination: {host: 'ratings'}},
        ],
      },
      [{backendRef: {name: 'reviews-v2', port: 9080}, percent: 5}, {backendRef: {name: 'ratings', port: 9080}}],
    ],
  ])('%s → RequestMirror', (_name, fields, mirrors) => {
    const out = run([oneRoute({...toReviews, ...fields})])
    expect(rules(out)[0].filters).toEqual(mirrors.map((requestMirror) => ({type: 'RequestMirror', requestMirror})))
  })

  it('mirrorShare and durations', () => {
    expect(mirrorShare(0)).toEqual({percent: 0})
    expect(mirrorShare(0.01)).toEqual({fraction: {numerator: 1, denominator: 10000}})
    expect(parseGoDuration('1h2m3.5s')).toBe(3_723_500_000_000n)
    expect(parseGoDuration('1.5µs')).toBe(1_500n)
    expect(parseGoDuration('5')).toBeUndefined()
    expect(gatewayDuration(0n)).toBe('0s')
    expect(gatewayDuration(3_723_500_000_000n)).toBe('1h2m3s500ms')
    expect(gatewayDuration(100_000n * 3_600_000_000_000n)).toBeUndefined()
  })

  it('redirect → RequestRedirect with the status always written (Istio 301, Gateway API default 302), no backends', () => {
    expect(rules(run([oneRoute({redirect: {uri: '/new', authority: 'Other.Example.com'}})]))).toEqual([
      {
        filters: [
          {
            type: 'RequestRedirect',
            requestRedirect: {
              statusCode: 301,
              hostname: 'other.example.com',
              path: {type: 'ReplaceFullPath', replaceFullPath: '/new'},
            },
          },
        ],
      },
    ])
    expect(
      rules(run([oneRoute({redirect: {scheme: 'https', redirectCode: 308, authority: 'x.example.com:8443'}})]))[0]
        .filters[0].requestRedirect,
    ).toEqual({statusCode: 308, scheme: 'https', hostname: 'x.example.com', port: 8443})
    // FROM_REQUEST_PORT with a scheme: Istio would otherwise derive the scheme's default port.
    expect(
      rules(run([oneRoute({redirect: {scheme: 'https', derivePort: 'FROM_REQUEST_PORT'}})]))[0].filters[0]
        .requestRedirect,
    ).toEqual({statusCode: 301, scheme: 'https', port: 9080})
    expect(
      rules(run([oneRoute({redirect: {uri: '/x', derivePort: 'FROM_REQUEST_PORT'}})]))[0].filters[0].requestRedirect,
    ).toEqual({statusCode: 301, path: {type: 'ReplaceFullPath', replaceFullPath: '/x'}})
  })

  it('a %PREFIX()% redirect replaces the matched prefix (one rule per match)', () => {
    expect(rules(run([oneRoute({match: [{uri: {prefix: '/old'}}], redirect: {uri: '%PREFIX()%/new'}})]))).toEqual([
      {
        matches: [{path: {type: 'PathPrefix', value: '/old'}}],
        filters: [
          {
            type: 'RequestRedirect',
            requestRedirect: {statusCode: 301, path: {type: 'ReplacePrefixMatch', replacePrefixMatch: '/new'}},
          },
        ],
      },
    ])
    expect(
      keptReasons(run([oneRoute({match: [{uri: {exact: '/old'}}], redirect: {uri: '%PREFIX()%/new'}})]))[0],
    ).toMatch(/not a prefix match/)
  })

  it.each([
    ['status 300', {uri: '/x', redirectCode: 300}, /redirectCode: status 300/],
    ['scheme ftp', {scheme: 'ftp'}, /scheme other than http or https/],
    ['authority with an underscore', {authority: 'a_b.example.com'}, /not a DNS name/],
  ])('redirect with %s: kept', (_name, redirect, why) => {
    expect(keptReasons(run([oneRoute({redirect})])).some((r) => why.test(r))).toBe(true)
  })

  it.each([
    ['prefix /foo → /bar', {prefix: '/foo'}, '/bar', {type: 'ReplacePrefixMatch', replacePrefixMatch: '/bar'}],
    ['prefix /foo/ → /bar/', {prefix: '/foo/'}, '/bar/', {type: 'ReplacePrefixMatch', replacePrefixMatch: '/bar/'}],
    ['prefix /foo/ → /', {prefix: '/foo/'}, '/', {type: 'ReplacePrefixMatch', replacePrefixMatch: '/'}],
    ['exact /foo → /bar', {exact: '/foo'}, '/bar', {type: 'ReplaceFullPath', replaceFullPath: '/bar'}],
    [
      'regex → /bar (Envoy rewrites the whole matched path)',
      {regex: '/f.*'},
      '/bar',
      {type: 'ReplaceFullPath', replaceFullPath: '/bar'},
    ],
  ])('rewrite.uri with %s → URLRewrite', (_name, uri, rewrite, path) => {
    const r = rules(
      run([oneRoute({match: [{uri}], rewrite: {uri: rewrite, authority: 'Backend.internal'}, ...toReviews})]),
    )
    expect(r[0].filters).toEqual([{type: 'URLRewrite', urlRewrite: {path, hostname: 'backend.internal'}}])
  })

  it.each([
    ['prefix /foo → /', {prefix: '/foo'}, '/'],
    ['prefix /foo → /bar/', {prefix: '/foo'}, '/bar/'],
    ['prefix /foo/ → /bar', {prefix: '/foo/'}, '/bar'],
  ])('rewrite.uri with %s changes paths under Gateway API segment semantics: kept', (_name, uri, rewrite) => {
    expect(keptReasons(run([oneRoute({match: [{uri}], rewrite: {uri: rewrite}, ...toReviews})]))[0]).toMatch(
      /^spec\.http\[0\]\.rewrite\.uri: prefix .* the resulting paths differ/,
    )
  })

  it('rewrite on several matches: one rule per match (ReplacePrefixMatch needs exactly one PathPrefix match)', () => {
    expect(
      rules(
        run([
          oneRoute({
            name: 'api',
            match: [{uri: {prefix: '/a'}}, {uri: {exact: '/b'}}],
            rewrite: {uri: '/c'},
            ...toReviews,
          }),
        ]),
      ),
    ).toEqual([
      {
        name: 'api-0',
        matches: [{path: {type: 'PathPrefix', value: '/a'}}],
        filters: [{type: 'URLRewrite', urlRewrite: {path: {type: 'ReplacePrefixMatch', replacePrefixMatch: '/c'}}}],
        backendRefs: [{name: 'reviews', port: 9080, weight: 1}],
      },
      {
        name: 'api-1',
        matches: [{path: {type: 'Exact', value: '/b'}}],
        filters: [{type: 'URLRewrite', urlRewrite: {path: {type: 'ReplaceFullPath', replaceFullPath: '/c'}}}],
        backendRefs: [{name: 'reviews', port: 9080, weight: 1}],
      },
    ])
  })

  it('rewrite on a header-only match or no match writes the implicit PathPrefix "/" out', () => {
    expect(
      rules(run([oneRoute({match: [{headers: {x: {exact: '1'}}}], rewrite: {uri: '/v2/'}, ...toReviews})]))[0].matches,
    ).toEqual([{path: {type: 'PathPrefix', value: '/'}, headers: [{name: 'x', type: 'Exact', value: '1'}]}])
    expect(rules(run([oneRoute({rewrite: {uri: '/v2/'}, ...toReviews})]))[0].matches).toEqual([
      {path: {type: 'PathPrefix', value: '/'}},
    ])
    expect(keptReasons(run([oneRoute({rewrite: {uri: '/v2'}, ...toReviews})]))).toHaveLength(1)
  })

  it('rewrite.authority alone → URLRewrite hostname; regex rewrite and authority with a port are kept', () => {
    expect(rules(run([oneRoute({rewrite: {authority: 'backend'}, ...toReviews})]))[0].filters).toEqual([
      {type: 'URLRewrite', urlRewrite: {hostname: 'backend'}},
    ])
    expect(
      keptReasons(run([oneRoute({rewrite: {uriRegexRewrite: {match: '^/a(.*)', rewrite: '/b\\1'}}, ...toReviews})]))[0],
    ).toMatch(/uriRegexRewrite: regex path rewrite/)
    expect(keptReasons(run([oneRoute({rewrite: {authority: 'backend:8080'}, ...toReviews})]))[0]).toMatch(
      /rewrite\.authority: backend:8080 is not a DNS name/,
    )
  })

  it('corsPolicy → CORS filter', () => {
    const corsPolicy = {
      allowOrigins: [{exact: 'https://a.example.com'}, {exact: 'http://b.example.com:8080'}],
      allowMethods: ['GET', 'POST'],
      allowHeaders: ['x-a'],
      exposeHeaders: ['x-b'],
      maxAge: '24h',
      allowCredentials: true,
    }
    expect(rules(run([oneRoute({...toReviews, corsPolicy})]))[0].filters).toEqual([
      {
        type: 'CORS',
        cors: {
          allowOrigins: ['https://a.example.com', 'http://b.example.com:8080'],
          allowMethods: ['GET', 'POST'],
          allowHeaders: ['x-a'],
          exposeHeaders: ['x-b'],
          maxAge: 86400,
          allowCredentials: true,
        },
      },
    ])
  })

  it.each([
    ['origin prefix', {allowOrigins: [{prefix: 'https://'}]}, /origin prefix or regex match/],
    ['origin not scheme://host', {allowOrigins: [{exact: 'example.com'}]}, /not of the form scheme:\/\/host/],
    ['method outside the list', {allowMethods: ['GET', 'PURGE']}, /PURGE outside/],
    ['"*" with other origins', {allowOrigins: [{exact: '*'}, {exact: 'https://a.com'}]}, /"\*" alongside other values/],
    ['maxAge below a second', {maxAge: '500ms'}, /maxAge/],
    ['unmatchedPreflights IGNORE', {unmatchedPreflights: 'IGNORE'}, /IGNORE/],
  ])('corsPolicy with %s: kept', (_name, corsPolicy, why) => {
    expect(keptReasons(run([oneRoute({...toReviews, corsPolicy})])).some((r) => why.test(r))).toBe(true)
  })

  it.each([
    [
      'fault',
      {fault: {delay: {fixedDelay: '7s', percentage: {value: 100}}}, ...toReviews},
      'spec.http[0].fault: fault injection (delay/abort): Gateway API has none',
    ],
    [
      'directResponse',
      {directResponse: {status: 503}},
      'spec.http[0].directResponse: direct response: Gateway API has none',
    ],
    [
      'delegate',
      {delegate: {name: 'reviews-routes'}},
      'spec.http[0].delegate: delegation to another VirtualService: Gateway API has no route delegation for Service parents',
    ],
    ['unknown field', {...toReviews, futureFeature: {}}, 'spec.http[0].futureFeature: unknown field: not converted'],
    [
      'nothing to do',
      {match: [{uri: {exact: '/a'}}]},
      'spec.http[0]: neither route, redirect, direct response nor delegate',
    ],
  ])('%s: kept with its reason', (_name, http, expected) => {
    expect(keptReasons(run([oneRoute(http)]))).toEqual([expected])
  })

  it('rule names come from http[].name when they are valid and unique', () => {
    const http = [
      {name: 'jason', match: [{headers: {u: {exact: 'jason'}}}], ...toReviews},
      {name: 'Not_Valid', match: [{headers: {u: {exact: 'kim'}}}], ...toReviews},
      {name: 'jason', ...toReviews},
    ]
    expect(
      rules(run([virtualService('reviews', {hosts: ['reviews'], http})])).map((r: {name?: string}) => r.name),
    ).toEqual(['jason', undefined, undefined])
  })
})

describe('output', () => {
  it('routes are labelled managed-by mesh-migrate and annotated with the VirtualService they replace', () => {
    const route = onlyRoute(run([oneRoute(toReviews, {}, 'my-vs')]))
    expect(route.apiVersion).toBe('gateway.networking.k8s.io/v1')
    expect(route.metadata).toEqual({
      name: 'my-vs',
      namespace: NS,
      labels: {'app.kubernetes.io/managed-by': 'mesh-migrate'},
      annotations: {[CONVERTED_FROM_ANNOTATION]: 'my-vs'},
    })
  })

  it('is deterministic: the same objects in another order give the same result', () => {
    const vss = [
      oneRoute(
        {
          route: [
            {destination: {host: 'reviews', subset: 'v1'}, weight: 90},
            {destination: {host: 'reviews', subset: 'v2'}, weight: 10},
          ],
        },
        {},
        'z',
      ),
      oneRoute({match: [{uri: {prefix: '/a'}}], ...toReviews}, {hosts: ['ratings']}, 'a'),
      oneRoute({fault: {abort: {httpStatus: 500}}, ...toReviews}, {hosts: ['api']}, 'm'),
    ]
    const one = run(vss)
    const two = convertVirtualServices({
      namespace: NS,
      virtualServices: [...vss].reverse(),
      destinationRules: [...RULES].reverse(),
      services: [...SERVICES].reverse(),
    })
    expect(two).toEqual(one)
    expect(one.httpRoutes.map((r) => r.metadata.name)).toEqual(['a', 'z'])
    expect(one.findings.map((f) => f.id)).toEqual([...one.findings.map((f) => f.id)].sort())
    expect(one.findings.map((f) => f.id)).toContain(
      'HTTPRoutePathPrefixSemantics/VirtualService/shop/a/spec.http[0].match[0].uri',
    )
  })

  it('names that collide get a hash; names stay within 253 characters', () => {
    const out = run([
      virtualService('a', {hosts: ['reviews', 'ratings'], http: [toReviews]}),
      virtualService('a-reviews', {
        hosts: ['api'],
        http: [{route: [{destination: {host: 'api', port: {number: 8080}}}]}],
      }),
    ])
    const names = out.httpRoutes.map((r) => r.metadata.name)
    expect(new Set(names).size).toBe(3)
    expect(names.filter((n) => /^a-reviews-[0-9a-f]{8}$/.test(n))).toHaveLength(2)
    expect(names).toContain('a-ratings')
    const long = 'v'.repeat(250)
    const longOut = run([virtualService(long, {hosts: ['reviews', 'ratings'], http: [toReviews]})])
    for (const r of longOut.httpRoutes) {
      expect(r.metadata.name.length).toBeLessThanOrEqual(253)
      expect(r.metadata.name).toMatch(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/)
    }
    expect(new Set(longOut.httpRoutes.map((r) => r.metadata.name)).size).toBe(2)
  })

  it('a long subset name still gives a valid Service name (63 characters, DNS-1035)', () => {
    const sub = 's'.repeat(60)
    const out = run([oneRoute({route: [{destination: {host: 'reviews', subset: sub}}]})], {
      rules: [destinationRule('reviews', 'reviews', [{name: sub, labels: {version: sub}}])],
    })
    const name = out.versionServices[0]!.metadata.name
    expect(name.length).toBeLessThanOrEqual(63)
    expect(name).toMatch(/^[a-z]([-a-z0-9]*[a-z0-9])?$/)
    expect(rules(out)[0].backendRefs[0].name).toBe(name)
  })

  it('kept VirtualServices get one VirtualServiceKept warning listing the reasons', () => {
    const out = run([oneRoute({...toReviews, fault: {abort: {httpStatus: 500}}, retries: {attempts: 3}})])
    expect(out.kept[0]!.reasons).toHaveLength(2)
    expect(out.findings).toEqual([
      expect.objectContaining({
        id: 'VirtualServiceKept/VirtualService/shop/reviews',
        code: 'VirtualServiceKept',
        severity: 'warning',
        ref: {apiVersion: 'networking.istio.io/v1', kind: 'VirtualService', namespace: NS, name: 'reviews'},
      }),
    ])
    expect(out.findings[0]!.message).toMatch(/2 part\(s\) have no HTTPRoute equivalent/)
  })
})
