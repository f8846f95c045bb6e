// E1 at rollback time: restoring istio.io/rev=<r> only brings the sidecars back while revision r still
// injects. When it was uninstalled in the meantime, rollback refuses before it changes anything.
import path from 'node:path'

import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {startTestCluster, type TestCluster} from '../support/cluster.js'
import {cli, isReview, observe, REPO, workdir} from './support.js'

describe('rollback of a revisioned namespace whose revision is gone', () => {
  let cluster: TestCluster
  let cwd: string

  beforeAll(async () => {
    cluster = await startTestCluster({
      fixture: path.join(REPO, 'test/e2e/fixtures/revisioned.yaml'),
      quiet: true,
      install: {revisions: [{revision: 'canary'}]},
      recordRequests: true,
    })
    cwd = await workdir()
  }, 120_000)
  afterAll(async () => {
    await cluster?.stop()
  })

  it('refuses to restore istio.io/rev=canary once no webhook injects for canary, and says what to do', async () => {
    const kube = cluster.kubeconfigPath
    expect((await cli(['plan', 'shop'], cwd, kube)).code).toBe(0)
    const applied = await cli(['apply', 'shop', '--all', '--yes', '--timeout', '60s'], cwd, kube)
    expect(applied.code, applied.stderr).toBe(0)
    await cluster.waitForIdle()

    // Someone uninstalls the canary revision's injector.
    const resource = (await cluster.client.resourceFor(
      'admissionregistration.k8s.io/v1',
      'MutatingWebhookConfiguration',
    ))!
    const canary = await cluster.client.list(resource, {labelSelector: 'istio.io/rev=canary'})
    expect(canary.length).toBeGreaterThan(0)
    for (const w of canary)
      await cluster.client.delete({
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'MutatingWebhookConfiguration',
        name: w.metadata.name,
      })

    const before = await observe(cluster.client, 'shop')
    const writesBefore = cluster.recorder?.requests.filter(
      (e) => e.user === 'admin' && ['create', 'update', 'patch', 'delete'].includes(e.verb ?? ''),
    ).length
    const r = await cli(['rollback', 'shop', '--confirm', 'shop', '--timeout', '60s'], cwd, kube)
    expect(r.code).toBe(3)
    expect(r.stderr).toContain('revision "canary" no longer has an injection webhook')
    expect(r.stderr).toContain('istioctl tag set canary')
    // The injection label was not restored and the pods were not restarted into a sidecar-less state.
    const after = await observe(cluster.client, 'shop')
    expect(after.labels['istio.io/rev']).toBeUndefined()
    expect(after.labels['istio.io/dataplane-mode']).toBe('ambient')
    expect(after.dataPlanes).toEqual(before.dataPlanes)
    expect(after.policies).toEqual(before.policies)
    // Nothing but the namespace lock was written (reviews are queries): the policies were not re-created either.
    if (cluster.recorder) {
      const writes = cluster.recorder.requests
        .filter((e) => e.user === 'admin' && ['create', 'update', 'patch', 'delete'].includes(e.verb ?? ''))
        .slice(writesBefore)
      expect(writes.filter((e) => e.resource !== 'leases' && !isReview(e))).toEqual([])
    }
  }, 180_000)
})
