import {KubernetesObjectApi, PatchStrategy, type KubernetesObject} from '@kubernetes/client-node'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {startApiServer, type TestApiServer} from '../support/apiserver/index.js'
import {describeWithShared} from '../support/shared.js'
import {deployment, kubeConfig, raw, statusOf} from './helpers.js'

let server: TestApiServer
beforeAll(async () => {
  server = await startApiServer({quiet: true})
})
afterAll(() => server.close())

const APPLY = 'application/apply-patch+yaml'
const cmPath = (name: string) => `/api/v1/namespaces/default/configmaps/${name}`
const cm = (name: string, data: Record<string, string>, labels?: Record<string, string>) => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: {name, ...(labels ? {labels} : {})},
  data,
})

describe('server-side apply', () => {
  it('creates an absent object, owned by the applier with operation Apply', async () => {
    const r = await raw(server).patch(
      `${cmPath('ssa-new')}?fieldManager=mesh-migrate`,
      cm('ssa-new', {a: '1'}, {app: 'x'}),
      APPLY,
    )
    expect(r.status).toBe(201)
    expect(r.body.metadata.managedFields).toEqual([
      {
        manager: 'mesh-migrate',
        operation: 'Apply',
        apiVersion: 'v1',
        time: expect.any(String),
        fieldsType: 'FieldsV1',
        fieldsV1: {'f:data': {'f:a': {}}, 'f:metadata': {'f:labels': {'f:app': {}}}},
      },
    ])
  })

  it('requires fieldManager (422 on PatchOptions, as the real server answers)', async () => {
    const r = await raw(server).patch(cmPath('ssa-nofm'), cm('ssa-nofm', {a: '1'}), APPLY)
    expect(r.status).toBe(422)
    expect(r.body.message).toBe(
      'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch',
    )
    const force = await raw(server).patch(
      `${cmPath('ssa-new')}?force=true`,
      {data: {a: '2'}},
      'application/merge-patch+json',
    )
    expect(force.body.message).toBe(
      'PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be specified for non-apply patch',
    )
  })

  it('reports a conflict between two managers with the real message, and force takes ownership', async () => {
    const api = raw(server)
    await api.patch(`${cmPath('ssa-conflict')}?fieldManager=alice`, cm('ssa-conflict', {a: '1', b: '1'}), APPLY)
    const clash = await api.patch(`${cmPath('ssa-conflict')}?fieldManager=bob`, cm('ssa-conflict', {a: '2'}), APPLY)
    expect(clash.status).toBe(409)
    expect(clash.body).toEqual({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: 'Apply failed with 1 conflict: conflict with "alice": .data.a',
      reason: 'Conflict',
      details: {causes: [{reason: 'FieldManagerConflict', message: 'conflict with "alice"', field: '.data.a'}]},
      code: 409,
    })
    // Applying the same value as another manager is shared ownership, not a conflict.
    const shared = await api.patch(`${cmPath('ssa-conflict')}?fieldManager=bob`, cm('ssa-conflict', {b: '1'}), APPLY)
    expect(shared.status).toBe(200)
    const forced = await api.patch(
      `${cmPath('ssa-conflict')}?fieldManager=bob&force=true`,
      cm('ssa-conflict', {a: '2', b: '1'}),
      APPLY,
    )
    expect(forced.status).toBe(200)
    expect(forced.body.data).toEqual({a: '2', b: '1'})
    const owners = Object.fromEntries(forced.body.metadata.managedFields.map((m: any) => [m.manager, m.fieldsV1]))
    expect(owners.bob).toEqual({'f:data': {'f:a': {}, 'f:b': {}}})
    expect(owners.alice).toEqual({'f:data': {'f:b': {}}})
  })

  it('names Update managers with their apiVersion in conflicts', async () => {
    const api = raw(server)
    await api.post('/api/v1/namespaces/default/configmaps?fieldManager=kubectl-create', cm('ssa-upd', {a: '1'}))
    const clash = await api.patch(`${cmPath('ssa-upd')}?fieldManager=mesh-migrate`, cm('ssa-upd', {a: '2'}), APPLY)
    expect(clash.status).toBe(409)
    expect(clash.body.message).toBe('Apply failed with 1 conflict: conflict with "kubectl-create" using v1: .data.a')
    expect(clash.body.details.causes).toEqual([
      {reason: 'FieldManagerConflict', message: 'conflict with "kubectl-create" using v1', field: '.data.a'},
    ])
  })

  it('conflicts with an Update entry of the same manager name (a different manager to the real server)', async () => {
    const api = raw(server)
    await api.post('/api/v1/namespaces/default/configmaps?fieldManager=mesh-migrate', cm('ssa-self', {a: '1'}))
    const clash = await api.patch(`${cmPath('ssa-self')}?fieldManager=mesh-migrate`, cm('ssa-self', {a: '2'}), APPLY)
    expect(clash.body.message).toBe('Apply failed with 1 conflict: conflict with "mesh-migrate" using v1: .data.a')
  })

  it('lists several conflicts grouped by manager', async () => {
    const api = raw(server)
    await api.patch(`${cmPath('ssa-many')}?fieldManager=alice`, cm('ssa-many', {a: '1', b: '1'}), APPLY)
    const clash = await api.patch(`${cmPath('ssa-many')}?fieldManager=bob`, cm('ssa-many', {a: '2', b: '2'}), APPLY)
    expect(clash.body.message).toBe('Apply failed with 2 conflicts: conflicts with "alice":\n- .data.a\n- .data.b')
    expect(clash.body.details.causes).toHaveLength(2)
  })

  it('removes fields the manager stops applying unless someone else owns them', async () => {
    const api = raw(server)
    await api.patch(`${cmPath('ssa-prune')}?fieldManager=alice`, cm('ssa-prune', {a: '1', b: '1', c: '1'}), APPLY)
    await api.patch(`${cmPath('ssa-prune')}?fieldManager=bob`, cm('ssa-prune', {c: '1'}), APPLY)
    const r = await api.patch(`${cmPath('ssa-prune')}?fieldManager=alice`, cm('ssa-prune', {a: '1'}), APPLY)
    expect(r.body.data).toEqual({a: '1', c: '1'})
  })

  it('is idempotent: re-applying the same configuration writes nothing', async () => {
    const api = raw(server)
    const first = await api.patch(`${cmPath('ssa-idem')}?fieldManager=mesh-migrate`, cm('ssa-idem', {a: '1'}), APPLY)
    const second = await api.patch(`${cmPath('ssa-idem')}?fieldManager=mesh-migrate`, cm('ssa-idem', {a: '1'}), APPLY)
    expect(second.status).toBe(200)
    expect(second.body.metadata.resourceVersion).toBe(first.body.metadata.resourceVersion)
    expect(second.body.metadata.managedFields).toEqual(first.body.metadata.managedFields)
  })

  it('accepts YAML bodies and honours dryRun', async () => {
    const yaml = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa-yaml\ndata:\n  k: v\n'
    const api = raw(server)
    const dry = await api.patch(`${cmPath('ssa-yaml')}?fieldManager=m&dryRun=All`, yaml, APPLY)
    expect(dry.status).toBe(201)
    expect((await api.get(cmPath('ssa-yaml'))).status).toBe(404)
    const real = await api.patch(`${cmPath('ssa-yaml')}?fieldManager=m`, yaml, APPLY)
    expect(real.body.data).toEqual({k: 'v'})
  })

  it('merges associative lists by key (containers by name) and keeps defaulted fields unowned', async () => {
    const api = raw(server)
    const base = deployment('ssa-deploy')
    const r = await api.patch(
      '/apis/apps/v1/namespaces/default/deployments/ssa-deploy?fieldManager=mesh-migrate',
      base,
      APPLY,
    )
    expect(r.status).toBe(201)
    const c = r.body.metadata.managedFields[0].fieldsV1['f:spec']['f:template']['f:spec']['f:containers']
    expect(Object.keys(c)).toEqual(['k:{"name":"app"}', 'k:{"name":"sidecar"}'])
    expect(c['k:{"name":"app"}']).toEqual({
      '.': {},
      'f:image': {},
      'f:name': {},
      'f:ports': {'k:{"containerPort":80,"protocol":"TCP"}': {'.': {}, 'f:containerPort': {}}},
    })
    expect(r.body.spec.replicas).toBe(1)
    // A second manager changing only the image of one container conflicts on that field only.
    const other = await api.patch(
      '/apis/apps/v1/namespaces/default/deployments/ssa-deploy?fieldManager=bumper',
      {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: {name: 'ssa-deploy'},
        spec: {template: {spec: {containers: [{name: 'app', image: 'nginx:2'}]}}},
      },
      APPLY,
    )
    expect(other.status).toBe(409)
    expect(other.body.message).toBe(
      'Apply failed with 1 conflict: conflict with "mesh-migrate": .spec.template.spec.containers[name="app"].image',
    )
  })

  it('works through client-node KubernetesObjectApi.patch with PatchStrategy.ServerSideApply', async () => {
    const objects = KubernetesObjectApi.makeApiClient(kubeConfig(server))
    const obj: KubernetesObject & {data: Record<string, string>} = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {name: 'ssa-client', namespace: 'default'},
      data: {a: '1'},
    }
    const created = await objects.patch(obj, undefined, undefined, 'mesh-migrate', false, PatchStrategy.ServerSideApply)
    expect(created.metadata?.managedFields?.[0]?.operation).toBe('Apply')
    const log = server.requestsMatching({verb: 'patch', name: 'ssa-client'}).at(-1)!
    expect(log.contentType).toBe(APPLY)
    expect(log.query).toMatchObject({fieldManager: 'mesh-migrate', force: 'false'})
    const err = await objects
      .patch({...obj, data: {a: '2'}}, undefined, undefined, 'someone-else', false, PatchStrategy.ServerSideApply)
      .catch((e) => e)
    expect(statusOf(err).code).toBe(409)
  })
})

