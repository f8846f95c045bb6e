// Tables for people, kubectl-style (no borders, aligned columns), built with cli-table3.
// cli-table3 colours head and borders even when piped or with NO_COLOR (ECOSYSTEM §3.6), so its
// own styling is always off and colour comes from our painter only.
//
// Columns are sized to the terminal (issue 13 §2): the widest columns give way first, cells wrap at
// word boundaries, and in the default view a cell is cut after MAX_LINES lines with an ellipsis;
// `-o wide` keeps every word. Piped output has no width limit (one line per row, for grep and awk).
// A word is never split or cut (issue 24 §1): names, ids and object references are what people copy into
// --accept-lost or kubectl, so a column is never narrower than its longest word, and a row runs past the
// edge of the terminal rather than break one, as kubectl's do; the last column's long words overflow it.
import Table from 'cli-table3'
import cliTruncate from 'cli-truncate'
import fullStringWidth from 'string-width'
import wrapAnsi from 'wrap-ansi'

import type {Painter} from './color.js'
import type {Io, IoOutput} from './io.js'

const NO_BORDERS = {
  top: '',
  'top-mid': '',
  'top-left': '',
  'top-right': '',
  bottom: '',
  'bottom-mid': '',
  'bottom-left': '',
  'bottom-right': '',
  left: '',
  'left-mid': '',
  mid: '',
  'mid-mid': '',
  right: '',
  'right-mid': '',
  middle: '',
}

const GAP = 3
/** Default view: lines a cell may wrap onto before it is cut with an ellipsis. */
const MAX_LINES = 3
/** A column never shrinks below this, its header's longest piece, or its longest word. */
const MIN_COLUMN = 6
/** The last column (free text, long words overflow it) keeps at least this much of its longest word. */
const LAST_COLUMN_WORD = 20

export interface TableLayout {
  /** Columns available; Infinity when stdout is not a terminal. */
  width: number
  /** `-o wide`: wrap but never cut, and show the extra columns. */
  wide: boolean
}

/** COLUMNS (as set by a shell or a test) wins; then the terminal's width; piped: unlimited. */
export function terminalWidth(env: Io['env'], stream: IoOutput): number {
  const fromEnv = Number(env.COLUMNS)
  if (Number.isInteger(fromEnv) && fromEnv > 0) return fromEnv
  return stream.isTTY && stream.columns ? stream.columns : Number.POSITIVE_INFINITY
}

let layout: TableLayout = {width: Number.POSITIVE_INFINITY, wide: false}

/** Set once per command from its -o flag and its io's stdout (src/cli/base.ts); views read it through tableLayout(). */
export function setTableLayout(next: Partial<TableLayout>): void {
  layout = {...layout, ...next}
}

export function tableLayout(): TableLayout {
  return layout
}

/**
 * Text whose every character takes one column: printable ASCII, and what the tool's own messages add to it —
 * Latin-1 letters and signs (not the soft hyphen, nor © and ®, emoji), dashes, quotes, bullets and the ellipsis, the four arrows,
 * ≤ and ≥ (test/unit/table-layout.test.ts checks each against string-width).
 */
export const ONE_COLUMN_TEXT =
  /^[\x20-\x7e\u00a0-\u00a8\u00aa-\u00ac\u00af-\u00ff\u2010-\u2027\u2190-\u2193\u2264\u2265]*$/

/**
 * Columns a text takes on a terminal. Most cells are plain ASCII (names, kinds, verdicts) or the tool's own
 * messages (an em dash, an arrow), whose width is their length; string-width's full Unicode path (grapheme
 * segmentation, emoji and East Asian width tables) is for the rest — on a plan of 800 services it was 29 % of the
 * run when every cell went through it (issue 23 §6).
 */
export function stringWidth(text: string): number {
  return ONE_COLUMN_TEXT.test(text) ? text.length : fullStringWidth(text)
}

const lines = (cell: string) => cell.split('\n')
/** Headers may break after a hyphen (SIDECAR-IN-AMBIENT), so their longest piece is what must fit. */
const longestHeaderPiece = (text: string) => Math.max(0, ...text.split(/\s+|(?<=-)/).map((w) => stringWidth(w)))

const longestWord = (text: string) =>
  Math.max(0, ...lines(text).flatMap((l) => l.split(/\s+/).map((w) => stringWidth(w))))

/**
 * Each column's narrowest width: never below MIN_COLUMN, a header piece, or the longest word in its cells, which
 * is never split; the last column, whose long words may run past the edge, only keeps LAST_COLUMN_WORD of it.
 */
function minimumWidths(head: string[], rows: string[][], natural: number[]): number[] {
  const last = head.length - 1
  return head.map((h, i) => {
    const floor = Math.min(natural[i]!, Math.max(MIN_COLUMN, longestHeaderPiece(h)))
    const word = Math.max(0, ...rows.map((r) => longestWord(r[i] ?? '')))
    return Math.max(floor, i === last ? Math.min(word, LAST_COLUMN_WORD) : word)
  })
}

