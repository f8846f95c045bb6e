// A fake Io (src/ui/io.ts) for unit tests of commands' flows: stdout and stderr are collected as text, the terminal
// is whatever the test says (a TTY of some width, or a pipe), the prompt answers from a script and records each
// question, Ctrl+C is a call (interrupt()), the exit code is recorded, and the environment is only what the test
// gives: nothing is read from the process running the tests (its COLUMNS, LANG, NO_COLOR or TTY).
import {Readable, Writable} from 'node:stream'

import type {Io, IoOutput} from '../../src/ui/io.js'

/** A stream that keeps what is written to it, with the terminal facts the test chose. */
class TextOutput extends Writable {
  text = ''
  constructor(
    readonly isTTY: boolean,
    readonly columns: number | undefined,
  ) {
    super({
      write: (chunk: Buffer | string, _encoding, done) => {
        this.text += chunk.toString()
        done()
      },
    })
  }
}

export interface FakeIoOptions {
  /** stdin, stdout and stderr are terminals (default: pipes, as in CI). */
  tty?: boolean
  /** The terminal's width (with tty). */
  columns?: number
  /** The environment the command sees (default: none at all; not the test process's). */
  env?: Record<string, string>
  /** The answers to the prompt's questions, in order (a boolean for confirm, a string for input). */
  answers?: Array<boolean | string>
  /** The clock (default 2026-12-04T12:00:00Z). */
  now?: Date
}

export class FakeIo implements Io {
  readonly stdout: IoOutput & {text: string}
  readonly stderr: IoOutput & {text: string}
  readonly stdin: Readable & {isTTY?: boolean}
  readonly env: Record<string, string>
  /** Every question asked, in order. */
  readonly questions: string[] = []
  exitCode: number | undefined
  /** Set by exitNow (a second Ctrl+C). */
  exitedNow: number | undefined
  private readonly answers: Array<boolean | string>
  private readonly handlers = new Set<() => void>()
  private readonly clock: Date

  constructor(opts: FakeIoOptions = {}) {
    const tty = opts.tty ?? false
    this.stdout = new TextOutput(tty, tty ? opts.columns : undefined)
    this.stderr = new TextOutput(tty, tty ? opts.columns : undefined)
    this.stdin = Object.assign(Readable.from([]), {isTTY: tty})
    this.env = {...opts.env}
    this.answers = [...(opts.answers ?? [])]
    this.clock = opts.now ?? new Date('2026-12-04T12:00:00.000Z')
  }

  readonly prompt = {
    confirm: async (message: string): Promise<boolean> => this.answer(message, 'boolean') as boolean,
    input: async (message: string): Promise<string> => this.answer(message, 'string') as string,
  }

  private answer(message: string, kind: 'boolean' | 'string'): boolean | string {
    this.questions.push(message)
    const next = this.answers.shift()
    if (typeof next !== kind) throw new Error(`fake io: no ${kind} answer scripted for "${message}"`)
    return next!
  }

  now(): Date {
    return this.clock
  }

  onInterrupt(handler: () => void): () => void {
    this.handlers.add(handler)
    return () => this.handlers.delete(handler)
  }

  /** Ctrl+C: what SIGINT does to the process. */
  interrupt(): void {
    for (const handler of [...this.handlers]) handler()
  }

  /** Whether something listens for Ctrl+C (a handler left installed would outlive its command). */
  get listening(): number {
    return this.handlers.size
  }

  setExitCode(code: number): void {
    this.exitCode = code
  }

  exitNow(code: number): never {
    this.exitedNow = code
    throw new Error(`fake io: exit ${code}`)
  }
}
