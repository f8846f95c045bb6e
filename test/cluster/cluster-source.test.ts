// The live-cluster source against the test API server: discovery, pagination, one LIST per kind,
// missing and older-version CRDs, 403 and 404 handling (issue 3 item 1).
import path from 'node:path'

import {stringify} from 'yaml'
import {afterAll, afterEach, beforeAll, describe, expect, it} from 'vitest'

import {KubeApiError} from '../../src/kube/errors.js'
import {buildInventory} from '../../src/planner/inventory.js'
import {ClusterSource} from '../../src/sources/cluster.js'
import {INVENTORY_KINDS} from '../../src/sources/kinds.js'
import {type RequestLogEntry} from '../support/apiserver/index.js'
import {type ClusterServer, startClusterServer} from './server.js'
import {clientFor, ns, tempDir, writeText} from './support.js'

/** The first page of every LIST (no `continue`), keyed by what was listed. */
function initialLists(entries: readonly RequestLogEntry[]): string[] {
  return entries
    .filter((e) => e.verb === 'list' && !e.query.continue)
    .map((e) => `${e.group ?? ''}/${e.resource}@${e.namespace ?? '*'}?${e.query.labelSelector ?? ''}`)
}

const authorizationPolicy = (name: string, namespace: string, apiVersion = 'security.istio.io/v1') => ({
  apiVersion,
  kind: 'AuthorizationPolicy',
  metadata: {name, namespace},
  spec: {selector: {matchLabels: {app: 'ratings'}}, action: 'ALLOW', rules: [{to: [{operation: {methods: ['GET']}}]}]},
})

