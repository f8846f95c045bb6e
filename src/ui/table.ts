// Tables for people, kubectl-style (no borders, aligned columns), built with cli-table3.
// cli-table3 colours head and borders even when piped or with NO_COLOR (ECOSYSTEM §3.6), so its
// own styling is always off and colour comes from our painter only.
import Table from 'cli-table3'

import type {Painter} from './color.js'

const NO_BORDERS = {
  top: '', 'top-mid': '', 'top-left': '', 'top-right': '',
  bottom: '', 'bottom-mid': '', 'bottom-left': '', 'bottom-right': '',
  left: '', 'left-mid': '', mid: '', 'mid-mid': '', right: '', 'right-mid': '', middle: '',
}

export function renderTable(head: string[], rows: string[][], painter: Painter): string {
  const table = new Table({
    head: head.map((h) => painter.paint('bold', h)),
    style: {head: [], border: [], 'padding-left': 0, 'padding-right': 3},
    chars: NO_BORDERS,
    wordWrap: false,
  })
  table.push(...rows)
  // Borderless cli-table3 rows are padded to the column width; trim so logs and diffs stay clean.
  return table.toString().split('\n').map((l) => l.replace(/\s+$/, '')).join('\n')
}
