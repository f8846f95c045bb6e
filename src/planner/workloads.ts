// Workloads of the migrated namespace and their data plane (DOMAIN §2.4, §2.6, §7 E4–E10, E23).
// Pure: objects in, WorkloadItems and findings out.
import {finding} from './findings/finding.js'
import type {
  Finding,
  KubeObject,
  LostAnnotation,
  NamespaceState,
  ObjectRef,
  OwnerReference,
  ProxyState,
  WorkloadItem,
  WorkloadTrait,
} from './model.js'
import {
  analyzeNamespace,
  gitOpsManager,
  predictInjection,
  sidecarLabelsToRemove,
  type InjectionPrediction,
  type InjectionWebhooks,
  NO_INJECTION_WEBHOOKS,
} from './namespace.js'
import {restartLimitFinding} from './restart-limits.js'
import {compareRefs, groupOf, refOf} from './refs.js'
import {isRecord, stringMap} from './json.js'
import {
  AMBIENT_REDIRECTION,
  DATAPLANE_MODE_LABEL,
  GATEWAY_MANAGED,
  INJECTION_LABEL,
  REVISION_LABEL,
  SIDECAR_INJECT,
  SIDECAR_STATUS,
  TUNNEL_LABEL,
  isSidecar,
} from './vocab.js'

export const ISTIO_PROXY = 'istio-proxy'
export const KUBE_GATEWAY_CONTROLLER = 'istio.io-gateway-controller'
export const WAYPOINT_CONTROLLER = 'istio.io-mesh-controller'
const INJECT_TEMPLATES = 'inject.istio.io/templates'
const NATIVE_SIDECAR = 'sidecar.istio.io/nativeSidecar'

/** istio-cni's default `excludeNamespaces` (never captured). */
const CNI_EXCLUDED_NAMESPACES = ['kube-system']

// ---------------------------------------------------------------------------------------------
// Kubernetes shapes read here (only the fields used)

interface Container {
  name?: string
  image?: string
  command?: string[]
  args?: string[]
  env?: {name?: string; value?: string}[]
  restartPolicy?: string
  lifecycle?: {postStart?: {exec?: {command?: string[]}}; preStop?: {exec?: {command?: string[]}}}
}

interface PodSpec {
  containers?: Container[]
  initContainers?: Container[]
  hostNetwork?: boolean
  serviceAccountName?: string
  serviceAccount?: string
}

/** A pod template, or a pod itself (same shape for what is read here). */
interface PodLike {
  metadata: {labels: Record<string, string>; annotations: Record<string, string>}
  spec: PodSpec
}

function podLike(metadata: unknown, spec: unknown): PodLike {
  const meta = (isRecord(metadata) ? metadata : {}) as {labels?: unknown; annotations?: unknown}
  return {
    metadata: {labels: stringMap(meta.labels), annotations: stringMap(meta.annotations)},
    spec: (isRecord(spec) ? spec : {}) as PodSpec,
  }
}

function containersOf(spec: PodSpec): Container[] {
  return Array.isArray(spec.containers) ? spec.containers : []
}

function initContainersOf(spec: PodSpec): Container[] {
  return Array.isArray(spec.initContainers) ? spec.initContainers : []
}

// ---------------------------------------------------------------------------------------------
// Controllers

/** Kinds that own pods through a pod template, keyed by `<group>/<kind>`. */
const TEMPLATE_PATHS: Record<string, (obj: KubeObject) => unknown> = {
  'apps/Deployment': (o) => o.spec?.template,
  'apps/StatefulSet': (o) => o.spec?.template,
  'apps/DaemonSet': (o) => o.spec?.template,
  'apps/ReplicaSet': (o) => o.spec?.template,
  'batch/Job': (o) => o.spec?.template,
  'batch/CronJob': (o) => o.spec?.jobTemplate?.spec?.template,
  'argoproj.io/Rollout': (o) => o.spec?.template,
}

function kindKey(apiVersion: string, kind: string): string {
  return `${groupOf(apiVersion)}/${kind}`
}

function isPod(obj: KubeObject): boolean {
  return obj.kind === 'Pod' && groupOf(obj.apiVersion) === ''
}

function templateOf(obj: KubeObject, index: ObjectIndex): PodLike | undefined {
  if (isPod(obj)) return podLike(obj.metadata, obj.spec)
  const read = TEMPLATE_PATHS[kindKey(obj.apiVersion, obj.kind)]
  let template = read?.(obj)
  // An Argo Rollout may reference a Deployment's template instead of carrying its own.
  if (template === undefined && obj.kind === 'Rollout' && isRecord(obj.spec?.workloadRef)) {
    const target = index.get('apps/Deployment', String(obj.spec.workloadRef.name))
    template = target?.spec?.template
  }
  return isRecord(template) ? podLike(template.metadata, template.spec) : undefined
}

class ObjectIndex {
  private readonly byKey = new Map<string, KubeObject>()
  constructor(objects: KubeObject[]) {
    for (const o of objects) this.byKey.set(`${kindKey(o.apiVersion, o.kind)}/${o.metadata.name}`, o)
  }
  get(kind: string, name: string): KubeObject | undefined {
    return this.byKey.get(`${kind}/${name}`)
  }
  getRef(ref: {apiVersion: string; kind: string; name: string}): KubeObject | undefined {
    return this.get(kindKey(ref.apiVersion, ref.kind), ref.name)
  }
}

function controllerOwner(obj: KubeObject): OwnerReference | undefined {
  const owners = Array.isArray(obj.metadata.ownerReferences) ? obj.metadata.ownerReferences : []
  return owners.find((o) => o.controller === true) ?? owners[0]
}

/** The workload an object belongs to: its top-most controller, present in the snapshot or not. */
interface Owner {
  ref: ObjectRef
  /** The controller object itself, when it is in the snapshot. */
  object?: KubeObject
  /** The nearest object of the chain that is in the snapshot and has a pod template. */
  templateSource?: KubeObject
  /** How ownership was established when the owner object is missing: for messages. */
  inferred?: string
}

