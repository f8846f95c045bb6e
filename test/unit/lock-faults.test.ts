// The namespace lock's Lease create when its answer is lost (issue 19 §8): the client does not resend a create that
// may have been applied, so the lock reads the Lease back — ours: held; absent: the create did not land, sent again;
// another holder's: reported as the holder. On the in-memory KubeClient, whose faults drop the connection before or
// after the server stored the write.
import {afterEach, describe, expect, it} from 'vitest'

import {LockHeldError} from '../../src/errors.js'
import {lockRef, NamespaceLock} from '../../src/executor/lock.js'
import {MemoryKube} from '../support/memory-kube.js'

const NS = 'shop'
const namespace = {apiVersion: 'v1', kind: 'Namespace', metadata: {name: NS}}
const locks: NamespaceLock[] = []

afterEach(async () => {
  for (const lock of locks.splice(0)) await lock.release()
})

async function acquire(kube: MemoryKube): Promise<NamespaceLock> {
  const lock = await NamespaceLock.acquire(kube, {
    namespace: NS,
    command: 'apply shop',
    plan: 'plans/shop.yaml',
    timeoutMs: 0,
  })
  locks.push(lock)
  return lock
}

describe('NamespaceLock.acquire: a create whose answer was lost', () => {
  it('dropped before the server stored it: the Lease is absent, so it is created again and held', async () => {
    const kube = new MemoryKube().seed(namespace)
    kube.failNext({verb: 'create', kind: 'Lease', connection: true})
    const lock = await acquire(kube)
    expect(kube.peek(lockRef(NS))?.spec?.holderIdentity).toBe(lock.info.holder)
    expect(kube.requests.filter((r) => r.verb === 'create' && r.kind === 'Lease')).toHaveLength(2)
  })

  it('dropped after the server stored it: read back, it is ours, held without a second create', async () => {
    const kube = new MemoryKube().seed(namespace)
    kube.failNext({verb: 'create', kind: 'Lease', connection: true, afterWrite: true})
    const lock = await acquire(kube)
    expect(kube.peek(lockRef(NS))?.spec?.holderIdentity).toBe(lock.info.holder)
    expect(kube.requests.filter((r) => r.verb === 'create' && r.kind === 'Lease')).toHaveLength(1)
  })

  it('a server that keeps failing the create (5xx, never stored): gives up after a few creates with the error', async () => {
    const kube = new MemoryKube().seed(namespace)
    kube.failNext({verb: 'create', kind: 'Lease', status: 503, times: 100})
    await expect(acquire(kube)).rejects.toThrow(/503/)
    expect(kube.requests.filter((r) => r.verb === 'create' && r.kind === 'Lease')).toHaveLength(5)
  })

  it('a 403 fails at once, naming the permission', async () => {
    const kube = new MemoryKube().seed(namespace)
    kube.forbid('create', 'coordination.k8s.io', 'leases', NS)
    const error = (await acquire(kube).catch((e: unknown) => e)) as Error
    expect(error).not.toBeInstanceOf(LockHeldError)
    expect(error.message).toContain(`cannot take the lock on namespace ${NS}`)
    expect(kube.requests.filter((r) => r.verb === 'create' && r.kind === 'Lease')).toHaveLength(1)
  })
})
