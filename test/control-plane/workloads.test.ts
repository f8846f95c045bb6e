// The workload controllers and the kubelet, observed only through the API: rollouts of Deployments,
// StatefulSets and DaemonSets, Jobs, pod start-up, garbage collection.
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {rolloutDone} from '../../src/executor/observe.js'
import type {KubeObject} from '../../src/planner/model.js'
import {startTestCluster, USERS, type TestCluster} from '../support/cluster.js'
import {
  condition,
  containerNames,
  create,
  deployment,
  get,
  list,
  mustGet,
  namespaceObject,
  onExternalCluster,
  patch,
  pods,
  restart,
  uniqueName,
} from './helpers.js'

let c: TestCluster
let ns: string

beforeAll(async () => {
  ns = uniqueName('workloads')
  c = await startTestCluster({
    quiet: true,
    fixture: [namespaceObject(ns)],
    controlPlane: {podStartupMs: 5, jobRunMs: 20},
  })
})
afterAll(() => c?.stop())

const owner = (o: KubeObject) => o.metadata.ownerReferences?.find((r) => r.controller)

describe('Deployment controller', () => {
  it('creates a ReplicaSet named after the template hash and pods owned by it, and reports the rollout complete', async () => {
    await create(c, deployment(ns, 'web', {replicas: 3}))
    await c.waitForIdle()
    const rsList = (await list(c, 'apps/v1', 'ReplicaSet', ns)).filter((rs) => owner(rs)?.name === 'web')
    expect(rsList).toHaveLength(1)
    const rs = rsList[0]!
    const hash = rs.metadata.labels?.['pod-template-hash']
    expect(hash).toMatch(/^[bcdfghjklmnpqrstvwxz2456789]{1,10}$/)
    expect(rs.metadata.name).toBe(`web-${hash}`)
    expect(owner(rs)).toMatchObject({kind: 'Deployment', name: 'web', controller: true})
    expect(rs.metadata.annotations?.['deployment.kubernetes.io/revision']).toBe('1')
    const webPods = await pods(c, ns, 'app=web')
    expect(webPods).toHaveLength(3)
    for (const p of webPods) {
      expect(p.metadata.name).toMatch(new RegExp(`^web-${hash}-[bcdfghjklmnpqrstvwxz2456789]{5}$`))
      expect(owner(p)).toMatchObject({
        kind: 'ReplicaSet',
        name: rs.metadata.name,
        uid: rs.metadata.uid,
        controller: true,
      })
      expect(p.metadata.labels?.['pod-template-hash']).toBe(hash)
    }
    const d = await mustGet(c, 'apps/v1', 'Deployment', ns, 'web')
    expect(d.status).toMatchObject({
      observedGeneration: d.metadata.generation,
      replicas: 3,
      updatedReplicas: 3,
      readyReplicas: 3,
      availableReplicas: 3,
    })
    expect(d.status?.unavailableReplicas ?? 0).toBe(0)
    expect(condition(d, 'Available')).toMatchObject({status: 'True', reason: 'MinimumReplicasAvailable'})
    expect(condition(d, 'Progressing')).toMatchObject({
      status: 'True',
      reason: 'NewReplicaSetAvailable',
      message: `ReplicaSet "${rs.metadata.name}" has successfully progressed.`,
    })
    expect(rolloutDone(d)).toMatchObject({done: true})
  })

  it('rolls the pods on a restart annotation: a new ReplicaSet, the old one scaled to 0, the status complete again', async () => {
    const before = (await pods(c, ns, 'app=web')).map((p) => p.metadata.name)
    await restart(c, 'Deployment', ns, 'web')
    await c.waitForIdle()
    const d = await mustGet(c, 'apps/v1', 'Deployment', ns, 'web')
    expect(d.metadata.generation).toBe(2)
    expect(rolloutDone(d)).toMatchObject({done: true})
    expect(d.status).toMatchObject({observedGeneration: 2, replicas: 3, updatedReplicas: 3, availableReplicas: 3})
    const rsList = (await list(c, 'apps/v1', 'ReplicaSet', ns)).filter((rs) => owner(rs)?.name === 'web')
    expect(
      rsList.map((rs) => [rs.metadata.annotations?.['deployment.kubernetes.io/revision'], rs.spec?.replicas]).sort(),
    ).toEqual([
      ['1', 0],
      ['2', 3],
    ])
    const newRS = rsList.find((rs) => rs.spec?.replicas === 3)!
    expect(newRS.spec?.template?.metadata?.annotations?.['kubectl.kubernetes.io/restartedAt']).toBeDefined()
    const after = await pods(c, ns, 'app=web')
    expect(after).toHaveLength(3)
    expect(after.every((p) => owner(p)?.name === newRS.metadata.name && !before.includes(p.metadata.name))).toBe(true)
    expect(d.metadata.annotations?.['deployment.kubernetes.io/revision']).toBe('2')
  })

  it.skipIf(onExternalCluster)('never runs more pods than replicas + maxSurge during a rolling update', async () => {
    await create(
      c,
      deployment(ns, 'surge', {
        replicas: 4,
        strategy: {type: 'RollingUpdate', rollingUpdate: {maxSurge: 1, maxUnavailable: 0}},
      }),
    )
    await c.waitForIdle()
    c.server!.resetRequestLog()
    await restart(c, 'Deployment', ns, 'surge')
    await c.waitForIdle()
    // Replay the control plane's pod creations and deletions in the order the server handled them.
    let running = 4
    let peak = running
    let created = 0
    let deleted = 0
    for (const r of c.server!.requestsMatching({user: USERS.controlPlane, resource: 'pods', namespace: ns})) {
      if (r.status === undefined || r.status >= 300 || r.subresource) continue
      if (r.verb === 'create') {
        running++
        created++
      }
      if (r.verb === 'delete' && r.name?.startsWith('surge-')) {
        running--
        deleted++
      }
      peak = Math.max(peak, running)
    }
    expect({created, deleted}).toEqual({created: 4, deleted: 4})
    expect(peak).toBe(5)
    expect(rolloutDone(await mustGet(c, 'apps/v1', 'Deployment', ns, 'surge'))).toMatchObject({done: true})
  })

  it('keeps the rollout incomplete while the new pods are not ready, and completes it when they become ready', async () => {
    await create(c, deployment(ns, 'stuck', {replicas: 1}))
    await c.waitForIdle()
    const oldPod = (await pods(c, ns, 'app=stuck'))[0]!
    // New pods of this template never become ready (a failing readiness probe).
    c.controlPlane.configure({neverReady: [{namespace: ns, selector: {matchLabels: {app: 'stuck', track: 'broken'}}}]})
    await patch(c, 'apps/v1', 'Deployment', ns, 'stuck', {spec: {template: {metadata: {labels: {track: 'broken'}}}}})
    await c.waitForIdle()
    let d = await mustGet(c, 'apps/v1', 'Deployment', ns, 'stuck')
    expect(rolloutDone(d)).toEqual({done: false, detail: '1 old replicas pending termination'})
    expect(d.status).toMatchObject({replicas: 2, updatedReplicas: 1, availableReplicas: 1, unavailableReplicas: 1})
    expect(condition(d, 'Progressing')).toMatchObject({status: 'True', reason: 'ReplicaSetUpdated'})
    // maxUnavailable 25% of 1 = 0: the old pod stays until the new one is available.
    expect((await pods(c, ns, 'app=stuck')).map((p) => p.metadata.name)).toContain(oldPod.metadata.name)

    c.controlPlane.configure({neverReady: []})
    await c.waitForIdle()
    d = await mustGet(c, 'apps/v1', 'Deployment', ns, 'stuck')
    expect(rolloutDone(d)).toMatchObject({done: true})
    expect((await pods(c, ns, 'app=stuck')).map((p) => p.metadata.name)).not.toContain(oldPod.metadata.name)
  })

  it.skipIf(onExternalCluster)('Recreate deletes every old pod before creating new ones', async () => {
    await create(c, deployment(ns, 'recreate', {replicas: 2, strategy: {type: 'Recreate'}}))
    await c.waitForIdle()
    c.server!.resetRequestLog()
    await restart(c, 'Deployment', ns, 'recreate')
    await c.waitForIdle()
    const writes = c
      .server!.requestsMatching({user: USERS.controlPlane, resource: 'pods', namespace: ns})
      .filter((r) => (r.verb === 'create' || r.verb === 'delete') && !r.subresource && (r.status ?? 500) < 300)
    const firstCreate = writes.findIndex((r) => r.verb === 'create')
    const deletes = writes
      .map((r, i) => (r.verb === 'delete' && r.name?.startsWith('recreate-') ? i : -1))
      .filter((i) => i >= 0)
    expect(deletes).toHaveLength(2)
    expect(firstCreate).toBeGreaterThan(Math.max(...deletes))
    expect(rolloutDone(await mustGet(c, 'apps/v1', 'Deployment', ns, 'recreate'))).toMatchObject({done: true})
  })

  it('scales down to the requested replicas', async () => {
    await patch(c, 'apps/v1', 'Deployment', ns, 'web', {spec: {replicas: 1}})
    await c.waitForIdle()
    expect(await pods(c, ns, 'app=web')).toHaveLength(1)
    const d = await mustGet(c, 'apps/v1', 'Deployment', ns, 'web')
    expect(d.status).toMatchObject({replicas: 1, updatedReplicas: 1, availableReplicas: 1})
    expect(rolloutDone(d)).toMatchObject({done: true})
  })
})

