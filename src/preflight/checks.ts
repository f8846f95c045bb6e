// The preflight checks (SPEC §6 step 1, DOMAIN §4.4): one function per id of PREFLIGHT_CHECKS, each
// reading the live cluster through KubeClient and returning typed diagnostics. Reads are shared
// between checks (ClusterReads memoises them), so a full preflight costs one request per kind.
import {parse as parseYaml} from 'yaml'

import {KubeApiError} from '../kube/errors.js'
import type {KubeClient, ListOptions} from '../kube/types.js'
import {buildInventory} from '../planner/inventory.js'
import type {Finding, Inventory, KubeObject, SourceSnapshot} from '../planner/model.js'
import {analyzeInjectionWebhooks, DATAPLANE_MODE_LABEL, REVISION_LABEL} from '../planner/namespace.js'
import type {MigrationPlan} from '../planner/plan-types.js'
import {formatRef} from '../planner/refs.js'
import {GATEWAY_MANAGED, ISTIO_PROXY, podProxyState, WAYPOINT_CONTROLLER} from '../planner/workloads.js'
import {WAYPOINT_CLASS} from '../planner/waypoint.js'
import {ClusterSource, mapLimit} from '../sources/cluster.js'
import {daemonSetCoverage} from './daemonset.js'
import {analyzeNetworkPolicies, HBONE_PORT, PROBE_SOURCE_V4, podEndpoint, type PodEndpoint} from '../planner/network-policy.js'
import {type AccessNeed, planAccessNeeds} from './rbac.js'
import type {PreflightCheckId, PreflightDiagnostic} from './types.js'

export interface PreflightInput {
  client: KubeClient
  namespace: string
  rootNamespace: string
  /** The plan whose RBAC needs and blockers are checked (and whose waypoint decides severities). */
  plan?: MigrationPlan
  /** The live inventory, when the caller has just built one (saves reading the cluster again). */
  inventory?: Inventory
  /** The snapshot that inventory was built from: its lists are reused instead of listing again. */
  snapshot?: SourceSnapshot
}

const WAYPOINT_CONTROLLER_NAME = 'istio.io/mesh-controller'
const TUNNEL_LABEL = 'networking.istio.io/tunnel'
const TLS_MODE_LABEL = 'security.istio.io/tlsMode'

const isForbidden = (error: unknown): boolean => error instanceof KubeApiError && error.status === 403

/** A read that may be forbidden: undefined instead of a 403. */
async function soft<T>(read: Promise<T>): Promise<T | undefined> {
  try {
    return await read
  } catch (error) {
    if (isForbidden(error)) return undefined
    throw error
  }
}

/** The cluster reads the checks share, each done once. */
export class ClusterReads {
  private readonly memo = new Map<string, Promise<unknown>>()

  constructor(readonly input: PreflightInput) {
    if (input.snapshot) this.seed(input.snapshot)
  }

  /** What the cluster source already listed (same kinds, same scopes) needs no second LIST. */
  private seed(snapshot: SourceSnapshot): void {
    const missing = new Set(snapshot.missingKinds.map((m) => m.kind))
    const of = (kind: string, namespace?: string) => snapshot.objects.filter((o) => o.kind === kind && (namespace === undefined || o.metadata.namespace === namespace))
    const seed = (key: string, kind: string, value: unknown) => {
      if (!missing.has(kind)) this.memo.set(key, Promise.resolve(value))
    }
    const ns = this.input.namespace
    seed(`list/v1/Pod/${ns}/`, 'Pod', of('Pod', ns))
    seed(`list/networking.k8s.io/v1/NetworkPolicy/${ns}/`, 'NetworkPolicy', of('NetworkPolicy', ns))
    seed('list/admissionregistration.k8s.io/v1/MutatingWebhookConfiguration/*/', 'MutatingWebhookConfiguration', of('MutatingWebhookConfiguration'))
    seed(`list/v1/ConfigMap/${this.input.rootNamespace}/`, 'ConfigMap', of('ConfigMap', this.input.rootNamespace))
    seed(`list/v1/Service/${ns}/`, 'Service', of('Service', ns))
    const namespace = snapshot.objects.find((o) => o.kind === 'Namespace' && o.metadata.name === ns)
    if (namespace) this.memo.set(`get/v1/Namespace//${ns}`, Promise.resolve(namespace))
  }

  private once<T>(key: string, read: () => Promise<T>): Promise<T> {
    let p = this.memo.get(key) as Promise<T> | undefined
    if (!p) {
      p = read()
      this.memo.set(key, p)
    }
    return p
  }

  /** Objects of a kind; [] when the cluster does not serve it. */
  list(apiVersion: string, kind: string, opts: ListOptions = {}): Promise<KubeObject[]> {
    return this.once(`list/${apiVersion}/${kind}/${opts.namespace ?? '*'}/${opts.labelSelector ?? ''}`, async () => {
      const resource = await this.input.client.resourceFor(apiVersion, kind)
      return resource ? this.input.client.list(resource, opts) : []
    })
  }

  get(ref: {apiVersion: string; kind: string; namespace?: string; name: string}): Promise<KubeObject | undefined> {
    return this.once(`get/${ref.apiVersion}/${ref.kind}/${ref.namespace ?? ''}/${ref.name}`, () => this.input.client.get(ref))
  }

  namespaceObject(): Promise<KubeObject | undefined> {
    return this.get({apiVersion: 'v1', kind: 'Namespace', name: this.input.namespace})
  }

  rootDeployments(): Promise<KubeObject[]> {
    return this.list('apps/v1', 'Deployment', {namespace: this.input.rootNamespace})
  }

  rootConfigMaps(): Promise<KubeObject[]> {
    return this.list('v1', 'ConfigMap', {namespace: this.input.rootNamespace})
  }

  daemonSets(namespace: string): Promise<KubeObject[]> {
    return this.list('apps/v1', 'DaemonSet', {namespace})
  }

  allDaemonSets(): Promise<KubeObject[]> {
    return this.list('apps/v1', 'DaemonSet')
  }

  pods(namespace: string): Promise<KubeObject[]> {
    return this.list('v1', 'Pod', {namespace})
  }

  nodes(): Promise<KubeObject[]> {
    return this.list('v1', 'Node')
  }

  webhooks(): Promise<KubeObject[]> {
    return this.list('admissionregistration.k8s.io/v1', 'MutatingWebhookConfiguration')
  }

  /** Every sidecar pod of the mesh: one cluster-wide LIST with a label selector. */
  meshSidecarPods(): Promise<KubeObject[]> {
    return this.list('v1', 'Pod', {labelSelector: `${TLS_MODE_LABEL}=istio`})
  }

  networkPolicies(): Promise<KubeObject[]> {
    return this.list('networking.k8s.io/v1', 'NetworkPolicy', {namespace: this.input.namespace})
  }

  /** The live inventory of the namespace (the planner's blockers, from the cluster as it is now). */
  liveInventory(): Promise<Inventory> {
    return this.once('inventory', async () => {
      if (this.input.inventory) return this.input.inventory
      const source = await ClusterSource.open(this.input.client)
      const snapshot = await source.snapshot(this.input.namespace, {rootNamespace: this.input.rootNamespace})
      return buildInventory(snapshot, {waypointFor: this.input.plan?.spec.options.waypointFor ?? 'service'})
    })
  }
}

