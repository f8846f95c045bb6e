// Human renderings of a plan: terminal table (`show`) and markdown for pull-request comments.
import {groupFindings} from '../planner/finding-handling.js'
import type {MigrationPlan, Operation, PlanStep, StepPhase} from '../planner/plan-types.js'
import {formatRef} from '../planner/refs.js'
import type {Painter} from './color.js'
import {renderFindings} from './inventory-view.js'
import {renderTimelineMermaid} from './mermaid-view.js'
import {renderTable} from './table.js'

export function stepPhase(plan: MigrationPlan, step: PlanStep): StepPhase {
  return plan.status?.steps.find((s) => s.id === step.id)?.phase ?? 'Pending'
}

const PHASE_STYLE: Record<StepPhase, 'gray' | 'green' | 'yellow' | 'red' | 'cyan' | 'blue'> = {
  Pending: 'gray',
  Running: 'cyan',
  Applied: 'green',
  Failed: 'red',
  Interrupted: 'yellow',
  RolledBack: 'blue',
}

export function describeOperation(op: Operation): string {
  switch (op.op) {
    case 'apply':
      return `create ${formatRef({apiVersion: op.object.apiVersion, kind: op.object.kind, name: op.object.metadata.name, namespace: op.object.metadata.namespace})}`
    case 'delete':
      return `delete ${formatRef(op.ref)}`
    case 'label':
      return `label ${formatRef(op.ref)} ${Object.entries(op.labels)
        .map(([k, v]) => (v === null ? `${k}-` : `${k}=${v}`))
        .join(' ')}`
    case 'annotate':
      return `annotate ${formatRef(op.ref)} ${Object.entries(op.annotations)
        .map(([k, v]) => (v === null ? `${k}-` : `${k}=${v}`))
        .join(' ')}`
    case 'restart':
      return `restart ${formatRef(op.ref)}`
    case 'template-labels':
      return `label pod template of ${formatRef(op.ref)} ${Object.entries(op.labels)
        .map(([k, v]) => (v === null ? `${k}-` : `${k}=${v}`))
        .join(' ')}`
  }
}

function targetLine(plan: MigrationPlan): string {
  const t = plan.spec.target
  return 'manifests' in t ? `manifests ${t.manifests.join(', ')}` : `cluster ${t.context} (${t.server})`
}

// A terminal table of a plan with hundreds of operations per step stays readable (and fast to lay out)
// only if each cell is short: the first few, then a count; -o yaml / show -o markdown have them all.
const MAX_CELL_LINES = 8

function clip(lines: string[]): string {
  if (lines.length <= MAX_CELL_LINES) return lines.join('\n')
  return [
    ...lines.slice(0, MAX_CELL_LINES - 1),
    `… +${lines.length - MAX_CELL_LINES + 1} more (-o yaml shows all)`,
  ].join('\n')
}

export function renderPlan(plan: MigrationPlan, painter: Painter): string {
  const s = plan.spec.summary
  const out: string[] = []
  out.push(
    `Plan ${painter.paint('bold', plan.metadata.namespace)}: ${s.from} → ambient, ${s.steps} step(s), waypoint ${s.waypointRequired ? 'required' : 'not required'}`,
  )
  out.push(`From: ${targetLine(plan)}`)
  // The trust domain the created policies name the waypoint in, and where it was read (issue 21 point 8).
  const td = plan.spec.observed.trustDomain
  if (td)
    out.push(
      `Trust domain: ${td.name}${td.aliases?.length ? ` (aliases ${td.aliases.join(', ')})` : ''}, from ${td.source}`,
    )
  if (s.blockers > 0)
    out.push(painter.paint(['bold', 'red'], `BLOCKED: ${s.blockers} blocker(s) must be resolved before apply.`))
  out.push('')
  if (plan.spec.steps.length === 0) {
    out.push('Nothing to migrate.')
  } else {
    out.push(
      renderTable(
        ['#', 'STEP', 'STATE', 'CHANGES'],
        plan.spec.steps.map((step, i) => {
          const phase = stepPhase(plan, step)
          const changes = step.operations.length === 0 ? ['(read-only)'] : step.operations.map(describeOperation)
          const manual = (step.manual ?? []).map((m) => `manual: ${formatRef(m.ref)}`)
          return [String(i + 1), step.id, painter.paint(PHASE_STYLE[phase], phase), clip([...changes, ...manual])]
        }),
        painter,
      ),
    )
  }
  if (plan.spec.blockers.length > 0) {
    out.push('', painter.paint('bold', 'BLOCKERS'), renderFindings(plan.spec.blockers, painter))
  }
  const {handled, needsYou} = groupFindings(plan.spec.findings)
  if (needsYou.length > 0) {
    out.push('', painter.paint('bold', 'NEEDS YOU'), renderFindings(needsYou, painter))
  }
  if (handled.length > 0) {
    out.push(
      '',
      painter.paint('bold', 'HANDLED BY THE PLAN'),
      renderTable(
        ['ID', 'WHAT', 'HOW'],
        handled.map((f) => [f.id, f.message, f.handledBy!]),
        painter,
      ),
    )
  }
  return out.join('\n')
}