describe('kubelet', () => {
  it('runs scheduled pods: Running, Ready, an IP of the node, the host IP; deleted pods go away', async () => {
    const [p] = await pods(c, ns, 'app=web')
    expect(p!.status?.phase).toBe('Running')
    expect(condition(p, 'Ready')?.status).toBe('True')
    const node = await mustGet(c, 'v1', 'Node', undefined, p!.spec?.nodeName)
    const cidr: string = node.spec?.podCIDR
    expect(p!.status?.podIP.split('.').slice(0, 3).join('.')).toBe(cidr.split('.').slice(0, 3).join('.'))
    expect(p!.status?.hostIP).toBe(node.status?.addresses.find((a: {type: string}) => a.type === 'InternalIP').address)
    expect(p!.status?.containerStatuses).toEqual([
      expect.objectContaining({name: 'app', ready: true, started: true, state: {running: expect.any(Object)}}),
    ])

    await c.api.delete({apiVersion: 'v1', kind: 'Pod', namespace: ns, name: p!.metadata.name})
    await c.waitForIdle()
    expect(await get(c, 'v1', 'Pod', ns, p!.metadata.name)).toBeUndefined()
    // …and its ReplicaSet replaced it.
    expect(await pods(c, ns, 'app=web')).toHaveLength(1)
  })

  it('spreads the pods of a controller over the nodes', async () => {
    await create(c, deployment(ns, 'spread', {replicas: 4}))
    await c.waitForIdle()
    const nodes = new Set((await pods(c, ns, 'app=spread')).map((p) => p.spec?.nodeName))
    expect(nodes.size).toBe((await list(c, 'v1', 'Node')).length)
  })
})

