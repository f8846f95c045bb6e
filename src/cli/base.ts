// Shared flags, output rendering and error → exit-code mapping for every command.
// yaml statically: the build bundles it (scripts/build.mjs), and a dynamic import of a bundled CommonJS module
// gives only its default export.
import {stringify as yamlStringify} from 'yaml'
import type {Interfaces} from '@oclif/core'
import {Command} from '@oclif/core/command'
import * as Flags from '@oclif/core/flags'

import {InvalidPlanError, UserError} from '../errors.js'
import {recordInvocation} from '../invocation.js'
import {stderrPainter} from '../ui/color.js'
import {inquirerPrompter} from '../ui/interactive.js'
import type {Io} from '../ui/io.js'
import {type ErrorDocument, typed} from './contract.js'
import {durationFlag} from './flags.js'
import {ExitCode} from '../exit-codes.js'

export const EXIT_CODES_HELP = [
  '0   success / nothing to do',
  '1   runtime or API failure, step failed',
  '2   usage error',
  '3   plan is stale (the cluster changed since the plan was made or last applied)',
  '4   plan invalid, blocked, or edited after review',
  '5   lock held by another operator',
  '10  with --detailed-exitcode: changes pending',
].join('\n')

/** Flags that choose where objects come from (SPEC §2, §3). */
export const sourceFlags = {
  manifests: Flags.string({
    description:
      'Read objects from manifest files or directories (recursive; YAML, multi-document, kind: List, JSON) instead of a cluster. Repeatable.',
    multiple: true,
    // Repeat the flag for several paths, so `plan --manifests dir NAMESPACE` still finds the argument.
    multipleNonGreedy: true,
    helpGroup: 'SOURCE',
  }),
  kubeconfig: Flags.string({
    description: 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config).',
    helpGroup: 'SOURCE',
  }),
  context: Flags.string({description: 'The kubeconfig context to use.', helpGroup: 'SOURCE'}),
  'request-timeout': durationFlag({
    description: 'Timeout of a single API request, e.g. 30s, 1m (0 = none).',
    default: '0',
    helpGroup: 'SOURCE',
  }),
  'root-namespace': Flags.string({
    description: 'The Istio root (config) namespace whose mesh-wide policies apply to every namespace.',
    default: 'istio-system',
    helpGroup: 'SOURCE',
  }),
  'istio-version': Flags.string({
    description:
      'Istio version (e.g. 1.28) when it cannot be read from the cluster; changes dry-run and serviceAccounts semantics.',
    helpGroup: 'SOURCE',
  }),
}

export const outputFlag = Flags.option({
  char: 'o',
  description:
    'Output format: table (fits the terminal, long cells cut with …), wide (every column, nothing cut), json or yaml (one document with apiVersion and kind, as --json; see docs/contract.md).',
  options: ['table', 'wide', 'json', 'yaml'] as const,
  default: 'table' as const,
})()

export type OutputFormat = 'table' | 'wide' | 'json' | 'yaml' | 'markdown'

/** The -o/--output value in raw argv (before `--`), for paths that run before or without parsing (errors). */
export function outputInArgv(argv: string[]): string | undefined {
  const end = argv.includes('--') ? argv.indexOf('--') : argv.length
  let found: string | undefined
  for (let i = 0; i < end; i++) {
    const a = argv[i]!
    if (a === '-o' || a === '--output') found = argv[++i]
    else if (a.startsWith('--output=')) found = a.slice('--output='.length)
    else if (a.startsWith('-o')) found = a.slice(a.startsWith('-o=') ? 3 : 2)
  }
  return found
}

/**
 * The running process as an Io: the one place where commands, hooks and actions meet `process` (issue 23 §2).
 * Everything below takes the Io it is given; unit tests give a fake one (test/support/fake-io.ts).
 */
export function processIo(proc: NodeJS.Process = process): Io {
  return {
    stdout: proc.stdout,
    stderr: proc.stderr,
    // Node makes process.stdin on first use (~2 ms, a stream over the terminal, pipe or file): only a run that
    // reads it or asks a question pays for it.
    get stdin() {
      return proc.stdin
    },
    env: proc.env,
    prompt: inquirerPrompter(proc),
    now: () => new Date(),
    onInterrupt(handler) {
      proc.on('SIGINT', handler)
      proc.on('SIGTERM', handler)
      return () => {
        proc.off('SIGINT', handler)
        proc.off('SIGTERM', handler)
      }
    },
    setExitCode(code) {
      proc.exitCode = code
    },
    exitNow: (code) => proc.exit(code),
  }
}

