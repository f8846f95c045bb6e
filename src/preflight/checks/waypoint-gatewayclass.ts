// Preflight check module (SPEC §6 step 1, DOMAIN §4.4). waypoint-gatewayclass: GatewayClass istio-waypoint exists, names istiod, and is Accepted.
import {renderFinding} from '../../planner/findings/finding.js'
import {GATEWAY_API_GROUP, WAYPOINT_CLASS} from '../../planner/vocab.js'
import {type CheckContext, type Diag, WAYPOINT_CONTROLLER_NAME} from './context.js'
import {waypointNeeded} from './gateway-api-crds.js'

export async function checkWaypointGatewayClass(ctx: CheckContext): Promise<Diag[]> {
  const severity = waypointNeeded(ctx) ? 'error' : 'warning'
  const resource = await ctx.input.client.resourceFor(`${GATEWAY_API_GROUP}/v1`, 'GatewayClass')
  if (!resource) {
    return [renderFinding('WaypointClassMissing', {variant: 'checkWaypointGatewayClass'}, severity)]
  }
  const gc = await ctx.reads.get({apiVersion: resource.apiVersion, kind: 'GatewayClass', name: WAYPOINT_CLASS})
  if (!gc) {
    return [renderFinding('WaypointClassMissing', {variant: 'checkWaypointGatewayClass2'}, severity)]
  }
  const controller = gc.spec?.controllerName
  if (controller !== WAYPOINT_CONTROLLER_NAME) {
    return [
      renderFinding(
        'WaypointClassWrongController',
        {value: controller ?? '(none)', wAYPOINTCONTROLLERNAME: WAYPOINT_CONTROLLER_NAME},
        severity,
      ),
    ]
  }
  const accepted = (
    gc.status?.conditions as {type?: string; status?: string; reason?: string; message?: string}[] | undefined
  )?.find((c) => c.type === 'Accepted')
  if (accepted && accepted.status !== 'True') {
    return [
      renderFinding(
        'WaypointClassNotAccepted',
        {value: accepted.reason ?? 'False', detail: accepted.message ? `: ${accepted.message}` : ''},
        severity,
      ),
    ]
  }
  return [
    renderFinding(
      'WaypointClass',
      {wAYPOINTCONTROLLERNAME: WAYPOINT_CONTROLLER_NAME, detail: accepted ? ' and is Accepted' : ''},
      'ok',
    ),
  ]
}
