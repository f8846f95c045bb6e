import type {Interfaces} from '@oclif/core'
import * as Args from '@oclif/core/args'
import * as Flags from '@oclif/core/flags'

import type {Io} from '../ui/io.js'
import {InvalidPlanError, UsageError, UserError} from '../errors.js'
import {fileNameMismatch, namespaceMismatch, readTextFile, resolvePlanArg} from '../executor/plan-store.js'
import {checkFleetText} from '../plan/fleet-file.js'
import {checkPlanText, type PlanProblem, specDigest, textMayHaveWritten} from '../plan/planfile.js'
import {readOwner} from '../executor/ownership.js'
import {ClusterConnection} from '../cli/plan-session.js'
import {stderrPainter, stdoutPainter} from '../ui/color.js'
import {BaseCommand, EXIT_CODES_HELP, outputFlag} from '../cli/base.js'
import {type FileValidation, typed, type ValidationReport} from '../cli/contract.js'
import {checkNamespaceName, clusterFlags, namespaceFlag, requirePlanOrContext} from '../cli/flags.js'
import {ExitCode} from '../exit-codes.js'

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
    const results: FileValidation[] = []
    for (const name of o.names) results.push(await validateFile(name, this.io))
    if (o.cluster) await checkOwners(results, o.cluster)
    else if (await anyInProgress(results))
      this.note(
        'Checked offline: whether a plan in progress is the one first applied to its namespace is only known in the cluster (validate --cluster).',
      )
    const invalid = results.filter((r) => !r.valid)
    if (invalid.length > 0) {
      this.io.setExitCode(ExitCode.Invalid)
      reportInvalid(invalid, this.io)
    }
    return this.emit(typed('ValidationReport', {valid: invalid.length === 0, files: results}), o.output, () => {
      const painter = stdoutPainter(this.io)
      return results
        .map((r) => `${r.file}: ${r.valid ? painter.paint('green', 'valid') : painter.paint('red', verdict(r))}`)
        .join('\n')
    })
  }

  /** Flags → options: the plan files and namespaces named (arguments, then -n). */
  private async complete(): Promise<ValidateOptions> {
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
  private validate(o: ValidateOptions): ValidateOptions {
    if (o.names.length === 0)
      throw new UsageError('no plan to validate', 'Name plan files or namespaces: mesh-migrate validate plans/*.yaml')
    return o
  }
}

interface ValidateOptions {
  names: string[]
  cluster?: ClusterConnection
  output: Interfaces.InferredFlags<typeof ValidateCommand.flags>['output']
}

/** One plan file (or namespace) checked: its problems, and its blockers (a blocked plan does not pass the gate). */
async function validateFile(name: string, io: Io): Promise<FileValidation> {
  let problems: PlanProblem[]
  let blockers: string[] = []
  let file = name
  try {
    file = await resolvePlanArg(name)
    const text = await readTextFile(file, 'plan file')
    // plans/fleet.yaml (plan -A) sits next to the plans: check it as what it is.
    if (/^kind: FleetPlan$/m.test(text)) {
      problems = checkFleetText(text).problems
    } else {
      const checked = checkPlanText(text)
      problems = checked.problems
      blockers = checked.plan?.spec.blockers.map((b) => b.id) ?? []
      const ns = checked.plan?.metadata.namespace
      const other = ns === undefined ? undefined : namespaceMismatch(name, file, ns)
      if (other) problems = [...problems, {path: 'metadata.namespace', message: other}]
      const misnamed = ns === undefined || other ? undefined : fileNameMismatch(file, ns)
      if (misnamed) io.stderr.write(`${stderrPainter(io).paint('yellow', 'warning')} ${misnamed}\n`)
    }
  } catch (error) {
    if (!(error instanceof UserError)) throw error
    problems = error instanceof InvalidPlanError ? error.problems : [{path: '', message: error.message}]
  }
  return {file, valid: problems.length === 0 && blockers.length === 0, problems, blockers}
}

/** Whether a valid plan among them records applied steps (cheap: only `status` is parsed). */
async function anyInProgress(results: FileValidation[]): Promise<boolean> {
  for (const r of results)
    if (r.valid && textMayHaveWritten(await readTextFile(r.file, 'plan file').catch(() => ''))) return true
  return false
}

/** --cluster: a valid plan whose namespace is owned by another spec (digest) is not the plan applied there. */
async function checkOwners(results: FileValidation[], cluster: ClusterConnection): Promise<void> {
  const client = await cluster.connect()
  for (const r of results) {
    if (r.problems.length > 0) continue
    const plan = checkPlanText(await readTextFile(r.file, 'plan file')).plan
    if (!plan) continue
    const owner = readOwner(await client.get({apiVersion: 'v1', kind: 'Namespace', name: plan.metadata.namespace}))
    if (!owner || owner.digest === specDigest(plan)) continue
    r.problems.push({
      path: 'spec',
      message: `namespace ${plan.metadata.namespace} is owned by another plan: ${owner.plan} (spec digest ${owner.digest.slice(0, 19)}…, first applied by ${owner.by} at ${owner.since}); this spec's digest is ${specDigest(plan).slice(0, 19)}… — edited after the first apply, or another plan`,
    })
    r.valid = false
  }
}

/** Every problem and blocker on stderr, one a line, `file:line` first so editors and CI logs link to it. */
function reportInvalid(invalid: FileValidation[], io: Io): void {
  const p = stderrPainter(io)
  for (const r of invalid) {
    for (const problem of r.problems) {
      const where = `${r.file}${problem.line === undefined ? '' : `:${problem.line}`}`
      io.stderr.write(
        `${p.paint('red', 'invalid')} ${where}: ${problem.path ? `${problem.path}: ` : ''}${problem.message}\n`,
      )
    }
    for (const id of r.blockers)
      io.stderr.write(
        `${p.paint('red', 'blocked')} ${r.file}: blocker ${id} (mesh-migrate show ${r.file} says why and what to do)\n`,
      )
  }
}