describe('StatefulSet controller', () => {
  const sts = (name: string, replicas: number, updateStrategy?: unknown): KubeObject => ({
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: {name, namespace: ns},
    spec: {
      replicas,
      serviceName: name,
      selector: {matchLabels: {app: name}},
      ...(updateStrategy ? {updateStrategy} : {}),
      template: {metadata: {labels: {app: name}}, spec: {containers: [{name: 'db', image: 'registry.example/db:1'}]}},
    },
  })
  const revisions = async (name: string) =>
    Object.fromEntries(
      (await pods(c, ns, `app=${name}`)).map((p) => [p.metadata.name, p.metadata.labels?.['controller-revision-hash']]),
    )

  it('creates <name>-<ordinal> pods with the revision label and rolls them all on a restart', async () => {
    await create(c, sts('db', 3))
    await c.waitForIdle()
    let s = await mustGet(c, 'apps/v1', 'StatefulSet', ns, 'db')
    const first = s.status?.updateRevision
    expect(first).toMatch(/^db-/)
    expect(await revisions('db')).toEqual({'db-0': first, 'db-1': first, 'db-2': first})
    expect(s.status).toMatchObject({
      replicas: 3,
      readyReplicas: 3,
      currentReplicas: 3,
      updatedReplicas: 3,
      currentRevision: first,
      observedGeneration: 1,
    })
    expect((await mustGet(c, 'v1', 'Pod', ns, 'db-1')).spec).toMatchObject({hostname: 'db-1', subdomain: 'db'})

    await restart(c, 'StatefulSet', ns, 'db')
    await c.waitForIdle()
    s = await mustGet(c, 'apps/v1', 'StatefulSet', ns, 'db')
    const second = s.status?.updateRevision
    expect(second).not.toBe(first)
    expect(s.status).toMatchObject({
      currentRevision: second,
      updatedReplicas: 3,
      readyReplicas: 3,
      observedGeneration: 2,
    })
    expect(await revisions('db')).toEqual({'db-0': second, 'db-1': second, 'db-2': second})
    expect(rolloutDone(s)).toMatchObject({done: true})
  })

  it('respects the partition: only ordinals at or above it are updated', async () => {
    await create(c, sts('part', 3, {type: 'RollingUpdate', rollingUpdate: {partition: 2}}))
    await c.waitForIdle()
    const first = (await mustGet(c, 'apps/v1', 'StatefulSet', ns, 'part')).status?.updateRevision
    await restart(c, 'StatefulSet', ns, 'part')
    await c.waitForIdle()
    const s = await mustGet(c, 'apps/v1', 'StatefulSet', ns, 'part')
    const second = s.status?.updateRevision
    expect(await revisions('part')).toEqual({'part-0': first, 'part-1': first, 'part-2': second})
    expect(s.status).toMatchObject({
      currentRevision: first,
      updateRevision: second,
      updatedReplicas: 1,
      currentReplicas: 2,
      readyReplicas: 3,
    })
    expect(rolloutDone(s).done).toBe(false)
    // A pod below the partition that is deleted comes back at the current revision.
    await c.api.delete({apiVersion: 'v1', kind: 'Pod', namespace: ns, name: 'part-0'})
    await c.waitForIdle()
    expect((await revisions('part'))['part-0']).toBe(first)
  })

  it('OnDelete restarts nothing until a pod is deleted, which comes back at the new revision', async () => {
    await create(c, sts('ondelete', 2, {type: 'OnDelete'}))
    await c.waitForIdle()
    const before = await pods(c, ns, 'app=ondelete')
    const first = before[0]!.metadata.labels?.['controller-revision-hash']
    await restart(c, 'StatefulSet', ns, 'ondelete')
    await c.waitForIdle()
    const after = await pods(c, ns, 'app=ondelete')
    expect(after.map((p) => p.metadata.uid)).toEqual(before.map((p) => p.metadata.uid))
    let s = await mustGet(c, 'apps/v1', 'StatefulSet', ns, 'ondelete')
    const second = s.status?.updateRevision
    expect(second).not.toBe(first)
    expect(s.status?.currentRevision).toBe(first)
    expect(s.status?.updatedReplicas ?? 0).toBe(0)

    await c.api.delete({apiVersion: 'v1', kind: 'Pod', namespace: ns, name: 'ondelete-1'})
    await c.waitForIdle()
    expect(await revisions('ondelete')).toEqual({'ondelete-0': first, 'ondelete-1': second})
    s = await mustGet(c, 'apps/v1', 'StatefulSet', ns, 'ondelete')
    expect(s.status).toMatchObject({updatedReplicas: 1, currentReplicas: 1, currentRevision: first})
  })
})

