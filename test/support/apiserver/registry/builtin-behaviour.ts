// Defaulting, create-time preparation and validation of the built-in kinds.
//
// Built-in kinds get LIGHT validation only: ObjectMeta (names, labels, annotations), the
// required fields a client commonly gets wrong (pod containers and images, Deployment
// selector matching its template, Service ports, Job restartPolicy) and nothing else. The
// defaults are the ones a GET shows on a real 1.32 server for objects the tool and the
// fake controllers create; unlisted defaults (e.g. probes' thresholds) are not filled.
import {fieldError, GoLiteral, type FieldError} from '../errors.js'
import {matchesLabelSelectorObject} from '../meta/selectors.js'
import type {JsonObject, KindHooks} from '../types.js'

const setDefault = (o: JsonObject, k: string, v: unknown) => {
  if (o[k] === undefined) o[k] = v
}

function imagePullPolicyFor(image: unknown): string {
  if (typeof image !== 'string') return 'IfNotPresent'
  if (image.includes('@')) return 'IfNotPresent'
  const lastSlash = image.lastIndexOf('/')
  const tagSep = image.indexOf(':', lastSlash + 1)
  const tag = tagSep >= 0 ? image.slice(tagSep + 1) : ''
  return tag === '' || tag === 'latest' ? 'Always' : 'IfNotPresent'
}

function defaultContainer(c: JsonObject): void {
  setDefault(c, 'terminationMessagePath', '/dev/termination-log')
  setDefault(c, 'terminationMessagePolicy', 'File')
  setDefault(c, 'imagePullPolicy', imagePullPolicyFor(c.image))
  setDefault(c, 'resources', {})
  for (const p of (c.ports ?? []) as JsonObject[]) setDefault(p, 'protocol', 'TCP')
}

export function defaultPodSpec(spec: JsonObject | undefined): void {
  if (!spec) return
  setDefault(spec, 'restartPolicy', 'Always')
  setDefault(spec, 'terminationGracePeriodSeconds', 30)
  setDefault(spec, 'dnsPolicy', 'ClusterFirst')
  setDefault(spec, 'securityContext', {})
  setDefault(spec, 'schedulerName', 'default-scheduler')
  setDefault(spec, 'enableServiceLinks', true)
  for (const c of [...((spec.containers ?? []) as JsonObject[]), ...((spec.initContainers ?? []) as JsonObject[])])
    defaultContainer(c)
  for (const v of (spec.volumes ?? []) as JsonObject[]) {
    if (v.configMap) setDefault(v.configMap, 'defaultMode', 420)
    if (v.secret) setDefault(v.secret, 'defaultMode', 420)
  }
}

function defaultTemplate(spec: JsonObject | undefined): void {
  if (!spec?.template) return
  setDefault(spec.template, 'metadata', {})
  defaultPodSpec(spec.template.spec)
}

function podQosClass(spec: JsonObject | undefined): string {
  const containers = [...((spec?.containers ?? []) as JsonObject[]), ...((spec?.initContainers ?? []) as JsonObject[])]
  let any = false
  let guaranteed = true
  for (const c of containers) {
    const req = c.resources?.requests ?? {}
    const lim = c.resources?.limits ?? {}
    if (Object.keys(req).length || Object.keys(lim).length) any = true
    for (const r of ['cpu', 'memory']) {
      const l = lim[r]
      const q = req[r] ?? l
      if (l === undefined || q !== l) guaranteed = false
    }
  }
  if (!any) return 'BestEffort'
  return guaranteed ? 'Guaranteed' : 'Burstable'
}

