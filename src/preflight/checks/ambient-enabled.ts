// Preflight check module (SPEC §6 step 1, DOMAIN §4.4). ambient-enabled: istiod runs with ambient on; waypoint authorization flags, install side effects, multicluster.
import {renderFinding} from '../../planner/findings/finding.js'
import {parse as parseYaml} from 'yaml'

import type {KubeObject} from '../../planner/model.js'
import {type CheckContext, type Diag, listNames, soft} from './context.js'
import {waypointNeeded} from './gateway-api-crds.js'
import {envValue, mainContainer, noIstiod, servingIstiod} from './istiod.js'
import {multiclusterDiagnostics} from './multicluster.js'
import {hasSidecar, isLive} from './sidecars-hbone.js'

export async function checkAmbientEnabled(ctx: CheckContext): Promise<Diag[]> {
  const choice = await servingIstiod(ctx)
  // A remote cluster of a primary-remote install runs no istiod of its own: say so rather than only "not installed".
  if (!choice.istiod) return [noIstiod(ctx, choice), ...(await multiclusterDiagnostics(ctx, undefined))]
  const istiod = choice.istiod
  const out: Diag[] = []
  const ambient = envValue(mainContainer(istiod, 'discovery'), 'PILOT_ENABLE_AMBIENT')
  if (ambient.fromRef) {
    out.push(renderFinding('AmbientSettingUnreadable', {metadataName: istiod.metadata.name}, 'warning'))
  } else if ((ambient.value ?? '').toLowerCase() !== 'true') {
    out.push(
      renderFinding(
        'AmbientNotEnabled',
        {
          metadataName: istiod.metadata.name,
          rootNamespace: ctx.input.rootNamespace,
          detail: ambient.value === undefined ? 'not set' : `set to "${ambient.value}"`,
        },
        'error',
      ),
    )
    out.push(...(await installSideEffects(ctx)))
  } else {
    out.push(renderFinding('AmbientEnabled', {metadataName: istiod.metadata.name}, 'ok'))
  }

  // The ambient profile also sets meshConfig.defaultConfig.proxyMetadata.ISTIO_META_ENABLE_HBONE so
  // that newly injected sidecars accept HBONE (DOMAIN §4.1, §4.4 "HBONE metadata").
  const configMaps = await soft(ctx.reads.rootConfigMaps())
  const meshConfigName = choice.revision === 'default' ? 'istio' : `istio-${choice.revision}`
  const meshConfig =
    configMaps?.find((c) => c.metadata.name === meshConfigName) ?? configMaps?.find((c) => c.metadata.name === 'istio')
  const meshText = (meshConfig?.data as Record<string, string> | undefined)?.mesh
  if (meshText !== undefined) {
    let hbone: unknown
    try {
      hbone = (parseYaml(meshText) as {defaultConfig?: {proxyMetadata?: Record<string, unknown>}} | null)?.defaultConfig
        ?.proxyMetadata?.ISTIO_META_ENABLE_HBONE
    } catch {
      hbone = undefined
    }
    if (String(hbone).toLowerCase() !== 'true') {
      out.push(
        renderFinding(
          'HboneMetadataMissing',
          {rootNamespace: ctx.input.rootNamespace, metadataName: meshConfig!.metadata.name},
          'warning',
        ),
      )
    }
  }
  out.push(...(await multiclusterDiagnostics(ctx, istiod)))
  if (waypointNeeded(ctx)) out.push(...(await waypointAuthorizationFlags(ctx, istiod)))
  return out
}

/**
 * E21 and DOMAIN §3.1: two istiod flags change what a waypoint binding does to authorization, and the
 * plan (its companions and its simulation) assumes both are off, as by default.
 * PILOT_AUTO_ALLOW_WAYPOINT_POLICY=true adds a synthetic ALLOW of the waypoint to every bound workload:
 * unless other ALLOW policies admit them, callers that do not go through the waypoint — every sidecar
 * client, which never uses waypoints — are denied from bind-waypoint on.
 * ENABLE_LAYERED_WAYPOINT_AUTHORIZATION_POLICIES=true enforces selector policies as L4 policies in front of
 * the waypoint as well, which the simulation does not model.
 */
async function waypointAuthorizationFlags(ctx: CheckContext, istiod: KubeObject): Promise<Diag[]> {
  const discovery = mainContainer(istiod, 'discovery')
  const on = (name: string) => (envValue(discovery, name).value ?? '').toLowerCase() === 'true'
  const out: Diag[] = []
  if (on('PILOT_AUTO_ALLOW_WAYPOINT_POLICY')) {
    const mesh = await soft(ctx.reads.meshSidecarPods())
    const callers = new Set(
      (mesh ?? [])
        .filter((p) => p.metadata.namespace !== ctx.input.namespace && isLive(p) && hasSidecar(p))
        .map((p) => p.metadata.namespace!),
    )
    const known = mesh !== undefined
    out.push(
      renderFinding(
        'AutoAllowWaypointPolicy',
        {
          metadataName: istiod.metadata.name,
          namespace: ctx.input.namespace,
          detail: known
            ? callers.size > 0
              ? `sidecar pods run in ${callers.size} other namespace(s) (${listNames([...callers].sort(), 5)}) and would be denied`
              : 'no sidecar pod runs in another namespace now, but any that appears is denied'
            : 'whether sidecar clients run elsewhere could not be read (pods are not listable cluster-wide)',
        },
        !known || callers.size > 0 ? 'error' : 'warning',
      ),
    )
  }
  if (on('ENABLE_LAYERED_WAYPOINT_AUTHORIZATION_POLICIES')) {
    out.push(renderFinding('LayeredWaypointAuthorization', {metadataName: istiod.metadata.name}, 'warning'))
  }
  return out
}

/**
 * E17: the install that enables ambient has side effects of its own. `istioctl install/upgrade --set
 * profile=ambient` over a default-profile install prunes the gateways istioctl installed (the ambient
 * profile has none), and the Helm ambient profile switches images to distroless.
 */
async function installSideEffects(ctx: CheckContext): Promise<Diag[]> {
  const gateways = (await ctx.reads.rootDeployments()).filter(
    (d) => d.metadata.labels?.['operator.istio.io/component'] === 'IngressGateways',
  )
  if (gateways.length === 0) return []
  const names = gateways.map((d) => d.metadata.name)
  const args = {gateways: listNames(names), root: ctx.input.rootNamespace, firstGateway: names[0]!}
  return [
    renderFinding(
      'AmbientProfilePrunesGateways',
      {...args, variant: names.length === 1 ? 'oneGateway' : 'gateways'},
      'warning',
    ),
  ]
}
