// `npm run build`: compile into a fresh directory, then swap it in for dist/ (issue 13 §6). Deleting dist/
// first (the old `rm -rf dist && tsc`) broke any CLI running from it (its lazy imports vanished) for the
// whole compile; now dist/ is missing only between two renames.
import {execFileSync} from 'node:child_process'
import {existsSync, renameSync, rmSync} from 'node:fs'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const dist = path.join(root, 'dist')
const fresh = path.join(root, `dist.build-${process.pid}`)
const old = path.join(root, `dist.old-${process.pid}`)
const run = (cmd, args) => execFileSync(cmd, args, {cwd: root, stdio: 'inherit'})

rmSync(fresh, {recursive: true, force: true})
try {
  run(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json', '--outDir', fresh])
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
run(process.execPath, [path.join(root, 'scripts/fish-completion.mjs'), path.join(root, 'oclif.manifest.json'), path.join(dist, 'completions/mesh-migrate.fish')])