export interface CheckContext {
  input: PreflightInput
  reads: ClusterReads
}

type Diag = Omit<PreflightDiagnostic, 'check'>

// ---------------------------------------------------------------------------------------------
// Istio control plane: which istiod serves the namespace, and its version

export interface IstioVersion {
  major: number
  minor: number
  patch?: number
  /** As written in the image tag. */
  text: string
}

/** "docker.io/istio/pilot:1.28.1-distroless" → 1.28.1; digests and non-version tags give undefined. */
export function istioVersionFromImage(image: string | undefined): IstioVersion | undefined {
  if (!image || image.includes('@')) return undefined
  const tag = image.slice(image.lastIndexOf(':') + 1)
  const match = /^v?(\d+)\.(\d+)(?:\.(\d+))?/.exec(tag)
  if (!match || image.lastIndexOf(':') < image.lastIndexOf('/')) return undefined
  return {major: Number(match[1]), minor: Number(match[2]), ...(match[3] !== undefined ? {patch: Number(match[3])} : {}), text: tag}
}

export interface IstiodChoice {
  /** istiod Deployments found in the root namespace. */
  candidates: KubeObject[]
  /** The revision the namespace is served by ("default" unless istio.io/rev says otherwise). */
  revision: string
  /** How the revision was derived, for messages. */
  why: string
  istiod?: KubeObject
}

const istiodRevision = (d: KubeObject): string => d.metadata.labels?.[REVISION_LABEL] || 'default'

function isIstiod(d: KubeObject): boolean {
  return d.metadata.labels?.app === 'istiod' || d.metadata.name === 'istiod' || d.metadata.name.startsWith('istiod-')
}

/**
 * The istiod that serves the namespace: the one of its `istio.io/rev` (a revision tag resolved to its
 * revision through the injector webhooks' `istio.io/tag` labels), else the default revision. That
 * revision also owns the namespace's waypoints (DOMAIN §1.8).
 */
export function chooseIstiod(deployments: KubeObject[], namespaceLabels: Record<string, string>, tags: Record<string, string>): IstiodChoice {
  const candidates = deployments.filter(isIstiod)
  const nsRev = namespaceLabels[REVISION_LABEL]
  let revision = 'default'
  let why = 'the default revision'
  if (nsRev) {
    revision = tags[nsRev] ?? nsRev
    why = tags[nsRev] ? `istio.io/rev=${nsRev} (revision tag of ${revision})` : `istio.io/rev=${nsRev}`
  } else if (tags.default) {
    revision = tags.default
    why = `the "default" revision tag (revision ${revision})`
  }
  let istiod = candidates.find((d) => istiodRevision(d) === revision)
  if (!istiod && revision === 'default' && candidates.length === 1) istiod = candidates[0]
  return {candidates, revision, why, ...(istiod ? {istiod} : {})}
}

interface Container {
  name?: string
  image?: string
  env?: {name?: string; value?: string; valueFrom?: unknown}[]
  envFrom?: {configMapRef?: {name?: string}}[]
}

function mainContainer(obj: KubeObject, name: string): Container | undefined {
  const containers: Container[] = obj.spec?.template?.spec?.containers ?? []
  return containers.find((c) => c.name === name) ?? containers[0]
}

async function servingIstiod(ctx: CheckContext): Promise<IstiodChoice> {
  const [deployments, ns, webhooks] = await Promise.all([ctx.reads.rootDeployments(), ctx.reads.namespaceObject(), soft(ctx.reads.webhooks())])
  const tags = analyzeInjectionWebhooks(webhooks ?? []).webhooks.tags
  return chooseIstiod(deployments, ns?.metadata.labels ?? {}, tags)
}

function noIstiod(ctx: CheckContext, choice: IstiodChoice): Diag {
  const root = ctx.input.rootNamespace
  if (choice.candidates.length === 0) {
    return {
      severity: 'error',
      code: 'IstiodNotFound',
      message: `No istiod Deployment in the root namespace ${root}: Istio is not installed there.`,
      fix: `Install Istio with the ambient profile, or pass --root-namespace if the control plane lives elsewhere.`,
    }
  }
  return {
    severity: 'error',
    code: 'IstiodRevisionNotFound',
    message: `Namespace ${ctx.input.namespace} is served by ${choice.why}, but no istiod of revision "${choice.revision}" runs in ${root} (found: ${choice.candidates.map((d) => `${d.metadata.name} (revision ${istiodRevision(d)})`).join(', ')}).`,
    fix: 'Install that revision, or point the namespace at an installed one (istio.io/rev); `istioctl tag list` shows the tags.',
  }
}

export async function checkIstioVersion(ctx: CheckContext): Promise<Diag[]> {
  const choice = await servingIstiod(ctx)
  if (!choice.istiod) return [noIstiod(ctx, choice)]
  const istiod = choice.istiod
  const image = mainContainer(istiod, 'discovery')?.image
  const version = istioVersionFromImage(image)
  const who = `${istiod.metadata.name} in ${ctx.input.rootNamespace} (${choice.why})`
  if (!version) {
    return [{
      severity: 'warning',
      code: 'IstioVersionUnknown',
      message: `Cannot tell the Istio version of ${who} from its image ${image ?? '(none)'}.`,
      fix: 'Check it with `istioctl version`; ambient needs Istio 1.24 or later (1.25+ recommended). Pass --istio-version to plan so classification uses it.',
    }]
  }
  const v = `${version.major}.${version.minor}${version.patch !== undefined ? `.${version.patch}` : ''}`
  if (version.major < 1 || (version.major === 1 && version.minor < 24)) {
    return [{
      severity: 'error',
      code: 'IstioTooOld',
      message: `${who} runs Istio ${v}; ambient mode is GA (ztunnel, waypoints, stable APIs) only from 1.24.`,
      fix: 'Upgrade the control plane to 1.24 or later (1.25+ recommended) with the ambient profile before migrating.',
    }]
  }
  // DOMAIN §0.1/10, E16: how ztunnel treats istio.io/dry-run AuthorizationPolicies changed in 1.29.
  const dryRun = version.major === 1 && version.minor <= 28
    ? 'ztunnel enforces istio.io/dry-run AuthorizationPolicies on this version'
    : 'ztunnel ignores istio.io/dry-run AuthorizationPolicies unless istiod sets AMBIENT_ENABLE_DRY_RUN_AUTHORIZATION_POLICY=true'
  if (version.major === 1 && version.minor === 24) {
    return [{
      severity: 'warning',
      code: 'IstioVersion124',
      message: `${who} runs Istio ${v}: ambient works, but ztunnel only honours from.source.serviceAccounts and merges portLevelMtls from 1.25 on; ${dryRun}.`,
      fix: 'Upgrade to 1.25 or later before migrating namespaces whose policies use serviceAccounts or port-level mTLS.',
    }]
  }
  return [{severity: 'ok', code: 'IstioVersion', message: `${who} runs Istio ${v} (≥ 1.25); ${dryRun}.`}]
}

