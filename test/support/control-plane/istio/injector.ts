// The sidecar injection webhook's effect on a pod being created (DOMAIN §2.1, §2.4): whether it is
// injected is decided by src/planner's predictInjection over the cluster's webhooks (or the chart's
// selector table when none are installed); what is added follows the istiod injection template:
// istio-proxy as a regular container (classic) or as an init container with restartPolicy Always
// (native), istio-init or istio-validation, the istio volumes, labels and annotations, and the
// sidecar.istio.io/status record.
import type {KubeObject} from '../../../../src/planner/model.js'
import {
  analyzeNamespace,
  type InjectionWebhooks,
  predictInjection,
  selectorMatches,
} from '../../../../src/planner/namespace.js'
import {type InjectorSettings, usesNativeSidecar} from './settings.js'
import {INJECTION_LABEL, NAMESPACE_NAME_LABEL, REVISION_LABEL} from '../../../../src/planner/vocab.js'

export const SIDECAR_STATUS = 'sidecar.istio.io/status'
const TLS_MODE = 'security.istio.io/tlsMode'
const CANONICAL_NAME = 'service.istio.io/canonical-name'
const CANONICAL_REVISION = 'service.istio.io/canonical-revision'
const TUNNEL = 'networking.istio.io/tunnel'

export interface InjectionContext {
  /** The pod's Namespace object (undefined: no labels). */
  namespace: KubeObject | undefined
  webhooks: InjectionWebhooks
  /** Injector settings of a revision. */
  settings(revision: string): InjectorSettings
  nodes: KubeObject[]
}

export interface InjectionOutcome {
  injected: boolean
  reason: string
  /** The revision that injected (istio.io/rev annotation, status record). */
  revision?: string
  native?: boolean
}

/** The revision of the webhook that would handle the pod (same order as predictInjection's search). */
function injectingRevision(
  pod: {namespace: string; labels: Record<string, string>},
  nsLabels: Record<string, string>,
  webhooks: InjectionWebhooks,
): string {
  if (webhooks.webhooks.length > 0) {
    const labels = {[NAMESPACE_NAME_LABEL]: pod.namespace, ...nsLabels}
    const hook = webhooks.webhooks.find(
      (w) => selectorMatches(w.namespaceSelector, labels) && selectorMatches(w.objectSelector, pod.labels),
    )
    if (!hook) return 'default'
    return (hook.tag !== undefined ? webhooks.tags[hook.tag] : hook.revision) ?? 'default'
  }
  // The chart's table: istio-injection wins; else the namespace's, then the pod's istio.io/rev.
  if (nsLabels[INJECTION_LABEL] !== undefined) return 'default'
  const rev = nsLabels[REVISION_LABEL] ?? pod.labels[REVISION_LABEL]
  return rev ? (webhooks.tags[rev] ?? rev) : 'default'
}

/** Decides whether the webhook injects this pod. */
export function injectionDecision(pod: KubeObject, ctx: InjectionContext): InjectionOutcome {
  const namespace = pod.metadata.namespace ?? 'default'
  const labels = pod.metadata.labels ?? {}
  const annotations = pod.metadata.annotations ?? {}
  if (annotations[SIDECAR_STATUS] !== undefined)
    return {injected: false, reason: 'already injected (sidecar.istio.io/status present)'}
  const {state} = analyzeNamespace(namespace, ctx.namespace, {webhooks: ctx.webhooks})
  const prediction = predictInjection(
    {namespace, labels, annotations, hostNetwork: pod.spec?.hostNetwork === true},
    state,
    ctx.webhooks,
  )
  if (!prediction.injected) return prediction
  const revision = injectingRevision({namespace, labels}, state.labels, ctx.webhooks)
  return {...prediction, revision, native: usesNativeSidecar(ctx.settings(revision), annotations, ctx.nodes)}
}

/**
 * The pod as the webhook returns it: unchanged when not injected, else with the sidecar. Pure: the
 * input is not modified.
 */
export function injectSidecar(pod: KubeObject, ctx: InjectionContext): {pod: KubeObject; outcome: InjectionOutcome} {
  const outcome = injectionDecision(pod, ctx)
  if (!outcome.injected) return {pod, outcome}
  return {pod: mutate(structuredClone(pod), ctx.settings(outcome.revision!), outcome.native === true), outcome}
}

// ---------------------------------------------------------------------------------------------
// The mutation (the injection template, trimmed to what tools and people look at)

interface Container {
  name: string
  image?: string
  env?: {name: string; value?: string; valueFrom?: unknown}[]
  ports?: {containerPort: number; name?: string; protocol?: string}[]
  [k: string]: unknown
}

const ISTIO_VOLUMES = [
  {name: 'workload-socket', emptyDir: {}},
  {name: 'credential-socket', emptyDir: {}},
  {name: 'workload-certs', emptyDir: {}},
  {name: 'istio-envoy', emptyDir: {medium: 'Memory'}},
  {name: 'istio-data', emptyDir: {}},
  {
    name: 'istio-podinfo',
    downwardAPI: {
      items: [
        {path: 'labels', fieldRef: {fieldPath: 'metadata.labels'}},
        {path: 'annotations', fieldRef: {fieldPath: 'metadata.annotations'}},
      ],
    },
  },
  {
    name: 'istio-token',
    projected: {
      sources: [{serviceAccountToken: {audience: 'istio-ca', expirationSeconds: 43200, path: 'istio-token'}}],
    },
  },
  {name: 'istiod-ca-cert', configMap: {name: 'istio-ca-root-cert'}},
]

