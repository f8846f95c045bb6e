// `apply --diff` (issue 24 §7) against the real kube-apiserver (envtest; the in-repo server otherwise): before
// each step's writes, the object the server would store (a server-side dry run) against the live one, as a
// unified diff, as kubectl diff shows it; then the step is applied as without --diff.
import path from 'node:path'

import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {startTestCluster, type TestCluster} from '../support/cluster.js'
import {runCli} from '../support/cli.js'
import {REPO, workdir} from './support.js'

const NS = 'bookinfo'
let cluster: TestCluster
let cwd: string

beforeAll(async () => {
  cluster = await startTestCluster({fixture: path.join(REPO, 'examples/bookinfo'), quiet: true})
  cwd = await workdir()
  const plan = await runCli(['plan', NS, '--kubeconfig', cluster.kubeconfigPath], {cwd})
  if (plan.code !== 0) throw new Error(`plan failed: ${plan.stderr}`)
})
afterAll(() => cluster?.stop())

const apply = (to: string, columns: string) =>
  runCli(['apply', NS, '--to', to, '--yes', '--diff', '--timeout', '90s', '--kubeconfig', cluster.kubeconfigPath], {
    cwd,
    env: {COLUMNS: columns},
  })

describe('apply --diff', () => {
  it('at 80 columns: a created object is all additions, shown before it exists, then created', async () => {
    const r = await apply('create-waypoint', '80')
    expect(r.code, r.stderr).toBe(0)
    expect(r.stdout).toMatch(/^--- live\/Gateway bookinfo\/waypoint$/m)
    expect(r.stdout).toMatch(/^\+\+\+ merged\/Gateway bookinfo\/waypoint$/m)
    expect(r.stdout).toMatch(/^@@ -0,0 \+1,\d+ @@$/m)
    expect(r.stdout).toMatch(/^\+kind: Gateway$/m)
    expect(r.stdout).toMatch(/^\+ {2}gatewayClassName: istio-waypoint$/m)
    // The server's own bookkeeping is left out, as kubectl diff leaves managedFields out.
    expect(r.stdout).not.toContain('managedFields')
    expect(
      await cluster.client.get({
        apiVersion: 'gateway.networking.k8s.io/v1',
        kind: 'Gateway',
        namespace: NS,
        name: 'waypoint',
      }),
    ).toBeDefined()
  }, 240_000)

  it('at 200 columns: a label on the live namespace is one added line among unchanged context', async () => {
    const r = await apply('bind-waypoint', '200')
    expect(r.code, r.stderr).toBe(0)
    const diff = r.stdout.slice(r.stdout.indexOf('--- live/Namespace bookinfo'))
    expect(diff).toMatch(/^\+\+\+ merged\/Namespace bookinfo$/m)
    expect(diff).toMatch(/^\+ {4}istio\.io\/use-waypoint: waypoint$/m)
    // Context: the labels the namespace already has are unchanged lines, nothing is removed.
    expect(diff).toMatch(/^ {5}istio-injection: enabled$/m)
    expect(diff.split('\n').filter((l) => /^-(?!--)/.test(l))).toEqual([])
  }, 240_000)
})
