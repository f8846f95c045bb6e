// Issue 13 through the built CLI, offline: typo suggestions, usage errors (one line + usage, exit 2),
// -n and -h, validate NS, tables at 80 and 200 columns, JSON documents with apiVersion/kind that
// validate against the committed schemas (and are the same for -o json and --json, also on error),
// the Mermaid timeline and the "needs you" / "handled by the plan" findings of show -o markdown,
// the kubectl plugin entry point and the npm package contents.
import {execFile} from 'node:child_process'
import {copyFile, mkdir, mkdtemp, readFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {promisify} from 'node:util'

import stringWidth from 'string-width'
import {beforeAll, describe, expect, it} from 'vitest'

import {generateSchemas, SCHEMA_DIR} from '../../scripts/generate-schemas.js'
import {cliEnv, hasStackTrace, runCli} from '../support/cli.js'
import {schemaProblems} from '../support/schemas.js'
import {REPO_ROOT} from '../support/shared.js'

const EXAMPLE = 'examples/bookinfo'
const PLAN = 'plans/examples/bookinfo.yaml'
let tmp: string

const widest = (text: string) => Math.max(...text.split('\n').map((l) => stringWidth(l)))

beforeAll(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), 'mesh-migrate-ux-'))
  await mkdir(path.join(tmp, 'plans'))
  await copyFile(path.join(REPO_ROOT, PLAN), path.join(tmp, 'plans/bookinfo.yaml'))
})

describe('typos and usage errors', () => {
  it('an unknown command suggests the closest one and exits 2', async () => {
    for (const [typed, meant] of [
      ['aply', 'apply'],
      ['rollbak', 'rollback'],
      ['stauts', 'status'],
      ['inv', 'inventory'],
    ] as const) {
      const r = await runCli([typed, 'bookinfo'])
      expect(r.code, typed).toBe(2)
      expect(r.stdout).toBe('')
      expect(r.stderr).toContain(`"${typed}" is not a mesh-migrate command. Did you mean ${meant}?`)
    }
    const none = await runCli(['frobnicate'])
    expect(none.code).toBe(2)
    expect(none.stderr).not.toContain('Did you mean')
  }, 180_000)

  it('an unknown flag prints one error line and the usage line, not the whole help', async () => {
    const r = await runCli(['show', PLAN, '--foo'])
    expect(r.code).toBe(2)
    expect(r.stdout).toBe('')
    expect(r.stderr).toContain('Error: Nonexistent flag: --foo')
    expect(r.stderr).toContain('Usage: mesh-migrate show [PLAN] [flags]')
    expect(r.stderr).not.toContain('FLAGS')
    expect(r.stderr.trim().split('\n').length).toBeLessThanOrEqual(4)
  }, 180_000)

  it('a bad flag value is a usage error (exit 2) before any cluster is contacted', async () => {
    const env = {KUBECONFIG: path.join(tmp, 'no-such-kubeconfig')}
    const timeout = await runCli(['census', '--request-timeout', 'abc'], {env})
    expect(timeout.code).toBe(2)
    expect(timeout.stderr).toContain('--request-timeout "abc" is not a duration')
    expect(timeout.stderr).toContain('Usage: mesh-migrate census [flags]')
    expect(timeout.stderr).not.toContain('kubeconfig')
    for (const selector of ['a=(b', 'team in (a,b', '=x', 'a==b==c']) {
      const r = await runCli(['census', '-l', selector], {env})
      expect(r.code, selector).toBe(2)
      expect(r.stderr, selector).toContain('is not a label selector requirement')
    }
    const apply = await runCli(['apply', 'bookinfo', '--timeout', '5 minutes'], {cwd: tmp})
    expect(apply.code).toBe(2)
    expect(apply.stderr).toContain('--timeout "5 minutes" is not a duration')
    expect(hasStackTrace(timeout.stderr + apply.stderr)).toBe(false)
  }, 180_000)

  it('valid selectors pass the flag check (they fail later, on the missing kubeconfig: exit 1)', async () => {
    const env = {KUBECONFIG: path.join(tmp, 'no-such-kubeconfig'), HOME: tmp}
    for (const selector of [
      'team=payments,env!=dev',
      'team in (a,b),!legacy',
      'example.com/tier notin (x, y)',
      'app',
    ]) {
      const r = await runCli(['census', '-l', selector], {env})
      expect(r.code, `${selector}: ${r.stderr}`).toBe(1)
      expect(r.stderr).toContain('kubeconfig')
    }
  }, 180_000)

  it('-h is help; -n NAMESPACE works where a namespace is taken; NAMESPACE and -n must agree', async () => {
    const help = await runCli(['show', '-h'])
    expect(help.code).toBe(0)
    expect(help.stdout).toContain('USAGE')
    const viaFlag = await runCli(['inventory', '-n', 'bookinfo', '--manifests', EXAMPLE, '-o', 'json'])
    expect(viaFlag.code, viaFlag.stderr).toBe(0)
    expect(JSON.parse(viaFlag.stdout).namespace).toBe('bookinfo')
    const show = await runCli(['show', '-n', 'bookinfo', '-o', 'json'], {cwd: tmp})
    expect(show.code, show.stderr).toBe(0)
    const conflict = await runCli(['inventory', 'bookinfo', '-n', 'other', '--manifests', EXAMPLE])
    expect(conflict.code).toBe(2)
    expect(conflict.stderr).toContain('NAMESPACE "bookinfo" and -n other disagree')
    const missing = await runCli(['show'], {cwd: tmp})
    expect(missing.code).toBe(2)
    for (const cmd of ['inventory', 'plan', 'preflight', 'show', 'apply', 'rollback', 'status', 'unlock', 'validate']) {
      const r = await runCli([cmd, '--help'])
      expect(r.stdout, cmd).toMatch(/-n, --namespace=<value>/)
    }
  }, 180_000)

  it('validate NAMESPACE resolves plans/NAMESPACE.yaml like show and apply', async () => {
    const r = await runCli(['validate', 'bookinfo'], {cwd: tmp})
    expect(r.code, r.stderr).toBe(0)
    expect(r.stdout).toBe('plans/bookinfo.yaml: valid\n')
    const missing = await runCli(['validate', 'nosuchns', '-o', 'json'], {cwd: tmp})
    expect(missing.code).toBe(4)
    expect(JSON.parse(missing.stdout).files[0].problems[0].message).toContain('no plan for namespace "nosuchns"')
  }, 180_000)
})

