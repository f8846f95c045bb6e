import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {startApiServer, type TestApiServer} from '../support/apiserver/index.js'
import {describeWithShared} from '../support/shared.js'
import {raw} from './helpers.js'

let server: TestApiServer
beforeAll(async () => {
  server = await startApiServer({quiet: true})
})
afterAll(() => server.close())

const AP = '/apis/security.istio.io/v1/namespaces/default/authorizationpolicies'
const GW = '/apis/gateway.networking.k8s.io/v1/namespaces/default/gateways'
const gateway = (name: string, listeners: unknown[], extra: Record<string, unknown> = {}) => ({
  apiVersion: 'gateway.networking.k8s.io/v1',
  kind: 'Gateway',
  metadata: {name},
  spec: {gatewayClassName: 'istio-waypoint', listeners, ...extra},
})

describeWithShared('validation by the upstream CRD schemas and CEL rules', () => {
  it('rejects an AuthorizationPolicy with both selector and targetRefs, with the exact 422 body', async () => {
    const r = await raw(server).post(AP, {
      apiVersion: 'security.istio.io/v1',
      kind: 'AuthorizationPolicy',
      metadata: {name: 'x'},
      spec: {selector: {matchLabels: {app: 'reviews'}}, targetRefs: [{kind: 'Service', group: '', name: 'reviews'}]},
    })
    expect(r.status).toBe(422)
    expect(r.body).toEqual({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message:
        'AuthorizationPolicy.security.istio.io "x" is invalid: spec: Invalid value: "object": only one of targetRefs or selector can be set',
      reason: 'Invalid',
      details: {
        name: 'x',
        group: 'security.istio.io',
        kind: 'AuthorizationPolicy',
        causes: [
          {
            reason: 'FieldValueInvalid',
            message: 'Invalid value: "object": only one of targetRefs or selector can be set',
            field: 'spec',
          },
        ],
      },
      code: 422,
    })
  })

  it('validates every served version with its own schema (v1beta1 too)', async () => {
    const r = await raw(server).post('/apis/security.istio.io/v1beta1/namespaces/default/authorizationpolicies', {
      apiVersion: 'security.istio.io/v1beta1',
      kind: 'AuthorizationPolicy',
      metadata: {name: 'old'},
      spec: {action: 'MAYBE'},
    })
    expect(r.status).toBe(422)
    // The CRD has CEL rules, so the real server adds its notice that they were not run.
    expect(r.body.message).toBe(
      'AuthorizationPolicy.security.istio.io "old" is invalid: [spec.action: Unsupported value: "MAYBE": supported values: "ALLOW", "DENY", "AUDIT", "CUSTOM", <nil>: Invalid value: "null": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation]',
    )
  })

  it("rejects a listener protocol outside the schema's pattern, and accepts a well-formed unknown protocol as the real server does", async () => {
    const bad = await raw(server).post(GW, gateway('bad-proto', [{name: 'mesh', port: 15008, protocol: 'HBONE/2!'}]))
    expect(bad.status).toBe(422)
    expect(bad.body.details.causes).toEqual([
      {
        reason: 'FieldValueInvalid',
        message: `Invalid value: "HBONE/2!": spec.listeners[0].protocol in body should match '^[a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?$|[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\\/[A-Za-z0-9]+$'`,
        field: 'spec.listeners[0].protocol',
      },
    ])
    // ProtocolType's pattern admits any DNS-label-like word: "FOO" is stored, and left to the controller to refuse.
    const foo = await raw(server).post(GW, gateway('foo-proto', [{name: 'mesh', port: 15008, protocol: 'FOO'}]))
    expect(foo.status).toBe(201)
  })

  it('evaluates list-level CEL rules (TLS on an HTTP listener, duplicate listener names)', async () => {
    const tls = await raw(server).post(
      GW,
      gateway('tls-http', [
        {name: 'web', port: 80, protocol: 'HTTP', tls: {mode: 'Terminate', certificateRefs: [{name: 'c'}]}},
      ]),
    )
    expect(tls.body.message).toBe(
      `Gateway.gateway.networking.k8s.io "tls-http" is invalid: spec.listeners: Invalid value: "array": tls must not be specified for protocols ['HTTP', 'TCP', 'UDP']`,
    )
    const dup = await raw(server).post(
      GW,
      gateway('dup', [
        {name: 'a', port: 80, protocol: 'HTTP'},
        {name: 'a', port: 81, protocol: 'HTTP'},
      ]),
    )
    expect(dup.status).toBe(422)
    expect(dup.body.details.causes.map((c: any) => c.message)).toContain(
      'Invalid value: "array": Listener name must be unique within the Gateway',
    )
  })

  it('reports schema errors and skips CEL when they block it, with the real notice', async () => {
    const r = await raw(server).post(GW, gateway('blocked', [{name: 'mesh', port: 15008}]))
    expect(r.status).toBe(422)
    expect(r.body.message).toBe(
      'Gateway.gateway.networking.k8s.io "blocked" is invalid: [spec.listeners[0].protocol: Required value, <nil>: Invalid value: "null": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation]',
    )
  })

  it('enforces transition rules only on update (GatewayClass controllerName is immutable)', async () => {
    const api = raw(server)
    const gc = {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'GatewayClass',
      metadata: {name: 'gc-immutable'},
      spec: {controllerName: 'istio.io/gateway-controller'},
    }
    const created = await api.post('/apis/gateway.networking.k8s.io/v1/gatewayclasses', gc)
    expect(created.status).toBe(201)
    const changed = await api.patch(
      '/apis/gateway.networking.k8s.io/v1/gatewayclasses/gc-immutable',
      {spec: {controllerName: 'example.com/other'}},
      'application/merge-patch+json',
    )
    expect(changed.status).toBe(422)
    expect(changed.body.message).toBe(
      'GatewayClass.gateway.networking.k8s.io "gc-immutable" is invalid: spec.controllerName: Invalid value: "string": Value is immutable',
    )
  })

  it('prunes unknown fields with a Warning header by default and refuses them with fieldValidation=Strict', async () => {
    const body = {
      ...gateway('unknown-field', [{name: 'mesh', port: 15008, protocol: 'HBONE', colour: 'blue'}]),
      extra: true,
    }
    const warn = await raw(server).post(GW, body)
    expect(warn.status).toBe(201)
    expect(warn.headers.get('warning')).toBe(
      '299 - "unknown field \\"extra\\"", 299 - "unknown field \\"spec.listeners[0].colour\\""',
    )
    expect(warn.body.spec.listeners[0].colour).toBeUndefined()
    expect(warn.body.extra).toBeUndefined()
    const strict = await raw(server).post(`${GW}?fieldValidation=Strict`, {...body, metadata: {name: 'unknown-strict'}})
    expect(strict.status).toBe(400)
    expect(strict.body.message).toBe(
      'Gateway in version "v1" cannot be handled as a Gateway: strict decoding error: unknown field "extra", unknown field "spec.listeners[0].colour"',
    )
    const ignore = await raw(server).post(`${GW}?fieldValidation=Ignore`, {...body, metadata: {name: 'unknown-ignore'}})
    expect(ignore.status).toBe(201)
    expect(ignore.headers.get('warning')).toBeNull()
  })

  it('drops status on create for kinds with the status subresource, and keeps status writes to /status', async () => {
    const api = raw(server)
    const c = await api.post(GW, {
      ...gateway('with-status', [{name: 'mesh', port: 15008, protocol: 'HBONE'}]),
      status: {addresses: [{type: 'IPAddress', value: '10.0.0.1'}]},
    })
    expect(c.body.status).toBeUndefined()
    const s = await api.patch(
      `${GW}/with-status/status`,
      {status: {addresses: [{type: 'IPAddress', value: '10.0.0.1'}]}},
      'application/merge-patch+json',
    )
    expect(s.status).toBe(200)
    expect(s.body.status.addresses).toEqual([{type: 'IPAddress', value: '10.0.0.1'}])
    expect(s.body.metadata.generation).toBe(1)
  })

  it('knows no CEL rule of the upstream CRDs that it cannot evaluate', () => {
    expect(server.usingUpstreamCrds).toBe(true)
    expect(server.skippedCelRules).toEqual([])
  })
})

