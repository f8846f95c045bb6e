// `npm run build`: compile into a fresh directory, then swap it in for dist/ (issue 13 §6). Deleting dist/
// first (the old `rm -rf dist && tsc`) broke any CLI running from it (its lazy imports vanished) for the
// whole compile; now dist/ is missing only between two renames.
import {execFileSync} from 'node:child_process'
import {existsSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync} from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const dist = path.join(root, 'dist')
const fresh = path.join(root, `dist.build-${process.pid}`)
const old = path.join(root, `dist.old-${process.pid}`)
const run = (cmd, args) => execFileSync(cmd, args, {cwd: root, stdio: 'inherit'})

rmSync(fresh, {recursive: true, force: true})
try {
  run(process.execPath, [
    path.join(root, 'node_modules/typescript/bin/tsc'),
    '-p',
    'tsconfig.build.json',
    '--outDir',
    fresh,
  ])
  run(process.execPath, [path.join(root, 'scripts/compile-plan-schema.mjs'), fresh])
} catch (error) {
  rmSync(fresh, {recursive: true, force: true})
  throw error
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
