// Every object the policy migration writes (and every manifest it puts in a finding's fix) is valid for the
// upstream Istio CRDs: the OpenAPI schema (with ajv; unknown fields rejected, as a strict apply would) and the
// CEL rules (`only one of targetRefs or selector can be set`, serviceAccounts vs principals), evaluated by the
// test API server's CEL validator.
import {readFileSync} from 'node:fs'
import {Ajv} from 'ajv'
import {beforeAll, expect, it} from 'vitest'
import {parse, parseAllDocuments} from 'yaml'
import type {KubeObject} from '../../src/planner/model.js'
import {type PolicyMigration} from '../../src/planner/retarget.js'
import type {StructuralSchema} from '../support/apiserver/validation/schema.js'
import {validateCel} from '../support/apiserver/validation/cel.js'
import {describeWithShared, upstream} from '../support/shared.js'
import {bookinfoBase, deployment, istio, service} from './support/classify-context.js'
import {allCreated, migrate} from './support/retarget.js'

interface Crd {
  spec: {group: string; names: {kind: string}; versions: {name: string; schema: {openAPIV3Schema: StructuralSchema}}[]}
}

function loadSchemas(): Map<string, StructuralSchema> {
  const out = new Map<string, StructuralSchema>()
  for (const doc of parseAllDocuments(readFileSync(upstream('crds/istio-crds.yaml'), 'utf8'))) {
    const crd = doc.toJS() as Crd | null
    if (!crd?.spec?.versions) continue
    for (const v of crd.spec.versions)
      out.set(`${crd.spec.group}/${v.name}/${crd.spec.names.kind}`, v.schema.openAPIV3Schema)
  }
  return out
}

/** The schema for ajv: unknown fields are errors (a server-side apply with fieldValidation=Strict refuses them). */
function strict(s: StructuralSchema): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(s)) {
    if (k.startsWith('x-kubernetes-') || k === 'description') continue
    if (k === 'properties')
      out.properties = Object.fromEntries(
        Object.entries(v as Record<string, StructuralSchema>).map(([p, ps]) => [p, strict(ps)]),
      )
    else if (k === 'items' || k === 'additionalProperties' || k === 'not')
      out[k] = typeof v === 'object' ? strict(v as StructuralSchema) : v
    else if (k === 'oneOf' || k === 'anyOf' || k === 'allOf') out[k] = (v as StructuralSchema[]).map((x) => strict(x))
    else out[k] = v
  }
  if (
    s.type === 'object' &&
    s.properties &&
    s.additionalProperties === undefined &&
    !s['x-kubernetes-preserve-unknown-fields'] &&
    Object.keys(s.properties).length > 0
  ) {
    // metadata is validated by the API server itself; the CRD lists it as a bare object.
    out.additionalProperties = false
  }
  return out
}

/** A CRD's root schema lists spec/status; apiVersion, kind and metadata are the API server's. */
function rootSchema(s: StructuralSchema): Record<string, unknown> {
  const out = strict(s)
  out.properties = {
    ...(out.properties as object),
    apiVersion: {type: 'string'},
    kind: {type: 'string'},
    metadata: {type: 'object'},
  }
  return out
}

