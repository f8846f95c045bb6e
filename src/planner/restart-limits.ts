// E9/E10: what a rollout restart cannot do for a workload (DOMAIN §3.1). The workload analyzers
// (src/planner/workloads.ts) report it as a finding and the restart-workloads step (src/steps/restart-workloads.ts)
// leaves such workloads to a person; it sits in the planner, below the steps, so both can use it.
import type {ObjectRef, Severity, WorkloadTrait} from './model.js'
import {renderFinding, type RenderedFinding} from './findings/finding.js'
import {isRolloutRestartable} from './vocab.js'

/**
 * E9/E10: why the rollout restart of this step would not replace a workload's sidecars, and what a person does
 * instead; undefined when the restart does.
 */
export function restartLimitFinding(
  ref: ObjectRef,
  traits: Set<WorkloadTrait>,
  partition: number,
): RenderedFinding<Severity> | undefined {
  const workload = `${ref.kind} ${ref.name}`
  if (traits.has('on-delete')) return renderFinding('StatefulRestartLimits', {variant: 'onDelete', workload})
  if (traits.has('partitioned'))
    return renderFinding('StatefulRestartLimits', {variant: 'partitioned', workload, partition})
  if (ref.kind === 'Job') return renderFinding('NotRestartable', {variant: 'job', workload})
  if (ref.kind === 'CronJob') return renderFinding('NotRestartable', {variant: 'cronJob', workload})
  if (traits.has('bare-pod')) return renderFinding('NotRestartable', {variant: 'barePod', workload})
  if (ref.kind === 'ReplicaSet') return renderFinding('NotRestartable', {variant: 'replicaSet', workload})
  if (ref.kind === 'Rollout') return renderFinding('NotRestartable', {variant: 'rollout', workload})
  if (!isRolloutRestartable(ref.kind))
    return renderFinding('NotRestartable', {variant: 'customController', workload, kind: ref.kind})
  return undefined
}
