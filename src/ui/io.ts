// The process as commands and actions see it (issue 23 §2): its streams, what it knows of its terminal, the
// environment variables that change output (NO_COLOR, COLUMNS, CI, TERM), the clock, Ctrl+C, the prompt and the exit
// code. Commands and actions take an `Io` instead of reaching for `process`, so a unit test runs a whole command
// flow over a fake one (test/support/fake-io.ts) at any width, with any answer to a prompt and a Ctrl+C when it
// chooses. The one built from `process` is made in src/cli/base.ts (processIo).

/** An output stream: what it writes to, and whether that is a terminal (and how wide). */
export type IoOutput = NodeJS.WritableStream & {isTTY?: boolean; columns?: number}

/** Questions for a person at a terminal (asked on stderr). */
export interface Prompter {
  /** A yes/no question; no is the default. */
  confirm(message: string): Promise<boolean>
  /** A line of text. */
  input(message: string): Promise<string>
}

export interface Io {
  stdout: IoOutput
  stderr: IoOutput
  stdin: NodeJS.ReadableStream & {isTTY?: boolean}
  /** The environment variables that change what is shown (NO_COLOR, FORCE_COLOR, COLUMNS, TERM, CI). */
  env: Readonly<Record<string, string | undefined>>
  prompt: Prompter
  now(): Date
  /** Calls `handler` on Ctrl+C (SIGINT) and SIGTERM until the returned function is called. */
  onInterrupt(handler: () => void): () => void
  /** The exit code the process ends with (130 interrupted, 10 changes pending…), when the command returns. */
  setExitCode(code: number): void
  /** Ends the process now (a second Ctrl+C). */
  exitNow(code: number): never
}

/** A line on stderr: progress, warnings, diagnostics. */
export function writeErr(io: Io, message: string): void {
  io.stderr.write(`${message}\n`)
}
