// What the executor relies on from a KubeClient and the API server behind it, as one list of checks that
// runs against the in-memory client (unit tier, test/unit/memory-kube.test.ts) and against the test
// cluster's API server through the real HTTP client (cluster tier, test/cluster/kube-contract.test.ts).
// When the two disagree, the API server is right and test/support/memory-kube.ts is fixed.
import {randomBytes} from 'node:crypto'

import {expect, it} from 'vitest'

import {KubeApiError} from '../../src/kube/errors.js'
import type {KubeClient} from '../../src/kube/types.js'
import type {KubeObject, ObjectRef} from '../../src/planner/model.js'

/** The error a call rejects with (fails the test when it resolves). */
export async function rejection(promise: Promise<unknown>): Promise<KubeApiError> {
  try {
    await promise
  } catch (error) {
    expect(error).toBeInstanceOf(KubeApiError)
    return error as KubeApiError
  }
  throw new Error('expected the call to fail')
}

const configMap = (namespace: string, name: string, labels: Record<string, string> = {}): KubeObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: {name, namespace, labels},
  data: {a: '1'},
})

const deployment = (namespace: string, name: string): KubeObject => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: {name, namespace, labels: {app: name}},
  spec: {
    replicas: 1,
    selector: {matchLabels: {app: name}},
    template: {metadata: {labels: {app: name}}, spec: {containers: [{name: 'app', image: 'example.invalid/app:1'}]}},
  },
  status: {replicas: 7},
})

export interface ContractOptions {
  /** A known divergence of the in-repo test API server from kube-apiserver: it stores status sent with a create. */
  statusKeptOnCreate?: boolean
}

