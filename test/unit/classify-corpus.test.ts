// The classifier over every YAML file of the upstream corpus (../shared/fixtures/upstream/corpus/): no crash,
// well-formed items, every classifiable object of the namespace inventoried; and the verdicts DOMAIN states for
// bookinfo, the istio.io ambient and task snippets, and the waypoint samples.
import {readFileSync, readdirSync, statSync} from 'node:fs'
import path from 'node:path'
import {expect, it} from 'vitest'
import {parseAllDocuments} from 'yaml'
import {classifierFor, classifyObjects} from '../../src/planner/classify/index.js'
import type {Action, InventoryItem, KubeObject, Verdict, ZtunnelEffect} from '../../src/planner/model.js'
import {refKey} from '../../src/planner/refs.js'
import {CORPUS_DIR, describeWithShared, hasShared} from '../support/shared.js'
import {classifyContext, deployment, service, yamlObjects} from './support/classify-context.js'

const VERDICTS: Verdict[] = ['L4', 'L7', 'inert', 'unaffected', 'blocker']
const ACTIONS: Action[] = ['keep', 'keep-verify', 'retarget', 'lost-client-side', 'no-effect', 'manual', 'blocker']
const INVALID_UPSTREAM = ['istio-io-snippets/invalid/tasks-observability-logs-telemetry-api-6.yaml']

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = path.join(dir, f)
    return statSync(p).isDirectory() ? walk(p) : [p]
  })
}

const files = hasShared
  ? walk(CORPUS_DIR)
      .filter((f) => /\.ya?ml$/.test(f))
      .map((f) => path.relative(CORPUS_DIR, f))
      .sort()
  : []

function text(rel: string): string {
  return readFileSync(path.join(CORPUS_DIR, rel), 'utf8')
}

/** Documents that look like Kubernetes objects (the corpus also holds mesh config fragments). */
function load(...rels: string[]): KubeObject[] {
  return rels
    .flatMap((rel) => yamlObjects(text(rel)))
    .filter(
      (o) =>
        typeof o?.kind === 'string' &&
        typeof o.apiVersion === 'string' &&
        o.metadata !== null &&
        typeof o.metadata === 'object',
    )
}

function checkInventory(objects: KubeObject[], namespace: string): void {
  const ctx = classifyContext(objects, {namespace, defaultNamespace: 'default'})
  const result = classifyObjects(ctx)
  // Pure and deterministic.
  expect(classifyObjects(ctx)).toEqual(result)
  const keys = new Set(result.items.map((i) => refKey(i.ref)))
  expect(keys.size).toBe(result.items.length)
  // Every classifiable object of the namespace is in the inventory.
  for (const o of ctx.objects) {
    if (!classifierFor(o) || typeof o.metadata.name !== 'string' || (o.metadata.namespace ?? 'default') !== namespace)
      continue
    expect(
      keys.has(refKey({apiVersion: o.apiVersion, kind: o.kind, namespace, name: o.metadata.name})),
      `${o.kind} ${namespace}/${o.metadata.name}`,
    ).toBe(true)
  }
  for (const i of result.items) {
    expect(VERDICTS).toContain(i.verdict)
    expect(ACTIONS).toContain(i.action)
    expect(i.ref.namespace).toBeTruthy()
    expect(i.reasons.length, `${i.ref.kind} ${i.ref.name} has reasons`).toBeGreaterThan(0)
    for (const r of i.reasons) expect(r).toMatch(/^\S+: \S/)
  }
  const ids = result.findings.map((f) => f.id)
  expect(new Set(ids).size).toBe(ids.length)
  for (const f of result.findings) {
    expect(['info', 'warning', 'error', 'blocker']).toContain(f.severity)
    expect(f.code).toMatch(/^[A-Z][A-Za-z0-9]+$/)
    expect(f.message.length).toBeGreaterThan(20)
  }
}

