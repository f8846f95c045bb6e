// preflight: read-only checks that ambient is installed and ready and that the plan may run (DOMAIN §4.4).
import {
  DATAPLANE_MODE_LABEL,
  INJECTION_LABEL,
  PREFLIGHT_CHECKS,
  REVISION_LABEL,
  USE_WAYPOINT_LABEL,
} from '../planner/vocab.js'
import {labelPrecondition, readOnlyUndo} from './shared.js'
import type {StepKind} from './types.js'

export const preflight: StepKind = {
  action: 'preflight',
  summary: 'Read-only: ambient installed and ready, RBAC, blockers',
  preparesOnly: true,
  writes: {},
  plan: ({migrating, labels}) => {
    if (!migrating) return {}
    return {
      step: {
        id: 'preflight',
        action: 'preflight',
        description:
          'Read-only checks that ambient is installed and ready and that this plan may run: Istio version, ztunnel and istio-cni on every node, Gateway API CRDs and the istio-waypoint GatewayClass, HBONE-capable sidecars, blockers, NetworkPolicies admitting 15008, and RBAC for every write below.',
        preconditions: [
          labelPrecondition(labels, [INJECTION_LABEL, REVISION_LABEL, DATAPLANE_MODE_LABEL, USE_WAYPOINT_LABEL]),
        ],
        operations: [],
        verify: [{check: 'preflight', checks: [...PREFLIGHT_CHECKS]}],
        undo: readOnlyUndo(),
      },
    }
  },
}