describe('DaemonSet controller', () => {
  it('runs one pod on every node it admits, follows new nodes, and rolls on a restart', async () => {
    await create(c, {
      apiVersion: 'apps/v1',
      kind: 'DaemonSet',
      metadata: {name: 'agent', namespace: ns},
      spec: {
        selector: {matchLabels: {app: 'agent'}},
        template: {
          metadata: {labels: {app: 'agent'}},
          spec: {containers: [{name: 'agent', image: 'registry.example/agent:1'}]},
        },
      },
    })
    await c.waitForIdle()
    const nodes = (await list(c, 'v1', 'Node')).map((n) => n.metadata.name).sort()
    let agents = await pods(c, ns, 'app=agent')
    expect(agents.map((p) => p.spec?.nodeName).sort()).toEqual(nodes)
    let ds = await mustGet(c, 'apps/v1', 'DaemonSet', ns, 'agent')
    expect(ds.status).toMatchObject({
      desiredNumberScheduled: nodes.length,
      currentNumberScheduled: nodes.length,
      numberReady: nodes.length,
      numberAvailable: nodes.length,
      updatedNumberScheduled: nodes.length,
      numberMisscheduled: 0,
    })

    // A tainted node the DaemonSet does not tolerate gets no pod; an ordinary new node gets one.
    const node = (name: string, taints?: unknown[]): KubeObject => ({
      apiVersion: 'v1',
      kind: 'Node',
      metadata: {name, labels: {'kubernetes.io/os': 'linux', 'kubernetes.io/hostname': name}},
      spec: {...(taints ? {taints} : {})},
    })
    const ready = {
      status: {
        conditions: [
          {
            type: 'Ready',
            status: 'True',
            reason: 'KubeletReady',
            message: 'kubelet is posting ready status',
            lastHeartbeatTime: '2026-01-01T00:00:00Z',
            lastTransitionTime: '2026-01-01T00:00:00Z',
          },
        ],
        addresses: [{type: 'InternalIP', address: '172.18.0.50'}],
      },
    }
    const extra = uniqueName('node')
    const tainted = uniqueName('gpu-node')
    await create(c, node(extra))
    await patch(c, 'v1', 'Node', undefined, extra, ready, 'status')
    await create(c, node(tainted, [{key: 'gpu', value: 'true', effect: 'NoSchedule'}]))
    await patch(c, 'v1', 'Node', undefined, tainted, ready, 'status')
    try {
      await c.waitForIdle()
      agents = await pods(c, ns, 'app=agent')
      expect(agents.map((p) => p.spec?.nodeName).sort()).toEqual([...nodes, extra].sort())
      ds = await mustGet(c, 'apps/v1', 'DaemonSet', ns, 'agent')
      expect(ds.status?.desiredNumberScheduled).toBe(nodes.length + 1)

      const firstHash = agents[0]!.metadata.labels?.['controller-revision-hash']
      await restart(c, 'DaemonSet', ns, 'agent')
      await c.waitForIdle()
      const rolled = await pods(c, ns, 'app=agent')
      expect(rolled).toHaveLength(nodes.length + 1)
      expect(rolled.every((p) => p.metadata.labels?.['controller-revision-hash'] !== firstHash)).toBe(true)
      ds = await mustGet(c, 'apps/v1', 'DaemonSet', ns, 'agent')
      expect(ds.status).toMatchObject({
        updatedNumberScheduled: nodes.length + 1,
        numberAvailable: nodes.length + 1,
        observedGeneration: 2,
      })
      expect(rolloutDone(ds)).toMatchObject({done: true})
    } finally {
      await c.api.delete({apiVersion: 'v1', kind: 'Node', name: extra})
      await c.api.delete({apiVersion: 'v1', kind: 'Node', name: tainted})
      await c.waitForIdle()
    }
    // The pod of a node that went away is removed.
    expect((await pods(c, ns, 'app=agent')).map((p) => p.spec?.nodeName).sort()).toEqual(nodes)
  })
})