describeWithShared('classification over the upstream corpus', () => {
  it('finds the corpus', () => {
    expect(files.length).toBeGreaterThan(250)
  })

  it('only the files upstream publishes as invalid YAML fail to parse', () => {
    const failing = files.filter((rel) => parseAllDocuments(text(rel)).some((d) => d.errors.length > 0))
    expect(failing).toEqual(INVALID_UPSTREAM)
    for (const rel of INVALID_UPSTREAM) expect(() => yamlObjects(text(rel))).toThrow()
  })

  it.each(files.filter((f) => !INVALID_UPSTREAM.includes(f)))('classifies %s without crashing', (rel) => {
    const objects = load(rel)
    const namespaces = [
      ...new Set(objects.filter((o) => classifierFor(o)).map((o) => o.metadata.namespace ?? 'default')),
    ]
    for (const ns of namespaces.length > 0 ? namespaces : ['default']) checkInventory(objects, ns)
    // From the root namespace's point of view too (mesh-wide objects are local there).
    checkInventory(objects, 'istio-system')
  })
})

// --- verdicts DOMAIN states ----------------------------------------------------------------------

interface Expect {
  kind: string
  name: string
  namespace?: string
  verdict: Verdict
  action: Action
  ztunnel?: ZtunnelEffect
  services?: string[]
}

interface Case {
  title: string
  files: string[]
  /** The migrated namespace. */
  namespace: string
  /** Namespace for objects without one (`kubectl apply -n`). Defaults to `namespace`. */
  applyNamespace?: string
  extra?: KubeObject[]
  namespaceLabels?: Record<string, string>
  waypointPlanned?: boolean
  expect: Expect[]
  /** Objects that must not be in the inventory. */
  absent?: {kind: string; name: string; namespace: string}[]
}

const BOOKINFO = 'bookinfo/platform/kube/bookinfo.yaml'
const S = 'istio-io-snippets/'
const httpbinIn = (ns: string) => [
  deployment('httpbin', {app: 'httpbin', version: 'v1'}, ns),
  service('httpbin', {app: 'httpbin'}, ns),
]
const ingressIn = (ns: string) => [
  deployment('istio-ingressgateway', {istio: 'ingressgateway', app: 'istio-ingressgateway'}, ns),
]

