// Progress of long-running work with listr2, always on stderr (stdout stays data). A person at a
// terminal gets the animated renderer; logs (no TTY, CI set, TERM=dumb) get plain lines.
// listr2's own SIGINT handler would exit(127) before we record the interruption (ECOSYSTEM §5.8),
// so it is switched off: the commands handle SIGINT themselves.
import {isCI} from './interactive.js'

export interface ProgressTask {
  title: string
  /** Does the work; `update` shows a progress line; the returned text is appended to the title. */
  run: (update: (message: string) => void) => Promise<string | void>
}

function plainOutput(): boolean {
  return process.stderr.isTTY !== true || isCI() || process.env.TERM === 'dumb'
}

export async function runTasks(tasks: ProgressTask[]): Promise<void> {
  const {Listr, ListrLogger, ProcessOutput} = await import('listr2')
  const output = new ProcessOutput(process.stderr, process.stderr)
  const noColor = process.env.NO_COLOR !== undefined && process.env.NO_COLOR !== ''
  const listr = new Listr(
    tasks.map((t) => ({
      title: t.title,
      task: async (_ctx: unknown, task: {output: string; title: string}) => {
        const summary = await t.run((message) => {
          task.output = message
        })
        if (summary) task.title = `${t.title} — ${summary}`
      },
    })),
    {
      concurrent: false,
      exitOnError: true,
      registerSignalListeners: false,
      renderer: 'default',
      rendererOptions: {logger: new ListrLogger({processOutput: output}), showErrorMessage: false, collapseErrors: true},
      fallbackRenderer: 'simple',
      fallbackRendererOptions: {logger: new ListrLogger({processOutput: output, useIcons: !noColor})},
      fallbackRendererCondition: plainOutput,
      forceColor: false,
    } as never,
  )
  await listr.run()
}
