// Preflight (DOMAIN E20, issue 21 §11): is this cluster part of a multicluster mesh, and what does upstream say about
// ambient there. Read by the ambient-enabled check.
//
// Upstream, istio.io "Install Multicluster" (content/en/docs/ambient/install/multicluster/_index.md):
// - "Primary remote configuration is not currently supported … Configurations with one or more remote clusters will
//   not work correctly" (also a hard blocker of the migration guide, docs/ambient/migrate);
// - only multi-network topologies with every cluster a primary; "All clusters must have identically named waypoint
//   deployments", synchronised by hand; only Services labelled istio.io/global=true cross clusters;
// - the istio.io blog "Ambient multi-network multicluster support is now Beta" (2026, Istio 1.29): multi-network is
//   beta, single-network stays untested.
// What marks each install, from the istio/istio charts and samples:
// - a primary serving remotes: istiod env EXTERNAL_ISTIOD=true (values.global.externalIstiod,
//   manifests/charts/istio-control/istio-discovery/templates/deployment.yaml);
// - a remote: the injection webhook calls an istiod elsewhere by URL (values.istiodRemote.injectionURL,
//   templates/mutatingwebhook.yaml), values.istiodRemote.enabled or values.global.remotePilotAddress in the
//   istio-sidecar-injector ConfigMap's `values` (templates/istiod-injector-configmap.yaml);
// - multi-network: topology.istio.io/network on the root namespace, east-west gateways
//   (samples/multicluster/gen-eastwest-gateway.sh: label istio=eastwestgateway, or a Gateway of class istio-east-west).
import {renderFinding} from '../../planner/findings/finding.js'
import type {KubeObject} from '../../planner/model.js'
import {type CheckContext, type Diag, listNames, soft} from './context.js'
import {envValue, mainContainer} from './istiod.js'

/** The default CLUSTER_ID of a single-cluster install (values.global.multiCluster.clusterName unset). */
const DEFAULT_CLUSTER_ID = 'Kubernetes'
const NETWORK_LABEL = 'topology.istio.io/network'
const GLOBAL_SERVICE_LABEL = 'istio.io/global'
const EAST_WEST_CLASS = 'istio-east-west'
const EAST_WEST_LABEL = 'eastwestgateway'
const MULTICLUSTER_DOCS = 'https://istio.io/latest/docs/ambient/install/multicluster/'

interface InjectorValues {
  global?: {externalIstiod?: unknown; remotePilotAddress?: unknown}
  istiodRemote?: {enabled?: unknown; injectionURL?: unknown}
}

function injectorValues(cm: KubeObject): InjectorValues {
  const text = (cm.data as Record<string, string> | undefined)?.values
  if (!text) return {}
  try {
    return (JSON.parse(text) as InjectorValues | null) ?? {}
  } catch {
    return {}
  }
}

const isTrue = (v: unknown) => v === true || String(v).toLowerCase() === 'true'

/** What says this cluster is the primary or a remote of a primary-remote install. */
async function primaryRemoteEvidence(ctx: CheckContext, istiod: KubeObject | undefined): Promise<string[]> {
  const root = ctx.input.rootNamespace
  const [configMaps, webhooks] = await Promise.all([soft(ctx.reads.rootConfigMaps()), soft(ctx.reads.webhooks())])
  const evidence: string[] = []
  if (istiod && (envValue(mainContainer(istiod, 'discovery'), 'EXTERNAL_ISTIOD').value ?? '').toLowerCase() === 'true')
    evidence.push(`${istiod.metadata.name} runs with EXTERNAL_ISTIOD=true (it serves remote clusters)`)
  for (const cm of (configMaps ?? []).filter((c) => c.metadata.name.startsWith('istio-sidecar-injector'))) {
    const values = injectorValues(cm)
    const set = [
      isTrue(values.global?.externalIstiod) ? 'global.externalIstiod=true' : '',
      isTrue(values.istiodRemote?.enabled) ? 'istiodRemote.enabled=true' : '',
      typeof values.global?.remotePilotAddress === 'string' && values.global.remotePilotAddress !== ''
        ? `global.remotePilotAddress=${values.global.remotePilotAddress}`
        : '',
    ].filter((s) => s !== '')
    if (set.length > 0) evidence.push(`ConfigMap ${root}/${cm.metadata.name} has values ${set.join(', ')}`)
  }
  const remoteInjectors = (webhooks ?? []).filter((w) =>
    ((w.webhooks as {name?: string; clientConfig?: {url?: string}}[] | undefined) ?? []).some(
      (h) => h.name?.endsWith('sidecar-injector.istio.io') && typeof h.clientConfig?.url === 'string',
    ),
  )
  if (remoteInjectors.length > 0)
    evidence.push(
      `MutatingWebhookConfiguration ${listNames(remoteInjectors.map((w) => w.metadata.name))} injects sidecars through an istiod outside this cluster (clientConfig.url: a remote cluster)`,
    )
  return evidence
}

