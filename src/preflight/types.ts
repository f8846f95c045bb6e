// The result of a preflight check (SPEC §6 step 1, DOMAIN §4.4): one typed diagnostic per finding,
// so that `preflight -o json`, `plan` and the apply engine read the same data.
import type {FindingCode} from '../planner/findings/catalogue.js'
import {PREFLIGHT_CHECKS} from '../planner/vocab.js'

export type PreflightCheckId = (typeof PREFLIGHT_CHECKS)[number]

export type PreflightSeverity = 'ok' | 'info' | 'warning' | 'error'

export interface PreflightDiagnostic {
  /** The check of PREFLIGHT_CHECKS that produced it. */
  check: string
  severity: PreflightSeverity
  /** Stable machine-readable code, e.g. "ZtunnelNotReady". */
  code: FindingCode
  message: string
  /** How to fix it (absent for `ok`). */
  fix?: string
}

export const SEVERITY_RANK: Record<PreflightSeverity, number> = {error: 0, warning: 1, info: 2, ok: 3}

export function isPreflightCheck(id: string): id is PreflightCheckId {
  return (PREFLIGHT_CHECKS as readonly string[]).includes(id)
}

/** The worst severity among diagnostics of one check (`ok` when there are none). */
export function worstSeverity(diagnostics: PreflightDiagnostic[]): PreflightSeverity {
  return diagnostics.reduce<PreflightSeverity>(
    (worst, d) => (SEVERITY_RANK[d.severity] < SEVERITY_RANK[worst] ? d.severity : worst),
    'ok',
  )
}
