// Progress of long-running work with listr2, always on stderr (stdout stays data). A person at a
// terminal gets the animated renderer; logs (no TTY, CI set, TERM=dumb) get plain lines.
// listr2's own SIGINT handler would exit(127) before we record the interruption (ECOSYSTEM §5.8),
// so it is switched off: the commands handle SIGINT themselves.
import cliTruncate from 'cli-truncate'

import {isCI} from './interactive.js'
import type {Io} from './io.js'

export interface ProgressTask {
  title: string
  /** Does the work; `update` shows a progress line; the returned text is appended to the title. */
  run: (update: (message: string) => void) => Promise<string | void>
  /** After `run` returned: whether the line is shown as failed (apply --fleet: a namespace reports its own failure). */
  failed?: () => boolean
}

function plainOutput(io: Io): boolean {
  return io.stderr.isTTY !== true || isCI(io.env) || io.env.TERM === 'dumb'
}

/**
 * A log gets a progress line only when it says something new (the elapsed time aside) or every 30 s;
 * a terminal gets every update, cut to its width (issue 13 §10: no 600-character line repeated).
 */
function throttled(io: Io, show: (message: string) => void): (message: string) => void {
  const plain = plainOutput(io)
  let lastKey: string | undefined
  let lastAt = 0
  return (message) => {
    const key = message.replace(/\b\d+(?:m\d{2})?s\b/g, '')
    const now = io.now().getTime()
    if (plain && key === lastKey && now - lastAt < 30_000) return
    lastKey = key
    lastAt = now
    show(plain ? message : cliTruncate(message, Math.max(20, (io.stderr.columns ?? 80) - 4)))
  }
}

/**
 * Runs the tasks one after the other (the first error stops them), or with `concurrency` that many at a time, one
 * line each (apply --fleet: its tasks report their own failures, so none stops the others here).
 */
export async function runTasks(io: Io, tasks: ProgressTask[], opts: {concurrency?: number} = {}): Promise<void> {
  const {DefaultRenderer, Listr, ListrLogger, ProcessOutput} = await import('listr2')
  // listr2 picks its in-place renderer only when process.stdout is a terminal; the progress goes to stderr, which
  // plainOutput judges (`apply --fleet -o json > result.json` on a terminal still redraws its lines in place).
  class StderrRenderer extends DefaultRenderer {
    static override nonTTY = true
  }
  const stderr = io.stderr as NodeJS.WriteStream
  const output = new ProcessOutput(stderr, stderr)
  const noColor = io.env.NO_COLOR !== undefined && io.env.NO_COLOR !== ''
  const plain = plainOutput(io)
  const listr = new Listr(
    tasks.map((t) => ({
      title: t.title,
      task: async (_ctx: unknown, task: {output: string; title: string}) => {
        const summary = await t.run(
          throttled(io, (message) => {
            task.output = message
          }),
        )
        // A failure reported as a result still gets the failed mark (✖), not the done one; a log's line carries the
        // summary once, as listr2's [FAILED: …].
        const failed = t.failed?.() === true
        if (summary && !(failed && plain)) task.title = `${t.title} — ${summary}`
        if (failed) throw new Error(summary || 'failed')
      },
    })),
    {
      concurrent: opts.concurrency ?? false,
      exitOnError: opts.concurrency === undefined,
      registerSignalListeners: false,
      renderer: StderrRenderer,
      rendererOptions: {
        logger: new ListrLogger({processOutput: output}),
        showErrorMessage: false,
        collapseErrors: true,
      },
      fallbackRenderer: 'simple',
      fallbackRendererOptions: {logger: new ListrLogger({processOutput: output, useIcons: !noColor})},
      fallbackRendererCondition: () => plain,
      forceColor: false,
    } as never,
  )
  await listr.run()
}
