// A cluster with Istio installed in ambient mode, as the API shows it after `istioctl install
// --set profile=ambient`: istiod, ztunnel and istio-cni on two nodes, the waypoint GatewayClass, and a
// sidecar namespace "shop" with one L7 policy (so its plan deploys a waypoint). Tests break one thing
// at a time on top of it.
import type {KubeObject} from '../../src/planner/model.js'
import type {ClusterServer} from './server.js'
import {ns, pod, sidecarPod} from './support.js'

export const ROOT = 'istio-system'
export const NAMESPACE = 'shop'
export const NODES = ['node-a', 'node-b']

export function istiod(
  opts: {
    name?: string
    revision?: string
    version?: string
    ambient?: boolean
    env?: {name: string; value: string}[]
  } = {},
): KubeObject {
  const name = opts.name ?? 'istiod'
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {
      name,
      namespace: ROOT,
      labels: {app: 'istiod', ...(opts.revision ? {'istio.io/rev': opts.revision} : {})},
    },
    spec: {
      selector: {matchLabels: {app: 'istiod', ...(opts.revision ? {'istio.io/rev': opts.revision} : {})}},
      template: {
        metadata: {labels: {app: 'istiod', ...(opts.revision ? {'istio.io/rev': opts.revision} : {})}},
        spec: {
          containers: [
            {
              name: 'discovery',
              image: `docker.io/istio/pilot:${opts.version ?? '1.28.1'}-distroless`,
              env: [
                {name: 'PILOT_ENABLE_HBONE', value: 'true'},
                ...(opts.ambient === false ? [] : [{name: 'PILOT_ENABLE_AMBIENT', value: 'true'}]),
                ...(opts.env ?? []),
              ],
            },
          ],
        },
      },
    },
    status: {replicas: 1, readyReplicas: 1, availableReplicas: 1},
  }
}

export function node(
  name: string,
  opts: {taints?: {key: string; value?: string; effect: string}[]; labels?: Record<string, string>} = {},
): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {name, labels: {'kubernetes.io/os': 'linux', 'kubernetes.io/hostname': name, ...(opts.labels ?? {})}},
    spec: opts.taints ? {taints: opts.taints} : {},
    status: {conditions: [{type: 'Ready', status: 'True'}]},
  }
}

/** A DaemonSet of the chart (tolerations of the ztunnel/istio-cni charts) with its status. */
export function daemonSet(
  name: string,
  podLabels: Record<string, string>,
  opts: {ready?: number; desired?: number; container?: Record<string, unknown>} = {},
): KubeObject {
  const desired = opts.desired ?? NODES.length
  const ready = opts.ready ?? desired
  return {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: {name, namespace: ROOT},
    spec: {
      selector: {matchLabels: podLabels},
      template: {
        metadata: {labels: podLabels},
        spec: {
          nodeSelector: {'kubernetes.io/os': 'linux'},
          tolerations: [
            {effect: 'NoSchedule', operator: 'Exists'},
            {key: 'CriticalAddonsOnly', operator: 'Exists'},
            {effect: 'NoExecute', operator: 'Exists'},
          ],
          containers: [{name: 'main', image: 'docker.io/istio/component:1.28.1', ...(opts.container ?? {})}],
        },
      },
    },
    status: {
      desiredNumberScheduled: desired,
      currentNumberScheduled: desired,
      numberReady: ready,
      numberAvailable: ready,
      updatedNumberScheduled: desired,
      numberMisscheduled: 0,
      observedGeneration: 1,
    },
  }
}

export function daemonSetPods(
  dsName: string,
  podLabels: Record<string, string>,
  notReadyOn: string[] = [],
): KubeObject[] {
  return NODES.map((n) =>
    pod(`${dsName}-${n}`, ROOT, {
      labels: podLabels,
      nodeName: n,
      ready: !notReadyOn.includes(n),
      owner: {apiVersion: 'apps/v1', kind: 'DaemonSet', name: dsName},
    }),
  )
}

export const ZTUNNEL_LABELS = {app: 'ztunnel'}
export const CNI_LABELS = {'k8s-app': 'istio-cni-node'}

export function cniConfigMap(data: Record<string, string> = {}): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {name: 'istio-cni-config', namespace: ROOT},
    data: {AMBIENT_ENABLED: 'true', EXCLUDED_NAMESPACES: 'kube-system', ...data},
  }
}

export function cniDaemonSet(opts: {ready?: number} = {}): KubeObject {
  return daemonSet('istio-cni-node', CNI_LABELS, {
    ...opts,
    container: {name: 'install-cni', envFrom: [{configMapRef: {name: 'istio-cni-config'}}]},
  })
}

export function meshConfig(hbone = true): KubeObject {
  const mesh = hbone
    ? 'defaultConfig:\n  proxyMetadata:\n    ISTIO_META_ENABLE_HBONE: "true"\n'
    : 'defaultConfig:\n  discoveryAddress: istiod.istio-system.svc:15012\n'
  return {apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: 'istio', namespace: ROOT}, data: {mesh}}
}

