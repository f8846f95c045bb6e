// restart-workloads: rollout-restart the workloads whose pods still have a sidecar, and remove pod-level opt-ins
// from templates (E4: the template change rolls the workload like a restart); what the tool cannot restart is
// listed for a person (E4, E6, E7, E8, E9, E10). Pure.
import type {Inventory, KubeObject, ObjectRef, SourceSnapshot, WorkloadItem, WorkloadTrait} from '../planner/model.js'
import type {Operation, Precondition} from '../planner/plan-types.js'
import {formatRef, refKey} from '../planner/refs.js'
import {CONTROLLER_KINDS, objectFor, TEMPLATE_KINDS} from './shared.js'
import type {RestartDecision, StepKind, TemplateWrites} from './types.js'
import {
  isRolloutRestartable,
  podTemplateOrPod,
  REVISION_LABEL,
  SIDECAR_INJECT,
  workloadHasSidecar,
} from '../planner/vocab.js'

// Restart these controllers to drop sidecars; the others are listed for a person (E4, E6, E7, E8, E9, E10).

/** Workloads with a sidecar the tool cannot restart, and what a person does instead (the first trait that matches). */
const MANUAL: [WorkloadTrait, string][] = [
  [
    'manual-injection',
    'the pod template itself contains the sidecar (istioctl kube-inject): remove the injected containers, volumes and annotations from the template',
  ],
  [
    'pod-opt-in',
    'the pod template opts in to injection (sidecar.istio.io/inject=true or istio.io/rev): remove that label from the template, then restart it',
  ],
  [
    'job',
    'Jobs cannot be restarted: running pods keep their sidecar until they complete; the next run starts without one',
  ],
  ['bare-pod', 'a bare Pod has no controller to restart it: delete and re-create it from its source'],
  ['on-delete', 'updateStrategy OnDelete: a rollout restart changes nothing; delete its pods one at a time'],
  [
    'partitioned',
    'RollingUpdate partition > 0: pods below the partition keep their sidecar; lower the partition or delete them',
  ],
]

export const restartWorkloads: StepKind = {
  action: 'restart-workloads',
  summary: 'Rollout-restart workloads so pods come back without sidecars; remove pod opt-ins (E4)',
  // Pod-level opt-ins are removed from templates (E4); the template change rolls the workload like a restart.
  writes: {
    restart: ['apps/Deployment', 'apps/StatefulSet', 'apps/DaemonSet'],
    templateLabels: {kinds: CONTROLLER_KINDS, keys: [SIDECAR_INJECT, REVISION_LABEL]},
  },
  // Re-created L7 selector policies are deny-all/no-op at ztunnel while pods are still ambient, a restart without
  // the injection label brings pods back without sidecars, and restoring the label alone changes nothing for
  // running pods: only the whole tail returns pods to a consistent, enforced state.
  undoUnit: 'sidecars-return',
  simulation: {
    role: 'restarts-pods',
    forward: (step, _input, state) => {
      for (const op of step.operations) {
        // A restart re-injects per the namespace labels; removing a pod-level opt-in (E4) drops the sidecar.
        if (op.op === 'restart') state.sidecar.set(`${op.ref.kind}/${op.ref.name}`, state.injection)
        if (op.op === 'template-labels') state.sidecar.set(`${op.ref.kind}/${op.ref.name}`, false)
      }
    },
    undo: (step, state) => {
      for (const op of step.undo.operations) {
        if (op.op === 'restart') state.sidecar.set(`${op.ref.kind}/${op.ref.name}`, state.injection)
        if (op.op === 'template-labels') state.sidecar.set(`${op.ref.kind}/${op.ref.name}`, true)
      }
    },
  },
  plan: ({migrating, restarts, optIns}) => {
    if (!migrating || (restarts.restart.length === 0 && restarts.manual.length === 0 && optIns.ops.length === 0))
      return {}
    const refs = restarts.restart.map((w) => w.ref)
    const rolled = [...refs, ...optIns.workloads.map((w) => w.ref)].filter((r) => r.kind !== 'CronJob')
    const checked = [...refs, ...optIns.workloads.map((w) => w.ref)]
    return {
      step: {
        id: 'restart-workloads',
        action: 'restart-workloads',
        description: `Rollout-restart ${refs.length} workload(s) so their pods come back without sidecars and are captured by ztunnel: ${refs.map(formatRef).join(', ') || 'none'}.${optIns.workloads.length > 0 ? ` Remove the pod-level injection opt-in (sidecar.istio.io/inject=true / istio.io/rev) from the templates of ${optIns.workloads.map((w) => formatRef(w.ref)).join(', ')}: the template change rolls them the same way (E4).` : ''}${restarts.manual.length > 0 ? ` ${restarts.manual.length} workload(s) cannot be restarted by the tool and are listed for you.` : ''} From here until the next step, selector-based L7 policies are degraded at ztunnel for restarted pods.`,
        // A restart does not depend on the workload's content, only on its existence.
        preconditions: checked.map((ref): Precondition => ({check: 'object-present', ref})),
        operations: [...refs.map((ref): Operation => ({op: 'restart', ref})), ...optIns.ops],
        ...(restarts.manual.length > 0 ? {manual: restarts.manual} : {}),
        verify: [
          {check: 'rollouts-complete', refs: rolled},
          {check: 'pods-without-sidecar', refs: rolled},
        ],
        undo: {
          description: `After the injection label is restored, restart the same workloads again so their pods get sidecars back${optIns.workloads.length > 0 ? ', and restore the pod-level opt-ins' : ''}.`,
          operations: [...refs.map((ref): Operation => ({op: 'restart', ref})), ...optIns.undo],
        },
      },
    }
  },
}