describe('Job controller', () => {
  const job = (
    name: string,
    opts: {labels?: Record<string, string>; annotations?: Record<string, string>} = {},
  ): KubeObject => ({
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {name, namespace: ns},
    spec: {
      template: {
        metadata: {labels: opts.labels ?? {}, ...(opts.annotations ? {annotations: opts.annotations} : {})},
        spec: {restartPolicy: 'Never', containers: [{name: 'task', image: 'registry.example/task:1'}]},
      },
    },
  })

  it('runs the pod to completion and reports the Job Complete', async () => {
    await create(c, job('once'))
    await c.waitForIdle()
    const j = await mustGet(c, 'batch/v1', 'Job', ns, 'once')
    expect(condition(j, 'Complete')?.status).toBe('True')
    expect(j.status?.succeeded).toBe(1)
    const [p] = await pods(c, ns, 'job-name=once')
    expect(p!.status?.phase).toBe('Succeeded')
  })

  it('never completes a Job whose pod has a classic sidecar, but does with a native one', async () => {
    const meshNs = uniqueName('jobs')
    await c.load([namespaceObject(meshNs, {'istio-injection': 'enabled'})])
    await create(c, {...job('classic'), metadata: {name: 'classic', namespace: meshNs}})
    await create(c, {
      ...job('native', {annotations: {'sidecar.istio.io/nativeSidecar': 'true'}}),
      metadata: {name: 'native', namespace: meshNs},
    })
    await c.waitForIdle()
    const [classicPod] = await pods(c, meshNs, 'job-name=classic')
    expect(containerNames(classicPod!).containers).toEqual(['task', 'istio-proxy'])
    expect(classicPod!.status?.phase).toBe('Running')
    expect(
      classicPod!.status?.containerStatuses.find((s: {name: string}) => s.name === 'task').state.terminated,
    ).toMatchObject({reason: 'Completed'})
    expect(condition(await mustGet(c, 'batch/v1', 'Job', meshNs, 'classic'), 'Complete')).toBeUndefined()
    const [nativePod] = await pods(c, meshNs, 'job-name=native')
    expect(containerNames(nativePod!).init).toContain('istio-proxy')
    expect(nativePod!.status?.phase).toBe('Succeeded')
    expect(condition(await mustGet(c, 'batch/v1', 'Job', meshNs, 'native'), 'Complete')?.status).toBe('True')
  })
})

