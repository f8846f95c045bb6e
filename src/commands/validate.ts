import type {Interfaces} from '@oclif/core'
import * as Args from '@oclif/core/args'
import * as Flags from '@oclif/core/flags'

import {validatePlans, type ValidateOptions} from '../actions/validate.js'
import {UsageError} from '../errors.js'
import {ClusterConnection} from '../cli/plan-session.js'
import {stdoutPainter} from '../ui/color.js'
import {BaseCommand, EXIT_CODES_HELP, outputFlag} from '../cli/base.js'
import type {FileValidation, ValidationReport} from '../cli/contract.js'
import {checkNamespaceName, clusterFlags, namespaceFlag, requirePlanOrContext} from '../cli/flags.js'

function verdict(r: FileValidation): string {
  const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`
  if (r.problems.length > 0)
    return `invalid (${plural(r.problems.length, 'problem')}${r.blockers.length > 0 ? `, ${plural(r.blockers.length, 'blocker')}` : ''})`
  return `blocked (${plural(r.blockers.length, 'blocker')}: ${r.blockers.join(', ')})`
}

export default class ValidateCommand extends BaseCommand {
  static override summary =
    'Check plan files without touching a cluster: schema, digest and safety (the pull-request gate).'
  static override description = `A plan from a pull request is input, not code. validate rejects unknown fields and actions, writes outside the plan's namespace, cluster-scoped objects, kinds a step may not write, waypoints that are not class istio-waypoint, Secrets, and a spec edited after the first apply. A plan with blockers cannot be applied, so it does not pass either. Every problem and blocker of every file is listed; the exit code is 4 when any file is invalid or blocked.

Offline, validate cannot know whether a plan in progress is the plan first applied to its namespace: a spec edited after the first apply with status.specDigest recomputed is consistent with itself. --cluster also compares each plan's spec digest with its namespace's owner (the plan first applied there) in the current context, and reports a plan that is not it.

EXIT CODES
${EXIT_CODES_HELP}`

  static override examples = ['<%= config.bin %> validate plans/*.yaml', '<%= config.bin %> validate bookinfo -o json']

  static override strict = false
  static override args = {
    plans: Args.string({
      description: 'Plan files to check; a namespace name means plans/<namespace>.yaml, as for show and apply.',
    }),
  }
  static override flags = {
    namespace: namespaceFlag,
    output: outputFlag,
    cluster: Flags.boolean({
      description:
        "Also check each plan against its namespace's owner in the current context (the plan first applied there): an edited plan with a recomputed digest is only seen there.",
    }),
    ...clusterFlags,
  }

  async run(): Promise<ValidationReport | undefined> {
    const o = this.validate(await this.complete())
    const report = await validatePlans(o, this.io)
    return this.emit(report, o.output, () => {
      const painter = stdoutPainter(this.io)
      return report.files
        .map((r) => `${r.file}: ${r.valid ? painter.paint('green', 'valid') : painter.paint('red', verdict(r))}`)
        .join('\n')
    })
  }

  /** Flags → options: the plan files and namespaces named (arguments, then -n). */
  private async complete(): Promise<ValidateCommandOptions> {
    const {argv, flags} = await this.parse(ValidateCommand)
    const named = [...(argv as string[]), ...(flags.namespace ? [checkNamespaceName(flags.namespace, '-n')] : [])]
    return {
      names:
        named.length > 0
          ? named
          : [await requirePlanOrContext(undefined, undefined, flags, 'no plan to validate', this.io.stderr)],
      output: flags.output,
      ...(flags.cluster ? {cluster: ClusterConnection.fromFlags(flags, this.io)} : {}),
    }
  }

  /** At least one plan to check. */
  private validate(o: ValidateCommandOptions): ValidateCommandOptions {
    if (o.names.length === 0)
      throw new UsageError('no plan to validate', 'Name plan files or namespaces: mesh-migrate validate plans/*.yaml')
    return o
  }
}

interface ValidateCommandOptions extends ValidateOptions {
  output: Interfaces.InferredFlags<typeof ValidateCommand.flags>['output']
}
