// Issue 24 §8 for the commands that take PLAN: apply, rollback, status, show, validate (and unlock, which takes a
// namespace) without the argument and without -n use the kubeconfig context's namespace, as plan and inventory
// do, say so on stderr, and read plans/<namespace>.yaml. A context without a namespace keeps each command's
// behaviour without PLAN, and its errors say that the context has none and what to pass. The kubeconfig's server
// is a closed loopback port: a command that went on to the cluster fails there ("no answer from"), which shows
// the plan was chosen and loaded.
import {copyFile, mkdir, mkdtemp, writeFile} from 'node:fs/promises'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'

import {beforeAll, describe, expect, it} from 'vitest'

import {hasStackTrace, runCli} from '../support/cli.js'
import {REPO_ROOT} from '../support/shared.js'

const WIDTHS = ['80', '200'] as const
const SET_IT = 'kubectl config set-context --current --namespace NAMESPACE'

/** A second namespace with a plan, so that "the one unfinished plan" and "every plan" are not bookinfo's alone. */
const WEB = `apiVersion: v1
kind: Namespace
metadata: {name: web, labels: {istio-injection: enabled}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: frontend, namespace: web}
spec:
  selector: {matchLabels: {app: frontend}}
  template:
    metadata: {labels: {app: frontend}}
    spec: {containers: [{name: app, image: nginx}]}
`

let cwd: string
/** Context admin (namespace bookinfo, current), context bare (no namespace), context shop (no plan for it). */
let kubeconfig: string
let bareKubeconfig: string

beforeAll(async () => {
  cwd = await mkdtemp(path.join(os.tmpdir(), 'mesh-migrate-context-ns-'))
  await mkdir(path.join(cwd, 'plans'))
  await copyFile(path.join(REPO_ROOT, 'plans/examples/bookinfo.yaml'), path.join(cwd, 'plans/bookinfo.yaml'))
  await writeFile(path.join(cwd, 'web.yaml'), WEB)
  const planned = await runCli(['plan', 'web', '--manifests', 'web.yaml'], {
    cwd,
    env: {KUBECONFIG: '/nonexistent/kubeconfig'},
  })
  expect(planned.code, planned.stderr).toBe(0)
  const closed = net.createServer()
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve))
  const {port} = closed.address() as net.AddressInfo
  await new Promise((resolve) => closed.close(resolve))
  const config = (current: string) =>
    [
      'apiVersion: v1',
      'kind: Config',
      `clusters: [{name: c, cluster: {server: "https://127.0.0.1:${port}", insecure-skip-tls-verify: true}}]`,
      'users: [{name: u, user: {token: t0ken}}]',
      'contexts:',
      '- {name: admin, context: {cluster: c, user: u, namespace: bookinfo}}',
      '- {name: bare, context: {cluster: c, user: u}}',
      '- {name: shop, context: {cluster: c, user: u, namespace: shop}}',
      `current-context: ${current}`,
      '',
    ].join('\n')
  kubeconfig = path.join(cwd, 'kubeconfig')
  await writeFile(kubeconfig, config('admin'))
  bareKubeconfig = path.join(cwd, 'bare-kubeconfig')
  await writeFile(bareKubeconfig, config('bare'))
}, 60_000)

