// wait-waypoint: the readiness gate before anything is bound (a bound waypoint that is not ready is bypassed silently).
import {formatRef} from '../planner/refs.js'
import {readOnlyUndo} from './shared.js'
import type {StepKind} from './types.js'

export const waitWaypoint: StepKind = {
  action: 'wait-waypoint',
  summary: 'Wait until the waypoint is Programmed and has a ready replica',
  preparesOnly: true,
  writes: {},
  simulation: {
    // Undoing it stands for the waypoint no longer being ready, although it wrote nothing.
    replayUndoWhenReadOnly: true,
    forward: (_step, _input, state) => {
      state.waypointReady = true
    },
    undo: (_step, state) => {
      state.waypointReady = state.applied.has('wait-waypoint')
    },
  },
  plan: ({waypoint}) => {
    if (!waypoint) return {}
    return {
      step: {
        id: 'wait-waypoint',
        action: 'wait-waypoint',
        description: `Wait until ${formatRef(waypoint.ref)} is Programmed, has status.addresses and its Deployment has an available replica. A bound waypoint that is not ready is bypassed silently, so nothing is bound before this passes.`,
        preconditions: [],
        operations: [],
        verify: [{check: 'waypoint-ready', ref: waypoint.ref}],
        undo: readOnlyUndo(),
      },
    }
  },
}
