import {mkdtempSync, writeFileSync} from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {stringify} from 'yaml'
import {afterEach, describe, expect, it, vi} from 'vitest'
import {startApiServer, type TestApiServer} from '../support/apiserver/index.js'
import {CRDS_DIR, describeWithShared} from '../support/shared.js'
import {raw} from './helpers.js'

const started: TestApiServer[] = []
afterEach(async () => {
  await Promise.all(started.splice(0).map((s) => s.close()))
  vi.restoreAllMocks()
})

describe('without ../shared (the built-in kind table)', () => {
  it('serves the Istio and Gateway API kinds without schemas, and says so once', async () => {
    const writes: string[] = []
    vi.spyOn(process.stderr, 'write').mockImplementation((chunk: unknown) => {
      writes.push(String(chunk))
      return true
    })
    const missing = path.join(CRDS_DIR, 'does-not-exist')
    const a = await startApiServer({upstreamCrdsDir: missing})
    const b = await startApiServer({upstreamCrdsDir: missing})
    started.push(a, b)
    expect(a.usingUpstreamCrds).toBe(false)
    expect(a.skippedCelRules).toEqual([])
    const notices = writes.filter((w) => w.includes('built-in table'))
    expect(notices).toHaveLength(1)
    expect(notices[0]).toBe(
      `[test-apiserver] ${missing} is not present: registering the Istio and Gateway API kinds from the built-in table, without schema validation.\n`,
    )

    const net = await raw(a).get('/apis/networking.istio.io')
    expect(net.body.versions.map((v: any) => v.version)).toEqual(['v1', 'v1beta1', 'v1alpha3'])
    expect((await raw(a).get('/apis/networking.istio.io/v1alpha3')).body.resources.map((r: any) => r.name)).toContain(
      'envoyfilters',
    )
    expect(
      (await raw(a).get('/apis/gateway.networking.k8s.io/v1')).body.resources.find(
        (r: any) => r.name === 'gatewayclasses',
      ).namespaced,
    ).toBe(false)
    // No schema: what the real CRD would refuse is stored as sent.
    const ap = await raw(a).post('/apis/security.istio.io/v1/namespaces/default/authorizationpolicies', {
      apiVersion: 'security.istio.io/v1',
      kind: 'AuthorizationPolicy',
      metadata: {name: 'both'},
      spec: {selector: {matchLabels: {app: 'a'}}, targetRefs: [{kind: 'Service', group: '', name: 's'}]},
    })
    expect(ap.status).toBe(201)
    // Still a custom resource: strategic merge patch is refused, status is a subresource.
    const smp = await raw(a).patch(
      '/apis/security.istio.io/v1/namespaces/default/authorizationpolicies/both',
      {spec: {}},
      'application/strategic-merge-patch+json',
    )
    expect(smp.status).toBe(415)
  })
})

describeWithShared('explicit CRD files', () => {
  it('registers exactly the given files', async () => {
    const s = await startApiServer({
      quiet: true,
      crdFiles: [path.join(CRDS_DIR, 'gateway-api-standard', 'gateway.networking.k8s.io_gateways.yaml')],
    })
    started.push(s)
    expect(s.usingUpstreamCrds).toBe(true)
    expect((await raw(s).get('/apis/gateway.networking.k8s.io/v1')).body.resources.map((r: any) => r.name)).toEqual([
      'gateways',
      'gateways/status',
    ])
    expect((await raw(s).get('/apis/networking.istio.io')).status).toBe(404)
  })
})

describe('CRD files with rules the CEL library cannot compile', () => {
  it('lists them, prints the count and places once at startup, and never treats them as passing', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'apiserver-crd-'))
    const file = path.join(dir, 'things.yaml')
    writeFileSync(
      file,
      stringify({
        apiVersion: 'apiextensions.k8s.io/v1',
        kind: 'CustomResourceDefinition',
        metadata: {name: 'things.example.org'},
        spec: {
          group: 'example.org',
          scope: 'Namespaced',
          names: {kind: 'Thing', plural: 'things'},
          versions: [
            {
              name: 'v1',
              served: true,
              storage: true,
              schema: {
                openAPIV3Schema: {
                  type: 'object',
                  properties: {
                    spec: {
                      type: 'object',
                      properties: {
                        a: {
                          type: 'string',
                          'x-kubernetes-validations': [{rule: 'self.isShiny()', message: 'must shine'}],
                        },
                      },
                    },
                  },
                },
              },
            },
          ],
        },
      }),
    )
    const writes: string[] = []
    vi.spyOn(process.stderr, 'write').mockImplementation((chunk: unknown) => {
      writes.push(String(chunk))
      return true
    })
    const s = await startApiServer({crdFiles: [file]})
    started.push(s)
    expect(s.skippedCelRules).toEqual([
      {
        crd: 'things.example.org',
        version: 'v1',
        path: 'spec.a',
        rule: 'self.isShiny()',
        reason: expect.stringContaining('isShiny'),
      },
    ])
    const notice = writes.filter((w) => w.includes('CEL rule'))
    expect(notice).toHaveLength(1)
    expect(notice[0]).toMatch(
      /^\[test-apiserver\] 1 CEL rule\(s\) cannot be evaluated and are reported as skipped \(never passed\): things\.example\.org v1 spec\.a: /,
    )
    const r = await raw(s).post('/apis/example.org/v1/namespaces/default/things', {
      apiVersion: 'example.org/v1',
      kind: 'Thing',
      metadata: {name: 't'},
      spec: {a: 'dull'},
    })
    expect(r.status).toBe(201)
    expect(r.headers.get('warning')).toContain('CEL rule at spec.a was not evaluated')
  })
})
