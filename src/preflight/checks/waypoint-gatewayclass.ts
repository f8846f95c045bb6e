// Preflight check module (SPEC §6 step 1, DOMAIN §4.4). waypoint-gatewayclass: GatewayClass istio-waypoint exists, names istiod, and is Accepted.
import {GATEWAY_API_GROUP, WAYPOINT_CLASS} from '../../planner/vocab.js'
import {type CheckContext, type Diag, WAYPOINT_CONTROLLER_NAME} from './context.js'
import {waypointNeeded} from './gateway-api-crds.js'

export async function checkWaypointGatewayClass(ctx: CheckContext): Promise<Diag[]> {
  const severity = waypointNeeded(ctx) ? 'error' : 'warning'
  const resource = await ctx.input.client.resourceFor(`${GATEWAY_API_GROUP}/v1`, 'GatewayClass')
  if (!resource) {
    return [
      {
        severity,
        code: 'WaypointClassMissing',
        message: `GatewayClass ${WAYPOINT_CLASS} cannot exist: the cluster does not serve Gateway API GatewayClasses.`,
        fix: 'Install the Gateway API CRDs; istiod (with PILOT_ENABLE_AMBIENT=true) then creates the class.',
      },
    ]
  }
  const gc = await ctx.reads.get({apiVersion: resource.apiVersion, kind: 'GatewayClass', name: WAYPOINT_CLASS})
  if (!gc) {
    return [
      {
        severity,
        code: 'WaypointClassMissing',
        message: `GatewayClass ${WAYPOINT_CLASS} does not exist: istiod creates it when ambient is enabled, so waypoints cannot be programmed.`,
        fix: 'Enable ambient in istiod (PILOT_ENABLE_AMBIENT=true); it creates the class on start-up.',
      },
    ]
  }
  const controller = gc.spec?.controllerName
  if (controller !== WAYPOINT_CONTROLLER_NAME) {
    return [
      {
        severity,
        code: 'WaypointClassWrongController',
        message: `GatewayClass ${WAYPOINT_CLASS} names controller ${controller ?? '(none)'}, not ${WAYPOINT_CONTROLLER_NAME}: no istiod will deploy waypoints for it.`,
        fix: `Delete the class and let istiod re-create it (controllerName is immutable).`,
      },
    ]
  }
  const accepted = (
    gc.status?.conditions as {type?: string; status?: string; reason?: string; message?: string}[] | undefined
  )?.find((c) => c.type === 'Accepted')
  if (accepted && accepted.status !== 'True') {
    return [
      {
        severity,
        code: 'WaypointClassNotAccepted',
        message: `GatewayClass ${WAYPOINT_CLASS} is not Accepted (${accepted.reason ?? 'False'}${accepted.message ? `: ${accepted.message}` : ''}).`,
        fix: "Check istiod's logs.",
      },
    ]
  }
  return [
    {
      severity: 'ok',
      code: 'WaypointClass',
      message: `GatewayClass ${WAYPOINT_CLASS} exists with controller ${WAYPOINT_CONTROLLER_NAME}${accepted ? ' and is Accepted' : ''}.`,
    },
  ]
}
