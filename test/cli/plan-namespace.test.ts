// Issue 19 §4: a plan is for one namespace. `apply NAME`, `validate NAME`, `status NAME`, `rollback NAME` refuse a
// plan file whose metadata.namespace is not NAME (exit 4, naming both) before they read the cluster; `validate` of a
// file whose name and namespace disagree warns. A kubeconfig pointing at a closed loopback port proves nothing is
// contacted: a request would fail with "unreachable" (exit 1), not the refusal.
import {copyFile, mkdir, mkdtemp, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import {beforeAll, describe, expect, it} from 'vitest'

import {hasStackTrace, runCli} from '../support/cli.js'
import {REPO_ROOT} from '../support/shared.js'

let cwd: string
const KUBECONFIG = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: 'https://127.0.0.1:9'}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`

beforeAll(async () => {
  cwd = await mkdtemp(path.join(os.tmpdir(), 'mesh-migrate-plan-ns-'))
  await mkdir(path.join(cwd, 'plans'))
  await copyFile(path.join(REPO_ROOT, 'plans/examples/bookinfo.yaml'), path.join(cwd, 'plans/default.yaml'))
  await writeFile(path.join(cwd, 'kubeconfig'), KUBECONFIG)
})

describe('a plan is for one namespace', () => {
  it.each([
    ['apply', ['apply', 'default', '--yes']],
    ['rollback', ['rollback', 'default', '--confirm', 'default']],
    ['status', ['status', 'default']],
  ])('%s NAME of another namespace’s plan: exit 4 naming both, before the cluster', async (_verb, args) => {
    const r = await runCli([...args, '--kubeconfig', path.join(cwd, 'kubeconfig')], {cwd})
    expect(hasStackTrace(r.stderr)).toBe(false)
    expect(r.code, r.stderr).toBe(4)
    expect(r.stderr).toContain(
      'plans/default.yaml is the plan of namespace bookinfo, not of namespace default: a plan acts on its own namespace only',
    )
  })

  it('validate NAME refuses it (exit 4); validate of the path warns that its name and namespace disagree', async () => {
    const byName = await runCli(['validate', 'default'], {cwd})
    expect(byName.code).toBe(4)
    expect(byName.stderr).toContain('is the plan of namespace bookinfo, not of namespace default')
    const byPath = await runCli(['validate', 'plans/default.yaml'], {cwd})
    expect(byPath.code, byPath.stderr).toBe(0)
    expect(byPath.stderr).toContain(
      'warning plans/default.yaml is named for namespace default but holds the plan of namespace bookinfo',
    )
  })
})

describe('never green when blind (issue 19 §3)', () => {
  it('status against an unreachable server exits 1 (also with --detailed-exitcode); JSON says drift unknown; --offline is the file-only view', async () => {
    await copyFile(path.join(REPO_ROOT, 'plans/examples/bookinfo.yaml'), path.join(cwd, 'plans/bookinfo.yaml'))
    const kube = ['--kubeconfig', path.join(cwd, 'kubeconfig')]
    for (const extra of [[], ['--detailed-exitcode']]) {
      const r = await runCli(['status', 'bookinfo', '-o', 'json', ...extra, ...kube], {cwd})
      expect(hasStackTrace(r.stderr)).toBe(false)
      expect(r.code, r.stderr).toBe(1)
      const [plan] = (JSON.parse(r.stdout) as {plans: {drifted: number | null; clusterUnread?: string}[]}).plans
      expect(plan!.drifted).toBeNull()
      expect(plan!.clusterUnread).toBeTruthy()
      expect(r.stderr).toContain('drift unknown')
      expect(r.stderr).toContain('--offline')
    }
    const offline = await runCli(['status', 'bookinfo', '--offline', '--detailed-exitcode', ...kube], {cwd})
    expect(offline.code, offline.stderr).toBe(10)
  })
})
