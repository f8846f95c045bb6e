// opt-out-workloads: workloads outside the mesh today stay outside once the namespace is ambient, by
// istio.io/dataplane-mode=none on their pods (E5), or on their Gateway for class-istio gateways (E8). Pure.
import {finding} from '../planner/findings/finding.js'
import type {Finding, Inventory, ObjectRef, SourceSnapshot, WorkloadItem} from '../planner/model.js'
import type {Operation, PlanStep, Precondition} from '../planner/plan-types.js'
import {formatRef, refOf} from '../planner/refs.js'
import {CONTROLLER_KINDS, objectFor, TEMPLATE_KINDS} from './shared.js'
import type {StepKind} from './types.js'
import {DATAPLANE_MODE_LABEL} from '../planner/vocab.js'

export const optOutWorkloads: StepKind = {
  action: 'opt-out-workloads',
  summary: 'Label workloads outside the mesh today istio.io/dataplane-mode=none (E5, E8)',
  // Pods opted out of injection stay out of ambient too (E5); class-istio gateways likewise (E8).
  writes: {
    label: {kinds: ['/Pod', 'gateway.networking.k8s.io/Gateway'], keys: [DATAPLANE_MODE_LABEL]},
    templateLabels: {kinds: CONTROLLER_KINDS, keys: [DATAPLANE_MODE_LABEL]},
  },
  simulation: {
    forward: (step, input, state) => {
      for (const op of step.operations) {
        if (op.op === 'template-labels' || (op.op === 'label' && op.ref.kind === 'Pod'))
          state.optedOut.add(`${op.ref.kind}/${op.ref.name}`)
        if (op.op === 'label' && op.ref.kind === 'Gateway') {
          for (const w of input.workloads)
            if (w.podLabels['gateway.networking.k8s.io/gateway-name'] === op.ref.name)
              state.optedOut.add(`${w.ref.kind}/${w.ref.name}`)
        }
      }
    },
    undo: (_step, state) => {
      state.optedOut.clear()
    },
  },
  // Decided with the other up-front choices (the restarts depend on it): see StepContext.optOut.
  plan: ({optOut}) => (optOut.step ? {step: optOut.step} : {}),
}

export function optOutStep(
  inventory: Inventory,
  snapshot: SourceSnapshot,
): {step?: PlanStep; optedOut: WorkloadItem[]; findings: Finding[]} {
  const ops: Operation[] = []
  const undo: Operation[] = []
  const optedOut: WorkloadItem[] = []
  const findings: Finding[] = []
  for (const w of inventory.workloads) {
    const t = new Set(w.traits)
    if (t.has('dataplane-none') || t.has('host-network') || t.has('waypoint')) continue
    const outsideToday = w.proxy === 'none' && t.has('inject-opt-out')
    if (!outsideToday && !t.has('kube-gateway')) continue
    if (t.has('kube-gateway')) {
      // Class-istio gateway pods come from a Gateway object; istiod propagates its labels to them (E8).
      const gatewayName = w.podLabels['gateway.networking.k8s.io/gateway-name']
      if (!gatewayName) continue
      const ref: ObjectRef = {
        apiVersion: 'gateway.networking.k8s.io/v1',
        kind: 'Gateway',
        namespace: inventory.namespace,
        name: gatewayName,
      }
      const previous = objectFor(snapshot, ref)?.metadata.labels?.[DATAPLANE_MODE_LABEL] ?? null
      ops.push({op: 'label', ref, labels: {[DATAPLANE_MODE_LABEL]: 'none'}})
      undo.push({op: 'label', ref, labels: {[DATAPLANE_MODE_LABEL]: previous}})
      optedOut.push(w)
      continue
    }
    if (w.ref.kind === 'Pod') {
      ops.push({op: 'label', ref: w.ref, labels: {[DATAPLANE_MODE_LABEL]: 'none'}})
      undo.push({op: 'label', ref: w.ref, labels: {[DATAPLANE_MODE_LABEL]: null}})
      optedOut.push(w)
    } else if (TEMPLATE_KINDS.has(w.ref.kind)) {
      ops.push({op: 'template-labels', ref: w.ref, labels: {[DATAPLANE_MODE_LABEL]: 'none'}})
      undo.push({op: 'template-labels', ref: w.ref, labels: {[DATAPLANE_MODE_LABEL]: null}})
      optedOut.push(w)
    } else {
      findings.push(
        finding(
          'OptOutManual',
          w.ref,
          {ref: formatRef(w.ref), kind: w.ref.kind},
          {id: `E5/opt-out-manual/${w.ref.kind}/${w.ref.name}`, severity: 'warning'},
        ),
      )
    }
  }
  if (ops.length === 0) return {optedOut, findings}
  return {
    optedOut,
    findings,
    step: {
      id: 'opt-out-workloads',
      action: 'opt-out-workloads',
      description: `Keep ${optedOut.length} workload(s) that are outside the mesh today outside it once the namespace is ambient, by labelling their pods istio.io/dataplane-mode=none (the ambient equivalent of sidecar.istio.io/inject=false): ${optedOut.map((w) => formatRef(w.ref)).join(', ')}. Template changes roll their pods; without this step ztunnel would capture them the moment the namespace is labelled (E5, E8). Pass --opted-out enroll to let them join instead.`,
      preconditions: ops.map((op): Precondition => ({
        check: 'object-present',
        ref: op.op === 'apply' ? refOf(op.object) : op.ref,
      })),
      operations: ops,
      // A CronJob's template change reaches pods only at its next run: nothing to wait for now.
      verify: [{check: 'pods-opted-out', refs: optedOut.filter((w) => w.ref.kind !== 'CronJob').map((w) => w.ref)}],
      undo: {description: 'Remove the istio.io/dataplane-mode=none labels this step added.', operations: undo},
    },
  }
}
