// Preflight check module (SPEC §6 step 1, DOMAIN §4.4). network-policies: NetworkPolicies admit HBONE (TCP 15008) and kubelet probes once ambient (DOMAIN §3.14, E25).
import {renderFinding} from '../../planner/findings/finding.js'
import {formatRef} from '../../planner/refs.js'
import {WAYPOINT_CONTROLLER} from '../../planner/workloads.js'
import {
  analyzeNetworkPolicies,
  HBONE_PORT,
  PROBE_SOURCE_V4,
  podEndpoint,
  type PodEndpoint,
} from '../../planner/network-policy.js'
import {DATAPLANE_MODE_LABEL, GATEWAY_MANAGED} from '../../planner/vocab.js'
import {type CheckContext, type Diag, listNames} from './context.js'
import {isLive} from './sidecars-hbone.js'

const isWaypointPod = (labels: Record<string, string>): boolean => labels[GATEWAY_MANAGED] === WAYPOINT_CONTROLLER

/** The pods whose ingress changes with the migration: every live pod that will be in the mesh, and the planned waypoint. */
async function ambientEndpoints(ctx: CheckContext): Promise<PodEndpoint[]> {
  const pods = (await ctx.reads.pods(ctx.input.namespace)).filter(isLive)
  const endpoints: PodEndpoint[] = []
  for (const pod of pods) {
    const labels = pod.metadata.labels ?? {}
    if (isWaypointPod(labels)) {
      // Waypoints receive HBONE too; they are not captured, so their probes come from the node as before.
      endpoints.push({...podEndpoint(pod.metadata.name, pod.metadata, pod.spec), probes: []})
      continue
    }
    // Never captured (E6), or deliberately kept out of ambient.
    if (pod.spec?.hostNetwork === true || labels[DATAPLANE_MODE_LABEL] === 'none') continue
    endpoints.push(podEndpoint(pod.metadata.name, pod.metadata, pod.spec))
  }
  const plan = ctx.input.plan
  if (plan) {
    // Workloads without running pods (scaled to zero, plans from manifests): their pod labels still decide selection.
    const covered = new Set(endpoints.map((e) => JSON.stringify(e.labels)))
    for (const w of plan.spec.workloads) {
      if (
        w.traits.includes('host-network') ||
        w.traits.includes('dataplane-none') ||
        w.podLabels[DATAPLANE_MODE_LABEL] === 'none'
      )
        continue
      if ((w.pods?.total ?? 0) > 0 || covered.has(JSON.stringify(w.podLabels))) continue
      endpoints.push({name: `${formatRef(w.ref)} (no running pods)`, labels: w.podLabels, ports: [], probes: []})
    }
    for (const gw of plan.spec.waypoints) {
      const name = gw.metadata.name
      if (pods.some((p) => p.metadata.labels?.['gateway.networking.k8s.io/gateway-name'] === name)) continue
      endpoints.push({
        name: `planned waypoint ${name}`,
        labels: {
          ...(gw.metadata.labels ?? {}),
          'gateway.networking.k8s.io/gateway-name': name,
          [GATEWAY_MANAGED]: WAYPOINT_CONTROLLER,
          [DATAPLANE_MODE_LABEL]: 'none',
          'sidecar.istio.io/inject': 'false',
          'service.istio.io/canonical-name': name,
        },
        ports: [],
        probes: [],
      })
    }
  }
  return endpoints
}

export async function checkNetworkPolicies(ctx: CheckContext): Promise<Diag[]> {
  const ns = ctx.input.namespace
  const policies = await ctx.reads.networkPolicies()
  if (policies.length === 0) return [renderFinding('NoNetworkPolicies', {ns}, 'ok')]
  const endpoints = await ambientEndpoints(ctx)
  const issues = analyzeNetworkPolicies(policies, endpoints)
  const diags: Diag[] = issues.map((issue): Diag =>
    issue.kind === 'hbone-blocked'
      ? renderFinding(
          'NetworkPolicyBlocksHbone',
          {
            policyRule: issue.detail,
            pods: listNames(issue.pods, 5),
            rule: issue.rule ?? 0,
            namespace: ns,
            policy: issue.policies[0] ?? '',
          },
          'error',
        )
      : renderFinding('NetworkPolicyBlocksProbes', {policies: issue.detail, pods: listNames(issue.pods, 5)}, 'warning'),
  )
  if (diags.length === 0) {
    diags.push(
      renderFinding(
        'NetworkPoliciesAdmitHbone',
        {
          policiesLength: policies.length,
          detail: policies.length === 1 ? 'y' : 'ies',
          ns,
          hBONEPORT: HBONE_PORT,
          pROBESOURCEV4: PROBE_SOURCE_V4,
          endpointsLength: endpoints.length,
        },
        'ok',
      ),
    )
  }
  return diags
}
