// Preflight check module (SPEC §6 step 1, DOMAIN §4.4). gateway-api-crds: the Gateway API CRDs waypoints and routes need, at a version istiod processes.
import {renderFinding} from '../../planner/findings/finding.js'
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
      diags.push(
        renderFinding(
          'GatewayApiMissing',
          {
            missing: missing.map((m) => `${m.kind} (${GATEWAY_API_GROUP}/v1)`),
            detail: needed ? ': the waypoint cannot be created' : '',
          },
          missingSeverity,
        ),
      )
    }
    diags.push(renderFinding('GatewayApiVersionUnchecked', {detail: missing.length > 0 ? 'present ' : ''}, 'warning'))
    return diags
  }

  const present: string[] = []
  GATEWAY_API_CRDS.forEach((req, i) => {
    const crd = crds[i]
    const name = `${req.plural}.${GATEWAY_API_GROUP}`
    if (!crd) {
      if (req.required)
        diags.push(
          renderFinding(
            'GatewayApiCrdMissing',
            {variant: 'checkGatewayApiCrds', name, detail: needed ? ': waypoints and routes need it' : ''},
            missingSeverity,
          ),
        )
      else if (inUse.has(req.kind))
        diags.push(
          renderFinding(
            'GatewayApiCrdMissing',
            {variant: 'checkGatewayApiCrds2', name, kind: req.kind, minimum: String(req.minimum)},
            'error',
          ),
        )
      return
    }
    const bundle = crd.metadata.annotations?.[BUNDLE_VERSION]
    const servesV1 =
      Array.isArray(crd.spec?.versions) &&
      crd.spec.versions.some((v: {name?: string; served?: boolean}) => v.name === 'v1' && v.served)
    present.push(`${req.kind} ${bundle ?? '(no bundle version)'}`)
    if (req.required && !servesV1) {
      diags.push(renderFinding('GatewayApiV1NotServed', {name, value: bundle ?? 'unknown'}, missingSeverity))
    }
    if (!bundle) {
      diags.push(renderFinding('GatewayApiVersionUnknown', {name, bUNDLEVERSION: BUNDLE_VERSION}, 'warning'))
    } else if (req.minimum && compareBundleVersions(bundle, req.minimum) < 0) {
      const used = inUse.has(req.kind)
      diags.push(
        renderFinding(
          'GatewayApiCrdBelowMinimum',
          {
            name,
            bundle,
            minimum: req.minimum,
            kind: req.kind,
            detail: used ? ", and the plan's inventory has some" : '',
          },
          used ? 'error' : 'warning',
        ),
      )
    }
  })
  if (!diags.some((d) => d.severity === 'error')) diags.unshift(renderFinding('GatewayApiCrds', {present}, 'ok'))
  return diags
}