function validatePodSpec(spec: JsonObject | undefined, path: string): FieldError[] {
  const errs: FieldError[] = []
  if (!spec) return [fieldError.required(path, '')]
  const containers = spec.containers
  if (!Array.isArray(containers) || containers.length === 0) errs.push(fieldError.required(`${path}.containers`, ''))
  const names = new Set<string>()
  const check = (list: unknown, field: string) => {
    if (!Array.isArray(list)) return
    list.forEach((c: JsonObject, i: number) => {
      const p = `${path}.${field}[${i}]`
      if (!c?.name) errs.push(fieldError.required(`${p}.name`, ''))
      else if (names.has(c.name)) errs.push(fieldError.duplicate(`${p}.name`, c.name))
      else names.add(c.name)
      if (!c?.image) errs.push(fieldError.required(`${p}.image`, ''))
    })
  }
  check(containers, 'containers')
  check(spec.initContainers, 'initContainers')
  return errs
}

function validateSelectorMatchesTemplate(spec: JsonObject | undefined): FieldError[] {
  if (!spec) return [fieldError.required('spec', '')]
  if (!spec.selector) return [fieldError.required('spec.selector', '')]
  const labels = spec.template?.metadata?.labels ?? {}
  const hasRequirements =
    Object.keys(spec.selector.matchLabels ?? {}).length > 0 || (spec.selector.matchExpressions ?? []).length > 0
  if (!hasRequirements)
    return [fieldError.invalid('spec.selector', spec.selector, 'empty selector is invalid for deployment')]
  if (!matchesLabelSelectorObject(spec.selector, labels))
    return [
      fieldError.invalid(
        'spec.template.metadata.labels',
        goStringMap(labels),
        '`selector` does not match template `labels`',
      ),
    ]
  return []
}

