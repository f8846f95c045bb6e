// VirtualService → HTTPRoute conversion against upstream material: the istio.io migrate-policies
// example (snippet 1 → 2 + 3), bookinfo's networking VirtualServices against its gateway-api
// HTTPRoutes, the traffic-management task snippets, and every VirtualService of the analyzer test
// data. Every generated HTTPRoute is checked against the Gateway API v1.6.1 standard CRD: its
// OpenAPI schema with ajv and its CEL rules (x-kubernetes-validations) with cel-js, after the API
// server's structural defaulting, as kube-apiserver would on create.
import {readdirSync, readFileSync} from 'node:fs'
import path from 'node:path'
import {Environment} from '@marcbachmann/cel-js'
import {Ajv} from 'ajv'
import {beforeAll, expect, it} from 'vitest'
import {parseAllDocuments} from 'yaml'
import type {KubeObject} from '../../src/planner/model.js'
import {convertVirtualServices, type RouteConversion, type RouteConversionInput} from '../../src/planner/routes.js'
import {CORPUS_DIR, CRDS_DIR, describeWithShared} from '../support/shared.js'

// --- loading -------------------------------------------------------------------------------------

function loadYaml(file: string, namespace?: string): KubeObject[] {
  const docs = parseAllDocuments(readFileSync(file, 'utf8')).map((d) => d.toJSON() as KubeObject | null)
  return docs
    .filter((o): o is KubeObject => o !== null && typeof o === 'object' && typeof o.kind === 'string')
    .map((o) => (namespace && !o.metadata.namespace ? {...o, metadata: {...o.metadata, namespace}} : o))
}

const corpus = (...parts: string[]): string => path.join(CORPUS_DIR, ...parts)
const ofKind = (objs: KubeObject[], kind: string): KubeObject[] => objs.filter((o) => o.kind === kind)

// --- CRD validation: structural defaults, OpenAPI schema, CEL rules ---------------------------------

type Schema = Record<string, any>

let routeSchema: Schema
let validateSchema: (v: unknown) => boolean
let schemaErrors: () => string

/** kube-apiserver's structural defaulting: absent properties with a `default` get it, recursively. */
function applyDefaults(value: unknown, schema: Schema | undefined): unknown {
  if (!schema || value === null || typeof value !== 'object') return value
  if (Array.isArray(value)) return value.map((v) => applyDefaults(v, schema.items))
  const out: Record<string, unknown> = {...(value as Record<string, unknown>)}
  for (const [key, prop] of Object.entries<Schema>(schema.properties ?? {})) {
    if (out[key] === undefined && prop.default !== undefined) out[key] = structuredClone(prop.default)
    if (out[key] !== undefined) out[key] = applyDefaults(out[key], prop)
  }
  return out
}

// CEL reserved words that Kubernetes escapes as __word__ when they are property names.
const CEL_RESERVED = new Set([
  'namespace',
  'in',
  'as',
  'break',
  'const',
  'continue',
  'else',
  'for',
  'function',
  'if',
  'import',
  'let',
  'loop',
  'package',
  'return',
  'var',
  'void',
  'while',
  'true',
  'false',
  'null',
])

/** A value as CEL sees it: integers (by schema) as int (BigInt), reserved property names escaped. */
function toCel(value: unknown, schema: Schema | undefined): unknown {
  if (Array.isArray(value)) return value.map((v) => toCel(v, schema?.items))
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(value))
      out[CEL_RESERVED.has(k) ? `__${k}__` : k] = toCel(v, schema?.properties?.[k] ?? schema?.additionalProperties)
    return out
  }
  if (typeof value === 'number' && schema?.type === 'integer') return BigInt(value)
  return value
}

const celEnv = new Environment({homogeneousAggregateLiterals: false, unlistedVariablesAreDyn: false}).registerVariable(
  'self',
  'dyn',
)

