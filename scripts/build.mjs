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
 * What node loads at start-up is bundled (issue 11 §3: an offline inventory within 2.5× bare node): each command
 * and hook is an entry, the code they share and what they import lazily are chunks (dist/chunks/), and `yaml` is
 * bundled in, because node spends more time resolving and reading its ~60 CommonJS files than running them. The
 * other dependencies stay external: they load lazily (client-node, listr2, prompts) or are oclif's own.
 */
async function bundle(from, to) {
  const {build} = await import('esbuild')
  const pjson = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'))
  const external = Object.keys(pjson.dependencies).filter((name) => name !== 'yaml' && name !== '@oclif/core')
  const entries = [
    path.join(from, 'main.js'),
    ...['commands', 'hooks'].flatMap((dir) =>
      readdirSync(path.join(from, dir))
        .filter((file) => file.endsWith('.js'))
        .map((file) => path.join(from, dir, file)),
    ),
  ]
  // Only our own imports of these stay external: a package bundled in (oclif) keeps the versions it resolves.
  const isExternal = (spec) => external.some((name) => spec === name || spec.startsWith(`${name}/`))
  const ownImportsExternal = {
    name: 'own-imports-external',
    setup(b) {
      b.onResolve({filter: /^[^./]/}, (args) =>
        !args.importer.includes(`${path.sep}node_modules${path.sep}`) && isExternal(args.path)
          ? {path: args.path, external: true}
          : undefined,
      )
    },
  }
  await build({
    entryPoints: entries,
    outbase: from,
    outdir: to,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20.19',
    chunkNames: 'chunks/[name]-[hash]',
    external: ['typescript', 'ts-node', 'tsx'],
    plugins: [ownImportsExternal],
    // yaml's CommonJS requires node built-ins ('process'), which ESM output can only do through a require.
    banner: {
      js: "import {createRequire as __createRequire} from 'node:module'; const require = __createRequire(import.meta.url);",
    },
    logLevel: 'warning',
  })
  // The standalone schema validators are loaded by path at run time (src/planner/planfile.ts).
  mkdirSync(path.join(to, 'planner'), {recursive: true})
  for (const file of readdirSync(path.join(from, 'planner')).filter((f) => f.endsWith('.validator.cjs')))
    copyFileSync(path.join(from, 'planner', file), path.join(to, 'planner', file))
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
