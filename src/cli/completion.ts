// Shell completion that knows the cluster and the plans (issue 24 §5), in the protocol of cobra's `__complete`
// (what kubectl's plugin completion speaks): `mesh-migrate __complete WORD… PARTIAL` prints one candidate per
// line, then `:DIRECTIVE` (4 = do not complete file names). The shell scripts of `mesh-migrate completion` and
// bin/kubectl_complete-mesh_migrate only call it, so every shell completes the same things.
import {readdir} from 'node:fs/promises'
import path from 'node:path'

import type {Config} from '@oclif/core/config'

import {WORKFLOW_ORDER} from './help.js'

/** cobra's ShellCompDirectiveNoFileComp. */
export const NO_FILE_COMPLETION = 4

/** Commands whose argument is a namespace of the cluster; the others take a plan (file or namespace). */
const NAMESPACE_COMMANDS = new Set(['plan', 'inventory', 'preflight', 'unlock'])
const PLAN_COMMANDS = new Set(['apply', 'rollback', 'status', 'show', 'validate'])

/** Where completion reads what it offers: the cluster and the plans directory (tests give their own). */
export interface CompletionSources {
  /** Namespaces of the context (the kubeconfig and --context given on the line). */
  namespaces(opts: {kubeconfig?: string; context?: string}): Promise<string[]>
  contexts(opts: {kubeconfig?: string}): Promise<string[]>
  plansDir: string
}

/** The value of `--name VALUE` / `--name=VALUE` on the line, if typed. */
function flagValue(words: string[], ...names: string[]): string | undefined {
  for (let i = 0; i < words.length; i++) {
    for (const name of names) {
      if (words[i] === name) return words[i + 1]
      if (words[i]!.startsWith(`${name}=`)) return words[i]!.slice(name.length + 1)
    }
  }
  return undefined
}

/** Plan files under the plans directory: their paths and the namespaces they are named after. */
async function plans(dir: string): Promise<{files: string[]; namespaces: string[]}> {
  const names = (await readdir(dir).catch(() => [] as string[])).filter((f) => /\.ya?ml$/.test(f) && f !== 'fleet.yaml')
  return {
    files: names.map((f) => path.join(dir, f)).sort(),
    namespaces: names.map((f) => f.replace(/\.ya?ml$/, '')).sort(),
  }
}

/** The step ids of the plan named on the line (argument or -n), else of the only plan there is. */
async function stepIds(args: string[], words: string[], dir: string): Promise<string[]> {
  const named = args[0] ?? flagValue(words, '-n', '--namespace')
  const {files} = await plans(dir)
  const file = named
    ? named.endsWith('.yaml') || named.includes('/')
      ? named
      : path.join(dir, `${named}.yaml`)
    : files.length === 1
      ? files[0]
      : undefined
  if (!file) return []
  try {
    const {PlanState} = await import('../executor/plan-state.js')
    return (await PlanState.load(file)).plan.spec.steps.map((s) => s.id)
  } catch {
    return []
  }
}

/** The candidates for the last word of `words` (the command line after the program's name). */
export async function completions(words: string[], config: Config, sources: CompletionSources): Promise<string[]> {
  const partial = words.at(-1) ?? ''
  const [command, ...rest] = words
  const typed = rest.slice(0, -1)
  const prefixed = (list: string[]) => list.filter((c) => c.startsWith(partial))
  const visible = config.commands.filter((c) => !c.hidden).map((c) => c.id)
  if (words.length <= 1)
    return prefixed([...WORKFLOW_ORDER, ...visible.filter((id) => !WORKFLOW_ORDER.includes(id)).sort()])
  const cmd = config.findCommand(command!)
  if (!cmd) return []
  const cluster = {kubeconfig: flagValue(typed, '--kubeconfig'), context: flagValue(typed, '--context')}
  const clusterOpts = Object.fromEntries(Object.entries(cluster).filter(([, v]) => v !== undefined))
  const previous = typed.at(-1)
  const flagNamed = previous?.startsWith('-')
    ? Object.entries(cmd.flags).find(([name, f]) => previous === `--${name}` || (f.char && previous === `-${f.char}`))
    : undefined
  if (flagNamed && flagNamed[1].type === 'option') {
    const [name, flag] = flagNamed
    if (flag.options) return prefixed([...flag.options])
    if (name === 'context') return prefixed(await sources.contexts(clusterOpts))
    if (name === 'to' || name === 'step')
      return prefixed(await stepIds(positional(typed, cmd), typed, sources.plansDir))
    if (name === 'namespace')
      return prefixed(
        NAMESPACE_COMMANDS.has(cmd.id)
          ? await sources.namespaces(clusterOpts)
          : (await plans(sources.plansDir)).namespaces,
      )
    return []
  }
  if (partial.startsWith('-'))
    return prefixed(
      Object.entries(cmd.flags)
        .filter(([, f]) => !f.hidden)
        .map(([name]) => `--${name}`)
        .sort(),
    )
  if (NAMESPACE_COMMANDS.has(cmd.id)) return prefixed(await sources.namespaces(clusterOpts))
  if (PLAN_COMMANDS.has(cmd.id)) {
    const {files, namespaces} = await plans(sources.plansDir)
    return prefixed([...namespaces, ...files])
  }
  return []
}

/** The positional arguments typed (words that are neither flags nor the values of option flags). */
function positional(typed: string[], cmd: NonNullable<ReturnType<Config['findCommand']>>): string[] {
  const out: string[] = []
  for (let i = 0; i < typed.length; i++) {
    const word = typed[i]!
    if (!word.startsWith('-')) out.push(word)
    else if (!word.includes('=')) {
      const flag = Object.entries(cmd.flags).find(
        ([name, f]) => word === `--${name}` || (f.char && word === `-${f.char}`),
      )
      if (flag?.[1].type === 'option') i++
    }
  }
  return out
}

/** The completion script of a shell: each calls `BIN __complete` with the words typed. */
export function completionScript(shell: 'bash' | 'zsh' | 'fish', bin: string): string {
  const fn = `_${bin.replace(/[^A-Za-z0-9]/g, '_')}`
  if (shell === 'bash')
    return `# ${bin} completion for bash: source <(${bin} completion bash)
${fn}() {
  local IFS=$'\\n' cur="\${COMP_WORDS[COMP_CWORD]}"
  local out
  out=$(${bin} __complete "\${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null) || return
  COMPREPLY=($(compgen -W "$(printf '%s\\n' "$out" | grep -v '^:')" -- "$cur"))
}
complete -o default -F ${fn} ${bin}
`
  if (shell === 'zsh')
    return `#compdef ${bin}
# ${bin} completion for zsh: source <(${bin} completion zsh)
${fn}() {
  local -a out
  out=("\${(@f)$(${bin} __complete "\${(@)words[2,CURRENT]}" 2>/dev/null)}")
  compadd -- \${out:#:*}
}
compdef ${fn} ${bin}
`
  return `# ${bin} completion for fish: ${bin} completion fish | source
function __${fn}_complete
  set -l words (commandline -opc) (commandline -ct)
  ${bin} __complete $words[2..-1] 2>/dev/null | string match -v -r '^:'
end
complete -c ${bin} -f -a '(__${fn}_complete)'
`
}