// cel-js's has() rejects an indexed operand (`has(self.matches[0].path)`); `'path' in x[0]` is the
// same test on a map.
function celSource(rule: string): string {
  return rule.replace(/has\(([\w.]+\[\d+\])\.(\w+)\)/g, "('$2' in $1)")
}

/** Every CEL rule of the schema evaluated at every node of `value` that exists. */
function celErrors(value: unknown, schema: Schema | undefined, where = ''): string[] {
  if (!schema || value === undefined) return []
  const errors: string[] = []
  for (const rule of schema['x-kubernetes-validations'] ?? []) {
    try {
      if (celEnv.evaluate(celSource(rule.rule), {self: toCel(value, schema)}) !== true)
        errors.push(`${where || '<root>'}: ${rule.message ?? rule.rule}`)
    } catch (e) {
      errors.push(
        `${where || '<root>'}: rule failed to evaluate (${(e as Error).message.split('\n')[0]}): ${rule.rule}`,
      )
    }
  }
  if (Array.isArray(value)) value.forEach((v, i) => errors.push(...celErrors(v, schema.items, `${where}[${i}]`)))
  else if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value))
      errors.push(...celErrors(v, schema.properties?.[k], where ? `${where}.${k}` : k))
  }
  return errors
}

/** Problems kube-apiserver would report creating `route` (empty = valid). */
function crdProblems(route: KubeObject): string[] {
  const defaulted = applyDefaults(route, routeSchema) as KubeObject
  const problems: string[] = []
  if (!validateSchema(defaulted)) problems.push(`schema: ${schemaErrors()}`)
  problems.push(...celErrors(defaulted.spec, routeSchema.properties.spec, 'spec'))
  return problems
}

function expectValid(conversion: RouteConversion): void {
  for (const route of conversion.httpRoutes) expect(crdProblems(route), route.metadata.name).toEqual([])
}

/** The meaningful part of a route for comparison: parentRefs and rules, defaulted as stored. */
function storedSpec(route: KubeObject): unknown {
  return (applyDefaults(route, routeSchema) as KubeObject).spec
}

// --- inputs --------------------------------------------------------------------------------------

const NS = 'bookinfo'
let bookinfoServices: KubeObject[]
let bookinfoRules: KubeObject[]

function convert(virtualServices: KubeObject[], extra: Partial<RouteConversionInput> = {}): RouteConversion {
  return convertVirtualServices({
    namespace: NS,
    virtualServices,
    destinationRules: bookinfoRules,
    services: bookinfoServices,
    ...extra,
  })
}