/** A value whose %v is Go's map[string]string literal, as Deployment validation prints it. */
function goStringMap(m: Record<string, string>): {toString(): string} {
  const body = Object.keys(m)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${JSON.stringify(m[k])}`)
    .join(', ')
  return new GoLiteral(`map[string]string{${body}}`)
}

function workloadHooks(extraDefaults: (spec: JsonObject) => void, kindName: string): KindHooks {
  return {
    applyDefaults(obj) {
      if (!obj.spec) return
      extraDefaults(obj.spec)
      defaultTemplate(obj.spec)
    },
    validate(obj) {
      const errs = validateSelectorMatchesTemplate(obj.spec)
      if (errs.length && kindName !== 'Deployment')
        for (const e of errs)
          if (e.detail.includes('deployment')) e.detail = `empty selector is invalid for ${kindName.toLowerCase()}`
      errs.push(...validatePodSpec(obj.spec?.template?.spec, 'spec.template.spec'))
      return errs
    },
  }
}

export const BUILTIN_HOOKS: Record<string, KindHooks> = {
  Namespace: {
    applyDefaults(obj) {
      obj.metadata.labels = {...(obj.metadata.labels ?? {}), 'kubernetes.io/metadata.name': obj.metadata.name}
    },
    prepareForCreate(obj) {
      obj.spec = {finalizers: ['kubernetes'], ...(obj.spec ?? {})}
      obj.status = {phase: 'Active'}
    },
  },
  Pod: {
    applyDefaults(obj) {
      defaultPodSpec(obj.spec)
    },
    prepareForCreate(obj) {
      if (obj.spec) {
        setDefault(obj.spec, 'serviceAccountName', 'default')
        setDefault(obj.spec, 'serviceAccount', obj.spec.serviceAccountName)
        setDefault(obj.spec, 'priority', 0)
        setDefault(obj.spec, 'preemptionPolicy', 'PreemptLowerPriority')
        setDefault(obj.spec, 'tolerations', [
          {key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300},
          {key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300},
        ])
      }
      obj.status = {phase: 'Pending', qosClass: podQosClass(obj.spec)}
    },
    validate(obj) {
      return validatePodSpec(obj.spec, 'spec')
    },
  },
  Service: {
    applyDefaults(obj) {
      const spec = obj.spec
      if (!spec) return
      setDefault(spec, 'type', 'ClusterIP')
      setDefault(spec, 'sessionAffinity', 'None')
      if (spec.type !== 'ExternalName') setDefault(spec, 'internalTrafficPolicy', 'Cluster')
      for (const p of (spec.ports ?? []) as JsonObject[]) {
        setDefault(p, 'protocol', 'TCP')
        if (spec.type !== 'ExternalName') setDefault(p, 'targetPort', p.port)
      }
    },
    prepareForCreate(obj, env) {
      const spec = obj.spec
      if (!spec) return
      obj.status = {loadBalancer: {}}
      if (spec.type === 'ExternalName') return
      if (spec.clusterIP === undefined || spec.clusterIP === '') spec.clusterIP = env.allocateClusterIP()
      setDefault(spec, 'clusterIPs', [spec.clusterIP])
      setDefault(spec, 'ipFamilies', ['IPv4'])
      setDefault(spec, 'ipFamilyPolicy', 'SingleStack')
    },
    validate(obj) {
      const spec = obj.spec
      if (!spec) return [fieldError.required('spec', '')]
      const errs: FieldError[] = []
      const types = ['ClusterIP', 'NodePort', 'LoadBalancer', 'ExternalName']
      if (!types.includes(spec.type)) errs.push(fieldError.notSupported('spec.type', spec.type, types))
      if (
        spec.type !== 'ExternalName' &&
        spec.clusterIP !== 'None' &&
        (!Array.isArray(spec.ports) || spec.ports.length === 0)
      )
        errs.push(fieldError.required('spec.ports', ''))
      ;((spec.ports ?? []) as JsonObject[]).forEach((p, i) => {
        if (typeof p.port !== 'number' || p.port < 1 || p.port > 65535)
          errs.push(fieldError.invalid(`spec.ports[${i}].port`, p.port ?? 0, 'must be between 1 and 65535, inclusive'))
        if (spec.ports.length > 1 && !p.name) errs.push(fieldError.required(`spec.ports[${i}].name`, ''))
      })
      return errs
    },
  },
  Deployment: workloadHooks((spec) => {
    setDefault(spec, 'replicas', 1)
    setDefault(spec, 'revisionHistoryLimit', 10)
    setDefault(spec, 'progressDeadlineSeconds', 600)
    setDefault(spec, 'strategy', {})
    setDefault(spec.strategy, 'type', 'RollingUpdate')
    if (spec.strategy.type === 'RollingUpdate') {
      setDefault(spec.strategy, 'rollingUpdate', {})
      setDefault(spec.strategy.rollingUpdate, 'maxUnavailable', '25%')
      setDefault(spec.strategy.rollingUpdate, 'maxSurge', '25%')
    }
  }, 'Deployment'),
  StatefulSet: workloadHooks((spec) => {
    setDefault(spec, 'replicas', 1)
    setDefault(spec, 'revisionHistoryLimit', 10)
    setDefault(spec, 'podManagementPolicy', 'OrderedReady')
    setDefault(spec, 'updateStrategy', {type: 'RollingUpdate', rollingUpdate: {partition: 0}})
    setDefault(spec, 'persistentVolumeClaimRetentionPolicy', {whenDeleted: 'Retain', whenScaled: 'Retain'})
  }, 'StatefulSet'),
  DaemonSet: workloadHooks((spec) => {
    setDefault(spec, 'revisionHistoryLimit', 10)
    setDefault(spec, 'updateStrategy', {type: 'RollingUpdate', rollingUpdate: {maxSurge: 0, maxUnavailable: 1}})
  }, 'DaemonSet'),
  ReplicaSet: workloadHooks((spec) => {
    setDefault(spec, 'replicas', 1)
  }, 'ReplicaSet'),
  Job: {
    applyDefaults(obj) {
      const spec = obj.spec
      if (!spec) return
      setDefault(spec, 'parallelism', 1)
      setDefault(spec, 'completions', 1)
      setDefault(spec, 'backoffLimit', 6)
      setDefault(spec, 'completionMode', 'NonIndexed')
      setDefault(spec, 'suspend', false)
      setDefault(spec, 'podReplacementPolicy', 'TerminatingOrFailed')
      defaultTemplate(spec)
    },
    prepareForCreate(obj) {
      const spec = obj.spec
      if (!spec?.template || spec.manualSelector) return
      const uid = obj.metadata.uid
      spec.selector = {matchLabels: {'batch.kubernetes.io/controller-uid': uid}}
      spec.template.metadata ??= {}
      spec.template.metadata.labels = {
        ...(spec.template.metadata.labels ?? {}),
        'batch.kubernetes.io/controller-uid': uid,
        'batch.kubernetes.io/job-name': obj.metadata.name,
        'controller-uid': uid,
        'job-name': obj.metadata.name,
      }
    },
    validate(obj) {
      const errs = validatePodSpec(obj.spec?.template?.spec, 'spec.template.spec')
      const rp = obj.spec?.template?.spec?.restartPolicy
      if (rp !== undefined && rp !== 'OnFailure' && rp !== 'Never')
        errs.push(fieldError.notSupported('spec.template.spec.restartPolicy', rp, ['OnFailure', 'Never']))
      return errs
    },
  },
  CronJob: {
    applyDefaults(obj) {
      const spec = obj.spec
      if (!spec) return
      setDefault(spec, 'concurrencyPolicy', 'Allow')
      setDefault(spec, 'suspend', false)
      setDefault(spec, 'successfulJobsHistoryLimit', 3)
      setDefault(spec, 'failedJobsHistoryLimit', 1)
      if (spec.jobTemplate?.spec) defaultTemplate(spec.jobTemplate.spec)
    },
    validate(obj) {
      const errs: FieldError[] = []
      if (!obj.spec?.schedule) errs.push(fieldError.required('spec.schedule', ''))
      errs.push(...validatePodSpec(obj.spec?.jobTemplate?.spec?.template?.spec, 'spec.jobTemplate.spec.template.spec'))
      return errs
    },
  },
  NetworkPolicy: {
    applyDefaults(obj) {
      const spec = obj.spec
      if (!spec || (Array.isArray(spec.policyTypes) && spec.policyTypes.length)) return
      spec.policyTypes = ['Ingress', ...(Array.isArray(spec.egress) && spec.egress.length ? ['Egress'] : [])]
    },
  },
  MutatingWebhookConfiguration: {
    applyDefaults(obj) {
      for (const w of (obj.webhooks ?? []) as JsonObject[]) {
        setDefault(w, 'failurePolicy', 'Fail')
        setDefault(w, 'matchPolicy', 'Equivalent')
        setDefault(w, 'namespaceSelector', {})
        setDefault(w, 'objectSelector', {})
        setDefault(w, 'reinvocationPolicy', 'Never')
        setDefault(w, 'timeoutSeconds', 10)
        for (const r of (w.rules ?? []) as JsonObject[]) setDefault(r, 'scope', '*')
      }
    },
  },
  ValidatingWebhookConfiguration: {
    applyDefaults(obj) {
      for (const w of (obj.webhooks ?? []) as JsonObject[]) {
        setDefault(w, 'failurePolicy', 'Fail')
        setDefault(w, 'matchPolicy', 'Equivalent')
        setDefault(w, 'namespaceSelector', {})
        setDefault(w, 'objectSelector', {})
        setDefault(w, 'timeoutSeconds', 10)
        for (const r of (w.rules ?? []) as JsonObject[]) setDefault(r, 'scope', '*')
      }
    },
  },
  Lease: {},
  ConfigMap: {},
  Secret: {
    applyDefaults(obj) {
      setDefault(obj, 'type', 'Opaque')
      if (obj.stringData) {
        obj.data = {...(obj.data ?? {})}
        for (const [k, v] of Object.entries(obj.stringData as Record<string, string>))
          obj.data[k] = Buffer.from(v).toString('base64')
        delete obj.stringData
      }
    },
  },
  ServiceAccount: {},
  Node: {},
  Event: {},
  CustomResourceDefinition: {
    applyDefaults(obj) {
      if (obj.spec) setDefault(obj.spec, 'conversion', {strategy: 'None'})
    },
  },
}