export abstract class BaseCommand extends Command {
  static override enableJsonFlag = true

  /** Where this command writes, what it knows of its terminal, its prompt, Ctrl+C and exit code. */
  protected io: Io = processIo()

  /** A repeated -o takes the last value, as kubectl does (oclif refuses a repeated option flag). */
  public override async init(): Promise<void> {
    this.argv = lastOutputOnly(this.argv)
    // What a `Next:` repeats: the command as typed, with its flags (src/invocation.ts).
    recordInvocation('mesh-migrate', [...(this.id ?? '').split(':'), ...this.argv])
    await super.init()
  }

  /** `-o json` is the same switch as `--json`: one document on stdout, also for errors. */
  public override jsonEnabled(): boolean {
    return super.jsonEnabled() || (this.ctor.enableJsonFlag && outputInArgv(this.argv) === 'json')
  }

  /**
   * The --json / -o json document. oclif tokenizes the whole document to colour it, even when there is no
   * colour theme and the tokens come out unchanged (~0.1 s for a 300-service inventory, issue 11 §3):
   * without a theme, the same text straight from JSON.stringify.
   */
  public override logJson(json: unknown): void {
    if (this.config.theme?.json) return super.logJson(json)
    this.io.stdout.write(`${JSON.stringify(json, null, 2)}\n`)
  }

  /**
   * Print a result: JSON/YAML documents as they are (for --json / -o json oclif prints the returned
   * value, the same object); for people, the `human` rendering, laid out for -o table or -o wide.
   */
  protected async emit<T>(
    data: T,
    format: OutputFormat,
    human: () => string | Promise<string>,
  ): Promise<T | undefined> {
    if (this.jsonEnabled()) return data
    if (format === 'json') {
      this.io.stdout.write(`${JSON.stringify(data, null, 2)}\n`)
    } else if (format === 'yaml') {
      this.io.stdout.write(yamlStringify(data, {lineWidth: 0}))
    } else {
      // Lazily: the table stack (cli-table3, wrap-ansi, string-width) is only for people's output.
      const {setTableLayout, terminalWidth} = await import('../ui/table.js')
      setTableLayout({wide: format === 'wide', width: terminalWidth(this.io.env, this.io.stdout)})
      const text = await human()
      if (text) this.io.stdout.write(text.endsWith('\n') ? text : `${text}\n`)
    }
    return undefined
  }

  /** A result line for people (a step's outcome, a summary, "Next:"): stdout, unless stdout carries a document. */
  protected result(message: string): void {
    const format = outputInArgv(this.argv)
    if (this.jsonEnabled() || format === 'json' || format === 'yaml') this.note(message)
    else this.io.stdout.write(`${message}\n`)
  }

  /** The command line shape, for usage errors: `mesh-migrate show PLAN [flags]`. */
  protected usageLine(): string {
    // A command that takes several (strict = false: plan NS1 NS2, validate PLAN…) says so, as oclif's help does.
    const many = this.ctor.strict === false ? '...' : ''
    const args = Object.entries(this.ctor.args ?? {}).map(([name, arg]) =>
      arg.required ? `${name.toUpperCase()}${many}` : `[${name.toUpperCase()}${many}]`,
    )
    return [this.config.bin, ...(this.id ?? '').split(':'), ...args, '[flags]'].join(' ')
  }

  private printError(doc: ErrorDocument['error'], usage?: string): void {
    this.io.setExitCode(doc.exitCode)
    const p = stderrPainter(this.io)
    this.io.stderr.write(`${p.paint(['bold', 'red'], 'Error:')} ${doc.message}\n`)
    if (doc.suggestion) this.io.stderr.write(`${p.paint('bold', 'Next:')} ${doc.suggestion}\n`)
    if (usage) this.io.stderr.write(`${p.paint('bold', 'Usage:')} ${usage}\n`)
    if (this.jsonEnabled()) this.io.stdout.write(`${JSON.stringify(typed('Error', {error: doc}), null, 2)}\n`)
  }

  /** A warning for people: stderr, never stdout. */
  protected note(message: string): void {
    this.io.stderr.write(`${message}\n`)
  }

