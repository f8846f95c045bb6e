// docs/findings.md, rendered from the catalogue (`npm run findings-doc` writes it; a unit test checks it).
import {FINDING_CATALOGUE, type FindingArea, type FindingCode} from './catalogue.js'

const AREA_TITLES: Record<FindingArea, string> = {
  namespace: 'Namespace (src/planner/namespace.ts)',
  workload: 'Workloads (src/planner/workloads.ts)',
  service: 'Services (src/planner/services.ts)',
  policy: 'Policies and other objects (src/planner/classify)',
  routing: 'Routing (src/planner/classify, src/planner/routes)',
  retarget: 'Policy migration to the waypoint (src/planner/retarget)',
  plan: 'Plan (src/plan/plan-builder.ts, plan-steps.ts, inventory.ts)',
  fleet: 'Fleet plans (src/plan/fleet.ts)',
  source: 'Sources (src/sources, src/planner/inventory.ts)',
  preflight: 'Preflight diagnostics (src/preflight)',
}

function cell(text: string | undefined): string {
  return (text ?? '').replaceAll('|', '\\|')
}

export function renderFindingsDoc(): string {
  const lines = [
    '# Finding codes',
    '',
    '<!-- Generated from src/planner/findings/catalogue.ts by `npm run findings-doc`; do not edit by hand. -->',
    '',
    'Every finding (inventory, plan, `-o json`) and preflight diagnostic carries one of these codes in `code`.',
    'The **code** is what the tool writes and keeps writing (plans, JSON and scripts depend on it); codes from',
    'before the catalogue that are not in PascalCase (E-numbers, IST numbers, kebab-case) are kept as they were,',
    'and **name** is their one-style name. `--accept-lost` and `--accept-hazard` name finding **ids**, not codes',
    '(see docs/contract.md), so they are unaffected. **Edge case** is the DOMAIN.md edge case, **Istio** the',
    '`istioctl analyze` message it corresponds to. In messages, `{…}` is filled in per object.',
    '',
  ]
  const codes = Object.keys(FINDING_CATALOGUE) as FindingCode[]
  for (const area of Object.keys(AREA_TITLES) as FindingArea[]) {
    const inArea = codes.filter((c) => FINDING_CATALOGUE[c].area === area)
    if (inArea.length === 0) continue
    lines.push(
      `## ${AREA_TITLES[area]}`,
      '',
      '| code | name | edge case | Istio | severity | message | fix |',
      '|---|---|---|---|---|---|---|',
    )
    for (const code of inArea) {
      const s = FINDING_CATALOGUE[code]
      const name = s.name === code ? '' : s.name
      lines.push(
        `| \`${code}\` | ${name} | ${s.edgeCase ?? ''} | ${s.istio ?? ''} | ${s.severity.join(', ')} | ${cell(s.message)} | ${cell(s.fix)} |`,
      )
    }
    lines.push('')
  }
  return lines.join('\n')
}
