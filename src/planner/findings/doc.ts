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

/** A table cell: a pipe would end the cell and a line break the row (DenyMatchesWaypoint's fix ends in YAML). */
function cell(text: string | undefined): string {
  return (text ?? '').replaceAll('|', '\\|').replaceAll('\n', '<br>')
}

function rows(code: FindingCode): string[] {
  const s = FINDING_CATALOGUE[code]
  const head = `| \`${code}\` | ${s.alias ? `\`${s.alias}\`` : ''} | ${s.edgeCase ?? ''} | ${s.istio ?? ''} | ${s.severity.join(', ')}`
  if (!s.variants) return [`${head} | ${cell(s.message)} | ${cell(s.fix)} |`]
  return Object.entries(s.variants).map(
    ([variant, text], i) =>
      `${i === 0 ? head : '| | | | |'} | *${variant}*: ${cell(text.message)} | ${cell(text.fix)} |`,
  )
}

export function renderFindingsDoc(): string {
  const lines = [
    '# Finding codes',
    '',
    '<!-- Generated from src/planner/findings/catalogue.ts by `npm run findings-doc`; do not edit by hand. -->',
    '',
    'Every finding (inventory, plan, `-o json`) and preflight diagnostic carries one of these codes in `code`, and',
    'its severity, message and fix are rendered from this catalogue (`finding()` in src/planner/findings/finding.ts);',
    'in the templates, `{arg}` is filled in per object. A code with several cases has one wording per **variant**.',
    '',
    '**Naming.** A code is PascalCase: a noun phrase saying what was found (`PortNameNoProtocol`,',
    '`RetargetNoService`). Codes of the older styles (E-numbers, IST numbers, kebab-case) are its **alias**:',
    'plan files written with them still load and are read through the alias. **Edge case** is the DOMAIN.md edge',
    'case, **Istio** the `istioctl analyze` message it corresponds to.',
    '',
    '**Finding ids** (what `--accept-lost` and `--accept-hazard` name, and what plans record as accepted) keep the',
    'prefixes they always had, so accepted ids and scripts go on matching: `IST0118/web/8080`, `E4/Deployment/x`.',
    "Where an id starts with an alias, the code's name is accepted in its place: `--accept-hazard",
    'PortNameNoProtocol/web/8080` accepts the finding `IST0118/web/8080`.',
    '',
  ]
  const codes = Object.keys(FINDING_CATALOGUE) as FindingCode[]
  for (const area of Object.keys(AREA_TITLES) as FindingArea[]) {
    const inArea = codes.filter((c) => FINDING_CATALOGUE[c].area === area)
    if (inArea.length === 0) continue
    lines.push(
      `## ${AREA_TITLES[area]}`,
      '',
      '| code | alias | edge case | Istio | severity | message | fix |',
      '|---|---|---|---|---|---|---|',
    )
    for (const code of inArea) lines.push(...rows(code))
    lines.push('')
  }
  return lines.join('\n')
}