// ---------------------------------------------------------------------------------------------

function envValue(container: Container | undefined, name: string): {value?: string; fromRef?: boolean} {
  const entry = (container?.env ?? []).find((e) => e.name === name)
  if (!entry) return {}
  if (entry.valueFrom !== undefined) return {fromRef: true}
  return {value: entry.value ?? ''}
}

export async function checkAmbientEnabled(ctx: CheckContext): Promise<Diag[]> {
  const choice = await servingIstiod(ctx)
  if (!choice.istiod) return [noIstiod(ctx, choice)]
  const istiod = choice.istiod
  const out: Diag[] = []
  const ambient = envValue(mainContainer(istiod, 'discovery'), 'PILOT_ENABLE_AMBIENT')
  if (ambient.fromRef) {
    out.push({
      severity: 'warning',
      code: 'AmbientSettingUnreadable',
      message: `${istiod.metadata.name} takes PILOT_ENABLE_AMBIENT from a reference (valueFrom); cannot tell whether ambient is enabled.`,
      fix: 'Check `kubectl -n istio-system exec deploy/istiod -- env | grep PILOT_ENABLE_AMBIENT`.',
    })
  } else if ((ambient.value ?? '').toLowerCase() !== 'true') {
    out.push({
      severity: 'error',
      code: 'AmbientNotEnabled',
      message: `${istiod.metadata.name} in ${ctx.input.rootNamespace} does not run with PILOT_ENABLE_AMBIENT=true (${ambient.value === undefined ? 'not set' : `set to "${ambient.value}"`}): it pushes no configuration to ztunnel and runs no waypoints.`,
      fix: 'Upgrade the control plane with the ambient profile (`istioctl upgrade --set profile=ambient`, or `helm upgrade istiod istio/istiod --set profile=ambient`); beware that the istioctl ambient profile removes istio-ingressgateway unless you keep it explicitly (components.ingressGateways[name=istio-ingressgateway].enabled=true).',
    })
    out.push(...(await installSideEffects(ctx)))
  } else {
    out.push({severity: 'ok', code: 'AmbientEnabled', message: `${istiod.metadata.name} runs with PILOT_ENABLE_AMBIENT=true.`})
  }

  // The ambient profile also sets meshConfig.defaultConfig.proxyMetadata.ISTIO_META_ENABLE_HBONE so
  // that newly injected sidecars accept HBONE (DOMAIN §4.1, §4.4 "HBONE metadata").
  const configMaps = await soft(ctx.reads.rootConfigMaps())
  const meshConfigName = choice.revision === 'default' ? 'istio' : `istio-${choice.revision}`
  const meshConfig = configMaps?.find((c) => c.metadata.name === meshConfigName) ?? configMaps?.find((c) => c.metadata.name === 'istio')
  const meshText = (meshConfig?.data as Record<string, string> | undefined)?.mesh
  if (meshText !== undefined) {
    let hbone: unknown
    try {
      hbone = (parseYaml(meshText) as {defaultConfig?: {proxyMetadata?: Record<string, unknown>}} | null)?.defaultConfig?.proxyMetadata?.ISTIO_META_ENABLE_HBONE
    } catch {
      hbone = undefined
    }
    if (String(hbone).toLowerCase() !== 'true') {
      out.push({
        severity: 'warning',
        code: 'HboneMetadataMissing',
        message: `Mesh config ConfigMap ${ctx.input.rootNamespace}/${meshConfig!.metadata.name} does not set defaultConfig.proxyMetadata.ISTIO_META_ENABLE_HBONE="true": sidecars injected from now on cannot receive HBONE from waypoints and ambient clients.`,
        fix: 'Install with the ambient profile (it sets this), then restart sidecar workloads mesh-wide.',
      })
    }
  }
  out.push(...(await multiclusterDiagnostics(ctx, istiod)))
  if (waypointNeeded(ctx)) out.push(...(await waypointAuthorizationFlags(ctx, istiod)))
  return out
}

/**
 * E21 and DOMAIN §3.1: two istiod flags change what a waypoint binding does to authorization, and the
 * plan (its companions and its simulation) assumes both are off, as by default.
 * PILOT_AUTO_ALLOW_WAYPOINT_POLICY=true adds a synthetic ALLOW of the waypoint to every bound workload:
 * unless other ALLOW policies admit them, callers that do not go through the waypoint — every sidecar
 * client, which never uses waypoints — are denied from bind-waypoint on.
 * ENABLE_LAYERED_WAYPOINT_AUTHORIZATION_POLICIES=true enforces selector policies as L4 policies in front of
 * the waypoint as well, which the simulation does not model.
 */
async function waypointAuthorizationFlags(ctx: CheckContext, istiod: KubeObject): Promise<Diag[]> {
  const discovery = mainContainer(istiod, 'discovery')
  const on = (name: string) => (envValue(discovery, name).value ?? '').toLowerCase() === 'true'
  const out: Diag[] = []
  if (on('PILOT_AUTO_ALLOW_WAYPOINT_POLICY')) {
    const mesh = await soft(ctx.reads.meshSidecarPods())
    const callers = new Set((mesh ?? []).filter((p) => p.metadata.namespace !== ctx.input.namespace && isLive(p) && hasSidecar(p)).map((p) => p.metadata.namespace!))
    const known = mesh !== undefined
    out.push({
      severity: !known || callers.size > 0 ? 'error' : 'warning',
      code: 'AutoAllowWaypointPolicy',
      message: `${istiod.metadata.name} runs with PILOT_AUTO_ALLOW_WAYPOINT_POLICY=true: from bind-waypoint on, every bound workload of ${ctx.input.namespace} only admits traffic through the waypoint unless another ALLOW policy admits it, and sidecar clients never use waypoints — ${known ? (callers.size > 0 ? `sidecar pods run in ${callers.size} other namespace(s) (${listNames([...callers].sort(), 5)}) and would be denied` : 'no sidecar pod runs in another namespace now, but any that appears is denied') : 'whether sidecar clients run elsewhere could not be read (pods are not listable cluster-wide)'}.`,
      fix: 'Migrate the calling namespaces first, or add ALLOW policies that admit their identities at ztunnel, or run istiod with PILOT_AUTO_ALLOW_WAYPOINT_POLICY=false (the default) while migrating.',
    })
  }
  if (on('ENABLE_LAYERED_WAYPOINT_AUTHORIZATION_POLICIES')) {
    out.push({
      severity: 'warning',
      code: 'LayeredWaypointAuthorization',
      message: `${istiod.metadata.name} runs with ENABLE_LAYERED_WAYPOINT_AUTHORIZATION_POLICIES=true: selector-based policies of bound workloads are also enforced, as L4 policies, in front of the waypoint. The plan's step-by-step simulation (show --timeline) assumes the default (false), so between bind-waypoint and delete-sidecar-policies the selector originals may restrict waypoint traffic in ways it does not show.`,
      fix: 'Run istiod with the default (false) while migrating, or run bind-waypoint through delete-sidecar-policies in one sitting and watch for denied requests.',
    })
  }
  return out
}

