// The built-in kinds the tool and the fake controllers use, with the discovery facts of a
// real 1.32 server (plural, short names, categories, scope, verbs, subresources) and the
// registry behaviours that shape responses (generation, DELETE returning the object).
import type {JsonObject, ResourceType} from '../types.js'
import {BUILTIN_HOOKS} from './builtin-behaviour.js'
import {BUILTIN_MERGE_SCHEMAS} from './builtin-schemas.js'

const ALL_VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch']
const NO_DELETECOLLECTION = ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch']

interface Def {
  group: string
  version: string
  kind: string
  plural: string
  namespaced: boolean
  shortNames?: string[]
  categories?: string[]
  verbs?: string[]
  hasStatus?: boolean
  generation?: boolean
  returnDeletedObject?: boolean
  nameRule?: ResourceType['nameRule']
  fieldSelectors?: Record<string, (o: JsonObject) => string>
  virtual?: boolean
}

const str = (v: unknown) => (v === undefined || v === null ? '' : String(v))

const DEFS: Def[] = [
  {
    group: '',
    version: 'v1',
    kind: 'Namespace',
    plural: 'namespaces',
    namespaced: false,
    shortNames: ['ns'],
    verbs: NO_DELETECOLLECTION,
    hasStatus: true,
    returnDeletedObject: true,
    nameRule: 'dns1123-label',
    fieldSelectors: {'status.phase': (o) => str(o.status?.phase)},
  },
  {
    group: '',
    version: 'v1',
    kind: 'Pod',
    plural: 'pods',
    namespaced: true,
    shortNames: ['po'],
    categories: ['all'],
    hasStatus: true,
    returnDeletedObject: true,
    fieldSelectors: {
      'spec.nodeName': (o) => str(o.spec?.nodeName),
      'spec.restartPolicy': (o) => str(o.spec?.restartPolicy),
      'spec.schedulerName': (o) => str(o.spec?.schedulerName),
      'spec.serviceAccountName': (o) => str(o.spec?.serviceAccountName),
      'spec.hostNetwork': (o) => String(o.spec?.hostNetwork === true),
      'status.phase': (o) => str(o.status?.phase),
      'status.podIP': (o) => str(o.status?.podIP),
      'status.nominatedNodeName': (o) => str(o.status?.nominatedNodeName),
    },
  },
  {
    group: '',
    version: 'v1',
    kind: 'Service',
    plural: 'services',
    namespaced: true,
    shortNames: ['svc'],
    categories: ['all'],
    hasStatus: true,
    returnDeletedObject: true,
    nameRule: 'dns1035-label',
    fieldSelectors: {'spec.clusterIP': (o) => str(o.spec?.clusterIP), 'spec.type': (o) => str(o.spec?.type)},
  },
  {
    group: '',
    version: 'v1',
    kind: 'ServiceAccount',
    plural: 'serviceaccounts',
    namespaced: true,
    shortNames: ['sa'],
    returnDeletedObject: true,
  },
  {group: '', version: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true, shortNames: ['cm']},
  {
    group: '',
    version: 'v1',
    kind: 'Secret',
    plural: 'secrets',
    namespaced: true,
    fieldSelectors: {type: (o) => str(o.type)},
  },
  {
    group: '',
    version: 'v1',
    kind: 'Node',
    plural: 'nodes',
    namespaced: false,
    shortNames: ['no'],
    hasStatus: true,
    fieldSelectors: {'spec.unschedulable': (o) => String(o.spec?.unschedulable === true)},
  },
  {
    group: '',
    version: 'v1',
    kind: 'Event',
    plural: 'events',
    namespaced: true,
    shortNames: ['ev'],
    nameRule: 'path-segment',
    fieldSelectors: {
      'involvedObject.kind': (o) => str(o.involvedObject?.kind),
      'involvedObject.namespace': (o) => str(o.involvedObject?.namespace),
      'involvedObject.name': (o) => str(o.involvedObject?.name),
      'involvedObject.uid': (o) => str(o.involvedObject?.uid),
      'involvedObject.apiVersion': (o) => str(o.involvedObject?.apiVersion),
      'involvedObject.resourceVersion': (o) => str(o.involvedObject?.resourceVersion),
      'involvedObject.fieldPath': (o) => str(o.involvedObject?.fieldPath),
      reason: (o) => str(o.reason),
      reportingComponent: (o) => str(o.reportingComponent),
      source: (o) => str(o.source?.component),
      type: (o) => str(o.type),
    },
  },
  {
    group: 'apps',
    version: 'v1',
    kind: 'Deployment',
    plural: 'deployments',
    namespaced: true,
    shortNames: ['deploy'],
    categories: ['all'],
    hasStatus: true,
    generation: true,
  },
  {
    group: 'apps',
    version: 'v1',
    kind: 'StatefulSet',
    plural: 'statefulsets',
    namespaced: true,
    shortNames: ['sts'],
    categories: ['all'],
    hasStatus: true,
    generation: true,
  },
  {
    group: 'apps',
    version: 'v1',
    kind: 'DaemonSet',
    plural: 'daemonsets',
    namespaced: true,
    shortNames: ['ds'],
    categories: ['all'],
    hasStatus: true,
    generation: true,
  },
  {
    group: 'apps',
    version: 'v1',
    kind: 'ReplicaSet',
    plural: 'replicasets',
    namespaced: true,
    shortNames: ['rs'],
    categories: ['all'],
    hasStatus: true,
    generation: true,
    fieldSelectors: {'status.replicas': (o) => str(o.status?.replicas ?? 0)},
  },
  {
    group: 'batch',
    version: 'v1',
    kind: 'Job',
    plural: 'jobs',
    namespaced: true,
    categories: ['all'],
    hasStatus: true,
    generation: true,
    fieldSelectors: {'status.successful': (o) => str(o.status?.succeeded ?? 0)},
  },
  {
    group: 'batch',
    version: 'v1',
    kind: 'CronJob',
    plural: 'cronjobs',
    namespaced: true,
    shortNames: ['cj'],
    categories: ['all'],
    hasStatus: true,
    generation: true,
  },
  {group: 'coordination.k8s.io', version: 'v1', kind: 'Lease', plural: 'leases', namespaced: true},
  {
    group: 'networking.k8s.io',
    version: 'v1',
    kind: 'NetworkPolicy',
    plural: 'networkpolicies',
    namespaced: true,
    shortNames: ['netpol'],
    generation: true,
  },
  {
    group: 'admissionregistration.k8s.io',
    version: 'v1',
    kind: 'MutatingWebhookConfiguration',
    plural: 'mutatingwebhookconfigurations',
    namespaced: false,
    categories: ['api-extensions'],
    generation: true,
  },
  {
    group: 'admissionregistration.k8s.io',
    version: 'v1',
    kind: 'ValidatingWebhookConfiguration',
    plural: 'validatingwebhookconfigurations',
    namespaced: false,
    categories: ['api-extensions'],
    generation: true,
  },
  {
    group: 'apiextensions.k8s.io',
    version: 'v1',
    kind: 'CustomResourceDefinition',
    plural: 'customresourcedefinitions',
    namespaced: false,
    shortNames: ['crd', 'crds'],
    categories: ['api-extensions'],
    hasStatus: true,
    generation: true,
    returnDeletedObject: true,
  },
  {
    group: 'authorization.k8s.io',
    version: 'v1',
    kind: 'SelfSubjectAccessReview',
    plural: 'selfsubjectaccessreviews',
    namespaced: false,
    verbs: ['create'],
    virtual: true,
  },
  // `kubectl auth whoami` (GA in 1.28): every authenticated user may create one (system:basic-user).
  {
    group: 'authentication.k8s.io',
    version: 'v1',
    kind: 'SelfSubjectReview',
    plural: 'selfsubjectreviews',
    namespaced: false,
    verbs: ['create'],
    virtual: true,
  },
]

