// The built CLI is one bundle, run through V8's code cache (scripts/build.mjs, src/runtime/code-cache.ts): the
// cache of a command is written by its first run, used by the next, and changes nothing the command prints.
import {existsSync, mkdtempSync, readdirSync, readFileSync, statSync} from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import {describe, expect, it} from 'vitest'

import {runCli} from '../support/cli.js'
import {REPO_ROOT} from '../support/shared.js'

const BUNDLE = path.join(REPO_ROOT, 'dist/mesh-migrate.cjs')
const INVENTORY = ['inventory', 'bookinfo', '--manifests', 'examples/bookinfo', '-o', 'json']

describe('the bundle', () => {
  it('is ASCII (the loader reads it as latin1) and leaves import() to the loader', () => {
    const code = readFileSync(BUNDLE)
    expect(code.findIndex((byte) => byte > 0x7f)).toBe(-1)
    // Node 20 loses import()'s callback in code compiled from a cache: every import() goes through __import.
    expect(code.toString('latin1').match(/(?<![\w$.'"`])import\(/g)).toBeNull()
    expect(code.toString('latin1')).toContain('__import("@kubernetes/client-node")')
  })

  it("writes a command's code cache on its first run and uses it on the next, with the same output", async () => {
    const cacheDir = mkdtempSync(path.join(os.tmpdir(), 'mesh-migrate-cache-'))
    const env = {MESH_MIGRATE_CACHE_DIR: cacheDir}
    const first = await runCli(INVENTORY, {env})
    expect(first.code, first.stderr).toBe(0)
    const [cache, ...others] = readdirSync(path.join(cacheDir, 'v8-code-cache'))
    expect(others).toEqual([])
    expect(cache).toMatch(new RegExp(`^[0-9a-f]{16}-inventory-${process.version}-${process.arch}\\.v8cache$`))
    const written = statSync(path.join(cacheDir, 'v8-code-cache', cache!))

    const second = await runCli(INVENTORY, {env})
    expect(second.code, second.stderr).toBe(0)
    expect(second.stdout).toBe(first.stdout)
    expect(second.stderr).toBe(first.stderr)
    // A cache V8 refused would have been written again (a new file renamed over it).
    const after = statSync(path.join(cacheDir, 'v8-code-cache', cache!))
    expect([after.ino, after.mtimeMs]).toEqual([written.ino, written.mtimeMs])

    const uncached = await runCli(INVENTORY, {env: {NODE_DISABLE_COMPILE_CACHE: '1'}})
    expect(uncached.stdout).toBe(first.stdout)
  })

  it('writes nothing with NODE_DISABLE_COMPILE_CACHE', async () => {
    const cacheDir = mkdtempSync(path.join(os.tmpdir(), 'mesh-migrate-cache-'))
    const result = await runCli(INVENTORY, {env: {MESH_MIGRATE_CACHE_DIR: cacheDir, NODE_DISABLE_COMPILE_CACHE: '1'}})
    expect(result.code, result.stderr).toBe(0)
    expect(existsSync(path.join(cacheDir, 'v8-code-cache'))).toBe(false)
  })
})