/**
 * E17: the install that enables ambient has side effects of its own. `istioctl install/upgrade --set
 * profile=ambient` over a default-profile install prunes the gateways istioctl installed (the ambient
 * profile has none), and the Helm ambient profile switches images to distroless.
 */
async function installSideEffects(ctx: CheckContext): Promise<Diag[]> {
  const gateways = (await ctx.reads.rootDeployments()).filter((d) => d.metadata.labels?.['operator.istio.io/component'] === 'IngressGateways')
  if (gateways.length === 0) return []
  const names = gateways.map((d) => d.metadata.name)
  return [{
    severity: 'warning',
    code: 'AmbientProfilePrunesGateways',
    message: `istioctl installed ${listNames(names)} in ${ctx.input.rootNamespace}: upgrading this install with \`--set profile=ambient\` removes ${names.length === 1 ? 'it' : 'them'} (the ambient profile has no ingress gateway), cutting ingress traffic.`,
    fix: `Keep ${names.length === 1 ? 'it' : 'them'} explicitly in the IstioOperator you install with (components.ingressGateways: [{name: ${names[0]}, enabled: true}]), or move ${names.length === 1 ? 'it' : 'them'} to a separately managed gateway first; with Helm, note that the ambient profile also switches images to distroless (global.variant).`,
  }]
}

/** The default CLUSTER_ID of a single-cluster install (values.global.multiCluster.clusterName unset). */
const DEFAULT_CLUSTER_ID = 'Kubernetes'
const NETWORK_LABEL = 'topology.istio.io/network'
const GLOBAL_SERVICE_LABEL = 'istio.io/global'

/**
 * E20: ambient multicluster is alpha (1.27+) and multi-primary multi-network only, and it changes what
 * crosses clusters: sidecar multicluster merges every Service's endpoints across clusters by default,
 * ambient only those of Services labelled istio.io/global=true, with identically named waypoints in each
 * cluster. A plan computed from one cluster cannot carry that, so a namespace that is set up for ambient
 * multicluster is refused; an install that only looks multicluster (cluster name or network set) warns.
 */
async function multiclusterDiagnostics(ctx: CheckContext, istiod: KubeObject): Promise<Diag[]> {
  const discovery = mainContainer(istiod, 'discovery')
  const clusterId = envValue(discovery, 'CLUSTER_ID').value
  const multiNetwork = (envValue(discovery, 'AMBIENT_ENABLE_MULTI_NETWORK').value ?? '').toLowerCase() === 'true'
  const [root, services] = await Promise.all([
    soft(ctx.reads.get({apiVersion: 'v1', kind: 'Namespace', name: ctx.input.rootNamespace})),
    soft(ctx.reads.list('v1', 'Service', {namespace: ctx.input.namespace})),
  ])
  const network = root?.metadata.labels?.[NETWORK_LABEL]
  const global = (services ?? []).filter((s) => s.metadata.labels?.[GLOBAL_SERVICE_LABEL] !== undefined).map((s) => s.metadata.name)
  const strong = [
    multiNetwork ? `${istiod.metadata.name} runs with AMBIENT_ENABLE_MULTI_NETWORK=true` : '',
    global.length > 0 ? `Service(s) ${listNames(global)} of ${ctx.input.namespace} carry ${GLOBAL_SERVICE_LABEL} (ambient multicluster scope)` : '',
  ].filter((s) => s !== '')
  const weak = [
    clusterId && clusterId !== DEFAULT_CLUSTER_ID ? `${istiod.metadata.name} names this cluster "${clusterId}" (CLUSTER_ID)` : '',
    network ? `namespace ${ctx.input.rootNamespace} sets ${NETWORK_LABEL}=${network}` : '',
  ].filter((s) => s !== '')
  if (strong.length > 0) {
    return [{
      severity: 'error',
      code: 'AmbientMulticluster',
      message: `Namespace ${ctx.input.namespace} is set up for ambient multicluster: ${[...strong, ...weak].join('; ')}. Ambient multicluster is alpha (Istio 1.27+, multi-primary multi-network only): only Services labelled ${GLOBAL_SERVICE_LABEL}=true are reachable across clusters, waypoints must exist with the same name in every cluster and L7 policy is enforced in the destination cluster. A plan made from one cluster cannot keep the other clusters consistent.`,
      fix: `Migrate this namespace by hand, in every cluster together, following istio.io's ambient multicluster guide (docs/ambient/install/multicluster); mesh-migrate refuses multicluster namespaces.`,
    }]
  }
  if (weak.length > 0) {
    return [{
      severity: 'warning',
      code: 'PossiblyMulticluster',
      message: `This mesh may span several clusters: ${weak.join('; ')}. In sidecar multicluster every Service's endpoints are merged across clusters by default; in ambient only Services labelled ${GLOBAL_SERVICE_LABEL}=true are, primary-remote is not supported, and multicluster ambient is alpha: migrating ${ctx.input.namespace} in one cluster would cut its cross-cluster traffic.`,
      fix: 'Run `istioctl remote-clusters` (or look for Secrets labelled istio/multiCluster=true): if no other cluster shares the mesh, ignore this; otherwise do not migrate with mesh-migrate, follow istio.io\'s ambient multicluster guide.',
    }]
  }
  return []
}

// ---------------------------------------------------------------------------------------------
// ztunnel and istio-cni DaemonSets

interface DaemonSetSpec {
  check: 'ztunnel-ready' | 'istio-cni-ready'
  name: string
  /** Pod label that identifies the component when the DaemonSet was renamed. */
  labels: Record<string, string>
  title: string
  codePrefix: string
  why: string
}

const ZTUNNEL: DaemonSetSpec = {
  check: 'ztunnel-ready',
  name: 'ztunnel',
  labels: {app: 'ztunnel'},
  title: 'ztunnel',
  codePrefix: 'Ztunnel',
  why: 'pods captured on a node without a ready ztunnel have no mesh traffic',
}

