// The built CLI is one bundle, run through V8's code cache (scripts/build.mjs, src/runtime/code-cache.ts): the
// cache of a command is written by its first clean run, used by the next, and changes nothing the command prints.
import {existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync} from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import * as acorn from 'acorn'
import {afterAll, describe, expect, it} from 'vitest'

import {runCli} from '../support/cli.js'
import {REPO_ROOT} from '../support/shared.js'

const BUNDLE = path.join(REPO_ROOT, 'dist/mesh-migrate.cjs')
const INVENTORY = ['inventory', 'bookinfo', '--manifests', 'examples/bookinfo', '-o', 'json']

const temporary: string[] = []
function tempDir(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'mesh-migrate-cache-'))
  temporary.push(dir)
  return dir
}
afterAll(() => {
  for (const dir of temporary) rmSync(dir, {recursive: true, force: true})
})

const cachesIn = (dir: string) =>
  existsSync(path.join(dir, 'v8-code-cache')) ? readdirSync(path.join(dir, 'v8-code-cache')).sort() : []

describe('the bundle', () => {
  it('is ASCII (the loader reads it as latin1) and leaves import() to the loader', () => {
    const code = readFileSync(BUNDLE)
    expect(code.findIndex((byte) => byte > 0x7f)).toBe(-1)
    // Node 20 loses import()'s callback in code compiled from a cache: no import() expression is left.
    const ast = acorn.parse(code.toString('latin1'), {ecmaVersion: 'latest', sourceType: 'script'})
    const imports: number[] = []
    const visit = (node: unknown): void => {
      if (!node || typeof node !== 'object') return
      if ((node as {type?: string}).type === 'ImportExpression') imports.push((node as acorn.Node).start)
      for (const value of Object.values(node)) (Array.isArray(value) ? value : [value]).forEach(visit)
    }
    visit(ast)
    expect(imports).toEqual([])
    expect(code.toString('latin1')).toContain('__import("@kubernetes/client-node")')
  })

  it("writes a command's code cache on its first run and uses it on the next, with the same output", async () => {
    const cacheDir = tempDir()
    const env = {MESH_MIGRATE_CACHE_DIR: cacheDir}
    const first = await runCli(INVENTORY, {env})
    expect(first.code, first.stderr).toBe(0)
    const [cache, ...others] = cachesIn(cacheDir)
    expect(others).toEqual([])
    expect(cache).toMatch(new RegExp(`^[0-9a-f]{16}-inventory-${process.version}-${process.arch}\\.v8cache$`))
    const written = statSync(path.join(cacheDir, 'v8-code-cache', cache!))

    const second = await runCli(INVENTORY, {env})
    expect(second.code, second.stderr).toBe(0)
    expect(second.stdout).toBe(first.stdout)
    expect(second.stderr).toBe(first.stderr)
    // A cache V8 refused would have been written again (a new file renamed over it).
    expect(statSync(path.join(cacheDir, 'v8-code-cache', cache!)).ino).toBe(written.ino)

    const uncached = await runCli(INVENTORY, {env: {NODE_DISABLE_COMPILE_CACHE: '1'}})
    expect(uncached.stdout).toBe(first.stdout)
  })

  it('imports a lazy dependency (client-node) from code compiled out of the cache', async () => {
    const cacheDir = tempDir()
    const env = {MESH_MIGRATE_CACHE_DIR: cacheDir}
    expect((await runCli(INVENTORY, {env})).code).toBe(0)
    // An exec plugin makes the kubeconfig client-node's (src/kube/config.ts); nothing listens on port 1.
    const kubeconfig = path.join(cacheDir, 'kubeconfig')
    writeFileSync(
      kubeconfig,
      `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: "false", interactiveMode: Never}}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`,
    )
    const live = await runCli(['inventory', 'bookinfo', '--kubeconfig', kubeconfig], {env})
    expect(live.stderr).not.toContain('DYNAMIC_IMPORT')
    expect(live.stderr).toContain('no answer from https://127.0.0.1:1')
    expect(live.code).toBe(1)
  })

  it('keeps no cache of a run that failed, or with NODE_DISABLE_COMPILE_CACHE', async () => {
    const cacheDir = tempDir()
    const failed = await runCli(['census', '--plans-dir', 'no-such-dir'], {env: {MESH_MIGRATE_CACHE_DIR: cacheDir}})
    expect(failed.code).toBe(2)
    expect(cachesIn(cacheDir)).toEqual([])
    const off = await runCli(INVENTORY, {env: {MESH_MIGRATE_CACHE_DIR: cacheDir, NODE_DISABLE_COMPILE_CACHE: '1'}})
    expect(off.code, off.stderr).toBe(0)
    expect(cachesIn(cacheDir)).toEqual([])
  })
})