export function builtinResourceTypes(): ResourceType[] {
  return DEFS.map((d) => ({
    group: d.group,
    kind: d.kind,
    listKind: `${d.kind}List`,
    plural: d.plural,
    singular: d.kind.toLowerCase(),
    namespaced: d.namespaced,
    shortNames: d.shortNames ?? [],
    categories: d.categories ?? [],
    versions: [{name: d.version}],
    storageVersion: d.version,
    verbs: d.verbs ?? ALL_VERBS,
    hasStatus: d.hasStatus ?? false,
    generation: d.generation ? 'spec' : 'none',
    custom: false,
    returnDeletedObject: d.returnDeletedObject ?? false,
    ...(d.fieldSelectors ? {fieldSelectors: d.fieldSelectors} : {}),
    nameRule: d.nameRule ?? 'dns1123-subdomain',
    ...(d.virtual ? {virtual: true} : {}),
    mergeSchema: BUILTIN_MERGE_SCHEMAS[d.kind]!,
    hooks: BUILTIN_HOOKS[d.kind] ?? {},
  }))
}

/** Order of the built-in groups in /apis, as the real aggregator lists them. */
export const BUILTIN_GROUP_ORDER = [
  'apiregistration.k8s.io',
  'apps',
  'events.k8s.io',
  'authentication.k8s.io',
  'authorization.k8s.io',
  'autoscaling',
  'batch',
  'certificates.k8s.io',
  'networking.k8s.io',
  'policy',
  'rbac.authorization.k8s.io',
  'storage.k8s.io',
  'admissionregistration.k8s.io',
  'apiextensions.k8s.io',
  'scheduling.k8s.io',
  'coordination.k8s.io',
  'node.k8s.io',
  'discovery.k8s.io',
  'flowcontrol.apiserver.k8s.io',
]