const cases: Case[] = [
  // bookinfo (DOMAIN §3.4, §3.5, §3.13, §8)
  {
    title: 'bookinfo ingress Gateway and gateway-bound VirtualService are unaffected',
    files: [BOOKINFO, 'bookinfo/networking/bookinfo-gateway.yaml'],
    namespace: 'bookinfo',
    expect: [
      {kind: 'Gateway', name: 'bookinfo-gateway', verdict: 'unaffected', action: 'keep'},
      {kind: 'VirtualService', name: 'bookinfo', verdict: 'unaffected', action: 'keep', services: ['productpage']},
    ],
  },
  {
    title: 'bookinfo mesh VirtualServices for its own Services are re-targeted; subsets they use too',
    files: [
      BOOKINFO,
      'bookinfo/networking/virtual-service-all-v1.yaml',
      'bookinfo/networking/destination-rule-all.yaml',
    ],
    namespace: 'bookinfo',
    expect: [
      ...['productpage', 'reviews', 'ratings', 'details'].map((n) => ({
        kind: 'VirtualService',
        name: n,
        verdict: 'L7' as const,
        action: 'retarget' as const,
        services: [n],
      })),
      ...['productpage', 'reviews', 'ratings', 'details'].map((n) => ({
        kind: 'DestinationRule',
        name: n,
        verdict: 'L7' as const,
        action: 'retarget' as const,
      })),
    ],
  },
  {
    title: 'bookinfo DestinationRules with only ISTIO_MUTUAL and unused subsets have no effect',
    files: [BOOKINFO, 'bookinfo/networking/destination-rule-all-mtls.yaml'],
    namespace: 'bookinfo',
    expect: ['productpage', 'reviews', 'ratings', 'details'].map((n) => ({
      kind: 'DestinationRule',
      name: n,
      verdict: 'inert' as const,
      action: 'no-effect' as const,
    })),
  },
  {
    title: 'a load-balancing DestinationRule for reviews is applied by the waypoint only',
    files: [BOOKINFO, 'bookinfo/networking/destination-rule-reviews.yaml'],
    namespace: 'bookinfo',
    expect: [{kind: 'DestinationRule', name: 'reviews', verdict: 'L7', action: 'keep', services: ['reviews']}],
  },
  {
    // issue 10 point 2: the ServiceEntry is bound to bookinfo's waypoint by the namespace label, which then applies the
    // DestinationRule and the VirtualService for its host (https://istio.io/latest/docs/ambient/usage/egress-gateway/).
    title:
      'bookinfo egress to googleapis: ServiceEntry kept, TLS origination and rewrite applied by the namespace waypoint',
    files: [BOOKINFO, 'bookinfo/networking/egress-rule-google-apis.yaml'],
    namespace: 'bookinfo',
    expect: [
      {kind: 'ServiceEntry', name: 'googleapis', verdict: 'L4', action: 'keep'},
      {kind: 'DestinationRule', name: 'originate-tls-for-googleapis', verdict: 'L7', action: 'keep'},
      {kind: 'VirtualService', name: 'rewrite-port-for-googleapis', verdict: 'L7', action: 'keep'},
    ],
  },
  {
    title: 'bookinfo fault injection and weighted routing stay L7',
    files: [
      BOOKINFO,
      'bookinfo/networking/virtual-service-ratings-test-abort.yaml',
      'bookinfo/networking/virtual-service-reviews-90-10.yaml',
    ],
    namespace: 'bookinfo',
    expect: [
      {kind: 'VirtualService', name: 'ratings', verdict: 'L7', action: 'retarget'},
      {kind: 'VirtualService', name: 'reviews', verdict: 'L7', action: 'retarget'},
    ],
  },
  {
    title: 'bookinfo Gateway API: Service-parented route needs a waypoint, ingress route unaffected',
    files: [BOOKINFO, 'bookinfo/gateway-api/route-reviews-v1.yaml', 'bookinfo/gateway-api/bookinfo-gateway.yaml'],
    namespace: 'bookinfo',
    expect: [
      {kind: 'HTTPRoute', name: 'reviews', verdict: 'L7', action: 'keep', services: ['reviews']},
      {kind: 'Gateway', name: 'bookinfo-gateway', verdict: 'unaffected', action: 'keep'},
      {kind: 'HTTPRoute', name: 'bookinfo', verdict: 'unaffected', action: 'keep', services: ['productpage']},
    ],
  },
  {
    title: 'the root-namespace rate-limit EnvoyFilter for the ingress gateway does not bear on bookinfo',
    files: [BOOKINFO, 'bookinfo/policy/productpage_envoy_ratelimit.yaml'],
    namespace: 'bookinfo',
    expect: [],
    absent: [{kind: 'EnvoyFilter', name: 'filter-ratelimit', namespace: 'istio-system'}],
  },
  // istio.io migrate-policies (DOMAIN §3.1 re-targeting rules)
  {
    title: 'migrate-policies: L4 policy kept, L7 policy re-targeted (deny-all at ztunnel), bypass DENY kept',
    files: [
      BOOKINFO,
      `${S}ambient-migrate-migrate-policies-4.yaml`,
      `${S}ambient-migrate-migrate-policies-5.yaml`,
      `${S}ambient-migrate-migrate-policies-8.yaml`,
      `${S}ambient-migrate-migrate-policies-1.yaml`,
    ],
    namespace: 'bookinfo',
    expect: [
      {
        kind: 'AuthorizationPolicy',
        name: 'allow-frontend',
        verdict: 'L4',
        action: 'keep',
        ztunnel: 'as-written',
        services: ['reviews'],
      },
      {
        kind: 'AuthorizationPolicy',
        name: 'allow-get-reviews',
        verdict: 'L7',
        action: 'retarget',
        ztunnel: 'deny-all',
        services: ['reviews'],
      },
      {kind: 'AuthorizationPolicy', name: 'deny-waypoint-bypass', verdict: 'L4', action: 'keep', ztunnel: 'as-written'},
      {kind: 'VirtualService', name: 'reviews', verdict: 'L7', action: 'retarget'},
    ],
  },
  {
    title: 'migrate-policies with a waypoint planned: identity-keyed L4 policies need verification (E21)',
    files: [BOOKINFO, `${S}ambient-migrate-migrate-policies-4.yaml`, `${S}ambient-migrate-migrate-policies-9.yaml`],
    namespace: 'bookinfo',
    waypointPlanned: true,
    expect: [
      {kind: 'AuthorizationPolicy', name: 'allow-frontend', verdict: 'L4', action: 'keep-verify'},
      {
        kind: 'AuthorizationPolicy',
        name: 'deny-waypoint-bypass',
        verdict: 'L4',
        action: 'keep-verify',
        ztunnel: 'as-written',
      },
    ],
  },
  {
    title: 'migrate-policies: targetRefs copies on the Service and on the waypoint are kept',
    files: [BOOKINFO, `${S}ambient-migrate-migrate-policies-6.yaml`],
    namespace: 'bookinfo',
    expect: [
      {
        kind: 'AuthorizationPolicy',
        name: 'allow-get-reviews',
        verdict: 'L7',
        action: 'keep',
        ztunnel: 'ignored',
        services: ['reviews'],
      },
    ],
  },
  {
    title: 'migrate-policies: targetRefs on the waypoint Gateway is kept',
    files: [BOOKINFO, `${S}ambient-migrate-migrate-policies-7.yaml`, `${S}ambient-migrate-migrate-policies-3.yaml`],
    namespace: 'bookinfo',
    expect: [
      {kind: 'AuthorizationPolicy', name: 'allow-get-reviews', verdict: 'L7', action: 'keep', ztunnel: 'ignored'},
      {kind: 'HTTPRoute', name: 'reviews', verdict: 'L7', action: 'keep', services: ['reviews']},
    ],
  },
  // istio.io ambient usage / getting started
  {
    title: 'l4-policy: principals-only policy is L4; adding methods makes ztunnel fail safe (deny-all)',
    files: [`${S}ambient-usage-l4-policy-1.yaml`],
    namespace: 'ambient-demo',
    extra: httpbinIn('ambient-demo'),
    expect: [
      {
        kind: 'AuthorizationPolicy',
        name: 'allow-curl-to-httpbin',
        verdict: 'L4',
        action: 'keep',
        ztunnel: 'as-written',
        services: ['httpbin'],
      },
    ],
  },
  {
    title: 'l4-policy snippet 2: L7 attribute with a selector',
    files: [`${S}ambient-usage-l4-policy-2.yaml`],
    namespace: 'ambient-demo',
    extra: httpbinIn('ambient-demo'),
    expect: [
      {
        kind: 'AuthorizationPolicy',
        name: 'allow-curl-to-httpbin',
        verdict: 'L7',
        action: 'retarget',
        ztunnel: 'deny-all',
      },
    ],
  },
  {
    title: 'getting started: ztunnel L4 policy, waypoint L7 policy, L4 policy admitting the waypoint',
    files: [
      BOOKINFO,
      `${S}ambient-getting-started-enforce-auth-policies-2.yaml`,
      `${S}ambient-getting-started-enforce-auth-policies-3.yaml`,
      `${S}ambient-usage-waypoint-1.yaml`,
      `${S}ambient-usage-waypoint-2.yaml`,
      `${S}ambient-usage-l7-features-2.yaml`,
    ],
    namespace: 'default',
    expect: [
      {
        kind: 'AuthorizationPolicy',
        name: 'productpage-ztunnel',
        verdict: 'L4',
        action: 'keep',
        ztunnel: 'as-written',
        services: ['productpage'],
      },
      {
        kind: 'AuthorizationPolicy',
        name: 'productpage-waypoint',
        verdict: 'L7',
        action: 'keep',
        ztunnel: 'ignored',
        services: ['productpage'],
      },
      {kind: 'AuthorizationPolicy', name: 'require-waypoint', verdict: 'L4', action: 'keep'},
      {kind: 'Gateway', name: 'waypoint', verdict: 'L7', action: 'keep'},
      {kind: 'HTTPRoute', name: 'reviews', verdict: 'L7', action: 'keep', services: ['reviews']},
    ],
  },
  {
    title: 'l7-features: targetRefs on a waypoint Gateway',
    files: [BOOKINFO, `${S}ambient-usage-l7-features-1.yaml`],
    namespace: 'default',
    expect: [{kind: 'AuthorizationPolicy', name: 'view-only', verdict: 'L7', action: 'keep', ztunnel: 'ignored'}],
  },
  {
    title: 'cross-namespace waypoint admits the consumer namespace selected by allowedRoutes',
    files: [`${S}ambient-usage-waypoint-3.yaml`],
    namespace: 'cross-namespace-waypoint-consumer',
    namespaceLabels: {
      'istio.io/use-waypoint': 'egress-gateway',
      'istio.io/use-waypoint-namespace': 'common-infrastructure',
    },
    expect: [
      {kind: 'Gateway', name: 'egress-gateway', namespace: 'common-infrastructure', verdict: 'L7', action: 'keep'},
    ],
  },
  {
    title: 'cross-namespace waypoint refuses another namespace',
    files: [`${S}ambient-usage-waypoint-3.yaml`],
    namespace: 'somebody-else',
    namespaceLabels: {
      'istio.io/use-waypoint': 'egress-gateway',
      'istio.io/use-waypoint-namespace': 'common-infrastructure',
    },
    expect: [
      {
        kind: 'Gateway',
        name: 'egress-gateway',
        namespace: 'common-infrastructure',
        verdict: 'blocker',
        action: 'blocker',
      },
    ],
  },
  {
    // issue 10 point 2: the namespace's own waypoint is the egress waypoint of its ServiceEntries and applies the
    // TLS-originating DestinationRule (https://istio.io/latest/docs/ambient/usage/egress-gateway/).
    title:
      'egress gateway: ServiceEntries kept, targetRefs policy kept, TLS origination applied by the namespace waypoint',
    files: [
      `${S}ambient-usage-egress-gateway-2.yaml`,
      `${S}ambient-usage-egress-gateway-3.yaml`,
      `${S}ambient-usage-egress-gateway-4.yaml`,
    ],
    namespace: 'istio-egress',
    expect: [
      {kind: 'ServiceEntry', name: 'httpbin-org', verdict: 'L4', action: 'keep'},
      {kind: 'ServiceEntry', name: 'example-com', verdict: 'L4', action: 'keep'},
      {kind: 'AuthorizationPolicy', name: 'httpbin-org', verdict: 'L7', action: 'keep', ztunnel: 'ignored'},
      {kind: 'DestinationRule', name: 'httpbin-org-tls', verdict: 'L7', action: 'keep'},
    ],
  },
  {
    title: 'WasmPlugins attached to the waypoint and to a Service are kept',
    files: [BOOKINFO, `${S}ambient-usage-extend-waypoint-wasm-2.yaml`, `${S}ambient-usage-extend-waypoint-wasm-3.yaml`],
    namespace: 'default',
    expect: [
      {kind: 'WasmPlugin', name: 'basic-auth-at-waypoint', verdict: 'L7', action: 'keep'},
      {kind: 'WasmPlugin', name: 'basic-auth-for-service', verdict: 'L7', action: 'keep', services: ['reviews']},
    ],
  },
  // tasks: authentication (DOMAIN §3.2, §3.3)
  {
    title: 'mesh-wide STRICT PeerAuthentication applies to the namespace and is kept',
    files: [BOOKINFO, `${S}tasks-security-authentication-authn-policy-1.yaml`],
    namespace: 'bookinfo',
    expect: [{kind: 'PeerAuthentication', name: 'default', namespace: 'istio-system', verdict: 'L4', action: 'keep'}],
  },
  {
    title: 'namespace STRICT kept; workload DISABLE is a blocker',
    files: [
      `${S}tasks-security-authentication-authn-policy-2.yaml`,
      `${S}tasks-security-authentication-authn-policy-7.yaml`,
    ],
    namespace: 'foo',
    extra: httpbinIn('foo'),
    expect: [
      {kind: 'PeerAuthentication', name: 'default', verdict: 'L4', action: 'keep'},
      {kind: 'PeerAuthentication', name: 'overwrite-example', verdict: 'blocker', action: 'blocker'},
    ],
  },
  {
    title: 'workload STRICT kept; port-level DISABLE is a blocker; ISTIO_MUTUAL DestinationRule has no effect',
    files: [
      `${S}tasks-security-authentication-authn-policy-5.yaml`,
      `${S}tasks-security-authentication-authn-policy-4.yaml`,
    ],
    namespace: 'bar',
    extra: httpbinIn('bar'),
    expect: [
      {kind: 'PeerAuthentication', name: 'httpbin', verdict: 'blocker', action: 'blocker'},
      {kind: 'DestinationRule', name: 'httpbin', verdict: 'inert', action: 'no-effect'},
    ],
  },
  {
    title: 'workload STRICT PeerAuthentication is kept',
    files: [`${S}tasks-security-authentication-authn-policy-3.yaml`],
    namespace: 'bar',
    extra: httpbinIn('bar'),
    expect: [{kind: 'PeerAuthentication', name: 'httpbin', verdict: 'L4', action: 'keep', services: ['httpbin']}],
  },
  {
    title: 'ingress-gateway JWT config in the root namespace is unaffected',
    files: [
      `${S}tasks-security-authentication-authn-policy-11.yaml`,
      `${S}tasks-security-authentication-authn-policy-12.yaml`,
    ],
    namespace: 'istio-system',
    extra: ingressIn('istio-system'),
    expect: [
      {kind: 'RequestAuthentication', name: 'jwt-example', verdict: 'unaffected', action: 'keep'},
      {kind: 'AuthorizationPolicy', name: 'frontend-ingress', verdict: 'unaffected', action: 'keep'},
    ],
  },
  {
    title: 'gateway-bound VirtualService routing on JWT claims is unaffected',
    files: [`${S}tasks-security-authentication-jwt-route-2.yaml`],
    namespace: 'foo',
    extra: httpbinIn('foo'),
    expect: [{kind: 'VirtualService', name: 'httpbin', verdict: 'unaffected', action: 'keep'}],
  },
  // tasks: authorization (DOMAIN §3.1)
  {
    title: 'authz-http: allow-nothing is L4; method policies become deny-all and are re-targeted',
    files: [BOOKINFO, ...[1, 2, 3, 4, 5].map((n) => `${S}tasks-security-authorization-authz-http-${n}.yaml`)],
    namespace: 'default',
    expect: [
      {kind: 'AuthorizationPolicy', name: 'allow-nothing', verdict: 'L4', action: 'keep', ztunnel: 'as-written'},
      ...['productpage-viewer', 'details-viewer', 'reviews-viewer', 'ratings-viewer'].map((n) => ({
        kind: 'AuthorizationPolicy',
        name: n,
        verdict: 'L7' as const,
        action: 'retarget' as const,
        ztunnel: 'deny-all' as const,
      })),
    ],
  },
  {
    title: 'authz-deny: L7 DENY is a no-op at ztunnel (fail-open)',
    files: [`${S}tasks-security-authorization-authz-deny-2.yaml`],
    namespace: 'foo',
    extra: httpbinIn('foo'),
    expect: [
      {kind: 'AuthorizationPolicy', name: 'deny-method-get', verdict: 'L7', action: 'retarget', ztunnel: 'no-op'},
    ],
  },
  {
    title: 'authz-deny: path ALLOW is deny-all at ztunnel',
    files: [`${S}tasks-security-authorization-authz-deny-1.yaml`, `${S}tasks-security-authorization-authz-deny-3.yaml`],
    namespace: 'foo',
    extra: httpbinIn('foo'),
    expect: [
      {kind: 'AuthorizationPolicy', name: 'deny-method-get', verdict: 'L7', action: 'retarget', ztunnel: 'no-op'},
      {kind: 'AuthorizationPolicy', name: 'allow-path-ip', verdict: 'L7', action: 'retarget', ztunnel: 'deny-all'},
    ],
  },
  {
    title: 'authz-custom: CUSTOM is not sent to ztunnel',
    files: [`${S}tasks-security-authorization-authz-custom-2.yaml`],
    namespace: 'foo',
    extra: httpbinIn('foo'),
    expect: [
      {
        kind: 'AuthorizationPolicy',
        name: 'ext-authz',
        verdict: 'L7',
        action: 'retarget',
        ztunnel: 'ignored',
        services: ['httpbin'],
      },
    ],
  },
  {
    title: 'authz-tcp: deny-all and principals+ports are L4',
    files: [`${S}tasks-security-authorization-authz-tcp-1.yaml`, `${S}tasks-security-authorization-authz-tcp-2.yaml`],
    namespace: 'default',
    extra: [deployment('mongodb-v1', {app: 'mongodb', version: 'v1'}, 'default')],
    expect: [
      {kind: 'AuthorizationPolicy', name: 'deny-all', verdict: 'L4', action: 'keep', ztunnel: 'as-written'},
      {kind: 'AuthorizationPolicy', name: 'bookinfo-ratings-v2', verdict: 'L4', action: 'keep', ztunnel: 'as-written'},
    ],
  },
  {
    title: 'authz-jwt: RequestAuthentication and requestPrincipals policies need a waypoint',
    files: [`${S}tasks-security-authorization-authz-jwt-1.yaml`, `${S}tasks-security-authorization-authz-jwt-3.yaml`],
    namespace: 'foo',
    extra: httpbinIn('foo'),
    expect: [
      {kind: 'RequestAuthentication', name: 'jwt-example', verdict: 'L7', action: 'retarget'},
      {kind: 'AuthorizationPolicy', name: 'require-jwt', verdict: 'L7', action: 'retarget', ztunnel: 'deny-all'},
    ],
  },
  // tasks: traffic management and telemetry
  {
    title: "mirroring with subsets for the namespace's own Service; circuit breaking needs a waypoint",
    files: [`${S}tasks-traffic-management-mirroring-1.yaml`],
    namespace: 'default',
    extra: httpbinIn('default'),
    expect: [
      {kind: 'VirtualService', name: 'httpbin', verdict: 'L7', action: 'retarget', services: ['httpbin']},
      {kind: 'DestinationRule', name: 'httpbin', verdict: 'L7', action: 'retarget'},
    ],
  },
  {
    title: 'circuit breaking DestinationRule is applied by the waypoint only',
    files: [`${S}tasks-traffic-management-circuit-breaking-1.yaml`],
    namespace: 'default',
    extra: httpbinIn('default'),
    expect: [{kind: 'DestinationRule', name: 'httpbin', verdict: 'L7', action: 'keep'}],
  },
  {
    title: 'mesh-wide Telemetry applies at waypoints; selector Telemetry is re-targeted',
    files: [`${S}tasks-observability-logs-telemetry-api-1.yaml`],
    namespace: 'default',
    applyNamespace: 'istio-system',
    extra: [
      deployment('sleep', {app: 'sleep'}, 'default'),
      ...yamlObjectsOf(`${S}tasks-observability-logs-telemetry-api-2.yaml`),
    ],
    waypointPlanned: true,
    expect: [
      {kind: 'Telemetry', name: 'mesh-logging-default', namespace: 'istio-system', verdict: 'L7', action: 'keep'},
      {kind: 'Telemetry', name: 'disable-sleep-logging', verdict: 'L7', action: 'retarget'},
    ],
  },
  // waypoint samples
  {
    title: 'ambient-argo bookinfo: existing waypoints and their route are kept, the ingress is unaffected',
    files: readdirSafe('waypoints/ambient-argo'),
    namespace: 'ambient344',
    expect: [
      {kind: 'Gateway', name: 'bookinfo-details', verdict: 'L7', action: 'keep'},
      {kind: 'Gateway', name: 'bookinfo-reviews', verdict: 'L7', action: 'keep'},
      {kind: 'HTTPRoute', name: 'reviews', verdict: 'L7', action: 'keep', services: ['reviews']},
      {kind: 'Gateway', name: 'bookinfo-gateway', verdict: 'unaffected', action: 'keep'},
      {kind: 'HTTPRoute', name: 'bookinfo', verdict: 'unaffected', action: 'keep'},
    ],
  },
  {
    title: 'istiod gateway testdata: waypoints are kept (one without an HBONE listener is flagged)',
    files: ['waypoints/pilot-gateway-testdata/waypoint.yaml'],
    namespace: 'ns',
    expect: [
      {kind: 'Gateway', name: 'namespace', verdict: 'L7', action: 'keep'},
      {kind: 'Gateway', name: 'invalid', verdict: 'L7', action: 'keep'},
    ],
  },
]