function scenarios(): PolicyMigration[] {
  const ap = (name: string, spec: Record<string, unknown>, opts: Parameters<typeof istio>[3] = {}) =>
    istio('AuthorizationPolicy', name, spec, opts)
  const headless = service('db-headless', {app: 'db'})
  headless.spec.clusterIP = 'None'
  const everything = [
    ...bookinfoBase(),
    {...deployment('db', {app: 'db'}), kind: 'StatefulSet'},
    service('db', {app: 'db'}),
    headless,
    ap('l7-allow', {
      selector: {matchLabels: {app: 'ratings'}},
      rules: [
        {
          from: [{source: {principals: ['cluster.local/ns/bookinfo/sa/reviews']}}],
          to: [{operation: {methods: ['GET'], ports: ['9080']}}],
        },
        {to: [{operation: {paths: ['/x']}}]},
      ],
    }),
    ap('ns-allow', {rules: [{from: [{source: {namespaces: ['bookinfo']}}], to: [{operation: {methods: ['GET']}}]}]}),
    ap('mixed-deny', {
      selector: {matchLabels: {app: 'details'}},
      action: 'DENY',
      rules: [
        {from: [{source: {notPrincipals: ['cluster.local/ns/bookinfo/sa/admin'], ipBlocks: ['1.2.3.4']}}]},
        {to: [{operation: {ports: ['80'], methods: ['POST']}}]},
      ],
    }),
    ap('id-allow', {
      selector: {matchLabels: {app: 'reviews'}},
      rules: [{from: [{source: {serviceAccounts: ['bookinfo/productpage']}}]}],
    }),
    ap('id-deny', {
      selector: {matchLabels: {app: 'reviews'}},
      action: 'DENY',
      rules: [{from: [{source: {notServiceAccounts: ['bookinfo/productpage']}}]}],
    }),
    ap('sa-allow', {
      selector: {matchLabels: {app: 'productpage'}},
      rules: [
        {from: [{source: {ipBlocks: ['10.0.0.0/8']}}], when: [{key: 'source.serviceAccount', values: ['front/web']}]},
      ],
    }),
    ap('sa-deny', {
      selector: {matchLabels: {app: 'productpage'}},
      action: 'DENY',
      rules: [{when: [{key: 'source.serviceAccount', notValues: ['front/web']}]}],
    }),
    ap('custom', {
      selector: {matchLabels: {app: 'productpage'}},
      action: 'CUSTOM',
      provider: {name: 'opa'},
      rules: [{to: [{operation: {paths: ['/admin']}}]}],
    }),
    ap('audit', {selector: {matchLabels: {app: 'details'}}, action: 'AUDIT', rules: [{}]}),
    ap(
      'dry',
      {selector: {matchLabels: {app: 'db'}}, rules: [{to: [{operation: {methods: ['GET']}}]}]},
      {annotations: {'istio.io/dry-run': 'true'}},
    ),
    ap('only-pp', {
      selector: {matchLabels: {app: 'ratings'}},
      action: 'DENY',
      rules: [{from: [{source: {notPrincipals: ['cluster.local/ns/bookinfo/sa/productpage']}}]}],
    }),
    ap('root-l7', {action: 'ALLOW', rules: [{to: [{operation: {methods: ['GET']}}]}]}, {namespace: 'istio-system'}),
    ap(
      'root-deny',
      {action: 'DENY', rules: [{from: [{source: {ipBlocks: ['9.9.9.9']}}]}, {to: [{operation: {methods: ['TRACE']}}]}]},
      {namespace: 'istio-system'},
    ),
    ap(
      'root-sel',
      {selector: {matchLabels: {app: 'details'}}, action: 'CUSTOM', provider: {name: 'opa'}, rules: [{}]},
      {namespace: 'istio-system'},
    ),
    istio('RequestAuthentication', 'jwt', {
      selector: {matchLabels: {app: 'productpage'}},
      jwtRules: [{issuer: 'iss', jwksUri: 'https://example.com/jwks'}],
    }),
    istio('RequestAuthentication', 'ns-jwt', {jwtRules: [{issuer: 'other'}]}),
    istio('WasmPlugin', 'wasm', {
      selector: {matchLabels: {app: 'reviews'}},
      url: 'oci://example.com/filter:1',
      phase: 'AUTHN',
    }),
    istio('Telemetry', 'logs', {
      selector: {matchLabels: {app: 'reviews'}},
      accessLogging: [{providers: [{name: 'envoy'}]}],
    }),
  ]
  const many = (n: number) => [
    deployment('multi', {app: 'multi'}),
    ...Array.from({length: n}, (_, i) => service(`s${i}`, {app: 'multi'})),
    istio('AuthorizationPolicy', 'multi', {
      selector: {matchLabels: {app: 'multi'}},
      rules: [{to: [{operation: {methods: ['GET']}}]}],
    }),
  ]
  return [
    migrate(everything, {istioVersion: '1.29'}),
    migrate(everything, {istioVersion: '1.29', waypointNamespace: 'shared'}),
    migrate(many(16)),
    migrate(many(17)),
  ]
}