// A CRD created through the API, exercising the schema and CEL features the upstream CRDs
// use little or not at all.
const WIDGETS = '/apis/example.com/v1/namespaces/default/widgets'
const widgetCrd = (maxName = 20, extraRules: unknown[] = []) => ({
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: {name: 'widgets.example.com'},
  spec: {
    group: 'example.com',
    scope: 'Namespaced',
    names: {kind: 'Widget', plural: 'widgets', singular: 'widget', shortNames: ['wd']},
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        subresources: {status: {}},
        schema: {
          openAPIV3Schema: {
            type: 'object',
            properties: {
              spec: {
                type: 'object',
                required: ['size'],
                'x-kubernetes-validations': [
                  {
                    rule: 'self.size != "huge" || self.replicas <= 3',
                    messageExpression: '"huge widgets allow at most 3 replicas, got " + string(self.replicas)',
                  },
                  {
                    rule: '!has(self.forbidden)',
                    reason: 'FieldValueForbidden',
                    fieldPath: '.forbidden',
                    message: 'must not be set',
                  },
                  {
                    rule: '!has(self.endpoint) || isURL(self.endpoint) && url(self.endpoint).getScheme() == "https"',
                    message: 'endpoint must be an https URL',
                  },
                  {
                    rule: '!has(self.cidr) || cidr(self.cidr).containsIP(ip("10.0.0.1"))',
                    message: 'cidr must contain 10.0.0.1',
                  },
                  {
                    rule: '!has(self.memory) || quantity(self.memory).isLessThan(quantity("1Gi"))',
                    message: 'memory must be below 1Gi',
                  },
                  {
                    rule: '!has(self.nick) || !format.dns1123Label().validate(self.nick).hasValue()',
                    message: 'nick must be a DNS label',
                  },
                  ...extraRules,
                ],
                properties: {
                  name: {type: 'string', maxLength: maxName},
                  size: {type: 'string', enum: ['small', 'large', 'huge']},
                  replicas: {type: 'integer', minimum: 0, default: 1},
                  port: {'x-kubernetes-int-or-string': true},
                  note: {type: 'string', nullable: true},
                  forbidden: {type: 'string'},
                  endpoint: {type: 'string'},
                  cidr: {type: 'string'},
                  memory: {type: 'string'},
                  nick: {type: 'string'},
                  tags: {type: 'array', items: {type: 'string'}, 'x-kubernetes-list-type': 'set', maxItems: 3},
                  ports: {
                    type: 'array',
                    'x-kubernetes-list-type': 'map',
                    'x-kubernetes-list-map-keys': ['name'],
                    items: {
                      type: 'object',
                      required: ['name'],
                      properties: {name: {type: 'string'}, number: {type: 'integer'}},
                    },
                  },
                  extra: {type: 'object', 'x-kubernetes-preserve-unknown-fields': true},
                  immutable: {
                    type: 'string',
                    'x-kubernetes-validations': [{rule: 'self == oldSelf', message: 'is immutable'}],
                  },
                },
              },
              status: {type: 'object', properties: {ready: {type: 'boolean'}}},
            },
          },
        },
      },
    ],
  },
})
const widget = (name: string, spec: Record<string, unknown>) => ({
  apiVersion: 'example.com/v1',
  kind: 'Widget',
  metadata: {name},
  spec,
})

