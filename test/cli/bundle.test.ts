// The built CLI is one bundle (scripts/build.mjs), loaded by plain require() after bin/run.js turns on Node's
// compile cache where Node has one (module.enableCompileCache, Node >= 22.1): what V8 compiled is kept in the
// cache directory Node chooses (NODE_COMPILE_CACHE, else os.tmpdir()/node-compile-cache), and changes nothing
// the command prints. No loader of our own: no vm.Script, no cachedData.
import {existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import module from 'node:module'
import os from 'node:os'
import path from 'node:path'

import {afterAll, describe, expect, it} from 'vitest'

import {runCli} from '../support/cli.js'
import {REPO_ROOT} from '../support/shared.js'

const BUNDLE = path.join(REPO_ROOT, 'dist/cli.cjs')
const INVENTORY = ['inventory', 'bookinfo', '--manifests', 'examples/bookinfo', '-o', 'json']
const HAS_COMPILE_CACHE = typeof (module as {enableCompileCache?: unknown}).enableCompileCache === 'function'

const temporary: string[] = []
function tempDir(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'mesh-migrate-compile-cache-'))
  temporary.push(dir)
  return dir
}
afterAll(() => {
  for (const dir of temporary) rmSync(dir, {recursive: true, force: true})
})

/** Every file under a directory (Node's compile cache keeps one directory per Node version). */
const filesUnder = (dir: string): string[] =>
  existsSync(dir)
    ? readdirSync(dir, {recursive: true, withFileTypes: true})
        .filter((e) => e.isFile())
        .map((e) => e.name)
    : []

describe('the bundle', () => {
  it('is what the entry points and oclif load, with no loader of its own', () => {
    const code = readFileSync(BUNDLE, 'utf8')
    expect(code).not.toMatch(/cachedData|createCachedData/)
    expect(existsSync(path.join(REPO_ROOT, 'dist/runtime.cjs'))).toBe(false)
    const pjson = JSON.parse(readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as {
      oclif: {commands: {target: string}; hooks: Record<string, {target: string}>}
    }
    expect(pjson.oclif.commands.target).toBe('./dist/cli.cjs')
    for (const bin of ['bin/run.js', 'bin/kubectl-mesh_migrate.js'])
      expect(readFileSync(path.join(REPO_ROOT, bin), 'utf8'), bin).toContain('module.enableCompileCache?.()')
    // Lazy dependencies stay import() calls, which Node's own loader runs.
    expect(code).toMatch(/import\("@kubernetes\/client-node"\)/)
  })

  it("fills Node's compile cache on a first run (Node >= 22.1) and prints the same on the next", async () => {
    // os.tmpdir() follows TMPDIR: Node's default cache directory is inside this test's own directory.
    const tmp = tempDir()
    const cacheDir = path.join(tmp, 'node-compile-cache')
    const first = await runCli(INVENTORY, {env: {TMPDIR: tmp}})
    expect(first.code, first.stderr).toBe(0)
    if (HAS_COMPILE_CACHE) expect(filesUnder(cacheDir).length).toBeGreaterThan(0)
    else {
      console.warn(`NOTICE: node ${process.version} has no module.enableCompileCache: the CLI runs without a cache`)
      expect(filesUnder(cacheDir)).toEqual([])
    }
    const second = await runCli(INVENTORY, {env: {TMPDIR: tmp}})
    expect(second.code, second.stderr).toBe(0)
    expect(second.stdout).toBe(first.stdout)
    expect(second.stderr).toBe(first.stderr)
  })

  it('leaves no cache with NODE_DISABLE_COMPILE_CACHE', async () => {
    const tmp = tempDir()
    const off = await runCli(INVENTORY, {env: {TMPDIR: tmp, NODE_DISABLE_COMPILE_CACHE: '1'}})
    expect(off.code, off.stderr).toBe(0)
    expect(filesUnder(path.join(tmp, 'node-compile-cache'))).toEqual([])
  })

  it('imports a lazy dependency (client-node) when a kubeconfig needs it', async () => {
    // An exec plugin makes the kubeconfig client-node's (src/kube/config.ts); nothing listens on port 1.
    const kubeconfig = path.join(tempDir(), 'kubeconfig')
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
    const live = await runCli(['inventory', 'bookinfo', '--kubeconfig', kubeconfig])
    // client-node ran the exec plugin (it fails): the lazy import worked, and the failure is the plugin's (issue 20 §8).
    expect(live.stderr).toContain("the kubeconfig's credential plugin `false` (user u, context x) failed")
    expect(live.code).toBe(1)
  })
})
