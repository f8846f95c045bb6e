// The preflight checks (SPEC §6 step 1, DOMAIN §4.4): one module per id of PREFLIGHT_CHECKS, each reading the
// live cluster through KubeClient and returning typed diagnostics. Reads are shared between checks
// (ClusterReads in context.ts memoises them), so a full preflight costs one request per kind.
import type {PreflightCheckId} from '../types.js'
import {checkAmbientEnabled} from './ambient-enabled.js'
import {checkBlockers} from './blockers.js'
import type {CheckContext, Diag} from './context.js'
import {checkGatewayApiCrds} from './gateway-api-crds.js'
import {checkIstioCniReady} from './istio-cni-ready.js'
import {checkIstioVersion} from './istio-version.js'
import {checkNetworkPolicies} from './network-policies.js'
import {checkRbac} from './rbac.js'
import {checkSidecarsHbone} from './sidecars-hbone.js'
import {checkWaypointGatewayClass} from './waypoint-gatewayclass.js'
import {checkZtunnelReady} from './ztunnel-ready.js'

export {type CheckContext, ClusterReads, type PreflightInput} from './context.js'
export {chooseIstiod, istioVersionFromImage} from './istiod.js'
export {compareBundleVersions} from './gateway-api-crds.js'

/** The check functions by id. */
export const CHECKS: Record<PreflightCheckId, (ctx: CheckContext) => Promise<Diag[]>> = {
  'istio-version': checkIstioVersion,
  'ambient-enabled': checkAmbientEnabled,
  'ztunnel-ready': checkZtunnelReady,
  'istio-cni-ready': checkIstioCniReady,
  'gateway-api-crds': checkGatewayApiCrds,
  'waypoint-gatewayclass': checkWaypointGatewayClass,
  'sidecars-hbone': checkSidecarsHbone,
  blockers: checkBlockers,
  'network-policies': checkNetworkPolicies,
  rbac: checkRbac,
}
