// The namespace Lease lock (src/executor/lock.ts) against the test API server: losing the lock while a
// command runs (taken over, broken, or not renewable for a lease duration) stops its writes, and expiry
// tolerates clock skew between operators.
import {afterAll, afterEach, beforeAll, describe, expect, it} from 'vitest'

import {LockHeldError} from '../../src/errors.js'
import {CLOCK_SKEW_SECONDS, leaseExpired, lockRef, NamespaceLock} from '../../src/executor/lock.js'
import type {KubeObject} from '../../src/planner/model.js'
import {startApiServer, type TestApiServer} from '../support/apiserver/index.js'
import {clientFor} from '../cluster/support.js'

let server: TestApiServer
let n = 0
beforeAll(async () => {
  server = await startApiServer({quiet: true, crdFiles: 'builtin'})
})
afterEach(() => server.faults.clear())
afterAll(() => server.close())

/** A fresh namespace per test. */
function namespace(): string {
  const name = `lock-${++n}`
  server.seed({apiVersion: 'v1', kind: 'Namespace', metadata: {name}})
  return name
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const microTime = (ms: number) => new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z')
const FAST = {leaseSeconds: 1, renewEveryMs: 100}

function lease(holder: string, renewedAt: number, seconds = 60): KubeObject {
  return {
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: {name: 'mesh-migrate-lock', namespace: 'x'},
    spec: {
      holderIdentity: holder,
      leaseDurationSeconds: seconds,
      acquireTime: microTime(renewedAt),
      renewTime: microTime(renewedAt),
    },
  }
}

describe('lease expiry', () => {
  it('is judged against the recorded renewTime with a clock-skew margin, not the lease duration alone', () => {
    const now = Date.parse('2026-01-01T12:00:00Z')
    // 70 s old, 60 s lease: the holder's clock may be behind ours, so it is still alive.
    expect(leaseExpired(lease('other', now - 70_000), now)).toBe(false)
    expect(leaseExpired(lease('other', now - (60 + CLOCK_SKEW_SECONDS) * 1000), now)).toBe(false)
    expect(leaseExpired(lease('other', now - (60 + CLOCK_SKEW_SECONDS) * 1000 - 1), now)).toBe(true)
    // A holder whose clock runs ahead never looks expired early.
    expect(leaseExpired(lease('other', now + 45_000), now)).toBe(false)
    // No holder, or no time: free.
    expect(leaseExpired({...lease('', now), spec: {leaseDurationSeconds: 60}}, now)).toBe(true)
  })

  it('a Lease renewed less than duration + skew ago is not taken over', async () => {
    const ns = namespace()
    server.seed({...lease('someone-else', Date.now() - 75_000), metadata: {name: 'mesh-migrate-lock', namespace: ns}})
    const error = await NamespaceLock.acquire(await clientFor(server), {
      namespace: ns,
      command: 'apply',
      plan: 'p.yaml',
      timeoutMs: 0,
    }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(LockHeldError)
    expect(server.get(lockRef(ns))?.spec?.holderIdentity).toBe('someone-else')
  })
})

describe('losing the lock while a command runs', () => {
  it('keeps it while renewals succeed', async () => {
    const ns = namespace()
    const lock = await NamespaceLock.acquire(await clientFor(server), {
      namespace: ns,
      command: 'apply',
      plan: 'p.yaml',
      timeoutMs: 0,
      timing: FAST,
    })
    const first = server.get(lockRef(ns))!.spec!.renewTime as string
    await sleep(1500)
    lock.assertHeld()
    expect(Date.parse(server.get(lockRef(ns))!.spec!.renewTime as string)).toBeGreaterThan(Date.parse(first))
    expect(server.get(lockRef(ns))?.spec?.leaseDurationSeconds).toBe(1)
    await lock.release()
    expect(server.get(lockRef(ns))).toBeUndefined()
  })

  it('renewals failing for longer than the lease duration: assertHeld throws, and the Lease is left alone', async () => {
    const ns = namespace()
    const lock = await NamespaceLock.acquire(await clientFor(server), {
      namespace: ns,
      command: 'apply',
      plan: 'p.yaml',
      timeoutMs: 0,
      timing: FAST,
    })
    server.faults.add({match: {verb: 'patch', resource: 'leases', namespace: ns}, status: 503})
    await sleep(500)
    lock.assertHeld() // a few failed renewals within the lease duration are tolerated
    await sleep(800)
    expect(() => lock.assertHeld()).toThrow(LockHeldError)
    expect(() => lock.assertHeld()).toThrow(
      /lost the lock on namespace lock-\d+: could not renew it for 1 s \(the lease lasts 1 s\)/,
    )
    expect(
      server.requestsMatching({verb: 'patch', resource: 'leases', namespace: ns, status: 503}).length,
    ).toBeGreaterThan(3)
    await lock.release()
    // Lost: not ours to delete any more.
    expect(server.get(lockRef(ns))).toBeDefined()
  })

  it('a renewal that hangs counts as failing: assertHeld throws once the lease duration has passed', async () => {
    const ns = namespace()
    const lock = await NamespaceLock.acquire(await clientFor(server), {
      namespace: ns,
      command: 'apply',
      plan: 'p.yaml',
      timeoutMs: 0,
      timing: FAST,
    })
    server.faults.add({match: {verb: 'patch', resource: 'leases', namespace: ns}, latencyMs: 3000})
    await sleep(1300)
    expect(() => lock.assertHeld()).toThrow(/could not renew it/)
    await lock.release()
  })

  it('taken over by someone else: the next renewal notices and assertHeld names the new holder', async () => {
    const ns = namespace()
    const client = await clientFor(server)
    const lock = await NamespaceLock.acquire(client, {
      namespace: ns,
      command: 'apply',
      plan: 'p.yaml',
      timeoutMs: 0,
      timing: {leaseSeconds: 60, renewEveryMs: 100},
    })
    await client.mergePatch(lockRef(ns), {
      metadata: {
        annotations: {
          'mesh-migrate.io/lock-info': JSON.stringify({
            holder: 'h2',
            who: 'carol@laptop',
            command: 'rollback',
            plan: 'p.yaml',
            startedAt: '2026-01-01T00:00:00Z',
          }),
        },
      },
      spec: {holderIdentity: 'h2'},
    })
    await sleep(400)
    expect(() => lock.assertHeld()).toThrow(
      'lost the lock on namespace ' +
        ns +
        ': the lock was taken over by carol@laptop (rollback, since 2026-01-01T00:00:00Z)',
    )
    await lock.release()
    expect(server.get(lockRef(ns))?.spec?.holderIdentity).toBe('h2')
  })

  it('broken (the Lease deleted): assertHeld says so', async () => {
    const ns = namespace()
    const client = await clientFor(server)
    const lock = await NamespaceLock.acquire(client, {
      namespace: ns,
      command: 'apply',
      plan: 'p.yaml',
      timeoutMs: 0,
      timing: {leaseSeconds: 60, renewEveryMs: 100},
    })
    await client.delete(lockRef(ns))
    await sleep(400)
    expect(() => lock.assertHeld()).toThrow(/the lock was broken/)
    await lock.release()
  })
})
