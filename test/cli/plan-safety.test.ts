// issue 10 points 12 and 16 through the built CLI, offline: blocked plans do not pass the PR gate
// (validate exit 4; status shows `blocked`); a namespace the manifests do not contain fails (exit 1,
// naming the namespaces found); a namespace with nothing to migrate gets no plan file (exit 0, saying
// why); a fully rolled-back plan is replaced by `plan` without --force, one in progress is not.
import {existsSync} from 'node:fs'
import {mkdtemp, readFile, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import {stringify} from 'yaml'
import {beforeAll, describe, expect, it} from 'vitest'

import {specDigest} from '../../src/plan/planfile.js'
import {hasStackTrace, runCli} from '../support/cli.js'
import {REPO_ROOT} from '../support/shared.js'
import {planOf} from '../support/plan-file.js'

const EXAMPLE = path.join(REPO_ROOT, 'examples/bookinfo')
// Root-namespace L7 policies: blockers for the mesh admin, whatever the namespace does.
const BLOCKED_FIXTURE = path.join(REPO_ROOT, 'test/fixtures/edge-cases/E14-root-namespace-l7-policies.yaml')
let tmp: string

beforeAll(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), 'mesh-migrate-plan-safety-'))
})

describe('blocked plans do not pass the gate', () => {
  it('validate exits 4 listing the blockers; status shows the plan as blocked', async () => {
    const made = await runCli(['plan', 'bookinfo', '--manifests', BLOCKED_FIXTURE], {cwd: tmp})
    expect(made.code, made.stderr).toBe(1)
    const plan = planOf(await readFile(path.join(tmp, 'plans/bookinfo.yaml'), 'utf8'))
    const ids = plan.spec.blockers.map((b) => b.id)
    expect(ids.length).toBeGreaterThan(0)

    const r = await runCli(['validate', 'plans/bookinfo.yaml'], {cwd: tmp})
    expect(r.code).toBe(4)
    expect(hasStackTrace(r.stderr)).toBe(false)
    expect(r.stdout).toBe(
      `plans/bookinfo.yaml: blocked (${ids.length} blocker${ids.length === 1 ? '' : 's'}: ${ids.join(', ')})\n`,
    )
    for (const id of ids) expect(r.stderr).toContain(`blocked plans/bookinfo.yaml: blocker ${id}`)
    const json = await runCli(['validate', 'plans/bookinfo.yaml', '-o', 'json'], {cwd: tmp})
    expect(json.code).toBe(4)
    expect(JSON.parse(json.stdout)).toMatchObject({
      kind: 'ValidationReport',
      valid: false,
      files: [{file: 'plans/bookinfo.yaml', valid: false, problems: [], blockers: ids}],
    })

    const status = await runCli(['status', '--offline', '-o', 'json'], {cwd: tmp})
    expect(JSON.parse(status.stdout)).toMatchObject({
      kind: 'StatusReport',
      plans: [{plan: 'plans/bookinfo.yaml', state: 'blocked'}],
    })
    const table = await runCli(['status', '--offline'], {cwd: tmp})
    expect(table.stdout).toContain('plans/bookinfo.yaml (namespace bookinfo): blocked, 0/')

    // apply refuses it with the same exit code as validate, before it needs a cluster.
    const apply = await runCli(['apply', 'bookinfo', '--yes'], {cwd: tmp, env: {KUBECONFIG: '/nonexistent'}})
    expect(apply.code).toBe(4)
    expect(apply.stderr).toContain(`Error: the plan has ${ids.length} blocker(s): ${ids.join(', ')}`)
    expect(apply.stderr).toContain('Next: Resolve them (mesh-migrate show plans/bookinfo.yaml)')
  })

  it('a plan without blockers is still valid', async () => {
    const out = path.join(tmp, 'ok.yaml')
    expect((await runCli(['plan', 'bookinfo', '--manifests', EXAMPLE, '--out', out])).code).toBe(0)
    const r = await runCli(['validate', out])
    expect(r.code, r.stderr).toBe(0)
    expect(r.stdout).toBe(`${out}: valid\n`)
  })
})

