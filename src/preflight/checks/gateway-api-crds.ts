// Preflight check module (SPEC §6 step 1, DOMAIN §4.4). gateway-api-crds: the Gateway API CRDs waypoints and routes need, at a version istiod processes.
import {GATEWAY_API_GROUP} from '../../planner/vocab.js'
import {type CheckContext, type Diag, isForbidden} from './context.js'

interface CrdRequirement {
  plural: string
  kind: string
  /** Istio's minimum bundle version (pkg/config/schema/gatewayapi/minimumversions.go); below it the kind is not watched (IST0176). */
  minimum?: string
  /** Needed by any waypoint (class, Gateway) or route. */
  required: boolean
}

const BUNDLE_VERSION = 'gateway.networking.k8s.io/bundle-version'

export const GATEWAY_API_CRDS: CrdRequirement[] = [
  {plural: 'gatewayclasses', kind: 'GatewayClass', required: true},
  {plural: 'gateways', kind: 'Gateway', required: true},
  {plural: 'httproutes', kind: 'HTTPRoute', required: true},
  {plural: 'grpcroutes', kind: 'GRPCRoute', minimum: 'v1.1.0', required: false},
  {plural: 'backendtlspolicies', kind: 'BackendTLSPolicy', minimum: 'v1.4.0', required: false},
  {plural: 'tlsroutes', kind: 'TLSRoute', minimum: 'v1.5.0', required: false},
  {plural: 'tcproutes', kind: 'TCPRoute', minimum: 'v1.6.0', required: false},
]

/** Semantic version comparison of "v1.6.1"-style bundle versions; pre-releases sort before releases. */
export function compareBundleVersions(a: string, b: string): number {
  const parse = (v: string) => {
    const m = /^v?(\d+)\.(\d+)\.(\d+)(-.+)?$/.exec(v.trim())
    return m ? {n: [Number(m[1]), Number(m[2]), Number(m[3])], pre: m[4] !== undefined} : undefined
  }
  const pa = parse(a)
  const pb = parse(b)
  if (!pa || !pb) return pa ? 1 : pb ? -1 : 0
  for (let i = 0; i < 3; i++) if (pa.n[i] !== pb.n[i]) return pa.n[i]! - pb.n[i]!
  return pa.pre === pb.pre ? 0 : pa.pre ? -1 : 1
}

/** Whether the plan deploys a waypoint (without a plan, assume it will). */
export function waypointNeeded(ctx: CheckContext): boolean {
  return ctx.input.plan
    ? ctx.input.plan.spec.waypoints.length > 0 || ctx.input.plan.spec.summary.waypointRequired
    : true
}

/** Kinds the plan's inventory has objects of (they must be watched by istiod). */
function kindsInUse(ctx: CheckContext): Set<string> {
  return new Set(
    (ctx.input.plan?.spec.inventory ?? [])
      .filter((i) => i.ref.apiVersion.startsWith(`${GATEWAY_API_GROUP}/`))
      .map((i) => i.ref.kind),
  )
}

