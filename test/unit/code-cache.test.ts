// The loader of the CLI bundle (src/runtime/code-cache.ts): the bundle runs with V8's code cache when there is
// one, a cache is saved whole when there was none or V8 refused it, and nothing about a cache can break a run.
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {pathToFileURL} from 'node:url'

import {afterEach, beforeEach, describe, expect, it} from 'vitest'

import {codeCacheDir, digestLine, loadBundle, type LoadOptions} from '../../src/runtime/code-cache.js'

let dir: string
beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'mesh-migrate-code-cache-'))
})
afterEach(() => {
  rmSync(dir, {recursive: true, force: true})
})

/**
 * A bundle as the build writes it: CommonJS code using the loader's parameters, with work worth caching, ending
 * with its digest.
 */
function writeBundle(digest: string | null = 'd1'): string {
  const file = path.join(dir, `${digest ?? 'no-digest'}.cjs`)
  writeFileSync(
    file,
    `function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2) }
exports.fib = fib(20)
exports.file = __filename
exports.url = __bundle_url
exports.sep = require('node:path').sep
exports.importPath = () => __import('node:path').then((m) => typeof m.join)
${digest === null ? '' : digestLine(digest)}`,
  )
  return file
}

/** Loads `file` the way the CLI does, keeping the save for the test to run (instead of on exit). */
function load(file: string, options: Partial<LoadOptions> = {}) {
  let save: (() => void) | undefined
  const loaded = loadBundle({
    file,
    profile: 'plan',
    cacheDir: path.join(dir, 'cache'),
    saveOn: (fn) => (save = fn),
    ...options,
  })
  return {...loaded, save}
}

const cacheFiles = () => (existsSync(path.join(dir, 'cache')) ? readdirSync(path.join(dir, 'cache')).sort() : [])

describe('loadBundle', () => {
  it('runs the bundle with the parameters of a CommonJS module, import() included', async () => {
    const file = writeBundle()
    const {exports, cache} = load(file)
    expect(exports).toMatchObject({fib: 6765, file, url: pathToFileURL(file).href, sep: path.sep})
    expect(await (exports.importPath as () => Promise<string>)()).toBe('function')
    expect(cache).toBe('missing')
  })

  it('saves the cache once, and the next run uses it', async () => {
    const file = writeBundle()
    const first = load(file)
    expect(first.save).toBeDefined()
    first.save!()
    const [name] = cacheFiles()
    expect(name).toBe(`d1-plan-${process.version}-${process.arch}.v8cache`)
    expect(statSync(path.join(dir, 'cache', name!)).mode & 0o777).toBe(0o600)
    expect(statSync(path.join(dir, 'cache')).mode & 0o777).toBe(0o700)

    const second = load(file)
    expect(second.cache).toBe('used')
    expect(second.save).toBeUndefined()
    expect(second.exports.fib).toBe(6765)
    // The loader's __import works in code compiled from the cache (Node 20 loses import()'s callback there;
    // test/cli/bundle.test.ts runs the CLI's own import() of client-node from a cache, in a new process).
    expect(await (second.exports.importPath as () => Promise<string>)()).toBe('function')
  })

  it('a cache V8 refuses is replaced, and the run goes on without it', () => {
    const file = writeBundle()
    mkdirSync(path.join(dir, 'cache'))
    writeFileSync(path.join(dir, 'cache', `d1-plan-${process.version}-${process.arch}.v8cache`), 'not a code cache')
    const first = load(file)
    expect(first.cache).toBe('rejected')
    expect(first.exports.fib).toBe(6765)
    first.save!()
    expect(load(file).cache).toBe('used')
  })

  it('each digest and each command has its own cache', () => {
    load(writeBundle()).save!()
    expect(load(writeBundle('d2')).cache).toBe('missing')
    expect(load(writeBundle(), {profile: 'apply'}).cache).toBe('missing')
  })

  it('a bundle that does not end with its digest runs without a cache', () => {
    load(writeBundle()).save!()
    const other = load(writeBundle(null))
    expect(other.cache).toBe('off')
    expect(other.exports.fib).toBe(6765)
  })

  it('a cache directory others can write to is not used', () => {
    const file = writeBundle()
    load(file).save!()
    chmodSync(path.join(dir, 'cache'), 0o777)
    expect(load(file).cache).toBe('off')
    chmodSync(path.join(dir, 'cache'), 0o700)
    expect(load(file).cache).toBe('used')
  })

  it('without a cache directory nothing is read or written', () => {
    const {cache, save} = load(writeBundle(), {cacheDir: undefined})
    expect(cache).toBe('off')
    expect(save).toBeUndefined()
    expect(cacheFiles()).toEqual([])
  })

  it('a cache that cannot be written costs nothing but the cache', () => {
    const file = writeBundle()
    // A file where the directory should be: mkdir fails, for root too.
    writeFileSync(path.join(dir, 'not-a-directory'), '')
    const cacheDir = path.join(dir, 'not-a-directory', 'cache')
    const first = load(file, {cacheDir})
    expect(first.cache).toBe('missing')
    expect(() => first.save!()).not.toThrow()
    expect(first.exports.fib).toBe(6765)
    expect(readdirSync(dir).filter((name) => name.includes('.tmp'))).toEqual([])
  })

  it('keeps the caches of the bundle and of the two written last before it', () => {
    const hourAgo = (h: number) => (Date.now() - h * 3600_000) / 1000
    for (const [digest, hours] of [
      ['a1', 4],
      ['a2', 3],
      ['a3', 2],
    ] as const) {
      load(writeBundle(digest)).save!()
      const written = path.join(dir, 'cache', `${digest}-plan-${process.version}-${process.arch}.v8cache`)
      utimesSync(written, hourAgo(hours), hourAgo(hours))
    }
    // A temporary file a killed process left, an hour and more ago.
    writeFileSync(path.join(dir, 'cache', 'x.v8cache.1-abc.tmp'), '')
    utimesSync(path.join(dir, 'cache', 'x.v8cache.1-abc.tmp'), hourAgo(2), hourAgo(2))
    // a1 is older than a3, but in use: using a cache keeps it.
    expect(load(writeBundle('a1')).cache).toBe('used')
    load(writeBundle('b0')).save!()
    expect(cacheFiles().map((name) => name.split('-')[0])).toEqual(['a1', 'a3', 'b0'])
  })
})

describe('codeCacheDir', () => {
  const linux = process.platform !== 'darwin' && process.platform !== 'win32'
  it("is oclif's cache directory for the CLI, in a directory of its own", () => {
    expect(codeCacheDir({HOME: '/home/u', MESH_MIGRATE_CACHE_DIR: '/c'})).toBe(path.join('/c', 'v8-code-cache'))
    if (linux) {
      expect(codeCacheDir({HOME: '/home/u'})).toBe('/home/u/.cache/mesh-migrate/v8-code-cache')
      expect(codeCacheDir({HOME: '/home/u', XDG_CACHE_HOME: '/x'})).toBe('/x/mesh-migrate/v8-code-cache')
    }
  })

  it('is off with NODE_DISABLE_COMPILE_CACHE, as Node’s own compile cache is, and for a relative path', () => {
    expect(codeCacheDir({HOME: '/home/u', NODE_DISABLE_COMPILE_CACHE: '1'})).toBeUndefined()
    expect(codeCacheDir({HOME: '/home/u', MESH_MIGRATE_CACHE_DIR: 'relative'})).toBeUndefined()
  })
})