describe('plans of namespaces that do not exist or need nothing', () => {
  it('offline, a namespace the manifests do not contain exits 1 naming the namespaces found, and writes nothing', async () => {
    const out = path.join(tmp, 'nope.yaml')
    const r = await runCli(['plan', 'bookinfo-typo', '--manifests', EXAMPLE, '--out', out])
    expect(r.code).toBe(1)
    expect(hasStackTrace(r.stderr)).toBe(false)
    expect(r.stderr).toContain(
      `namespace "bookinfo-typo" is not in the manifests (${EXAMPLE}): they contain namespace bookinfo`,
    )
    expect(r.stderr).toContain('Check the name (one of: bookinfo)')
    expect(existsSync(out)).toBe(false)
    const inventory = await runCli(['inventory', 'bookinfo-typo', '--manifests', EXAMPLE])
    expect(inventory.code).toBe(1)
  })

  it('a namespace with nothing to migrate gets no plan file: exit 0, saying why', async () => {
    const dir = await mkdtemp(path.join(tmp, 'plain-'))
    await writeFile(
      path.join(dir, 'ns.yaml'),
      stringify({apiVersion: 'v1', kind: 'Namespace', metadata: {name: 'plain'}}) +
        '---\n' +
        stringify({
          apiVersion: 'apps/v1',
          kind: 'Deployment',
          metadata: {name: 'web', namespace: 'plain'},
          spec: {
            selector: {matchLabels: {app: 'web'}},
            template: {metadata: {labels: {app: 'web'}}, spec: {containers: [{name: 'web', image: 'nginx'}]}},
          },
        }),
    )
    const r = await runCli(['plan', 'plain', '--manifests', dir], {cwd: dir})
    expect(r.code, r.stderr).toBe(0)
    expect(r.stderr).toContain(
      'Nothing to migrate in namespace plain: none of its pods is in the mesh and nothing injects sidecars there',
    )
    expect(r.stderr).toContain('No plan file written.')
    expect(existsSync(path.join(dir, 'plans/plain.yaml'))).toBe(false)
  })

  it('a fully rolled-back plan is replaced by plan without --force; one with an applied step is not, and the advice names rollback', async () => {
    const dir = await mkdtemp(path.join(tmp, 'replan-'))
    expect((await runCli(['plan', 'bookinfo', '--manifests', EXAMPLE], {cwd: dir})).code).toBe(0)
    const file = path.join(dir, 'plans/bookinfo.yaml')
    const plan = planOf(await readFile(file, 'utf8'))
    const record = (phase: 'RolledBack' | 'Applied') => ({
      ...plan,
      status: {
        specDigest: specDigest(plan),
        steps: plan.spec.steps.slice(0, 2).map((s, i) => ({
          id: s.id,
          phase: i === 0 ? 'RolledBack' : phase,
          at: '2026-01-01T00:00:00Z',
          by: 'me@host',
        })),
      },
    })

    await writeFile(file, stringify(record('Applied')))
    const refused = await runCli(['plan', 'bookinfo', '--manifests', EXAMPLE], {cwd: dir})
    expect(refused.code).toBe(1)
    expect(refused.stderr).toContain('refusing to overwrite a plan in progress')
    expect(refused.stderr).toContain('mesh-migrate rollback plans/bookinfo.yaml --confirm bookinfo')

    await writeFile(file, stringify(record('RolledBack')))
    const replaced = await runCli(['plan', 'bookinfo', '--manifests', EXAMPLE], {cwd: dir})
    expect(replaced.code, replaced.stderr).toBe(0)
    expect(planOf(await readFile(file, 'utf8')).status).toBeUndefined()
  })
})