const PROXY_MOUNTS = [
  {mountPath: '/var/run/secrets/workload-spiffe-uds', name: 'workload-socket'},
  {mountPath: '/var/run/secrets/credential-uds', name: 'credential-socket'},
  {mountPath: '/var/run/secrets/workload-spiffe-credentials', name: 'workload-certs'},
  {mountPath: '/var/run/secrets/istio', name: 'istiod-ca-cert'},
  {mountPath: '/var/lib/istio/data', name: 'istio-data'},
  {mountPath: '/etc/istio/proxy', name: 'istio-envoy'},
  {mountPath: '/var/run/secrets/tokens', name: 'istio-token'},
  {mountPath: '/etc/istio/pod', name: 'istio-podinfo'},
]

const fieldEnv = (name: string, fieldPath: string) => ({name, valueFrom: {fieldRef: {apiVersion: 'v1', fieldPath}}})

/** The workload a pod belongs to, as the injector names it (ISTIO_META_WORKLOAD_NAME, canonical name). */
function workloadOf(pod: KubeObject): {name: string; owner?: string} {
  const owner = pod.metadata.ownerReferences?.find((o) => o.controller) ?? pod.metadata.ownerReferences?.[0]
  const ns = pod.metadata.namespace ?? 'default'
  if (owner?.kind === 'ReplicaSet') {
    const hash = pod.metadata.labels?.['pod-template-hash']
    const name = hash && owner.name.endsWith(`-${hash}`) ? owner.name.slice(0, -(hash.length + 1)) : owner.name
    return {name, owner: `kubernetes://apis/apps/v1/namespaces/${ns}/deployments/${name}`}
  }
  if (owner?.kind === 'Job') {
    const cron = /^(.*)-\d+$/.exec(owner.name)
    if (cron) return {name: cron[1]!, owner: `kubernetes://apis/batch/v1/namespaces/${ns}/cronjobs/${cron[1]}`}
    return {name: owner.name, owner: `kubernetes://apis/batch/v1/namespaces/${ns}/jobs/${owner.name}`}
  }
  if (owner) {
    const group = owner.apiVersion.includes('/') ? `apis/${owner.apiVersion}` : `api/${owner.apiVersion}`
    return {
      name: owner.name,
      owner: `kubernetes://${group}/namespaces/${ns}/${owner.kind.toLowerCase()}s/${owner.name}`,
    }
  }
  const name = pod.metadata.name ?? String(pod.metadata.generateName ?? 'pod').replace(/-$/, '')
  return {name, owner: `kubernetes://api/v1/namespaces/${ns}/pods/${name}`}
}

function proxyResources(annotations: Record<string, string>): Record<string, Record<string, string>> {
  const requests: Record<string, string> = {
    cpu: annotations['sidecar.istio.io/proxyCPU'] ?? '100m',
    memory: annotations['sidecar.istio.io/proxyMemory'] ?? '128Mi',
  }
  const limits: Record<string, string> = {
    cpu: annotations['sidecar.istio.io/proxyCPULimit'] ?? '2000m',
    memory: annotations['sidecar.istio.io/proxyMemoryLimit'] ?? '1024Mi',
  }
  return {limits, requests}
}

