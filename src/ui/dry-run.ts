/** Marks every line of a server dry run's output, so no line of it reads as a change that happened. */
export const DRY_RUN_MARK = '[server dry run]'

export function dryRunLines(text: string): string {
  return text.replace(/^(?=.*\S)/gm, `${DRY_RUN_MARK} `)
}
