// Run-time behaviour of the fake control plane: delays and failures tests choose, changeable while
// it runs (ControlPlane.configure). What the control plane *is* (version, revisions, native sidecars,
// HBONE, which DaemonSets exist) is not here: it is read from the objects installControlPlane()
// creates, as the real components read their Deployments and ConfigMaps.
import type {LabelSelector} from '../../../src/planner/namespace.js'

/** Pods a rule applies to: a namespace and/or a label selector (both optional: absent = any). */
export interface PodMatcher {
  namespace?: string
  selector?: LabelSelector
}

/** How istiod reports a waypoint it cannot program (DOMAIN §1.7). */
export interface WaypointFailure {
  /** Gateway API reason of Programmed=False, e.g. AddressNotAssigned, AddressNotUsable, UnsupportedAddress. */
  reason: string
  message?: string
}

export interface ControlPlaneOptions {
  /** Root namespace of the mesh (where istiod, ztunnel and istio-cni run). */
  rootNamespace: string
  /** Cluster DNS domain (Service hostnames, waypoint addresses). */
  clusterDomain: string
  /** Time between a pod being scheduled and it running and ready ("kubelet"). */
  podStartupMs: number
  /** Pods that start but never become ready (readiness probe failing), e.g. a broken ztunnel. */
  neverReady: PodMatcher[]
  /**
   * Run time of Job pods (and bare pods with restartPolicy Never/OnFailure) before they succeed;
   * 'never' = they run forever. A classic (non-native) sidecar keeps such a pod running anyway.
   */
  jobRunMs: number | 'never'
  waypoint: {
    /** Delay between the waypoint Deployment becoming available and the Gateway being Programmed. */
    readyDelayMs: number | 'never'
    /** When set, the Gateway reports Programmed=False with this reason instead of becoming ready. */
    failure?: WaypointFailure
  }
  /** Namespaces istio-cni never captures (the chart's `excludeNamespaces`). */
  cniExcludeNamespaces: string[]
  /** Reconciles per controller running at once. */
  workers: number
  /**
   * Where unexpected controller errors (always also kept for waitForIdle's report) and notices
   * (e.g. which way istio-cni writes its annotation) go; default: nowhere.
   */
  log?: (message: string, level: 'error' | 'notice') => void
}

export type ControlPlaneOptionsInput = Partial<Omit<ControlPlaneOptions, 'waypoint'>> & {
  waypoint?: Partial<ControlPlaneOptions['waypoint']>
}

export const DEFAULT_OPTIONS: ControlPlaneOptions = {
  rootNamespace: 'istio-system',
  clusterDomain: 'cluster.local',
  podStartupMs: 10,
  neverReady: [],
  jobRunMs: 100,
  waypoint: {readyDelayMs: 0},
  cniExcludeNamespaces: ['kube-system'],
  workers: 4,
}

export function resolveOptions(
  input: ControlPlaneOptionsInput = {},
  base: ControlPlaneOptions = DEFAULT_OPTIONS,
): ControlPlaneOptions {
  const {waypoint, ...rest} = input
  const merged: ControlPlaneOptions = {
    ...base,
    ...stripUndefined(rest),
    waypoint: {...base.waypoint, ...stripUndefined(waypoint ?? {})},
  }
  // `failure: undefined` passed explicitly clears a configured failure.
  if (waypoint && 'failure' in waypoint && waypoint.failure === undefined) delete merged.waypoint.failure
  if (merged.podStartupMs < 0) throw new Error('podStartupMs must be >= 0')
  return merged
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>
}