/** Manifests inside findings' fixes (root-namespace carries, exempted DENYs). */
function fixManifests(m: PolicyMigration): KubeObject[] {
  return m.findings
    .filter((f) => f.fix?.includes('apiVersion: '))
    .flatMap((f) =>
      f
        .fix!.slice(f.fix!.indexOf('apiVersion: '))
        .split(/^---$/m)
        .map((t) => parse(t) as KubeObject),
    )
}

describeWithShared('created policies are valid for the upstream CRDs', () => {
  // Read in beforeAll, not while collecting: without ../shared the suite is skipped, but its body still runs.
  let schemas: Map<string, StructuralSchema>
  const ajv = new Ajv({allErrors: true, strict: false, logger: false})
  const runs = scenarios()
  const objects = runs.flatMap((m) => [...allCreated(m), ...fixManifests(m)])
  beforeAll(() => {
    schemas = loadSchemas()
  })

  it('the scenarios exercise every role, kind and the 16-targetRefs boundary', () => {
    const kinds = new Set(objects.map((o) => o.kind))
    expect([...kinds].sort()).toEqual(['AuthorizationPolicy', 'RequestAuthentication', 'Telemetry', 'WasmPlugin'])
    const roles = new Set(runs.flatMap((m) => m.decisions.flatMap((d) => d.created.map((c) => c.role))))
    expect([...roles].sort()).toEqual(['waypoint-copy', 'ztunnel-companion', 'ztunnel-l4'])
    expect(objects.some((o) => o.spec?.targetRefs?.length === 16)).toBe(true)
    expect(objects.some((o) => o.spec?.targetRefs?.[0]?.kind === 'GatewayClass')).toBe(true)
    expect(
      objects.some((o) =>
        o.spec?.rules?.some((r: {from?: {source: {notServiceAccounts?: string[]}}[]}) =>
          r.from?.some((e) => e.source.notServiceAccounts?.includes('bookinfo/waypoint')),
        ),
      ),
    ).toBe(true)
    expect(objects.length).toBeGreaterThan(30)
  })

  it('every object passes the OpenAPI schema and the CEL rules of its CRD version', () => {
    for (const o of objects) {
      const [group, version] = o.apiVersion.split('/')
      const schema = schemas.get(`${group}/${version}/${o.kind}`)
      expect(schema, `${o.apiVersion} ${o.kind} is served by the CRD`).toBeDefined()
      const validate = ajv.compile(rootSchema(schema!))
      const ok = validate(o)
      expect(ok, `${o.kind} ${o.metadata.namespace}/${o.metadata.name}: ${JSON.stringify(validate.errors)}`).toBe(true)
      const cel = validateCel(o, schema!)
      expect(cel.skipped, `${o.metadata.name}: CEL rules not evaluated`).toEqual([])
      expect(cel.errors, `${o.kind} ${o.metadata.name}`).toEqual([])
      // Never both (the CEL rule says so; checked directly too), at most 16 targets.
      expect(o.spec.selector !== undefined && o.spec.targetRefs !== undefined).toBe(false)
      expect((o.spec.targetRefs ?? []).length).toBeLessThanOrEqual(16)
    }
  })

  it('the validators do reject what the CRD forbids', () => {
    const schema = schemas.get('security.istio.io/v1/AuthorizationPolicy')!
    const both = istio('AuthorizationPolicy', 'x', {
      selector: {matchLabels: {a: 'b'}},
      targetRefs: [{kind: 'Service', group: '', name: 's'}],
    })
    expect(validateCel(both, schema).errors.map((e) => e.detail)).toContain(
      'only one of targetRefs or selector can be set',
    )
    const mixed = istio('AuthorizationPolicy', 'x', {
      rules: [{from: [{source: {serviceAccounts: ['a'], principals: ['b']}}]}],
    })
    expect(validateCel(mixed, schema).errors.map((e) => e.detail)).toContain(
      'Cannot set serviceAccounts with namespaces or principals',
    )
    const validate = ajv.compile(rootSchema(schema))
    expect(
      validate(
        istio('AuthorizationPolicy', 'x', {
          targetRefs: Array.from({length: 17}, (_, i) => ({kind: 'Service', group: '', name: `s${i}`})),
        }),
      ),
    ).toBe(false)
    expect(validate(istio('AuthorizationPolicy', 'x', {rules: [{from: [{source: {principal: ['typo']}}]}]}))).toBe(
      false,
    )
  })
})
