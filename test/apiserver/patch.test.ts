import {AppsV1Api, CoreV1Api, PatchStrategy, setHeaderOptions} from '@kubernetes/client-node'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {startApiServer, type TestApiServer} from '../support/apiserver/index.js'
import {deployment, kubeConfig, namespace, raw, statusOf} from './helpers.js'

let server: TestApiServer
beforeAll(async () => {
  server = await startApiServer({quiet: true})
})
afterAll(() => server.close())

const MERGE = 'application/merge-patch+json'
const JSONPATCH = 'application/json-patch+json'
const SMP = 'application/strategic-merge-patch+json'

describe('JSON merge patch (RFC 7386)', () => {
  it('removes a label given as null (client-node CoreV1Api with the MergePatch content type)', async () => {
    server.seed(namespace('mp', {'istio-injection': 'enabled', keep: 'me'}))
    const core = kubeConfig(server).makeApiClient(CoreV1Api)
    const ns = await core.patchNamespace(
      {
        name: 'mp',
        body: {metadata: {labels: {'istio-injection': null, 'istio.io/dataplane-mode': 'ambient'}}},
        fieldManager: 'mesh-migrate',
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    )
    expect(ns.metadata?.labels).toEqual({
      keep: 'me',
      'kubernetes.io/metadata.name': 'mp',
      'istio.io/dataplane-mode': 'ambient',
    })
    const last = server.requestsMatching({verb: 'patch', resource: 'namespaces', name: 'mp'}).at(-1)!
    expect(last.contentType).toBe(MERGE)
    expect(last.query.fieldManager).toBe('mesh-migrate')
    const mine = ns.metadata?.managedFields?.find((m) => m.manager === 'mesh-migrate')
    expect(mine).toMatchObject({
      operation: 'Update',
      fieldsV1: {'f:metadata': {'f:labels': {'f:istio.io/dataplane-mode': {}}}},
    })
  })

  it('replaces lists wholesale and honours a resourceVersion in the patch as a precondition', async () => {
    const api = raw(server)
    const d = (await api.post('/apis/apps/v1/namespaces/default/deployments', deployment('mp-list'))).body
    const stale = await api.patch(
      '/apis/apps/v1/namespaces/default/deployments/mp-list',
      {metadata: {resourceVersion: '1'}, spec: {replicas: 3}},
      MERGE,
    )
    expect(stale.status).toBe(409)
    expect(stale.body.reason).toBe('Conflict')
    const ok = await api.patch(
      '/apis/apps/v1/namespaces/default/deployments/mp-list',
      {
        metadata: {resourceVersion: d.metadata.resourceVersion},
        spec: {template: {spec: {containers: [{name: 'only', image: 'x:1'}]}}},
      },
      MERGE,
    )
    expect(ok.status).toBe(200)
    expect(ok.body.spec.template.spec.containers.map((c: any) => c.name)).toEqual(['only'])
  })

  it('is what the typed client sends by default: JSON patch, which a merge-style body fails', async () => {
    const apps = kubeConfig(server).makeApiClient(AppsV1Api)
    server.seed(deployment('default-ct'))
    const err = await apps
      .patchNamespacedDeployment({name: 'default-ct', namespace: 'default', body: {spec: {replicas: 2}}})
      .catch((e) => e)
    expect(statusOf(err).code).toBe(400)
    expect(statusOf(err).body.message).toBe('json: cannot unmarshal object into Go value of type jsonpatch.Patch')
    expect(server.requestsMatching({verb: 'patch', name: 'default-ct'}).at(-1)!.contentType).toBe(JSONPATCH)
  })
})

describe('JSON patch (RFC 6902)', () => {
  it('applies add/replace/remove/move/copy and a passing test op', async () => {
    server.seed({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {name: 'jp', namespace: 'default', labels: {a: '1'}},
      data: {x: '1'},
    })
    const r = await raw(server).patch(
      '/api/v1/namespaces/default/configmaps/jp',
      [
        {op: 'test', path: '/metadata/labels/a', value: '1'},
        {op: 'add', path: '/metadata/labels/b', value: '2'},
        {op: 'replace', path: '/data/x', value: '9'},
        {op: 'copy', from: '/data/x', path: '/data/y'},
        {op: 'move', from: '/data/y', path: '/data/z'},
        {op: 'remove', path: '/metadata/labels/a'},
      ],
      JSONPATCH,
    )
    expect(r.status).toBe(200)
    expect(r.body.metadata.labels).toEqual({b: '2'})
    expect(r.body.data).toEqual({x: '9', z: '9'})
  })

  it('answers a failing test op with 422 and leaves the object alone', async () => {
    const r = await raw(server).patch(
      '/api/v1/namespaces/default/configmaps/jp',
      [
        {op: 'test', path: '/data/x', value: 'nope'},
        {op: 'remove', path: '/data/x'},
      ],
      JSONPATCH,
    )
    expect(r.status).toBe(422)
    expect(r.body).toMatchObject({
      reason: 'Invalid',
      message: 'the server rejected our request due to an error in our request',
      details: {causes: [{reason: 'UnexpectedServerResponse', message: 'testing value /data/x failed: test failed'}]},
    })
    expect(server.get({apiVersion: 'v1', kind: 'ConfigMap', namespace: 'default', name: 'jp'})!.data.x).toBe('9')
  })
})

describe('strategic merge patch', () => {
  it('adds a template annotation to a Deployment and keeps its containers (rollout restart)', async () => {
    const created = server.seed(deployment('restart'))[0]!
    const apps = kubeConfig(server).makeApiClient(AppsV1Api)
    const at = '2026-01-01T00:00:00Z'
    const d = await apps.patchNamespacedDeployment(
      {
        name: 'restart',
        namespace: 'default',
        body: {spec: {template: {metadata: {annotations: {'kubectl.kubernetes.io/restartedAt': at}}}}},
        fieldManager: 'kubectl-rollout',
      },
      setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
    )
    expect(d.spec?.template.metadata?.annotations).toEqual({'kubectl.kubernetes.io/restartedAt': at})
    expect(d.spec?.template.spec?.containers.map((c) => c.name)).toEqual(['app', 'sidecar'])
    expect(d.metadata?.generation).toBe(created.metadata.generation + 1)
  })

  it('merges containers by name, env by name and ports by containerPort', async () => {
    server.seed(deployment('smp-merge'))
    const r = await raw(server).patch(
      '/apis/apps/v1/namespaces/default/deployments/smp-merge',
      {
        spec: {
          template: {
            spec: {
              containers: [
                {name: 'app', image: 'nginx:1.28', env: [{name: 'A', value: '1'}], ports: [{containerPort: 8080}]},
              ],
            },
          },
        },
      },
      SMP,
    )
    const containers = r.body.spec.template.spec.containers
    expect(containers.map((c: any) => c.name)).toEqual(['app', 'sidecar'])
    expect(containers[0].image).toBe('nginx:1.28')
    expect(containers[0].env).toEqual([{name: 'A', value: '1'}])
    expect(containers[0].ports.map((p: any) => p.containerPort)).toEqual([80, 8080])
  })

  it('honours $patch: delete, $patch: replace, $retainKeys and $deleteFromPrimitiveList', async () => {
    server.seed({
      ...deployment('smp-directives'),
      metadata: {name: 'smp-directives', namespace: 'default', finalizers: ['a.example/x', 'b.example/y']},
    })
    const api = raw(server)
    const del = await api.patch(
      '/apis/apps/v1/namespaces/default/deployments/smp-directives',
      {spec: {template: {spec: {containers: [{name: 'sidecar', $patch: 'delete'}]}}}},
      SMP,
    )
    expect(del.body.spec.template.spec.containers.map((c: any) => c.name)).toEqual(['app'])
    const rep = await api.patch(
      '/apis/apps/v1/namespaces/default/deployments/smp-directives',
      {spec: {template: {metadata: {labels: {$patch: 'replace', app: 'smp-directives', v: '2'}}}}},
      SMP,
    )
    expect(rep.body.spec.template.metadata.labels).toEqual({app: 'smp-directives', v: '2'})
    const retain = await api.patch(
      '/apis/apps/v1/namespaces/default/deployments/smp-directives',
      {spec: {strategy: {$retainKeys: ['type'], type: 'Recreate', rollingUpdate: null}}},
      SMP,
    )
    expect(retain.body.spec.strategy).toEqual({type: 'Recreate'})
    const prim = await api.patch(
      '/apis/apps/v1/namespaces/default/deployments/smp-directives',
      {metadata: {'$deleteFromPrimitiveList/finalizers': ['a.example/x']}},
      SMP,
    )
    expect(prim.body.metadata.finalizers).toEqual(['b.example/y'])
    await api.patch(
      '/apis/apps/v1/namespaces/default/deployments/smp-directives',
      {metadata: {finalizers: null}},
      MERGE,
    )
  })

  it('unions primitive lists with a merge strategy (finalizers)', async () => {
    server.seed({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {name: 'smp-fin', namespace: 'default', finalizers: ['a.example/x']},
    })
    const r = await raw(server).patch(
      '/api/v1/namespaces/default/configmaps/smp-fin',
      {metadata: {finalizers: ['b.example/y']}},
      SMP,
    )
    expect(r.body.metadata.finalizers).toEqual(['a.example/x', 'b.example/y'])
    await raw(server).patch('/api/v1/namespaces/default/configmaps/smp-fin', {metadata: {finalizers: null}}, MERGE)
  })

  it('merges service ports by port', async () => {
    server.seed({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: {name: 'smp-svc', namespace: 'default'},
      spec: {
        selector: {app: 'a'},
        ports: [
          {name: 'http', port: 80},
          {name: 'grpc', port: 9090},
        ],
      },
    })
    const r = await raw(server).patch(
      '/api/v1/namespaces/default/services/smp-svc',
      {spec: {ports: [{port: 80, name: 'http-web'}]}},
      SMP,
    )
    expect(r.body.spec.ports).toEqual([
      {name: 'http-web', port: 80, protocol: 'TCP', targetPort: 80},
      {name: 'grpc', port: 9090, protocol: 'TCP', targetPort: 9090},
    ])
  })

  it('reorders a merged list by $setElementOrder, as kubectl sends it', async () => {
    server.seed(deployment('smp-order'))
    const r = await raw(server).patch(
      '/apis/apps/v1/namespaces/default/deployments/smp-order',
      {
        spec: {
          template: {
            spec: {
              '$setElementOrder/containers': [{name: 'sidecar'}, {name: 'app'}],
              containers: [{name: 'app', image: 'nginx:1.29'}],
            },
          },
        },
      },
      SMP,
    )
    expect(r.body.spec.template.spec.containers.map((c: any) => `${c.name}=${c.image}`)).toEqual([
      'sidecar=busybox:1.36',
      'app=nginx:1.29',
    ])
  })

  it('merges status conditions by type and owner references by uid', async () => {
    const [pod] = server.seed({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: 'smp-cond',
        namespace: 'default',
        ownerReferences: [{apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'rs', uid: 'u-1'}],
      },
      spec: {containers: [{name: 'a', image: 'x:1'}]},
      status: {
        phase: 'Running',
        conditions: [
          {type: 'Ready', status: 'False'},
          {type: 'PodScheduled', status: 'True'},
        ],
      },
    })
    expect(pod!.status.conditions).toHaveLength(2)
    const st = await raw(server).patch(
      '/api/v1/namespaces/default/pods/smp-cond/status',
      {status: {conditions: [{type: 'Ready', status: 'True'}]}},
      SMP,
    )
    expect(st.body.status.conditions).toEqual([
      {type: 'Ready', status: 'True'},
      {type: 'PodScheduled', status: 'True'},
    ])
    const owners = await raw(server).patch(
      '/api/v1/namespaces/default/pods/smp-cond',
      {
        metadata: {
          ownerReferences: [{apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'rs', uid: 'u-1', controller: true}],
        },
      },
      SMP,
    )
    expect(owners.body.metadata.ownerReferences).toEqual([
      {apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'rs', uid: 'u-1', controller: true},
    ])
  })

  it('is refused for custom resources with 415, listing the accepted types', async () => {
    server.seed({
      apiVersion: 'networking.istio.io/v1',
      kind: 'VirtualService',
      metadata: {name: 'vs', namespace: 'default'},
      spec: {hosts: ['reviews']},
    })
    const r = await raw(server).patch(
      '/apis/networking.istio.io/v1/namespaces/default/virtualservices/vs',
      {spec: {hosts: ['x']}},
      SMP,
    )
    expect(r.status).toBe(415)
    expect(r.body).toMatchObject({
      reason: 'UnsupportedMediaType',
      code: 415,
      message:
        'the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml',
    })
  })
})