describe('a cluster with the Istio and Gateway API CRDs', () => {
  let server: ClusterServer
  beforeAll(async () => {
    server = await startClusterServer()
    await server.seed([ns('shop', {'istio-injection': 'enabled'}), authorizationPolicy('ratings-get', 'shop')])
    // More ConfigMaps in the root namespace than fit in one page of 500.
    await server.seed(
      Array.from({length: 1201}, (_, i) => ({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: {name: `cm-${String(i).padStart(4, '0')}`, namespace: 'istio-system'},
        data: {i: String(i)},
      })),
    )
  })
  afterAll(() => server.close())
  afterEach(() => server.faults.clear())

  it('starts a LIST over when its continue token expired (410 Gone) instead of returning a partial list', async () => {
    const client = await clientFor(server)
    const resource = (await client.resourceFor('v1', 'ConfigMap'))!
    // The second page fails once with 410, as after an etcd compaction.
    server.faults.add({
      match: {verb: 'list', resource: 'configmaps', namespace: 'istio-system'},
      after: 1,
      times: 1,
      status: 410,
      message: 'The provided continue parameter is too old to display a consistent list result.',
    })
    server.resetRequestLog()
    const items = await client.list(resource, {namespace: 'istio-system'})
    expect(items).toHaveLength(1201)
    expect(new Set(items.map((i) => i.metadata.name)).size).toBe(1201)
    const pages = server.requestsMatching({verb: 'list', resource: 'configmaps', namespace: 'istio-system'})
    expect(pages.map((p) => [p.status, Boolean(p.query.continue)])).toEqual([
      [200, false],
      [410, true],
      [200, false],
      [200, true],
      [200, true],
    ])
  })

  it('waits as long as Retry-After says before retrying a 429', async () => {
    const client = await clientFor(server, undefined, {retries: 2})
    const resource = (await client.resourceFor('v1', 'ConfigMap'))!
    server.faults.add({
      match: {verb: 'list', resource: 'configmaps', namespace: 'shop'},
      times: 1,
      status: 429,
      retryAfterSeconds: 1,
    })
    server.resetRequestLog()
    await client.list(resource, {namespace: 'shop'})
    const [first, second] = server.requestsMatching({verb: 'list', resource: 'configmaps', namespace: 'shop'})
    expect(first!.status).toBe(429)
    expect(second!.status).toBe(200)
    expect(second!.startedAt - first!.startedAt).toBeGreaterThanOrEqual(1000)
  })

  it('reads every page of a kind with limit and continue, and each kind with one paginated LIST', async () => {
    const source = await ClusterSource.open(await clientFor(server))
    server.resetRequestLog()
    const snapshot = await source.snapshot('shop', {rootNamespace: 'istio-system'})

    expect(
      snapshot.objects.filter((o) => o.kind === 'ConfigMap' && o.metadata.namespace === 'istio-system'),
    ).toHaveLength(1201)
    const configMapPages = server.requestsMatching({verb: 'list', resource: 'configmaps', namespace: 'istio-system'})
    expect(configMapPages).toHaveLength(3)
    expect(configMapPages.map((e) => e.query.limit)).toEqual(['500', '500', '500'])
    expect(configMapPages[0]!.query.continue).toBeUndefined()
    expect(configMapPages[1]!.query.continue).toBeTruthy()
    expect(configMapPages[2]!.query.continue).toBeTruthy()

    // One LIST (plus its continuation pages) per kind and scope, never one GET per object.
    const lists = initialLists(server.requests)
    expect(new Set(lists).size).toBe(lists.length)
    expect(lists).toHaveLength(INVENTORY_KINDS.length)
    expect(server.requestsMatching({verb: 'get'})).toHaveLength(0)
    // Config other namespaces export is listed cluster-wide, the namespace's workloads in the namespace.
    expect(lists).toContain('security.istio.io/authorizationpolicies@*?')
    expect(lists).toContain('apps/deployments@shop?')
    expect(lists).toContain('apps/deployments@istio-system?app=istiod')
    expect(snapshot.missingKinds).toEqual([])
    expect(snapshot.objects.find((o) => o.kind === 'AuthorizationPolicy')).toMatchObject({
      apiVersion: 'security.istio.io/v1',
      metadata: {name: 'ratings-get', namespace: 'shop'},
    })
  })

  it("reads the Istio version from the istiod serving the namespace's revision", async () => {
    const istiod = (name: string, rev: string | undefined, tag: string) => ({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: {name, namespace: 'istio-system', labels: {app: 'istiod', ...(rev ? {'istio.io/rev': rev} : {})}},
      spec: {
        selector: {matchLabels: {app: 'istiod'}},
        template: {
          metadata: {labels: {app: 'istiod'}},
          spec: {containers: [{name: 'discovery', image: `docker.io/istio/pilot:${tag}`}]},
        },
      },
    })
    await server.seed([
      istiod('istiod', undefined, '1.27.3'),
      istiod('istiod-canary', 'canary', '1.29.0-distroless'),
      ns('canary-ns', {'istio.io/rev': 'canary'}),
    ])
    const source = await ClusterSource.open(await clientFor(server))
    expect((await source.snapshot('shop', {rootNamespace: 'istio-system'})).istioVersion).toBe('1.27')
    expect((await source.snapshot('canary-ns', {rootNamespace: 'istio-system'})).istioVersion).toBe('1.29')
  })

  it('falls back to the namespace and the root namespace when a mesh-wide LIST is forbidden, and says so', async () => {
    await server.seed([
      ns('other'),
      authorizationPolicy('exported', 'other'),
      authorizationPolicy('root-policy', 'istio-system'),
    ])
    await server.addToken('partial-token', {
      user: 'partial',
      permissions: [
        {
          verbs: ['get', 'list'],
          apiGroups: [
            '',
            'apps',
            'batch',
            'networking.k8s.io',
            'admissionregistration.k8s.io',
            'networking.istio.io',
            'telemetry.istio.io',
            'extensions.istio.io',
            'gateway.networking.k8s.io',
          ],
          resources: ['*'],
        },
        {
          verbs: ['get', 'list'],
          apiGroups: ['security.istio.io'],
          resources: ['peerauthentications', 'requestauthentications'],
        },
        {
          verbs: ['list'],
          apiGroups: ['security.istio.io'],
          resources: ['authorizationpolicies'],
          namespaces: ['shop', 'istio-system'],
        },
      ],
    })
    const snapshot = await (
      await ClusterSource.open(await clientFor(server, 'partial-token'))
    ).snapshot('shop', {rootNamespace: 'istio-system'})
    const policies = snapshot.objects
      .filter((o) => o.kind === 'AuthorizationPolicy')
      .map((o) => `${o.metadata.namespace}/${o.metadata.name}`)
      .sort()
    expect(policies).toEqual(['istio-system/root-policy', 'shop/ratings-get'])
    expect(snapshot.missingKinds).toEqual([])
    const partial = snapshot.findings.find((f) => f.code === 'PartialList')
    expect(partial?.message).toContain('AuthorizationPolicy could not be listed cluster-wide (forbidden)')
    expect(partial?.message).toContain('shop and istio-system')
    expect(partial?.fix).toContain('authorizationpolicies.security.istio.io')
  })

  it('turns a forbidden kind into a missing kind and an inventory finding, and a 403 into a message naming verb and resource', async () => {
    await server.addToken('no-deployments', {
      user: 'no-deployments',
      permissions: [
        {
          verbs: ['get', 'list'],
          apiGroups: [
            '',
            'batch',
            'networking.k8s.io',
            'admissionregistration.k8s.io',
            'networking.istio.io',
            'security.istio.io',
            'telemetry.istio.io',
            'extensions.istio.io',
            'gateway.networking.k8s.io',
          ],
          resources: ['*'],
        },
        {verbs: ['get', 'list'], apiGroups: ['apps'], resources: ['statefulsets', 'daemonsets', 'replicasets']},
      ],
    })
    const client = await clientFor(server, 'no-deployments')
    const snapshot = await (await ClusterSource.open(client)).snapshot('shop', {rootNamespace: 'istio-system'})
    expect(snapshot.missingKinds).toContainEqual({apiVersion: 'apps/v1', kind: 'Deployment', reason: 'forbidden'})
    const inventory = buildInventory(snapshot, {waypointFor: 'service'})
    const finding = inventory.findings.find((f) => f.id === 'missing-kind/apps/v1/Deployment')
    expect(finding).toMatchObject({code: 'MissingKind', severity: 'warning'})
    expect(finding?.message).toContain('permission denied')

    const deployments = (await client.resourceFor('apps/v1', 'Deployment'))!
    const error = await client.list(deployments, {namespace: 'shop'}).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(KubeApiError)
    const apiError = error as KubeApiError
    expect(apiError.status).toBe(403)
    expect(apiError.message).toContain('list deployments.apps in namespace shop failed: 403 Forbidden')
    expect(apiError.message).toContain('cannot list resource "deployments" in API group "apps" in the namespace "shop"')
    expect(apiError.suggestion).toContain('Grant "list" on deployments.apps in namespace shop')
  })

  it('without read access to kube-system, records no cluster uid and says the plan will be matched by server URL', async () => {
    await server.addToken('namespace-scoped', {
      user: 'namespace-scoped',
      permissions: [{verbs: ['get', 'list'], apiGroups: ['*'], resources: ['*'], namespaces: ['shop', 'istio-system']}],
    })
    const snapshot = await (
      await ClusterSource.open(await clientFor(server, 'namespace-scoped'))
    ).snapshot('shop', {rootNamespace: 'istio-system'})
    expect(snapshot.target).toEqual({context: expect.any(String), server: server.url, clusterID: ''})
    expect(snapshot.findings.find((f) => f.code === 'ClusterUnidentified')).toEqual({
      id: 'cluster-unidentified',
      code: 'ClusterUnidentified',
      severity: 'info',
      message: `namespace kube-system could not be read, so the plan records no cluster uid: apply and rollback will recognise the cluster by its API server URL (${server.url}) only.`,
      fix: 'Grant get on namespaces/kube-system to pin plans to the cluster itself.',
    })
    const admin = await (
      await ClusterSource.open(await clientFor(server))
    ).snapshot('shop', {rootNamespace: 'istio-system'})
    expect(admin.findings.some((f) => f.code === 'ClusterUnidentified')).toBe(false)
  })

  it('explains a 404 for a kind the cluster does not serve, and for a missing object', async () => {
    const client = await clientFor(server)
    const error = await client
      .get({apiVersion: 'example.com/v1', kind: 'Widget', namespace: 'shop', name: 'w'})
      .catch((e: unknown) => e)
    expect(error).toBeInstanceOf(KubeApiError)
    expect((error as KubeApiError).status).toBe(404)
    expect((error as KubeApiError).message).toContain('the server does not serve Widget in API group "example.com"')
    expect((error as KubeApiError).suggestion).toContain(
      'The Widget API (example.com/v1) is missing, not just the object: the CustomResourceDefinition for Widget in API group example.com is not installed',
    )
    // A missing object of a served kind is not an error for get …
    expect(await client.get({apiVersion: 'v1', kind: 'ConfigMap', namespace: 'shop', name: 'absent'})).toBeUndefined()
    // … but is one for a write, with the server's message.
    const patch = await client
      .mergePatch({apiVersion: 'v1', kind: 'ConfigMap', namespace: 'shop', name: 'absent'}, {data: {a: 'b'}})
      .catch((e: unknown) => e)
    expect((patch as KubeApiError).message).toBe(
      'patch configmaps/absent in namespace shop failed: 404 NotFound: configmaps "absent" not found',
    )
    expect((patch as KubeApiError).suggestion).toBe(
      'The object configmaps/absent in namespace shop does not exist (its API is served): check the name and namespace (`kubectl get configmaps absent -n shop`), or re-plan if it was deleted since the plan was made.',
    )
  })

  it('reports a kind whose CRD disappeared after discovery as not installed', async () => {
    const client = await clientFor(server)
    const source = await ClusterSource.open(client)
    await client.discover()
    const response = await fetch(
      `${server.url}/apis/apiextensions.k8s.io/v1/customresourcedefinitions/wasmplugins.extensions.istio.io`,
      {method: 'DELETE', headers: {Authorization: `Bearer ${server.adminToken}`}},
    )
    expect(response.status).toBe(200)
    // A CRD's deletion is asynchronous on the real server (the customresourcecleanup finalizer removes its objects
    // first): the type is served until that ends. Wait for the server to stop serving it, as a user would meet it.
    await expect
      .poll(
        async () =>
          (
            await fetch(`${server.url}/apis/extensions.istio.io/v1alpha1/namespaces/shop/wasmplugins`, {
              headers: {Authorization: `Bearer ${server.adminToken}`},
            })
          ).status,
        {timeout: 30_000, interval: 100},
      )
      .toBe(404)
    const snapshot = await source.snapshot('shop', {rootNamespace: 'istio-system'})
    expect(snapshot.missingKinds).toContainEqual({
      apiVersion: 'extensions.istio.io/v1alpha1',
      kind: 'WasmPlugin',
      reason: 'not-installed',
    })
    // The server's 404 for the type (not an object) names the missing CRD.
    const error = (await client
      .list((await client.resourceFor('extensions.istio.io/v1alpha1', 'WasmPlugin'))!, {namespace: 'shop'})
      .catch((e: unknown) => e)) as KubeApiError
    expect(error.status).toBe(404)
    expect(error.suggestion).toContain(
      'CustomResourceDefinition wasmplugins.extensions.istio.io is not installed in this cluster. Install it (Istio installs them',
    )
  })
})

