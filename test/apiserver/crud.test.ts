import {AppsV1Api, CoreV1Api, KubernetesObjectApi} from '@kubernetes/client-node'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {startApiServer, type TestApiServer} from '../support/apiserver/index.js'
import {deployment, kubeConfig, namespace, raw, statusOf} from './helpers.js'

let server: TestApiServer
beforeAll(async () => {
  server = await startApiServer({quiet: true, crdFiles: 'builtin'})
})
afterAll(() => server.close())

const NS = '/api/v1/namespaces'

describe('create and get', () => {
  it('stamps uid, creationTimestamp, resourceVersion and generation (for kinds that have one)', async () => {
    const api = raw(server)
    await api.post(NS, namespace('crud-a'))
    const d = await api.post('/apis/apps/v1/namespaces/crud-a/deployments', deployment('web', 'crud-a'))
    expect(d.status).toBe(201)
    expect(d.body.metadata.uid).toMatch(/^[0-9a-f-]{36}$/)
    expect(d.body.metadata.creationTimestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/)
    expect(Number(d.body.metadata.resourceVersion)).toBeGreaterThan(0)
    expect(d.body.metadata.generation).toBe(1)
    // Defaults a real server fills in.
    expect(d.body.spec).toMatchObject({
      replicas: 1,
      revisionHistoryLimit: 10,
      progressDeadlineSeconds: 600,
      strategy: {type: 'RollingUpdate', rollingUpdate: {maxSurge: '25%', maxUnavailable: '25%'}},
    })
    expect(d.body.spec.template.spec.containers[0]).toMatchObject({
      imagePullPolicy: 'IfNotPresent',
      terminationMessagePath: '/dev/termination-log',
      ports: [{containerPort: 80, protocol: 'TCP'}],
    })
    const cm = await api.post('/api/v1/namespaces/crud-a/configmaps', {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {name: 'c'},
      data: {a: 'b'},
    })
    expect(cm.body.metadata.generation).toBeUndefined()
    const got = await api.get('/apis/apps/v1/namespaces/crud-a/deployments/web')
    expect(got.body).toEqual(d.body)
  })

  it('sets the namespace metadata label and Active phase, and answers 409 AlreadyExists with the real message', async () => {
    const api = raw(server)
    const ns = await api.post(NS, namespace('crud-b', {team: 'x'}))
    expect(ns.body.metadata.labels).toEqual({team: 'x', 'kubernetes.io/metadata.name': 'crud-b'})
    expect(ns.body.status).toEqual({phase: 'Active'})
    const again = await api.post(NS, namespace('crud-b'))
    expect(again.status).toBe(409)
    expect(again.body).toEqual({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: 'namespaces "crud-b" already exists',
      reason: 'AlreadyExists',
      details: {name: 'crud-b', kind: 'namespaces'},
      code: 409,
    })
    await api.post('/apis/apps/v1/namespaces/crud-b/deployments', deployment('web', 'crud-b'))
    const dup = await api.post('/apis/apps/v1/namespaces/crud-b/deployments', deployment('web', 'crud-b'))
    expect(dup.body.message).toBe('deployments.apps "web" already exists')
    expect(dup.body.details).toEqual({name: 'web', group: 'apps', kind: 'deployments'})
  })

  it('404s with the real messages for a missing object and a missing namespace', async () => {
    const api = raw(server)
    const missing = await api.get('/apis/apps/v1/namespaces/default/deployments/nope')
    expect(missing.status).toBe(404)
    expect(missing.body).toMatchObject({
      message: 'deployments.apps "nope" not found',
      reason: 'NotFound',
      details: {name: 'nope', group: 'apps', kind: 'deployments'},
    })
    const noNs = await api.post('/api/v1/namespaces/ghost/configmaps', {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {name: 'c'},
    })
    expect(noNs.status).toBe(404)
    expect(noNs.body).toMatchObject({
      message: 'namespaces "ghost" not found',
      reason: 'NotFound',
      details: {name: 'ghost', kind: 'namespaces'},
    })
  })

  it('generates names from generateName', async () => {
    const r = await raw(server).post('/api/v1/namespaces/default/configmaps', {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {generateName: 'gen-'},
    })
    expect(r.status).toBe(201)
    expect(r.body.metadata.name).toMatch(/^gen-[bcdfghjklmnpqrstvwxz2456789]{5}$/)
  })

  it('rejects invalid names and mismatched namespaces like the real server', async () => {
    const api = raw(server)
    const bad = await api.post('/api/v1/namespaces/default/configmaps', {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {name: 'Bad_Name'},
    })
    expect(bad.status).toBe(422)
    expect(bad.body.message).toBe(
      `ConfigMap "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
    )
    expect(bad.body.details).toEqual({
      name: 'Bad_Name',
      kind: 'ConfigMap',
      causes: [
        {
          reason: 'FieldValueInvalid',
          message: expect.stringContaining('Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain'),
          field: 'metadata.name',
        },
      ],
    })
    const svc = await api.post('/api/v1/namespaces/default/services', {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: {name: '1svc'},
      spec: {ports: [{port: 80}]},
    })
    expect(svc.body.message).toContain(
      "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character",
    )
    const other = await api.post('/api/v1/namespaces/default/configmaps', {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {name: 'x', namespace: 'kube-system'},
    })
    expect(other.status).toBe(400)
    expect(other.body.message).toBe(
      'the namespace of the provided object does not match the namespace sent on the request',
    )
    const label = await api.post('/api/v1/namespaces/default/configmaps', {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {name: 'y', labels: {app: 'has space'}},
    })
    expect(label.body.message).toContain(
      'metadata.labels: Invalid value: "has space": a valid label must be an empty string or consist of alphanumeric characters',
    )
  })

  it('applies light validation to built-in kinds (containers, selector vs template labels)', async () => {
    const api = raw(server)
    const pod = await api.post('/api/v1/namespaces/default/pods', {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {name: 'p'},
      spec: {containers: [{name: 'a'}]},
    })
    expect(pod.status).toBe(422)
    expect(pod.body.message).toBe('Pod "p" is invalid: spec.containers[0].image: Required value')
    const d = deployment('mismatch')
    d.spec.template.metadata.labels = {app: 'other'}
    const dep = await api.post('/apis/apps/v1/namespaces/default/deployments', d)
    expect(dep.body.message).toBe(
      'Deployment.apps "mismatch" is invalid: spec.template.metadata.labels: Invalid value: map[string]string{"app":"other"}: `selector` does not match template `labels`',
    )
  })

  it('gives a pod its Pending status and QoS class, ignoring status sent on create', async () => {
    const r = await raw(server).post('/api/v1/namespaces/default/pods', {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {name: 'pod-status'},
      spec: {containers: [{name: 'a', image: 'nginx'}]},
      status: {phase: 'Running'},
    })
    expect(r.body.status).toEqual({phase: 'Pending', qosClass: 'BestEffort'})
    expect(r.body.spec.containers[0].imagePullPolicy).toBe('Always')
    expect(r.body.spec.serviceAccountName).toBe('default')
  })
})

describe('update, resourceVersion and generation', () => {
  it('answers a stale resourceVersion with the real 409 Conflict', async () => {
    const api = raw(server)
    const created = (await api.post('/apis/apps/v1/namespaces/default/deployments', deployment('conflict'))).body
    const first = structuredClone(created)
    first.spec.replicas = 2
    expect((await api.put('/apis/apps/v1/namespaces/default/deployments/conflict', first)).status).toBe(200)
    const stale = structuredClone(created)
    stale.spec.replicas = 3
    const r = await api.put('/apis/apps/v1/namespaces/default/deployments/conflict', stale)
    expect(r.status).toBe(409)
    expect(r.body).toEqual({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message:
        'Operation cannot be fulfilled on deployments.apps "conflict": the object has been modified; please apply your changes to the latest version and try again',
      reason: 'Conflict',
      details: {name: 'conflict', group: 'apps', kind: 'deployments'},
      code: 409,
    })
  })

  it('bumps generation on spec changes only, and resourceVersion on every real change', async () => {
    const api = raw(server)
    const c = (await api.post('/apis/apps/v1/namespaces/default/deployments', deployment('gen'))).body
    const labelled = structuredClone(c)
    labelled.metadata.labels = {x: 'y'}
    const afterLabel = (await api.put('/apis/apps/v1/namespaces/default/deployments/gen', labelled)).body
    expect(afterLabel.metadata.generation).toBe(1)
    expect(Number(afterLabel.metadata.resourceVersion)).toBeGreaterThan(Number(c.metadata.resourceVersion))
    const scaled = structuredClone(afterLabel)
    scaled.spec.replicas = 5
    const afterScale = (await api.put('/apis/apps/v1/namespaces/default/deployments/gen', scaled)).body
    expect(afterScale.metadata.generation).toBe(2)
    // Writing the same object again is a no-op: no new resourceVersion.
    const same = (await api.put('/apis/apps/v1/namespaces/default/deployments/gen', afterScale)).body
    expect(same.metadata.resourceVersion).toBe(afterScale.metadata.resourceVersion)
  })

  it('keeps status out of main-resource writes and everything but status out of /status writes', async () => {
    const api = raw(server)
    const c = (await api.post('/apis/apps/v1/namespaces/default/deployments', deployment('st'))).body
    const withStatus = {...c, status: {replicas: 7}}
    const main = (await api.put('/apis/apps/v1/namespaces/default/deployments/st', withStatus)).body
    expect(main.status).toBeUndefined()
    const viaStatus = (
      await api.put('/apis/apps/v1/namespaces/default/deployments/st/status', {
        ...main,
        spec: {...main.spec, replicas: 9},
        status: {replicas: 7},
      })
    ).body
    expect(viaStatus.status).toEqual({replicas: 7})
    expect(viaStatus.spec.replicas).toBe(1)
    expect(viaStatus.metadata.generation).toBe(1)
    expect(viaStatus.metadata.managedFields.find((m: any) => m.subresource === 'status')).toMatchObject({
      operation: 'Update',
      fieldsV1: {'f:status': {'f:replicas': {}}},
    })
  })

  it('keeps annotation changes written through pods/status (how istio-cni marks captured pods), but drops them for apps kinds', async () => {
    const api = raw(server)
    const pod = (
      await api.post('/api/v1/namespaces/default/pods', {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: {name: 'cni'},
        spec: {containers: [{name: 'a', image: 'x:1'}]},
      })
    ).body
    const patched = await api.patch(
      '/api/v1/namespaces/default/pods/cni/status',
      {metadata: {annotations: {'ambient.istio.io/redirection': 'enabled'}}},
      'application/merge-patch+json',
    )
    expect(patched.status).toBe(200)
    expect(patched.body.metadata.annotations).toEqual({'ambient.istio.io/redirection': 'enabled'})
    expect(patched.body.metadata.ownerReferences).toEqual(pod.metadata.ownerReferences)
    const d = (await api.post('/apis/apps/v1/namespaces/default/deployments', deployment('st-meta'))).body
    const viaStatus = (
      await api.put('/apis/apps/v1/namespaces/default/deployments/st-meta/status', {
        ...d,
        metadata: {...d.metadata, annotations: {x: 'y'}},
        status: {replicas: 1},
      })
    ).body
    expect(viaStatus.metadata.annotations).toBeUndefined()
  })

  it('rejects a PUT whose body names another object', async () => {
    const c = (
      await raw(server).post('/api/v1/namespaces/default/configmaps', {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: {name: 'named'},
      })
    ).body
    const r = await raw(server).put('/api/v1/namespaces/default/configmaps/named', {
      ...c,
      metadata: {...c.metadata, name: 'other'},
    })
    expect(r.status).toBe(400)
    expect(r.body.message).toBe('the name of the object (other) does not match the name on the URL (named)')
  })

  it('answers 405 for methods the endpoint does not support', async () => {
    const r = await raw(server).post('/api/v1/namespaces/default/configmaps/x', {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {name: 'x'},
    })
    expect(r.status).toBe(405)
    expect(r.body).toMatchObject({
      reason: 'MethodNotAllowed',
      message: 'the server does not allow this method on the requested resource',
      code: 405,
    })
  })
})

describe('delete', () => {
  it('returns a Success Status for most kinds and the object for pods, services and namespaces', async () => {
    const api = raw(server)
    const d = (await api.post('/apis/apps/v1/namespaces/default/deployments', deployment('del'))).body
    const r = await api.delete('/apis/apps/v1/namespaces/default/deployments/del')
    expect(r.status).toBe(200)
    expect(r.body).toEqual({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Success',
      details: {name: 'del', group: 'apps', kind: 'deployments', uid: d.metadata.uid},
    })
    await api.post('/api/v1/namespaces/default/pods', {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {name: 'delpod'},
      spec: {containers: [{name: 'a', image: 'x:1'}]},
    })
    const pod = await api.delete('/api/v1/namespaces/default/pods/delpod')
    expect(pod.body).toMatchObject({kind: 'Pod', metadata: {name: 'delpod'}})
    expect((await api.get('/api/v1/namespaces/default/pods/delpod')).status).toBe(404)
  })

  it('keeps an object with finalizers until they are removed', async () => {
    const api = raw(server)
    await api.post('/api/v1/namespaces/default/configmaps', {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {name: 'fin', finalizers: ['example.com/hold']},
    })
    const del = await api.delete('/api/v1/namespaces/default/configmaps/fin')
    expect(del.status).toBe(200)
    expect(del.body.metadata.deletionTimestamp).toBeDefined()
    const still = await api.get('/api/v1/namespaces/default/configmaps/fin')
    expect(still.status).toBe(200)
    const released = await api.patch(
      '/api/v1/namespaces/default/configmaps/fin',
      {metadata: {finalizers: null}},
      'application/merge-patch+json',
    )
    expect(released.status).toBe(200)
    expect((await api.get('/api/v1/namespaces/default/configmaps/fin')).status).toBe(404)
  })

  it('removes a namespace with everything in it (at once), showing it Terminating in the response', async () => {
    const api = raw(server)
    await api.post(NS, namespace('doomed'))
    await api.post('/api/v1/namespaces/doomed/configmaps', {apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: 'c'}})
    const r = await api.delete('/api/v1/namespaces/doomed')
    expect(r.body).toMatchObject({kind: 'Namespace', status: {phase: 'Terminating'}})
    expect(r.body.metadata.deletionTimestamp).toBeDefined()
    expect((await api.get('/api/v1/namespaces/doomed')).status).toBe(404)
    expect(server.get({apiVersion: 'v1', kind: 'ConfigMap', namespace: 'doomed', name: 'c'})).toBeUndefined()
  })

  it('garbage-collects owned objects (background) and orphans them on request', async () => {
    const api = raw(server)
    const owner = (
      await api.post('/api/v1/namespaces/default/configmaps', {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: {name: 'owner'},
      })
    ).body
    const ref = {apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid: owner.metadata.uid}
    await api.post('/api/v1/namespaces/default/configmaps', {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {name: 'owned', ownerReferences: [ref]},
    })
    await api.delete('/api/v1/namespaces/default/configmaps/owner')
    expect((await api.get('/api/v1/namespaces/default/configmaps/owned')).status).toBe(404)

    const owner2 = (
      await api.post('/api/v1/namespaces/default/configmaps', {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: {name: 'owner2'},
      })
    ).body
    await api.post('/api/v1/namespaces/default/configmaps', {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {name: 'owned2', ownerReferences: [{...ref, name: 'owner2', uid: owner2.metadata.uid}]},
    })
    await api.delete('/api/v1/namespaces/default/configmaps/owner2?propagationPolicy=Orphan')
    const orphan = await api.get('/api/v1/namespaces/default/configmaps/owned2')
    expect(orphan.status).toBe(200)
    expect(orphan.body.metadata.ownerReferences).toBeUndefined()
  })

  it('honours delete preconditions', async () => {
    const api = raw(server)
    await api.post('/api/v1/namespaces/default/configmaps', {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {name: 'pre'},
    })
    const r = await api.delete('/api/v1/namespaces/default/configmaps/pre', {
      kind: 'DeleteOptions',
      apiVersion: 'v1',
      preconditions: {uid: 'not-it'},
    })
    expect(r.status).toBe(409)
    expect(r.body.message).toMatch(
      /^Operation cannot be fulfilled on configmaps "pre": Precondition failed: UID in precondition: not-it, UID in object meta: /,
    )
  })
})

describe('dryRun=All', () => {
  it('validates and answers like a real write without persisting anything', async () => {
    const api = raw(server)
    const before = server.core.store.currentRv
    const created = await api.post('/api/v1/namespaces/default/configmaps?dryRun=All', {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {name: 'dry'},
      data: {a: '1'},
    })
    expect(created.status).toBe(201)
    expect(created.body.metadata.uid).toBeDefined()
    expect(created.body.metadata.resourceVersion).toBeUndefined()
    expect((await api.get('/api/v1/namespaces/default/configmaps/dry')).status).toBe(404)
    const invalidDry = await api.post('/api/v1/namespaces/default/configmaps?dryRun=All', {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {name: 'Dry!'},
    })
    expect(invalidDry.status).toBe(422)

    const real = (
      await api.post('/api/v1/namespaces/default/configmaps', {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: {name: 'wet'},
        data: {a: '1'},
      })
    ).body
    const patched = await api.patch(
      '/api/v1/namespaces/default/configmaps/wet?dryRun=All',
      {data: {a: '2'}},
      'application/merge-patch+json',
    )
    expect(patched.body.data).toEqual({a: '2'})
    expect(patched.body.metadata.resourceVersion).toBe(real.metadata.resourceVersion)
    const del = await api.delete('/api/v1/namespaces/default/configmaps/wet?dryRun=All')
    expect(del.status).toBe(200)
    const after = await api.get('/api/v1/namespaces/default/configmaps/wet')
    expect(after.body.data).toEqual({a: '1'})
    expect(after.body.metadata.resourceVersion).toBe(real.metadata.resourceVersion)
    expect(server.core.store.currentRv).toBe(before + 1)
  })

  it('rejects dryRun values other than All with the real 422', async () => {
    const r = await raw(server).post('/api/v1/namespaces/default/configmaps?dryRun=Yes', {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {name: 'x'},
    })
    expect(r.status).toBe(422)
    expect(r.body.message).toBe(
      'CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: "Yes": supported values: "All"',
    )
  })
})

describe('list, selectors and pagination', () => {
  beforeAll(() => {
    server.seed([namespace('pages')])
    for (let i = 0; i < 7; i++)
      server.seed({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: {
          name: `cm-${i}`,
          namespace: 'pages',
          labels: {tier: i % 2 ? 'odd' : 'even', ...(i === 3 ? {special: 'yes'} : {})},
        },
      })
  })

  it('pages with limit/continue into a consistent snapshot that equals the whole list', async () => {
    const api = raw(server)
    const whole = (await api.get('/api/v1/namespaces/pages/configmaps')).body
    expect(whole.items).toHaveLength(7)
    // Built-in list items carry no kind/apiVersion, as on a real server.
    expect(whole.items[0].kind).toBeUndefined()
    const first = (await api.get('/api/v1/namespaces/pages/configmaps?limit=3')).body
    expect(first.items.map((i: any) => i.metadata.name)).toEqual(['cm-0', 'cm-1', 'cm-2'])
    expect(first.metadata.continue).toBeTruthy()
    expect(first.metadata.remainingItemCount).toBe(4)
    // A change between pages does not leak into the snapshot.
    server.seed({apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: 'cm-3a', namespace: 'pages'}})
    const names = [...first.items.map((i: any) => i.metadata.name)]
    let token = first.metadata.continue
    while (token) {
      const page = (await api.get(`/api/v1/namespaces/pages/configmaps?limit=3&continue=${encodeURIComponent(token)}`))
        .body
      expect(page.metadata.resourceVersion).toBe(first.metadata.resourceVersion)
      names.push(...page.items.map((i: any) => i.metadata.name))
      token = page.metadata.continue
    }
    expect(names).toEqual(whole.items.map((i: any) => i.metadata.name))
    await api.delete('/api/v1/namespaces/pages/configmaps/cm-3a')
  })

  it('pages with client-node KubernetesObjectApi.list', async () => {
    const objects = KubernetesObjectApi.makeApiClient(kubeConfig(server))
    const names: string[] = []
    let token: string | undefined
    do {
      const page = await objects.list(
        'v1',
        'ConfigMap',
        'pages',
        undefined,
        undefined,
        undefined,
        undefined,
        undefined,
        2,
        token,
      )
      names.push(...page.items.map((i) => i.metadata!.name!))
      token = page.metadata?._continue
    } while (token)
    expect(names).toHaveLength(7)
    expect(
      server
        .requestsMatching({verb: 'list', resource: 'configmaps', namespace: 'pages'})
        .filter((e) => e.query.limit === '2'),
    ).toHaveLength(4)
  })

  it('filters by label selectors with every operator', async () => {
    const api = raw(server)
    const names = async (sel: string) =>
      (await api.get(`/api/v1/namespaces/pages/configmaps?labelSelector=${encodeURIComponent(sel)}`)).body.items.map(
        (i: any) => i.metadata.name,
      )
    expect(await names('tier=odd')).toEqual(['cm-1', 'cm-3', 'cm-5'])
    expect(await names('tier==even')).toEqual(['cm-0', 'cm-2', 'cm-4', 'cm-6'])
    expect(await names('tier!=even')).toEqual(['cm-1', 'cm-3', 'cm-5'])
    expect(await names('tier in (odd, nope)')).toEqual(['cm-1', 'cm-3', 'cm-5'])
    expect(await names('tier notin (odd)')).toEqual(['cm-0', 'cm-2', 'cm-4', 'cm-6'])
    expect(await names('special')).toEqual(['cm-3'])
    expect(await names('!special,tier=odd')).toEqual(['cm-1', 'cm-5'])
    const bad = await api.get(`/api/v1/namespaces/pages/configmaps?labelSelector=${encodeURIComponent('tier in odd')}`)
    expect(bad.status).toBe(400)
    expect(bad.body).toMatchObject({
      reason: 'BadRequest',
      message: "unable to parse requirement: found 'odd' expected: '('",
    })
    const badValue = await api.get(
      `/api/v1/namespaces/pages/configmaps?labelSelector=${encodeURIComponent('tier=a b')}`,
    )
    expect(badValue.body.message).toBe("found 'b', expected: ',' or 'end of string'")
  })

  it('filters by field selectors and rejects unsupported field labels', async () => {
    const api = raw(server)
    const byName = (await api.get('/api/v1/configmaps?fieldSelector=metadata.name%3Dcm-2')).body
    expect(byName.items.map((i: any) => `${i.metadata.namespace}/${i.metadata.name}`)).toEqual(['pages/cm-2'])
    const notNs = (await api.get('/api/v1/configmaps?fieldSelector=metadata.namespace!%3Dpages')).body
    expect(notNs.items.every((i: any) => i.metadata.namespace !== 'pages')).toBe(true)
    await api.post('/api/v1/namespaces/pages/pods', {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {name: 'on-node'},
      spec: {nodeName: 'n1', containers: [{name: 'a', image: 'x:1'}]},
    })
    const pods = (await api.get('/api/v1/pods?fieldSelector=spec.nodeName%3Dn1,status.phase%3DPending')).body
    expect(pods.items.map((i: any) => i.metadata.name)).toEqual(['on-node'])
    const bad = await api.get('/api/v1/namespaces/pages/configmaps?fieldSelector=data.a%3Db')
    expect(bad.status).toBe(400)
    expect(bad.body).toMatchObject({reason: 'BadRequest', message: 'field label not supported: data.a'})
  })

  it('answers 410 Expired for a continue token older than the kept history', async () => {
    const small = await startApiServer({quiet: true, crdFiles: 'builtin', historyLimit: 5})
    try {
      const api = raw(small)
      const first = (await api.get('/api/v1/namespaces?limit=1')).body
      for (let i = 0; i < 10; i++)
        small.seed({apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: `churn-${i}`, namespace: 'default'}})
      const r = await api.get(`/api/v1/namespaces?limit=1&continue=${encodeURIComponent(first.metadata.continue)}`)
      expect(r.status).toBe(410)
      expect(r.body).toMatchObject({reason: 'Expired', code: 410})
      expect(r.body.message).toMatch(/^The provided continue parameter is too old to display a consistent list result/)
    } finally {
      await small.close()
    }
  })

  it('lists across namespaces with client-node typed APIs', async () => {
    const core = kubeConfig(server).makeApiClient(CoreV1Api)
    const all = await core.listConfigMapForAllNamespaces({labelSelector: 'tier=odd'})
    expect(all.items.map((i) => i.metadata?.name)).toEqual(['cm-1', 'cm-3', 'cm-5'])
    const apps = kubeConfig(server).makeApiClient(AppsV1Api)
    await expect(apps.readNamespacedDeployment({name: 'nope', namespace: 'default'})).rejects.toSatisfy(
      (e) => statusOf(e).code === 404,
    )
  })
})

describe('seeding', () => {
  it('keeps a given creationTimestamp, stores status through the subresource and bumps revisions', async () => {
    const before = server.core.store.currentRv
    const [pod] = server.seed({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {name: 'old-pod', namespace: 'seeded', creationTimestamp: '2020-01-01T00:00:00Z'},
      spec: {containers: [{name: 'a', image: 'x:1'}]},
      status: {phase: 'Running'},
    })
    expect(pod!.metadata.creationTimestamp).toBe('2020-01-01T00:00:00Z')
    expect(pod!.status.phase).toBe('Running')
    expect(server.get({apiVersion: 'v1', kind: 'Namespace', name: 'seeded'})).toBeDefined()
    expect(Number(pod!.metadata.resourceVersion)).toBeGreaterThan(before)
    expect(() =>
      server.seed({apiVersion: 'v1', kind: 'Pod', metadata: {name: 'bad', namespace: 'seeded'}, spec: {}}),
    ).toThrow(/spec.containers: Required value/)
  })
})

describe('client-node KubernetesObjectApi round trip', () => {
  it('creates, reads, replaces and deletes, seeing real response shapes', async () => {
    const objects = KubernetesObjectApi.makeApiClient(kubeConfig(server))
    const spec = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {name: 'round-trip', namespace: 'default'},
      data: {a: '1'},
    }
    const created = await objects.create(spec)
    expect((created.metadata as {uid?: string}).uid).toBeDefined()
    const read = (await objects.read({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {name: 'round-trip', namespace: 'default'},
    })) as typeof spec
    expect(read.data).toEqual({a: '1'})
    const replaced = (await objects.replace({...read, data: {a: '2'}})) as typeof spec
    expect(replaced.data).toEqual({a: '2'})
    const stale = await objects.replace({...read, data: {a: '3'}}).catch((e) => e)
    expect(statusOf(stale).body.reason).toBe('Conflict')
    const deleted = await objects.delete({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {name: 'round-trip', namespace: 'default'},
    })
    expect(deleted).toMatchObject({status: 'Success', details: {name: 'round-trip', kind: 'configmaps'}})
    const gone = await objects
      .read({apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: 'round-trip', namespace: 'default'}})
      .catch((e) => e)
    expect(statusOf(gone)).toMatchObject({
      code: 404,
      body: {reason: 'NotFound', message: 'configmaps "round-trip" not found'},
    })
  })
})
