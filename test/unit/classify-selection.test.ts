// classifyObjects: which objects bear on the namespace, identity across API versions, ordering, robustness.
import {describe, expect, it} from 'vitest'
import {exportedTo, hostTarget} from '../../src/planner/classify/hosts.js'
import {labelsSubset, matchesLabelSelector} from '../../src/planner/classify/selection.js'
import {classifierFor, classifyObjects} from '../../src/planner/classify/index.js'
import type {KubeObject} from '../../src/planner/model.js'
import {compareRefs} from '../../src/planner/refs.js'
import {bookinfoBase, classifyContext, istio} from './support/classify-context.js'

describe('selection', () => {
  it("classifies the namespace's own Istio objects and skips Services, Deployments and other namespaces' private config", () => {
    const objs = [
      ...bookinfoBase(),
      istio('AuthorizationPolicy', 'mine', {selector: {matchLabels: {app: 'reviews'}}}),
      istio('AuthorizationPolicy', 'theirs', {}, {namespace: 'shop'}),
      istio('PeerAuthentication', 'theirs', {mtls: {mode: 'DISABLE'}}, {namespace: 'shop'}),
      istio('Sidecar', 'theirs', {outboundTrafficPolicy: {mode: 'REGISTRY_ONLY'}}, {namespace: 'shop'}),
      istio('EnvoyFilter', 'theirs', {configPatches: [{}]}, {namespace: 'shop'}),
      istio('WorkloadEntry', 'theirs', {address: '1.2.3.4'}, {namespace: 'shop'}),
      istio('Telemetry', 'theirs', {}, {namespace: 'shop'}),
    ]
    const {items} = classifyObjects(classifyContext(objs))
    expect(items.map((i) => `${i.ref.kind} ${i.ref.namespace}/${i.ref.name}`)).toEqual([
      'AuthorizationPolicy bookinfo/mine',
    ])
  })

  it('root-namespace config is selected by scope: mesh-wide and matching selectors in, others out', () => {
    const root = {namespace: 'istio-system'}
    const objs = [
      ...bookinfoBase(),
      istio(
        'AuthorizationPolicy',
        'mesh',
        {action: 'DENY', rules: [{from: [{source: {ipBlocks: ['1.2.3.4']}}]}]},
        root,
      ),
      istio('AuthorizationPolicy', 'reviews-only', {selector: {matchLabels: {app: 'reviews'}}}, root),
      istio('AuthorizationPolicy', 'ingress-only', {selector: {matchLabels: {istio: 'ingressgateway'}}}, root),
      istio(
        'AuthorizationPolicy',
        'waypoints',
        {targetRefs: [{kind: 'GatewayClass', group: 'gateway.networking.k8s.io', name: 'istio-waypoint'}]},
        root,
      ),
      istio('AuthorizationPolicy', 'root-svc', {targetRefs: [{kind: 'Service', group: '', name: 'istiod'}]}, root),
    ]
    const names = classifyObjects(classifyContext(objs)).items.map((i) => i.ref.name)
    expect(names).toEqual(['mesh', 'reviews-only', 'waypoints'])
  })

  it('a custom root namespace is honoured', () => {
    const objs = [
      ...bookinfoBase(),
      istio('AuthorizationPolicy', 'mesh', {}, {namespace: 'mesh-root'}),
      istio('AuthorizationPolicy', 'not-root', {}, {namespace: 'istio-system'}),
    ]
    const items = classifyObjects(classifyContext(objs, {rootNamespace: 'mesh-root'})).items
    expect(items.map((i) => `${i.ref.namespace}/${i.ref.name}`)).toEqual(['mesh-root/mesh'])
    expect(items[0]!.scope).toBe('mesh')
  })

  it('an object served under several API versions is classified once', () => {
    const spec = {hosts: ['reviews'], http: [{route: [{destination: {host: 'reviews'}}]}]}
    const objs = [
      ...bookinfoBase(),
      istio('VirtualService', 'reviews', spec, {apiVersion: 'networking.istio.io/v1'}),
      istio('VirtualService', 'reviews', spec, {apiVersion: 'networking.istio.io/v1beta1'}),
      istio('VirtualService', 'reviews', spec, {apiVersion: 'networking.istio.io/v1alpha3'}),
    ]
    expect(classifyObjects(classifyContext(objs)).items).toHaveLength(1)
  })

  it('objects without a namespace belong to the migrated namespace', () => {
    const ap: KubeObject = {
      apiVersion: 'security.istio.io/v1',
      kind: 'AuthorizationPolicy',
      metadata: {name: 'no-ns'},
      spec: {selector: {matchLabels: {app: 'reviews'}}},
    }
    const ctx = classifyContext(bookinfoBase())
    ctx.objects = [...ctx.objects, ap]
    const {items} = classifyObjects(ctx)
    expect(items.map((i) => i.ref)).toEqual([
      {apiVersion: 'security.istio.io/v1', kind: 'AuthorizationPolicy', name: 'no-ns', namespace: 'bookinfo'},
    ])
  })

  it('output is ordered by compareRefs and stable across input orders', () => {
    const objs = [
      istio('VirtualService', 'b', {hosts: ['reviews']}),
      istio('AuthorizationPolicy', 'z', {}),
      istio('AuthorizationPolicy', 'a', {}),
      istio('AuthorizationPolicy', 'm', {}, {namespace: 'istio-system'}),
      istio('DestinationRule', 'd', {host: 'reviews'}),
    ]
    const one = classifyObjects(classifyContext([...bookinfoBase(), ...objs]))
    const two = classifyObjects(classifyContext([...objs].reverse().concat(bookinfoBase())))
    expect(one).toEqual(two)
    const refs = one.items.map((i) => i.ref)
    expect([...refs].sort(compareRefs)).toEqual(refs)
  })

  it('every served API version of every kind reaches its classifier', () => {
    const versions: [string, string][] = [
      ['networking.istio.io/v1', 'VirtualService'],
      ['networking.istio.io/v1beta1', 'DestinationRule'],
      ['networking.istio.io/v1alpha3', 'ServiceEntry'],
      ['networking.istio.io/v1alpha3', 'EnvoyFilter'],
      ['networking.istio.io/v1beta1', 'ProxyConfig'],
      ['networking.istio.io/v1', 'Sidecar'],
      ['networking.istio.io/v1beta1', 'Gateway'],
      ['networking.istio.io/v1', 'WorkloadEntry'],
      ['networking.istio.io/v1alpha3', 'WorkloadGroup'],
      ['security.istio.io/v1', 'AuthorizationPolicy'],
      ['security.istio.io/v1beta1', 'PeerAuthentication'],
      ['security.istio.io/v1beta1', 'RequestAuthentication'],
      ['telemetry.istio.io/v1', 'Telemetry'],
      ['telemetry.istio.io/v1alpha1', 'Telemetry'],
      ['extensions.istio.io/v1alpha1', 'WasmPlugin'],
      ['gateway.networking.k8s.io/v1', 'Gateway'],
      ['gateway.networking.k8s.io/v1beta1', 'HTTPRoute'],
      ['gateway.networking.k8s.io/v1', 'GRPCRoute'],
      ['gateway.networking.k8s.io/v1alpha2', 'TCPRoute'],
      ['gateway.networking.k8s.io/v1alpha3', 'TLSRoute'],
    ]
    for (const [apiVersion, kind] of versions)
      expect(classifierFor({apiVersion, kind}), `${apiVersion} ${kind}`).toBeDefined()
    expect(classifierFor({apiVersion: 'v1', kind: 'Service'})).toBeUndefined()
    expect(classifierFor({apiVersion: 'example.com/v1', kind: 'VirtualService'})).toBeUndefined()
  })

  it('malformed specs do not crash', () => {
    const bad: KubeObject[] = [
      istio('AuthorizationPolicy', 'a', {
        rules: [null, {from: 'x', to: [{operation: null}], when: [{}]}],
        selector: 'x',
      }),
      istio('AuthorizationPolicy', 'b', undefined),
      istio('PeerAuthentication', 'c', {portLevelMtls: {'80': null}, mtls: 'STRICT'}),
      istio('VirtualService', 'd', {hosts: 'reviews', http: [null, {route: 'x', match: [null]}], tcp: {}}),
      istio('DestinationRule', 'e', {host: 42, subsets: [null], trafficPolicy: {portLevelSettings: [null]}}),
      istio('Sidecar', 'f', {egress: [null], ingress: 'x'}),
      istio('ServiceEntry', 'g', {hosts: null}),
      istio('HTTPRoute', 'h', {parentRefs: [null, 'x'], rules: [null]}),
      istio('Telemetry', 'i', []),
      istio('EnvoyFilter', 'j', {configPatches: [null]}),
    ]
    const {items} = classifyObjects(classifyContext([...bookinfoBase(), ...bad]))
    expect(items).toHaveLength(bad.length)
  })
})