export function waypointClass(controllerName = 'istio.io/mesh-controller'): KubeObject {
  return {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'GatewayClass',
    metadata: {name: 'istio-waypoint'},
    spec: {controllerName},
    status: {
      conditions: [
        {
          type: 'Accepted',
          status: 'True',
          reason: 'Accepted',
          message: 'Handled by Istio controller',
          lastTransitionTime: '2026-01-01T00:00:00Z',
          observedGeneration: 1,
        },
      ],
    },
  }
}

export function shopObjects(): KubeObject[] {
  const rsOwner = {apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web-5d8f'}
  const web = sidecarPod('web-5d8f-abcde', NAMESPACE, {hbone: true, labels: {app: 'web', 'pod-template-hash': '5d8f'}})
  web.metadata.ownerReferences = [{...rsOwner, uid: 'rs-uid', controller: true}]
  web.spec.containers[0].ports = [{name: 'http', containerPort: 8080}]
  web.spec.containers[0].readinessProbe = {httpGet: {path: '/healthz', port: 'http'}}
  return [
    ns(NAMESPACE, {'istio-injection': 'enabled'}),
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: {name: 'web', namespace: NAMESPACE},
      spec: {
        selector: {matchLabels: {app: 'web'}},
        template: {
          metadata: {labels: {app: 'web'}},
          spec: {containers: [{name: 'web', image: 'web:1', ports: [{name: 'http', containerPort: 8080}]}]},
        },
      },
      status: {replicas: 1, readyReplicas: 1, availableReplicas: 1, updatedReplicas: 1},
    },
    {
      apiVersion: 'apps/v1',
      kind: 'ReplicaSet',
      metadata: {
        name: 'web-5d8f',
        namespace: NAMESPACE,
        labels: {app: 'web', 'pod-template-hash': '5d8f'},
        ownerReferences: [{apiVersion: 'apps/v1', kind: 'Deployment', name: 'web', uid: 'web-uid', controller: true}],
      },
      spec: {
        selector: {matchLabels: {app: 'web', 'pod-template-hash': '5d8f'}},
        template: {
          metadata: {labels: {app: 'web', 'pod-template-hash': '5d8f'}},
          spec: {containers: [{name: 'web', image: 'web:1'}]},
        },
      },
    },
    web,
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: {name: 'web', namespace: NAMESPACE},
      spec: {selector: {app: 'web'}, ports: [{name: 'http', port: 80, targetPort: 8080}]},
    },
    {
      apiVersion: 'security.istio.io/v1',
      kind: 'AuthorizationPolicy',
      metadata: {name: 'web-get-only', namespace: NAMESPACE},
      spec: {selector: {matchLabels: {app: 'web'}}, action: 'ALLOW', rules: [{to: [{operation: {methods: ['GET']}}]}]},
    },
  ]
}

const GATEWAY_API_CRDS = [
  'gatewayclasses',
  'gateways',
  'httproutes',
  'grpcroutes',
  'tcproutes',
  'tlsroutes',
  'backendtlspolicies',
]

/** Sets the bundle-version annotation of the Gateway API CRDs (as an administrator would see it). */
export async function setBundleVersion(server: ClusterServer, plural: string, version: string): Promise<void> {
  const r = await fetch(
    `${server.url}/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${plural}.gateway.networking.k8s.io`,
    {
      method: 'PATCH',
      headers: {Authorization: `Bearer ${server.adminToken}`, 'Content-Type': 'application/merge-patch+json'},
      body: JSON.stringify({metadata: {annotations: {'gateway.networking.k8s.io/bundle-version': version}}}),
    },
  )
  if (r.status !== 200) throw new Error(`patching CRD ${plural}: ${r.status} ${await r.text()}`)
}

export async function deleteCrd(server: ClusterServer, name: string): Promise<void> {
  const r = await fetch(`${server.url}/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`, {
    method: 'DELETE',
    headers: {Authorization: `Bearer ${server.adminToken}`},
  })
  if (r.status !== 200) throw new Error(`deleting CRD ${name}: ${r.status} ${await r.text()}`)
}

/** Everything a healthy ambient installation shows. */
export async function seedAmbientCluster(server: ClusterServer): Promise<void> {
  await server.seed([
    ns(ROOT),
    istiod(),
    meshConfig(),
    cniConfigMap(),
    ...NODES.map((n) => node(n)),
    daemonSet('ztunnel', ZTUNNEL_LABELS),
    ...daemonSetPods('ztunnel', ZTUNNEL_LABELS),
    cniDaemonSet(),
    ...daemonSetPods('istio-cni-node', CNI_LABELS),
    waypointClass(),
    ...shopObjects(),
  ])
  for (const plural of GATEWAY_API_CRDS) await setBundleVersion(server, plural, 'v1.6.1')
}
