// Drives the shell completion scripts as the shells do: bash with COMP_WORDS/COMP_CWORD and the completion
// function `complete -p` names, with `mesh-migrate` and the kubectl plugin's files on PATH from bin/ (a
// checkout with bin/ on PATH, issue 24 §5).
import {execFile} from 'node:child_process'
import path from 'node:path'
import {promisify} from 'node:util'

import {cliEnv} from './cli.js'
import {REPO_ROOT} from './shared.js'

const run = promisify(execFile)
export const BIN_DIR = path.join(REPO_ROOT, 'bin')

/** What bash offers for the line `words` (the last word is the one being completed), at `columns`. */
export async function bashCompletions(words: string[], opts: {cwd: string; env: NodeJS.ProcessEnv}): Promise<string[]> {
  const quoted = words.map((w) => `'${w.replace(/'/g, "'\\''")}'`).join(' ')
  const script = `
source <(mesh-migrate completion bash)
fn=$(complete -p mesh-migrate | sed -E 's/.* -F ([^ ]+) .*/\\1/')
COMP_WORDS=(mesh-migrate ${quoted}); COMP_CWORD=${words.length}
"$fn" || true  # compgen returns 1 when nothing matches
printf '%s\\n' "\${COMPREPLY[@]}"
`
  const {stdout} = await run('bash', ['-c', script], {
    cwd: opts.cwd,
    env: {...cliEnv({CI: undefined, ...opts.env}), PATH: `${BIN_DIR}${path.delimiter}${process.env.PATH ?? ''}`},
  })
  return stdout.split('\n').filter((l) => l !== '')
}

/** What kubectl's plugin completion reads from kubectl_complete-mesh_migrate for `kubectl mesh-migrate WORDS`. */
export async function kubectlPluginCompletions(
  words: string[],
  opts: {cwd: string; env: NodeJS.ProcessEnv},
): Promise<string[]> {
  const {stdout} = await run('kubectl_complete-mesh_migrate', words, {
    cwd: opts.cwd,
    env: {...cliEnv({CI: undefined, ...opts.env}), PATH: `${BIN_DIR}${path.delimiter}${process.env.PATH ?? ''}`},
  })
  return stdout.split('\n').filter((l) => l !== '')
}