describe('helpers', () => {
  it.each([
    [undefined, 'a', 'b', true],
    [['*'], 'a', 'b', true],
    [['.'], 'a', 'a', true],
    [['.'], 'a', 'b', false],
    [['~'], 'a', 'a', false],
    [['b', 'c'], 'a', 'b', true],
    [['c'], 'a', 'b', false],
  ])('exportTo %j from %s to %s → %s', (exportTo, from, to, visible) => {
    expect(exportedTo(exportTo, from, to)).toBe(visible)
  })

  it('resolves short names against the object namespace and matches wildcards', () => {
    const ctx = classifyContext(bookinfoBase())
    expect(hostTarget('reviews', 'bookinfo', ctx)).toMatchObject({
      fqdn: 'reviews.bookinfo.svc.cluster.local',
      serviceNamespace: 'bookinfo',
      ownServices: ['reviews'],
    })
    expect(hostTarget('reviews', 'frontend', ctx).ownServices).toEqual([])
    expect(hostTarget('reviews.bookinfo.svc.cluster.local', 'frontend', ctx).ownServices).toEqual(['reviews'])
    expect(hostTarget('*.bookinfo.svc.cluster.local', 'x', ctx).ownServices).toEqual([
      'details',
      'productpage',
      'ratings',
      'reviews',
    ])
    expect(hostTarget('*.other.svc.cluster.local', 'x', ctx).ownServices).toEqual([])
    expect(hostTarget('httpbin.org', 'bookinfo', ctx)).toMatchObject({fqdn: 'httpbin.org', ownServices: []})
  })

  it('label selectors: subset semantics and matchExpressions', () => {
    expect(labelsSubset({app: 'a'}, {app: 'a', version: 'v1'})).toBe(true)
    expect(labelsSubset({app: 'a', version: 'v2'}, {app: 'a', version: 'v1'})).toBe(false)
    expect(labelsSubset(undefined, {})).toBe(true)
    const labels = {'kubernetes.io/metadata.name': 'bookinfo', team: 'x'}
    expect(matchesLabelSelector({matchExpressions: [{key: 'team', operator: 'In', values: ['x', 'y']}]}, labels)).toBe(
      true,
    )
    expect(matchesLabelSelector({matchExpressions: [{key: 'team', operator: 'NotIn', values: ['x']}]}, labels)).toBe(
      false,
    )
    expect(matchesLabelSelector({matchExpressions: [{key: 'env', operator: 'DoesNotExist'}]}, labels)).toBe(true)
    expect(matchesLabelSelector({matchExpressions: [{key: 'env', operator: 'Exists'}]}, labels)).toBe(false)
  })
})
