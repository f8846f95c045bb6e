// The control-plane fixture: what `istioctl install --set profile=ambient` (or the Helm charts)
// leaves in a cluster, as far as the tool and the fake components look at it — the root namespace,
// istiod per revision (Deployment, Service, mesh config, injector ConfigMap, the
// istio-sidecar-injector MutatingWebhookConfiguration with the chart's webhooks, DOMAIN §2.1),
// revision tags, the ztunnel and istio-cni DaemonSets, Nodes, and the GatewayClasses. Every knob
// a preflight test may want to turn is an option (version, revisions, native sidecars, HBONE,
// ambient off, broken ztunnel…).
import type {KubeObject, ObjectRef} from '../../../src/planner/model.js'
import {type ClusterApi, isConflict} from './api.js'
import {NEVER_READY_ANNOTATION} from './controllers/kubelet.js'
import {WAYPOINT_CONTROLLER_NAME} from './istio/waypoints.js'
import {GATEWAY_API_VERSIONS} from './state.js'

export type ComponentState = 'ready' | 'not-ready' | 'absent'

export interface RevisionInstall {
  /** Revision name; "default" = the unrevisioned install (istiod, istio-sidecar-injector). */
  revision: string
  /** Istio version of this revision (image tags); default: the install's version. */
  version?: string
  /** istiod running but never ready: its waypoints are never reconciled. */
  istiod?: 'ready' | 'not-ready'
}

export interface InstallOptions {
  rootNamespace: string
  /** Istio version ("1.30.3"): istiod, proxy, ztunnel and istio-cni image tags. */
  version: string
  /** The revision installed, or several side by side (canary upgrades). */
  revisions: RevisionInstall[]
  /** Revision tags (istioctl tag set): tag → revision. */
  tags: Record<string, string>
  /** PILOT_ENABLE_AMBIENT on istiod, and with it ztunnel and istio-cni (unless set to 'absent'). */
  ambient: boolean
  /** meshConfig.defaultConfig.proxyMetadata.ISTIO_META_ENABLE_HBONE (the ambient profile sets it). */
  hbone: boolean
  /** meshConfig.trustDomain (and trustDomainAliases) of the mesh ConfigMap. */
  trustDomain?: {name: string; aliases?: string[]}
  /** ENABLE_NATIVE_SIDECARS on istiod; 'auto' (the default) = native only when every node runs ≥ 1.33. */
  nativeSidecars: boolean | 'auto'
  /** How sidecars capture traffic: istio-cni (istio-validation init container) or istio-init. Default: istio-cni when installed. */
  sidecarInterception?: 'istio-cni' | 'istio-init'
  /** sidecarInjectorWebhook.enableNamespacesByDefault (the auto webhook, E3). */
  enableNamespacesByDefault: boolean
  /** Injector ConfigMap `policy`. */
  injectionPolicy: 'enabled' | 'disabled'
  /** Nodes to create: a count or names; none are created when the cluster already has Nodes. */
  nodes: number | string[]
  /** kubeletVersion the Nodes report. */
  kubeletVersion: string
  ztunnel: ComponentState
  istioCni: ComponentState
  /** The istio-waypoint and istio GatewayClasses (istiod creates them; false = missing, for preflight tests). */
  gatewayClasses: boolean
}

export type InstallOptionsInput = Partial<InstallOptions>

export const DEFAULT_INSTALL: InstallOptions = {
  rootNamespace: 'istio-system',
  version: '1.30.3',
  revisions: [{revision: 'default'}],
  tags: {},
  ambient: true,
  hbone: true,
  nativeSidecars: 'auto',
  enableNamespacesByDefault: false,
  injectionPolicy: 'enabled',
  nodes: 2,
  kubeletVersion: 'v1.32.0',
  ztunnel: 'ready',
  istioCni: 'ready',
  gatewayClasses: true,
}

export function resolveInstallOptions(input: InstallOptionsInput = {}): InstallOptions {
  const defined = Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined)) as InstallOptionsInput
  const merged = {...DEFAULT_INSTALL, ...defined}
  // Without ambient, the ambient profile's HBONE metadata and components are not there either.
  if (input.ambient === false) {
    if (input.hbone === undefined) merged.hbone = false
    if (input.ztunnel === undefined) merged.ztunnel = 'absent'
    if (input.istioCni === undefined) merged.istioCni = 'absent'
  }
  return merged
}