function mutate(pod: KubeObject, settings: InjectorSettings, native: boolean): KubeObject {
  const meta = pod.metadata
  const labels = (meta.labels ??= {})
  const annotations = (meta.annotations ??= {})
  const spec = (pod.spec ??= {})
  const containers: Container[] = (spec.containers ??= [])
  const appContainers = containers.map((c) => c.name)
  const workload = workloadOf(pod)
  const image = annotations['sidecar.istio.io/proxyImage'] ?? settings.proxyImage

  const env: NonNullable<Container['env']> = [
    {name: 'PILOT_CERT_PROVIDER', value: 'istiod'},
    {name: 'CA_ADDR', value: settings.discoveryAddress},
    fieldEnv('POD_NAME', 'metadata.name'),
    fieldEnv('POD_NAMESPACE', 'metadata.namespace'),
    fieldEnv('INSTANCE_IP', 'status.podIP'),
    fieldEnv('SERVICE_ACCOUNT', 'spec.serviceAccountName'),
    fieldEnv('HOST_IP', 'status.hostIP'),
    {name: 'ISTIO_CPU_LIMIT', valueFrom: {resourceFieldRef: {divisor: '0', resource: 'limits.cpu'}}},
    {name: 'PROXY_CONFIG', value: '{}\n'},
    {name: 'ISTIO_META_POD_PORTS', value: JSON.stringify(containers.flatMap((c) => c.ports ?? []))},
    {name: 'ISTIO_META_APP_CONTAINERS', value: appContainers.join(',')},
    {name: 'ISTIO_META_CLUSTER_ID', value: 'Kubernetes'},
    fieldEnv('ISTIO_META_NODE_NAME', 'spec.nodeName'),
    {name: 'ISTIO_META_INTERCEPTION_MODE', value: 'REDIRECT'},
    {name: 'ISTIO_META_WORKLOAD_NAME', value: workload.name},
    ...(workload.owner ? [{name: 'ISTIO_META_OWNER', value: workload.owner}] : []),
    {name: 'ISTIO_META_MESH_ID', value: settings.trustDomain},
    {name: 'TRUST_DOMAIN', value: settings.trustDomain},
    ...(settings.hbone ? [{name: 'ISTIO_META_ENABLE_HBONE', value: 'true'}] : []),
  ]
  const proxy: Container = {
    name: 'istio-proxy',
    image,
    args: [
      'proxy',
      'sidecar',
      '--domain',
      '$(POD_NAMESPACE).svc.cluster.local',
      '--proxyLogLevel=warning',
      '--proxyComponentLogLevel=misc:error',
      '--log_output_level=default:info',
    ],
    env,
    ports: [{containerPort: 15090, name: 'http-envoy-prom', protocol: 'TCP'}],
    readinessProbe: {
      failureThreshold: 4,
      httpGet: {path: '/healthz/ready', port: 15021, scheme: 'HTTP'},
      periodSeconds: 15,
      timeoutSeconds: 3,
    },
    resources: proxyResources(annotations),
    securityContext: {
      allowPrivilegeEscalation: false,
      capabilities: {drop: ['ALL']},
      privileged: false,
      readOnlyRootFilesystem: true,
      runAsGroup: 1337,
      runAsNonRoot: true,
      runAsUser: 1337,
    },
    volumeMounts: PROXY_MOUNTS,
  }
  if (native) {
    proxy.restartPolicy = 'Always'
    proxy.startupProbe = {
      failureThreshold: 600,
      httpGet: {path: '/healthz/ready', port: 15021, scheme: 'HTTP'},
      periodSeconds: 1,
      timeoutSeconds: 3,
    }
  }

  const iptablesArgs = [
    'istio-iptables',
    '-p',
    '15001',
    '-z',
    '15006',
    '-u',
    '1337',
    '-m',
    'REDIRECT',
    '-i',
    '*',
    '-x',
    '',
    '-b',
    '*',
    '-d',
    '15090,15021,15020',
    '--log_output_level=default:info',
  ]
  const capture: Container =
    settings.interception === 'istio-cni'
      ? {
          name: 'istio-validation',
          image,
          args: [...iptablesArgs, '--run-validation', '--skip-rule-apply'],
          resources: proxyResources(annotations),
          securityContext: {
            allowPrivilegeEscalation: false,
            capabilities: {drop: ['ALL']},
            privileged: false,
            readOnlyRootFilesystem: true,
            runAsGroup: 1337,
            runAsNonRoot: true,
            runAsUser: 1337,
          },
        }
      : {
          name: 'istio-init',
          image,
          args: iptablesArgs,
          resources: proxyResources(annotations),
          securityContext: {
            allowPrivilegeEscalation: false,
            capabilities: {add: ['NET_ADMIN', 'NET_RAW'], drop: ['ALL']},
            privileged: false,
            readOnlyRootFilesystem: false,
            runAsGroup: 0,
            runAsNonRoot: false,
            runAsUser: 0,
          },
        }

  // The injected init containers run first (a native proxy must be up before the app's own init
  // containers need the network); a classic proxy is appended to the app containers.
  const injectedInit = native ? [capture, proxy] : [capture]
  spec.initContainers = [...injectedInit, ...((spec.initContainers as Container[] | undefined) ?? [])]
  if (!native) spec.containers = [...containers, proxy]
  spec.volumes = [...((spec.volumes as unknown[] | undefined) ?? []), ...structuredClone(ISTIO_VOLUMES)]

  labels[TLS_MODE] = 'istio'
  labels[CANONICAL_NAME] ??= labels['app.kubernetes.io/name'] ?? labels.app ?? workload.name
  labels[CANONICAL_REVISION] ??= labels['app.kubernetes.io/version'] ?? labels.version ?? 'latest'
  if (settings.hbone) labels[TUNNEL] = 'http'

  annotations['istio.io/rev'] = settings.revision
  if (appContainers[0] !== undefined) {
    annotations['kubectl.kubernetes.io/default-container'] ??= appContainers[0]
    annotations['kubectl.kubernetes.io/default-logs-container'] ??= appContainers[0]
  }
  annotations['prometheus.io/path'] ??= '/stats/prometheus'
  annotations['prometheus.io/port'] ??= '15020'
  annotations['prometheus.io/scrape'] ??= 'true'
  // Key order and the null for absent imagePullSecrets as the injector marshals the record.
  annotations[SIDECAR_STATUS] = JSON.stringify({
    initContainers: injectedInit.map((c) => c.name),
    containers: native ? null : ['istio-proxy'],
    volumes: ISTIO_VOLUMES.map((v) => v.name),
    imagePullSecrets: null,
    revision: settings.revision,
  })
  return pod
}
