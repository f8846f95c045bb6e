/** Marks every line of a server dry run's output, so no line of it reads as a change that happened. */
export const DRY_RUN_MARK = '[server dry run]'

export function dryRunLines(text: string): string {
  return text.replace(/^(?=.*\S)/gm, `${DRY_RUN_MARK} `)
}

/** The text as printed: every line marked during a dry run, as it is otherwise. */
export function markIfDryRun(dryRun: boolean, text: string): string {
  return dryRun ? dryRunLines(text) : text
}