describe('tables fit the terminal', () => {
  it('show and inventory fit 80 and 200 columns, wrap at word boundaries and cut with …; piped output is not wrapped', async () => {
    for (const columns of [80, 200]) {
      for (const args of [
        ['show', PLAN],
        ['inventory', 'bookinfo', '--manifests', EXAMPLE],
        ['show', PLAN, '--timeline'],
      ]) {
        const r = await runCli(args, {env: {COLUMNS: String(columns)}})
        expect(r.code, r.stderr).toBe(0)
        // At 80 a row whose columns' longest words do not fit together runs past the edge rather than split a
        // name (issue 24 §1, test/cli/kubectl-feel.test.ts); at 200 everything fits but the hazard table, whose
        // ids are 113 characters long.
        if (columns === 200 && !args.includes('--timeline'))
          expect(widest(r.stdout), `${args.join(' ')} at ${columns}`).toBeLessThanOrEqual(columns)
      }
    }
    const narrow = (await runCli(['show', PLAN], {env: {COLUMNS: '80'}})).stdout
    expect(narrow).toContain('…')
    // Word boundaries: names are never split (issue 24 §1), not even after a separator.
    expect(narrow).not.toMatch(/bookinfo\/pr\n/)
    expect(narrow).toContain('bookinfo/productpage-ingress-only-waypoint')
    const piped = (await runCli(['show', PLAN])).stdout
    expect(piped).not.toContain('…')
    expect(widest(piped)).toBeGreaterThan(200)
  }, 180_000)

  it('-o wide keeps every word (no ellipsis) and fits 200 columns', async () => {
    const wide = await runCli(['show', PLAN, '-o', 'wide'], {env: {COLUMNS: '200'}})
    expect(wide.code).toBe(0)
    expect(wide.stdout).not.toContain('…')
    expect(widest(wide.stdout)).toBeLessThanOrEqual(200)
    expect(wide.stdout.replace(/\s+/g, ' ')).toContain('Keep the STRICT policy: removing it re-allows plaintext.')
  }, 180_000)
})

