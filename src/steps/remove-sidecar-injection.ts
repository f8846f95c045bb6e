// remove-sidecar-injection: remove istio-injection / istio.io/rev from the namespace (or set istio-injection=disabled
// where the injector injects unlabelled namespaces, E3), after pinning injected gateways to their revision (E7).
// istio-injection=disabled (any value but enabled) stays: it blocks pod opt-ins too (E4, issue 10 point 6).
import type {Inventory, KubeObject, ObjectRef, SourceSnapshot, WorkloadItem} from '../planner/model.js'
import {sidecarLabelsToRemove} from '../planner/namespace.js'
import type {Operation, Precondition} from '../planner/plan-types.js'
import {formatRef} from '../planner/refs.js'
import {CONTROLLER_KINDS, labelPrecondition, objectFor, TEMPLATE_KINDS} from './shared.js'
import type {StepKind} from './types.js'
import {INJECTION_LABEL, podTemplateOrPod, REVISION_LABEL} from '../planner/vocab.js'

export const removeSidecarInjection: StepKind = {
  action: 'remove-sidecar-injection',
  summary: 'Remove the injection labels (E3: istio-injection=disabled); pin injected gateways (E7)',
  // Injected gateways are pinned to the namespace's revision before it loses istio.io/rev (E7).
  writes: {
    label: {kinds: ['/Namespace'], keys: [INJECTION_LABEL, REVISION_LABEL]},
    templateLabels: {kinds: CONTROLLER_KINDS, keys: [REVISION_LABEL]},
  },
  undoUnit: 'sidecars-return',
  simulation: {
    forward: (_step, _input, state) => {
      state.injection = false
    },
    undo: (_step, state) => {
      state.injection = true
    },
  },
  plan: ({migrating, inventory, snapshot, labels, injectionByDefault, ns, nsRef}) => {
    const nsState = inventory.namespaceState
    const removedLabels = sidecarLabelsToRemove(nsState)
    const sidecarLabelKeys = removedLabels.map((l) => l.key)
    if (!migrating || (sidecarLabelKeys.length === 0 && !injectionByDefault)) return {}
    const change: Record<string, string | null> = {}
    for (const key of sidecarLabelKeys) change[key] = null
    // E3: with enableNamespacesByDefault an unlabelled namespace is still injected; only
    // istio-injection=disabled matches no webhook.
    if (injectionByDefault) change[INJECTION_LABEL] = 'disabled'
    const restore = Object.fromEntries(Object.keys(change).map((k) => [k, labels[k] ?? null]))
    const what = removedLabels.map((l) => `${l.key}=${l.value}`).join(' and ')
    // E7: injected gateways follow the namespace's istio.io/rev; pin them first, or they silently move to
    // the default revision (or lose injection) when the label goes.
    const pin = gatewayPinOperations(inventory, snapshot)
    return {
      step: {
        id: 'remove-sidecar-injection',
        action: 'remove-sidecar-injection',
        description:
          `${pin.pinned.length > 0 ? `Pin the injected gateway(s) ${pin.pinned.map((w) => formatRef(w.ref)).join(', ')} to revision ${nsState.revision} on their pod templates (they keep their proxy and revision), then ` : ''}${injectionByDefault ? `set istio-injection=disabled on namespace ${ns} (the injector injects unlabelled namespaces by default)` : `remove ${what} from namespace ${ns}`}: new pods get no sidecar and are captured by ztunnel. Running pods keep their sidecars until the next step restarts them.`.replace(
            /^[a-z]/,
            (c) => c.toUpperCase(),
          ),
        preconditions: [
          labelPrecondition(labels, Object.keys(change)),
          ...pin.ops.map((op): Precondition => ({check: 'object-present', ref: (op as {ref: ObjectRef}).ref})),
        ],
        operations: [...pin.ops, {op: 'label', ref: nsRef, labels: change}],
        verify: [{check: 'namespace-labels', labels: change}],
        undo: {
          description: `Restore ${Object.entries(restore)
            .map(([k, v]) => (v === null ? `no ${k}` : `${k}=${v}`))
            .join(', ')} exactly as before${pin.pinned.length > 0 ? ', then un-pin the gateways' : ''}.`,
          operations: [{op: 'label', ref: nsRef, labels: restore}, ...pin.undo],
        },
      },
    }
  },
}

// E7: injected gateways pinned to the namespace's revision before it loses istio.io/rev
function gatewayPinOperations(
  inventory: Inventory,
  snapshot: SourceSnapshot,
): {ops: Operation[]; undo: Operation[]; pinned: WorkloadItem[]} {
  const revision = inventory.namespaceState.revision
  const ops: Operation[] = []
  const undo: Operation[] = []
  const pinned: WorkloadItem[] = []
  if (!revision || !inventory.namespaceState.sidecarLabels.some((l) => l.key === REVISION_LABEL))
    return {ops, undo, pinned}
  for (const w of inventory.workloads) {
    if (!w.traits.includes('injected-gateway') || !TEMPLATE_KINDS.has(w.ref.kind)) continue
    const template = podTemplateOrPod(objectFor(snapshot, w.ref) ?? ({} as KubeObject))
    if (template?.metadata?.labels?.[REVISION_LABEL]) continue
    ops.push({op: 'template-labels', ref: w.ref, labels: {[REVISION_LABEL]: revision}})
    undo.push({op: 'template-labels', ref: w.ref, labels: {[REVISION_LABEL]: null}})
    pinned.push(w)
  }
  return {ops, undo, pinned}
}
