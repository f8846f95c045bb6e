// oclif's help with the root command list in the order of a migration, not alphabetical (issue 24 §4).
import {Help} from '@oclif/core/help'

/** The commands in the order they are used; anything else (version, plugins' commands) follows, alphabetically. */
export const WORKFLOW_ORDER = [
  'census',
  'inventory',
  'preflight',
  'plan',
  'show',
  'validate',
  'apply',
  'status',
  'rollback',
  'unlock',
]

export class WorkflowHelp extends Help {
  protected override get sortedCommands() {
    const rank = (id: string) => (WORKFLOW_ORDER.includes(id) ? WORKFLOW_ORDER.indexOf(id) : WORKFLOW_ORDER.length)
    return [...super.sortedCommands].sort((a, b) => rank(a.id) - rank(b.id))
  }
}