/** What says the mesh spans networks: the root namespace's network, east-west gateways. */
async function multiNetworkEvidence(ctx: CheckContext, root: KubeObject | undefined): Promise<string[]> {
  const rootNs = ctx.input.rootNamespace
  const [services, gateways] = await Promise.all([
    soft(ctx.reads.list('v1', 'Service', {namespace: rootNs})),
    soft(ctx.reads.list('gateway.networking.k8s.io/v1', 'Gateway', {namespace: rootNs})),
  ])
  const network = root?.metadata.labels?.[NETWORK_LABEL]
  const eastWest = [
    ...(services ?? [])
      .filter((s) => s.metadata.labels?.istio === EAST_WEST_LABEL)
      .map((s) => `Service ${s.metadata.name}`),
    ...(gateways ?? [])
      .filter((g) => (g.spec as {gatewayClassName?: string} | undefined)?.gatewayClassName === EAST_WEST_CLASS)
      .map((g) => `Gateway ${g.metadata.name}`),
  ]
  return [
    network ? `namespace ${rootNs} sets ${NETWORK_LABEL}=${network}` : '',
    eastWest.length > 0 ? `east-west gateway(s) in ${rootNs}: ${listNames(eastWest)}` : '',
  ].filter((s) => s !== '')
}

function primaryRemote(ns: string, evidence: string[]): Diag {
  return renderFinding(
    'AmbientPrimaryRemote',
    {evidence: evidence.join('; '), mULTICLUSTERDOCS: MULTICLUSTER_DOCS, ns},
    'error',
  )
}

/**
 * E20: ambient multicluster is multi-primary multi-network only (beta since 1.29), and it changes what crosses
 * clusters: sidecar multicluster merges every Service's endpoints across clusters by default, ambient only those of
 * Services labelled istio.io/global=true, with identically named waypoints in each cluster. Primary-remote is refused;
 * a namespace set up for ambient multicluster is refused (a plan made from one cluster cannot keep the others
 * consistent); a multi-network mesh warns with upstream's conditions; one that only names its cluster warns.
 */
export async function multiclusterDiagnostics(ctx: CheckContext, istiod: KubeObject | undefined): Promise<Diag[]> {
  const ns = ctx.input.namespace
  const remote = await primaryRemoteEvidence(ctx, istiod)
  if (remote.length > 0) return [primaryRemote(ns, remote)]
  if (!istiod) return []
  const discovery = mainContainer(istiod, 'discovery')
  const clusterId = envValue(discovery, 'CLUSTER_ID').value
  const ambientMultiNetwork = (envValue(discovery, 'AMBIENT_ENABLE_MULTI_NETWORK').value ?? '').toLowerCase() === 'true'
  const [root, services] = await Promise.all([
    soft(ctx.reads.get({apiVersion: 'v1', kind: 'Namespace', name: ctx.input.rootNamespace})),
    soft(ctx.reads.list('v1', 'Service', {namespace: ns})),
  ])
  const global = (services ?? [])
    .filter((s) => s.metadata.labels?.[GLOBAL_SERVICE_LABEL] !== undefined)
    .map((s) => s.metadata.name)
  const strong = [
    ambientMultiNetwork ? `${istiod.metadata.name} runs with AMBIENT_ENABLE_MULTI_NETWORK=true` : '',
    global.length > 0
      ? `Service(s) ${listNames(global)} of ${ns} carry ${GLOBAL_SERVICE_LABEL} (ambient multicluster scope)`
      : '',
  ].filter((s) => s !== '')
  const named =
    clusterId && clusterId !== DEFAULT_CLUSTER_ID
      ? [`${istiod.metadata.name} names this cluster "${clusterId}" (CLUSTER_ID)`]
      : []
  const networks = await multiNetworkEvidence(ctx, root)
  if (strong.length > 0) {
    return [
      renderFinding(
        'AmbientMulticluster',
        {
          ns,
          strong: [...strong, ...named, ...networks].join('; '),
          gLOBALSERVICELABEL: GLOBAL_SERVICE_LABEL,
          mULTICLUSTERDOCS: MULTICLUSTER_DOCS,
        },
        'error',
      ),
    ]
  }
  if (networks.length > 0) {
    return [
      renderFinding(
        'MultiNetworkMesh',
        {
          named: [...named, ...networks].join('; '),
          gLOBALSERVICELABEL: GLOBAL_SERVICE_LABEL,
          ns,
          mULTICLUSTERDOCS: MULTICLUSTER_DOCS,
        },
        'warning',
      ),
    ]
  }
  if (named.length > 0) {
    return [
      renderFinding(
        'PossiblyMulticluster',
        {named: named.join('; '), gLOBALSERVICELABEL: GLOBAL_SERVICE_LABEL, ns},
        'warning',
      ),
    ]
  }
  return []
}