  protected override async catch(
    err: Interfaces.CommandError & {oclif?: {exit?: number}; parse?: unknown},
  ): Promise<unknown> {
    // A flag's own parse function failed (oclif rewrites its message and sets exit 2): a usage error.
    const badFlagValue = err?.oclif?.exit === 2 && /^Parsing --/.test(err.message)
    // oclif's parser says a flag has no value (or is repeated) with a plain CLIError of exit 1: a usage error too.
    const flagWithoutValue = err instanceof Error && FLAG_WITHOUT_VALUE.test(err.message)
    if (flagWithoutValue && err.oclif) err.oclif.exit = ExitCode.Usage
    // A parse error means this.parse ran and rejected the input: without this, oclif adds a two-line
    // "did not parse its arguments" Node warning to the usage error whenever NODE_ENV is development or test.
    if (err && ('parse' in err || err.oclif?.exit === 2)) this.parsed = true
    if (err instanceof UserError) {
      this.printError(
        {
          name: err.name,
          message: badFlagValue ? usageMessage(err.message) : err.message,
          exitCode: badFlagValue ? ExitCode.Usage : err.exitCode,
          ...(err.suggestion ? {suggestion: err.suggestion} : {}),
          ...(err instanceof InvalidPlanError ? {problems: err.problems} : {}),
        },
        badFlagValue ? this.usageLine() : undefined,
      )
      return undefined
    }
    if (err && (err as Error).name === 'ExitPromptError') {
      this.io.setExitCode(ExitCode.Interrupted)
      this.io.stderr.write('Interrupted.\n')
      return undefined
    }
    // Usage errors (unknown flag, bad value, missing argument): one line saying what is wrong and the
    // command's usage line, not the whole help; exit 2. oclif marks them with `parse` (parser errors)
    // or exit 2 (a flag's own parse function failed, see exitCodes in package.json).
    if (err && ('parse' in err || err.oclif?.exit === 2)) {
      this.printError(
        {
          name: 'UsageError',
          message: usageMessage(err.message),
          exitCode: ExitCode.Usage,
          suggestion:
            flagValuesHint(err.message) ?? `See '${this.config.bin} ${(this.id ?? '').split(':').join(' ')} --help'.`,
        },
        this.usageLine(),
      )
      return undefined
    }
    // oclif keeps a CLIError's exit code in err.oclif.exit; its own catch loses it under --json (ECOSYSTEM §5.1).
    if (err?.oclif?.exit !== undefined) this.io.setExitCode(err.oclif.exit)
    return super.catch(err)
  }
}

/** oclif's parser: `Flag --to expects a value`, `Flag --dry-run expects one of these values: none, server`. */
const FLAG_WITHOUT_VALUE =
  /^Flag --([\w-]+) (?:expects a value|expects one of these values: (.*)|(can only be specified once))$/

/** For a flag given without its value, the values it takes, written as they are typed: `--dry-run=server`. */
function flagValuesHint(message: string): string | undefined {
  const [, flag, values, repeated] = FLAG_WITHOUT_VALUE.exec(message) ?? []
  if (flag === undefined) return undefined
  if (repeated) return `Give --${flag} once.`
  if (values === undefined) return `Give --${flag} a value (--${flag}=VALUE), or leave the flag out.`
  return `Give --${flag} one of its values: ${values
    .split(', ')
    .map((v) => `--${flag}=${v}`)
    .join(', ')}.`
}

/** argv with every -o/--output but the last taken out (before `--`). */
export function lastOutputOnly(argv: string[]): string[] {
  const end = argv.includes('--') ? argv.indexOf('--') : argv.length
  const spans: Array<[number, number]> = []
  for (let i = 0; i < end; i++) {
    const a = argv[i]!
    if ((a === '-o' || a === '--output') && i + 1 < end) spans.push([i, 2])
    else if (a.startsWith('--output=') || (a.startsWith('-o') && a.length > 2)) spans.push([i, 1])
    if (a === '-o' || a === '--output') i++
  }
  const drop = new Set(spans.slice(0, -1).flatMap(([at, n]) => Array.from({length: n}, (_, k) => at + k)))
  return argv.filter((_, i) => !drop.has(i))
}

/** oclif's parse messages carry help hints and tabs meant for its full-help output; keep the facts. */
export function usageMessage(message: string): string {
  return message
    .split('\n')
    .filter((l) => !/^See more help with --help$/.test(l.trim()))
    .map((l) => l.trim())
    .filter((l) => l.length > 0)
    .join(' ')
    .replace(/^Flag (--[\w-]+) /, '$1 ')
    .replace(/^Parsing (--[\w-]+)\s*(.*)$/, (_, flag: string, rest: string) =>
      rest.includes(flag) ? rest : `${flag}: ${rest}`,
    )
}