describe('JSON documents', () => {
  it('every offline command prints one document with apiVersion/kind that validates against its schema', async () => {
    const runs: [string[], string][] = [
      [['inventory', 'bookinfo', '--manifests', EXAMPLE, '-o', 'json'], 'Inventory'],
      [['plan', 'bookinfo', '--manifests', EXAMPLE, '--out', '-', '-o', 'json'], 'MigrationPlan'],
      [['show', PLAN, '-o', 'json'], 'MigrationPlan'],
      [['show', PLAN, '--timeline', '-o', 'json'], 'Timeline'],
      [['show', PLAN, '-o', 'patches', '--json'], 'ManifestChanges'],
      [['validate', PLAN, '-o', 'json'], 'ValidationReport'],
      [['status', '--offline', '-o', 'json'], 'StatusReport'],
    ]
    for (const [args, kind] of runs) {
      const r = await runCli(args, {cwd: args[0] === 'status' ? tmp : REPO_ROOT})
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(0)
      expect(schemaProblems(r.stdout, kind), args.join(' ')).toEqual([])
    }
  }, 180_000)

  it('-o json and --json print the same document, on success and on error (an Error document, exit code kept)', async () => {
    const a = await runCli(['show', PLAN, '--timeline', '-o', 'json'])
    const b = await runCli(['show', PLAN, '--timeline', '--json'])
    expect(JSON.parse(a.stdout)).toEqual(JSON.parse(b.stdout))
    for (const args of [
      ['show', 'no-such-ns'],
      ['inventory', 'bookinfo', '--manifests', 'no/such/dir'],
      ['census', '--request-timeout', 'x'],
    ]) {
      const viaOutput = await runCli([...args, '-o', 'json'], {cwd: tmp})
      const viaJson = await runCli([...args, '--json'], {cwd: tmp})
      expect(viaOutput.code, args.join(' ')).not.toBe(0)
      expect(viaOutput.code).toBe(viaJson.code)
      expect(JSON.parse(viaOutput.stdout)).toEqual(JSON.parse(viaJson.stdout))
      expect(schemaProblems(viaOutput.stdout, 'Error'), args.join(' ')).toEqual([])
      expect(JSON.parse(viaOutput.stdout).error.exitCode).toBe(viaOutput.code)
      expect(viaOutput.stderr).toContain('Error:')
    }
  }, 180_000)

  it('the committed schemas are what `npm run schemas` generates from src/cli/contract.ts', async () => {
    const generated = generateSchemas()
    for (const [file, text] of Object.entries(generated)) {
      expect(await readFile(path.join(SCHEMA_DIR, file), 'utf8'), `schemas/${file} is stale: run npm run schemas`).toBe(
        text,
      )
    }
  }, 180_000)

  it('plan files name their schema for editors (yaml-language-server)', async () => {
    const text = await readFile(path.join(REPO_ROOT, PLAN), 'utf8')
    expect(text.split('\n')[0]).toBe(
      '# yaml-language-server: $schema=https://mesh-migrate.io/schemas/migration-plan-file-v1alpha3.json',
    )
    expect(JSON.parse(await readFile(path.join(SCHEMA_DIR, 'migration-plan-file.json'), 'utf8')).$id).toBe(
      'https://mesh-migrate.io/schemas/migration-plan-file-v1alpha3.json',
    )
  }, 180_000)
})

