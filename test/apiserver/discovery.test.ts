import {ApisApi, KubernetesObjectApi} from '@kubernetes/client-node'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {startApiServer, type TestApiServer} from '../support/apiserver/index.js'
import {describeWithShared} from '../support/shared.js'
import {kubeConfig, raw} from './helpers.js'

let server: TestApiServer
beforeAll(async () => {
  server = await startApiServer({quiet: true})
})
afterAll(() => server.close())

describe('discovery documents', () => {
  it('/version reports a 1.32 server', async () => {
    const r = await raw(server).get('/version')
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({major: '1', minor: '32', gitVersion: 'v1.32.0'})
  })

  it('/api lists v1 and /api/v1 lists core resources with subresources, short names and verbs', async () => {
    const api = await raw(server).get('/api')
    expect(api.body).toMatchObject({kind: 'APIVersions', versions: ['v1']})
    const v1 = await raw(server).get('/api/v1')
    expect(v1.body.kind).toBe('APIResourceList')
    expect(v1.body.apiVersion).toBeUndefined()
    expect(v1.body.groupVersion).toBe('v1')
    const byName = Object.fromEntries(v1.body.resources.map((r: any) => [r.name, r]))
    expect(byName.pods).toMatchObject({
      singularName: 'pod',
      namespaced: true,
      kind: 'Pod',
      shortNames: ['po'],
      categories: ['all'],
    })
    expect(byName['pods/status']).toMatchObject({namespaced: true, kind: 'Pod', verbs: ['get', 'patch', 'update']})
    expect(byName.namespaces).toMatchObject({namespaced: false, shortNames: ['ns']})
    expect(byName.namespaces.verbs).not.toContain('deletecollection')
    expect(byName['namespaces/status']).toBeDefined()
    expect(byName['configmaps/status']).toBeUndefined()
  })

  it('/apis lists built-in groups first, with their preferred versions', async () => {
    const r = await raw(server).get('/apis')
    expect(r.body.kind).toBe('APIGroupList')
    const names = r.body.groups.map((g: any) => g.name)
    expect(names.indexOf('apps')).toBeLessThan(names.indexOf('coordination.k8s.io'))
    const apps = r.body.groups.find((g: any) => g.name === 'apps')
    expect(apps.preferredVersion).toEqual({groupVersion: 'apps/v1', version: 'v1'})
    const group = await raw(server).get('/apis/coordination.k8s.io')
    expect(group.body).toMatchObject({kind: 'APIGroup', apiVersion: 'v1', name: 'coordination.k8s.io'})
    const leases = await raw(server).get('/apis/coordination.k8s.io/v1')
    expect(leases.body).toMatchObject({
      kind: 'APIResourceList',
      apiVersion: 'v1',
      groupVersion: 'coordination.k8s.io/v1',
    })
    expect(leases.body.resources.map((x: any) => x.name)).toEqual(['leases'])
  })

  it('answers unknown groups, versions and resources with the real 404 Status', async () => {
    for (const path of [
      '/apis/nope.example.com',
      '/apis/nope.example.com/v1',
      '/apis/apps/v9',
      '/apis/apps/v1/namespaces/default/gizmos',
      '/api/v1/namespaces/default/pods/x/log',
    ]) {
      const r = await raw(server).get(path)
      expect(r.status, path).toBe(404)
      expect(r.body).toEqual({
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message: 'the server could not find the requested resource',
        reason: 'NotFound',
        details: {},
        code: 404,
      })
    }
  })

  it('client-node ApisApi.getAPIVersions sees the groups', async () => {
    const apis = kubeConfig(server).makeApiClient(ApisApi)
    const groups = await apis.getAPIVersions()
    expect(groups.groups.map((g) => g.name)).toContain('apps')
  })
})

describeWithShared('discovery of CRD groups', () => {
  it('serves only served versions, in kube-aware priority order', async () => {
    const net = await raw(server).get('/apis/networking.istio.io')
    expect(net.body.versions.map((v: any) => v.version)).toEqual(['v1', 'v1beta1', 'v1alpha3'])
    expect(net.body.preferredVersion.version).toBe('v1')
    // Telemetry stores v1alpha1 but also serves v1: v1 is preferred (kube-aware priority).
    const tel = await raw(server).get('/apis/telemetry.istio.io')
    expect(tel.body.preferredVersion.version).toBe('v1')
    expect(tel.body.versions.map((v: any) => v.version)).toEqual(['v1', 'v1alpha1'])
    // TCPRoute v1alpha2 is listed with served: false in the standard channel.
    const tcp = await raw(server).get('/apis/gateway.networking.k8s.io/v1alpha2')
    expect(tcp.status).toBe(404)
  })

  it('lists kinds per group-version with short names, categories and the status subresource', async () => {
    const r = await raw(server).get('/apis/networking.istio.io/v1alpha3')
    const names = r.body.resources.map((x: any) => x.name)
    expect(names).toContain('envoyfilters')
    const v1 = await raw(server).get('/apis/networking.istio.io/v1')
    const byName = Object.fromEntries(v1.body.resources.map((x: any) => [x.name, x]))
    expect(byName.envoyfilters).toBeUndefined()
    expect(byName.virtualservices).toMatchObject({
      kind: 'VirtualService',
      namespaced: true,
      shortNames: ['vs'],
      categories: ['istio-io', 'networking-istio-io'],
    })
    expect(byName.virtualservices.verbs).toEqual([
      'delete',
      'deletecollection',
      'get',
      'list',
      'patch',
      'create',
      'update',
      'watch',
    ])
    expect(byName['virtualservices/status']).toMatchObject({verbs: ['get', 'patch', 'update']})
    const gc = await raw(server).get('/apis/gateway.networking.k8s.io/v1')
    expect(gc.body.resources.find((x: any) => x.name === 'gatewayclasses').namespaced).toBe(false)
  })

  it('client-node KubernetesObjectApi resolves kinds with one discovery call per apiVersion', async () => {
    server.resetRequestLog()
    const objects = KubernetesObjectApi.makeApiClient(kubeConfig(server))
    await objects.list('networking.istio.io/v1', 'VirtualService', 'default')
    await objects.list('networking.istio.io/v1', 'VirtualService', 'kube-system')
    const discovery = server.requestsMatching({verb: 'discovery'})
    expect(discovery.map((e) => e.path)).toEqual(['/apis/networking.istio.io/v1'])
    expect(server.requestsMatching({verb: 'list', resource: 'virtualservices'})).toHaveLength(2)
  })
})