/**
 * istiod renders Gateway API gateways and waypoints as Deployments owned by their Gateway (E8, DOMAIN §1.3). The
 * Deployment is the workload: the Gateway has no pod template, and the gateway labels live on the Deployment.
 */
function ownedByGateway(owner: OwnerReference): boolean {
  return owner.kind === 'Gateway' && groupOf(owner.apiVersion) === 'gateway.networking.k8s.io'
}

function resolveOwner(obj: KubeObject, namespace: string, index: ObjectIndex, depth = 0): Owner {
  const owner = controllerOwner(obj)
  const self: Owner = {ref: refOf(obj), object: obj, templateSource: obj}
  // Mirror pods of static pods are "owned" by their Node: the kubelet runs them from a file, so for
  // the migration they are bare pods.
  if (!owner || owner.kind === 'Node' || ownedByGateway(owner) || depth > 5) return self
  const ownerObj = index.getRef(owner)
  if (ownerObj) {
    const top = resolveOwner(ownerObj, namespace, index, depth + 1)
    return {...top, templateSource: top.templateSource ?? ownerObj}
  }
  // The owner is not in the snapshot: fall back on the controllers' naming conventions.
  const labels = obj.metadata.labels ?? {}
  const ownerRef: ObjectRef = {apiVersion: owner.apiVersion, kind: owner.kind, namespace, name: owner.name}
  if (owner.kind === 'ReplicaSet') {
    const hash = labels['pod-template-hash']
    if (hash && owner.name.endsWith(`-${hash}`)) {
      const base = owner.name.slice(0, -(hash.length + 1))
      const controller = index.get('apps/Deployment', base) ?? index.get('argoproj.io/Rollout', base)
      if (controller) {
        return {
          ref: refOf(controller),
          object: controller,
          templateSource: controller,
          inferred: `ReplicaSet ${owner.name} is not in the source; matched to ${controller.kind} ${base} by its pod-template-hash`,
        }
      }
    }
  }
  if (owner.kind === 'Job') {
    const match = /^(.*)-\d+$/.exec(owner.name)
    const cron = match ? index.get('batch/CronJob', match[1]!) : undefined
    if (cron) {
      return {
        ref: refOf(cron),
        object: cron,
        templateSource: cron,
        inferred: `Job ${owner.name} is not in the source; matched to CronJob ${cron.metadata.name} by its name`,
      }
    }
  }
  return {
    ref: ownerRef,
    templateSource: obj,
    inferred: `${owner.kind} ${owner.name} (owner of ${obj.kind} ${obj.metadata.name}) is not in the source`,
  }
}

/** Pods that lost their ownerReferences (e.g. cleaned exports) but carry controller-generated labels. */
function ownerByLabels(pod: KubeObject, index: ObjectIndex, controllers: KubeObject[]): KubeObject | undefined {
  const labels = pod.metadata.labels ?? {}
  const matchesSelector = (c: KubeObject) => {
    const sel = c.spec?.selector?.matchLabels
    return isRecord(sel) && Object.keys(sel).length > 0 && Object.entries(sel).every(([k, v]) => labels[k] === v)
  }
  if (labels['pod-template-hash']) {
    return controllers.find((c) => (c.kind === 'Deployment' || c.kind === 'Rollout') && matchesSelector(c))
  }
  if (labels['statefulset.kubernetes.io/pod-name']) {
    return index.get('apps/StatefulSet', pod.metadata.name.replace(/-\d+$/, ''))
  }
  if (labels['controller-revision-hash']) {
    return controllers.find((c) => (c.kind === 'DaemonSet' || c.kind === 'StatefulSet') && matchesSelector(c))
  }
  const jobName = labels['batch.kubernetes.io/job-name'] ?? labels['job-name']
  if (jobName) {
    const job = index.get('batch/Job', jobName)
    if (job) return job
    const match = /^(.*)-\d+$/.exec(jobName)
    return match ? index.get('batch/CronJob', match[1]!) : undefined
  }
  return undefined
}

// ---------------------------------------------------------------------------------------------
// Proxy detection (DOMAIN §2.4)

interface ProxyPlacement {
  /** istio-proxy in spec.containers (with a real image: `auto` is an injection placeholder). */
  container?: Container
  /** istio-proxy init container (native sidecar; see proxyPlacement on restartPolicy). */
  native?: Container
  /** istio-proxy container with `image: auto`: a gateway waiting for injection. */
  placeholder?: Container
}

function proxyPlacement(spec: PodSpec): ProxyPlacement {
  const out: ProxyPlacement = {}
  for (const c of containersOf(spec)) {
    if (c.name !== ISTIO_PROXY) continue
    if (c.image === 'auto') out.placeholder = c
    else out.container = c
  }
  for (const c of initContainersOf(spec)) {
    if (c.name !== ISTIO_PROXY) continue
    // The injector only ever puts istio-proxy into initContainers as a native sidecar
    // (restartPolicy: Always). Without that field the object was stripped (an API server without
    // the SidecarContainers gate, an edited export) — the analyzer (IST0103) counts it too.
    if (c.image === 'auto') out.placeholder = c
    else out.native = c
  }
  return out
}

interface PodObservation {
  state: ProxyState
  pending: boolean
  /** istio-proxy `image: auto` still there: the injection webhook did not run (IST0147). */
  placeholder: boolean
  hboneCapable: boolean
}

/**
 * One observed pod, in the order of DOMAIN §2.4: status annotation, containers, native init container, ztunnel.
 * In a pod istiod deploys for a Gateway (`managedGateway`) the istio-proxy container is the gateway itself, not a
 * sidecar: such a pod is captured by ztunnel or outside it like any pod without a sidecar (E8).
 */
