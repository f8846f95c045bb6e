// enable-ambient: label the namespace istio.io/dataplane-mode=ambient. Pods with a sidecar keep it until restarted;
// pods without one are captured by ztunnel at once (DOMAIN §2.2).
import {formatRef, refKey} from '../planner/refs.js'
import {labelPrecondition} from './shared.js'
import type {StepKind} from './types.js'
import {DATAPLANE_MODE_LABEL, workloadHasSidecar} from '../planner/vocab.js'

export const enableAmbient: StepKind = {
  action: 'enable-ambient',
  summary: 'Label the namespace istio.io/dataplane-mode=ambient',
  writes: {label: {kinds: ['/Namespace'], keys: [DATAPLANE_MODE_LABEL]}},
  simulation: {
    forward: (_step, _input, state) => {
      state.ambientLabel = true
    },
    undo: (_step, state) => {
      state.ambientLabel = false
    },
  },
  plan: ({migrating, labels, inventory, optedOutKeys, ns, nsRef}) => {
    if (!migrating || labels[DATAPLANE_MODE_LABEL] === 'ambient') return {}
    const capturedNow = inventory.workloads.filter(
      (w) =>
        !workloadHasSidecar(w) &&
        !optedOutKeys.has(refKey(w.ref)) &&
        !w.traits.includes('host-network') &&
        !w.traits.includes('dataplane-none') &&
        !w.traits.includes('waypoint'),
    )
    const previous = labels[DATAPLANE_MODE_LABEL] ?? null
    return {
      step: {
        id: 'enable-ambient',
        action: 'enable-ambient',
        description: `Label namespace ${ns} istio.io/dataplane-mode=ambient. Pods with a sidecar keep it (the sidecar wins) until restarted${capturedNow.length > 0 ? `; pods without one are captured by ztunnel now, without a restart: ${capturedNow.map((w) => formatRef(w.ref)).join(', ')}` : ''}.`,
        preconditions: [labelPrecondition(labels, [DATAPLANE_MODE_LABEL])],
        operations: [{op: 'label', ref: nsRef, labels: {[DATAPLANE_MODE_LABEL]: 'ambient'}}],
        verify: [
          {check: 'namespace-labels', labels: {[DATAPLANE_MODE_LABEL]: 'ambient'}},
          // Also what rollback reads: these pods were captured without a sidecar before the plan, so removing the
          // label again only returns them to that (the executor lets them be).
          {check: 'pods-captured', refs: capturedNow.map((w) => w.ref)},
        ],
        undo: {
          description:
            previous === null
              ? `Remove istio.io/dataplane-mode from namespace ${ns} (after sidecars are back, never before).`
              : `Restore istio.io/dataplane-mode=${previous}.`,
          operations: [{op: 'label', ref: nsRef, labels: {[DATAPLANE_MODE_LABEL]: previous}}],
        },
      },
    }
  },
}
