// Shared flags, output rendering and error → exit-code mapping for every command.
import {Command, Flags, type Interfaces} from '@oclif/core'

import {UserError} from '../errors.js'
import {stderrPainter} from '../ui/color.js'

export const EXIT_CODES_HELP = [
  '0   success / nothing to do',
  '1   runtime or API failure, step failed',
  '2   usage error',
  '3   plan is stale (the cluster changed since the plan was made or last applied)',
  '4   plan invalid or edited after review',
  '5   lock held by another operator',
  '10  with --detailed-exitcode: changes pending',
].join('\n')

/** Flags that choose where objects come from (SPEC §2, §3). */
export const sourceFlags = {
  manifests: Flags.string({
    description: 'Read objects from manifest files or directories (recursive; YAML, multi-document, kind: List, JSON) instead of a cluster. Repeatable.',
    multiple: true,
    // Repeat the flag for several paths, so `plan --manifests dir NAMESPACE` still finds the argument.
    multipleNonGreedy: true,
    helpGroup: 'SOURCE',
  }),
  kubeconfig: Flags.string({description: 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config).', helpGroup: 'SOURCE'}),
  context: Flags.string({description: 'The kubeconfig context to use.', helpGroup: 'SOURCE'}),
  'request-timeout': Flags.string({description: 'Timeout of a single API request, e.g. 30s, 1m (0 = none).', default: '0', helpGroup: 'SOURCE'}),
  'root-namespace': Flags.string({description: 'The Istio root (config) namespace whose mesh-wide policies apply to every namespace.', default: 'istio-system', helpGroup: 'SOURCE'}),
  'istio-version': Flags.string({description: 'Istio version (e.g. 1.28) when it cannot be read from the cluster; changes dry-run and serviceAccounts semantics.', helpGroup: 'SOURCE'}),
}

export const outputFlag = Flags.option({
  char: 'o',
  description: 'Output format.',
  options: ['table', 'json', 'yaml'] as const,
  default: 'table' as const,
})()

export type OutputFormat = 'table' | 'json' | 'yaml' | 'markdown'

export abstract class BaseCommand extends Command {
  static override enableJsonFlag = true

  /** Print data in the chosen machine format, or hand it back to oclif for --json. */
  protected async emit<T>(data: T, format: OutputFormat, human: () => string | Promise<string>): Promise<T | undefined> {
    if (this.jsonEnabled()) return data
    if (format === 'json') {
      process.stdout.write(`${JSON.stringify(data, null, 2)}\n`)
    } else if (format === 'yaml') {
      const {stringify} = await import('yaml')
      process.stdout.write(stringify(data, {lineWidth: 0}))
    } else {
      const text = await human()
      if (text) process.stdout.write(text.endsWith('\n') ? text : `${text}\n`)
    }
    return undefined
  }

  /** A warning for people: stderr, never stdout. */
  protected note(message: string): void {
    process.stderr.write(`${message}\n`)
  }

  protected override async catch(err: Interfaces.CommandError & {oclif?: {exit?: number}}): Promise<unknown> {
    if (err instanceof UserError) {
      process.exitCode = err.exitCode
      const p = stderrPainter()
      process.stderr.write(`${p.paint(['bold', 'red'], 'Error:')} ${err.message}\n`)
      if (err.suggestion) process.stderr.write(`${p.paint('bold', 'Next:')} ${err.suggestion}\n`)
      if (this.jsonEnabled()) this.logJson({error: {name: err.name, message: err.message, exitCode: err.exitCode, suggestion: err.suggestion}})
      return undefined
    }
    if (err && (err as Error).name === 'ExitPromptError') {
      process.exitCode = 130
      process.stderr.write('Interrupted.\n')
      return undefined
    }
    // oclif keeps a CLIError's exit code in err.oclif.exit; its own catch loses it under --json (ECOSYSTEM §5.1).
    if (err?.oclif?.exit !== undefined) process.exitCode = err.oclif.exit
    // Parse errors without a configured code (an --output value outside the options) are usage errors too.
    if (err && 'parse' in err && (err.oclif?.exit ?? 1) === 1) {
      process.exitCode = 2
      if (err.oclif) err.oclif.exit = 2
    }
    return super.catch(err)
  }
}
