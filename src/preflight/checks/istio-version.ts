// Preflight check module (SPEC §6 step 1, DOMAIN §4.4). istio-version: the Istio version of the serving istiod (ambient needs >= 1.24).
import {renderFinding} from '../../planner/findings/finding.js'
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
    return [renderFinding('IstioVersionUnknown', {who, value: image ?? '(none)'}, 'warning')]
  }
  const v = `${version.major}.${version.minor}${version.patch !== undefined ? `.${version.patch}` : ''}`
  if (version.major < 1 || (version.major === 1 && version.minor < 24)) {
    return [renderFinding('IstioTooOld', {who, v}, 'error')]
  }
  // DOMAIN §0.1/10, E16: how ztunnel treats istio.io/dry-run AuthorizationPolicies changed in 1.29.
  const dryRun =
    version.major === 1 && version.minor <= 28
      ? 'ztunnel enforces istio.io/dry-run AuthorizationPolicies on this version'
      : 'ztunnel ignores istio.io/dry-run AuthorizationPolicies unless istiod sets AMBIENT_ENABLE_DRY_RUN_AUTHORIZATION_POLICY=true'
  if (version.major === 1 && version.minor === 24) {
    return [renderFinding('IstioVersion124', {who, v, dryRun}, 'warning')]
  }
  return [renderFinding('IstioVersion', {who, v, dryRun}, 'ok')]
}
