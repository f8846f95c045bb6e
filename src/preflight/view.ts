// The preflight table for people: CHECK, STATUS, MESSAGE, FIX (data for machines is the JSON of the diagnostics).
import type {Painter, Style} from '../ui/color.js'
import {renderTable} from '../ui/table.js'
import type {PreflightDiagnostic, PreflightSeverity} from './types.js'

const STYLE: Record<PreflightSeverity, Style> = {ok: 'green', info: 'blue', warning: 'yellow', error: 'red'}

export function renderPreflight(diagnostics: PreflightDiagnostic[], painter: Painter): string {
  const rows = diagnostics.map((d) => [d.check, painter.paint(STYLE[d.severity], d.severity), d.message, d.fix ?? ''])
  const errors = diagnostics.filter((d) => d.severity === 'error').length
  const warnings = diagnostics.filter((d) => d.severity === 'warning').length
  const summary =
    errors > 0
      ? painter.paint(['bold', 'red'], `${errors} error(s), ${warnings} warning(s): fix the errors before applying.`)
      : painter.paint(['bold', 'green'], `No errors${warnings > 0 ? `, ${warnings} warning(s)` : ''}.`)
  return `${renderTable(['CHECK', 'STATUS', 'MESSAGE', 'FIX'], rows, painter)}\n\n${summary}\n`
}