function observePod(pod: PodLike, managedGateway = false): PodObservation {
  const placement = managedGateway ? {} : proxyPlacement(pod.spec)
  const annotations = pod.metadata.annotations
  const hbone = isHboneCapable(pod, placement)
  const result = (state: ProxyState): PodObservation => ({
    state,
    pending: state === 'none' && annotations[AMBIENT_REDIRECTION] === 'pending',
    placeholder: state === 'none' && placement.placeholder !== undefined,
    hboneCapable: isSidecar(state) && hbone,
  })
  if (annotations[SIDECAR_STATUS] !== undefined) {
    // Injected. Where istio-proxy sits tells classic from native; if the containers are not visible, say classic.
    return result(placement.native && !placement.container ? 'sidecar-native' : 'sidecar')
  }
  if (placement.container) return result('sidecar')
  if (placement.native) return result('sidecar-native')
  if (annotations[AMBIENT_REDIRECTION] === 'enabled') return result('ambient')
  return result('none')
}

function isHboneCapable(pod: PodLike, placement: ProxyPlacement): boolean {
  if (pod.metadata.labels[TUNNEL_LABEL] === 'http') return true
  const proxy = placement.native ?? placement.container
  return (proxy?.env ?? []).some(
    (e) => e.name === 'ISTIO_META_ENABLE_HBONE' && (e.value ?? '').toLowerCase() === 'true',
  )
}

/** Pods in a terminal phase carry no traffic: their proxy state does not matter. */
function isTerminated(pod: KubeObject): boolean {
  const phase = pod.status?.phase
  return phase === 'Succeeded' || phase === 'Failed'
}

// ---------------------------------------------------------------------------------------------
// Lost sidecar knobs (DOMAIN §2.6)

const SIZING =
  'Inert in ambient (no sidecar). L7 proxy resources move to the waypoint (Helm global.waypoint.resources, the Gateway’s ' +
  'spec.infrastructure.parametersRef or the istio-waypoint class-defaults ConfigMap); ztunnel is sized per node (ztunnel chart).'
const PROXY_SETTING =
  'Inert in ambient (no sidecar). For the waypoint, set the same annotation on the waypoint Gateway (its deployment template reads it there).'
const PROBES =
  'Inert in ambient: kubelet probes reach the application directly (SNAT from 169.254.7.127), nothing is rewritten.'
const EXCLUSION_INBOUND =
  'No per-port/CIDR equivalent in ambient: ztunnel captures all inbound TCP of the pod (semantic change). ' +
  'The only approximation is ambient.istio.io/bypass-inbound-capture: "true" (no inbound capture at all).'
const EXCLUSION_OUTBOUND =
  'No per-port/CIDR equivalent in ambient: ztunnel captures all outbound TCP of the pod (semantic change); traffic to ' +
  'excluded non-mesh destinations becomes ztunnel passthrough TCP. UDP is not proxied (except DNS with DNS capture).'

const SIZING_KEYS = ['proxyCPU', 'proxyCPULimit', 'proxyMemory', 'proxyMemoryLimit'].map((k) => `sidecar.istio.io/${k}`)
const PROXY_SETTING_KEYS = [
  'proxyImage',
  'proxyImageType',
  'logLevel',
  'componentLogLevel',
  'agentLogLevel',
  'bootstrapOverride',
  'statsInclusionPrefixes',
  'statsInclusionSuffixes',
  'statsInclusionRegexps',
  'statsHistogramBuckets',
  'statsFlushInterval',
  'statsEvictionInterval',
  'statsCompression',
  'extraStatTags',
  'userVolume',
  'userVolumeMount',
  'discoveryAddress',
].map((k) => `sidecar.istio.io/${k}`)

const INTERCEPTION_MODE = 'sidecar.istio.io/interceptionMode'

/**
 * Issue 21 §7: sidecar.istio.io/interceptionMode chooses how the sidecar's iptables rules capture traffic
 * (REDIRECT, TPROXY) or turns capture off (NONE) (istio/istio pkg/kube/inject/validate.go validateInterceptionMode).
 * REDIRECT and TPROXY are capture modes, not exclusions: ambient has no sidecar to capture for, and istio-cni sets up
 * ztunnel's in-pod capture the same way for every pod, already TPROXY-style (cni/pkg/iptables/iptables_linux.go;
 * https://istio.io/latest/docs/ambient/architecture/traffic-redirection/). NONE excludes all traffic from the sidecar.
 */
function interceptionModeReplacement(value: string): string {
  if (value === 'NONE')
    return 'NONE: the sidecar captures nothing today; ztunnel captures all TCP of the pod once it is ambient (semantic change). The only approximation is ambient.istio.io/bypass-inbound-capture: "true" (no inbound capture).'
  return `${value}: a capture mode of the sidecar's iptables rules${value === 'TPROXY' ? ' (the original source IP reaches the sidecar)' : ''}, not a traffic exclusion. Inert in ambient: there is no sidecar, and istio-cni sets up ztunnel's in-pod capture the same way for every pod (TPROXY-style, keeping the caller's IP); nothing to carry.`
}

/** Whether an annotation excludes traffic from the sidecar (what ztunnel will capture after the migration). */
function isTrafficExclusion(key: string, value: string | undefined): boolean {
  if (key === INTERCEPTION_MODE) return value === 'NONE'
  return key.startsWith('traffic.sidecar.istio.io/')
}