/** Which workloads the restart handles, which a person must, and which end up ambient (verify-dataplane). */
export function decideRestarts(
  workloads: WorkloadItem[],
  rolledByTemplate: Set<string>,
  optedOut: Set<string>,
): RestartDecision {
  const restart: WorkloadItem[] = []
  const manual: {ref: ObjectRef; reason: string}[] = []
  const expectAmbient: WorkloadItem[] = []
  for (const w of workloads) {
    const t = new Set(w.traits)
    // Never touched: their pods are not meant to become ambient app pods.
    if (
      t.has('waypoint') ||
      t.has('host-network') ||
      t.has('dataplane-none') ||
      t.has('injected-gateway') ||
      t.has('kube-gateway')
    )
      continue
    if (optedOut.has(refKey(w.ref))) continue
    if (!workloadHasSidecar(w)) {
      if (w.proxy !== 'none' || t.has('inject-opt-out')) expectAmbient.push(w)
      continue
    }
    // E4: removing the pod-level opt-in from the template rolls the workload like a restart.
    if (rolledByTemplate.has(refKey(w.ref))) {
      expectAmbient.push(w)
      continue
    }
    const reason = MANUAL.find(([trait]) => t.has(trait))?.[1]
    if (reason) {
      manual.push({ref: w.ref, reason})
      continue
    }
    if (isRolloutRestartable(w.ref.kind)) {
      restart.push(w)
      expectAmbient.push(w)
    } else {
      manual.push({ref: w.ref, reason: `${w.ref.kind} has no rollout restart: recreate its pods`})
    }
  }
  return {restart, manual, expectAmbient}
}

// E4: pod-level opt-ins removed from templates (the template change rolls the workload)
export function podOptInOperations(inventory: Inventory, snapshot: SourceSnapshot): TemplateWrites {
  const ops: Operation[] = []
  const undo: Operation[] = []
  const workloads: WorkloadItem[] = []
  for (const w of inventory.workloads) {
    const t = new Set(w.traits)
    // dataplane-none: the workload stays out of ambient; without its opt-in it would lose its sidecar and leave the mesh.
    if (
      !t.has('pod-opt-in') ||
      t.has('manual-injection') ||
      t.has('injected-gateway') ||
      t.has('dataplane-none') ||
      !TEMPLATE_KINDS.has(w.ref.kind)
    )
      continue
    const labels = podTemplateOrPod(objectFor(snapshot, w.ref) ?? ({} as KubeObject))?.metadata?.labels ?? {}
    const change: Record<string, string | null> = {}
    const restore: Record<string, string | null> = {}
    if (labels[SIDECAR_INJECT] === 'true') {
      change[SIDECAR_INJECT] = null
      restore[SIDECAR_INJECT] = 'true'
    }
    if (labels[REVISION_LABEL]) {
      change[REVISION_LABEL] = null
      restore[REVISION_LABEL] = labels[REVISION_LABEL]
    }
    if (Object.keys(change).length === 0) continue
    ops.push({op: 'template-labels', ref: w.ref, labels: change})
    undo.push({op: 'template-labels', ref: w.ref, labels: restore})
    workloads.push(w)
  }
  return {ops, undo, workloads}
}
