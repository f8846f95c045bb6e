// Flags shared by several commands (kept apart from base.ts so each command imports only what it uses).
import {Flags} from '@oclif/core'

import {WAYPOINT_FOR_VALUES} from '../planner/waypoint.js'

export const waypointForFlag = Flags.option({
  description: 'Traffic the waypoint handles (istio.io/waypoint-for): service (Service VIPs), workload (pod IPs, e.g. headless/StatefulSet peers) or all.',
  options: WAYPOINT_FOR_VALUES,
  default: 'service' as const,
})()

export const waypointNameFlag = Flags.string({
  description: 'Name of the waypoint Gateway (also its Deployment, Service and ServiceAccount). "none" is reserved.',
  default: 'waypoint',
})

/** How commands that only talk to a cluster find it (kubectl semantics). */
export const clusterFlags = {
  kubeconfig: Flags.string({description: 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config).', helpGroup: 'CLUSTER'}),
  context: Flags.string({description: 'The kubeconfig context to use.', helpGroup: 'CLUSTER'}),
  'request-timeout': Flags.string({description: 'Timeout of a single API request, e.g. 30s, 1m (0 = none).', default: '0', helpGroup: 'CLUSTER'}),
}
