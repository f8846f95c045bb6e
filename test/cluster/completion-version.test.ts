// Issue 24 §4 and §5 against an API server (the real kube-apiserver when KUBEBUILDER_ASSETS is set):
// `plan <TAB>` offers the namespaces of the context, `version` reads the Kubernetes and Istio versions.
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {runCli} from '../support/cli.js'
import {bashCompletions} from '../support/completion.js'
import {schemaProblems} from '../support/schemas.js'
import {NAMESPACE, seedAmbientCluster} from './ambient-cluster.js'
import {type ClusterServer, startClusterServer} from './server.js'
import {kubeconfigFile, ns, tempDir} from './support.js'

let server: ClusterServer
let kubeconfig: string
let cwd: string
beforeAll(async () => {
  server = await startClusterServer()
  await seedAmbientCluster(server)
  await server.seed([ns('payments-eu'), ns('payments-us')])
  kubeconfig = await kubeconfigFile(server)
  cwd = await tempDir('mesh-migrate-complete-cluster-')
})
afterAll(() => server.close())

describe.each(['80', '200'])('against the cluster at %s columns', (columns) => {
  const env = () => ({KUBECONFIG: kubeconfig, COLUMNS: columns})

  it('plan <TAB> and -n <TAB> complete the namespaces of the current context', async () => {
    const all = await bashCompletions(['plan', ''], {cwd, env: env()})
    expect(all).toEqual(expect.arrayContaining([NAMESPACE, 'payments-eu', 'payments-us', 'istio-system']))
    expect(await bashCompletions(['plan', 'payments-'], {cwd, env: env()})).toEqual(['payments-eu', 'payments-us'])
    expect(await bashCompletions(['inventory', '-n', 'payments-u'], {cwd, env: env()})).toEqual(['payments-us'])
  }, 60_000)

  it('version names the cluster, its Kubernetes version and the Istio version plans are made for', async () => {
    const r = await runCli(['version', '-o', 'json'], {cwd, env: env()})
    expect(r.code, r.stderr).toBe(0)
    expect(schemaProblems(r.stdout, 'Version')).toEqual([])
    const doc = JSON.parse(r.stdout)
    expect(doc.cluster).toMatchObject({context: 'test-apiserver', istio: {version: '1.28', revision: 'default'}})
    expect(doc.cluster.kubernetes).toMatch(/^v1\.\d+/)
    const human = await runCli(['version'], {cwd, env: env()})
    expect(human.stdout).toMatch(
      /^Istio Version: 1\.28 \(revision default, docker\.io\/istio\/pilot:1\.28\.1-distroless\)$/m,
    )
  }, 60_000)
})
