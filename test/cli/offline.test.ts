// The offline commands through the built CLI: exit codes, stdout holds only data, errors on stderr.
import {copyFile, mkdtemp, readFile, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import {parse, stringify} from 'yaml'
import {beforeAll, describe, expect, it} from 'vitest'

import {hasStackTrace, runCli} from '../support/cli.js'
import {planOf} from '../support/plan-file.js'

const EXAMPLE = 'examples/bookinfo'
let tmp: string

beforeAll(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), 'mesh-migrate-cli-'))
})

describe('help and usage', () => {
  it('prints help for the root and each command with exit 0', async () => {
    const root = await runCli(['--help'])
    expect(root.code).toBe(0)
    for (const cmd of ['inventory', 'plan', 'show', 'validate']) expect(root.stdout).toContain(cmd)
    const plan = await runCli(['plan', '--help'])
    expect(plan.code).toBe(0)
    expect(plan.stdout).toContain('EXIT CODES')
    expect(plan.stdout).toContain('--waypoint-name')
  })

  it('exits 2 on an unknown flag and on a missing argument', async () => {
    const unknown = await runCli(['inventory', 'bookinfo', '--nope'])
    expect(unknown.code).toBe(2)
    expect(unknown.stdout).toBe('')
    const missing = await runCli(['plan'])
    expect(missing.code).toBe(2)
  })

  it('each command validates its options before it reads or connects: what is wrong and what to run (exit 2)', async () => {
    const inventory = await runCli(['inventory', '--manifests', EXAMPLE])
    expect([inventory.code, inventory.stderr]).toEqual([
      2,
      'Error: missing the namespace\nNext: Pass it as the argument or with -n NAMESPACE.\n',
    ])
    const show = await runCli(['show'])
    expect(show.code).toBe(2)
    expect(show.stderr).toContain('which plan? Name a plan file or a namespace')
    const fleetPatches = await runCli(['show', '--fleet', '-o', 'patches'])
    expect([fleetPatches.code, fleetPatches.stderr]).toEqual([
      2,
      'Error: -o patches is for one plan; the fleet overview has table, markdown, json and yaml\n',
    ])
    // Checked before connecting: no kubeconfig is needed to be told.
    const census = await runCli(['census', '--plans-dir', 'no-such-dir'], {env: {KUBECONFIG: '/nonexistent'}})
    expect(census.code).toBe(2)
    expect(census.stderr).toContain('Error: --plans-dir no-such-dir does not exist')
  })
})