const mdEscape = (text: string) => text.replace(/\|/g, '\\|').replace(/\n/g, '<br>')

// A pull-request comment holds at most 65,536 characters (GitHub). A namespace of hundreds of services
// repeats the same change per object: list a few of each kind and count the rest; the plan file (and
// `mesh-migrate show -o yaml`) has every one of them.
const MD_LIST = 10
const MD_TEXT = 600
const MD_INVENTORY_ROWS = 60
const MD_FINDINGS = 30

/** Text cut at `max` characters, saying so. */
function cut(text: string, max = MD_TEXT): string {
  return text.length <= max
    ? text
    : `${text.slice(0, max - 1)}… (${text.length - max + 1} more characters in the plan file)`
}

/** Operations of a step, grouped by what they do to which kind: a few names per group and a count. */
function summariseOperations(ops: Operation[]): string[] {
  const groups = new Map<string, string[]>()
  for (const op of ops) {
    const text = describeOperation(op)
    // "create AuthorizationPolicy big/x", "label pod template of Deployment big/x k=v": group without the name.
    const m = /^(create|delete|restart|label pod template of|label) (\S+) (\S+)(.*)$/.exec(text)
    const key = m ? `${m[1]} ${m[2]}${m[4]}` : text
    groups.set(key, [...(groups.get(key) ?? []), m ? m[3]! : ''])
  }
  return [...groups].map(([key, names]) => {
    if (names.length === 1)
      return `\`${names[0] ? key.replace(/^(\S+(?: pod template of)? \S+)/, `$1 ${names[0]}`) : key}\``
    const shown = names.slice(0, MD_LIST).join(', ')
    return `\`${key}\` ×${names.length}: ${shown}${names.length > MD_LIST ? ` … +${names.length - MD_LIST} more` : ''}`
  })
}

function inventoryMarkdown(plan: MigrationPlan, out: string[]): void {
  const objects = plan.spec.inventory
  out.push(
    '<details><summary>Inventory: ' +
      `${objects.length} object(s), ${objects.filter((o) => o.verdict === 'L7').length} L7` +
      '</summary>',
    '',
  )
  if (objects.length <= MD_INVENTORY_ROWS) {
    out.push('| Object | Verdict | Action | Why |', '|---|---|---|---|')
    for (const o of objects)
      out.push(`| ${formatRef(o.ref)} | ${o.verdict} | ${o.action} | ${mdEscape(cut(o.reasons.join('\n')))} |`)
  } else {
    // Too many to list: one row per kind, verdict and action, with a few of the objects.
    const groups = new Map<string, string[]>()
    for (const o of objects) {
      const key = `${o.ref.kind} | ${o.verdict} | ${o.action}`
      groups.set(key, [
        ...(groups.get(key) ?? []),
        o.ref.namespace && o.ref.namespace !== plan.metadata.namespace
          ? `${o.ref.namespace}/${o.ref.name}`
          : o.ref.name,
      ])
    }
    out.push(
      `${objects.length} objects, grouped (every object with its reasons: \`mesh-migrate inventory ${plan.metadata.namespace}\` or the plan file).`,
      '',
    )
    out.push('| Kind | Verdict | Action | Count | Objects |', '|---|---|---|---|---|')
    for (const [key, names] of groups)
      out.push(
        `| ${key} | ${names.length} | ${names.slice(0, MD_LIST).join(', ')}${names.length > MD_LIST ? ` … +${names.length - MD_LIST} more` : ''} |`,
      )
  }
  out.push('', '</details>', '')
}