const suffixed = (base: string, revision: string) => (revision === 'default' ? base : `${base}-${revision}`)

// ---------------------------------------------------------------------------------------------
// Webhooks (manifests/charts/istio-control/istio-discovery/templates/mutatingwebhook.yaml)

function webhook(
  name: string,
  service: string,
  root: string,
  namespaceSelector: unknown,
  objectSelector: unknown,
): Record<string, unknown> {
  return {
    name,
    clientConfig: {service: {name: service, namespace: root, path: '/inject', port: 443}},
    sideEffects: 'None',
    rules: [{operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods']}],
    failurePolicy: 'Fail',
    reinvocationPolicy: 'Never',
    admissionReviewVersions: ['v1'],
    namespaceSelector,
    objectSelector,
  }
}

/** The injection webhooks for `values` (a revision or a tag), plus the legacy ones when it is the default. */
function injectionWebhooks(
  values: string,
  isDefault: boolean,
  enableNamespacesByDefault: boolean,
  service: string,
  root: string,
): Record<string, unknown>[] {
  const notFalse = {key: 'sidecar.istio.io/inject', operator: 'NotIn', values: ['false']}
  const hooks = [
    webhook(
      'rev.namespace.sidecar-injector.istio.io',
      service,
      root,
      {
        matchExpressions: [
          {key: 'istio.io/rev', operator: 'In', values: [values]},
          {key: 'istio-injection', operator: 'DoesNotExist'},
        ],
      },
      {matchExpressions: [notFalse]},
    ),
    webhook(
      'rev.object.sidecar-injector.istio.io',
      service,
      root,
      {
        matchExpressions: [
          {key: 'istio.io/rev', operator: 'DoesNotExist'},
          {key: 'istio-injection', operator: 'DoesNotExist'},
        ],
      },
      {matchExpressions: [notFalse, {key: 'istio.io/rev', operator: 'In', values: [values]}]},
    ),
  ]
  if (isDefault) {
    hooks.push(
      webhook(
        'namespace.sidecar-injector.istio.io',
        service,
        root,
        {matchExpressions: [{key: 'istio-injection', operator: 'In', values: ['enabled']}]},
        {matchExpressions: [notFalse]},
      ),
      webhook(
        'object.sidecar-injector.istio.io',
        service,
        root,
        {
          matchExpressions: [
            {key: 'istio-injection', operator: 'DoesNotExist'},
            {key: 'istio.io/rev', operator: 'DoesNotExist'},
          ],
        },
        {
          matchExpressions: [
            {key: 'sidecar.istio.io/inject', operator: 'In', values: ['true']},
            {key: 'istio.io/rev', operator: 'DoesNotExist'},
          ],
        },
      ),
    )
    if (enableNamespacesByDefault) {
      hooks.push(
        webhook(
          'auto.sidecar-injector.istio.io',
          service,
          root,
          {
            matchExpressions: [
              {key: 'istio-injection', operator: 'DoesNotExist'},
              {key: 'istio.io/rev', operator: 'DoesNotExist'},
              {
                key: 'kubernetes.io/metadata.name',
                operator: 'NotIn',
                values: ['kube-system', 'kube-public', 'kube-node-lease', 'local-path-storage'],
              },
            ],
          },
          {
            matchExpressions: [
              {key: 'sidecar.istio.io/inject', operator: 'DoesNotExist'},
              {key: 'istio.io/rev', operator: 'DoesNotExist'},
            ],
          },
        ),
      )
    }
  }
  return hooks
}

// ---------------------------------------------------------------------------------------------
// Objects

const dataplaneNone = {'sidecar.istio.io/inject': 'false', 'istio.io/dataplane-mode': 'none'}
const systemTolerations = [
  {effect: 'NoSchedule', operator: 'Exists'},
  {key: 'CriticalAddonsOnly', operator: 'Exists'},
  {effect: 'NoExecute', operator: 'Exists'},
]

function nodeObjects(o: InstallOptions): KubeObject[] {
  const names = typeof o.nodes === 'number' ? Array.from({length: o.nodes}, (_, i) => `node-${i + 1}`) : o.nodes
  const at = new Date().toISOString().replace(/\.\d+Z$/, 'Z')
  const condition = (type: string, status: string, reason: string, message: string) => ({
    type,
    status,
    reason,
    message,
    lastHeartbeatTime: at,
    lastTransitionTime: at,
  })
  return names.map((name, i) => ({
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      labels: {
        'kubernetes.io/hostname': name,
        'kubernetes.io/os': 'linux',
        'kubernetes.io/arch': 'amd64',
        'beta.kubernetes.io/os': 'linux',
        'beta.kubernetes.io/arch': 'amd64',
        'topology.kubernetes.io/zone': `zone-${String.fromCharCode(97 + (i % 3))}`,
      },
    },
    spec: {podCIDR: `10.244.${i + 1}.0/24`, podCIDRs: [`10.244.${i + 1}.0/24`]},
    status: {
      conditions: [
        condition('MemoryPressure', 'False', 'KubeletHasSufficientMemory', 'kubelet has sufficient memory available'),
        condition('DiskPressure', 'False', 'KubeletHasNoDiskPressure', 'kubelet has no disk pressure'),
        condition('PIDPressure', 'False', 'KubeletHasSufficientPID', 'kubelet has sufficient PID available'),
        condition('Ready', 'True', 'KubeletReady', 'kubelet is posting ready status'),
      ],
      addresses: [
        {type: 'InternalIP', address: `172.18.0.${i + 2}`},
        {type: 'Hostname', address: name},
      ],
      capacity: {cpu: '8', memory: '16Gi', pods: '110', 'ephemeral-storage': '100Gi'},
      allocatable: {cpu: '8', memory: '16Gi', pods: '110', 'ephemeral-storage': '100Gi'},
      nodeInfo: {
        kubeletVersion: o.kubeletVersion,
        kubeProxyVersion: o.kubeletVersion,
        containerRuntimeVersion: 'containerd://1.7.24',
        operatingSystem: 'linux',
        architecture: 'amd64',
        osImage: 'Debian GNU/Linux 12 (bookworm)',
        kernelVersion: '6.1.0-28-amd64',
        machineID: `${i + 1}`.padStart(32, '0'),
        systemUUID: `00000000-0000-0000-0000-${`${i + 1}`.padStart(12, '0')}`,
        bootID: `00000000-0000-0000-0000-${`${i + 1}`.padStart(12, '0')}`,
      },
    },
  }))
}

function revisionObjects(o: InstallOptions, r: RevisionInstall): KubeObject[] {
  const root = o.rootNamespace
  const rev = r.revision
  const version = r.version ?? o.version
  const name = suffixed('istiod', rev)
  const interception = o.sidecarInterception ?? (o.istioCni !== 'absent' ? 'istio-cni' : 'istio-init')
  const revLabel = {'istio.io/rev': rev}
  const podLabels = {app: 'istiod', istio: 'pilot', ...revLabel, ...dataplaneNone}
  const env: {name: string; value?: string; valueFrom?: unknown}[] = [
    {name: 'REVISION', value: rev},
    {name: 'PILOT_CERT_PROVIDER', value: 'istiod'},
    {name: 'POD_NAME', valueFrom: {fieldRef: {apiVersion: 'v1', fieldPath: 'metadata.name'}}},
    {name: 'POD_NAMESPACE', valueFrom: {fieldRef: {apiVersion: 'v1', fieldPath: 'metadata.namespace'}}},
    {name: 'SERVICE_ACCOUNT', valueFrom: {fieldRef: {apiVersion: 'v1', fieldPath: 'spec.serviceAccountName'}}},
    {name: 'PILOT_TRACE_SAMPLING', value: '1'},
    {name: 'ISTIOD_ADDR', value: `${name}.${root}.svc:15012`},
    {name: 'CLUSTER_ID', value: 'Kubernetes'},
  ]
  if (o.ambient) env.push({name: 'PILOT_ENABLE_AMBIENT', value: 'true'})
  if (o.nativeSidecars !== 'auto') env.push({name: 'ENABLE_NATIVE_SIDECARS', value: String(o.nativeSidecars)})
  const mesh = [
    'defaultConfig:',
    `  discoveryAddress: ${name}.${root}.svc:15012`,
    ...(o.hbone ? ['  proxyMetadata:', '    ISTIO_META_ENABLE_HBONE: "true"'] : []),
    'defaultProviders:',
    '  metrics:',
    '  - prometheus',
    'enablePrometheusMerge: true',
    `rootNamespace: ${root}`,
    `trustDomain: ${o.trustDomain?.name ?? 'cluster.local'}`,
    ...(o.trustDomain?.aliases?.length ? [`trustDomainAliases: [${o.trustDomain.aliases.join(', ')}]`] : []),
    '',
  ].join('\n')
  const values = {
    global: {
      hub: 'docker.io/istio',
      tag: version,
      istioNamespace: root,
      proxy: {image: 'proxyv2', autoInject: o.injectionPolicy},
    },
    pilot: {cni: {enabled: interception === 'istio-cni'}, env: o.ambient ? {PILOT_ENABLE_AMBIENT: 'true'} : {}},
    istio_cni: {enabled: interception === 'istio-cni'},
    revision: rev === 'default' ? '' : rev,
    sidecarInjectorWebhook: {
      enableNamespacesByDefault: o.enableNamespacesByDefault,
      reinvocationPolicy: 'Never',
      rewriteAppHTTPProbe: true,
    },
  }
  const injectorConfig = [
    'defaultTemplates: [sidecar]',
    `policy: ${o.injectionPolicy}`,
    'alwaysInjectSelector: []',
    'neverInjectSelector: []',
    'injectedAnnotations: {}',
    '',
  ].join('\n')
  // The legacy (non-rev) webhooks belong to the default revision unless a "default" tag takes them.
  const legacyHere = rev === 'default' && o.tags.default === undefined
  return [
    {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: {name: suffixed('istiod', rev), namespace: root, labels: {app: 'istiod', ...revLabel}},
    },
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        name: suffixed('istio', rev),
        namespace: root,
        labels: {'istio.io/rev': rev, 'install.operator.istio.io/owning-resource': 'unknown'},
      },
      data: {mesh, meshNetworks: 'networks: {}'},
    },
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {name: suffixed('istio-sidecar-injector', rev), namespace: root, labels: {'istio.io/rev': rev}},
      data: {config: injectorConfig, values: JSON.stringify(values)},
    },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: {
        name,
        namespace: root,
        labels: {
          app: 'istiod',
          istio: 'pilot',
          ...revLabel,
          'app.kubernetes.io/name': 'istiod',
          'app.kubernetes.io/version': version,
          'operator.istio.io/component': 'Pilot',
        },
      },
      spec: {
        replicas: 1,
        selector: {matchLabels: {istio: 'pilot', ...revLabel}},
        strategy: {rollingUpdate: {maxSurge: '100%', maxUnavailable: '25%'}},
        template: {
          metadata: {
            labels: podLabels,
            annotations: {
              'sidecar.istio.io/inject': 'false',
              ...(r.istiod === 'not-ready' ? {[NEVER_READY_ANNOTATION]: 'true'} : {}),
            },
          },
          spec: {
            serviceAccountName: suffixed('istiod', rev),
            tolerations: [{key: 'cni.istio.io/not-ready', operator: 'Exists'}],
            containers: [
              {
                name: 'discovery',
                image: `docker.io/istio/pilot:${version}`,
                args: [
                  'discovery',
                  '--monitoringAddr=:15014',
                  '--log_output_level=default:info',
                  '--domain',
                  'cluster.local',
                  '--keepaliveMaxServerConnectionAge',
                  '30m',
                ],
                ports: [
                  {containerPort: 8080, protocol: 'TCP'},
                  {containerPort: 15010, protocol: 'TCP'},
                  {containerPort: 15017, protocol: 'TCP'},
                ],
                readinessProbe: {
                  httpGet: {path: '/ready', port: 8080},
                  initialDelaySeconds: 1,
                  periodSeconds: 3,
                  timeoutSeconds: 5,
                },
                env,
              },
            ],
          },
        },
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: {name, namespace: root, labels: {app: 'istiod', istio: 'pilot', ...revLabel}},
      spec: {
        selector: {app: 'istiod', ...revLabel},
        ports: [
          {name: 'grpc-xds', port: 15010, protocol: 'TCP'},
          {name: 'https-dns', port: 15012, protocol: 'TCP'},
          {name: 'https-webhook', port: 443, protocol: 'TCP', targetPort: 15017},
          {name: 'http-monitoring', port: 15014, protocol: 'TCP'},
        ],
      },
    },
    {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'MutatingWebhookConfiguration',
      metadata: {name: suffixed('istio-sidecar-injector', rev), labels: {app: 'sidecar-injector', ...revLabel}},
      webhooks: injectionWebhooks(rev, legacyHere, o.enableNamespacesByDefault, name, root),
    },
  ]
}

