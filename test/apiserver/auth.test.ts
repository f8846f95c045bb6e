import {AuthorizationV1Api, CoreV1Api, PatchStrategy, setHeaderOptions} from '@kubernetes/client-node'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {startApiServer, type TestApiServer} from '../support/apiserver/index.js'
import {kubeConfig, namespace, raw, statusOf} from './helpers.js'

let server: TestApiServer
beforeAll(async () => {
  server = await startApiServer({
    quiet: true,
    crdFiles: 'builtin',
    tokens: {
      'alice-token': {
        user: 'alice',
        groups: ['devs'],
        permissions: [
          {verbs: ['get', 'list', 'watch'], apiGroups: ['', 'apps'], resources: ['*']},
          {verbs: ['patch', 'update'], apiGroups: ['apps'], resources: ['deployments'], namespaces: ['bookinfo']},
          {verbs: ['get', 'patch'], apiGroups: [''], resources: ['pods/status'], namespaces: ['bookinfo']},
          {
            verbs: ['create'],
            apiGroups: ['coordination.k8s.io'],
            resources: ['leases'],
            namespaces: ['bookinfo'],
            resourceNames: [],
          },
        ],
      },
      'nobody-token': {user: 'nobody'},
    },
  })
  server.seed([
    namespace('bookinfo'),
    {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {name: 'p', namespace: 'bookinfo'},
      spec: {containers: [{name: 'a', image: 'x:1'}]},
    },
  ])
})
afterAll(() => server.close())

describe('authentication', () => {
  it('answers an unknown token with 401 Unauthorized', async () => {
    const r = await raw(server, 'wrong').get('/api/v1/namespaces')
    expect(r.status).toBe(401)
    expect(r.body).toEqual({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: 'Unauthorized',
      reason: 'Unauthorized',
      code: 401,
    })
  })

  it('treats a request without a token as system:anonymous, who may read /version only', async () => {
    expect((await raw(server, '').get('/version')).status).toBe(200)
    const r = await raw(server, '').get('/api')
    expect(r.status).toBe(403)
    expect(r.body.message).toBe('forbidden: User "system:anonymous" cannot get path "/api"')
  })
})

describe('authorization against the permission table', () => {
  it('lets every authenticated user read discovery', async () => {
    expect((await raw(server, 'nobody-token').get('/apis')).status).toBe(200)
    expect((await raw(server, 'nobody-token').get('/api/v1')).status).toBe(200)
  })

  it('phrases a namespaced denial like the real server (namespaces carry their own name as namespace)', async () => {
    const core = kubeConfig(server, 'alice-token').makeApiClient(CoreV1Api)
    const err = await core
      .patchNamespace(
        {name: 'bookinfo', body: {metadata: {labels: {a: 'b'}}}},
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      )
      .catch((e) => e)
    expect(statusOf(err)).toEqual({
      code: 403,
      body: {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message:
          'namespaces "bookinfo" is forbidden: User "alice" cannot patch resource "namespaces" in API group "" in the namespace "bookinfo"',
        reason: 'Forbidden',
        details: {name: 'bookinfo', kind: 'namespaces'},
        code: 403,
      },
    })
  })

  it('phrases cluster-scope, collection and subresource denials', async () => {
    const alice = raw(server, 'alice-token')
    const nodes = await alice.post('/api/v1/nodes', {apiVersion: 'v1', kind: 'Node', metadata: {name: 'n'}})
    expect(nodes.body.message).toBe(
      'nodes is forbidden: User "alice" cannot create resource "nodes" in API group "" at the cluster scope',
    )
    const leases = await alice.get('/apis/coordination.k8s.io/v1/namespaces/bookinfo/leases')
    expect(leases.body.message).toBe(
      'leases.coordination.k8s.io is forbidden: User "alice" cannot list resource "leases" in API group "coordination.k8s.io" in the namespace "bookinfo"',
    )
    const status = await alice.patch(
      '/api/v1/namespaces/default/pods/p/status',
      {status: {phase: 'Running'}},
      'application/merge-patch+json',
    )
    expect(status.body.message).toBe(
      'pods "p" is forbidden: User "alice" cannot patch resource "pods/status" in API group "" in the namespace "default"',
    )
    expect(status.body.details).toEqual({name: 'p', kind: 'pods'})
  })

  it('allows what a rule grants, limited to its namespaces and subresources', async () => {
    const alice = raw(server, 'alice-token')
    expect((await alice.get('/api/v1/namespaces/bookinfo/pods')).status).toBe(200)
    expect((await alice.get('/api/v1/pods')).status).toBe(200)
    const st = await alice.patch(
      '/api/v1/namespaces/bookinfo/pods/p/status',
      {status: {phase: 'Running'}},
      'application/merge-patch+json',
    )
    expect(st.status).toBe(200)
    const mainResource = await alice.patch(
      '/api/v1/namespaces/bookinfo/pods/p',
      {metadata: {labels: {a: 'b'}}},
      'application/merge-patch+json',
    )
    expect(mainResource.status).toBe(403)
  })

  it('answers SelfSubjectAccessReviews from the same table', async () => {
    const authz = kubeConfig(server, 'alice-token').makeApiClient(AuthorizationV1Api)
    const ask = async (resourceAttributes: Record<string, string>) =>
      (
        await authz.createSelfSubjectAccessReview({
          body: {apiVersion: 'authorization.k8s.io/v1', kind: 'SelfSubjectAccessReview', spec: {resourceAttributes}},
        })
      ).status!
    const yes = await ask({namespace: 'bookinfo', verb: 'patch', group: 'apps', resource: 'deployments'})
    expect(yes.allowed).toBe(true)
    expect(yes.reason).toContain('alice')
    expect((await ask({namespace: 'other', verb: 'patch', group: 'apps', resource: 'deployments'})).allowed).toBe(false)
    expect((await ask({namespace: 'bookinfo', verb: 'patch', group: '', resource: 'namespaces'})).allowed).toBe(false)
    expect(
      (await ask({namespace: 'bookinfo', verb: 'patch', group: '', resource: 'pods', subresource: 'status'})).allowed,
    ).toBe(true)
    expect((await ask({verb: 'list', group: '', resource: 'pods'})).allowed).toBe(true)
    const raw201 = await raw(server, 'nobody-token').post('/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', {
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SelfSubjectAccessReview',
      spec: {resourceAttributes: {verb: 'get', resource: 'pods'}},
    })
    expect(raw201.status).toBe(201)
    expect(raw201.body).toMatchObject({kind: 'SelfSubjectAccessReview', status: {allowed: false}})
  })

  it('needs create as well as patch to create an object through server-side apply', async () => {
    const alice = raw(server, 'alice-token')
    const d = {apiVersion: 'apps/v1', kind: 'Deployment', metadata: {name: 'new-one'}, spec: {}}
    const r = await alice.patch(
      '/apis/apps/v1/namespaces/bookinfo/deployments/new-one?fieldManager=mesh-migrate',
      d,
      'application/apply-patch+yaml',
    )
    expect(r.status).toBe(403)
    // The create check is the registry's (withAuthorization): RBAC gives no reason on a denial.
    expect(r.body).toMatchObject({
      reason: 'Forbidden',
      message: 'deployments.apps "new-one" is forbidden: ',
      details: {name: 'new-one', group: 'apps', kind: 'deployments'},
    })
  })

  it('lets the admin token do everything', async () => {
    expect(
      (await raw(server).post('/api/v1/nodes', {apiVersion: 'v1', kind: 'Node', metadata: {name: 'admin-node'}}))
        .status,
    ).toBe(201)
  })
})