function readdirSafe(rel: string): string[] {
  if (!hasShared) return []
  return readdirSync(path.join(CORPUS_DIR, rel))
    .filter((f) => f.endsWith('.yaml'))
    .map((f) => `${rel}/${f}`)
    .sort()
}

function yamlObjectsOf(rel: string): KubeObject[] {
  return hasShared ? load(rel) : []
}

describeWithShared('verdicts DOMAIN states for the corpus', () => {
  it.each(cases.map((c) => [c.title, c] as const))('%s', (_title, c) => {
    const objects = [...load(...c.files), ...(c.extra ?? [])]
    const ctx = classifyContext(objects, {
      namespace: c.namespace,
      defaultNamespace: c.applyNamespace ?? c.namespace,
      waypointPlanned: c.waypointPlanned ?? false,
      ...(c.namespaceLabels ? {namespaceLabels: c.namespaceLabels} : {}),
    })
    const {items} = classifyObjects(ctx)
    const find = (kind: string, name: string, ns: string): InventoryItem | undefined =>
      items.find((i) => i.ref.kind === kind && i.ref.name === name && i.ref.namespace === ns)
    for (const e of c.expect) {
      const item = find(e.kind, e.name, e.namespace ?? c.namespace)
      expect(item, `${e.kind} ${e.name}`).toBeDefined()
      const want: Partial<InventoryItem> = {verdict: e.verdict, action: e.action}
      if (e.ztunnel) want.ztunnel = e.ztunnel
      if (e.services) want.services = e.services
      expect(item, `${e.kind} ${e.name}`).toMatchObject(want)
    }
    for (const a of c.absent ?? []) expect(find(a.kind, a.name, a.namespace), `${a.kind} ${a.name}`).toBeUndefined()
  })
})
