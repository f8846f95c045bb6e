// Does the cluster still show what each applied step wrote? (`status`). One line per difference,
// naming the object and the label key or field, so an operator can see who undid what.
import type {KubeClient} from '../kube/types.js'
import type {Operation, PlanStep} from '../planner/plan-types.js'
import {formatRef} from '../planner/refs.js'
import {podTemplateOf} from '../planner/vocab.js'
import {firstDifference, isOurs, operationRef} from './operations.js'

const shown = (v: string | null | undefined) => (v === null || v === undefined ? 'absent' : `"${v}"`)

function labelDrift(what: string, live: Record<string, string>, wrote: Record<string, string | null>): string[] {
  return Object.entries(wrote)
    .filter(([k, v]) => (live[k] ?? null) !== v)
    .map(([k, v]) => `${what}: label ${k} is ${shown(live[k])}, the step set it ${v === null ? 'absent' : `to "${v}"`}`)
}

async function operationDrift(client: KubeClient, op: Operation, planName: string): Promise<string[]> {
  switch (op.op) {
    case 'apply': {
      const ref = operationRef(op)
      const live = await client.get(ref)
      if (!live) return [`${formatRef(ref)} is missing`]
      if (!isOurs(live, planName)) return [`${formatRef(ref)} no longer carries this plan's marks (label app.kubernetes.io/managed-by, annotation mesh-migrate.io/plan)`]
      const {metadata, apiVersion: _a, kind: _k, ...content} = op.object
      const label = firstDifference(live.metadata.labels ?? {}, metadata.labels ?? {})
      const field = firstDifference(live, content) ?? (label && `metadata.labels.${label}`)
      return field ? [`${formatRef(ref)}: field ${field} differs from what the step wrote`] : []
    }
    case 'delete':
      return (await client.get(op.ref)) ? [`${formatRef(op.ref)} is back (the step deleted it)`] : []
    case 'label': {
      const live = await client.get(op.ref)
      return live ? labelDrift(formatRef(op.ref), live.metadata.labels ?? {}, op.labels) : [`${formatRef(op.ref)} is missing`]
    }
    case 'template-labels': {
      const live = await client.get(op.ref)
      return live ? labelDrift(`the pod template of ${formatRef(op.ref)}`, podTemplateOf(live)?.metadata?.labels ?? {}, op.labels) : [`${formatRef(op.ref)} is missing`]
    }
    case 'restart':
      // A later restart replaces the timestamp without undoing anything: restarts are not drift.
      return []
  }
}

/** What of an applied step's writes the cluster no longer shows (empty: in sync). */
export async function stepDrift(client: KubeClient, step: PlanStep, planName: string): Promise<string[]> {
  const found: string[] = []
  for (const op of step.operations) found.push(...(await operationDrift(client, op, planName)))
  return found
}
