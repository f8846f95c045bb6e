// checkTargetCluster (src/cli/plan-commands.ts): the plan runs against the cluster it was made from —
// kube-system's uid, or the API server URL when a uid is missing on either side (with a warning).
import {describe, expect, it} from 'vitest'

import {checkTargetCluster, normalizeServer} from '../../src/cli/plan-commands.js'
import {StalePlanError} from '../../src/errors.js'
import type {PlanState} from '../../src/executor/plan-state.js'
import {KubeApiError, KubeConnectionError} from '../../src/kube/errors.js'
import type {KubeClient} from '../../src/kube/types.js'

const SERVER = 'https://api.prod.example.com:6443'
const attempt = {method: 'GET', verb: 'get', group: '', resource: 'namespaces', what: 'get namespaces/kube-system'}

function client(kubeSystem: {uid: string} | {error: unknown}, server = SERVER): KubeClient {
  return {
    context: 'now',
    server,
    get: async () => {
      if ('error' in kubeSystem) throw kubeSystem.error
      return {apiVersion: 'v1', kind: 'Namespace', metadata: {name: 'kube-system', uid: kubeSystem.uid}}
    },
  } as unknown as KubeClient
}

const state = (clusterID: string, server = SERVER) =>
  ({plan: {spec: {target: {context: 'then', server, clusterID}}}}) as unknown as PlanState
const forbidden = new KubeApiError(
  403,
  {
    reason: 'Forbidden',
    message:
      'namespaces "kube-system" is forbidden: User "bob" cannot get resource "namespaces" in API group "" at the cluster scope',
  },
  attempt,
  'now',
)

async function check(c: KubeClient, s: PlanState, allowOther = false): Promise<{notes: string[]; error?: unknown}> {
  const notes: string[] = []
  try {
    await checkTargetCluster(c, s, allowOther, (m) => notes.push(m))
    return {notes}
  } catch (error) {
    return {notes, error}
  }
}

describe('checkTargetCluster', () => {
  it('passes silently when the kube-system uids match', async () => {
    expect(await check(client({uid: 'uid-1'}), state('uid-1'))).toEqual({notes: []})
  })

  it('different uids are another cluster, even at the same server URL (a re-created cluster)', async () => {
    const {error} = await check(client({uid: 'uid-2'}), state('uid-1'))
    expect(error).toBeInstanceOf(StalePlanError)
    expect((error as StalePlanError).exitCode).toBe(3)
  })

  it('kube-system not readable (403): falls back to the server URL with a warning instead of failing', async () => {
    const {notes, error} = await check(client({error: forbidden}, 'https://API.prod.example.com:6443/'), state('uid-1'))
    expect(error).toBeUndefined()
    expect(notes).toEqual([
      `Warning: cannot confirm the cluster by its kube-system uid: reading namespace kube-system is forbidden for context now. The API server URL matches the plan's (https://API.prod.example.com:6443/), so this is taken to be the plan's cluster.`,
    ])
  })

  it('kube-system not readable (403) and another server URL: another cluster', async () => {
    const {error} = await check(client({error: forbidden}, 'https://api.staging.example.com:6443'), state('uid-1'))
    expect(error).toBeInstanceOf(StalePlanError)
    expect((error as Error).message).toBe(
      'the plan was made for another cluster: context then (https://api.prod.example.com:6443, kube-system uid uid-1); the current context now is https://api.staging.example.com:6443 (kube-system not readable: forbidden), and the server URLs differ',
    )
  })

  it('a plan that recorded no cluster uid is compared by server URL', async () => {
    const same = await check(client({uid: 'uid-1'}), state(''))
    expect(same.error).toBeUndefined()
    expect(same.notes[0]).toContain('the plan recorded no kube-system uid')
    const other = await check(client({uid: 'uid-1'}, 'https://api.staging.example.com:6443'), state(''))
    expect(other.error).toBeInstanceOf(StalePlanError)
    // --allow-other-cluster still overrides, with a warning.
    const allowed = await check(client({uid: 'uid-1'}, 'https://api.staging.example.com:6443'), state(''), true)
    expect(allowed.error).toBeUndefined()
    expect(allowed.notes[0]).toContain('Proceeding because of --allow-other-cluster')
  })

  it('other failures to read kube-system are reported as such, not as another cluster', async () => {
    const unreachable = new KubeConnectionError(attempt, SERVER, new Error('connect ECONNREFUSED'))
    const {error} = await check(client({error: unreachable}), state('uid-1'))
    expect(error).toBe(unreachable)
  })
})

describe('normalizeServer', () => {
  it('ignores case of the host, default ports and trailing slashes', () => {
    expect(normalizeServer('https://API.example.com:443/')).toBe(normalizeServer('https://api.example.com'))
    expect(normalizeServer('https://api.example.com:6443')).not.toBe(normalizeServer('https://api.example.com'))
    expect(normalizeServer('https://api.example.com/k8s/clusters/c-1/')).toBe(
      'https://api.example.com/k8s/clusters/c-1',
    )
  })
})
