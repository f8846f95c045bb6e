// Expected failures. A command catches these and prints the message and the suggestion on stderr
// and exits with `exitCode` — never a stack trace (docs/architecture.md, "Exit codes").
import {ExitCode} from './exit-codes.js'

/** A failure the user can act on: bad input, an unreachable cluster, a stale plan… */
export class UserError extends Error {
  readonly exitCode: ExitCode
  /** The next thing to try, one line. */
  readonly suggestion?: string

  constructor(message: string, opts: {exitCode?: ExitCode; suggestion?: string; cause?: unknown} = {}) {
    super(message, opts.cause === undefined ? undefined : {cause: opts.cause})
    this.name = new.target.name
    this.exitCode = opts.exitCode ?? ExitCode.Failure
    if (opts.suggestion !== undefined) this.suggestion = opts.suggestion
  }
}

/** Bad flags or arguments, or a confirmation that cannot be asked for (exit 2). */
export class UsageError extends UserError {
  constructor(message: string, suggestion?: string) {
    super(message, {exitCode: ExitCode.Usage, ...(suggestion === undefined ? {} : {suggestion})})
  }
}

/** The user declined at a prompt: not success (exit 1), so a script or a chain (`&&`) stops there, as terraform does. */
export class CancelledError extends UserError {
  constructor(message: string, suggestion?: string) {
    super(message, {exitCode: ExitCode.Failure, ...(suggestion === undefined ? {} : {suggestion})})
  }
}

/** Plan files under plans/ that cannot be used as they are (exit 4), when no single InvalidPlanError applies. */
export class PlanFilesInvalidError extends UserError {
  constructor(message: string, suggestion: string) {
    super(message, {exitCode: ExitCode.Invalid, suggestion})
  }
}

/**
 * A manifest source (`--manifests`) that cannot be read: a path that does not exist, a file that is
 * not valid YAML/JSON. The message starts with `<file>:<line>:<col>:` when a position is known, the
 * way compilers report errors, so editors and CI logs can link to it.
 */
export class ManifestError extends UserError {
  readonly file: string
  readonly line?: number
  readonly column?: number

  constructor(
    message: string,
    opts: {file: string; line?: number; column?: number; suggestion?: string; cause?: unknown; exitCode?: ExitCode},
  ) {
    super(message, {exitCode: opts.exitCode ?? ExitCode.Failure, suggestion: opts.suggestion, cause: opts.cause})
    this.file = opts.file
    if (opts.line !== undefined) this.line = opts.line
    if (opts.column !== undefined) this.column = opts.column
  }
}

/**
 * Input refused by the checks of untrusted input (docs/contract.md "Untrusted input"): a name that is not a
 * Kubernetes name, a file that is not a regular file or is over the size limit, a document nested or aliased
 * beyond the limits. Exit 2, as other bad input given to the command.
 */
export class UntrustedInputError extends ManifestError {
  constructor(
    message: string,
    opts: {file: string; line?: number; column?: number; suggestion?: string; cause?: unknown},
  ) {
    super(message, {...opts, exitCode: ExitCode.Usage})
  }
}

/** A plan file that fails the schema, safety or digest checks (exit 4). */
export class InvalidPlanError extends UserError {
  readonly problems: {path: string; message: string; line?: number}[]

  constructor(file: string, problems: {path: string; message: string; line?: number}[]) {
    const list = problems
      .map((p) => `  - ${p.line === undefined ? '' : `line ${p.line}: `}${p.path ? `${p.path}: ` : ''}${p.message}`)
      .join('\n')
    super(`${file} is not a valid plan (${problems.length} problem${problems.length === 1 ? '' : 's'}):\n${list}`, {
      exitCode: ExitCode.Invalid,
      // apply and rollback refuse an invalid plan, and plan refuses to overwrite one in progress without --force.
      suggestion: `Plans are written by the tool: restore the reviewed file (e.g. \`git checkout -- ${file}\`), or regenerate it with \`mesh-migrate plan NAMESPACE\` rather than editing it (with --force if steps were applied: their record is then lost) and review the new one.`,
    })
    this.problems = problems
  }
}

/** The cluster no longer matches what the plan recorded (exit 3). */
export class StalePlanError extends UserError {
  constructor(message: string, suggestion?: string) {
    super(message, {
      exitCode: ExitCode.Stale,
      suggestion:
        suggestion ?? 'Re-run `mesh-migrate plan NAMESPACE` against the current cluster and review the new plan.',
    })
  }
}

/** Another operator holds the namespace's lock (exit 5). */
export class LockHeldError extends UserError {
  constructor(message: string, suggestion?: string) {
    super(message, {
      exitCode: ExitCode.Locked,
      suggestion:
        suggestion ??
        'Wait for the other operation to finish; if its holder is dead, break the lock with `mesh-migrate unlock NAMESPACE`.',
    })
  }
}
