// Preflight check module (SPEC §6 step 1, DOMAIN §4.4). istio-cni-ready: the istio-cni DaemonSet is ready everywhere and captures for ambient.
import {renderFinding} from '../../planner/findings/finding.js'
import {type CheckContext, type Diag, soft} from './context.js'
import {ISTIO_CNI, daemonSetDiagnostics} from './daemonset-ready.js'
import {type Container, mainContainer} from './istiod.js'

/** Environment of a container as the kubelet builds it: envFrom ConfigMaps, then env (which wins). */
async function containerEnvironment(
  ctx: CheckContext,
  namespace: string,
  container: Container | undefined,
): Promise<{env: Record<string, string>; unreadable: string[]}> {
  const env: Record<string, string> = {}
  const unreadable: string[] = []
  for (const from of container?.envFrom ?? []) {
    const name = from.configMapRef?.name
    if (!name) continue
    const cm = await soft(ctx.reads.get({apiVersion: 'v1', kind: 'ConfigMap', namespace, name}))
    if (!cm) {
      unreadable.push(`ConfigMap ${namespace}/${name}`)
      continue
    }
    Object.assign(env, (cm.data ?? {}) as Record<string, string>)
  }
  for (const e of container?.env ?? []) if (e.name && e.valueFrom === undefined) env[e.name] = e.value ?? ''
  return {env, unreadable}
}

export async function checkIstioCniReady(ctx: CheckContext): Promise<Diag[]> {
  const {ds, diags, ready} = await daemonSetDiagnostics(ctx, ISTIO_CNI)
  if (!ds) return diags
  const where = `DaemonSet ${ds.metadata.namespace}/${ds.metadata.name}`
  const container = mainContainer(ds, 'install-cni')
  const {env, unreadable} = await containerEnvironment(ctx, ds.metadata.namespace!, container)
  if (env.AMBIENT_ENABLED === undefined) {
    diags.push(
      unreadable.length > 0
        ? renderFinding('IstioCniConfigUnreadable', {sources: unreadable, where}, 'warning')
        : renderFinding('IstioCniAmbientDisabled', {variant: 'unset', where}, 'error'),
    )
  } else if (env.AMBIENT_ENABLED.toLowerCase() !== 'true') {
    diags.push(
      renderFinding(
        'IstioCniAmbientDisabled',
        {variant: 'disabled', where, ambientEnabled: env.AMBIENT_ENABLED},
        'error',
      ),
    )
  }
  const excluded = (env.EXCLUDED_NAMESPACES ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
  if (excluded.includes(ctx.input.namespace)) {
    diags.push(renderFinding('NamespaceExcludedByCni', {namespace: ctx.input.namespace, excluded}, 'error'))
  }
  const okIndex = diags.findIndex((d) => d.severity === 'ok')
  if (okIndex !== -1 && diags.some((d) => d.severity === 'error')) diags.splice(okIndex, 1)
  else if (okIndex !== -1 && ready && env.AMBIENT_ENABLED?.toLowerCase() === 'true') {
    const namespace = ctx.input.namespace
    diags[okIndex] = renderFinding(
      'IstioCniReady',
      ready.variant === 'nodesChecked'
        ? {...ready, variant: 'nodesCheckedAmbient', namespace}
        : {...ready, variant: 'nodesUnreadAmbient', namespace},
      'ok',
    )
  }
  return diags
}
