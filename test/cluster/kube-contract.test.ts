// The KubeClient contract of test/support/kube-contract.ts against the test cluster's API server through the
// tool's HTTP client: what the in-memory client of the unit tier (test/support/memory-kube.ts) must agree with.
import {afterAll, beforeAll, describe} from 'vitest'

import {kubeClientContract} from '../support/kube-contract.js'
import {E2E_KUBECONFIG_ENV, startTestCluster, type TestCluster} from '../support/cluster.js'

// The in-repo server keeps status sent with a create (kube-apiserver drops it): that check runs on a real server
// only (MESH_MIGRATE_E2E_KUBECONFIG, or once the cluster tier runs on envtest's kube-apiserver).
const inRepoServer = !process.env[E2E_KUBECONFIG_ENV]

describe('KubeClient contract on the test cluster', () => {
  let cluster: TestCluster
  beforeAll(async () => {
    cluster = await startTestCluster({install: false, quiet: true, waitForIdle: false})
  })
  afterAll(async () => {
    await cluster?.stop()
  })
  kubeClientContract(() => cluster.client, {statusKeptOnCreate: inRepoServer})
})