describe('a cluster without Gateway API and with AuthorizationPolicy served only at v1beta1', () => {
  let server: ClusterServer
  beforeAll(async () => {
    // An older Istio: security.istio.io serves AuthorizationPolicy at v1beta1 only; no Gateway API at all.
    const crd = {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: {name: 'authorizationpolicies.security.istio.io'},
      spec: {
        group: 'security.istio.io',
        names: {
          kind: 'AuthorizationPolicy',
          listKind: 'AuthorizationPolicyList',
          plural: 'authorizationpolicies',
          singular: 'authorizationpolicy',
        },
        scope: 'Namespaced',
        versions: [
          {
            name: 'v1beta1',
            served: true,
            storage: true,
            schema: {openAPIV3Schema: {type: 'object', 'x-kubernetes-preserve-unknown-fields': true}},
            subresources: {status: {}},
          },
        ],
      },
    }
    const file = await writeText(path.join(await tempDir(), 'old-istio-crds.yaml'), stringify(crd))
    server = await startClusterServer({crds: [file]})
    await server.seed([
      ns('shop', {'istio-injection': 'enabled'}),
      authorizationPolicy('ratings-get', 'shop', 'security.istio.io/v1beta1'),
      {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: {name: 'ratings', namespace: 'shop'},
        spec: {
          selector: {matchLabels: {app: 'ratings'}},
          template: {metadata: {labels: {app: 'ratings'}}, spec: {containers: [{name: 'ratings', image: 'ratings:1'}]}},
        },
      },
      // A Service in front of the pods: without one the waypoint copy could never attach (RetargetNoService).
      {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: {name: 'ratings', namespace: 'shop'},
        spec: {selector: {app: 'ratings'}, ports: [{name: 'http', port: 9080}]},
      },
    ])
  })
  afterAll(() => server.close())

  it('lists the kind at the version the cluster serves and classifies it', async () => {
    const snapshot = await (
      await ClusterSource.open(await clientFor(server))
    ).snapshot('shop', {rootNamespace: 'istio-system'})
    const policy = snapshot.objects.find((o) => o.kind === 'AuthorizationPolicy')
    expect(policy).toMatchObject({apiVersion: 'security.istio.io/v1beta1', metadata: {name: 'ratings-get'}})
    expect(snapshot.missingKinds.some((m) => m.kind === 'AuthorizationPolicy')).toBe(false)
    const inventory = buildInventory(snapshot, {waypointFor: 'service'})
    expect(inventory.objects.find((o) => o.ref.kind === 'AuthorizationPolicy')).toMatchObject({
      ref: {apiVersion: 'security.istio.io/v1beta1'},
      verdict: 'L7',
      action: 'retarget',
    })
  })

  it('reports every Gateway API kind and the absent Istio kinds as missing, with findings', async () => {
    const snapshot = await (
      await ClusterSource.open(await clientFor(server))
    ).snapshot('shop', {rootNamespace: 'istio-system'})
    const missing = snapshot.missingKinds
      .filter((m) => m.apiVersion.startsWith('gateway.networking.k8s.io/'))
      .map((m) => m.kind)
      .sort()
    expect(missing).toEqual(['GRPCRoute', 'Gateway', 'GatewayClass', 'HTTPRoute', 'TCPRoute', 'TLSRoute'])
    expect(snapshot.missingKinds.every((m) => m.reason === 'not-installed')).toBe(true)
    expect(snapshot.missingKinds.map((m) => m.kind)).toContain('VirtualService')
    const inventory = buildInventory(snapshot, {waypointFor: 'service'})
    const gatewayFinding = inventory.findings.find((f) => f.id === 'missing-kind/gateway.networking.k8s.io/v1/Gateway')
    expect(gatewayFinding?.code).toBe('MissingKind')
    expect(gatewayFinding?.message).toContain('is not served by this cluster (CRD not installed)')
  })
})
