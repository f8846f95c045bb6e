// `npm run build`: compile into a fresh directory, then swap it in for dist/ (issue 13 §6). Deleting dist/
// first (the old `rm -rf dist && tsc`) broke any CLI running from it (its lazy imports vanished) for the
// whole compile; now dist/ is missing only between two renames.
import {execFileSync} from 'node:child_process'
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import {isBuiltin} from 'node:module'
import os from 'node:os'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const dist = path.join(root, 'dist')
const fresh = path.join(root, `dist.build-${process.pid}`)
const compiled = path.join(root, `dist.tsc-${process.pid}`)
const old = path.join(root, `dist.old-${process.pid}`)
const run = (cmd, args) => execFileSync(cmd, args, {cwd: root, stdio: 'inherit'})

/**
 * What node loads is one bundle (issue 11 §3): dist/cli.cjs, src/main.ts with oclif, yaml and every command.
 * bin/run.js, the kubectl plugin and oclif (the commands' and the hook's target in package.json) load it with
 * require(), after turning on Node's compile cache (module.enableCompileCache, Node >= 22.1), which keeps what V8
 * compiled between runs. CommonJS, because the command registry require()s each command when oclif asks for it
 * (src/main.ts). Lazily imported code stays lazily evaluated inside the bundle.
 */
async function bundle(from, to) {
  const {build} = await import('esbuild')
  const result = await build({
    entryPoints: [path.join(from, 'main.js')],
    outfile: path.join(to, 'cli.cjs'),
    bundle: true,
    format: 'cjs',
    platform: 'node',
    target: 'node20.19',
    // Imported only lazily, and ES modules that a CommonJS bundle cannot require on Node 20: they load when used.
    external: [...LAZY_DEPENDENCIES, ...OCLIF_DEVELOPMENT_TOOLS],
    // A CommonJS module has no import.meta: the bundle's own URL stands for it (esbuild's documented recipe).
    define: {'import.meta.url': 'import_meta_url'},
    banner: {js: 'const import_meta_url = require("node:url").pathToFileURL(__filename).href;'},
    minifyWhitespace: true,
    // Paths esbuild writes are relative to the compiled sources: the same bundle, byte for byte, from any build.
    absWorkingDir: from,
    metafile: true,
    logLevel: 'warning',
  })
  refuseStaticExternals(result.metafile)
  // The standalone schema validators are loaded by path at run time (src/plan/planfile.ts).
  mkdirSync(path.join(to, 'planner'), {recursive: true})
  for (const file of readdirSync(path.join(from, 'planner')).filter((f) => f.endsWith('.validator.cjs')))
    copyFileSync(path.join(from, 'planner', file), path.join(to, 'planner', file))
}

/** The dependencies src/ imports only with import() (client-node alone costs ~0.7 s). */
const LAZY_DEPENDENCIES = ['@kubernetes/client-node', '@inquirer/prompts', 'listr2', 'node-fetch']

/** What oclif requires, in a try, only to run a plugin from its TypeScript sources. */
const OCLIF_DEVELOPMENT_TOOLS = ['typescript', 'ts-node', 'tsx']

/** A static import of an external package would be a require() in the bundle, which fails for an ES module. */
function refuseStaticExternals(metafile) {
  for (const output of Object.values(metafile.outputs))
    for (const imported of output.imports)
      if (
        imported.external &&
        (imported.kind === 'import-statement' || imported.kind === 'require-call') &&
        !isBuiltin(imported.path) &&
        !OCLIF_DEVELOPMENT_TOOLS.some((name) => imported.path === name || imported.path.startsWith(`${name}/`))
      )
        throw new Error(`${imported.path} is imported statically: bundle it, or import it lazily (scripts/build.mjs)`)
}

for (const dir of [fresh, compiled]) rmSync(dir, {recursive: true, force: true})
try {
  run(process.execPath, [
    path.join(root, 'node_modules/typescript/bin/tsc'),
    '-p',
    'tsconfig.build.json',
    '--outDir',
    compiled,
  ])
  run(process.execPath, [path.join(root, 'scripts/compile-plan-schema.mjs'), compiled])
  await bundle(compiled, fresh)
} catch (error) {
  rmSync(fresh, {recursive: true, force: true})
  throw error
} finally {
  rmSync(compiled, {recursive: true, force: true})
}
if (existsSync(dist)) renameSync(dist, old)
renameSync(fresh, dist)
rmSync(old, {recursive: true, force: true})
run(process.execPath, [path.join(root, 'node_modules/oclif/bin/run.js'), 'manifest'])
// Fish completion from the manifest (bash/zsh/PowerShell come from @oclif/plugin-autocomplete).
run(process.execPath, [
  path.join(root, 'scripts/fish-completion.mjs'),
  path.join(root, 'oclif.manifest.json'),
  path.join(dist, 'completions/mesh-migrate.fish'),
])

// The root help as oclif renders it for 80 columns without colour, for bin/run.js to print without loading
// oclif (issue 11 §3). Rendered with an empty home: a theme or plugins of the machine that builds must not
// end up in it. The version line depends on the machine that runs it: a placeholder.
const home = mkdtempSync(path.join(os.tmpdir(), 'mesh-migrate-build-home-'))
try {
  const env = {...process.env, HOME: home, NO_COLOR: '1', OCLIF_COLUMNS: '80'}
  for (const key of ['XDG_DATA_HOME', 'XDG_CONFIG_HOME', 'XDG_CACHE_HOME', 'FORCE_COLOR']) delete env[key]
  const help = execFileSync(process.execPath, [path.join(root, 'bin/run.js'), '--help'], {
    cwd: root,
    env,
    encoding: 'utf8',
  })
  const pjson = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'))
  const userAgent = `${pjson.name}/${pjson.version} ${process.platform}-${process.arch} node-${process.version}`
  if (!help.includes(userAgent)) throw new Error(`root help has no version line "${userAgent}"`)
  writeFileSync(path.join(dist, 'root-help.txt'), help.replace(userAgent, '{{userAgent}}'))
} finally {
  rmSync(home, {recursive: true, force: true})
}
