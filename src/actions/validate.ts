// `validate PLAN…` as an action (issue 23 §2): each plan file (or namespace) checked offline — schema, digest, safety,
// blockers — and with a cluster (an injected ClusterConnection) against its namespace's owner; every problem on the
// io's stderr, one a line, and exit 4 on the io when any file is invalid or blocked. The validate command parses
// flags, runs it and renders the verdicts.
import {type FileValidation, typed, type ValidationReport} from '../cli/contract.js'
import type {ClusterConnection} from '../cli/plan-session.js'
import {InvalidPlanError, UserError} from '../errors.js'
import {readOwner} from '../executor/ownership.js'
import {fileNameMismatch, namespaceMismatch, readTextFile, resolvePlanArg} from '../executor/plan-store.js'
import {checkFleetText} from '../plan/fleet-file.js'
import {checkPlanText, type PlanProblem, specDigest, textMayHaveWritten} from '../plan/planfile.js'
import {stderrPainter} from '../ui/color.js'
import {type Io, writeErr} from '../ui/io.js'
import {ExitCode} from '../exit-codes.js'

export interface ValidateOptions {
  /** Plan files, or namespaces meaning plans/<namespace>.yaml. */
  names: string[]
  /** --cluster: also compare each plan with its namespace's owner there. */
  cluster?: ClusterConnection
}

export async function validatePlans(o: ValidateOptions, io: Io): Promise<ValidationReport> {
  const results: FileValidation[] = []
  for (const name of o.names) results.push(await validateFile(name, io))
  if (o.cluster) await checkOwners(results, o.cluster)
  else if (await anyInProgress(results))
    writeErr(
      io,
      'Checked offline: whether a plan in progress is the one first applied to its namespace is only known in the cluster (validate --cluster).',
    )
  const invalid = results.filter((r) => !r.valid)
  if (invalid.length > 0) {
    io.setExitCode(ExitCode.Invalid)
    reportInvalid(invalid, io)
  }
  return typed('ValidationReport', {valid: invalid.length === 0, files: results})
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
