// Builds a ClassifyContext from plain Kubernetes objects for classifier tests. Workload and Service items are
// simple stubs derived from controllers/Services (the real analysis lives in src/planner/workloads.ts and
// services.ts); they carry what the classifiers read: pod labels, traits, Service selectors.
import {parseAllDocuments} from 'yaml'
import type {ClassifyContext} from '../../../src/planner/context.js'
import type {KubeObject, NamespaceState, ServiceItem, WorkloadItem, WorkloadTrait} from '../../../src/planner/model.js'

const CONTROLLERS = new Set(['Deployment', 'StatefulSet', 'DaemonSet', 'ReplicaSet', 'Job', 'CronJob', 'Pod'])

export interface ContextOptions {
  namespace?: string
  rootNamespace?: string
  /** Labels of the migrated namespace (used when no Namespace object is among the objects). */
  namespaceLabels?: Record<string, string>
  istioVersion?: string
  waypointPlanned?: boolean
  /** Namespace given to objects that have none (manifest semantics). Defaults to `namespace`. */
  defaultNamespace?: string
}

function podTemplate(obj: KubeObject): {labels: Record<string, string>; annotations: Record<string, string>} {
  if (obj.kind === 'Pod') return {labels: obj.metadata.labels ?? {}, annotations: obj.metadata.annotations ?? {}}
  const tpl = obj.kind === 'CronJob' ? obj.spec?.jobTemplate?.spec?.template : obj.spec?.template
  return {labels: tpl?.metadata?.labels ?? {}, annotations: tpl?.metadata?.annotations ?? {}}
}

function traitsOf(
  obj: KubeObject,
  labels: Record<string, string>,
  annotations: Record<string, string>,
): WorkloadTrait[] {
  const traits: WorkloadTrait[] = []
  if (
    annotations['inject.istio.io/templates'] === 'gateway' ||
    labels['istio'] === 'ingressgateway' ||
    labels['istio'] === 'egressgateway'
  )
    traits.push('injected-gateway')
  if (labels['gateway.networking.k8s.io/gateway-name']) {
    traits.push(
      labels['gateway.networking.k8s.io/gateway-class-name'] === 'istio-waypoint' ? 'waypoint' : 'kube-gateway',
    )
  }
  if (obj.kind === 'Job' || obj.kind === 'CronJob') traits.push('job')
  if (obj.kind === 'Pod') traits.push('bare-pod')
  return traits
}

export function workloadStub(obj: KubeObject): WorkloadItem {
  const {labels, annotations} = podTemplate(obj)
  const w: WorkloadItem = {
    ref: {apiVersion: obj.apiVersion, kind: obj.kind, namespace: obj.metadata.namespace!, name: obj.metadata.name},
    proxy: 'sidecar',
    lostAnnotations: [],
    traits: traitsOf(obj, labels, annotations),
    podLabels: labels,
  }
  const sa = obj.kind === 'Pod' ? obj.spec?.serviceAccountName : obj.spec?.template?.spec?.serviceAccountName
  if (sa) w.serviceAccount = sa
  return w
}

export function serviceStub(obj: KubeObject, workloads: WorkloadItem[]): ServiceItem {
  const selector: Record<string, string> | undefined = obj.spec?.selector
  const ports = (Array.isArray(obj.spec?.ports) ? obj.spec.ports : []).map(
    (p: {name?: string; port: number; protocol?: string; appProtocol?: string}) => ({
      ...(p.name ? {name: p.name} : {}),
      port: p.port,
      protocol: p.protocol ?? 'TCP',
      ...(p.appProtocol ? {appProtocol: p.appProtocol} : {}),
      istioProtocol: 'auto',
    }),
  )
  const s: ServiceItem = {
    ref: {apiVersion: 'v1', kind: 'Service', namespace: obj.metadata.namespace!, name: obj.metadata.name},
    headless: obj.spec?.clusterIP === 'None',
    ports,
    workloads:
      selector && Object.keys(selector).length > 0
        ? workloads
            .filter((w) => Object.entries(selector).every(([k, v]) => w.podLabels[k] === v))
            .map((w) => w.ref.name)
        : [],
  }
  if (selector) s.selector = selector
  return s
}

export function namespaceStateStub(name: string, labels: Record<string, string>): NamespaceState {
  const sidecarLabels = ['istio-injection', 'istio.io/rev']
    .filter((k) => labels[k] !== undefined)
    .map((k) => ({key: k, value: labels[k]!}))
  const state: NamespaceState = {
    name,
    labels,
    sidecarLabels,
    injection:
      labels['istio-injection'] === 'enabled' || (labels['istio-injection'] === undefined && labels['istio.io/rev'])
        ? 'enabled'
        : labels['istio-injection'] === 'disabled'
          ? 'disabled'
          : 'none',
    mode:
      sidecarLabels.length > 0
        ? labels['istio.io/dataplane-mode'] === 'ambient'
          ? 'both'
          : 'sidecar'
        : labels['istio.io/dataplane-mode'] === 'ambient'
          ? 'ambient'
          : 'none',
    multipleInjectionLabels: false,
  }
  if (labels['istio.io/rev']) state.revision = labels['istio.io/rev']
  if (labels['istio.io/dataplane-mode']) state.dataplaneMode = labels['istio.io/dataplane-mode']
  if (labels['istio.io/use-waypoint']) state.useWaypoint = labels['istio.io/use-waypoint']
  return state
}

