// Fish completion for mesh-migrate (and `kubectl mesh-migrate` is left to kubectl), generated from the oclif
// manifest at build time: @oclif/plugin-autocomplete covers bash, zsh and PowerShell but not fish.
// Install: cp dist/completions/mesh-migrate.fish ~/.config/fish/completions/
import {mkdirSync, readFileSync, writeFileSync} from 'node:fs'
import path from 'node:path'

const [manifestFile, outFile] = process.argv.slice(2)
const manifest = JSON.parse(readFileSync(manifestFile, 'utf8'))
const quote = (text) =>
  `'${String(text ?? '')
    .split('\n')[0]
    .replaceAll('\\', '\\\\')
    .replaceAll("'", "\\'")}'`

// Flags that take a path: complete file names for them (every other value is free text or a fixed choice).
const PATH_FLAGS = new Set(['kubeconfig', 'manifests', 'out', 'file', 'dir', 'plans-dir'])

const lines = [
  '# fish completion for mesh-migrate, generated from oclif.manifest.json by scripts/fish-completion.mjs',
  'complete -c mesh-migrate -f',
]
const ids = Object.keys(manifest.commands)
  .filter((id) => !manifest.commands[id].hidden)
  .sort()
for (const id of ids) {
  const cmd = manifest.commands[id]
  lines.push(`complete -c mesh-migrate -n __fish_use_subcommand -a ${id} -d ${quote(cmd.summary ?? cmd.description)}`)
  for (const [name, flag] of Object.entries(cmd.flags ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    if (flag.hidden) continue
    const parts = [`complete -c mesh-migrate -n '__fish_seen_subcommand_from ${id}' -l ${name}`]
    if (flag.char) parts.push(`-s ${flag.char}`)
    if (flag.type === 'option')
      parts.push(flag.options ? `-x -a ${quote(flag.options.join(' '))}` : PATH_FLAGS.has(name) ? '-r -F' : '-r')
    parts.push(`-d ${quote(flag.summary ?? flag.description)}`)
    lines.push(parts.join(' '))
  }
}
mkdirSync(path.dirname(outFile), {recursive: true})
writeFileSync(outFile, `${lines.join('\n')}\n`)
