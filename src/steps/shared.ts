// Helpers several step kinds share. Pure.
import type {KubeObject, ObjectRef, SourceSnapshot} from '../planner/model.js'
import type {PlanStep, Precondition} from '../planner/plan-types.js'
import {refKey, refOf} from '../planner/refs.js'

export const namespaceRef = (name: string): ObjectRef => ({apiVersion: 'v1', kind: 'Namespace', name})

/** Controllers (and bare Pods) whose pod template a step may label. */
export const TEMPLATE_KINDS = new Set(['Deployment', 'StatefulSet', 'DaemonSet', 'ReplicaSet', 'CronJob'])

/** group/kind keys of the controllers a step may change the pod template of (WriteRule.templateLabels). */
export const CONTROLLER_KINDS = [
  'apps/Deployment',
  'apps/StatefulSet',
  'apps/DaemonSet',
  'apps/ReplicaSet',
  'batch/CronJob',
]

/** The policy kinds steps copy, create and delete (WriteRule group/kind keys). */
export const POLICY_KINDS = [
  'security.istio.io/AuthorizationPolicy',
  'security.istio.io/RequestAuthentication',
  'telemetry.istio.io/Telemetry',
  'extensions.istio.io/WasmPlugin',
]

export function objectFor(snapshot: SourceSnapshot, ref: ObjectRef): KubeObject | undefined {
  const key = refKey(ref)
  return snapshot.objects.find((o) => refKey(refOf(o)) === key)
}

/** The namespace labels `keys` must still have the values the plan saw. */
export function labelPrecondition(labels: Record<string, string>, keys: string[]): Precondition {
  return {check: 'namespace-labels', labels: Object.fromEntries(keys.map((k) => [k, labels[k] ?? null]))}
}

/** The undo of a step that writes nothing. */
export function readOnlyUndo(): PlanStep['undo'] {
  return {description: 'Nothing to undo: read-only.', operations: []}
}
