// Public entry point of the fake control plane (SPEC §8). See README.md in this folder.
export {
  ApiError,
  ClusterApi,
  isConflict,
  isNotFound,
  clusterApiFromKubeconfig,
  clusterApiFromKubeconfigText,
  CONTROL_PLANE_USER_AGENT,
  type Resource,
} from './api.js'
export {ControlPlane, startControlPlane, type ControlPlaneError} from './control-plane.js'
export {NEVER_READY_ANNOTATION} from './controllers/kubelet.js'
export {
  controlPlaneObjects,
  DEFAULT_INSTALL,
  installControlPlane,
  resolveInstallOptions,
  uninstallControlPlane,
  type ComponentState,
  type InstalledControlPlane,
  type InstallOptions,
  type InstallOptionsInput,
  type RevisionInstall,
} from './install.js'
export {REDIRECTION_ANNOTATION, ambientEnrolled} from './istio/ambient.js'
export {injectionDecision, injectSidecar, SIDECAR_STATUS, type InjectionOutcome} from './istio/injector.js'
export {serviceWaypointBinding, WAYPOINT_BOUND} from './istio/waypoints.js'
export {
  DEFAULT_OPTIONS,
  type ControlPlaneOptions,
  type ControlPlaneOptionsInput,
  type PodMatcher,
  type WaypointFailure,
} from './options.js'
