// Preflight check module (SPEC §6 step 1, DOMAIN §4.4). The ztunnel and istio-cni DaemonSets: found, scheduled on every eligible node, ready, not rolling out.
import {renderFinding} from '../../planner/findings/finding.js'
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

export async function daemonSetDiagnostics(
  ctx: CheckContext,
  spec: DaemonSetSpec,
): Promise<{ds?: KubeObject; diags: Diag[]}> {
  const ds = await findDaemonSet(ctx, spec)
  if (!ds) {
    return {
      diags: [
        {
          severity: 'error',
          code: `${spec.codePrefix}NotFound`,
          message: `No ${spec.title} DaemonSet (${spec.name}) in ${ctx.input.rootNamespace} or elsewhere: ambient components are not installed.`,
          fix:
            spec.check === 'ztunnel-ready'
              ? 'Install ztunnel (`istioctl upgrade --set profile=ambient`, or `helm install ztunnel istio/ztunnel -n istio-system`).'
              : 'Install istio-cni with ambient enabled (`istioctl upgrade --set profile=ambient`, or `helm upgrade --install istio-cni istio/cni -n istio-system --set profile=ambient`).',
        },
      ],
    }
  }
  const where = `DaemonSet ${ds.metadata.namespace}/${ds.metadata.name}`
  const [nodes, pods] = await Promise.all([soft(ctx.reads.nodes()), soft(ctx.reads.pods(ds.metadata.namespace!))])
  const cov = daemonSetCoverage(ds, nodes ?? [], nodes ? pods : undefined)
  const diags: Diag[] = []
  if (cov.desired === 0) {
    diags.push({
      severity: 'error',
      code: `${spec.codePrefix}NotScheduled`,
      message: `${where} runs on no node (desiredNumberScheduled 0); ${spec.why}.`,
      fix: `Check its nodeSelector, affinity and tolerations (kubectl -n ${ds.metadata.namespace} describe ds ${ds.metadata.name}).`,
    })
    return {ds, diags}
  }
  if (cov.nodesWithoutReadyPod && cov.nodesWithoutReadyPod.length > 0) {
    diags.push({
      severity: 'error',
      code: `${spec.codePrefix}NotReady`,
      message: `${where} has no ready pod on node(s) ${listNames(cov.nodesWithoutReadyPod)} (${cov.ready}/${cov.desired} ready); ${spec.why}.`,
      fix: `Find out why (kubectl -n ${ds.metadata.namespace} get pods -o wide -l ${Object.entries(
        ds.spec?.selector?.matchLabels ?? spec.labels,
      )
        .map(([k, v]) => `${k}=${v}`)
        .join(',')}) and wait until it is ready on every node.`,
    })
  } else if (cov.ready < cov.desired || cov.available < cov.desired) {
    diags.push({
      severity: 'error',
      code: `${spec.codePrefix}NotReady`,
      message: `${where} is not ready on every node: ${cov.ready} ready and ${cov.available} available of ${cov.desired} scheduled; ${spec.why}.`,
      fix: `Wait for it, or find the failing pods (kubectl -n ${ds.metadata.namespace} get pods -o wide).`,
    })
  }
  if (!nodes) {
    diags.push(renderFinding('NodesUnreadable', {where}, 'warning'))
  } else {
    if (cov.excludedNodes.length > 0) {
      diags.push({
        severity: 'warning',
        code: `${spec.codePrefix}NodesNotCovered`,
        message: `${where} will not run on ${cov.excludedNodes.length} Linux node(s): ${listNames(
          cov.excludedNodes.map((e) => `${e.node} (${e.why})`),
          5,
        )}; ambient pods scheduled there would not work.`,
        fix: "Add the missing tolerations/node selection to the DaemonSet, or keep the namespace's pods off those nodes.",
      })
    }
    if (!cov.nodesWithoutReadyPod && cov.desired < cov.eligibleNodes.length) {
      diags.push({
        severity: 'warning',
        code: `${spec.codePrefix}FewerThanNodes`,
        message: `${where} is scheduled on ${cov.desired} node(s) but ${cov.eligibleNodes.length} node(s) match its scheduling constraints.`,
        fix: `kubectl -n ${ds.metadata.namespace} describe ds ${ds.metadata.name}`,
      })
    }
  }
  if (cov.updated < cov.desired || cov.statusStale) {
    diags.push({
      severity: 'warning',
      code: `${spec.codePrefix}RolloutInProgress`,
      message: `${where} is rolling out (${cov.updated}/${cov.desired} pods updated${cov.statusStale ? ', the controller has not observed the latest spec yet' : ''}).`,
      fix: `Wait for \`kubectl -n ${ds.metadata.namespace} rollout status ds/${ds.metadata.name}\`.`,
    })
  }
  if (!diags.some((d) => d.severity === 'error')) {
    diags.unshift({
      severity: 'ok',
      code: `${spec.codePrefix}Ready`,
      message: `${where} is ready on ${cov.desired} node(s)${nodes ? ` (${cov.eligibleNodes.length} eligible node(s) checked)` : ''}.`,
    })
  }
  return {ds, diags}
}
