// `show --timeline`: per step boundary, each workload's data plane and where each policy is enforced,
// then the hazards the simulation found (issue 5 §4).
import type {MigrationPlan} from '../planner/plan-types.js'
import {type BoundaryState, type Enforcement, simulate} from '../plan/simulate.js'
import type {Painter} from './color.js'
import {fitItems, fitText, renderColumnBlocks, renderTable} from './table.js'
import {DATAPLANE_MODE_LABEL} from '../planner/vocab.js'
import {remoteNamespaceWaypoint} from '../planner/namespace-waypoint.js'

const DP: Record<string, string> = {sidecar: 'sidecar', ambient: 'ambient', outside: 'OUT'}
const ENF: Record<Enforcement, string> = {
  sidecar: 'sidecar',
  ztunnel: 'ztunnel',
  waypoint: 'waypoint',
  'deny-all': 'DENY-ALL',
  degraded: 'L4-only',
  'not-enforced': 'NONE',
}

export function timelineOf(plan: MigrationPlan) {
  return simulate({
    namespace: plan.metadata.namespace,
    workloads: plan.spec.workloads,
    steps: plan.spec.steps,
    policies: plan.spec.policies,
    ambientAtStart: plan.spec.observed.namespaceLabels[DATAPLANE_MODE_LABEL] === 'ambient',
    waypointBoundAtStart:
      plan.spec.summary.waypointRequired &&
      remoteNamespaceWaypoint(plan.spec.observed.namespaceLabels, plan.metadata.namespace) !== undefined,
  })
}

function grid(title: string, boundaries: BoundaryState[], painter: Painter): string {
  const columns = boundaries.map((_, i) => String(i))
  const legend = fitItems(boundaries.map((b, i) => `${i}=${b.after}`))
  const workloads = Object.keys(boundaries[0]?.dataPlanes ?? {}).sort()
  const dpRows = workloads.map((w) => [
    w,
    ...boundaries.map((b) => {
      const v = DP[b.dataPlanes[w] ?? ''] ?? '?'
      return v === 'OUT' ? painter.paint('red', v) : v
    }),
  ])
  const policies = Object.keys(boundaries[0]?.policies ?? {}).sort()
  const cell = (row: Partial<Record<Enforcement, string[]>>) => {
    const parts = (Object.entries(row) as [Enforcement, string[]][]).filter(([, w]) => w.length > 0)
    const text = parts.map(([e, w]) => (parts.length > 1 ? `${ENF[e]}(${w.length})` : ENF[e])).join('+') || '-'
    return /DENY-ALL|NONE|L4-only/.test(text) ? painter.paint('yellow', text) : text
  }
  const policyRows = policies.map((p) => [p, ...boundaries.map((b) => cell(b.policies[p] ?? {}))])
  return [
    painter.paint('bold', title),
    legend,
    '',
    renderColumnBlocks(['WORKLOAD', ...columns], dpRows, painter),
    ...(policyRows.length > 0 ? ['', renderColumnBlocks(['POLICY', ...columns], policyRows, painter)] : []),
  ].join('\n')
}

export function renderTimeline(plan: MigrationPlan, painter: Painter): string {
  const sim = timelineOf(plan)
  const out = [
    grid('APPLY: data plane and enforcement after each step', sim.apply, painter),
    '',
    grid('ROLLBACK (after a full apply): after each undo', sim.rollback, painter),
    '',
  ]
  out.push(painter.paint('bold', 'HAZARDS'))
  if (plan.spec.hazards.length === 0) out.push('None.')
  else {
    out.push(
      renderTable(
        ['ID', 'WINDOW', 'FROM', 'UNTIL', 'WHAT'],
        plan.spec.hazards.map((h) => [
          h.id,
          h.window ?? (h.accepted ? painter.paint('yellow', 'accepted') : painter.paint('red', 'none')),
          h.from,
          h.until,
          h.message,
        ]),
        painter,
      ),
    )
  }
  out.push(
    '',
    fitText(
      'DENY-ALL: an L7 ALLOW matches nothing at ztunnel (only traffic the waypoint admits passes). L4-only: ztunnel enforces only the L4 part. NONE: not enforced. OUT: outside the mesh.',
    ),
  )
  return out.join('\n')
}