/** Registers the contract's tests; `client()` is called inside each test, after the caller's setup. */
export function kubeClientContract(client: () => KubeClient, opts: ContractOptions = {}): void {
  let ns = ''
  const ref = (kind: string, name: string, apiVersion = kind === 'Deployment' ? 'apps/v1' : 'v1'): ObjectRef => ({
    apiVersion,
    kind,
    namespace: ns,
    name,
  })
  const namespace = async () => {
    ns = `contract-${randomBytes(4).toString('hex')}`
    await client().create({apiVersion: 'v1', kind: 'Namespace', metadata: {name: ns}})
  }

  it('create sets uid and resourceVersion; creating it again is 409 AlreadyExists; get of a missing object is undefined', async () => {
    await namespace()
    const created = await client().create(configMap(ns, 'one'))
    expect(created.metadata.uid).toMatch(/./)
    expect(created.metadata.resourceVersion).toMatch(/^\d+$/)
    const again = await rejection(client().create(configMap(ns, 'one')))
    expect([again.status, again.reason]).toEqual([409, 'AlreadyExists'])
    expect(await client().get(ref('ConfigMap', 'missing'))).toBeUndefined()
  })

  it('create in a namespace that does not exist is 404', async () => {
    await namespace()
    const missing = await rejection(
      client().create({...configMap(ns, 'x'), metadata: {name: 'x', namespace: `${ns}-missing`}}),
    )
    expect([missing.status, missing.reason]).toEqual([404, 'NotFound'])
  })

  // kube-apiserver v1.32.13 drops status on create (DeploymentStrategy.PrepareForCreate; checked with envtest).
  it.skipIf(opts.statusKeptOnCreate === true)(
    'create ignores status for a kind with a status subresource, and starts generation at 1',
    async () => {
      await namespace()
      const created = await client().create(deployment(ns, 'web'))
      expect(created.status?.replicas).not.toBe(7)
      expect(created.metadata.generation).toBe(1)
    },
  )

  it('merge patch: null removes a key, a stale resourceVersion is 409 Conflict, a patch that changes nothing keeps the resourceVersion', async () => {
    await namespace()
    const created = await client().create(configMap(ns, 'cm', {keep: 'yes', drop: 'me'}))
    const patched = await client().mergePatch(ref('ConfigMap', 'cm'), {
      metadata: {labels: {drop: null, added: 'x'}, resourceVersion: created.metadata.resourceVersion},
    })
    expect(patched.metadata.labels).toEqual({keep: 'yes', added: 'x'})
    expect(Number(patched.metadata.resourceVersion)).toBeGreaterThan(Number(created.metadata.resourceVersion))
    const stale = await rejection(
      client().mergePatch(ref('ConfigMap', 'cm'), {
        metadata: {labels: {other: 'y'}, resourceVersion: created.metadata.resourceVersion},
      }),
    )
    expect([stale.status, stale.reason]).toEqual([409, 'Conflict'])
    const noop = await client().mergePatch(ref('ConfigMap', 'cm'), {metadata: {labels: {keep: 'yes'}}})
    expect(noop.metadata.resourceVersion).toBe(patched.metadata.resourceVersion)
    expect((await client().get(ref('ConfigMap', 'cm')))?.metadata.labels).toEqual({keep: 'yes', added: 'x'})
    const absent = await rejection(client().mergePatch(ref('ConfigMap', 'nope'), {metadata: {labels: {a: 'b'}}}))
    expect([absent.status, absent.reason]).toEqual([404, 'NotFound'])
  })

  it('generation follows spec changes, not label changes; dryRun stores nothing', async () => {
    await namespace()
    // A CronJob: no controller of the fake control plane writes to it (a Deployment's would: its revision
    // annotation bumps a Deployment's generation on a real server, racing with the assertions).
    const cronJob = ref('CronJob', 'nightly', 'batch/v1')
    await client().create({
      apiVersion: 'batch/v1',
      kind: 'CronJob',
      metadata: {name: 'nightly', namespace: ns},
      spec: {
        schedule: '0 3 * * *',
        jobTemplate: {
          spec: {template: {spec: {restartPolicy: 'Never', containers: [{name: 'job', image: 'busybox'}]}}},
        },
      },
    })
    const relabelled = await client().mergePatch(cronJob, {metadata: {labels: {extra: 'x'}}})
    expect(relabelled.metadata.generation).toBe(1)
    const rescheduled = await client().mergePatch(cronJob, {spec: {schedule: '0 4 * * *'}})
    expect(rescheduled.metadata.generation).toBe(2)
    await client().create(deployment(ns, 'web'))
    const dry = await client().mergePatch(ref('Deployment', 'web'), {spec: {replicas: 3}}, {dryRun: true})
    expect(dry.spec.replicas).toBe(3)
    expect((await client().get(ref('Deployment', 'web')))?.spec.replicas).toBe(1)
    await client().delete(ref('Deployment', 'web'), {dryRun: true})
    expect(await client().get(ref('Deployment', 'web'))).toBeDefined()
    // With preconditions the options travel in a DeleteOptions body, where kube-apiserver reads dryRun (it
    // ignores the query then): a dry run with a uid precondition must not delete either.
    const uid = (await client().get(ref('Deployment', 'web')))!.metadata.uid!
    await client().delete(ref('Deployment', 'web'), {dryRun: true, preconditions: {uid}})
    expect(await client().get(ref('Deployment', 'web'))).toBeDefined()
  })

  it('server-side apply creates, merges, and drops the fields this manager no longer applies', async () => {
    await namespace()
    const first = await client().apply(
      {...configMap(ns, 'applied', {a: '1', b: '2'}), data: {x: '1', y: '2'}},
      {force: true},
    )
    expect(first.metadata.labels).toEqual({a: '1', b: '2'})
    const again = await client().apply(
      {...configMap(ns, 'applied', {a: '1', b: '2'}), data: {x: '1', y: '2'}},
      {force: true},
    )
    expect(again.metadata.resourceVersion).toBe(first.metadata.resourceVersion)
    const second = await client().apply({...configMap(ns, 'applied', {a: '1'}), data: {x: '9'}}, {force: true})
    expect(second.metadata.labels).toEqual({a: '1'})
    expect(second.data).toEqual({x: '9'})
  })

  it('delete: a uid precondition that does not match is 409 and deletes nothing; deleting a missing object resolves false', async () => {
    await namespace()
    await client().create(configMap(ns, 'gone'))
    const wrong = await rejection(
      client().delete(ref('ConfigMap', 'gone'), {preconditions: {uid: '00000000-0000-0000-0000-000000000000'}}),
    )
    expect([wrong.status, wrong.reason]).toEqual([409, 'Conflict'])
    expect(await client().get(ref('ConfigMap', 'gone'))).toBeDefined()
    const live = await client().get(ref('ConfigMap', 'gone'))
    expect(await client().delete(ref('ConfigMap', 'gone'), {preconditions: {uid: live!.metadata.uid!}})).toBe(true)
    expect(await client().get(ref('ConfigMap', 'gone'))).toBeUndefined()
    expect(await client().delete(ref('ConfigMap', 'gone'))).toBe(false)
  })

  it('list: by namespace and label selector (equality, inequality, set-based, existence)', async () => {
    await namespace()
    await client().create(configMap(ns, 'a', {tier: 'web', rev: 'canary'}))
    await client().create(configMap(ns, 'b', {tier: 'db'}))
    await client().create(configMap(ns, 'c', {}))
    const res = (await client().resourceFor('v1', 'ConfigMap'))!
    const names = async (labelSelector?: string) =>
      (await client().list(res, {namespace: ns, ...(labelSelector ? {labelSelector} : {})}))
        .map((o) => o.metadata.name)
        .filter((n) => ['a', 'b', 'c'].includes(n))
        .sort()
    expect(await names()).toEqual(['a', 'b', 'c'])
    expect(await names('tier=web')).toEqual(['a'])
    expect(await names('tier!=web')).toEqual(['b', 'c'])
    expect(await names('tier in (web,db)')).toEqual(['a', 'b'])
    expect(await names('rev')).toEqual(['a'])
    expect(await names('!rev,tier')).toEqual(['b'])
    const items = await client().list(res, {namespace: ns, labelSelector: 'tier=web'})
    expect(items[0]).toMatchObject({apiVersion: 'v1', kind: 'ConfigMap'})
  })
}