describe('inventory', () => {
  it('prints one JSON object with the contract fields on stdout and nothing else', async () => {
    const r = await runCli(['inventory', 'bookinfo', '--manifests', EXAMPLE, '-o', 'json'])
    expect(r.code).toBe(0)
    const inv = JSON.parse(r.stdout)
    expect(inv.namespace).toBe('bookinfo')
    expect(inv.waypointRequired).toBe(true)
    expect(Array.isArray(inv.objects)).toBe(true)
    const ratings = inv.objects.find(
      (o: {ref: {name: string; kind: string}}) =>
        o.ref.kind === 'AuthorizationPolicy' && o.ref.name === 'ratings-get-only',
    )
    expect(ratings).toMatchObject({
      verdict: 'L7',
      action: 'retarget',
      ref: {apiVersion: 'security.istio.io/v1', namespace: 'bookinfo'},
    })
    expect(ratings.reasons.some((r: string) => r.startsWith('spec.rules[0].to[0].operation.methods'))).toBe(true)
    const workload = inv.workloads.find((w: {ref: {name: string}}) => w.ref.name === 'productpage-v1')
    expect(workload.proxy).toBe('sidecar')
    expect(workload.lostAnnotations.map((a: {key: string}) => a.key)).toContain('sidecar.istio.io/proxyCPU')
    expect(Array.isArray(inv.findings)).toBe(true)
  })

  it('--json gives the same data as -o json', async () => {
    const a = await runCli(['inventory', 'bookinfo', '--manifests', EXAMPLE, '-o', 'json'])
    const b = await runCli(['inventory', 'bookinfo', '--manifests', EXAMPLE, '--json'])
    expect(JSON.parse(b.stdout)).toEqual(JSON.parse(a.stdout))
  })

  it('-o yaml parses and the table names every object', async () => {
    const y = await runCli(['inventory', 'bookinfo', '--manifests', EXAMPLE, '-o', 'yaml'])
    expect(y.code).toBe(0)
    expect(parse(y.stdout).namespace).toBe('bookinfo')
    const t = await runCli(['inventory', 'bookinfo', '--manifests', EXAMPLE])
    expect(t.code).toBe(0)
    for (const name of ['ratings-get-only', 'details-no-delete', 'reviews-from-productpage', 'productpage-v1'])
      expect(t.stdout).toContain(name)
    expect(t.stdout).not.toMatch(/\u001B\[/)
  })

  it('names the file and line of malformed YAML, exit 1, no stack trace', async () => {
    const dir = await mkdtemp(path.join(tmp, 'bad-'))
    await writeFile(
      path.join(dir, 'broken.yaml'),
      'apiVersion: v1\nkind: Service\nmetadata:\n  name: x\n  labels: [unclosed\n',
    )
    const r = await runCli(['inventory', 'bookinfo', '--manifests', dir])
    expect(r.code).toBe(1)
    expect(r.stdout).toBe('')
    expect(r.stderr).toMatch(/broken\.yaml:\d+:\d+/)
    expect(hasStackTrace(r.stderr)).toBe(false)
  })

  it('says what to do when there is no kubeconfig instead of trying localhost:8080', async () => {
    const home = await mkdtemp(path.join(tmp, 'home-'))
    const r = await runCli(['inventory', 'bookinfo'], {env: {HOME: home, KUBECONFIG: '', KUBERNETES_SERVICE_HOST: ''}})
    expect(r.code).toBe(1)
    expect(r.stderr).toContain('no kubeconfig found')
    expect(r.stderr).toContain('--manifests')
    expect(hasStackTrace(r.stderr)).toBe(false)
  })
})

describe('plan, show, validate', () => {
  it('writes a canonical plan that regenerates byte-identically', async () => {
    const out = path.join(tmp, 'bookinfo.yaml')
    const first = await runCli(['plan', 'bookinfo', '--manifests', EXAMPLE, '--out', out])
    expect(first.code).toBe(0)
    expect(first.stderr).toContain(`Wrote ${out}`)
    const text1 = await readFile(out, 'utf8')
    const second = await runCli(['plan', 'bookinfo', '--manifests', EXAMPLE, '--out', out])
    expect(second.code).toBe(0)
    expect(second.stderr).toContain('up to date')
    expect(await readFile(out, 'utf8')).toBe(text1)
    const plan = planOf(text1)
    expect(plan.apiVersion).toBe('mesh-migrate.io/v1alpha1')
    expect(plan.kind).toBe('MigrationPlan')
    expect(plan.spec.steps.map((s: {action: string}) => s.action)).toEqual([
      'preflight',
      'create-waypoint',
      'wait-waypoint',
      'create-policies',
      'bind-waypoint',
      'enable-ambient',
      'remove-sidecar-injection',
      'restart-workloads',
      'delete-sidecar-policies',
      'verify-dataplane',
    ])
    expect(plan.status).toBeUndefined()
  })

  it('--detailed-exitcode exits 10 when the plan has steps', async () => {
    const r = await runCli([
      'plan',
      'bookinfo',
      '--manifests',
      EXAMPLE,
      '--out',
      path.join(tmp, 'detailed.yaml'),
      '--detailed-exitcode',
    ])
    expect(r.code).toBe(10)
  })

  it('rejects the reserved waypoint name "none" as a usage error', async () => {
    const r = await runCli([
      'plan',
      'bookinfo',
      '--manifests',
      EXAMPLE,
      '--out',
      path.join(tmp, 'none.yaml'),
      '--waypoint-name',
      'none',
    ])
    expect(r.code).toBe(2)
    expect(r.stderr).toContain('reserved')
  })

  it('refuses to overwrite a plan with applied steps unless --force', async () => {
    const out = path.join(tmp, 'started.yaml')
    await runCli(['plan', 'bookinfo', '--manifests', EXAMPLE, '--out', out])
    const plan = planOf(await readFile(out, 'utf8'))
    const {createHash} = await import('node:crypto')
    const {stableJson} = await import('../../src/planner/canonical.js')
    plan.status = {
      specDigest: `sha256:${createHash('sha256').update(stableJson(plan.spec)).digest('hex')}`,
      steps: [{id: 'preflight', phase: 'Applied', at: '2026-12-01T00:00:00Z', by: 'someone'}],
    }
    await writeFile(out, stringify(plan))
    const refused = await runCli(['plan', 'bookinfo', '--manifests', EXAMPLE, '--out', out])
    expect(refused.code).toBe(1)
    expect(refused.stderr).toContain('has applied steps')
    const forced = await runCli(['plan', 'bookinfo', '--manifests', EXAMPLE, '--out', out, '--force'])
    expect(forced.code).toBe(0)
    expect(parse(await readFile(out, 'utf8')).status).toBeUndefined()
  })

  it('show renders a table, markdown and JSON', async () => {
    const out = path.join(tmp, 'show.yaml')
    await runCli(['plan', 'bookinfo', '--manifests', EXAMPLE, '--out', out])
    const table = await runCli(['show', out])
    expect(table.code).toBe(0)
    expect(table.stdout).toContain('create-waypoint')
    expect(table.stdout).toContain('Pending')
    const md = await runCli(['show', out, '-o', 'markdown'])
    expect(md.stdout).toContain('| # | Step | State | Changes | Undo |')
    const json = await runCli(['show', out, '-o', 'json'])
    expect(JSON.parse(json.stdout).metadata.namespace).toBe('bookinfo')
  })

  it('validate accepts a generated plan and lists every problem of a tampered one with exit 4', async () => {
    const out = path.join(tmp, 'valid.yaml')
    await runCli(['plan', 'bookinfo', '--manifests', EXAMPLE, '--out', out])
    const ok = await runCli(['validate', out])
    expect(ok.code).toBe(0)
    expect(ok.stdout).toContain('valid')

    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- edited freely, as a reviewer could
    const plan: any = planOf(await readFile(out, 'utf8'))
    const waypointStep = plan.spec.steps.find((s: {action: string}) => s.action === 'create-waypoint')
    waypointStep.operations[0].object.spec.gatewayClassName = 'istio'
    const bind = plan.spec.steps.find((s: {action: string}) => s.action === 'bind-waypoint')
    bind.operations[0].ref.name = 'kube-system'
    plan.spec.steps[0].surprise = true
    const bad = path.join(tmp, 'tampered.yaml')
    await writeFile(bad, stringify(plan))
    const r = await runCli(['validate', out, bad])
    expect(r.code).toBe(4)
    expect(r.stderr).toContain('unknown field')
    expect(r.stdout).toContain(`${out}: valid`)
    expect(r.stdout).toContain(`${bad}: invalid`)
    expect(hasStackTrace(r.stderr)).toBe(false)
  })

  it('validate reports safety problems (writes outside the namespace, non-waypoint Gateways)', async () => {
    const out = path.join(tmp, 'safety.yaml')
    await runCli(['plan', 'bookinfo', '--manifests', EXAMPLE, '--out', out])
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- edited freely, as a reviewer could
    const plan: any = planOf(await readFile(out, 'utf8'))
    plan.spec.steps.find(
      (s: {action: string}) => s.action === 'create-waypoint',
    ).operations[0].object.spec.gatewayClassName = 'istio'
    plan.spec.steps.find((s: {action: string}) => s.action === 'bind-waypoint').operations[0].ref.name = 'kube-system'
    const bad = path.join(tmp, 'unsafe.yaml')
    await writeFile(bad, stringify(plan))
    const r = await runCli(['validate', bad, '-o', 'json'])
    expect(r.code).toBe(4)
    const [result] = JSON.parse(r.stdout).files
    const messages = result.problems.map((p: {message: string}) => p.message).join('\n')
    expect(messages).toContain('not istio-waypoint')
    expect(messages).toContain("outside the plan's namespace")
  })

  it('validate fails on malformed YAML with the line number', async () => {
    const bad = path.join(tmp, 'malformed.yaml')
    await writeFile(bad, 'apiVersion: mesh-migrate.io/v1alpha1\nkind: MigrationPlan\nspec: [\n')
    const r = await runCli(['validate', bad])
    expect(r.code).toBe(4)
    expect(r.stderr).toMatch(/malformed\.yaml:\d+/)
  })

  it('show of a missing plan says how to create one', async () => {
    const r = await runCli(['show', 'no-such-namespace'], {cwd: tmp})
    expect(r.code).toBe(1)
    expect(r.stderr).toContain('mesh-migrate plan no-such-namespace')
  })

  it('the committed example plan is what plan generates today', async () => {
    const out = path.join(tmp, 'example.yaml')
    await copyFile('plans/examples/bookinfo.yaml', path.join(tmp, 'committed.yaml')).catch(() => undefined)
    const r = await runCli(['plan', 'bookinfo', '--manifests', EXAMPLE, '--out', out])
    expect(r.code).toBe(0)
    const committed = await readFile('plans/examples/bookinfo.yaml', 'utf8')
    // When this fails, review the difference and re-generate: npm run example-plan
    expect(await readFile(out, 'utf8')).toBe(committed)
  })
})
