// Preflight check module (SPEC §6 step 1, DOMAIN §4.4). sidecars-hbone: sidecars of the namespace (and of the mesh) are HBONE-capable (DOMAIN §2.3 caveat, §2.4, §4.1 step A, §4.2 (d)).
import {renderFinding} from '../../planner/findings/finding.js'
import type {KubeObject} from '../../planner/model.js'
import {ISTIO_PROXY, podProxyState} from '../../planner/workloads.js'
import {GATEWAY_MANAGED, TLS_MODE_LABEL, TUNNEL_LABEL, isSidecar} from '../../planner/vocab.js'
import {type CheckContext, type Diag, listNames, soft} from './context.js'
import {type Container} from './istiod.js'
import {byCodePoint} from '../../planner/order.js'

export function isLive(pod: KubeObject): boolean {
  const phase = pod.status?.phase
  return !pod.metadata.deletionTimestamp && phase !== 'Succeeded' && phase !== 'Failed'
}

export function hasSidecar(pod: KubeObject): boolean {
  // Waypoints and Gateway API gateways run istio-proxy as the gateway itself, not as a sidecar.
  if (pod.metadata.labels?.[GATEWAY_MANAGED] !== undefined) return false
  const state = podProxyState(pod)
  // podProxyState reads the status annotation and istio-proxy containers; the injector's tlsMode label
  // also marks a sidecar pod whose containers are not visible (DOMAIN §2.4).
  return isSidecar(state) || pod.metadata.labels?.[TLS_MODE_LABEL] === 'istio'
}

/** Label networking.istio.io/tunnel=http (set by the injector), or ISTIO_META_ENABLE_HBONE=true on istio-proxy. */
export function isHboneCapable(pod: KubeObject): boolean {
  if (pod.metadata.labels?.[TUNNEL_LABEL] === 'http') return true
  const spec = pod.spec ?? {}
  const proxies: Container[] = [...(spec.containers ?? []), ...(spec.initContainers ?? [])].filter(
    (c: Container) => c.name === ISTIO_PROXY,
  )
  return proxies.some((c) =>
    (c.env ?? []).some((e) => e.name === 'ISTIO_META_ENABLE_HBONE' && (e.value ?? '').toLowerCase() === 'true'),
  )
}

export async function checkSidecarsHbone(ctx: CheckContext): Promise<Diag[]> {
  const ns = ctx.input.namespace
  const pods = (await ctx.reads.pods(ns)).filter(isLive).filter(hasSidecar)
  const diags: Diag[] = []
  const local = pods
    .filter((p) => !isHboneCapable(p))
    .map((p) => p.metadata.name)
    .sort()
  if (local.length > 0) {
    diags.push(
      renderFinding(
        'SidecarsNotHbone',
        {localLength: local.length, podsLength: pods.length, ns, listNames: listNames(local)},
        'error',
      ),
    )
  }
  const mesh = await soft(ctx.reads.meshSidecarPods())
  if (!mesh) {
    diags.push(renderFinding('MeshSidecarsUnchecked', {}, 'warning'))
  } else {
    const others = mesh.filter((p) => p.metadata.namespace !== ns && isLive(p) && hasSidecar(p) && !isHboneCapable(p))
    if (others.length > 0) {
      const byNs = new Map<string, string[]>()
      for (const p of others)
        byNs.set(p.metadata.namespace!, [...(byNs.get(p.metadata.namespace!) ?? []), p.metadata.name])
      const parts = [...byNs.entries()]
        .sort(([a], [b]) => byCodePoint(a, b))
        .map(([n, names]) => `${n} (${names.length}: ${listNames(names.sort(), 3)})`)
      diags.push(
        renderFinding(
          'MeshSidecarsNotHbone',
          {othersLength: others.length, size: byNs.size, ns, listNames: listNames(parts, 5)},
          'warning',
        ),
      )
    }
  }
  if (diags.every((d) => d.severity !== 'error')) {
    const args =
      pods.length === 0
        ? ({variant: 'noPods', ns} as const)
        : pods.length === 1
          ? ({variant: 'onePod', ns} as const)
          : ({variant: 'pods', ns, podCount: pods.length} as const)
    diags.unshift(renderFinding('SidecarsHbone', args, 'ok'))
  }
  return diags
}
