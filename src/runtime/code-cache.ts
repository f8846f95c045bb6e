// Loads the bundled CLI (dist/mesh-migrate.cjs, scripts/build.mjs) through V8's code cache. Node 22 keeps
// compiled code between runs (module.enableCompileCache); Node 20 does not, and compiling the 1.5 MB bundle and
// the functions a command runs costs about a third of an offline command's time (issue 11 §3). The bundle runs
// as a vm.Script, and the code V8 compiled during a command's first run is saved on exit and handed back to V8
// on the next. v8-compile-cache did this for CommonJS modules, but is unmaintained and its scripts cannot
// import() (zertosh/v8-compile-cache#30), which the lazily loaded client-node needs.
//
// Built by scripts/build.mjs as dist/runtime.cjs (CommonJS, so that Node's own loader, not this one, loads it).
import {
  closeSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeSync,
} from 'node:fs'
import {createRequire} from 'node:module'
import os from 'node:os'
import path from 'node:path'
import {pathToFileURL} from 'node:url'
import vm from 'node:vm'

/** What the bundle exports (src/main.ts). */
export type Bundle = Record<string, unknown>

export interface LoadOptions {
  /** The bundle's file. */
  file: string
  /**
   * Which cache: the code a run compiles is what its command needs, so each command keeps its own (a cache
   * written by `--version` would leave `plan` compiling lazily on every run).
   */
  profile: string
  /** Where caches are kept; undefined: no cache (NODE_DISABLE_COMPILE_CACHE). */
  cacheDir: string | undefined
  /** When to save a cache this run wrote: on exit, by default, when it holds all the code the run compiled. */
  saveOn?: (save: () => void) => void
}

export interface LoadedBundle {
  exports: Bundle
  /** `used`: V8 took the cache; `missing`/`rejected`: none, or V8 refused it, and it is saved as `saveOn` says. */
  cache: 'used' | 'missing' | 'rejected' | 'off'
}

/**
 * The parameters the bundle's code is wrapped in, as Node wraps a CommonJS module, plus two of ours:
 * `__bundle_url` stands for `import.meta.url` (scripts/build.mjs defines it) and `__import` for `import()`.
 * Node 20 drops the host's import() callback from a script compiled with a code cache
 * (ERR_VM_DYNAMIC_IMPORT_CALLBACK_MISSING), so the build rewrites the bundle's import() calls to __import,
 * which imports from here.
 */
const WRAPPER_PARAMETERS = ['exports', 'require', 'module', '__filename', '__dirname', '__bundle_url', '__import']

/**
 * The line the build ends the bundle with (scripts/build.mjs): a digest of the code before it, which names the
 * bundle's caches. V8 only checks a cache against the source's length, so another bundle must not meet them.
 */
export const digestLine = (digest: string) => `//# mesh-migrate-digest=${digest}\n`

/** The digest a bundle ends with; undefined for one that does not (then it runs without a cache). */
function digestOf(source: string): string | undefined {
  return /\/\/# mesh-migrate-digest=([0-9a-f]+)\n$/.exec(source.slice(-80))?.[1]
}

/** Runs the bundle, with its code cache when there is one, and saves the cache on exit when there was none. */
export function loadBundle(options: LoadOptions): LoadedBundle {
  // The build writes the bundle in ASCII (scripts/build.mjs), which reads faster as latin1 than as UTF-8.
  const source = readFileSync(options.file, 'latin1')
  const digest = digestOf(source)
  const cacheDir = digest === undefined ? undefined : trustedDir(options.cacheDir)
  const cacheFile =
    digest === undefined || cacheDir === undefined ? undefined : cacheFileFor(cacheDir, digest, options.profile)
  const cachedData = cacheFile === undefined ? undefined : readCache(cacheFile)
  // The wrapper has a line of its own, so that positions in stack traces are the bundle's.
  const script = new vm.Script(`(function (${WRAPPER_PARAMETERS.join(', ')}) {\n${source}\n})`, {
    filename: options.file,
    lineOffset: -1,
    ...(cachedData ? {cachedData} : {}),
  })
  const cache =
    cacheFile === undefined ? 'off' : !cachedData ? 'missing' : script.cachedDataRejected ? 'rejected' : 'used'
  if (cache === 'used') touch(cacheFile!)
  else if (cacheFile !== undefined) {
    // A run that failed or stopped early compiled little of its command: only a clean exit leaves its cache.
    const saveOn = options.saveOn ?? ((save) => process.once('exit', (code) => code === 0 && save()))
    saveOn(() => saveCache(cacheFile, script))
  }
  const module = {exports: {} as Bundle}
  const wrapper = script.runInThisContext() as (...args: unknown[]) => void
  wrapper(
    module.exports,
    createRequire(options.file),
    module,
    options.file,
    path.dirname(options.file),
    pathToFileURL(options.file).href,
    (specifier: string) => import(specifier),
  )
  return {exports: module.exports, cache}
}

/**
 * The cache directory, unless someone else could have put code in it: it must be this user's and writable by
 * no one else (it is created so). Undefined otherwise, and the run goes on without a cache.
 */