/** Widths that fit `available`: the widest columns are narrowed first (water-filling), never below their minimum. */
export function fitColumns(natural: number[], minimum: number[], available: number): number[] {
  const total = (cap: number) => natural.reduce((sum, n, i) => sum + Math.min(n, Math.max(cap, minimum[i]!)), 0)
  if (total(Number.POSITIVE_INFINITY) <= available) return natural
  let lo = 0
  let hi = Math.max(...natural)
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2)
    if (total(mid) <= available) lo = mid
    else hi = mid - 1
  }
  const widths = natural.map((n, i) => Math.min(n, Math.max(lo, minimum[i]!)))
  // Hand the columns left over by the integer cap to the columns that were cut, left to right.
  let spare = available - widths.reduce((a, b) => a + b, 0)
  for (let i = 0; i < widths.length && spare > 0; i++) {
    const extra = Math.min(spare, natural[i]! - widths[i]!)
    widths[i]! += extra
    spare -= extra
  }
  return widths
}

// A cell painted as a whole (the painter's habit): its codes are taken off while wrapping and put back per line.
// eslint-disable-next-line no-control-regex -- ESC starts the ANSI codes this matches
const WHOLE_PAINT = /^((?:\u001B\[\d+m)+)([^\u001B]*)((?:\u001B\[\d+m)+)$/

/** Greedy word wrap of plain text at spaces; a word longer than a line is never split: it has a line of its own. */
export function wrapWords(text: string, width: number): string[] {
  const out: string[] = []
  let line = ''
  for (const word of text.split(/ +/)) {
    if (line === '') line = word
    else if (stringWidth(line) + 1 + stringWidth(word) <= width) line += ` ${word}`
    else {
      out.push(line)
      line = word
    }
  }
  return [...out, line]
}

/** A header wrapped at spaces and after its hyphens (SIDECAR-/IN-AMBIENT): what minimumWidths counts on. */
function wrapHeader(header: string, width: number): string[] {
  const out: string[] = []
  let line = ''
  for (const word of header.split(/ +/)) {
    let sep = line === '' ? '' : ' '
    for (const piece of word.split(/(?<=-)/)) {
      if (line !== '' && stringWidth(line) + sep.length + stringWidth(piece) > width) {
        out.push(line)
        line = ''
        sep = ''
      }
      line += sep + piece
      sep = ''
    }
  }
  return [...out, line]
}

/** Whole words of `text` that fit in `width` with an ellipsis after them: free text is cut between words. */
function cutAtWord(text: string, width: number): string {
  let kept = ''
  for (const word of text.split(/ +/)) {
    const next = kept === '' ? word : `${kept} ${word}`
    if (stringWidth(next) + 1 > width) break
    kept = next
  }
  return kept === '' ? '…' : `${kept}…`
}

function wrapLine(line: string, width: number): string[] {
  const painted = WHOLE_PAINT.exec(line)
  if (painted) return wrapWords(painted[2]!, width).map((l) => `${painted[1]}${l}${painted[3]}`)
  if (!line.includes('\u001B')) return wrapWords(line, width)
  return wrapAnsi(line, width, {hard: false, trim: true}).split('\n')
}

/** One cell in `width` columns: wrapped at word boundaries; in the default view cut after MAX_LINES. */
export function fitCell(cell: string, width: number, wide: boolean): string {
  const out: string[] = []
  for (const line of lines(cell)) {
    if (stringWidth(line) <= width) {
      out.push(line)
      continue
    }
    const wrapped = wrapLine(line, width)
    if (wide || wrapped.length <= MAX_LINES) {
      out.push(...wrapped)
      continue
    }
    const rest = wrapped.slice(MAX_LINES - 1).join(' ')
    out.push(
      ...wrapped.slice(0, MAX_LINES - 1),
      rest.includes('\u001B') ? cliTruncate(rest, width) : cutAtWord(rest, width),
    )
  }
  return out.join('\n')
}

/** Each column's width with nothing wrapped: its widest line, header included. */
function naturalWidths(head: string[], rows: string[][]): number[] {
  return head.map((h, i) =>
    Math.max(stringWidth(h), ...rows.map((r) => Math.max(0, ...lines(r[i] ?? '').map((l) => stringWidth(l))))),
  )
}

/** The gap between columns and their widths within `width`; what fits as it is (piped output always) stays so. */
function columnWidths(head: string[], rows: string[][], natural: number[], width: number) {
  // A table that fits as it is (piped output always does) needs no minimum widths: the common case, and the costly one.
  if (natural.reduce((a, b) => a + b, 0) + GAP * (head.length - 1) <= width) return {gap: GAP, widths: natural}
  // Columns stand 3 apart (as kubectl's); 2 when that is what it takes to fit a narrow terminal.
  const minimum = minimumWidths(head, rows, natural)
  const gap = minimum.reduce((a, b) => a + b, 0) + GAP * (head.length - 1) > width ? GAP - 1 : GAP
  const available = width - gap * (head.length - 1)
  return {gap, widths: fitColumns(natural, minimum, available)}
}

export function renderTable(
  head: string[],
  rows: string[][],
  painter: Painter,
  opts: Partial<TableLayout> = {},
): string {
  const {width, wide} = {...layout, ...opts}
  const natural = naturalWidths(head, rows)
  const {gap, widths} = columnWidths(head, rows, natural, width)
  const cells = rows.map((row) => head.map((_, i) => fitCell(row[i] ?? '', widths[i]!, wide)))
  // cli-table3 cuts what is wider than a column: the last one is as wide as its widest line (a long word in it).
  const last = head.length - 1
  const lastWidth = Math.max(
    widths[last]!,
    ...cells.map((c) => Math.max(0, ...lines(c[last]!).map((l) => stringWidth(l)))),
  )
  const headLines = head.map((h, i) =>
    wrapHeader(h, widths[i]!)
      .map((l) => painter.paint('bold', l))
      .join('\n'),
  )
  const colWidths = widths.map((w, i) => (i === last ? lastWidth : w))
  const drawn = drawRows([headLines, ...cells], colWidths, gap)
  if (drawn !== undefined) return drawn
  const table = new Table({
    head: headLines,
    style: {head: [], border: [], 'padding-left': 0, 'padding-right': gap},
    chars: NO_BORDERS,
    colWidths: colWidths.map((w) => w + gap),
    wordWrap: false,
  })
  table.push(...cells)
  // Borderless cli-table3 rows are padded to the column width; trim so logs and diffs stay clean.
  return table
    .toString()
    .split('\n')
    .map((l) => l.trimEnd())
    .join('\n')
}

/**
 * Rows as borderless cli-table3 draws them (each cell's lines padded to its column, `gap` spaces apart, trailing
 * blanks trimmed), drawn here: cli-table3 checks every cell against every cell of the rows above it for spans,
 * which grows with the square of the rows (a plan's findings table has one per object) and measures each cell
 * with the full Unicode width. undefined when a line is wider than its column, which cli-table3 cuts (with …).
 */
function drawRows(rows: string[][], widths: number[], gap: number): string | undefined {
  const out: string[] = []
  for (const row of rows) {
    const cellLines = row.map(lines)
    const height = Math.max(1, ...cellLines.map((l) => l.length))
    for (let n = 0; n < height; n++) {
      let line = ''
      for (const [i, width] of widths.entries()) {
        const text = cellLines[i]?.[n] ?? ''
        const used = stringWidth(text)
        if (used > width) return undefined
        line += text + ' '.repeat(width - used + gap)
      }
      // trimEnd, not /\s+$/: that regex is quadratic in a line's runs of padding (a wide column of a long table).
      out.push(line.trimEnd())
    }
  }
  return out.join('\n')
}

/**
 * A table of many narrow columns (a timeline: one column per step) that cannot fit the terminal even
 * with its cells wrapped: printed in blocks of columns, each block repeating the first column (the row's
 * name), as R and pandas print wide frames. Narrow enough (or piped), it is one table.
 */
export function renderColumnBlocks(
  head: string[],
  rows: string[][],
  painter: Painter,
  opts: Partial<TableLayout> = {},
): string {
  const {width} = {...layout, ...opts}
  const natural = naturalWidths(head, rows)
  if (natural.reduce((a, b) => a + b, 0) + GAP * (head.length - 1) <= width)
    return renderTable(head, rows, painter, opts)
  // The name column wraps within 40% of the width, so that each block holds several columns.
  const key = Math.min(natural[0]!, Math.max(MIN_COLUMN, Math.floor(width * 0.4)))
  const blocks: number[][] = []
  let block: number[] = []
  let used = key
  for (let i = 1; i < head.length; i++) {
    if (block.length > 0 && used + GAP + natural[i]! > width) {
      blocks.push(block)
      block = []
      used = key
    }
    block.push(i)
    used += GAP + natural[i]!
  }
  if (block.length > 0) blocks.push(block)
  const pick = (row: string[], cols: number[]) => [row[0] ?? '', ...cols.map((i) => row[i] ?? '')]
  return blocks
    .map((cols) =>
      renderTable(
        pick(head, cols),
        rows.map((r) => pick(r, cols)),
        painter,
        opts,
      ),
    )
    .join('\n\n')
}

/** Text for people (a legend, a note) wrapped at word boundaries to the terminal; piped: unchanged. */
export function fitText(text: string, opts: Partial<TableLayout> = {}): string {
  const {width} = {...layout, ...opts}
  if (!Number.isFinite(width)) return text
  return text
    .split('\n')
    .flatMap((line) => (stringWidth(line) <= width ? [line] : wrapLine(line, width)))
    .join('\n')
}

/** Items (`0=start`, `1=preflight`, …) two spaces apart, on as many lines as the terminal needs; an item is not split unless it alone is too wide. */
export function fitItems(items: string[], opts: Partial<TableLayout> = {}): string {
  const {width} = {...layout, ...opts}
  const out: string[] = []
  let line = ''
  for (const item of items) {
    if (line !== '' && stringWidth(line) + 2 + stringWidth(item) > width) {
      out.push(line)
      line = ''
    }
    line = line === '' ? item : `${line}  ${item}`
  }
  return fitText([...out, line].join('\n'), opts)
}
