// Preflight check module (SPEC §6 step 1, DOMAIN §4.4). istio-version: the Istio version of the serving istiod (ambient needs >= 1.24).
import {type CheckContext, type Diag} from './context.js'
import {istioVersionFromImage, mainContainer, noIstiod, servingIstiod} from './istiod.js'

export async function checkIstioVersion(ctx: CheckContext): Promise<Diag[]> {
  const choice = await servingIstiod(ctx)
  if (!choice.istiod) return [noIstiod(ctx, choice)]
  const istiod = choice.istiod
  const image = mainContainer(istiod, 'discovery')?.image
  const version = istioVersionFromImage(image)
  const who = `${istiod.metadata.name} in ${ctx.input.rootNamespace} (${choice.why})`
  if (!version) {
    return [
      {
        severity: 'warning',
        code: 'IstioVersionUnknown',
        message: `Cannot tell the Istio version of ${who} from its image ${image ?? '(none)'}.`,
        fix: 'Check it with `istioctl version`; ambient needs Istio 1.24 or later (1.25+ recommended). Pass --istio-version to plan so classification uses it.',
      },
    ]
  }
  const v = `${version.major}.${version.minor}${version.patch !== undefined ? `.${version.patch}` : ''}`
  if (version.major < 1 || (version.major === 1 && version.minor < 24)) {
    return [
      {
        severity: 'error',
        code: 'IstioTooOld',
        message: `${who} runs Istio ${v}; ambient mode is GA (ztunnel, waypoints, stable APIs) only from 1.24.`,
        fix: 'Upgrade the control plane to 1.24 or later (1.25+ recommended) with the ambient profile before migrating.',
      },
    ]
  }
  // DOMAIN §0.1/10, E16: how ztunnel treats istio.io/dry-run AuthorizationPolicies changed in 1.29.
  const dryRun =
    version.major === 1 && version.minor <= 28
      ? 'ztunnel enforces istio.io/dry-run AuthorizationPolicies on this version'
      : 'ztunnel ignores istio.io/dry-run AuthorizationPolicies unless istiod sets AMBIENT_ENABLE_DRY_RUN_AUTHORIZATION_POLICY=true'
  if (version.major === 1 && version.minor === 24) {
    return [
      {
        severity: 'warning',
        code: 'IstioVersion124',
        message: `${who} runs Istio ${v}: ambient works, but ztunnel only honours from.source.serviceAccounts and merges portLevelMtls from 1.25 on; ${dryRun}.`,
        fix: 'Upgrade to 1.25 or later before migrating namespaces whose policies use serviceAccounts or port-level mTLS.',
      },
    ]
  }
  return [{severity: 'ok', code: 'IstioVersion', message: `${who} runs Istio ${v} (≥ 1.25); ${dryRun}.`}]
}
