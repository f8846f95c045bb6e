// Preflight check module (SPEC §6 step 1, DOMAIN §4.4). The ztunnel and istio-cni DaemonSets: found, scheduled on every eligible node, ready, not rolling out.
import {type FindingArgs, renderFinding} from '../../planner/findings/finding.js'
import type {KubeObject} from '../../planner/model.js'
import {daemonSetCoverage} from '../daemonset.js'
import {type CheckContext, type Diag, listNames, soft} from './context.js'

interface DaemonSetSpec {
  check: 'ztunnel-ready' | 'istio-cni-ready'
  name: string
  /** Pod label that identifies the component when the DaemonSet was renamed. */
  labels: Record<string, string>
  title: string
  codePrefix: 'Ztunnel' | 'IstioCni'
  why: string
}

export const ZTUNNEL: DaemonSetSpec = {
  check: 'ztunnel-ready',
  name: 'ztunnel',
  labels: {app: 'ztunnel'},
  title: 'ztunnel',
  codePrefix: 'Ztunnel',
  why: 'pods captured on a node without a ready ztunnel have no mesh traffic',
}

export const ISTIO_CNI: DaemonSetSpec = {
  check: 'istio-cni-ready',
  name: 'istio-cni-node',
  labels: {'k8s-app': 'istio-cni-node'},
  title: 'istio-cni',
  codePrefix: 'IstioCni',
  why: 'an ambient pod created on a node without a ready istio-cni agent fails to start (CNI ADD cannot reach the node agent)',
}

function matchesComponent(ds: KubeObject, spec: DaemonSetSpec): boolean {
  if (ds.metadata.name === spec.name) return true
  const templateLabels: Record<string, string> = ds.spec?.template?.metadata?.labels ?? {}
  return Object.entries(spec.labels).every(([k, v]) => templateLabels[k] === v)
}

/** The component's DaemonSet: in the root namespace, else anywhere (Sail puts them in their own namespaces). */
async function findDaemonSet(ctx: CheckContext, spec: DaemonSetSpec): Promise<KubeObject | undefined> {
  const root = await ctx.reads.daemonSets(ctx.input.rootNamespace)
  const inRoot = root.find((d) => d.metadata.name === spec.name) ?? root.find((d) => matchesComponent(d, spec))
  if (inRoot) return inRoot
  const all = await soft(ctx.reads.allDaemonSets())
  return all?.find((d) => d.metadata.name === spec.name) ?? all?.find((d) => matchesComponent(d, spec))
}

/**
 * The diagnostic `<codePrefix><suffix>` of a component. Both components' catalogue entries have the same
 * placeholders and variants (each with its own wording of why it matters), so the ztunnel code types the args.
 */
function componentDiag<S extends DiagSuffix>(
  spec: DaemonSetSpec,
  suffix: S,
  args: FindingArgs<`Ztunnel${S}`>,
  severity: 'ok' | 'warning' | 'error',
): Diag {
  return renderFinding(`${spec.codePrefix}${suffix}` as `Ztunnel${S}`, args as never, severity)
}

/** The arguments of the component's Ready diagnostic (istio-cni-ready re-renders it once it knows more). */
export type ReadyArgs = FindingArgs<'ZtunnelReady'>

type DiagSuffix =
  'NotFound' | 'NotScheduled' | 'NotReady' | 'NodesNotCovered' | 'FewerThanNodes' | 'RolloutInProgress' | 'Ready'

export async function daemonSetDiagnostics(
  ctx: CheckContext,
  spec: DaemonSetSpec,
): Promise<{ds?: KubeObject; diags: Diag[]; ready?: ReadyArgs}> {
  const ds = await findDaemonSet(ctx, spec)
  if (!ds) return {diags: [componentDiag(spec, 'NotFound', {root: ctx.input.rootNamespace}, 'error')]}
  const where = `DaemonSet ${ds.metadata.namespace}/${ds.metadata.name}`
  const at = {where, namespace: ds.metadata.namespace!, name: ds.metadata.name}
  const [nodes, pods] = await Promise.all([soft(ctx.reads.nodes()), soft(ctx.reads.pods(ds.metadata.namespace!))])
  const cov = daemonSetCoverage(ds, nodes ?? [], nodes ? pods : undefined)
  const diags: Diag[] = []
  if (cov.desired === 0) {
    diags.push(componentDiag(spec, 'NotScheduled', at, 'error'))
    return {ds, diags}
  }
  const counts = {ready: cov.ready, available: cov.available, desired: cov.desired}
  if (cov.nodesWithoutReadyPod && cov.nodesWithoutReadyPod.length > 0) {
    const selector = Object.entries(ds.spec?.selector?.matchLabels ?? spec.labels)
      .map(([k, v]) => `${k}=${v}`)
      .join(',')
    const nodesText = listNames(cov.nodesWithoutReadyPod)
    diags.push(
      componentDiag(spec, 'NotReady', {...at, ...counts, variant: 'podsMissing', nodes: nodesText, selector}, 'error'),
    )
  } else if (cov.ready < cov.desired || cov.available < cov.desired) {
    diags.push(componentDiag(spec, 'NotReady', {...at, ...counts, variant: 'notAllReady'}, 'error'))
  }
  if (!nodes) {
    diags.push(renderFinding('NodesUnreadable', {where}, 'warning'))
  } else {
    if (cov.excludedNodes.length > 0) {
      const excluded = listNames(
        cov.excludedNodes.map((e) => `${e.node} (${e.why})`),
        5,
      )
      const args = {where, nodeCount: cov.excludedNodes.length, nodes: excluded}
      diags.push(componentDiag(spec, 'NodesNotCovered', args, 'warning'))
    }
    if (!cov.nodesWithoutReadyPod && cov.desired < cov.eligibleNodes.length) {
      const args = {...at, desired: cov.desired, eligible: cov.eligibleNodes.length}
      diags.push(componentDiag(spec, 'FewerThanNodes', args, 'warning'))
    }
  }
  if (cov.updated < cov.desired || cov.statusStale) {
    const variant = cov.statusStale ? 'specNotObserved' : 'rollingOut'
    diags.push(
      componentDiag(spec, 'RolloutInProgress', {...at, variant, updated: cov.updated, desired: cov.desired}, 'warning'),
    )
  }
  if (diags.some((d) => d.severity === 'error')) return {ds, diags}
  const ready: ReadyArgs = nodes
    ? {variant: 'nodesChecked', where, desired: cov.desired, eligible: cov.eligibleNodes.length}
    : {variant: 'nodesUnread', where, desired: cov.desired}
  diags.unshift(componentDiag(spec, 'Ready', ready, 'ok'))
  return {ds, diags, ready}
}