describe('garbage collection', () => {
  it('deletes a pod whose owner does not exist', async () => {
    await create(c, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: 'orphan',
        namespace: ns,
        ownerReferences: [
          {
            apiVersion: 'apps/v1',
            kind: 'ReplicaSet',
            name: 'gone',
            uid: '00000000-0000-0000-0000-000000000001',
            controller: true,
          },
        ],
      },
      spec: {
        nodeName: (await list(c, 'v1', 'Node'))[0]!.metadata.name,
        containers: [{name: 'x', image: 'registry.example/x:1'}],
      },
    })
    await c.waitForIdle()
    expect(await get(c, 'v1', 'Pod', ns, 'orphan')).toBeUndefined()
    // The test API server only cascades deletions; the dangling reference is the controllers' catch.
    if (!onExternalCluster)
      expect(
        c
          .server!.requestsMatching({user: USERS.controlPlane, verb: 'delete', resource: 'pods', name: 'orphan'})
          .some((r) => r.status === 200),
      ).toBe(true)
  })

  it('removes the ReplicaSets and pods of a deleted Deployment', async () => {
    await create(c, deployment(ns, 'doomed', {replicas: 2}))
    await c.waitForIdle()
    await c.api.delete({apiVersion: 'apps/v1', kind: 'Deployment', namespace: ns, name: 'doomed'})
    await c.waitForIdle()
    expect((await list(c, 'apps/v1', 'ReplicaSet', ns)).filter((rs) => rs.metadata.name.startsWith('doomed-'))).toEqual(
      [],
    )
    expect(await pods(c, ns, 'app=doomed')).toEqual([])
  })
})