/** A pull-request comment body (at most GitHub's 65,536 characters for namespaces of hundreds of services). */
export function renderPlanMarkdown(plan: MigrationPlan): string {
  const s = plan.spec.summary
  const out: string[] = []
  out.push(`### mesh-migrate plan for \`${plan.metadata.namespace}\`: ${s.from} → ambient`)
  out.push('')
  out.push(
    `Source: ${targetLine(plan)} · ${s.steps} step(s) · waypoint ${s.waypointRequired ? '**required**' : 'not required'} · generated by \`${plan.metadata.generator}\``,
  )
  out.push('')
  if (plan.spec.blockers.length > 0) {
    out.push(
      `> [!CAUTION]`,
      `> **Blocked**: ${plan.spec.blockers.length} blocker(s) must be resolved before this plan can be applied.`,
      '',
    )
    for (const b of plan.spec.blockers.slice(0, MD_FINDINGS))
      out.push(`- **${b.id}**: ${cut(b.message)}${b.fix ? ` _Fix:_ ${cut(b.fix)}` : ''}`)
    if (plan.spec.blockers.length > MD_FINDINGS)
      out.push(
        `- … and ${plan.spec.blockers.length - MD_FINDINGS} more (\`mesh-migrate show ${plan.metadata.namespace}\`)`,
      )
    out.push('')
  }
  if (plan.spec.steps.length > 0) {
    out.push('| # | Step | State | Changes | Undo |', '|---|---|---|---|---|')
    plan.spec.steps.forEach((step, i) => {
      const changes = step.operations.length === 0 ? '_read-only_' : summariseOperations(step.operations).join('<br>')
      out.push(
        `| ${i + 1} | \`${step.id}\` | ${stepPhase(plan, step)} | ${changes} | ${mdEscape(cut(step.undo.description))} |`,
      )
    })
    out.push('')
    out.push('<details><summary>What each step does</summary>', '')
    for (const step of plan.spec.steps) out.push(`- **${step.id}**: ${cut(step.description)}`)
    out.push('', '</details>', '')
    out.push(
      '<details open><summary>Timeline: data plane and hazard windows after each step</summary>',
      '',
      renderTimelineMermaid(plan),
      '',
      '</details>',
      '',
    )
  } else {
    out.push('Nothing to migrate.', '')
  }
  if (plan.spec.inventory.length > 0) inventoryMarkdown(plan, out)
  const {handled, needsYou} = groupFindings(plan.spec.findings)
  const more = (n: number) => `- … and ${n - MD_FINDINGS} more (\`mesh-migrate show ${plan.metadata.namespace}\`)`
  if (needsYou.length > 0) {
    out.push(`#### Needs you (${needsYou.length})`, '')
    for (const f of needsYou.slice(0, MD_FINDINGS))
      out.push(`- **${f.severity}** \`${f.id}\`: ${cut(f.message)}${f.fix ? ` _Fix:_ ${cut(f.fix)}` : ''}`)
    if (needsYou.length > MD_FINDINGS) out.push(more(needsYou.length))
    out.push('')
  }
  if (handled.length > 0) {
    out.push(`<details><summary>Handled by the plan (${handled.length})</summary>`, '')
    for (const f of handled.slice(0, MD_FINDINGS))
      out.push(`- \`${f.id}\`: ${cut(f.message)} _Handled:_ ${cut(f.handledBy!)}`)
    if (handled.length > MD_FINDINGS) out.push(more(handled.length))
    out.push('', '</details>', '')
  }
  return out.join('\n')
}