/** A ClassifyContext over the given objects; objects without a namespace get `defaultNamespace`. */
export function classifyContext(objects: KubeObject[], opts: ContextOptions = {}): ClassifyContext {
  const namespace = opts.namespace ?? 'bookinfo'
  const defaultNs = opts.defaultNamespace ?? namespace
  const objs = objects.map((o) =>
    o.metadata.namespace !== undefined || o.kind === 'Namespace' || o.kind === 'GatewayClass'
      ? o
      : {...o, metadata: {...o.metadata, namespace: defaultNs}},
  )
  const nsObject = objs.find((o) => o.kind === 'Namespace' && o.metadata.name === namespace)
  const labels = {...(nsObject?.metadata.labels ?? {}), ...(opts.namespaceLabels ?? {})}
  const workloads = objs.filter((o) => CONTROLLERS.has(o.kind) && o.metadata.namespace === namespace).map(workloadStub)
  const services = objs
    .filter((o) => o.kind === 'Service' && o.apiVersion === 'v1' && o.metadata.namespace === namespace)
    .map((o) => serviceStub(o, workloads))
  const ctx: ClassifyContext = {
    namespace,
    rootNamespace: opts.rootNamespace ?? 'istio-system',
    namespaceState: namespaceStateStub(namespace, labels),
    workloads,
    services,
    objects: objs,
    waypointPlanned: opts.waypointPlanned ?? false,
  }
  if (opts.istioVersion) ctx.istioVersion = opts.istioVersion
  return ctx
}

/** Every document of a YAML text as objects (throws on YAML errors). */
export function yamlObjects(text: string): KubeObject[] {
  const out: KubeObject[] = []
  for (const doc of parseAllDocuments(text)) {
    if (doc.errors.length > 0) throw doc.errors[0]
    const value = doc.toJS()
    if (value && typeof value === 'object') {
      if (value.kind === 'List' && Array.isArray(value.items)) out.push(...value.items)
      else out.push(value as KubeObject)
    }
  }
  return out
}

// --- small builders ------------------------------------------------------------------------------

export function deployment(
  name: string,
  labels: Record<string, string>,
  namespace = 'bookinfo',
  extra: {annotations?: Record<string, string>; serviceAccount?: string} = {},
): KubeObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {name, namespace},
    spec: {
      selector: {matchLabels: labels},
      template: {
        metadata: {labels, ...(extra.annotations ? {annotations: extra.annotations} : {})},
        spec: {
          containers: [{name: 'app', image: 'app'}],
          ...(extra.serviceAccount ? {serviceAccountName: extra.serviceAccount} : {}),
        },
      },
    },
  }
}

export function service(
  name: string,
  selector: Record<string, string>,
  namespace = 'bookinfo',
  labels?: Record<string, string>,
): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {name, namespace, ...(labels ? {labels} : {})},
    spec: {selector, ports: [{name: 'http', port: 9080}]},
  }
}

export function istio(
  kind: string,
  name: string,
  spec: unknown,
  opts: {
    namespace?: string
    apiVersion?: string
    annotations?: Record<string, string>
    labels?: Record<string, string>
  } = {},
): KubeObject {
  const groups: Record<string, string> = {
    AuthorizationPolicy: 'security.istio.io/v1',
    PeerAuthentication: 'security.istio.io/v1',
    RequestAuthentication: 'security.istio.io/v1',
    VirtualService: 'networking.istio.io/v1',
    DestinationRule: 'networking.istio.io/v1',
    ServiceEntry: 'networking.istio.io/v1',
    WorkloadEntry: 'networking.istio.io/v1',
    WorkloadGroup: 'networking.istio.io/v1',
    Sidecar: 'networking.istio.io/v1',
    Gateway: 'networking.istio.io/v1',
    EnvoyFilter: 'networking.istio.io/v1alpha3',
    ProxyConfig: 'networking.istio.io/v1beta1',
    Telemetry: 'telemetry.istio.io/v1',
    WasmPlugin: 'extensions.istio.io/v1alpha1',
    HTTPRoute: 'gateway.networking.k8s.io/v1',
    GRPCRoute: 'gateway.networking.k8s.io/v1',
    TCPRoute: 'gateway.networking.k8s.io/v1alpha2',
    TLSRoute: 'gateway.networking.k8s.io/v1alpha2',
  }
  return {
    apiVersion: opts.apiVersion ?? groups[kind] ?? 'networking.istio.io/v1',
    kind,
    metadata: {
      name,
      namespace: opts.namespace ?? 'bookinfo',
      ...(opts.annotations ? {annotations: opts.annotations} : {}),
      ...(opts.labels ? {labels: opts.labels} : {}),
    },
    spec,
  }
}

export function kubeGateway(
  name: string,
  gatewayClassName: string,
  namespace = 'bookinfo',
  extra: {labels?: Record<string, string>; listeners?: unknown[]} = {},
): KubeObject {
  return {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'Gateway',
    metadata: {name, namespace, ...(extra.labels ? {labels: extra.labels} : {})},
    spec: {gatewayClassName, listeners: extra.listeners ?? [{name: 'mesh', port: 15008, protocol: 'HBONE'}]},
  }
}

/** The bookinfo-like base: reviews (v1, v2), ratings, productpage, details Deployments and their Services. */
export function bookinfoBase(namespace = 'bookinfo'): KubeObject[] {
  return [
    deployment('reviews-v1', {app: 'reviews', version: 'v1'}, namespace),
    deployment('reviews-v2', {app: 'reviews', version: 'v2'}, namespace),
    deployment('ratings-v1', {app: 'ratings', version: 'v1'}, namespace),
    deployment('productpage-v1', {app: 'productpage', version: 'v1'}, namespace),
    deployment('details-v1', {app: 'details', version: 'v1'}, namespace),
    service('details', {app: 'details'}, namespace),
    service('reviews', {app: 'reviews'}, namespace),
    service('ratings', {app: 'ratings'}, namespace),
    service('productpage', {app: 'productpage'}, namespace),
  ]
}