describe.each(WIDTHS)('PLAN from the context’s namespace at %s columns', (columns) => {
  const run = (args: string[], config = kubeconfig) => runCli(args, {cwd, env: {KUBECONFIG: config, COLUMNS: columns}})

  it('show, validate and status --offline read plans/<namespace>.yaml and say where the namespace came from', async () => {
    const show = await run(['show', '-o', 'json'])
    expect(show.code, show.stderr).toBe(0)
    expect(show.stderr.split('\n')[0]).toBe('namespace bookinfo (from context admin)')
    expect(JSON.parse(show.stdout).metadata.namespace).toBe('bookinfo')

    const validate = await run(['validate'])
    expect(validate.code, validate.stderr).toBe(0)
    expect(validate.stderr.split('\n')[0]).toBe('namespace bookinfo (from context admin)')
    expect(validate.stdout).toBe('plans/bookinfo.yaml: valid\n')

    // Only the context's plan, not every plan under plans/ (web's is there too).
    const status = await run(['status', '--offline', '-o', 'json'])
    expect(status.code, status.stderr).toBe(0)
    expect(status.stderr.split('\n')[0]).toBe('namespace bookinfo (from context admin)')
    const namespaces = (JSON.parse(status.stdout) as {plans: {namespace: string}[]}).plans.map((p) => p.namespace)
    expect(namespaces).toEqual(['bookinfo'])
  }, 120_000)

  it('apply, rollback and unlock take it too, and go on to the cluster with that plan', async () => {
    for (const args of [
      ['apply', '--yes'],
      ['rollback', '--confirm', 'bookinfo'],
      ['unlock', '--confirm', 'bookinfo'],
    ]) {
      const r = await run(args)
      expect(r.stderr.split('\n')[0], args.join(' ')).toBe('namespace bookinfo (from context admin)')
      // Two unfinished plans are under plans/: without the context's namespace this would be a usage error.
      expect(r.stderr, args.join(' ')).not.toContain('could be meant')
      expect(r.code, r.stderr).toBe(1)
      expect(r.stderr).toContain('no answer from https://127.0.0.1:')
      expect(hasStackTrace(r.stderr)).toBe(false)
    }
  }, 120_000)

  it('the argument or -n wins, and then nothing is said about the context', async () => {
    const byArg = await run(['show', 'web', '-o', 'json'])
    expect(byArg.code, byArg.stderr).toBe(0)
    expect(JSON.parse(byArg.stdout).metadata.namespace).toBe('web')
    const byFlag = await run(['validate', '-n', 'web'])
    expect(byFlag.code, byFlag.stderr).toBe(0)
    expect(byFlag.stdout).toBe('plans/web.yaml: valid\n')
    for (const r of [byArg, byFlag]) expect(r.stderr).not.toContain('(from context')
  }, 120_000)

  it('--context picks the context whose namespace is taken; no plan for it says which file is missing', async () => {
    const r = await run(['status', '--offline', '--context', 'shop'])
    expect(r.stderr.split('\n')[0]).toBe('namespace shop (from context shop)')
    expect(r.code).toBe(1)
    expect(r.stderr).toContain('Error: no plan for namespace "shop": plans/shop.yaml does not exist')
    expect(r.stderr).toContain('Next: Create it with `mesh-migrate plan shop`')
  }, 60_000)

  it('a context without a namespace: the behaviour without PLAN, and errors that say so and what to pass', async () => {
    const bare = (args: string[]) => run(args, bareKubeconfig)
    const show = await bare(['show'])
    expect(show.code).toBe(2)
    expect(show.stderr).toContain(
      'Error: which plan? Name a plan file or a namespace (or pass --fleet): no PLAN, no -n, and context bare has no namespace',
    )
    expect(show.stderr).toContain(
      `Next: Pass PLAN (a plan file, or a namespace for plans/<namespace>.yaml) or -n NAMESPACE`,
    )
    expect(show.stderr).toContain(SET_IT)

    const validate = await bare(['validate'])
    expect(validate.code).toBe(2)
    expect(validate.stderr).toContain('Error: no plan to validate: no PLAN, no -n, and context bare has no namespace')

    const unlock = await bare(['unlock', '--confirm', 'bookinfo'])
    expect(unlock.code).toBe(2)
    expect(unlock.stderr).toContain('Error: missing the namespace: context bare has no namespace')
    expect(unlock.stderr).toContain(SET_IT)

    // apply and rollback choose among the plans under plans/ as before: two unfinished ones is a usage error.
    for (const args of [
      ['apply', '--yes'],
      ['rollback', '--confirm', 'bookinfo'],
    ]) {
      const r = await bare(args)
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(2)
      expect(r.stderr).toMatch(/^Error: (several plans under plans\/ could be meant|no applied plan under plans\/)/m)
      expect(r.stderr).toContain('No PLAN, no -n, and context bare has no namespace: pass PLAN')
      expect(r.stderr).toContain(SET_IT)
    }

    // status lists every plan, as without a context.
    const status = await bare(['status', '--offline', '-o', 'json'])
    expect(status.code, status.stderr).toBe(0)
    expect(status.stderr).not.toContain('(from context')
    const namespaces = (JSON.parse(status.stdout) as {plans: {namespace: string}[]}).plans
      .map((p) => p.namespace)
      .sort()
    expect(namespaces).toEqual(['bookinfo', 'web'])
  }, 120_000)
})
