// `show -o markdown`: the step timeline as a Mermaid Gantt chart (issue 13 §9), which GitHub and GitLab
// render in pull-request comments. Column k is "after step k" (0 = before the first step): the steps in
// order, each workload's data plane (workloads that change at the same steps share a bar), and the
// hazard windows of apply (which policy is degraded or pods leave the mesh, from which step to which).
import type {MigrationPlan, PlanHazard} from '../planner/plan-types.js'
import type {DataPlane} from '../plan/simulate.js'
import {timelineOf} from './timeline-view.js'

/** Mermaid task names end at ":" and "#" starts a comment. */
const label = (text: string) => text.replace(/[:;#]/g, ' ').replace(/\s+/g, ' ').trim()

const names = (keys: string[]) => {
  const short = keys.map((k) => k.split('/').pop()!)
  return short.length <= 3 ? short.join(', ') : `${short.length} workloads`
}

export function renderTimelineMermaid(plan: MigrationPlan): string {
  const steps = plan.spec.steps
  const sim = timelineOf(plan)
  const boundaries = sim.apply
  const last = boundaries.length // columns 0..N, the last bar ends at N+1
  const out = [
    '```mermaid',
    'gantt',
    `  title ${label(`${plan.metadata.namespace}: data plane and hazards after each step (0 = before the first)`)}`,
    // Bare numbers as milliseconds: Mermaid reads a task's start and end with the same format only for `x`
    // (with `X` it read the start as milliseconds and the end as seconds, so every bar started at 0).
    '  dateFormat x',
    '  axisFormat %-L',
    '  tickInterval 1millisecond',
    '  section Steps',
  ]
  out.push('  0 start :done, 0, 1')
  steps.forEach((s, i) => out.push(`  ${i + 1} ${label(s.id)} :${i + 1}, ${i + 2}`))

  // Workloads whose data plane changes at the same steps share one row.
  const workloads = Object.keys(boundaries[0]?.dataPlanes ?? {}).sort()
  const groups = new Map<string, string[]>()
  for (const w of workloads) {
    const signature = boundaries.map((b) => b.dataPlanes[w] ?? 'outside').join(',')
    groups.set(signature, [...(groups.get(signature) ?? []), w])
  }
  out.push('  section Data plane')
  for (const [signature, members] of groups) {
    const states = signature.split(',') as DataPlane[]
    let start = 0
    for (let k = 1; k <= states.length; k++) {
      if (k < states.length && states[k] === states[start]) continue
      const state = states[start]!
      const tag = state === 'outside' ? 'crit, ' : state === 'ambient' ? 'active, ' : ''
      out.push(
        `  ${label(`${names(members)} ${state === 'outside' ? 'OUTSIDE the mesh' : state}`)} :${tag}${start}, ${k}`,
      )
      start = k
    }
  }

  const hazards = plan.spec.hazards.filter((h) => h.phase === 'apply')
  out.push('  section Hazards')
  if (hazards.length === 0) out.push('  none :done, 0, 1')
  const column = (id: string, fallback: number) => {
    const i = steps.findIndex((s) => s.id === id)
    return i === -1 ? fallback : i + 1
  }
  // Hazards of the same kind over the same columns share one bar: a namespace of hundreds of services has
  // a hazard per policy, and the comment must stay within a pull request's 65,536 characters.
  const bars = new Map<string, PlanHazard[]>()
  for (const h of hazards) {
    const from = column(h.from.replace(/^after /, ''), 0)
    const until = h.until === 'end' ? last : column(h.until, last)
    const key = `${h.kind}|${h.window ?? ''}|${h.accepted === true}|${from}|${Math.max(until, from + 1)}`
    bars.set(key, [...(bars.get(key) ?? []), h])
  }
  for (const [key, group] of bars) {
    const [kind, window, accepted, from, until] = key.split('|')
    const what = `${hazardSubject(group)} ${kind!.replace(/^policy-/, '')}${window ? ` (${window} window)` : accepted === 'true' ? ' (accepted)' : ''}`
    out.push(`  ${label(what)} :${window || accepted === 'true' ? 'active' : 'crit'}, ${from}, ${until}`)
  }
  out.push('```')
  return out.join('\n')
}

/** What a bar of hazards is about: the policy, a few of them, or how many; else the workloads. */
function hazardSubject(group: PlanHazard[]): string {
  if (group.length === 1) return group[0]!.policy ?? names(group[0]!.workloads)
  const policies = group.flatMap((h) => (h.policy === undefined ? [] : [h.policy]))
  if (policies.length === group.length)
    return policies.length <= 3 ? policies.join(', ') : `${policies.length} policies`
  return names([...new Set(group.flatMap((h) => h.workloads))])
}
