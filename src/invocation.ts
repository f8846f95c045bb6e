// The command line the user typed, so that a `Next:` can repeat it with the flags they gave (issue 19 §7): a
// suggestion without `--all --yes` exits 2 in CI, where the original command would have worked.
// Set once per run by the command base (src/cli/base.ts); library callers and unit tests that never set it
// get the fallback each message names.

let typed: {bin: string; words: readonly string[]} | undefined

/** The command words and flags of this run, e.g. `['apply', 'bookinfo', '--all', '--yes']`. */
export function recordInvocation(bin: string, words: readonly string[]): void {
  typed = {bin, words: [...words]}
}

/** Forget the recorded command line (for tests). */
export function clearInvocation(): void {
  typed = undefined
}

/** One word as a POSIX shell reads it: quoted only when it holds something the shell would interpret. */
export function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`
}

/**
 * The command the user ran, with `add` flags appended (unless already given) and `drop` flags removed (a
 * boolean flag, or `--flag value` / `--flag=value`); `fallback` (e.g. `mesh-migrate apply plans/x.yaml`) when
 * this run is not that command (`command` is its first word, e.g. `apply`) or nothing was recorded.
 */
export function sameCommand(
  command: string,
  fallback: string,
  change: {add?: readonly string[]; drop?: readonly string[]; dropWithValue?: readonly string[]} = {},
): string {
  const words = typed && typed.words[0] === command ? withoutFlags(typed.words, change) : undefined
  const base = words ? [typed!.bin, ...words.map(shellWord)].join(' ') : fallback
  const given = words ?? fallback.split(/\s+/)
  const added = (change.add ?? []).filter((flag) => !given.includes(flag))
  return [base, ...added].join(' ')
}

function withoutFlags(
  words: readonly string[],
  change: {drop?: readonly string[]; dropWithValue?: readonly string[]},
): string[] {
  const out: string[] = []
  for (let i = 0; i < words.length; i++) {
    const word = words[i]!
    const name = word.split('=')[0]!
    if (change.drop?.includes(name)) continue
    if (change.dropWithValue?.includes(name)) {
      if (!word.includes('=')) i++
      continue
    }
    out.push(word)
  }
  return out
}
