// create-waypoint: the waypoint Gateway (class istio-waypoint), unbound, so no traffic changes yet (DOMAIN §1.4).
import {formatRef} from '../planner/refs.js'
import type {StepKind} from './types.js'

export const createWaypoint: StepKind = {
  action: 'create-waypoint',
  summary: 'Create the waypoint Gateway (nothing bound to it yet)',
  preparesOnly: true,
  writes: {apply: ['gateway.networking.k8s.io/Gateway']},
  simulation: {
    // Deleting the waypoint makes it not ready, unless wait-waypoint is still in place.
    undo: (_step, state) => {
      state.waypointReady = state.applied.has('wait-waypoint')
    },
  },
  plan: ({waypoint, options}) => {
    if (!waypoint || waypoint.exists) return {}
    const {ref: waypointRef, object} = waypoint
    return {
      step: {
        id: 'create-waypoint',
        action: 'create-waypoint',
        description: `Create waypoint ${formatRef(waypointRef)} (class istio-waypoint, istio.io/waypoint-for=${options.waypointFor}${object.metadata.labels?.['istio.io/rev'] ? `, istio.io/rev=${object.metadata.labels['istio.io/rev']} so the namespace's revision keeps owning it after the injection label is removed` : ''}). Nothing is bound to it yet, so no traffic changes.`,
        preconditions: [{check: 'object-absent-or-ours', ref: waypointRef}],
        operations: [{op: 'apply', object}],
        verify: [{check: 'objects-present', refs: [waypointRef]}],
        undo: {
          description: `Delete ${formatRef(waypointRef)} (only if it still carries this plan's annotation).`,
          operations: [{op: 'delete', ref: waypointRef}],
        },
      },
    }
  },
}
