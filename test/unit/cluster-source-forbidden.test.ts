// issue 10 point 17: a user without read access to the namespace is told 403 — with the `kubectl auth
// can-i` line — not that the namespace "does not exist" (src/sources/cluster.ts snapshot()).
import {describe, expect, it} from 'vitest'

import {KubeApiError} from '../../src/kube/errors.js'
import type {ApiResource, KubeClient} from '../../src/kube/types.js'
import type {ObjectRef} from '../../src/planner/model.js'
import {ClusterSource} from '../../src/sources/cluster.js'

const namespaces: ApiResource = {
  group: '',
  version: 'v1',
  apiVersion: 'v1',
  kind: 'Namespace',
  plural: 'namespaces',
  namespaced: false,
  verbs: ['get', 'list'],
  preferred: true,
}

function forbidden(verb: string, name?: string): KubeApiError {
  const what = name ? `get namespaces/${name}` : 'list namespaces'
  return new KubeApiError(
    403,
    {
      reason: 'Forbidden',
      message: `namespaces${name ? ` "${name}"` : ''} is forbidden: User "nobody" cannot ${verb} resource "namespaces" in API group "" at the cluster scope`,
    },
    {method: 'GET', verb, group: '', resource: 'namespaces', what},
    'ctx',
  )
}

function client(opts: {getNamespace: (ref: ObjectRef) => Promise<unknown>}): KubeClient {
  return {
    context: 'ctx',
    server: 'https://127.0.0.1:6443',
    discover: async () => ({groupVersions: ['v1'], resources: [namespaces]}),
    list: async () => {
      throw forbidden('list')
    },
    get: async (ref: ObjectRef) =>
      ref.name === 'kube-system'
        ? {apiVersion: 'v1', kind: 'Namespace', metadata: {name: 'kube-system', uid: 'u'}}
        : opts.getNamespace(ref),
  } as unknown as KubeClient
}

describe('ClusterSource.snapshot without read access to namespaces', () => {
  it('a 403 on get namespaces is reported as 403 with the kubectl auth can-i check, not as a missing namespace', async () => {
    const source = await ClusterSource.open(
      client({
        getNamespace: async (ref) => {
          throw forbidden('get', ref.name)
        },
      }),
    )
    const error = await source.snapshot('shop', {rootNamespace: 'istio-system'}).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(KubeApiError)
    expect((error as KubeApiError).message).toBe(
      'get namespaces/shop failed: 403 Forbidden: namespaces "shop" is forbidden: User "nobody" cannot get resource "namespaces" in API group "" at the cluster scope',
    )
    expect((error as KubeApiError).message).not.toContain('does not exist')
    expect((error as KubeApiError).suggestion).toContain('kubectl --context ctx auth can-i get namespaces')
  })

  it('list forbidden but get allowed: the namespace is read directly; absent, it is reported as not found', async () => {
    const found = await (
      await ClusterSource.open(
        client({getNamespace: async () => ({apiVersion: 'v1', kind: 'Namespace', metadata: {name: 'shop'}})}),
      )
    ).snapshot('shop', {rootNamespace: 'istio-system'})
    expect(found.objects.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual(['Namespace/shop'])
    expect(found.findings.map((f) => f.code)).not.toContain('NamespaceNotFound')
    const absent = await (
      await ClusterSource.open(client({getNamespace: async () => undefined}))
    ).snapshot('shop', {rootNamespace: 'istio-system'})
    expect(absent.findings.map((f) => f.code)).toContain('NamespaceNotFound')
  })
})