function tagObjects(o: InstallOptions): KubeObject[] {
  return Object.entries(o.tags).map(([tag, rev]) => ({
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'MutatingWebhookConfiguration',
    metadata: {
      name: `istio-revision-tag-${tag}`,
      labels: {app: 'sidecar-injector', 'istio.io/rev': rev, 'istio.io/tag': tag},
    },
    webhooks: injectionWebhooks(
      tag,
      tag === 'default',
      o.enableNamespacesByDefault,
      suffixed('istiod', rev),
      o.rootNamespace,
    ),
  }))
}

function daemonSet(
  o: InstallOptions,
  name: string,
  podLabels: Record<string, string>,
  state: ComponentState,
  spec: Record<string, unknown>,
): KubeObject[] {
  if (state === 'absent') return []
  return [
    {apiVersion: 'v1', kind: 'ServiceAccount', metadata: {name, namespace: o.rootNamespace}},
    {
      apiVersion: 'apps/v1',
      kind: 'DaemonSet',
      metadata: {
        name,
        namespace: o.rootNamespace,
        labels: {...podLabels, 'app.kubernetes.io/name': name, 'app.kubernetes.io/version': o.version},
      },
      spec: {
        selector: {matchLabels: podLabels},
        updateStrategy: {type: 'RollingUpdate', rollingUpdate: {maxSurge: 0, maxUnavailable: 1}},
        template: {
          metadata: {
            labels: {...podLabels, ...dataplaneNone},
            annotations: {
              'sidecar.istio.io/inject': 'false',
              ...(state === 'not-ready' ? {[NEVER_READY_ANNOTATION]: 'true'} : {}),
            },
          },
          spec: {
            serviceAccountName: name,
            nodeSelector: {'kubernetes.io/os': 'linux'},
            tolerations: systemTolerations,
            ...spec,
          },
        },
      },
    },
  ]
}

