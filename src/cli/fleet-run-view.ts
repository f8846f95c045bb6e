// The result of `apply --fleet` / `rollback --fleet` for people: one row per namespace, then what failed and what next.
import type {FleetApplyResult} from './contract.js'
import {ExitCode} from '../exit-codes.js'
import type {Painter} from '../ui/color.js'
import {renderTable} from '../ui/table.js'

const STATE_STYLE: Record<string, 'green' | 'red' | 'yellow' | 'gray'> = {
  applied: 'green',
  'up-to-date': 'green',
  'rolled-back': 'green',
  failed: 'red',
  interrupted: 'yellow',
  stopped: 'yellow',
  'partly-applied': 'yellow',
  'not-started': 'gray',
  'no-plan': 'gray',
}

export function renderFleetRun(result: FleetApplyResult, p: Painter): string {
  const verb = result.operation === 'apply' ? 'Applied' : 'Rolled back'
  const table = renderTable(
    ['WAVE', 'NAMESPACE', 'STATE', 'STEPS RUN', 'LEFT', 'PLAN'],
    result.namespaces.map((n) => [
      String(n.wave),
      n.namespace,
      p.paint(STATE_STYLE[n.state] ?? 'bold', n.state),
      String(n.steps.length),
      String(n.remaining.length),
      n.plan,
    ]),
    p,
  )
  const waves = result.waves.length === 0 ? 'no wave' : `wave(s) ${result.waves.join(', ')}`
  const head =
    result.result === 'complete'
      ? `${verb} ${waves} of ${result.fleet}: the fleet is done.`
      : result.result === 'incomplete'
        ? `${verb} ${waves} of ${result.fleet}; later waves remain.`
        : `${result.result === 'failed' ? 'Failed' : 'Interrupted'} in wave ${stoppedWave(result)} of ${result.fleet}.`
  const failed = result.namespaces.find((n) => n.state === 'failed' && n.error)
  const lines = [table, '', p.paint('bold', result.dryRun ? dryRunHead(result, waves) : head)]
  if (failed)
    lines.push(
      `${failed.namespace} failed${failed.error!.step ? ` at step ${failed.error!.step}` : ''}: ${failed.error!.message}`,
    )
  if (result.next) lines.push(`Next: ${result.next}`)
  return lines.join('\n')
}

/** --dry-run=server: what was sent, and that nothing of it stayed. */
function dryRunHead(result: FleetApplyResult, waves: string): string {
  const outcome =
    result.result === 'complete' || result.result === 'incomplete'
      ? 'every step was accepted by the server'
      : `${result.result} in wave ${stoppedWave(result)}`
  return `Server dry run of ${waves} of ${result.fleet}: ${outcome}. Nothing was persisted or recorded; each wave was judged against the cluster as it is, not after the waves before it.`
}

/** The exit code of a fleet run: the first failure's, 130 when interrupted, 0 otherwise. */
export function fleetExitCode(result: FleetApplyResult): number {
  if (result.result === 'interrupted') return ExitCode.Interrupted
  if (result.result !== 'failed') return ExitCode.Ok
  return result.namespaces.find((n) => n.state === 'failed')?.error?.exitCode ?? ExitCode.Failure
}

/** The failure and the next command, for stderr when stdout carries the document (-o json/yaml). */
export function fleetRunNotes(result: FleetApplyResult): string[] {
  const failed = result.namespaces.find((n) => n.error)
  const out: string[] = []
  if (failed)
    out.push(
      `Error: ${failed.namespace}${failed.error!.step ? ` at step ${failed.error!.step}` : ''}: ${failed.error!.message}`,
    )
  if (result.next) out.push(`Next: ${result.next}`)
  return out
}

/** The wave the run stopped in: the failed or interrupted namespace's. */
function stoppedWave(result: FleetApplyResult): number | undefined {
  return result.namespaces.find((n) => n.state === 'failed' || n.state === 'interrupted')?.wave ?? result.waves[0]
}
