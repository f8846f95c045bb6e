// Merge semantics of the built-in kinds' fields, as their OpenAPI schemas declare them
// (x-kubernetes-list-type / list-map-keys / map-type for server-side apply;
// x-kubernetes-patch-merge-key / patch-strategy for strategic merge patch). Only fields
// with a non-default behaviour are listed; everything else is a granular map or an atomic
// list, which is the default for both mechanisms.
import type {StructuralSchema} from '../validation/schema.js'

const open = (
  properties: Record<string, StructuralSchema> = {},
  extra: Partial<StructuralSchema> = {},
): StructuralSchema => ({
  type: 'object',
  'x-kubernetes-preserve-unknown-fields': true,
  properties,
  ...extra,
})

const listMap = (
  keys: string[],
  items: StructuralSchema = open(),
  mergeKey = keys[0]!,
  strategy = 'merge',
): StructuralSchema => ({
  type: 'array',
  'x-kubernetes-list-type': 'map',
  'x-kubernetes-list-map-keys': keys,
  'x-kubernetes-patch-merge-key': mergeKey,
  'x-kubernetes-patch-strategy': strategy,
  items,
})

const atomicList: StructuralSchema = {type: 'array', 'x-kubernetes-list-type': 'atomic', items: open()}
const stringSet: StructuralSchema = {
  type: 'array',
  'x-kubernetes-list-type': 'set',
  'x-kubernetes-patch-strategy': 'merge',
  items: {type: 'string'},
}
const stringMap: StructuralSchema = {type: 'object', additionalProperties: {type: 'string'}}
const atomicStringMap: StructuralSchema = {
  type: 'object',
  additionalProperties: {type: 'string'},
  'x-kubernetes-map-type': 'atomic',
}
const labelSelector: StructuralSchema = open(
  {matchLabels: stringMap, matchExpressions: atomicList},
  {'x-kubernetes-map-type': 'atomic'},
)
const conditions = listMap(['type'])

const objectMeta = open({
  labels: stringMap,
  annotations: stringMap,
  ownerReferences: listMap(['uid']),
  finalizers: stringSet,
  managedFields: atomicList,
})

const withProtocolDefault = (keyField: string): StructuralSchema =>
  open({[keyField]: {type: 'integer'}, protocol: {type: 'string', default: 'TCP'}})

const container = open({
  ports: listMap(['containerPort', 'protocol'], withProtocolDefault('containerPort'), 'containerPort'),
  env: listMap(['name']),
  envFrom: atomicList,
  volumeMounts: listMap(['mountPath']),
  volumeDevices: listMap(['devicePath']),
  resizePolicy: atomicList,
  args: atomicList,
  command: atomicList,
})

export const podSpec = open({
  containers: listMap(['name'], container),
  initContainers: listMap(['name'], container),
  ephemeralContainers: listMap(['name'], container),
  volumes: listMap(['name'], open(), 'name', 'merge,retainKeys'),
  imagePullSecrets: listMap(['name']),
  hostAliases: listMap(['ip']),
  topologySpreadConstraints: listMap(['topologyKey', 'whenUnsatisfiable'], open(), 'topologyKey'),
  resourceClaims: listMap(['name'], open(), 'name', 'merge,retainKeys'),
  schedulingGates: listMap(['name']),
  tolerations: atomicList,
  readinessGates: atomicList,
  nodeSelector: atomicStringMap,
})

const podTemplate = open({metadata: objectMeta, spec: podSpec})

const podStatus = open({
  conditions,
  containerStatuses: atomicList,
  initContainerStatuses: atomicList,
  ephemeralContainerStatuses: atomicList,
  podIPs: listMap(['ip']),
  hostIPs: atomicList,
})

const root = (
  spec?: StructuralSchema,
  status?: StructuralSchema,
  extra: Record<string, StructuralSchema> = {},
): StructuralSchema => open({metadata: objectMeta, ...(spec ? {spec} : {}), ...(status ? {status} : {}), ...extra})

const workloadStatus = open({conditions})

export const BUILTIN_MERGE_SCHEMAS: Record<string, StructuralSchema> = {
  Namespace: root(open({finalizers: atomicList}), open({conditions})),
  Pod: root(podSpec, podStatus),
  Service: root(
    open({
      ports: listMap(['port', 'protocol'], withProtocolDefault('port'), 'port'),
      selector: atomicStringMap,
      clusterIPs: atomicList,
      ipFamilies: atomicList,
      externalIPs: atomicList,
      loadBalancerSourceRanges: atomicList,
    }),
    open({conditions, loadBalancer: open({ingress: atomicList})}),
  ),
  ServiceAccount: root(undefined, undefined, {secrets: listMap(['name']), imagePullSecrets: atomicList}),
  ConfigMap: root(undefined, undefined, {data: stringMap, binaryData: stringMap}),
  Secret: root(undefined, undefined, {data: stringMap, stringData: stringMap}),
  Node: root(
    open({taints: atomicList, podCIDRs: stringSet}),
    open({conditions, addresses: listMap(['type']), images: atomicList}),
  ),
  Event: root(),
  Deployment: root(
    open({
      selector: labelSelector,
      template: podTemplate,
      strategy: open({}, {'x-kubernetes-patch-strategy': 'retainKeys'}),
    }),
    workloadStatus,
  ),
  StatefulSet: root(
    open({
      selector: labelSelector,
      template: podTemplate,
      volumeClaimTemplates: atomicList,
      updateStrategy: open({}, {'x-kubernetes-patch-strategy': 'retainKeys'}),
    }),
    workloadStatus,
  ),
  DaemonSet: root(
    open({
      selector: labelSelector,
      template: podTemplate,
      updateStrategy: open({}, {'x-kubernetes-patch-strategy': 'retainKeys'}),
    }),
    workloadStatus,
  ),
  ReplicaSet: root(open({selector: labelSelector, template: podTemplate}), workloadStatus),
  Job: root(open({selector: labelSelector, template: podTemplate}), open({conditions: atomicList})),
  CronJob: root(
    open({jobTemplate: open({metadata: objectMeta, spec: open({selector: labelSelector, template: podTemplate})})}),
    open({active: atomicList}),
  ),
  Lease: root(open()),
  NetworkPolicy: root(
    open({podSelector: labelSelector, ingress: atomicList, egress: atomicList, policyTypes: atomicList}),
  ),
  MutatingWebhookConfiguration: root(undefined, undefined, {webhooks: listMap(['name'])}),
  ValidatingWebhookConfiguration: root(undefined, undefined, {webhooks: listMap(['name'])}),
  CustomResourceDefinition: root(open({versions: atomicList}), open({conditions, storedVersions: atomicList})),
  SelfSubjectAccessReview: root(),
}
