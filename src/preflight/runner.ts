// Running preflight checks: for the `preflight` command and `plan` (runPreflight), and for the apply
// engine's `preflight` verification (preflightRunner).
import {KubeApiError} from '../kube/errors.js'
import type {KubeClient} from '../kube/types.js'
import type {PreflightRunner} from '../executor/verify.js'
import type {Inventory, SourceSnapshot} from '../planner/model.js'
import {PREFLIGHT_CHECKS} from '../planner/vocab.js'
import {renderFinding} from '../planner/findings/finding.js'
import type {MigrationPlan} from '../planner/plan-types.js'
import {CHECKS, type CheckContext, ClusterReads, type PreflightInput} from './checks/index.js'
import {isPreflightCheck, type PreflightDiagnostic} from './types.js'

export interface PreflightOptions {
  /** The plan whose RBAC needs and blockers are checked. */
  plan?: MigrationPlan
  rootNamespace: string
  /** Check ids to run (default: all of PREFLIGHT_CHECKS, in that order). */
  checks?: string[]
  /** The live inventory when the caller has just built one from this cluster (the blockers check reuses it). */
  inventory?: Inventory
  /** Its snapshot: lists the checks need that the snapshot already holds are not read again. */
  snapshot?: SourceSnapshot
}

/**
 * Run the requested checks against the cluster. Checks run one after another (they share cached reads);
 * a check whose reads are forbidden reports a warning that it could not be verified, and an API failure
 * other than a dropped connection becomes an error diagnostic of that check, so one broken read never
 * hides the other checks' results.
 */
export async function runPreflight(
  client: KubeClient,
  namespace: string,
  opts: PreflightOptions,
): Promise<PreflightDiagnostic[]> {
  const input: PreflightInput = {
    client,
    namespace,
    rootNamespace: opts.rootNamespace,
    ...(opts.plan ? {plan: opts.plan} : {}),
    ...(opts.inventory ? {inventory: opts.inventory} : {}),
    ...(opts.snapshot ? {snapshot: opts.snapshot} : {}),
  }
  const ctx: CheckContext = {input, reads: new ClusterReads(input)}
  const requested = opts.checks ?? [...PREFLIGHT_CHECKS]
  const out: PreflightDiagnostic[] = []
  for (const check of requested) {
    if (!isPreflightCheck(check)) {
      out.push({check, ...renderFinding('UnknownCheck', {check, checks: PREFLIGHT_CHECKS}, 'error')})
      continue
    }
    try {
      for (const d of await CHECKS[check](ctx)) out.push({check, ...d})
    } catch (error) {
      if (!(error instanceof KubeApiError)) throw error
      const args = error.suggestion
        ? ({variant: 'suggested', error: error.message, suggestion: error.suggestion} as const)
        : ({variant: 'plain', error: error.message} as const)
      out.push({
        check,
        ...(error.status === 403
          ? renderFinding('CheckForbidden', args, 'warning')
          : renderFinding('CheckFailed', args, 'error')),
      })
    }
  }
  return out
}

const listed = (ds: PreflightDiagnostic[]) =>
  ds.map((d) => `\n  - ${d.check}: ${d.message}${d.fix ? ` Fix: ${d.fix}` : ''}`).join('')

/** For the apply engine: the errors, else the warnings (one line each, with its fix), else "ok". */
export function summarizePreflight(diagnostics: PreflightDiagnostic[]): {ok: boolean; detail: string} {
  const errors = diagnostics.filter((d) => d.severity === 'error')
  const warnings = diagnostics.filter((d) => d.severity === 'warning')
  const checks = new Set(diagnostics.map((d) => d.check)).size
  if (errors.length > 0) {
    return {ok: false, detail: `${errors.length} preflight error(s):${listed(errors)}`}
  }
  return {
    ok: true,
    detail: `${checks} check(s) passed${warnings.length > 0 ? ` with ${warnings.length} warning(s):${listed(warnings)}` : ''}`,
  }
}

/** The apply engine's runner for a plan's `preflight` verification; `ok: false` when any check reports an error. */
export function preflightRunner(client: KubeClient, plan: MigrationPlan): PreflightRunner {
  return async (checks) =>
    summarizePreflight(
      await runPreflight(client, plan.metadata.namespace, {
        plan,
        rootNamespace: plan.spec.options.rootNamespace,
        checks,
      }),
    )
}