/** Every object of the control-plane fixture, in creation order. */
export function controlPlaneObjects(input: InstallOptionsInput = {}): KubeObject[] {
  const o = resolveInstallOptions(input)
  const root = o.rootNamespace
  const objects: KubeObject[] = [{apiVersion: 'v1', kind: 'Namespace', metadata: {name: root}}, ...nodeObjects(o)]
  for (const r of o.revisions) objects.push(...revisionObjects(o, r))
  objects.push(...tagObjects(o))
  objects.push(
    ...daemonSet(o, 'ztunnel', {app: 'ztunnel'}, o.ztunnel, {
      containers: [
        {
          name: 'istio-proxy',
          image: `docker.io/istio/ztunnel:${o.version}`,
          args: ['proxy', 'ztunnel'],
          ports: [{containerPort: 15020, name: 'ztunnel-stats', protocol: 'TCP'}],
          readinessProbe: {httpGet: {path: '/healthz/ready', port: 15021}},
        },
      ],
    }),
  )
  if (o.istioCni !== 'absent') {
    objects.push({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {name: 'istio-cni-config', namespace: root},
      data: {
        AMBIENT_ENABLED: String(o.ambient),
        AMBIENT_DNS_CAPTURE: 'true',
        EXCLUDE_NAMESPACES: 'kube-system',
        CHAINED_CNI_PLUGIN: 'true',
        CURRENT_AGENT_VERSION: o.version,
      },
    })
    objects.push(
      ...daemonSet(o, 'istio-cni-node', {'k8s-app': 'istio-cni-node'}, o.istioCni, {
        hostNetwork: true,
        containers: [
          {
            name: 'install-cni',
            image: `docker.io/istio/install-cni:${o.version}`,
            args: ['--log_output_level=info'],
            envFrom: [{configMapRef: {name: 'istio-cni-config'}}],
          },
        ],
      }),
    )
  }
  if (o.gatewayClasses) {
    objects.push(
      {
        apiVersion: GATEWAY_API_VERSIONS[0]!,
        kind: 'GatewayClass',
        metadata: {name: 'istio-waypoint'},
        spec: {controllerName: WAYPOINT_CONTROLLER_NAME, description: 'The default Istio waypoint GatewayClass'},
      },
      {
        apiVersion: GATEWAY_API_VERSIONS[0]!,
        kind: 'GatewayClass',
        metadata: {name: 'istio'},
        spec: {controllerName: 'istio.io/gateway-controller', description: 'The default Istio GatewayClass'},
      },
    )
  }
  return objects
}