function trustedDir(dir: string | undefined): string | undefined {
  if (dir === undefined) return undefined
  try {
    const info = statSync(dir)
    const mine = process.getuid === undefined || info.uid === process.getuid()
    return info.isDirectory() && mine && (info.mode & 0o022) === 0 ? dir : undefined
  } catch {
    return dir // not there yet: saveCache creates it, 0700
  }
}

/** One cache per bundle digest, profile, Node version and architecture (V8 rejects another V8's cache anyway). */
function cacheFileFor(cacheDir: string, digest: string, profile: string): string {
  return path.join(cacheDir, `${digest}-${profile}-${process.version}-${process.arch}.v8cache`)
}

function readCache(file: string): Buffer | undefined {
  try {
    return readFileSync(file)
  } catch {
    return undefined
  }
}

/** A cache in use is kept by removeOldCaches, which goes by modification time. */
function touch(file: string): void {
  try {
    const now = new Date()
    utimesSync(file, now, now)
  } catch {
    // read-only: the cache still works
  }
}

/**
 * Written whole or not at all: a temporary file of this process's own (created exclusively, so that two
 * writers never share one), renamed over the cache. Then the directory is tidied.
 */
function saveCache(file: string, script: vm.Script): void {
  const dir = path.dirname(file)
  const temporary = `${file}.${process.pid}-${Math.random().toString(36).slice(2, 10)}.tmp`
  let fd: number | undefined
  try {
    mkdirSync(dir, {recursive: true, mode: 0o700})
    // Opened before the cache is serialised: an unwritable directory costs nothing more than this.
    fd = openSync(temporary, 'wx', 0o600)
    writeSync(fd, script.createCachedData())
    closeSync(fd)
    fd = undefined
    renameSync(temporary, file)
    removeOldCaches(dir, path.basename(file).split('-')[0]!)
  } catch {
    // A cache is an optimisation: a read-only or full disk costs the next run its speed, nothing else.
    try {
      if (fd !== undefined) closeSync(fd)
      rmSync(temporary, {force: true})
    } catch {
      // nothing was written
    }
  }
}

/**
 * Keeps the caches of this bundle and of the two bundles used last before it (two installs sharing the
 * directory must not delete each other's caches on every run); older ones, of versions no longer run, go, as do
 * temporary files a killed process left (an hour old).
 */
function removeOldCaches(dir: string, digest: string): void {
  const entries = readdirSync(dir).map((name) => ({name, used: statSync(path.join(dir, name)).mtimeMs}))
  for (const entry of entries)
    if (entry.name.endsWith('.tmp') && entry.used < Date.now() - 3600_000) rmSync(path.join(dir, entry.name))
  const caches = entries
    .filter((entry) => entry.name.endsWith('.v8cache'))
    .map((entry) => ({...entry, digest: entry.name.split('-')[0]!}))
  const others = [...new Set(caches.sort((a, b) => b.used - a.used).map((c) => c.digest))].filter((d) => d !== digest)
  const kept = new Set([digest, ...others.slice(0, 2)])
  for (const cache of caches) if (!kept.has(cache.digest)) rmSync(path.join(dir, cache.name), {force: true})
}

/**
 * oclif's cache directory for this CLI (config.cacheDir: `MESH_MIGRATE_CACHE_DIR`, else ~/Library/Caches on
 * macOS, else XDG_CACHE_HOME, %LOCALAPPDATA% on Windows, or ~/.cache), in a directory of its own. Per user,
 * never the shared temporary directory: a code cache is code this process runs. Undefined when
 * NODE_DISABLE_COMPILE_CACHE is set, as Node's own compile cache honours it, and when there is no home.
 */
export function codeCacheDir(env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (env.NODE_DISABLE_COMPILE_CACHE) return undefined
  let home: string
  try {
    home = env.HOME || os.homedir()
  } catch {
    return undefined // no HOME and no passwd entry
  }
  const base =
    env.MESH_MIGRATE_CACHE_DIR ||
    (process.platform === 'darwin'
      ? path.join(home, 'Library/Caches/mesh-migrate')
      : path.join(
          env.XDG_CACHE_HOME || (process.platform === 'win32' && env.LOCALAPPDATA) || path.join(home, '.cache'),
          'mesh-migrate',
        ))
  // A relative path would put code caches in whatever directory the command runs from.
  return path.isAbsolute(base) ? path.join(base, 'v8-code-cache') : undefined
}

let loaded: Bundle | undefined

/**
 * The CLI bundle in `distDir`, with the cache of the command this process runs (the first argument, when it
 * is one of `commandIds`; help and version runs compile little, so they use the `other` cache). The build
 * writes the ids into dist/cli.cjs, which calls this. Memoised: oclif's command target and bin/run.js share one
 * copy.
 */
export function loadCli(distDir: string, commandIds: readonly string[]): Bundle {
  const [command = '', ...rest] = process.argv.slice(2)
  const helpOrVersion = rest.some((arg) => arg === '--help' || arg === '-h' || arg === '--version')
  loaded ??= loadBundle({
    file: path.join(distDir, 'mesh-migrate.cjs'),
    profile: commandIds.includes(command) && !helpOrVersion ? command : 'other',
    cacheDir: codeCacheDir(),
  }).exports
  return loaded
}