export async function checkGatewayApiCrds(ctx: CheckContext): Promise<Diag[]> {
  const needed = waypointNeeded(ctx)
  const missingSeverity = needed ? 'error' : 'warning'
  const inUse = kindsInUse(ctx)
  const diags: Diag[] = []
  let forbidden = false
  const crds = await Promise.all(
    GATEWAY_API_CRDS.map(async (req) => {
      try {
        return await ctx.reads.get({
          apiVersion: 'apiextensions.k8s.io/v1',
          kind: 'CustomResourceDefinition',
          name: `${req.plural}.${GATEWAY_API_GROUP}`,
        })
      } catch (error) {
        if (!isForbidden(error)) throw error
        forbidden = true
        return undefined
      }
    }),
  )

  if (forbidden) {
    // Without read access to CRDs, discovery still tells which kinds are served, not their bundle version.
    const {resources} = await ctx.input.client.discover()
    const served = (kind: string, version?: string) =>
      resources.some((r) => r.group === GATEWAY_API_GROUP && r.kind === kind && (!version || r.version === version))
    const missing = GATEWAY_API_CRDS.filter((r) => r.required && !served(r.kind, 'v1'))
    if (missing.length > 0) {
      diags.push({
        severity: missingSeverity,
        code: 'GatewayApiMissing',
        message: `The cluster does not serve ${missing.map((m) => `${m.kind} (${GATEWAY_API_GROUP}/v1)`).join(', ')}${needed ? ': the waypoint cannot be created' : ''}.`,
        fix: 'Install the Gateway API standard-channel CRDs (standard-install.yaml of a gateway-api release ≥ v1.4.0).',
      })
    }
    diags.push({
      severity: 'warning',
      code: 'GatewayApiVersionUnchecked',
      message: `Reading CustomResourceDefinitions is forbidden: the Gateway API kinds ${missing.length > 0 ? 'present ' : ''}were found by discovery, but their bundle versions (gateway.networking.k8s.io/bundle-version) could not be checked against Istio's minimums.`,
      fix: 'Grant get on customresourcedefinitions.apiextensions.k8s.io to check the versions, or check them yourself (kubectl get crd -o custom-columns=NAME:.metadata.name,VERSION:.metadata.annotations.gateway\\.networking\\.k8s\\.io/bundle-version).',
    })
    return diags
  }

  const present: string[] = []
  GATEWAY_API_CRDS.forEach((req, i) => {
    const crd = crds[i]
    const name = `${req.plural}.${GATEWAY_API_GROUP}`
    if (!crd) {
      if (req.required)
        diags.push({
          severity: missingSeverity,
          code: 'GatewayApiCrdMissing',
          message: `CRD ${name} is not installed${needed ? ': waypoints and routes need it' : ''}.`,
          fix: 'Install the Gateway API standard-channel CRDs (kubectl apply --server-side -f standard-install.yaml of a gateway-api release ≥ v1.4.0).',
        })
      else if (inUse.has(req.kind))
        diags.push({
          severity: 'error',
          code: 'GatewayApiCrdMissing',
          message: `CRD ${name} is not installed, yet the plan's inventory has ${req.kind} objects.`,
          fix: `Install a gateway-api release ≥ ${req.minimum}.`,
        })
      return
    }
    const bundle = crd.metadata.annotations?.[BUNDLE_VERSION]
    const servesV1 =
      Array.isArray(crd.spec?.versions) &&
      crd.spec.versions.some((v: {name?: string; served?: boolean}) => v.name === 'v1' && v.served)
    present.push(`${req.kind} ${bundle ?? '(no bundle version)'}`)
    if (req.required && !servesV1) {
      diags.push({
        severity: missingSeverity,
        code: 'GatewayApiV1NotServed',
        message: `CRD ${name} (bundle ${bundle ?? 'unknown'}) does not serve ${GATEWAY_API_GROUP}/v1, which istiod and waypoints use.`,
        fix: 'Upgrade the Gateway API CRDs to a release ≥ v1.4.0.',
      })
    }
    if (!bundle) {
      diags.push({
        severity: 'warning',
        code: 'GatewayApiVersionUnknown',
        message: `CRD ${name} has no ${BUNDLE_VERSION} annotation: its version cannot be checked.`,
        fix: 'Install the CRDs from an official gateway-api release.',
      })
    } else if (req.minimum && compareBundleVersions(bundle, req.minimum) < 0) {
      const used = inUse.has(req.kind)
      diags.push({
        severity: used ? 'error' : 'warning',
        code: 'GatewayApiCrdBelowMinimum',
        message: `CRD ${name} is at ${bundle}, below Istio's minimum ${req.minimum}: istiod does not process ${req.kind} objects (istioctl analyze IST0176)${used ? ", and the plan's inventory has some" : ''}.`,
        fix: `Upgrade the Gateway API CRDs to ≥ ${req.minimum}.`,
      })
    }
  })
  if (!diags.some((d) => d.severity === 'error'))
    diags.unshift({severity: 'ok', code: 'GatewayApiCrds', message: `Gateway API CRDs present: ${present.join(', ')}.`})
  return diags
}