/** Replacement text for one annotation key, or undefined when the key is no sidecar knob. */
function annotationReplacement(key: string, value: string): string | undefined {
  if (key === SIDECAR_STATUS) return undefined // injector state, not a knob
  if (key === SIDECAR_INJECT) {
    return value.toLowerCase() === 'false'
      ? 'Deprecated annotation; no longer excludes the pod from the mesh: ztunnel captures it when the namespace turns ambient. Equivalent opt-out: label istio.io/dataplane-mode: none.'
      : 'Deprecated annotation; the injection webhooks select pods by the label, so once the namespace has no injection label this annotation opts in to nothing.'
  }
  if (key === NATIVE_SIDECAR) return 'Irrelevant in ambient (no sidecar).'
  if (SIZING_KEYS.includes(key)) return SIZING
  if (PROXY_SETTING_KEYS.includes(key)) return PROXY_SETTING
  if (
    key === 'sidecar.istio.io/rewriteAppHTTPProbers' ||
    key === 'status.sidecar.istio.io/port' ||
    key.startsWith('readiness.status.sidecar.istio.io/')
  ) {
    return PROBES
  }
  if (key === 'proxy.istio.io/config') {
    const dns = /ISTIO_META_DNS_CAPTURE/.test(value)
      ? ' DNS capture is on by default in ambient (per pod: ambient.istio.io/dns-capture).'
      : ''
    return (
      'Inert for app pods (ProxyConfig overrides, incl. holdApplicationUntilProxyStarts): istio-cni enrols the pod before it starts ' +
      '(a partially enrolled pod is "pending" and passes no traffic); for waypoints use a ProxyConfig selecting ' +
      `gateway.networking.k8s.io/gateway-name.${dns}`
    )
  }
  if (key === 'traffic.sidecar.istio.io/kubevirtInterfaces')
    return 'Use istio.io/reroute-virtual-interfaces, which works in both modes.'
  if (key === INTERCEPTION_MODE) return interceptionModeReplacement(value)
  if (key.startsWith('traffic.sidecar.istio.io/')) {
    return /Inbound/.test(key) ? EXCLUSION_INBOUND : EXCLUSION_OUTBOUND
  }
  if (key === 'prometheus.istio.io/merge-metrics') {
    return 'Metrics merging is not available in ambient: scrape the application directly and ztunnel/waypoints separately; with STRICT mTLS an out-of-mesh scraper is denied.'
  }
  if (key === INJECT_TEMPLATES) {
    return /grpc-agent/.test(value)
      ? 'Proxyless gRPC (grpc-agent template) has no ambient equivalent: the gRPC client stops receiving xDS from the agent; traffic becomes plain gRPC through ztunnel.'
      : 'Only meaningful for sidecar injection templates; inert in ambient.'
  }
  if (key.startsWith('sidecar.istio.io/') || key.startsWith('proxy.istio.io/'))
    return 'Sidecar setting; inert in ambient (no sidecar).'
  return undefined
}

/**
 * Annotations the injector itself writes on every injected pod (with their default values): not
 * user intent, so not reported as lost when read from an injected pod.
 */
function isInjectorDefault(key: string, value: string): boolean {
  switch (key) {
    case INTERCEPTION_MODE:
      return value === 'REDIRECT'
    case 'traffic.sidecar.istio.io/includeInboundPorts':
    case 'traffic.sidecar.istio.io/includeOutboundIPRanges':
      return value === '*'
    case 'traffic.sidecar.istio.io/excludeOutboundIPRanges':
    case 'traffic.sidecar.istio.io/excludeOutboundPorts':
    case 'traffic.sidecar.istio.io/includeOutboundPorts':
      return value === ''
    case 'traffic.sidecar.istio.io/excludeInboundPorts':
      return value.split(',').every((p) => ['', '15020', '15021', '15090'].includes(p.trim()))
    default:
      return false
  }
}

function lostAnnotationsOf(pod: PodLike): LostAnnotation[] {
  const out: LostAnnotation[] = []
  const injected = pod.metadata.annotations[SIDECAR_STATUS] !== undefined
  const label = pod.metadata.labels[SIDECAR_INJECT]
  if (label !== undefined) {
    out.push({
      key: SIDECAR_INJECT,
      replacement:
        label === 'false'
          ? 'Label no longer excludes the pod from the mesh: ztunnel captures it as soon as the namespace is ambient. Equivalent opt-out: label istio.io/dataplane-mode: none.'
          : label === 'true'
            ? 'Pod-level opt-in to sidecars: while it is on the template, pods keep getting a sidecar (and are never captured by ztunnel). Remove it to migrate the workload.'
            : 'Not a valid value (true/false): ignored by the injector.',
    })
  }
  const rev = pod.metadata.labels[REVISION_LABEL]
  if (rev !== undefined) {
    out.push({
      key: REVISION_LABEL,
      replacement: `Pod-level opt-in to sidecars of revision ${rev}: in a namespace without injection labels pods keep getting a sidecar. Remove it to migrate the workload.`,
    })
  }
  for (const [key, value] of Object.entries(pod.metadata.annotations).sort(([a], [b]) =>
    a < b ? -1 : a > b ? 1 : 0,
  )) {
    if (injected && isInjectorDefault(key, value)) continue
    const replacement = annotationReplacement(key, value)
    if (replacement) out.push({key, replacement})
  }
  return out
}

// ---------------------------------------------------------------------------------------------
// Traits

const QUITQUITQUIT = [/15020\/quitquitquit/, /15000\/quitquitquit/, /15021\/healthz\/ready/]

function commandsOf(c: Container): string[] {
  return [
    ...(c.command ?? []),
    ...(c.args ?? []),
    ...(c.lifecycle?.preStop?.exec?.command ?? []),
    ...(c.lifecycle?.postStart?.exec?.command ?? []),
  ].filter((s): s is string => typeof s === 'string')
}

/** Application containers that call the sidecar's lifecycle endpoints (scuttle-style wrappers, E10). */
function quitquitquitCallers(spec: PodSpec): string[] {
  return [...containersOf(spec), ...initContainersOf(spec)]
    .filter((c) => c.name !== ISTIO_PROXY && commandsOf(c).some((arg) => QUITQUITQUIT.some((re) => re.test(arg))))
    .map((c) => c.name ?? '?')
}

function effectiveInjectValue(pod: PodLike): string | undefined {
  // The label wins over the deprecated annotation (injectRequired()).
  const v = pod.metadata.labels[SIDECAR_INJECT] ?? pod.metadata.annotations[SIDECAR_INJECT]
  return v?.toLowerCase()
}

