// `show -o patches`: the plan as manifest changes for a Git repository (E23), one YAML document per
// change, in step order, each preceded by comments saying which step it belongs to and what it does.
import {stringify} from 'yaml'

import {type ManifestChange, manifestChanges} from '../plan/gitops.js'
import type {MigrationPlan} from '../planner/plan-types.js'
import {formatRef} from '../planner/refs.js'
import {isRolloutRestartable} from '../planner/vocab.js'

const VERB: Record<ManifestChange['kind'], string> = {
  labels: 'patch: set/remove labels of',
  annotations: 'patch: set/remove annotations of',
  'template-labels': 'patch: set/remove pod-template labels of',
  add: 'add to the repository:',
  remove: 'remove from the repository (or keep this delete patch):',
}

export function renderManifestPatches(plan: MigrationPlan): string {
  const steps = manifestChanges(plan)
  const managed = steps.flatMap((s) => s.changes).filter((c) => c.managedBy)
  const seen = new Set<string>()
  const managedLines = managed
    .filter((c) => !seen.has(formatRef(c.ref)) && seen.add(formatRef(c.ref)))
    .map((c) => `#   ${formatRef(c.ref)}: ${c.managedBy}`)
  const header = [
    `# Plan ${plan.metadata.name} (namespace ${plan.metadata.namespace}) as manifest changes for a Git repository (E23).`,
    managedLines.length > 0
      ? '# Objects it changes that a GitOps tool manages (a live change to them is reverted by the next sync):'
      : '# No object this plan changes is marked as managed by a GitOps tool; these are the same changes as manifests.',
    ...managedLines,
    '# Commit and sync one step at a time, in this order, and let each settle before the next (or pause the sync,',
    '# run `mesh-migrate apply --step`, and commit the same changes). Documents are Kustomize strategic-merge patches:',
    '# a label set to null is removed, `$patch: delete` removes the object; "add" documents are new objects.',
  ]
  const docs: string[] = []
  steps.forEach((step) => {
    const index = plan.spec.steps.findIndex((s) => s.id === step.id) + 1
    const title = `# Step ${index}/${plan.spec.steps.length} ${step.id}`
    for (const change of step.changes) {
      const comment = [
        title,
        `# ${VERB[change.kind]} ${formatRef(change.ref)}${change.managedBy ? ` (managed by ${change.managedBy})` : ''}`,
      ]
      docs.push(`${comment.join('\n')}\n${stringify(change.document, {lineWidth: 0})}`)
    }
    if (step.restarts.length > 0) {
      const lines = step.restarts.map((r) =>
        isRolloutRestartable(r.kind)
          ? `#   kubectl -n ${r.namespace ?? plan.metadata.namespace} rollout restart ${r.kind.toLowerCase()}/${r.name}`
          : `#   ${formatRef(r)}: its next run starts with the new template`,
      )
      docs.push(
        `${title}\n# after the sync of this step (not a manifest change; safe to repeat):\n${lines.join('\n')}\n`,
      )
    }
  })
  return `${header.join('\n')}\n${docs.map((d) => `---\n${d}`).join('')}`
}
