import type {KubeObject, NamespaceState, ServiceItem, WorkloadItem} from './model.js'

/** Everything a classifier may look at besides the object itself. Pure data. */
export interface ClassifyContext {
  /** The namespace being migrated. */
  namespace: string
  /** Istio root namespace (--root-namespace, default istio-system). */
  rootNamespace: string
  namespaceState: NamespaceState
  /** Workloads of the migrated namespace (controllers and bare pods), with their pod labels. */
  workloads: WorkloadItem[]
  /** Services of the migrated namespace. */
  services: ServiceItem[]
  /** Every object of the snapshot, all namespaces (for cross references such as VirtualService → DestinationRule subsets). */
  objects: KubeObject[]
  /** Istio minor version as "1.NN" when known (cluster: from istiod; offline: --istio-version). */
  istioVersion?: string
  /**
   * Whether the plan deploys a waypoint for this namespace. Classification runs twice: first with
   * false to find out whether anything needs one, then with the answer, because some verdicts
   * (identity-keyed L4 policies, DestinationRules) depend on it (DOMAIN §3.1, §8).
   */
  waypointPlanned: boolean
  /**
   * Fleet planning: other namespaces whose plans, in an earlier wave, bind their Services to a waypoint of
   * their own (namespace → waypoint name). Their waypoints apply their exported routing for this namespace's
   * ambient callers, as if it were there today (issue 11 §5).
   */
  earlierWaypoints?: Record<string, string>
  /**
   * Fleet planning: collects the other namespaces whose planned waypoint a classification asked for. Only those can
   * change when earlier waves' waypoints are given, so an inventory that asked for none of them is already the one.
   */
  waypointsAsked?: Set<string>
}
