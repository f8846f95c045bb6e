// verify-dataplane: read-only check of the end state (no sidecars, every pod captured, Services bound).
import {compareRefs} from '../planner/refs.js'
import {readOnlyUndo} from './shared.js'
import type {StepKind} from './types.js'

export const verifyDataplane: StepKind = {
  action: 'verify-dataplane',
  summary: 'Read-only: no sidecars left, pods captured, Services bound',
  writes: {},
  undoUnit: 'sidecars-return',
  plan: ({migrating, restarts, waypoint, binding}) => {
    if (!migrating) return {}
    const refs = restarts.expectAmbient.map((w) => w.ref).sort(compareRefs)
    const boundNames = binding.bound.map((s) => s.ref.name)
    return {
      step: {
        id: 'verify-dataplane',
        action: 'verify-dataplane',
        description: `Check the end state: no pod of the migrated workloads has a sidecar (classic or native), every one is captured by ztunnel (ambient.istio.io/redirection=enabled)${waypoint ? ", and the namespace's Services are bound to the waypoint" : ''}.`,
        preconditions: [],
        operations: [],
        verify: [
          {check: 'pods-without-sidecar', refs},
          {check: 'pods-captured', refs},
          ...(waypoint ? [{check: 'waypoint-bound' as const, ref: waypoint.ref, services: boundNames}] : []),
        ],
        undo: readOnlyUndo(),
      },
    }
  },
}