function injectTemplates(pod: PodLike): string[] {
  return (pod.metadata.annotations[INJECT_TEMPLATES] ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
}

// ---------------------------------------------------------------------------------------------
// The analysis

export interface WorkloadAnalysisOptions {
  /** From analyzeInjectionWebhooks(): makes injection predictions exact. */
  webhooks?: InjectionWebhooks
}

interface Group {
  owner: Owner
  pods: KubeObject[]
  /** How the ownership of its pods or controllers had to be guessed (for one info finding). */
  inferred: Set<string>
}

/**
 * Workloads of namespace `ns.name`: Deployments, StatefulSets, DaemonSets, ReplicaSets without an
 * owning Deployment, Jobs without an owning CronJob, CronJobs, Argo Rollouts, and bare Pods. Owned
 * pods are counted under their controller and decide its observed proxy state; controllers without
 * running pods get a proxy state predicted from their pod template and the namespace labels.
 */
export function analyzeWorkloads(
  objects: KubeObject[],
  ns: NamespaceState,
  opts: WorkloadAnalysisOptions = {},
): {workloads: WorkloadItem[]; findings: Finding[]} {
  const webhooks = opts.webhooks ?? NO_INJECTION_WEBHOOKS
  const local = objects.filter((o) => o.metadata.namespace === ns.name)
  const index = new ObjectIndex(local)
  const controllers = local.filter((o) => TEMPLATE_PATHS[kindKey(o.apiVersion, o.kind)] !== undefined)

  const groups = new Map<string, Group>()
  const groupFor = (owner: Owner): Group => {
    const key = `${groupOf(owner.ref.apiVersion)}/${owner.ref.kind}/${owner.ref.name}`
    let g = groups.get(key)
    if (!g) {
      g = {owner, pods: [], inferred: new Set()}
      groups.set(key, g)
    } else if (!g.owner.object && owner.object) {
      g.owner = owner
    }
    if (owner.inferred) g.inferred.add(owner.inferred)
    return g
  }

  for (const c of controllers) groupFor(resolveOwner(c, ns.name, index))
  for (const pod of local.filter(isPod)) {
    let owner = resolveOwner(pod, ns.name, index)
    if (owner.object === pod && !controllerOwner(pod)) {
      const byLabels = ownerByLabels(pod, index, controllers)
      if (byLabels) {
        owner = {...resolveOwner(byLabels, ns.name, index)}
        owner.inferred = `Pod ${pod.metadata.name} has no ownerReferences; matched to ${owner.ref.kind} ${owner.ref.name} by its labels`
      }
    }
    const group = groupFor(owner)
    if (owner.object !== pod) group.pods.push(pod)
  }

  const ctx = new Context(ns, webhooks)
  const workloads = [...groups.values()].map((g) => ctx.workload(g, index)).sort((a, b) => compareRefs(a.ref, b.ref))
  return {workloads, findings: ctx.findingsFor(workloads)}
}

class Context {
  private readonly findingsByWorkload = new Map<WorkloadItem, Finding[]>()
  private nativeUnknown = false
  /** The namespace as the plan leaves it: sidecar labels gone, ambient on (for E7 predictions). */
  private readonly after: NamespaceState

  constructor(
    private readonly ns: NamespaceState,
    private readonly webhooks: InjectionWebhooks,
  ) {
    const labels = {...ns.labels}
    for (const l of sidecarLabelsToRemove(ns)) delete labels[l.key]
    labels[DATAPLANE_MODE_LABEL] = 'ambient'
    this.after = analyzeNamespace(
      ns.name,
      {apiVersion: 'v1', kind: 'Namespace', metadata: {name: ns.name, labels}},
      {webhooks},
    ).state
  }

  findingsFor(workloads: WorkloadItem[]): Finding[] {
    const out = workloads.flatMap((w) => this.findingsByWorkload.get(w) ?? [])
    if (this.nativeUnknown) {
      out.push(
        finding(
          'NativeSidecarUnknown',
          undefined,
          {},
          {id: `native-sidecar-unknown/${this.ns.name}`, severity: 'info'},
        ),
      )
    }
    return out
  }

  workload(group: Group, index: ObjectIndex): WorkloadItem {
    const facts = this.workloadFacts(group, index)
    const findings = WORKLOAD_ANALYZERS.flatMap((analyze) => analyze(facts, this)).map((f): Finding => ({
      ...f,
      ref: facts.ref,
    }))
    this.findingsByWorkload.set(facts.item, findings)
    return facts.item
  }

  /** Everything the workload analyzers read, computed once per workload. */
  private workloadFacts(group: Group, index: ObjectIndex): WorkloadFacts {
    const {owner} = group
    const ref: ObjectRef = {...owner.ref, namespace: this.ns.name}
    const controller = owner.object
    const bare = controller !== undefined && isPod(controller)
    const templateSource = owner.templateSource ?? group.pods[0]
    const template: PodLike = templateSource
      ? (templateOf(templateSource, index) ?? podLike(undefined, undefined))
      : podLike(undefined, undefined)

    const live = group.pods.filter((p) => !isTerminated(p))
    // Pods istiod deploys for a Gateway: waypoints (istio.io-mesh-controller), Gateway API gateways
    // (istio.io-gateway-controller), east-west gateways.
    const managed = controller?.metadata.labels?.[GATEWAY_MANAGED] ?? template.metadata.labels[GATEWAY_MANAGED]
    const observations = (bare ? [template] : live.map((p) => podLike(p.metadata, p.spec))).map((p) =>
      observePod(p, managed !== undefined),
    )

    const templateFacts = this.templateFacts({ref, controller, bare, templateSource, template, managed})
    const {traits} = templateFacts
    const proxyFacts = this.proxyFacts(template, observations, templateFacts)

    const spec = template.spec
    const item: WorkloadItem = {
      ref,
      proxy: proxyFacts.proxy,
      lostAnnotations: traits.has('injected-gateway') || traits.has('waypoint') ? [] : lostAnnotationsOf(template),
      traits: [...traits].sort(),
      podLabels: {...template.metadata.labels},
    }
    if (proxyFacts.predicted) item.predicted = true
    if (proxyFacts.pods.total > 0) item.pods = proxyFacts.pods
    if (templateSource) item.serviceAccount = spec.serviceAccountName ?? spec.serviceAccount ?? 'default'

    return {
      ns: this.ns,
      ref,
      label: `${ref.kind} ${ref.name}`,
      bare,
      template,
      observations,
      inferred: group.inferred,
      ...templateFacts,
      ...proxyFacts,
      item,
      hasSidecar: isSidecar(proxyFacts.proxy),
      gateway: traits.has('injected-gateway') || traits.has('waypoint'),
    }
  }

  /** The traits read from the controller and its pod template (before any pod is observed). */
  private templateFacts(input: {
    ref: ObjectRef
    controller: KubeObject | undefined
    bare: boolean
    templateSource: KubeObject | undefined
    template: PodLike
    managed: string | undefined
  }): TemplateFacts {
    const {ref, controller, bare, templateSource, template, managed} = input
    const managedGateway = managed !== undefined
    const traits = new Set<WorkloadTrait>()
    const spec = template.spec
    const meta = template.metadata
    const hostNetwork = spec.hostNetwork === true
    const templates = injectTemplates(template)
    const placement = proxyPlacement(spec)
    const injectValue = effectiveInjectValue(template)
    const injectedGateway = templates.includes('gateway') || placement.placeholder !== undefined
    if (hostNetwork) traits.add('host-network')
    if (injectValue === 'false') traits.add('inject-opt-out')
    // Only labels opt in after the namespace labels are gone: the webhooks' object selectors read labels. In a
    // namespace whose istio-injection is not `enabled` (e.g. disabled), which the plan keeps, no webhook matches
    // the pod, so the opt-in gives no sidecar (DOMAIN §2.1; issue 10 point 6).
    const optInLabel =
      !injectedGateway && (meta.labels[SIDECAR_INJECT] === 'true' || meta.labels[REVISION_LABEL] !== undefined)
    const optInBlocked =
      optInLabel && this.predict(template).noWebhook === true && this.predict(template, this.after).noWebhook === true
    if (optInLabel && !optInBlocked) traits.add('pod-opt-in')
    // Only a controller's own template can be manually injected; a pod read in place of a missing
    // controller is injected by the webhook like any other.
    const fromTemplate = templateSource !== undefined && !isPod(templateSource) && !managedGateway
    const manualInjection =
      fromTemplate &&
      (meta.annotations[SIDECAR_STATUS] !== undefined ||
        placement.container !== undefined ||
        placement.native !== undefined)
    if (manualInjection) traits.add('manual-injection')
    if (meta.labels[DATAPLANE_MODE_LABEL] === 'none') traits.add('dataplane-none')
    if (injectedGateway) traits.add('injected-gateway')
    if (managed === KUBE_GATEWAY_CONTROLLER) traits.add('kube-gateway')
    if (managed === WAYPOINT_CONTROLLER) traits.add('waypoint')
    if (ref.kind === 'Job' || ref.kind === 'CronJob') traits.add('job')
    if (bare) traits.add('bare-pod')
    const strategy = controller?.spec?.updateStrategy
    if ((ref.kind === 'StatefulSet' || ref.kind === 'DaemonSet') && strategy?.type === 'OnDelete')
      traits.add('on-delete')
    const partition = Number(strategy?.rollingUpdate?.partition ?? 0)
    if (ref.kind === 'StatefulSet' && strategy?.type !== 'OnDelete' && partition > 0) traits.add('partitioned')
    if (templates.includes('grpc-agent')) traits.add('proxyless-grpc')
    const callers = quitquitquitCallers(spec)
    if (callers.length > 0) traits.add('quitquitquit')
    const manager = gitOpsManager(controller?.metadata ?? {})
    if (manager) traits.add('gitops-managed')
    return {traits, hostNetwork, injectValue, optInBlocked, manualInjection, placement, partition, callers, manager}
  }

  /** Proxy state: observed from pods, else predicted from the template. Adds the trait hbone-capable. */
  private proxyFacts(template: PodLike, observations: PodObservation[], facts: TemplateFacts): ProxyFacts {
    const {traits, manualInjection, placement} = facts
    const pods = {total: 0, sidecar: 0, ambient: 0, none: 0}
    if (observations.length > 0) {
      for (const o of observations) {
        pods.total++
        if (isSidecar(o.state)) pods.sidecar++
        else pods[o.state]++
      }
      const sidecars = observations.filter((o) => isSidecar(o.state))
      const proxy: ProxyState =
        sidecars.length > 0
          ? sidecars.every((o) => o.state === 'sidecar-native')
            ? 'sidecar-native'
            : 'sidecar'
          : pods.none > 0
            ? 'none'
            : 'ambient'
      if (sidecars.length > 0 && sidecars.every((o) => o.hboneCapable)) traits.add('hbone-capable')
      return {proxy, predicted: false, prediction: undefined, pods}
    }
    if (manualInjection) {
      if (isHboneCapable(template, placement)) traits.add('hbone-capable')
      return {
        proxy: placement.native && !placement.container ? 'sidecar-native' : 'sidecar',
        predicted: true,
        prediction: undefined,
        pods,
      }
    }
    const prediction = this.predict(template)
    if (!prediction.injected)
      return {proxy: this.captured(template, this.ns) ? 'ambient' : 'none', predicted: true, prediction, pods}
    const native = template.metadata.annotations[NATIVE_SIDECAR]
    if (native !== 'true' && native !== 'false') this.nativeUnknown = true
    return {proxy: native === 'true' ? 'sidecar-native' : 'sidecar', predicted: true, prediction, pods}
  }

  private predict(pod: PodLike, ns: NamespaceState = this.ns): InjectionPrediction {
    return predictInjection(
      {
        namespace: ns.name,
        labels: pod.metadata.labels,
        annotations: pod.metadata.annotations,
        hostNetwork: pod.spec.hostNetwork === true,
      },
      ns,
      this.webhooks,
    )
  }

  /** Would istio-cni capture a pod without a sidecar (enablement selectors, DOMAIN §2.2)? */
  private captured(pod: PodLike, ns: NamespaceState): boolean {
    if (pod.spec.hostNetwork === true || CNI_EXCLUDED_NAMESPACES.includes(ns.name)) return false
    const mode = pod.metadata.labels[DATAPLANE_MODE_LABEL]
    if (mode === 'ambient') return true
    return ns.dataplaneMode === 'ambient' && mode !== 'none'
  }

  /** IST0146/IST0147 and E7 for an injected gateway (inject.istio.io/templates=gateway / image: auto). */
  gatewayFindings(f: WorkloadFacts): WorkloadFinding[] {
    if (!f.traits.has('injected-gateway')) return []
    const {label, ref, template, observations, bare} = f
    const findings: WorkloadFinding[] = []
    const say = (finding: WorkloadFinding) => findings.push(finding)
    const now = this.predict(template)
    const after = this.predict(template, this.after)
    const placeholder = proxyPlacement(template.spec).placeholder !== undefined
    if (bare ? observations.some((o) => o.placeholder) : placeholder && !now.injected) {
      // IST0146 (controllers, warning) / IST0147 (pods, error).
      const args = {kind: ref.kind, name: ref.name}
      say(
        bare
          ? finding('GatewayPodImageAutoNotInjected', undefined, args, {id: `IST0147/${ref.kind}/${ref.name}`})
          : finding('GatewayImageAutoNotInjected', undefined, args, {id: `IST0146/${ref.kind}/${ref.name}`}),
      )
    }
    const pinned = template.metadata.labels[REVISION_LABEL] !== undefined
    const moves = this.ns.revision && !pinned ? `, but by the default revision instead of ${this.ns.revision}` : ''
    const afterText = after.injected
      ? `still injected once the namespace's sidecar labels are removed (${after.reason}${moves})`
      : "NOT injected once the namespace's sidecar labels are removed (its `image: auto` pods would fail to start)"
    say(
      finding(
        'InjectedGateway',
        undefined,
        {label, afterText, detail: this.ns.revision ? ` (${this.ns.revision})` : ''},
        {id: `E7/${ref.kind}/${ref.name}`, severity: after.injected && !moves ? 'info' : 'warning'},
      ),
    )
    return findings
  }
}

type WorkloadFinding = Omit<Finding, 'ref'>

interface TemplateFacts {
  traits: Set<WorkloadTrait>
  hostNetwork: boolean
  injectValue: string | undefined
  /** The template opts in to sidecars, but no webhook matches its pods now or after the migration (E4, info). */
  optInBlocked: boolean
  manualInjection: boolean
  placement: ProxyPlacement
  partition: number
  /** Containers that call the sidecar's lifecycle endpoints. */
  callers: string[]
  manager: string | undefined
}

interface ProxyFacts {
  proxy: ProxyState
  /** No pod observed: the proxy state is predicted from the template. */
  predicted: boolean
  prediction: InjectionPrediction | undefined
  pods: {total: number; sidecar: number; ambient: number; none: number}
}

/** What the workload analyzers read: computed once by `Context.workloadFacts`. */
interface WorkloadFacts extends TemplateFacts, ProxyFacts {
  ns: NamespaceState
  ref: ObjectRef
  /** `Kind name`, for messages. */
  label: string
  bare: boolean
  template: PodLike
  observations: PodObservation[]
  inferred: Set<string>
  item: WorkloadItem
  hasSidecar: boolean
  /** An injected gateway or a waypoint: keeps its proxy and is left out of restarts. */
  gateway: boolean
}

type WorkloadAnalyzer = (f: WorkloadFacts, ctx: Context) => WorkloadFinding[]

function ownerInferred({ref, inferred}: WorkloadFacts): WorkloadFinding[] {
  if (inferred.size === 0) return []
  const notes = [...inferred].sort()
  const shown = notes.slice(0, 3).join('; ')
  return [
    finding(
      'OwnerInferred',
      undefined,
      {shown, detail: notes.length > 3 ? `; and ${notes.length - 3} more` : ''},
      {id: `owner-inferred/${ref.kind}/${ref.name}`, severity: 'info'},
    ),
  ]
}

/** Captured the moment the namespace is labelled ambient (no restart): E5 / E8. */
function enrolsWithoutRestart(f: WorkloadFacts): WorkloadFinding[] {
  const {ns, ref, label, traits, injectValue, prediction} = f
  const enrolsNow =
    ns.dataplaneMode !== 'ambient' &&
    f.proxy === 'none' &&
    !f.hostNetwork &&
    !traits.has('dataplane-none') &&
    !traits.has('waypoint') &&
    !CNI_EXCLUDED_NAMESPACES.includes(ns.name)
  if (!enrolsNow) return []
  if (traits.has('kube-gateway')) {
    return [
      finding('GatewayApiGatewayCaptured', undefined, {label}, {id: `E8/${ref.kind}/${ref.name}`, severity: 'warning'}),
    ]
  }
  const why =
    injectValue === 'false'
      ? `has ${SIDECAR_INJECT}=false and no ${DATAPLANE_MODE_LABEL}=none`
      : prediction
        ? `gets no sidecar (${prediction.reason})`
        : 'runs without a sidecar'
  return [
    finding(
      'OptedOutWorkloadCaptured',
      undefined,
      {label, why},
      {id: `E5/${ref.kind}/${ref.name}`, severity: 'warning'},
    ),
  ]
}

/** IST0103: pods outside the mesh in a namespace that injects. */
function podsWithoutProxy(f: WorkloadFacts): WorkloadFinding[] {
  const {ref, label, observations} = f
  const missing = observations.filter((o) => o.state === 'none').length
  if (
    f.ns.injection !== 'enabled' ||
    f.predicted ||
    missing === 0 ||
    f.injectValue === 'false' ||
    f.hostNetwork ||
    f.gateway
  )
    return []
  return [
    finding(
      'PodsWithoutProxy',
      undefined,
      {missing, observationsLength: observations.length, label},
      {id: `IST0103/${ref.kind}/${ref.name}`, severity: 'warning'},
    ),
  ]
}

function podsPendingEnrolment({ref, label, observations}: WorkloadFacts): WorkloadFinding[] {
  const pending = observations.filter((o) => o.pending).length
  if (pending === 0) return []
  return [
    finding(
      'AmbientRedirectionPending',
      undefined,
      {pending, label},
      {id: `ambient-pending/${ref.kind}/${ref.name}`, severity: 'warning'},
    ),
  ]
}

function mixedProxyStates({ref, label, observations, pods}: WorkloadFacts): WorkloadFinding[] {
  if (new Set(observations.map((o) => o.state)).size <= 1) return []
  return [
    finding(
      'MixedProxyPods',
      undefined,
      {label, sidecar: pods.sidecar, ambient: pods.ambient, none: pods.none},
      {id: `mixed-proxy/${ref.kind}/${ref.name}`, severity: 'info'},
    ),
  ]
}

function sidecarsWithoutHbone(f: WorkloadFacts): WorkloadFinding[] {
  const {ref, label} = f
  if (!f.hasSidecar || f.traits.has('hbone-capable') || f.gateway || (f.predicted && !f.manualInjection)) return []
  return [
    finding('SidecarsNotHboneCapable', undefined, {label}, {id: `HBONE/${ref.kind}/${ref.name}`, severity: 'warning'}),
  ]
}

/** E4: pod-template opt-ins (blocked or effective) and manual injection. */
function templateInjection(f: WorkloadFacts): WorkloadFinding[] {
  const {ns, ref, label, traits} = f
  const labels = f.template.metadata.labels
  const how =
    labels[SIDECAR_INJECT] === 'true'
      ? `label ${SIDECAR_INJECT}=true`
      : `label ${REVISION_LABEL}=${labels[REVISION_LABEL]}`
  const findings: WorkloadFinding[] = []
  if (f.optInBlocked) {
    const injectionLabel = ns.labels[INJECTION_LABEL]
    findings.push(
      finding(
        'PodLevelInjection',
        undefined,
        injectionLabel === undefined
          ? {variant: 'optInBlocked', label, how}
          : {variant: 'optInBlockedByNamespace', label, how, namespace: ns.name, injectionLabel},
        {id: `E4/${ref.kind}/${ref.name}`, severity: 'info'},
      ),
    )
  }
  if (traits.has('pod-opt-in')) {
    findings.push(
      finding(
        'PodLevelInjection',
        undefined,
        {variant: 'templateInjection', label, how},
        {id: `E4/${ref.kind}/${ref.name}`, severity: 'warning'},
      ),
    )
  }
  if (traits.has('manual-injection')) {
    findings.push(
      finding(
        'PodLevelInjection',
        undefined,
        {variant: 'templateInjection2', label},
        {id: `E4/manual/${ref.kind}/${ref.name}`, severity: 'warning'},
      ),
    )
  }
  return findings
}

function usesHostNetwork({ref, label, hostNetwork}: WorkloadFacts): WorkloadFinding[] {
  if (!hostNetwork) return []
  return [finding('HostNetworkWorkload', undefined, {label}, {id: `E6/${ref.kind}/${ref.name}`, severity: 'info'})]
}

function dataplaneNone({ref, label, traits}: WorkloadFacts): WorkloadFinding[] {
  if (!traits.has('dataplane-none') || traits.has('waypoint')) return []
  return [
    finding('DataplaneModeNone', undefined, {label}, {id: `dataplane-none/${ref.kind}/${ref.name}`, severity: 'info'}),
  ]
}

function restartLimits({ref, traits, partition, hasSidecar, gateway}: WorkloadFacts): WorkloadFinding[] {
  if (!hasSidecar || gateway) return []
  const restart = restartLimitFinding(ref, traits, partition)
  return restart
    ? [{id: `${restart.code === 'StatefulRestartLimits' ? 'E9' : 'E10'}/${ref.kind}/${ref.name}`, ...restart}]
    : []
}

function lifecycleCallers({ref, label, callers}: WorkloadFacts): WorkloadFinding[] {
  if (callers.length === 0) return []
  return [
    finding(
      'NotRestartable',
      undefined,
      {variant: 'lifecycleCallers', containers: callers, workload: label},
      {id: `E10-quitquitquit/${ref.kind}/${ref.name}`},
    ),
  ]
}

function gitOpsManaged({ref, label, manager}: WorkloadFacts): WorkloadFinding[] {
  if (!manager) return []
  return [
    finding(
      'GitOpsManaged',
      undefined,
      {variant: 'gitOpsManaged', label, manager},
      {id: `E23/${ref.kind}/${ref.name}`, severity: 'warning'},
    ),
  ]
}

function trafficExclusions({ref, label, item, gateway, template}: WorkloadFacts): WorkloadFinding[] {
  const exclusions = item.lostAnnotations.filter((a) => isTrafficExclusion(a.key, template.metadata.annotations[a.key]))
  if (exclusions.length === 0 || gateway) return []
  return [
    finding(
      'TrafficExclusionsLost',
      undefined,
      {label, exclusions: exclusions.map((a) => a.key)},
      {id: `traffic-exclusions/${ref.kind}/${ref.name}`, severity: 'warning'},
    ),
  ]
}

/** The workload analyzers, in the order their findings appear in the plan. */
const WORKLOAD_ANALYZERS: WorkloadAnalyzer[] = [
  ownerInferred,
  enrolsWithoutRestart,
  podsWithoutProxy,
  podsPendingEnrolment,
  mixedProxyStates,
  sidecarsWithoutHbone,
  templateInjection,
  usesHostNetwork,
  (f, ctx) => ctx.gatewayFindings(f),
  dataplaneNone,
  restartLimits,
  lifecycleCallers,
  gitOpsManaged,
  trafficExclusions,
]

/** The proxy state of one live pod, detected in DOMAIN §2.4's order (status annotation first). */
export function podProxyState(pod: KubeObject): ProxyState {
  return observePod(podLike(pod.metadata, pod.spec)).state
}

/** The merge patch (also a strategic-merge patch) that sets or removes (null) pod-template labels. */
export function templateLabelsPatch(kind: string, labels: Record<string, string | null>): Record<string, unknown> {
  const template = {metadata: {labels}}
  return kind === 'CronJob' ? {spec: {jobTemplate: {spec: {template}}}} : {spec: {template}}
}