describe('show -o markdown', () => {
  it('has the Mermaid timeline: steps in order, data plane per step, hazard windows', async () => {
    const r = await runCli(['show', PLAN, '-o', 'markdown'])
    expect(r.code).toBe(0)
    const mermaid = /```mermaid\n([\s\S]*?)```/.exec(r.stdout)?.[1]
    expect(mermaid).toBeDefined()
    const lines = mermaid!.split('\n').map((l) => l.trim())
    expect(lines[0]).toBe('gantt')
    const steps = lines.filter((l) => /^\d+ \S+ :/.test(l)).map((l) => l.split(' ')[1])
    expect(steps).toEqual([
      'start',
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
    // The six workloads are sidecar until restart-workloads (step 8) and ambient after it.
    expect(lines).toContain('6 workloads sidecar :0, 8')
    expect(lines).toContain('6 workloads ambient :active, 8, 11')
    // ratings-get-only is deny-all at ztunnel from restart-workloads until delete-sidecar-policies (step 9).
    expect(lines).toContain('AuthorizationPolicy/ratings-get-only deny-all (restart window) :active, 8, 9')
  }, 180_000)

  it('separates what needs the reviewer from what the plan handles; E21 names the objects create-policies creates', async () => {
    const r = await runCli(['show', PLAN, '-o', 'markdown'])
    const needs = r.stdout.slice(r.stdout.indexOf('#### Needs you'), r.stdout.indexOf('Handled by the plan'))
    const handled = r.stdout.slice(r.stdout.indexOf('Handled by the plan'))
    // Offline without the mesh ConfigMap or --trust-domain, the assumed trust domain is info that asks for
    // something (re-plan with --trust-domain): it needs the reviewer (issue 21 point 8).
    expect(needs).toContain('trust-domain/bookinfo')
    expect(needs).not.toContain('E21/')
    expect(handled).toContain('`E21/AuthorizationPolicy/bookinfo/reviews-from-productpage`')
    expect(handled).toContain(
      'create-policies carries this to the waypoint as AuthorizationPolicy bookinfo/reviews-from-productpage-waypoint and admits the waypoint at ztunnel with AuthorizationPolicy bookinfo/reviews-from-productpage-ztunnel',
    )
    const table = await runCli(['show', PLAN, '-o', 'wide'])
    expect(table.stdout).toContain('NEEDS YOU')
    expect(table.stdout).toContain('HANDLED BY THE PLAN')
  }, 180_000)
})

describe('installs like a kubectl plugin', () => {
  it('kubectl-mesh_migrate runs the same CLI and its help says "kubectl mesh-migrate"', async () => {
    const {stdout} = await promisify(execFile)(
      process.execPath,
      [path.join(REPO_ROOT, 'bin/kubectl-mesh_migrate.js'), 'plan', '--help'],
      {env: cliEnv()},
    )
    expect(stdout).toContain('$ kubectl mesh-migrate plan [NAMESPACE...]')
    const pkg = JSON.parse(await readFile(path.join(REPO_ROOT, 'package.json'), 'utf8'))
    expect(pkg.bin).toEqual({
      'mesh-migrate': './bin/run.js',
      'kubectl-mesh_migrate': './bin/kubectl-mesh_migrate.js',
      // kubectl's plugin completion (issue 24 §5).
      'kubectl_complete-mesh_migrate': './bin/kubectl_complete-mesh_migrate.js',
    })
    const krew = await readFile(path.join(REPO_ROOT, '.krew.yaml'), 'utf8')
    expect(krew).toContain('bin: package/bin/kubectl-mesh_migrate.js')
  }, 180_000)

  it('shell completion scripts are available for bash and zsh', async () => {
    for (const shell of ['bash', 'zsh']) {
      const r = await runCli(['autocomplete', 'script', shell], {env: {XDG_CACHE_HOME: tmp, HOME: tmp}})
      expect(r.code, r.stderr).toBe(0)
      expect(r.stdout).toContain('MESH_MIGRATE_AC')
    }
  }, 180_000)

  it('a fish completion is generated from the manifest: every command and every flag', async () => {
    const fish = await readFile(path.join(REPO_ROOT, 'dist/completions/mesh-migrate.fish'), 'utf8')
    const manifest = JSON.parse(await readFile(path.join(REPO_ROOT, 'oclif.manifest.json'), 'utf8')) as {
      commands: Record<string, {hidden?: boolean; flags: Record<string, {char?: string; hidden?: boolean}>}>
    }
    const lines = fish.split('\n')
    for (const [id, cmd] of Object.entries(manifest.commands)) {
      // __complete is the completion scripts' own call (issue 24 §5), not for people.
      if (cmd.hidden) continue
      expect(lines, id).toContainEqual(
        expect.stringMatching(new RegExp(`^complete -c mesh-migrate -n __fish_use_subcommand -a ${id} -d '.+'$`)),
      )
      for (const [name, flag] of Object.entries(cmd.flags)) {
        if (flag.hidden) continue
        const line = lines.find((l) =>
          l.startsWith(`complete -c mesh-migrate -n '__fish_seen_subcommand_from ${id}' -l ${name} `),
        )
        expect(line, `${id} --${name}`).toBeDefined()
        if (flag.char) expect(line).toContain(` -s ${flag.char} `)
      }
    }
    // File names are completed for path flags only.
    expect(lines.find((l) => l.includes("from plan' -l manifests "))).toContain(' -r -F ')
    expect(lines.find((l) => l.includes("from apply' -l timeout "))).not.toContain('-F')
  })

  it('npm pack ships what a user needs and nothing else', async () => {
    const {stdout} = await promisify(execFile)('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
      cwd: REPO_ROOT,
    })
    const files = (JSON.parse(stdout) as {files: {path: string}[]}[])[0]!.files.map((f) => f.path)
    for (const needed of [
      'bin/run.js',
      'bin/kubectl-mesh_migrate.js',
      'oclif.manifest.json',
      'package.json',
      'README.md',
      'dist/cli.cjs',
      'dist/planner/plan-schema.validator.cjs',
      'dist/root-help.txt',
      'schemas/migration-plan.json',
      'docs/contract.md',
      'dist/completions/mesh-migrate.fish',
    ]) {
      expect(files, needed).toContain(needed)
    }
    const unwanted = files.filter(
      (f) =>
        !/^(bin\/(run|kubectl-mesh_migrate|kubectl_complete-mesh_migrate)\.js|dist\/.+\.(js|cjs)|dist\/root-help\.txt|dist\/completions\/mesh-migrate\.fish|schemas\/[\w-]+\.json|oclif\.manifest\.json|package\.json|README\.md|docs\/contract\.md)$/.test(
          f,
        ),
    )
    expect(unwanted).toEqual([])
  }, 180_000)
})
