// The step-kind table of docs/architecture.md, rendered from the registry (test/unit/steps-registry.test.ts keeps
// the document equal to it).
import {STEP_KINDS, UNDO_ORDER, WRITE_RULES} from '../../src/steps/index.js'
import type {WriteRule} from '../../src/steps/types.js'

function writes(rule: WriteRule): string {
  const parts = [
    rule.apply ? `apply ${rule.apply.join(', ')}` : '',
    rule.delete ? `delete ${rule.delete.join(', ')}` : '',
    rule.label ? `label ${rule.label.keys.join(', ')} on ${rule.label.kinds.join(', ')}` : '',
    rule.annotate ? `annotate ${rule.annotate.keys.join(', ')} on ${rule.annotate.kinds.join(', ')}` : '',
    rule.restart ? `restart ${rule.restart.join(', ')}` : '',
    rule.templateLabels ? `pod-template ${rule.templateLabels.keys.join(', ')}` : '',
  ].filter((p) => p !== '')
  return parts.length > 0 ? parts.join('; ') : 'nothing'
}

export function stepKindTable(): string {
  const rows = STEP_KINDS.map((k, i) => {
    const sim = [k.simulation?.forward ? 'apply' : '', k.simulation?.undo ? 'undo' : '', k.simulation?.role ?? '']
      .filter((s) => s !== '')
      .join(', ')
    return `| ${i + 1} | [\`${k.action}\`](../src/steps/${k.action}.ts) | ${k.summary} | ${writes(WRITE_RULES[k.action])} | ${UNDO_ORDER.indexOf(k.action) + 1}${k.undoUnit ? ` (unit ${k.undoUnit})` : ''} | ${sim || '—'} |`
  })
  return [
    '| # | action | what | may write (validate) | undo order | simulation |',
    '|---|---|---|---|---|---|',
    ...rows,
  ].join('\n')
}
