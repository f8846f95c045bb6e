// E9/E10: what a rollout restart cannot do for a workload (DOMAIN §3.1). The workload analyzers
// (src/planner/workloads.ts) report it as a finding and the restart-workloads step (src/steps/restart-workloads.ts)
// leaves such workloads to a person; it sits in the planner, below the steps, so both can use it.
import type {Finding, ObjectRef, WorkloadTrait} from './model.js'
import {isRolloutRestartable} from './vocab.js'

/**
 * E9/E10: why the rollout restart of this step would not replace a workload's sidecars, and what a person does
 * instead; undefined when the restart does.
 */
export function restartLimitFinding(
  ref: ObjectRef,
  traits: Set<WorkloadTrait>,
  partition: number,
): Omit<Finding, 'id' | 'ref'> | undefined {
  const label = `${ref.kind} ${ref.name}`
  if (traits.has('on-delete')) {
    return {
      code: 'E9',
      severity: 'warning',
      message: `${label} uses updateStrategy OnDelete: a rollout restart replaces no pod, so its sidecars stay until pods are deleted.`,
      fix: 'Delete its pods one at a time (the controller re-creates them without a sidecar).',
    }
  }
  if (traits.has('partitioned')) {
    return {
      code: 'E9',
      severity: 'warning',
      message: `${label} has rollingUpdate.partition=${partition}: pods with an ordinal below ${partition} are not restarted and keep their sidecars.`,
      fix: 'Lower the partition to 0 for the restart, or delete those pods explicitly.',
    }
  }
  if (ref.kind === 'Job') {
    return {
      code: 'E10',
      severity: 'warning',
      message: `${label} cannot be rollout-restarted: its running pods keep their sidecars until they complete.`,
      fix: 'Wait for the Job to finish (or re-create it) after the injection label is removed.',
    }
  }
  if (ref.kind === 'CronJob') {
    return {
      code: 'E10',
      severity: 'warning',
      message: `${label} cannot be rollout-restarted: its next scheduled Job starts without a sidecar; running Jobs keep theirs until they complete.`,
      fix: 'Wait for the next schedule (or trigger a Job manually) after the injection label is removed.',
    }
  }
  if (traits.has('bare-pod')) {
    return {
      code: 'E10',
      severity: 'warning',
      message: `${label} is a bare Pod: nothing restarts it, so it keeps its sidecar until it is deleted and re-created.`,
      fix: 'Have its owner (a script, an operator, a person) delete and re-create it after the injection label is removed.',
    }
  }
  if (ref.kind === 'ReplicaSet') {
    return {
      code: 'E10',
      severity: 'warning',
      message: `${label} has no Deployment: rollout restart does not apply to a ReplicaSet.`,
      fix: 'Delete its pods (the ReplicaSet re-creates them) after the injection label is removed.',
    }
  }
  if (ref.kind === 'Rollout') {
    return {
      code: 'E10',
      severity: 'warning',
      message: `${label} is an Argo Rollout: kubectl rollout restart does not apply.`,
      fix: 'Restart it with `kubectl argo rollouts restart` after the injection label is removed.',
    }
  }
  if (!isRolloutRestartable(ref.kind)) {
    return {
      code: 'E10',
      severity: 'warning',
      message: `${label} is not a built-in controller: the plan cannot restart it.`,
      fix: `Restart its pods through ${ref.kind}'s own mechanism after the injection label is removed.`,
    }
  }
  return undefined
}