describeWithShared('server-side apply of custom resources', () => {
  it('applies a waypoint Gateway, validates it, and keeps listeners keyed by name', async () => {
    const gw = {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'Gateway',
      metadata: {name: 'waypoint', namespace: 'default', labels: {'istio.io/waypoint-for': 'service'}},
      spec: {gatewayClassName: 'istio-waypoint', listeners: [{name: 'mesh', port: 15008, protocol: 'HBONE'}]},
    }
    const r = await raw(server).patch(
      '/apis/gateway.networking.k8s.io/v1/namespaces/default/gateways/waypoint?fieldManager=mesh-migrate',
      gw,
      APPLY,
    )
    expect(r.status).toBe(201)
    const fields = r.body.metadata.managedFields[0].fieldsV1
    expect(fields['f:spec']['f:listeners']).toEqual({
      'k:{"name":"mesh"}': {'.': {}, 'f:name': {}, 'f:port': {}, 'f:protocol': {}},
    })
    // Defaults from the CRD schema are applied (and not owned by the applier).
    expect(r.body.spec.listeners[0].allowedRoutes).toEqual({namespaces: {from: 'Same'}})
    const bad = await raw(server).patch(
      '/apis/gateway.networking.k8s.io/v1/namespaces/default/gateways/waypoint?fieldManager=mesh-migrate',
      {...gw, spec: {...gw.spec, listeners: [{name: 'mesh', port: 0, protocol: 'HBONE'}]}},
      APPLY,
    )
    expect(bad.status).toBe(422)
    expect(bad.body.message).toBe(
      'Gateway.gateway.networking.k8s.io "waypoint" is invalid: spec.listeners[0].port: Invalid value: 0: spec.listeners[0].port in body should be greater than or equal to 1',
    )
  })

  it('refuses fields the schema does not declare (no pruning for apply), whatever fieldValidation says', async () => {
    const gw = {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'Gateway',
      metadata: {name: 'typo'},
      spec: {
        gatewayClassName: 'istio-waypoint',
        listeners: [{name: 'mesh', port: 15008, protocol: 'HBONE', colour: 'blue'}],
      },
    }
    const r = await raw(server).patch(
      '/apis/gateway.networking.k8s.io/v1/namespaces/default/gateways/typo?fieldManager=mesh-migrate&fieldValidation=Ignore',
      gw,
      APPLY,
    )
    expect(r.status).toBe(500)
    expect(r.body).toEqual({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message:
        'failed to create typed patch object (default/typo; gateway.networking.k8s.io/v1, Kind=Gateway): .spec.listeners[name="mesh"].colour: field not declared in schema',
      code: 500,
    })
  })
})