const ISTIO_CNI: DaemonSetSpec = {
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

function listNames(names: string[], max = 8): string {
  return names.length <= max ? names.join(', ') : `${names.slice(0, max).join(', ')} and ${names.length - max} more`
}

async function daemonSetDiagnostics(ctx: CheckContext, spec: DaemonSetSpec): Promise<{ds?: KubeObject; diags: Diag[]}> {
  const ds = await findDaemonSet(ctx, spec)
  if (!ds) {
    return {diags: [{
      severity: 'error',
      code: `${spec.codePrefix}NotFound`,
      message: `No ${spec.title} DaemonSet (${spec.name}) in ${ctx.input.rootNamespace} or elsewhere: ambient components are not installed.`,
      fix: spec.check === 'ztunnel-ready'
        ? 'Install ztunnel (`istioctl upgrade --set profile=ambient`, or `helm install ztunnel istio/ztunnel -n istio-system`).'
        : 'Install istio-cni with ambient enabled (`istioctl upgrade --set profile=ambient`, or `helm upgrade --install istio-cni istio/cni -n istio-system --set profile=ambient`).',
    }]}
  }
  const where = `DaemonSet ${ds.metadata.namespace}/${ds.metadata.name}`
  const [nodes, pods] = await Promise.all([soft(ctx.reads.nodes()), soft(ctx.reads.pods(ds.metadata.namespace!))])
  const cov = daemonSetCoverage(ds, nodes ?? [], nodes ? pods : undefined)
  const diags: Diag[] = []
  if (cov.desired === 0) {
    diags.push({severity: 'error', code: `${spec.codePrefix}NotScheduled`, message: `${where} runs on no node (desiredNumberScheduled 0); ${spec.why}.`, fix: `Check its nodeSelector, affinity and tolerations (kubectl -n ${ds.metadata.namespace} describe ds ${ds.metadata.name}).`})
    return {ds, diags}
  }
  if (cov.nodesWithoutReadyPod && cov.nodesWithoutReadyPod.length > 0) {
    diags.push({
      severity: 'error',
      code: `${spec.codePrefix}NotReady`,
      message: `${where} has no ready pod on node(s) ${listNames(cov.nodesWithoutReadyPod)} (${cov.ready}/${cov.desired} ready); ${spec.why}.`,
      fix: `Find out why (kubectl -n ${ds.metadata.namespace} get pods -o wide -l ${Object.entries(ds.spec?.selector?.matchLabels ?? spec.labels).map(([k, v]) => `${k}=${v}`).join(',')}) and wait until it is ready on every node.`,
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
    diags.push({severity: 'warning', code: 'NodesUnreadable', message: `Nodes could not be listed (forbidden): cannot tell whether ${where} covers every node; only its status counts were checked.`, fix: 'Grant list on nodes to check node coverage.'})
  } else {
    if (cov.excludedNodes.length > 0) {
      diags.push({
        severity: 'warning',
        code: `${spec.codePrefix}NodesNotCovered`,
        message: `${where} will not run on ${cov.excludedNodes.length} Linux node(s): ${listNames(cov.excludedNodes.map((e) => `${e.node} (${e.why})`), 5)}; ambient pods scheduled there would not work.`,
        fix: 'Add the missing tolerations/node selection to the DaemonSet, or keep the namespace\'s pods off those nodes.',
      })
    }
    if (!cov.nodesWithoutReadyPod && cov.desired < cov.eligibleNodes.length) {
      diags.push({severity: 'warning', code: `${spec.codePrefix}FewerThanNodes`, message: `${where} is scheduled on ${cov.desired} node(s) but ${cov.eligibleNodes.length} node(s) match its scheduling constraints.`, fix: `kubectl -n ${ds.metadata.namespace} describe ds ${ds.metadata.name}`})
    }
  }
  if (cov.updated < cov.desired || cov.statusStale) {
    diags.push({severity: 'warning', code: `${spec.codePrefix}RolloutInProgress`, message: `${where} is rolling out (${cov.updated}/${cov.desired} pods updated${cov.statusStale ? ', the controller has not observed the latest spec yet' : ''}).`, fix: `Wait for \`kubectl -n ${ds.metadata.namespace} rollout status ds/${ds.metadata.name}\`.`})
  }
  if (!diags.some((d) => d.severity === 'error')) {
    diags.unshift({severity: 'ok', code: `${spec.codePrefix}Ready`, message: `${where} is ready on ${cov.desired} node(s)${nodes ? ` (${cov.eligibleNodes.length} eligible node(s) checked)` : ''}.`})
  }
  return {ds, diags}
}

export async function checkZtunnelReady(ctx: CheckContext): Promise<Diag[]> {
  return (await daemonSetDiagnostics(ctx, ZTUNNEL)).diags
}

/** Environment of a container as the kubelet builds it: envFrom ConfigMaps, then env (which wins). */
async function containerEnvironment(ctx: CheckContext, namespace: string, container: Container | undefined): Promise<{env: Record<string, string>; unreadable: string[]}> {
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
  const {ds, diags} = await daemonSetDiagnostics(ctx, ISTIO_CNI)
  if (!ds) return diags
  const where = `DaemonSet ${ds.metadata.namespace}/${ds.metadata.name}`
  const container = mainContainer(ds, 'install-cni')
  const {env, unreadable} = await containerEnvironment(ctx, ds.metadata.namespace!, container)
  if (env.AMBIENT_ENABLED === undefined) {
    diags.push({
      severity: unreadable.length > 0 ? 'warning' : 'error',
      code: unreadable.length > 0 ? 'IstioCniConfigUnreadable' : 'IstioCniAmbientDisabled',
      message: unreadable.length > 0
        ? `Cannot read ${unreadable.join(', ')} (the ${where} configuration): whether istio-cni has ambient enabled is unknown.`
        : `${where} has no AMBIENT_ENABLED setting: istio-cni runs without ambient support and will not capture pods.`,
      fix: 'Install istio-cni with the ambient profile (cni.ambient.enabled=true).',
    })
  } else if (env.AMBIENT_ENABLED.toLowerCase() !== 'true') {
    diags.push({severity: 'error', code: 'IstioCniAmbientDisabled', message: `${where} runs with AMBIENT_ENABLED=${env.AMBIENT_ENABLED}: istio-cni will not capture pods for ztunnel.`, fix: 'Upgrade istio-cni with the ambient profile (cni.ambient.enabled=true).'})
  }
  const excluded = (env.EXCLUDED_NAMESPACES ?? '').split(',').map((s) => s.trim()).filter(Boolean)
  if (excluded.includes(ctx.input.namespace)) {
    diags.push({
      severity: 'error',
      code: 'NamespaceExcludedByCni',
      message: `istio-cni excludes namespace ${ctx.input.namespace} (cni.excludeNamespaces: ${excluded.join(', ')}): its pods are never captured, whatever its labels say.`,
      fix: `Remove ${ctx.input.namespace} from istio-cni's excludeNamespaces, or do not migrate it.`,
    })
  }
  const okIndex = diags.findIndex((d) => d.severity === 'ok')
  if (okIndex !== -1 && diags.some((d) => d.severity === 'error')) diags.splice(okIndex, 1)
  else if (okIndex !== -1 && env.AMBIENT_ENABLED?.toLowerCase() === 'true') diags[okIndex] = {...diags[okIndex]!, message: `${diags[okIndex]!.message} Ambient is enabled (AMBIENT_ENABLED=true) and ${ctx.input.namespace} is not excluded.`}
  return diags
}

// ---------------------------------------------------------------------------------------------
// Gateway API CRDs and the waypoint GatewayClass

interface CrdRequirement {
  plural: string
  kind: string
  /** Istio's minimum bundle version (pkg/config/schema/gatewayapi/minimumversions.go); below it the kind is not watched (IST0176). */
  minimum?: string
  /** Needed by any waypoint (class, Gateway) or route. */
  required: boolean
}

const GATEWAY_API_GROUP = 'gateway.networking.k8s.io'
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
function waypointNeeded(ctx: CheckContext): boolean {
  return ctx.input.plan ? ctx.input.plan.spec.waypoints.length > 0 || ctx.input.plan.spec.summary.waypointRequired : true
}

/** Kinds the plan's inventory has objects of (they must be watched by istiod). */
function kindsInUse(ctx: CheckContext): Set<string> {
  return new Set((ctx.input.plan?.spec.inventory ?? []).filter((i) => i.ref.apiVersion.startsWith(`${GATEWAY_API_GROUP}/`)).map((i) => i.ref.kind))
}

export async function checkGatewayApiCrds(ctx: CheckContext): Promise<Diag[]> {
  const needed = waypointNeeded(ctx)
  const missingSeverity = needed ? 'error' : 'warning'
  const inUse = kindsInUse(ctx)
  const diags: Diag[] = []
  let forbidden = false
  const crds = await Promise.all(GATEWAY_API_CRDS.map(async (req) => {
    try {
      return await ctx.reads.get({apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', name: `${req.plural}.${GATEWAY_API_GROUP}`})
    } catch (error) {
      if (!isForbidden(error)) throw error
      forbidden = true
      return undefined
    }
  }))

  if (forbidden) {
    // Without read access to CRDs, discovery still tells which kinds are served, not their bundle version.
    const {resources} = await ctx.input.client.discover()
    const served = (kind: string, version?: string) => resources.some((r) => r.group === GATEWAY_API_GROUP && r.kind === kind && (!version || r.version === version))
    const missing = GATEWAY_API_CRDS.filter((r) => r.required && !served(r.kind, 'v1'))
    if (missing.length > 0) {
      diags.push({severity: missingSeverity, code: 'GatewayApiMissing', message: `The cluster does not serve ${missing.map((m) => `${m.kind} (${GATEWAY_API_GROUP}/v1)`).join(', ')}${needed ? ': the waypoint cannot be created' : ''}.`, fix: 'Install the Gateway API standard-channel CRDs (standard-install.yaml of a gateway-api release ≥ v1.4.0).'})
    }
    diags.push({severity: 'warning', code: 'GatewayApiVersionUnchecked', message: `Reading CustomResourceDefinitions is forbidden: the Gateway API kinds ${missing.length > 0 ? 'present ' : ''}were found by discovery, but their bundle versions (gateway.networking.k8s.io/bundle-version) could not be checked against Istio's minimums.`, fix: 'Grant get on customresourcedefinitions.apiextensions.k8s.io to check the versions, or check them yourself (kubectl get crd -o custom-columns=NAME:.metadata.name,VERSION:.metadata.annotations.gateway\\.networking\\.k8s\\.io/bundle-version).'})
    return diags
  }

  const present: string[] = []
  GATEWAY_API_CRDS.forEach((req, i) => {
    const crd = crds[i]
    const name = `${req.plural}.${GATEWAY_API_GROUP}`
    if (!crd) {
      if (req.required) diags.push({severity: missingSeverity, code: 'GatewayApiCrdMissing', message: `CRD ${name} is not installed${needed ? ': waypoints and routes need it' : ''}.`, fix: 'Install the Gateway API standard-channel CRDs (kubectl apply --server-side -f standard-install.yaml of a gateway-api release ≥ v1.4.0).'})
      else if (inUse.has(req.kind)) diags.push({severity: 'error', code: 'GatewayApiCrdMissing', message: `CRD ${name} is not installed, yet the plan's inventory has ${req.kind} objects.`, fix: `Install a gateway-api release ≥ ${req.minimum}.`})
      return
    }
    const bundle = crd.metadata.annotations?.[BUNDLE_VERSION]
    const servesV1 = Array.isArray(crd.spec?.versions) && crd.spec.versions.some((v: {name?: string; served?: boolean}) => v.name === 'v1' && v.served)
    present.push(`${req.kind} ${bundle ?? '(no bundle version)'}`)
    if (req.required && !servesV1) {
      diags.push({severity: missingSeverity, code: 'GatewayApiV1NotServed', message: `CRD ${name} (bundle ${bundle ?? 'unknown'}) does not serve ${GATEWAY_API_GROUP}/v1, which istiod and waypoints use.`, fix: 'Upgrade the Gateway API CRDs to a release ≥ v1.4.0.'})
    }
    if (!bundle) {
      diags.push({severity: 'warning', code: 'GatewayApiVersionUnknown', message: `CRD ${name} has no ${BUNDLE_VERSION} annotation: its version cannot be checked.`, fix: 'Install the CRDs from an official gateway-api release.'})
    } else if (req.minimum && compareBundleVersions(bundle, req.minimum) < 0) {
      const used = inUse.has(req.kind)
      diags.push({
        severity: used ? 'error' : 'warning',
        code: 'GatewayApiCrdBelowMinimum',
        message: `CRD ${name} is at ${bundle}, below Istio's minimum ${req.minimum}: istiod does not process ${req.kind} objects (istioctl analyze IST0176)${used ? ', and the plan\'s inventory has some' : ''}.`,
        fix: `Upgrade the Gateway API CRDs to ≥ ${req.minimum}.`,
      })
    }
  })
  if (!diags.some((d) => d.severity === 'error')) diags.unshift({severity: 'ok', code: 'GatewayApiCrds', message: `Gateway API CRDs present: ${present.join(', ')}.`})
  return diags
}

export async function checkWaypointGatewayClass(ctx: CheckContext): Promise<Diag[]> {
  const severity = waypointNeeded(ctx) ? 'error' : 'warning'
  const resource = await ctx.input.client.resourceFor(`${GATEWAY_API_GROUP}/v1`, 'GatewayClass')
  if (!resource) {
    return [{severity, code: 'WaypointClassMissing', message: `GatewayClass ${WAYPOINT_CLASS} cannot exist: the cluster does not serve Gateway API GatewayClasses.`, fix: 'Install the Gateway API CRDs; istiod (with PILOT_ENABLE_AMBIENT=true) then creates the class.'}]
  }
  const gc = await ctx.reads.get({apiVersion: resource.apiVersion, kind: 'GatewayClass', name: WAYPOINT_CLASS})
  if (!gc) {
    return [{severity, code: 'WaypointClassMissing', message: `GatewayClass ${WAYPOINT_CLASS} does not exist: istiod creates it when ambient is enabled, so waypoints cannot be programmed.`, fix: 'Enable ambient in istiod (PILOT_ENABLE_AMBIENT=true); it creates the class on start-up.'}]
  }
  const controller = gc.spec?.controllerName
  if (controller !== WAYPOINT_CONTROLLER_NAME) {
    return [{severity, code: 'WaypointClassWrongController', message: `GatewayClass ${WAYPOINT_CLASS} names controller ${controller ?? '(none)'}, not ${WAYPOINT_CONTROLLER_NAME}: no istiod will deploy waypoints for it.`, fix: `Delete the class and let istiod re-create it (controllerName is immutable).`}]
  }
  const accepted = (gc.status?.conditions as {type?: string; status?: string; reason?: string; message?: string}[] | undefined)?.find((c) => c.type === 'Accepted')
  if (accepted && accepted.status !== 'True') {
    return [{severity, code: 'WaypointClassNotAccepted', message: `GatewayClass ${WAYPOINT_CLASS} is not Accepted (${accepted.reason ?? 'False'}${accepted.message ? `: ${accepted.message}` : ''}).`, fix: 'Check istiod\'s logs.'}]
  }
  return [{severity: 'ok', code: 'WaypointClass', message: `GatewayClass ${WAYPOINT_CLASS} exists with controller ${WAYPOINT_CONTROLLER_NAME}${accepted ? ' and is Accepted' : ''}.`}]
}

// ---------------------------------------------------------------------------------------------
// Sidecars HBONE-capable (DOMAIN §2.3 caveat, §2.4, §4.1 step A, §4.2 (d))

function isLive(pod: KubeObject): boolean {
  const phase = pod.status?.phase
  return !pod.metadata.deletionTimestamp && phase !== 'Succeeded' && phase !== 'Failed'
}

function hasSidecar(pod: KubeObject): boolean {
  // Waypoints and Gateway API gateways run istio-proxy as the gateway itself, not as a sidecar.
  if (pod.metadata.labels?.[GATEWAY_MANAGED] !== undefined) return false
  const state = podProxyState(pod)
  // podProxyState reads the status annotation and istio-proxy containers; the injector's tlsMode label
  // also marks a sidecar pod whose containers are not visible (DOMAIN §2.4).
  return state === 'sidecar' || state === 'sidecar-native' || pod.metadata.labels?.[TLS_MODE_LABEL] === 'istio'
}

/** Label networking.istio.io/tunnel=http (set by the injector), or ISTIO_META_ENABLE_HBONE=true on istio-proxy. */
export function isHboneCapable(pod: KubeObject): boolean {
  if (pod.metadata.labels?.[TUNNEL_LABEL] === 'http') return true
  const spec = pod.spec ?? {}
  const proxies: Container[] = [...(spec.containers ?? []), ...(spec.initContainers ?? [])].filter((c: Container) => c.name === ISTIO_PROXY)
  return proxies.some((c) => (c.env ?? []).some((e) => e.name === 'ISTIO_META_ENABLE_HBONE' && (e.value ?? '').toLowerCase() === 'true'))
}

export async function checkSidecarsHbone(ctx: CheckContext): Promise<Diag[]> {
  const ns = ctx.input.namespace
  const pods = (await ctx.reads.pods(ns)).filter(isLive).filter(hasSidecar)
  const diags: Diag[] = []
  const local = pods.filter((p) => !isHboneCapable(p)).map((p) => p.metadata.name).sort()
  if (local.length > 0) {
    diags.push({
      severity: 'error',
      code: 'SidecarsNotHbone',
      message: `${local.length} of ${pods.length} sidecar pod(s) in ${ns} are not HBONE-capable (no ${TUNNEL_LABEL}=http, no ISTIO_META_ENABLE_HBONE): until they are restarted without sidecars, the waypoint and ambient clients cannot reach them: ${listNames(local)}.`,
      fix: `After the ambient profile is installed, restart them once (kubectl -n ${ns} rollout restart deployment …) so the injector adds HBONE support, then re-run preflight.`,
    })
  }
  const mesh = await soft(ctx.reads.meshSidecarPods())
  if (!mesh) {
    diags.push({severity: 'warning', code: 'MeshSidecarsUnchecked', message: 'Pods could not be listed cluster-wide (forbidden): sidecars of other namespaces were not checked for HBONE support.', fix: 'Grant cluster-wide list on pods, or check with `kubectl get pods -A -l security.istio.io/tlsMode=istio -L networking.istio.io/tunnel`.'})
  } else {
    const others = mesh.filter((p) => p.metadata.namespace !== ns && isLive(p) && hasSidecar(p) && !isHboneCapable(p))
    if (others.length > 0) {
      const byNs = new Map<string, string[]>()
      for (const p of others) byNs.set(p.metadata.namespace!, [...(byNs.get(p.metadata.namespace!) ?? []), p.metadata.name])
      const parts = [...byNs.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([n, names]) => `${n} (${names.length}: ${listNames(names.sort(), 3)})`)
      diags.push({
        severity: 'warning',
        code: 'MeshSidecarsNotHbone',
        message: `${others.length} sidecar pod(s) in ${byNs.size} other namespace(s) are not HBONE-capable: once ${ns}'s pods are ambient they cannot reach those as servers through ztunnel/waypoints: ${listNames(parts, 5)}.`,
        fix: 'Restart those workloads once now that the ambient profile is installed: the injector then adds HBONE support (networking.istio.io/tunnel=http); migrate callers only after their servers accept HBONE.',
      })
    }
  }
  if (diags.every((d) => d.severity !== 'error')) {
    diags.unshift({severity: 'ok', code: 'SidecarsHbone', message: pods.length > 0 ? `${pods.length === 1 ? 'The sidecar pod' : `All ${pods.length} sidecar pods`} in ${ns} ${pods.length === 1 ? 'is' : 'are'} HBONE-capable.` : `No sidecar pods running in ${ns}.`})
  }
  return diags
}

// ---------------------------------------------------------------------------------------------
// Blockers: the plan's, and the ones the cluster shows now (same planner rules)

export async function checkBlockers(ctx: CheckContext): Promise<Diag[]> {
  if (!(await ctx.reads.namespaceObject())) {
    return [{severity: 'error', code: 'NamespaceNotFound', message: `Namespace ${ctx.input.namespace} does not exist in context ${ctx.input.client.context}.`, fix: 'Check the namespace name and the --context.'}]
  }
  const planned: Finding[] = ctx.input.plan?.spec.blockers ?? []
  const live = (await ctx.reads.liveInventory()).findings.filter((f) => f.severity === 'blocker')
  const liveIds = new Set(live.map((f) => f.id))
  const plannedIds = new Set(planned.map((f) => f.id))
  const diags: Diag[] = []
  for (const f of planned) {
    diags.push({
      severity: 'error',
      code: f.code,
      message: `${f.message}${f.ref ? ` [${formatRef(f.ref)}]` : ''} (blocker recorded in the plan${liveIds.has(f.id) ? '' : '; not seen in the cluster any more: re-run `mesh-migrate plan`'})`,
      ...(f.fix ? {fix: f.fix} : {}),
    })
  }
  for (const f of live) {
    if (plannedIds.has(f.id)) continue
    diags.push({
      severity: 'error',
      code: f.code,
      message: `${f.message}${f.ref ? ` [${formatRef(f.ref)}]` : ''}${ctx.input.plan ? ' (new since the plan was made)' : ''}`,
      ...(f.fix ? {fix: f.fix} : {}),
    })
  }
  if (diags.length === 0) diags.push({severity: 'ok', code: 'NoBlockers', message: `No blockers (VM workloads/WorkloadEntries, PeerAuthentication DISABLE, EnvoyFilters, L7 root policies…) for ${ctx.input.namespace}.`})
  return diags
}

// ---------------------------------------------------------------------------------------------
// NetworkPolicies (DOMAIN §3.14, E25)

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
      if (w.traits.includes('host-network') || w.traits.includes('dataplane-none') || w.podLabels[DATAPLANE_MODE_LABEL] === 'none') continue
      if ((w.pods?.total ?? 0) > 0 || covered.has(JSON.stringify(w.podLabels))) continue
      endpoints.push({name: `${formatRef(w.ref)} (no running pods)`, labels: w.podLabels, ports: [], probes: []})
    }
    for (const gw of plan.spec.waypoints) {
      const name = gw.metadata.name
      if (pods.some((p) => p.metadata.labels?.['gateway.networking.k8s.io/gateway-name'] === name)) continue
      endpoints.push({
        name: `planned waypoint ${name}`,
        labels: {...(gw.metadata.labels ?? {}), 'gateway.networking.k8s.io/gateway-name': name, [GATEWAY_MANAGED]: WAYPOINT_CONTROLLER, [DATAPLANE_MODE_LABEL]: 'none', 'sidecar.istio.io/inject': 'false', 'service.istio.io/canonical-name': name},
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
  if (policies.length === 0) return [{severity: 'ok', code: 'NoNetworkPolicies', message: `No NetworkPolicies in ${ns}.`}]
  const endpoints = await ambientEndpoints(ctx)
  const issues = analyzeNetworkPolicies(policies, endpoints)
  const diags: Diag[] = issues.map((issue): Diag => issue.kind === 'hbone-blocked'
    ? {
        severity: 'error',
        code: 'NetworkPolicyBlocksHbone',
        message: `${issue.detail}: once ambient, its peers reach ${listNames(issue.pods, 5)} on TCP ${HBONE_PORT} (HBONE) and are dropped.`,
        fix: `Add {port: ${HBONE_PORT}, protocol: TCP} to spec.ingress[${issue.rule}].ports of NetworkPolicy ${ns}/${issue.policies[0]} (same peers) before enabling ambient.`,
      }
    : {
        severity: 'warning',
        code: 'NetworkPolicyBlocksProbes',
        message: `${issue.detail} (pods ${listNames(issue.pods, 5)}): on CNIs that do not exempt node-local traffic the probes fail and the pods turn unready.`,
        fix: `Add an ingress rule with from: [{ipBlock: {cidr: ${PROBE_SOURCE_V4}/32}}] for the probe ports to one of those policies.`,
      })
  if (diags.length === 0) {
    diags.push({severity: 'ok', code: 'NetworkPoliciesAdmitHbone', message: `${policies.length} NetworkPolic${policies.length === 1 ? 'y' : 'ies'} in ${ns}: none blocks TCP ${HBONE_PORT} or kubelet probes from ${PROBE_SOURCE_V4} for the ${endpoints.length} pod(s) checked.`})
  }
  return diags
}

// ---------------------------------------------------------------------------------------------
// RBAC: a SelfSubjectAccessReview for every permission the plan needs

const SSAR_CONCURRENCY = 8

export async function checkRbac(ctx: CheckContext): Promise<Diag[]> {
  const plan = ctx.input.plan
  if (!plan) {
    return [{severity: 'warning', code: 'RbacWithoutPlan', message: 'No plan to derive permissions from: RBAC was not checked.', fix: 'Pass --plan PLAN (or let preflight build the plan from the cluster).'}]
  }
  const needs = planAccessNeeds(plan)
  const resolved = await Promise.all(needs.map(async (need) => ({need, resource: await ctx.input.client.resourceFor(need.apiVersion, need.kind)})))
  const unserved = resolved.filter((r) => !r.resource)
  const reviews = await mapLimit(resolved.filter((r) => r.resource), SSAR_CONCURRENCY, async ({need, resource}) => ({
    need,
    resource: resource!,
    review: await ctx.input.client.canI({verb: need.verb, group: resource!.group, resource: resource!.plural, ...(need.namespace ? {namespace: need.namespace} : {}), ...(need.name ? {name: need.name} : {})}),
  }))
  const diags: Diag[] = []
  const unservedKinds = [...new Set(unserved.map((u) => `${u.need.kind} (${u.need.apiVersion})`))]
  if (unservedKinds.length > 0) {
    diags.push({severity: 'error', code: 'PlanKindNotServed', message: `The plan writes or reads kinds this cluster does not serve: ${unservedKinds.join(', ')}.`, fix: 'Install the missing CRDs (see gateway-api-crds), or re-plan against this cluster.'})
  }
  // Group denials per resource and namespace: one diagnostic, one Role rule to add.
  const denied = new Map<string, {resource: string; group: string; namespace?: string; verbs: Set<string>; names: Set<string>; why: Set<string>}>()
  for (const {need, resource, review} of reviews) {
    if (review.allowed) continue
    const key = `${resource.group}/${resource.plural}/${need.namespace ?? ''}`
    const entry = denied.get(key) ?? {resource: resource.plural, group: resource.group, ...(need.namespace ? {namespace: need.namespace} : {}), verbs: new Set<string>(), names: new Set<string>(), why: new Set<string>()}
    entry.verbs.add(need.verb)
    if (need.name) entry.names.add(need.name)
    for (const w of need.why) entry.why.add(w)
    denied.set(key, entry)
  }
  for (const d of denied.values()) {
    const qualified = d.group ? `${d.resource}.${d.group}` : d.resource
    const verbs = [...d.verbs].sort()
    const scope = d.namespace ? `in namespace ${d.namespace}` : 'cluster-wide'
    const names = [...d.names].sort()
    const fix = d.namespace
      ? `kubectl create role mesh-migrate -n ${d.namespace} --verb=${verbs.join(',')} --resource=${qualified} (plus a rolebinding to this identity), or an equivalent rule in an existing Role.`
      : `kubectl create clusterrole mesh-migrate-${d.resource} --verb=${verbs.join(',')} --resource=${qualified}${names.length > 0 ? ` ${names.map((n) => `--resource-name=${n}`).join(' ')}` : ''} (plus a clusterrolebinding to this identity).`
    diags.push({
      severity: 'error',
      code: 'RbacDenied',
      message: `Not allowed to ${verbs.join(', ')} ${qualified} ${scope}${names.length > 0 ? ` (${listNames(names, 5)})` : ''}; needed by ${listNames([...d.why], 4)}.`,
      fix,
    })
  }
  if (diags.length === 0) diags.push({severity: 'ok', code: 'RbacAllowed', message: `All ${reviews.length} permission(s) the plan needs (its steps, their undo, the namespace lock and the reads of verification) are granted.`})
  return diags
}

/** The check functions by id. */
export const CHECKS: Record<PreflightCheckId, (ctx: CheckContext) => Promise<Diag[]>> = {
  'istio-version': checkIstioVersion,
  'ambient-enabled': checkAmbientEnabled,
  'ztunnel-ready': checkZtunnelReady,
  'istio-cni-ready': checkIstioCniReady,
  'gateway-api-crds': checkGatewayApiCrds,
  'waypoint-gatewayclass': checkWaypointGatewayClass,
  'sidecars-hbone': checkSidecarsHbone,
  blockers: checkBlockers,
  'network-policies': checkNetworkPolicies,
  rbac: checkRbac,
}

export type {AccessNeed}
