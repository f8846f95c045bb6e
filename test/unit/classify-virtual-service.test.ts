import {describe, expect, it} from 'vitest'
import {classifyObjects} from '../../src/planner/classify/index.js'
import type {KubeObject} from '../../src/planner/model.js'
import {bookinfoBase, classifyContext, istio, service} from './support/classify-context.js'

function vs(name: string, spec: Record<string, unknown>, namespace = 'bookinfo', apiVersion?: string): KubeObject {
  return istio('VirtualService', name, spec, {namespace, ...(apiVersion ? {apiVersion} : {})})
}

function run(objects: KubeObject[], opts: Parameters<typeof classifyContext>[1] = {}) {
  const res = classifyObjects(classifyContext([...bookinfoBase(), ...objects], opts))
  const byName = (name: string, ns = 'bookinfo') =>
    res.items.find((i) => i.ref.kind === 'VirtualService' && i.ref.name === name && i.ref.namespace === ns)
  return {...res, byName}
}

describe('VirtualService (DOMAIN §3.4, E11, E12)', () => {
  it('gateway-only VirtualServices are unaffected; routes to own Services mention ingress-use-waypoint', () => {
    const r = run([
      vs('bookinfo', {
        hosts: ['*'],
        gateways: ['bookinfo-gateway'],
        http: [{route: [{destination: {host: 'productpage', port: {number: 9080}}}]}],
      }),
    ])
    const it = r.byName('bookinfo')!
    expect(it).toMatchObject({verdict: 'unaffected', action: 'keep', scope: 'gateway', services: ['productpage']})
    expect(it.reasons).toContain(
      'spec.http[0].route[0].destination.host: routes ingress traffic to productpage: the gateway reaches ambient pods over HBONE and bypasses their waypoint unless the Service or namespace is labelled istio.io/ingress-use-waypoint=true',
    )
  })

  it('gateways including mesh make it a mesh VirtualService', () => {
    const r = run([
      vs('reviews', {
        hosts: ['reviews'],
        gateways: ['mesh', 'bookinfo-gateway'],
        http: [{route: [{destination: {host: 'reviews', subset: 'v1'}}]}],
      }),
    ])
    expect(r.byName('reviews')).toMatchObject({
      verdict: 'L7',
      action: 'retarget',
      scope: 'mesh-routing',
      services: ['reviews'],
    })
  })

  it("a mesh VirtualService for this namespace's Services is L7 retarget with one reason per feature", () => {
    const r = run([
      vs('reviews', {
        hosts: ['reviews.bookinfo.svc.cluster.local'],
        http: [
          {
            match: [{headers: {'end-user': {exact: 'jason'}}, sourceNamespace: 'frontend'}],
            route: [
              {destination: {host: 'reviews', subset: 'v2'}, weight: 80},
              {destination: {host: 'reviews', subset: 'v3'}, weight: 20},
            ],
            timeout: '1s',
            retries: {attempts: 3},
            fault: {delay: {fixedDelay: '7s', percentage: {value: 100}}},
            mirror: {host: 'reviews', subset: 'v1'},
            mirrorPercentage: {value: 50},
            headers: {request: {set: {x: 'y'}}},
            rewrite: {uri: '/'},
            corsPolicy: {allowOrigins: [{exact: 'a'}]},
          },
          {redirect: {uri: '/x'}},
          {directResponse: {status: 503}},
          {delegate: {name: 'child', namespace: 'bookinfo'}},
        ],
      }),
    ])
    const item = r.byName('reviews')!
    expect(item).toMatchObject({verdict: 'L7', action: 'retarget', services: ['reviews']})
    const paths = item.reasons.map((x) => x.slice(0, x.indexOf(': ')))
    for (const p of [
      'spec.hosts',
      'spec.http[0].match[0].sourceNamespace',
      'spec.http[0].match[0]',
      'spec.http[0].route[0].destination.subset',
      'spec.http[0].route[1].destination.subset',
      'spec.http[0].route',
      'spec.http[0].timeout',
      'spec.http[0].retries',
      'spec.http[0].fault',
      'spec.http[0].mirror',
      'spec.http[0].mirrorPercentage',
      'spec.http[0].headers',
      'spec.http[0].rewrite',
      'spec.http[0].corsPolicy',
      'spec.http[1].redirect',
      'spec.http[2].directResponse',
      'spec.http[3].delegate',
    ]) {
      expect(paths).toContain(p)
    }
    expect(item.reasons.find((x) => x.startsWith('spec.http[0].match[0].sourceNamespace'))).toMatch(
      /waypoint's namespace/,
    )
    expect(item.reasons.find((x) => x.startsWith('spec.http[0].fault'))).toMatch(/not expressible in Gateway API/)
    expect(item.reasons.find((x) => x.startsWith('spec.http[3].delegate'))).toMatch(/unverified/)
  })

  it('sourceLabels matches are dropped on waypoints: manual, with a finding', () => {
    const r = run([
      vs('ratings', {
        hosts: ['ratings'],
        http: [
          {match: [{sourceLabels: {app: 'reviews', version: 'v2'}}], fault: {abort: {httpStatus: 500}}},
          {route: [{destination: {host: 'ratings'}}]},
        ],
      }),
    ])
    expect(r.byName('ratings')).toMatchObject({verdict: 'L7', action: 'manual'})
    expect(r.byName('ratings')!.reasons.find((x) => x.startsWith('spec.http[0].match[0].sourceLabels: '))).toMatch(
      /dropped on waypoints/,
    )
    expect(r.findings.find((f) => f.id === 'vs-source-labels/VirtualService/bookinfo/ratings')).toMatchObject({
      code: 'VirtualServiceSourceLabelsDropped',
    })
  })

  it('tcp and tls routes are reasons too', () => {
    const r = run([
      vs('ratings', {
        hosts: ['ratings'],
        tcp: [
          {
            match: [{port: 27017}],
            route: [
              {destination: {host: 'ratings'}, weight: 50},
              {destination: {host: 'ratings', subset: 'v2'}, weight: 50},
            ],
          },
        ],
        tls: [{match: [{sniHosts: ['ratings'], port: 443}], route: [{destination: {host: 'ratings'}}]}],
      }),
    ])
    const reasons = r.byName('ratings')!.reasons
    expect(reasons.find((x) => x.startsWith('spec.tcp[0]: '))).toMatch(/TCP route .*2 destination.*TCPRoute is Alpha/)
    expect(reasons.find((x) => x.startsWith('spec.tls[0]: '))).toMatch(/TLSRoute is Alpha/)
  })

  it('a VirtualService for own Services not exported to the waypoint namespace is lost (E12)', () => {
    const r = run([
      vs('reviews', {
        hosts: ['reviews'],
        exportTo: ['frontend'],
        http: [{route: [{destination: {host: 'reviews', subset: 'v1'}}]}],
      }),
    ])
    expect(r.byName('reviews')).toMatchObject({verdict: 'L7', action: 'lost-client-side', scope: 'mesh-routing'})
    expect(r.findings.find((f) => f.id === 'E12/VirtualService/bookinfo/reviews')).toMatchObject({
      code: 'ClientSideRoutingLost',
      severity: 'error',
    })
  })

  it("a VirtualService here for another namespace's host is client-side routing lost for our callers (E11)", () => {
    const r = run([
      vs('httpbin-ext', {
        hosts: ['httpbin.org'],
        http: [{timeout: '3s', route: [{destination: {host: 'httpbin.org'}}]}],
      }),
    ])
    expect(r.byName('httpbin-ext')).toMatchObject({verdict: 'L7', action: 'lost-client-side', scope: 'client-side'})
    expect(r.findings.find((f) => f.id === 'E11/VirtualService/bookinfo/httpbin-ext')).toBeDefined()
  })

  it("another namespace's VirtualService naming our Services is never applied by our waypoint (E12); root mentions #58747", () => {
    const r = run([
      vs(
        'reviews-from-frontend',
        {
          hosts: ['reviews.bookinfo.svc.cluster.local'],
          exportTo: ['.'],
          http: [{route: [{destination: {host: 'reviews.bookinfo.svc.cluster.local'}}], timeout: '2s'}],
        },
        'frontend',
      ),
      vs(
        'global-reviews',
        {
          hosts: ['*.bookinfo.svc.cluster.local'],
          http: [{retries: {attempts: 2}, route: [{destination: {host: 'reviews.bookinfo.svc.cluster.local'}}]}],
        },
        'istio-system',
      ),
    ])
    expect(r.byName('reviews-from-frontend', 'frontend')).toMatchObject({
      verdict: 'L7',
      action: 'lost-client-side',
      scope: 'client-side',
      services: ['reviews'],
    })
    expect(r.findings.map((f) => f.id)).toContain('E12/VirtualService/frontend/reviews-from-frontend')
    const root = r.byName('global-reviews', 'istio-system')!
    expect(root).toMatchObject({action: 'lost-client-side', services: ['details', 'productpage', 'ratings', 'reviews']})
    expect(root.reasons[0]).toMatch(/#58747/)
  })

  it('a VirtualService in the destination namespace with a bound waypoint keeps applying for our callers', () => {
    const ns: KubeObject = {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: {name: 'shop', labels: {'istio.io/use-waypoint': 'waypoint'}},
    }
    const r = run([
      ns,
      service('cart', {app: 'cart'}, 'shop'),
      vs('cart', {hosts: ['cart'], http: [{timeout: '1s', route: [{destination: {host: 'cart'}}]}]}, 'shop'),
    ])
    expect(r.byName('cart', 'shop')).toMatchObject({verdict: 'unaffected', action: 'keep', scope: 'client-side'})
    expect(r.byName('cart', 'shop')!.reasons[0]).toMatch(/destination's waypoint shop\/waypoint/)
    // Without the waypoint binding the same object is lost client-side.
    const r2 = run([
      service('cart', {app: 'cart'}, 'shop'),
      vs('cart', {hosts: ['cart'], http: [{timeout: '1s', route: [{destination: {host: 'cart'}}]}]}, 'shop'),
    ])
    expect(r2.byName('cart', 'shop')).toMatchObject({action: 'lost-client-side'})
  })

  it("other namespaces' VirtualServices that are neither visible here nor about our Services are skipped", () => {
    const r = run([
      vs('private', {hosts: ['cart'], exportTo: ['.'], http: [{route: [{destination: {host: 'cart'}}]}]}, 'shop'),
    ])
    expect(r.byName('private', 'shop')).toBeUndefined()
  })

  it('a VirtualService and an HTTPRoute for the same Service are flagged (E26)', () => {
    const route = istio('HTTPRoute', 'reviews', {
      parentRefs: [{group: '', kind: 'Service', name: 'reviews'}],
      rules: [{backendRefs: [{name: 'reviews', port: 9080}]}],
    })
    const r = run([route, vs('reviews', {hosts: ['reviews'], http: [{route: [{destination: {host: 'reviews'}}]}]})])
    expect(r.byName('reviews')!.reasons.some((x) => x.includes('E26'))).toBe(true)
    expect(r.findings.find((f) => f.id === 'E26/HTTPRoute/bookinfo/reviews')).toMatchObject({
      code: 'VirtualServiceAndRouteForSameHost',
    })
  })

  it('every served API version is classified the same way', () => {
    for (const apiVersion of [
      'networking.istio.io/v1',
      'networking.istio.io/v1beta1',
      'networking.istio.io/v1alpha3',
    ]) {
      const r = run([
        vs(
          'reviews',
          {hosts: ['reviews'], http: [{route: [{destination: {host: 'reviews'}}]}]},
          'bookinfo',
          apiVersion,
        ),
      ])
      expect(r.byName('reviews')).toMatchObject({verdict: 'L7', action: 'retarget', ref: {apiVersion}})
    }
  })
})