describeWithShared('VirtualService → HTTPRoute conversion on upstream examples', () => {
  beforeAll(() => {
    const crd = loadYaml(path.join(CRDS_DIR, 'gateway-api-standard/gateway.networking.k8s.io_httproutes.yaml'))[0]!
    const version = crd.spec.versions.find((v: Schema) => v.name === 'v1')
    routeSchema = version.schema.openAPIV3Schema
    const ajv = new Ajv({allErrors: true, strict: false, validateFormats: false})
    const validate = ajv.compile(routeSchema)
    validateSchema = (v) => validate(v) as boolean
    schemaErrors = () => ajv.errorsText(validate.errors)
    bookinfoServices = ofKind(loadYaml(corpus('bookinfo/platform/kube/bookinfo.yaml'), NS), 'Service')
    bookinfoRules = loadYaml(corpus('bookinfo/networking/destination-rule-all.yaml'), NS)
  })

  it('the CRD check itself rejects what the API server rejects', () => {
    const base = {apiVersion: 'gateway.networking.k8s.io/v1', kind: 'HTTPRoute', metadata: {name: 'r', namespace: NS}}
    const parentRefs = [{group: '', kind: 'Service', name: 'reviews', port: 9080}]
    const valid = {...base, spec: {parentRefs, rules: [{backendRefs: [{name: 'reviews-v1', port: 9080}]}]}}
    expect(crdProblems(valid)).toEqual([])
    // ReplacePrefixMatch needs exactly one PathPrefix match (CEL).
    const rewriteOnExact = {
      ...base,
      spec: {
        parentRefs,
        rules: [
          {
            matches: [{path: {type: 'Exact', value: '/a'}}],
            filters: [{type: 'URLRewrite', urlRewrite: {path: {type: 'ReplacePrefixMatch', replacePrefixMatch: '/b'}}}],
            backendRefs: [{name: 'x', port: 1}],
          },
        ],
      },
    }
    expect(crdProblems(rewriteOnExact).join('\n')).toMatch(/exactly one PathPrefix match/)
    // Service backends need a port (CEL, after kind/group defaulting).
    expect(crdProblems({...base, spec: {parentRefs, rules: [{backendRefs: [{name: 'x'}]}]}}).join('\n')).toMatch(
      /Must have port for Service reference/,
    )
    // Redirect and backends are exclusive (CEL); timeouts pattern (schema); backendRequest <= request (CEL).
    const redirectAndBackends = {
      ...base,
      spec: {
        parentRefs,
        rules: [
          {
            filters: [{type: 'RequestRedirect', requestRedirect: {statusCode: 301}}],
            backendRefs: [{name: 'x', port: 1}],
          },
        ],
      },
    }
    expect(crdProblems(redirectAndBackends).join('\n')).toMatch(
      /RequestRedirect filter must not be used together with backendRefs/,
    )
    expect(
      crdProblems({
        ...base,
        spec: {parentRefs, rules: [{timeouts: {request: '0.5s'}, backendRefs: [{name: 'x', port: 1}]}]},
      }).join('\n'),
    ).toMatch(/schema/)
    expect(
      crdProblems({
        ...base,
        spec: {
          parentRefs,
          rules: [{timeouts: {request: '1s', backendRequest: '2s'}, backendRefs: [{name: 'x', port: 1}]}],
        },
      }).join('\n'),
    ).toMatch(/backendRequest timeout cannot be longer/)
    // Two parentRefs to one Service differing only by port need sectionName (CEL).
    const twoPorts = {
      ...base,
      spec: {
        parentRefs: [...parentRefs, {...parentRefs[0], port: 9090}],
        rules: [{backendRefs: [{name: 'x', port: 1}]}],
      },
    }
    expect(crdProblems(twoPorts).join('\n')).toMatch(/sectionName must be/)
    // Path value rules (CEL) and header name pattern (schema).
    expect(
      crdProblems({
        ...base,
        spec: {
          parentRefs,
          rules: [{matches: [{path: {type: 'PathPrefix', value: '/a//b'}}], backendRefs: [{name: 'x', port: 1}]}],
        },
      }).join('\n'),
    ).toMatch(/must not contain '\/\/'/)
    expect(
      crdProblems({
        ...base,
        spec: {
          parentRefs,
          rules: [{matches: [{headers: [{name: ':authority', value: 'x'}]}], backendRefs: [{name: 'x', port: 1}]}],
        },
      }).join('\n'),
    ).toMatch(/schema/)
  })

  it('reproduces the migrate-policies example: snippet 1 → per-version Services (snippet 2) + HTTPRoute (snippet 3)', () => {
    const vs = loadYaml(corpus('istio-io-snippets/ambient-migrate-migrate-policies-1.yaml'), NS)
    const expectedServices = loadYaml(corpus('istio-io-snippets/ambient-migrate-migrate-policies-2.yaml'))
    const [expectedRoute] = loadYaml(corpus('istio-io-snippets/ambient-migrate-migrate-policies-3.yaml'))
    const out = convert(vs)
    expect(out.kept).toEqual([])
    expect(out.converted.map((r) => r.name)).toEqual(['reviews'])
    expect(out.httpRoutes).toHaveLength(1)
    const route = out.httpRoutes[0]!
    expect(route.metadata.name).toBe(expectedRoute!.metadata.name)
    expect(route.metadata.namespace).toBe(expectedRoute!.metadata.namespace)
    expect(storedSpec(route)).toEqual(storedSpec(expectedRoute!))
    expect(
      out.versionServices.map((s) => ({name: s.metadata.name, namespace: s.metadata.namespace, spec: s.spec})),
    ).toEqual(expectedServices.map((s) => ({name: s.metadata.name, namespace: s.metadata.namespace, spec: s.spec})))
    expectValid(out)
  })

  const pairs: [string, string][] = [
    ['virtual-service-all-v1.yaml', 'route-all-v1.yaml'],
    ['virtual-service-reviews-50-v3.yaml', 'route-reviews-50-v3.yaml'],
    ['virtual-service-reviews-90-10.yaml', 'route-reviews-90-10.yaml'],
    ['virtual-service-reviews-v3.yaml', 'route-reviews-v3.yaml'],
  ]
  for (const [vsFile, routeFile] of pairs) {
    it(`bookinfo networking/${vsFile} routes as gateway-api/${routeFile} does`, () => {
      const out = convert(loadYaml(corpus('bookinfo/networking', vsFile), NS))
      const expected = loadYaml(corpus('bookinfo/gateway-api', routeFile), NS)
      expect(out.kept).toEqual([])
      const byParent = (routes: KubeObject[]): Record<string, unknown> =>
        Object.fromEntries(routes.map((r) => [r.spec.parentRefs[0].name, storedSpec(r)]))
      expect(byParent(out.httpRoutes)).toEqual(byParent(expected))
      expectValid(out)
    })
  }

  it('bookinfo version Services equal the upstream bookinfo-versions.yaml ones, and existing ones are reused', () => {
    const vss = loadYaml(corpus('bookinfo/networking/virtual-service-all-v1.yaml'), NS)
    const upstreamVersions = ofKind(loadYaml(corpus('bookinfo/platform/kube/bookinfo-versions.yaml'), NS), 'Service')
    const out = convert(vss)
    const generated = Object.fromEntries(out.versionServices.map((s) => [s.metadata.name, s.spec]))
    expect(Object.keys(generated).sort()).toEqual(['details-v1', 'productpage-v1', 'ratings-v1', 'reviews-v1'])
    for (const [name, spec] of Object.entries(generated)) {
      expect(spec, name).toEqual(upstreamVersions.find((s) => s.metadata.name === name)!.spec)
    }
    const reused = convert(vss, {services: [...bookinfoServices, ...upstreamVersions]})
    expect(reused.versionServices).toEqual([])
    expect(reused.httpRoutes.map((r) => r.metadata.name)).toEqual(out.httpRoutes.map((r) => r.metadata.name))
    expect(reused.findings.filter((f) => f.code === 'HTTPRouteVersionServiceExists')).toHaveLength(4)
  })

  it('bookinfo header-match routes convert; fault injection stays a VirtualService', () => {
    for (const file of [
      'virtual-service-reviews-jason-v2-v3.yaml',
      'virtual-service-reviews-test-v2.yaml',
      'virtual-service-details-v2.yaml',
      'virtual-service-reviews-v2-v3.yaml',
    ]) {
      const out = convert(loadYaml(corpus('bookinfo/networking', file), NS))
      expect(out.kept, file).toEqual([])
      expectValid(out)
    }
    for (const file of [
      'fault-injection-details-v1.yaml',
      'virtual-service-ratings-test-abort.yaml',
      'virtual-service-ratings-test-delay.yaml',
    ]) {
      const out = convert(ofKind(loadYaml(corpus('bookinfo/networking', file), NS), 'VirtualService'))
      expect(out.httpRoutes, file).toEqual([])
      expect(out.converted, file).toEqual([])
      expect(
        out.kept[0]!.reasons.some((r) => /\.fault: fault injection/.test(r)),
        file,
      ).toBe(true)
    }
  })

  it('bookinfo ratings-mysql subsets become version Services with the subset labels', () => {
    const out = convert(
      ofKind(loadYaml(corpus('bookinfo/networking/virtual-service-ratings-mysql.yaml'), NS), 'VirtualService'),
    )
    const ratings = out.versionServices.find((s) => s.metadata.name === 'ratings-v2-mysql')!
    expect(ratings.spec.selector).toEqual({app: 'ratings', version: 'v2-mysql'})
    expect(out.httpRoutes.find((r) => r.metadata.name === 'ratings')!.spec.rules[0].backendRefs).toEqual([
      {name: 'ratings-v2-mysql', port: 9080, weight: 1},
    ])
    expectValid(out)
  })

  it('traffic-management snippets: timeout, mirror, fault, ingress and egress VirtualServices', () => {
    const snippet = (n: string): KubeObject[] =>
      loadYaml(corpus('istio-io-snippets', `tasks-traffic-management-${n}.yaml`), NS)
    // request-timeouts-3: timeout 0.5s → timeouts.request 500ms.
    const timeout = convert(snippet('request-timeouts-3'))
    expect(timeout.httpRoutes[0]!.spec.rules).toEqual([
      {backendRefs: [{name: 'reviews-v2', port: 9080, weight: 1}], timeouts: {request: '500ms'}},
    ])
    expectValid(timeout)
    // request-timeouts-2: fault delay → kept.
    expect(convert(snippet('request-timeouts-2')).kept.map((k) => k.ref.name)).toEqual(['ratings'])

    // mirroring-3 ↔ mirroring-4 (httpbin Service of samples/httpbin: port 8000 → 8080).
    const httpbin: KubeObject = {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: {name: 'httpbin', namespace: NS},
      spec: {selector: {app: 'httpbin'}, ports: [{name: 'http', port: 8000, targetPort: 8080}]},
    }
    const mirrorRules = ofKind(snippet('mirroring-1'), 'DestinationRule')
    const mirrored = convertVirtualServices({
      namespace: NS,
      virtualServices: snippet('mirroring-3'),
      destinationRules: mirrorRules,
      services: [httpbin],
    })
    const [expected] = ofKind(snippet('mirroring-4'), 'HTTPRoute')
    const rule = mirrored.httpRoutes[0]!.spec.rules[0]
    const expectedRule = expected!.spec.rules[0]
    expect(mirrored.httpRoutes[0]!.spec.parentRefs).toEqual([
      {group: '', kind: 'Service', name: 'httpbin', port: expected!.spec.parentRefs[0].port},
    ])
    expect(rule.backendRefs.map((b: {name: string}) => b.name)).toEqual(
      expectedRule.backendRefs.map((b: {name: string}) => b.name),
    )
    expect(
      rule.filters.map((f: {type: string; requestMirror: {backendRef: {name: string}}}) => [
        f.type,
        f.requestMirror.backendRef.name,
      ]),
    ).toEqual(
      expectedRule.filters.map((f: {type: string; requestMirror: {backendRef: {name: string}}}) => [
        f.type,
        f.requestMirror.backendRef.name,
      ]),
    )
    // mirrorPercentage 100 is written out as percent 100 (the default, but explicit).
    expect(rule.filters[0].requestMirror).toEqual({backendRef: {name: 'httpbin-v2', port: 8000}, percent: 100})
    expect(mirrored.versionServices.map((s) => [s.metadata.name, s.spec.selector, s.spec.ports])).toEqual([
      ['httpbin-v1', {app: 'httpbin', version: 'v1'}, [{name: 'http', port: 8000, targetPort: 8080}]],
      ['httpbin-v2', {app: 'httpbin', version: 'v2'}, [{name: 'http', port: 8000, targetPort: 8080}]],
    ])
    expectValid(mirrored)

    // egress-control-3: an external host is no Service parent; ingress-control-2: gateway-bound.
    const egress = convert(ofKind(snippet('egress-egress-control-3'), 'VirtualService'))
    expect(egress.kept[0]!.reasons).toContain(
      'spec.hosts[0]: httpbin.org is not a Service of bookinfo (another namespace, a ServiceEntry host or an external name): it cannot be a Service parentRef here',
    )
    const ingress = convert(ofKind(snippet('ingress-ingress-control-2'), 'VirtualService'))
    expect(ingress.kept[0]!.reasons[0]).toMatch(
      /^spec\.gateways: bound to gateway\(s\) httpbin-gateway only, not to the mesh/,
    )
  })

  it('every filter and match the conversion writes passes the CRD schema and CEL rules', () => {
    const vs = (name: string, spec: Record<string, unknown>): KubeObject => ({
      apiVersion: 'networking.istio.io/v1',
      kind: 'VirtualService',
      metadata: {name, namespace: NS},
      spec,
    })
    const api: KubeObject = {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: {name: 'api', namespace: NS},
      spec: {
        selector: {app: 'api'},
        ports: [
          {name: 'http', port: 8080},
          {name: 'grpc', port: 9090},
        ],
      },
    }
    const reviews = (subset: string, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
      destination: {host: 'reviews', subset},
      ...extra,
    })
    const vss = [
      vs('reviews', {
        hosts: ['reviews'],
        http: [
          {
            name: 'redirect-old',
            match: [{uri: {exact: '/old'}}],
            redirect: {uri: '/new', authority: 'reviews.example.com', redirectCode: 302},
          },
          {
            name: 'redirect-prefix',
            match: [{uri: {prefix: '/legacy/'}}],
            redirect: {uri: '%PREFIX()%/v1/', scheme: 'https', derivePort: 'FROM_REQUEST_PORT'},
          },
          {
            name: 'rewrite',
            match: [{uri: {prefix: '/api/v1'}}, {uri: {exact: '/api'}}],
            rewrite: {uri: '/v1', authority: 'backend'},
            route: [reviews('v1')],
          },
          {
            name: 'jason',
            match: [
              {
                headers: {'end-user': {exact: 'jason'}, 'x-tier': {prefix: 'gold'}, 'x-any': {}},
                queryParams: {debug: {exact: '1'}},
                method: {exact: 'GET'},
              },
            ],
            headers: {request: {set: {'x-a': '1'}, add: {'x-b': '2'}, remove: ['x-c']}, response: {set: {'x-d': '4'}}},
            route: [
              reviews('v1', {weight: 80, headers: {request: {set: {'x-v': 'v1'}}}}),
              reviews('v2', {weight: 20, headers: {response: {remove: ['x-internal']}}}),
            ],
            mirrors: [
              {destination: {host: 'ratings'}, percentage: {value: 12.5}},
              {destination: {host: 'reviews', subset: 'v2'}, percentage: {value: 40}},
            ],
            timeout: '1.5s',
            corsPolicy: {
              allowOrigins: [{exact: 'https://shop.example.com'}],
              allowMethods: ['GET', 'POST'],
              allowHeaders: ['x-a'],
              exposeHeaders: ['x-b'],
              maxAge: '1h',
              allowCredentials: true,
            },
          },
          {match: [{headers: {'x-canary': {exact: 'yes'}}}], rewrite: {uri: '/canary/'}, route: [reviews('v2')]},
          {route: [reviews('v1')], mirror: {host: 'ratings'}, mirrorPercentage: {value: 100}},
        ],
      }),
      // A regex match would be overtaken by the PathPrefix "/" rules above (Istio ranks regex last): its own host.
      vs('ratings', {
        hosts: ['ratings'],
        http: [
          {
            match: [{uri: {regex: '/ratings/[0-9]+'}}],
            rewrite: {uri: '/v1/ratings'},
            route: [{destination: {host: 'ratings'}}],
          },
        ],
      }),
      vs('api', {
        hosts: ['api'],
        http: [
          {match: [{port: 9090, uri: {prefix: '/grpc.health'}}], route: [{destination: {host: 'api'}}]},
          {route: [{destination: {host: 'api'}}]},
        ],
      }),
    ]
    const out = convert(vss, {services: [...bookinfoServices, api]})
    expect(out.kept).toEqual([])
    expect(out.httpRoutes.map((r) => r.metadata.name)).toEqual(['api-8080', 'api-9090', 'ratings', 'reviews'])
    const filterTypes = new Set(
      out.httpRoutes.flatMap((r) =>
        r.spec.rules.flatMap((rule: {filters?: {type: string}[]}) => (rule.filters ?? []).map((f) => f.type)),
      ),
    )
    expect([...filterTypes].sort()).toEqual([
      'CORS',
      'RequestHeaderModifier',
      'RequestMirror',
      'RequestRedirect',
      'ResponseHeaderModifier',
      'URLRewrite',
    ])
    expectValid(out)
  })

  it('every VirtualService of the upstream corpus converts to valid HTTPRoutes or is kept with reasons', () => {
    const files = (dir: string): string[] =>
      readdirSync(dir, {withFileTypes: true}).flatMap((e) =>
        e.isDirectory() ? files(path.join(dir, e.name)) : e.name.endsWith('.yaml') ? [path.join(dir, e.name)] : [],
      )
    let routes = 0
    let kept = 0
    for (const file of files(CORPUS_DIR)) {
      let objects: KubeObject[]
      try {
        objects = loadYaml(file)
      } catch {
        continue // deliberately invalid YAML in the validation test data
      }
      const vss = ofKind(objects, 'VirtualService')
      if (vss.length === 0) continue
      for (const ns of [...new Set(vss.map((v) => v.metadata.namespace ?? 'default'))]) {
        const inNs = (o: KubeObject): boolean => (o.metadata.namespace ?? 'default') === ns
        const withNs = (o: KubeObject): KubeObject => ({
          ...o,
          metadata: {...o.metadata, namespace: o.metadata.namespace ?? ns},
        })
        // Most files carry no Services or DestinationRules: bookinfo's are added (in the file's
        // namespace), and each other host or destination named by a short name gets a plain Service
        // (port 80, http).
        const services = [...ofKind(objects, 'Service').filter(inNs).map(withNs)]
        for (const s of bookinfoServices)
          if (!services.some((x) => x.metadata.name === s.metadata.name))
            services.push({...s, metadata: {...s.metadata, namespace: ns}})
        const named = vss
          .filter(inNs)
          .flatMap((v) => [
            ...(v.spec?.hosts ?? []),
            ...[...JSON.stringify(v.spec ?? {}).matchAll(/"host":"([^"]+)"/g)].map((m) => m[1]),
          ])
        for (const host of new Set(
          named.filter((h): h is string => typeof h === 'string' && /^[a-z][-a-z0-9]*$/.test(h)),
        )) {
          if (services.some((s) => s.metadata.name === host)) continue
          services.push({
            apiVersion: 'v1',
            kind: 'Service',
            metadata: {name: host, namespace: ns},
            spec: {selector: {app: host}, ports: [{name: 'http', port: 80}]},
          })
        }
        const out = convertVirtualServices({
          namespace: ns,
          virtualServices: vss.filter(inNs).map(withNs),
          destinationRules: [
            ...ofKind(objects, 'DestinationRule').map(withNs),
            ...bookinfoRules.map((r) => ({...r, metadata: {...r.metadata, namespace: ns}})),
          ],
          services,
        })
        expect(out.converted.length + out.kept.length, file).toBe(vss.filter(inNs).length)
        for (const k of out.kept) expect(k.reasons.length, `${file} ${k.ref.name}`).toBeGreaterThan(0)
        for (const route of out.httpRoutes) expect(crdProblems(route), `${file} ${route.metadata.name}`).toEqual([])
        routes += out.httpRoutes.length
        kept += out.kept.length
      }
    }
    expect(kept).toBeGreaterThan(50)
    expect(routes).toBeGreaterThan(25)
  })
})