export interface InstalledControlPlane {
  /** Objects this call created (in creation order): what uninstall removes. */
  created: ObjectRef[]
  /** Objects that were already there and left untouched. */
  existing: ObjectRef[]
}

function refOf(o: KubeObject): ObjectRef {
  return {
    apiVersion: o.apiVersion,
    kind: o.kind,
    name: o.metadata.name,
    ...(o.metadata.namespace ? {namespace: o.metadata.namespace} : {}),
  }
}

/**
 * Creates the control-plane fixture through the API (objects that already exist are left alone, so
 * it is safe on a cluster that has some of them). Status the objects carry (Nodes) is written
 * through the status subresource. Nodes are only created when the cluster has none.
 */
export async function installControlPlane(
  api: ClusterApi,
  input: InstallOptionsInput = {},
): Promise<InstalledControlPlane> {
  const result: InstalledControlPlane = {created: [], existing: []}
  const nodeResource = await api.resource('v1', 'Node')
  const haveNodes = nodeResource ? (await api.list(nodeResource)).items.length > 0 : false
  for (const obj of controlPlaneObjects(input)) {
    if (obj.kind === 'Node' && haveNodes) continue
    const ref = refOf(obj)
    if (!(await api.resource(obj.apiVersion, obj.kind))) {
      throw new Error(`the cluster does not serve ${obj.kind} (${obj.apiVersion}); install the Gateway API CRDs first`)
    }
    if (await api.get(ref)) {
      result.existing.push(ref)
      continue
    }
    const {status, ...body} = obj
    try {
      await api.create(body as KubeObject)
    } catch (error) {
      if (isConflict(error)) {
        result.existing.push(ref)
        continue
      }
      throw error
    }
    if (status !== undefined) await api.patch(ref, {status}, {subresource: 'status'})
    if (obj.kind === 'Node') await removeNotReadyTaint(api, ref)
    result.created.push(ref)
  }
  return result
}

/**
 * A real server taints new Nodes node.kubernetes.io/not-ready:NoSchedule (admission plugin
 * TaintNodesByCondition); the node lifecycle controller lifts it once the Node is Ready. Play that
 * controller for the Nodes installed Ready, or only tolerating pods (DaemonSets) would be placed.
 */
async function removeNotReadyTaint(api: ClusterApi, ref: ObjectRef): Promise<void> {
  const node = await api.get(ref)
  const taints: {key: string}[] = node?.spec?.taints ?? []
  const kept = taints.filter((t) => t.key !== 'node.kubernetes.io/not-ready')
  if (kept.length !== taints.length)
    await api.patch(ref, {metadata: {resourceVersion: node!.metadata.resourceVersion}, spec: {taints: kept}})
}

/** Deletes what installControlPlane created, newest first. */
export async function uninstallControlPlane(api: ClusterApi, installed: InstalledControlPlane): Promise<void> {
  for (const ref of [...installed.created].reverse()) await api.delete(ref).catch(() => undefined)
}