describe('a CRD created through the API', () => {
  beforeAll(async () => {
    const r = await raw(server).post('/apis/apiextensions.k8s.io/v1/customresourcedefinitions', widgetCrd())
    expect(r.status).toBe(201)
  })

  it('is served at once, appears in discovery and becomes Established', async () => {
    const api = raw(server)
    const disc = await api.get('/apis/example.com/v1')
    expect(disc.body.resources[0]).toMatchObject({name: 'widgets', kind: 'Widget', shortNames: ['wd']})
    const crd = await api.get('/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com')
    expect(crd.body.status.conditions.find((c: any) => c.type === 'Established').status).toBe('True')
    const w = await api.post(
      WIDGETS,
      widget('w1', {size: 'small', port: 'http', note: null, extra: {anything: {goes: [1, 2]}}}),
    )
    expect(w.status).toBe(201)
    expect(w.body.spec).toEqual({
      size: 'small',
      port: 'http',
      note: null,
      replicas: 1,
      extra: {anything: {goes: [1, 2]}},
    })
  })

  it('reports enum, type, int-or-string, maxLength and maxItems violations with the real texts', async () => {
    const r = await raw(server).post(
      WIDGETS,
      widget('w-bad', {size: 'tiny', replicas: 'two', port: true, name: 'x'.repeat(21), tags: ['a', 'b', 'c', 'd']}),
    )
    expect(r.status).toBe(422)
    const messages = r.body.details.causes.map((c: any) => `${c.field}: ${c.message}`)
    expect(messages).toEqual(
      expect.arrayContaining([
        'spec.size: Unsupported value: "tiny": supported values: "small", "large", "huge"',
        'spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"',
        'spec.name: Too long: may not be more than 20 bytes',
        'spec.tags: Too many: 4: must have at most 3 items',
        '<nil>: Invalid value: "": "spec.port" must validate at least one schema (anyOf)',
      ]),
    )
  })

  it('checks set and map list types', async () => {
    const r = await raw(server).post(
      WIDGETS,
      widget('w-lists', {
        size: 'small',
        tags: ['a', 'a'],
        ports: [
          {name: 'http', number: 80},
          {name: 'http', number: 81},
        ],
      }),
    )
    expect(r.status).toBe(422)
    expect(r.body.details.causes).toEqual([
      {reason: 'FieldValueDuplicate', message: 'Duplicate value: "a"', field: 'spec.tags[1]'},
      {
        reason: 'FieldValueDuplicate',
        message: 'Duplicate value: map[string]interface {}{"name":"http"}',
        field: 'spec.ports[1]',
      },
    ])
  })

  it('uses messageExpression, reason and fieldPath', async () => {
    const huge = await raw(server).post(WIDGETS, widget('w-huge', {size: 'huge', replicas: 5}))
    expect(huge.body.details.causes).toEqual([
      {
        reason: 'FieldValueInvalid',
        message: 'Invalid value: "object": huge widgets allow at most 3 replicas, got 5',
        field: 'spec',
      },
    ])
    const forbidden = await raw(server).post(WIDGETS, widget('w-forbidden', {size: 'small', forbidden: 'x'}))
    expect(forbidden.body.details.causes).toEqual([
      {reason: 'FieldValueForbidden', message: 'Forbidden: must not be set', field: 'spec.forbidden'},
    ])
  })

  it('evaluates the Kubernetes CEL libraries (URL, IP/CIDR, quantity, format)', async () => {
    const api = raw(server)
    const ok = await api.post(
      WIDGETS,
      widget('w-libs-ok', {
        size: 'small',
        endpoint: 'https://example.com/x',
        cidr: '10.0.0.0/8',
        memory: '512Mi',
        nick: 'abc',
      }),
    )
    expect(ok.status).toBe(201)
    const bad = await api.post(
      WIDGETS,
      widget('w-libs-bad', {
        size: 'small',
        endpoint: 'http://example.com',
        cidr: '192.168.0.0/16',
        memory: '2Gi',
        nick: 'Not_A_Label',
      }),
    )
    expect(bad.body.details.causes.map((c: any) => c.message)).toEqual([
      'Invalid value: "object": endpoint must be an https URL',
      'Invalid value: "object": cidr must contain 10.0.0.1',
      'Invalid value: "object": memory must be below 1Gi',
      'Invalid value: "object": nick must be a DNS label',
    ])
  })

  it('reports a CEL runtime error the way the real server does', async () => {
    const r = await raw(server).post(WIDGETS, widget('w-runtime', {size: 'small', cidr: 'not-a-cidr'}))
    expect(r.status).toBe(422)
    expect(r.body.details.causes[0].message).toMatch(
      /^Invalid value: "object": network address parse error during conversion from string: .* evaluating rule: cidr must contain 10\.0\.0\.1$/,
    )
  })

  it('enforces transition rules only when an old value exists', async () => {
    const api = raw(server)
    expect((await api.post(WIDGETS, widget('w-imm', {size: 'small', immutable: 'a'}))).status).toBe(201)
    const changed = await api.patch(`${WIDGETS}/w-imm`, {spec: {immutable: 'b'}}, 'application/merge-patch+json')
    expect(changed.body.message).toBe(
      'Widget.example.com "w-imm" is invalid: spec.immutable: Invalid value: "string": is immutable',
    )
  })

  it('ratchets: an update keeps a value that became invalid under a tightened schema, but not a changed one', async () => {
    const api = raw(server)
    expect((await api.post(WIDGETS, widget('w-ratchet', {size: 'small', name: 'twelve-chars'}))).status).toBe(201)
    const crd = (await api.get('/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com')).body
    const tightened = {...widgetCrd(5), metadata: crd.metadata}
    expect(
      (await api.put('/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com', tightened)).status,
    ).toBe(200)
    const unrelated = await api.patch(`${WIDGETS}/w-ratchet`, {spec: {size: 'large'}}, 'application/merge-patch+json')
    expect(unrelated.status).toBe(200)
    const changed = await api.patch(
      `${WIDGETS}/w-ratchet`,
      {spec: {name: 'thirteen-char'}},
      'application/merge-patch+json',
    )
    expect(changed.body.details.causes[0]).toEqual({
      reason: 'FieldValueTooLong',
      message: 'Too long: may not be more than 5 bytes',
      field: 'spec.name',
    })
    const fresh = await api.post(WIDGETS, widget('w-fresh', {size: 'small', name: 'sixsix'}))
    expect(fresh.status).toBe(422)
    const restore = (await api.get('/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com')).body
    await api.put('/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com', {
      ...widgetCrd(),
      metadata: restore.metadata,
    })
  })

  it('lists a rule the CEL library cannot compile as skipped, and warns on writes it would have judged', async () => {
    const api = raw(server)
    const crd = (await api.get('/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com')).body
    const withUnknown = {
      ...widgetCrd(20, [{rule: 'self.size.noSuchFunction()', message: 'never evaluated'}]),
      metadata: crd.metadata,
    }
    expect(
      (await api.put('/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com', withUnknown))
        .status,
    ).toBe(200)
    expect(server.skippedCelRules).toEqual([
      {
        crd: 'widgets.example.com',
        version: 'v1',
        path: 'spec',
        rule: 'self.size.noSuchFunction()',
        reason: expect.stringContaining('noSuchFunction'),
      },
    ])
    const w = await api.post(WIDGETS, widget('w-skipped', {size: 'small'}))
    expect(w.status).toBe(201)
    expect(w.headers.get('warning')).toContain('CEL rule at spec was not evaluated')
    const restore = (await api.get('/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com')).body
    await api.put('/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com', {
      ...widgetCrd(),
      metadata: restore.metadata,
    })
    expect(server.skippedCelRules).toEqual([])
  })

  it('refuses a CRD whose name does not match its names and group', async () => {
    const bad = {...widgetCrd(), metadata: {name: 'gadgets.example.com'}}
    const r = await raw(server).post('/apis/apiextensions.k8s.io/v1/customresourcedefinitions', bad)
    expect(r.status).toBe(422)
    expect(r.body.message).toBe(
      'CustomResourceDefinition.apiextensions.k8s.io "gadgets.example.com" is invalid: metadata.name: Invalid value: "gadgets.example.com": must be spec.names.plural+"."+spec.group',
    )
  })

  it('stops serving the kind and removes its objects when the CRD is deleted', async () => {
    const api = raw(server)
    const del = await api.delete('/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com')
    expect(del.status).toBe(200)
    expect(del.body.kind).toBe('CustomResourceDefinition')
    expect((await api.get(WIDGETS)).status).toBe(404)
    expect((await api.get('/apis/example.com/v1')).status).toBe(404)
  })
})
