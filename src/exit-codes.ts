// The process exit codes of every command, in one place (docs/architecture.md "Exit codes" lists them for users;
// test/unit/exit-codes.test.ts keeps the two in step).
export const ExitCode = {
  /** Success, or nothing to do. */
  Ok: 0,
  /** A runtime or API failure; a step failed. */
  Failure: 1,
  /** Bad flags or arguments, or a confirmation that cannot be asked for. */
  Usage: 2,
  /** The plan is stale: the cluster changed since the plan was made or last applied. */
  Stale: 3,
  /** The plan is invalid, edited after review, or blocked. */
  Invalid: 4,
  /** Another operator holds the namespace's lock. */
  Locked: 5,
  /** `--detailed-exitcode` only: the plan has changes pending. */
  ChangesPending: 10,
  /** Interrupted by the user (Ctrl+C), as shells report SIGINT (128 + 2). */
  Interrupted: 130,
} as const

export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode]
