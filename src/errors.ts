// Expected failures. A command catches these and prints the message and the suggestion on stderr
// and exits with `exitCode` — never a stack trace (docs/architecture.md, "Exit codes").

/** A failure the user can act on: bad input, an unreachable cluster, a stale plan… */
export class UserError extends Error {
  readonly exitCode: number
  /** The next thing to try, one line. */
  readonly suggestion?: string

  constructor(message: string, opts: {exitCode?: number; suggestion?: string; cause?: unknown} = {}) {
    super(message, opts.cause === undefined ? undefined : {cause: opts.cause})
    this.name = new.target.name
    this.exitCode = opts.exitCode ?? 1
    if (opts.suggestion !== undefined) this.suggestion = opts.suggestion
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
    opts: {file: string; line?: number; column?: number; suggestion?: string; cause?: unknown},
  ) {
    super(message, {exitCode: 1, suggestion: opts.suggestion, cause: opts.cause})
    this.file = opts.file
    if (opts.line !== undefined) this.line = opts.line
    if (opts.column !== undefined) this.column = opts.column
  }
}
