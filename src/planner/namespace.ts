// The namespace's data-plane labels and the injection machinery they talk to (DOMAIN §2.1–§2.3,
// §2.5, §7 E1–E3). Pure: reads objects, returns state and findings.
import {finding} from './findings/finding.js'
import {parse as parseYaml} from 'yaml'
import type {Finding, KubeObject, NamespaceLabel, NamespaceState, ObjectRef} from './model.js'
import {groupOf, refOf} from './refs.js'
import {isRecord} from './json.js'
import {
  DATAPLANE_MODE_LABEL,
  INJECTION_LABEL,
  NAMESPACE_NAME_LABEL,
  REVISION_LABEL,
  SIDECAR_INJECT,
  TAG_LABEL,
  USE_WAYPOINT_LABEL,
} from './vocab.js'

/** Namespaces the injector never injects (pkg/kube/inject IgnoredNamespaces); the analyzers skip them too. */
export const INJECTION_IGNORED_NAMESPACES: readonly string[] = [
  'kube-system',
  'kube-public',
  'kube-node-lease',
  'local-path-storage',
]

/** IST0123 is never reported for this namespace (the analyzer compares with the literal name). */
const ANALYZER_SYSTEM_NAMESPACE = 'istio-system'

// ---------------------------------------------------------------------------------------------
// Label selectors (the subset of metav1.LabelSelector that webhooks use)

export interface LabelSelectorRequirement {
  key: string
  operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist' | string
  values?: string[]
}

export interface LabelSelector {
  matchLabels?: Record<string, string>
  matchExpressions?: LabelSelectorRequirement[]
}

/** metav1.LabelSelector semantics: an absent or empty selector matches everything. */
export function selectorMatches(selector: LabelSelector | undefined, labels: Record<string, string>): boolean {
  if (!selector) return true
  for (const [k, v] of Object.entries(selector.matchLabels ?? {})) if (labels[k] !== v) return false
  for (const req of selector.matchExpressions ?? []) {
    const has = Object.hasOwn(labels, req.key)
    const values = req.values ?? []
    switch (req.operator) {
      case 'In':
        if (!has || !values.includes(labels[req.key]!)) return false
        break
      case 'NotIn':
        if (has && values.includes(labels[req.key]!)) return false
        break
      case 'Exists':
        if (!has) return false
        break
      case 'DoesNotExist':
        if (has) return false
        break
      default:
        // The API server rejects unknown operators; a selector we cannot evaluate matches nothing.
        return false
    }
  }
  return true
}

// ---------------------------------------------------------------------------------------------
// Injection webhooks and injector configuration (E1, E3)

/** One Istio sidecar-injection webhook (`*.sidecar-injector.istio.io`) of a MutatingWebhookConfiguration. */
export interface InjectorWebhook {
  configuration: string
  name: string
  namespaceSelector?: LabelSelector
  objectSelector?: LabelSelector
  /** `istio.io/rev` label of the configuration (the revision it injects). */
  revision?: string
  /** `istio.io/tag` label of the configuration, for revision tags. */
  tag?: string
}

/** What `pkg/kube/inject` reads from the injector ConfigMap `istio-sidecar-injector[-<rev>]`. */
export interface InjectorConfig {
  revision: string
  source: string
  /** `policy:` of `data.config`; `enabled` when absent. */
  policy: 'enabled' | 'disabled'
  neverInjectSelector: LabelSelector[]
  alwaysInjectSelector: LabelSelector[]
  /** `sidecarInjectorWebhook.enableNamespacesByDefault` of `data.values`. */
  enableNamespacesByDefault: boolean
}

export interface InjectionWebhooks {
  /**
   * The Istio injection webhooks seen in the snapshot. When empty (manifests without the control
   * plane, or no permission to list them) injection is predicted from the chart's selector table.
   */
  webhooks: InjectorWebhook[]
  /** E3: a namespace without sidecar labels is injected (auto webhook / enableNamespacesByDefault). */
  enabledByDefault: boolean
  /** What E3 was detected from, for messages. */
  enabledByDefaultEvidence: string[]
  /** Revision tags (E1): tag name → revision. */
  tags: Record<string, string>
  /** Injector configuration per revision ("default" for `istio-sidecar-injector`). */
  injectorConfigs: Record<string, InjectorConfig>
}

export const NO_INJECTION_WEBHOOKS: InjectionWebhooks = {
  webhooks: [],
  enabledByDefault: false,
  enabledByDefaultEvidence: [],
  tags: {},
  injectorConfigs: {},
}

const INJECTOR_CONFIGMAP = 'istio-sidecar-injector'

function isInjectorWebhookName(name: string): boolean {
  return name === 'sidecar-injector.istio.io' || name.endsWith('.sidecar-injector.istio.io')
}

function asSelector(value: unknown): LabelSelector | undefined {
  return isRecord(value) ? (value as LabelSelector) : undefined
}

/**
 * Reads the injection machinery from the snapshot: Istio's MutatingWebhookConfigurations (their
 * selectors decide injection, their `istio.io/tag` labels name revision tags) and the injector
 * ConfigMaps (`policy`, never/always-inject selectors, `enableNamespacesByDefault`).
 */
export function analyzeInjectionWebhooks(objects: KubeObject[]): {webhooks: InjectionWebhooks; findings: Finding[]} {
  // Evidence that injection is on by default, in the order it is found (webhooks, then injector ConfigMaps).
  const evidence: string[] = []
  const {webhooks, tags} = readInjectorWebhooks(objects, evidence)
  const {injectorConfigs, findings} = readInjectorConfigs(objects, evidence)

  // With the webhooks in hand the question is answered by evaluating them: does any of them inject
  // an ordinary pod of a namespace that has no sidecar label at all?
  const injectsByDefault = (w: InjectorWebhook) =>
    selectorMatches(w.namespaceSelector, {[NAMESPACE_NAME_LABEL]: 'any-namespace'}) &&
    selectorMatches(w.objectSelector, {})
  const enabledByDefault = webhooks.length > 0 ? webhooks.some(injectsByDefault) : evidence.length > 0
  if (enabledByDefault && evidence.length === 0) {
    evidence.push(
      `webhooks ${webhooks
        .filter(injectsByDefault)
        .map((w) => `${w.name} (${w.configuration})`)
        .join(', ')}`,
    )
  }
  if (enabledByDefault) {
    findings.push(
      finding(
        'InjectionEnabledByDefault',
        undefined,
        {variant: 'injectionEnabledByDefault', evidence: evidence.join('; ')},
        {id: 'E3/injection-enabled-by-default', severity: 'warning'},
      ),
    )
  }

  return {webhooks: {webhooks, enabledByDefault, enabledByDefaultEvidence: evidence, tags, injectorConfigs}, findings}
}

/** Istio's injector webhooks and revision tags; `auto.*` webhooks are added to `evidence`. */
function readInjectorWebhooks(
  objects: KubeObject[],
  evidence: string[],
): {webhooks: InjectorWebhook[]; tags: Record<string, string>} {
  const webhooks: InjectorWebhook[] = []
  const tags: Record<string, string> = {}
  for (const obj of objects) {
    if (obj.kind !== 'MutatingWebhookConfiguration' || groupOf(obj.apiVersion) !== 'admissionregistration.k8s.io')
      continue
    const labels = obj.metadata.labels ?? {}
    const entries = Array.isArray(obj.webhooks) ? (obj.webhooks as unknown[]) : []
    const injectors = entries.filter(
      (w): w is Record<string, unknown> => isRecord(w) && typeof w.name === 'string' && isInjectorWebhookName(w.name),
    )
    if (injectors.length === 0) continue
    const tag = labels[TAG_LABEL]
    const revision = labels[REVISION_LABEL]
    if (tag !== undefined && tag !== '') tags[tag] = revision ?? 'default'
    for (const w of injectors) {
      const hook: InjectorWebhook = {configuration: obj.metadata.name, name: w.name as string}
      const nsSel = asSelector(w.namespaceSelector)
      const objSel = asSelector(w.objectSelector)
      if (nsSel) hook.namespaceSelector = nsSel
      if (objSel) hook.objectSelector = objSel
      if (revision !== undefined) hook.revision = revision
      if (tag !== undefined) hook.tag = tag
      webhooks.push(hook)
      if ((w.name as string).startsWith('auto.')) {
        evidence.push(`webhook ${w.name as string} in MutatingWebhookConfiguration ${obj.metadata.name}`)
      }
    }
  }
  return {webhooks, tags}
}

/** The injector ConfigMaps per revision; enableNamespacesByDefault of the default one is added to `evidence`. */
function readInjectorConfigs(
  objects: KubeObject[],
  evidence: string[],
): {injectorConfigs: Record<string, InjectorConfig>; findings: Finding[]} {
  const findings: Finding[] = []
  const injectorConfigs: Record<string, InjectorConfig> = {}
  for (const obj of objects) {
    if (obj.kind !== 'ConfigMap' || groupOf(obj.apiVersion) !== '') continue
    const name = obj.metadata.name
    if (name !== INJECTOR_CONFIGMAP && !name.startsWith(`${INJECTOR_CONFIGMAP}-`)) continue
    const revision = name === INJECTOR_CONFIGMAP ? 'default' : name.slice(INJECTOR_CONFIGMAP.length + 1)
    const source = `ConfigMap ${obj.metadata.namespace ? `${obj.metadata.namespace}/` : ''}${name}`
    const config: InjectorConfig = {
      revision,
      source,
      policy: 'enabled',
      neverInjectSelector: [],
      alwaysInjectSelector: [],
      enableNamespacesByDefault: false,
    }
    try {
      readInjectorConfigData(isRecord(obj.data) ? obj.data : {}, config)
    } catch (error) {
      findings.push(
        finding(
          'InjectorConfigUnreadable',
          refOf(obj),
          {source, message: (error as Error).message.split('\n')[0]},
          {id: `injector-config-unreadable/${source}`, severity: 'info'},
        ),
      )
    }
    injectorConfigs[revision] = config
    if (config.enableNamespacesByDefault && revision === 'default') {
      evidence.push(`sidecarInjectorWebhook.enableNamespacesByDefault=true in ${source}`)
    }
  }
  return {injectorConfigs, findings}
}

/** Fills `config` from the ConfigMap's `values` and `config` keys; throws when either is not YAML. */
function readInjectorConfigData(data: Record<string, unknown>, config: InjectorConfig): void {
  if (typeof data.values === 'string') {
    const values: unknown = parseYaml(data.values) // JSON in practice; JSON is YAML 1.2
    const sidecarInjector = isRecord(values) ? values.sidecarInjectorWebhook : undefined
    config.enableNamespacesByDefault = isRecord(sidecarInjector) && sidecarInjector.enableNamespacesByDefault === true
  }
  if (typeof data.config === 'string') {
    const parsed: unknown = parseYaml(data.config)
    if (isRecord(parsed)) {
      if (parsed.policy === 'disabled') config.policy = 'disabled'
      const selectors = (v: unknown) =>
        Array.isArray(v) ? v.map(asSelector).filter((s): s is LabelSelector => !!s) : []
      config.neverInjectSelector = selectors(parsed.neverInjectSelector)
      config.alwaysInjectSelector = selectors(parsed.alwaysInjectSelector)
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Namespace state

/** IST0123's label list: `key=value` strings, exactly as `istioctl analyze` prints them. */
export function injectionLabelsForIST0123(labels: Record<string, string>): string[] {
  const out: string[] = []
  const injection = labels[INJECTION_LABEL]
  const hasInjection = injection !== undefined
  if (hasInjection) out.push(`${INJECTION_LABEL}=${injection}`)
  // istio.io/rev and dataplane-mode only count when istio-injection is absent or "enabled".
  if (!hasInjection || injection === 'enabled') {
    for (const key of [REVISION_LABEL, DATAPLANE_MODE_LABEL]) {
      if (labels[key] !== undefined) out.push(`${key}=${labels[key]}`)
    }
  }
  return out
}

function namespaceRef(name: string, obj: KubeObject | undefined): ObjectRef {
  return obj ? refOf(obj) : {apiVersion: 'v1', kind: 'Namespace', name}
}

/**
 * The namespace's sidecar labels the migration removes. `istio-injection` with any value but `enabled` (usually
 * `disabled`) matches no injection webhook — neither namespace injection nor pod opt-ins (sidecar.istio.io/inject=true,
 * pod istio.io/rev) — so it stays: removing it would *start* injection for opted-in pods (and, with
 * enableNamespacesByDefault, for every pod). Source: istio/istio
 * manifests/charts/istio-control/istio-discovery/templates/mutatingwebhook.yaml (DOMAIN §2.1).
 */
export function sidecarLabelsToRemove(state: Pick<NamespaceState, 'sidecarLabels'>): NamespaceLabel[] {
  return state.sidecarLabels.filter((l) => l.key !== INJECTION_LABEL || l.value === 'enabled')
}

/**
 * Effective namespace-level injection: does an ordinary pod (no injection labels of its own) created
 * in this namespace get a sidecar?
 */
function namespaceInjection(
  name: string,
  labels: Record<string, string>,
  webhooks: InjectionWebhooks,
): NamespaceState['injection'] {
  const injection = labels[INJECTION_LABEL]
  if (injection !== undefined && injection !== 'enabled') return 'disabled'
  // injectRequired() refuses these whatever the webhooks match.
  if (INJECTION_IGNORED_NAMESPACES.includes(name)) return 'none'
  if (webhooks.webhooks.length > 0) {
    const nsLabels = {[NAMESPACE_NAME_LABEL]: name, ...labels}
    return webhooks.webhooks.some(
      (w) => selectorMatches(w.namespaceSelector, nsLabels) && selectorMatches(w.objectSelector, {}),
    )
      ? 'enabled'
      : 'none'
  }
  // The chart's selector table (DOMAIN §2.1), assuming the referenced revision is installed.
  if (injection === 'enabled') return 'enabled'
  const rev = labels[REVISION_LABEL]
  if (rev !== undefined) return rev !== '' ? 'enabled' : 'none'
  if (webhooks.enabledByDefault && !INJECTION_IGNORED_NAMESPACES.includes(name)) return 'enabled'
  return 'none'
}

/**
 * The namespace's data-plane state from its labels (DOMAIN §2.1–§2.3) and the findings about them
 * (IST0123, E1, E2, E3, dataplane-mode=none next to injection, no Namespace object).
 * `webhooks` (from analyzeInjectionWebhooks) makes injection exact; without it the chart's table is used.
 */
export function analyzeNamespace(
  name: string,
  namespaceObject: KubeObject | undefined,
  opts: {webhooks?: InjectionWebhooks} = {},
): {state: NamespaceState; findings: Finding[]} {
  const facts = namespaceFacts(name, namespaceObject, opts.webhooks ?? NO_INJECTION_WEBHOOKS)
  return {state: facts.state, findings: NAMESPACE_ANALYZERS.flatMap((analyze) => analyze(facts))}
}

/** What the namespace analyzers read: computed once by `namespaceFacts`. */
interface NamespaceFacts {
  name: string
  namespaceObject: KubeObject | undefined
  webhooks: InjectionWebhooks
  labels: Record<string, string>
  ref: ObjectRef
  state: NamespaceState
  injection: NamespaceState['injection']
  revision: string | undefined
  dataplaneMode: string | undefined
  ambient: boolean
  /** Pods without labels of their own get a sidecar. */
  sidecar: boolean
  ist0123Labels: string[]
}

function namespaceFacts(
  name: string,
  namespaceObject: KubeObject | undefined,
  webhooks: InjectionWebhooks,
): NamespaceFacts {
  const labels: Record<string, string> = {...(namespaceObject?.metadata.labels ?? {})}
  const sidecarLabels: NamespaceLabel[] = []
  for (const key of [INJECTION_LABEL, REVISION_LABEL]) {
    if (labels[key] !== undefined) sidecarLabels.push({key, value: labels[key]!})
  }
  const injection = namespaceInjection(name, labels, webhooks)
  const revision = labels[REVISION_LABEL]
  const dataplaneMode = labels[DATAPLANE_MODE_LABEL]
  const useWaypoint = labels[USE_WAYPOINT_LABEL]
  const ambient = dataplaneMode === 'ambient'
  const sidecar = injection === 'enabled'
  const mode: NamespaceState['mode'] = sidecar && ambient ? 'both' : sidecar ? 'sidecar' : ambient ? 'ambient' : 'none'
  const ist0123Labels = injectionLabelsForIST0123(labels)
  const multipleInjectionLabels = name !== ANALYZER_SYSTEM_NAMESPACE && ist0123Labels.length > 1

  const state: NamespaceState = {name, labels, sidecarLabels, injection, mode, multipleInjectionLabels}
  if (revision !== undefined) state.revision = revision
  if (dataplaneMode !== undefined) state.dataplaneMode = dataplaneMode
  if (useWaypoint !== undefined) state.useWaypoint = useWaypoint
  const ref = namespaceRef(name, namespaceObject)
  return {
    name,
    namespaceObject,
    webhooks,
    labels,
    ref,
    state,
    injection,
    revision,
    dataplaneMode,
    ambient,
    sidecar,
    ist0123Labels,
  }
}

function namespaceMissing({name, namespaceObject, ref}: NamespaceFacts): Finding[] {
  if (namespaceObject) return []
  return [finding('NamespaceMissing', ref, {name}, {id: `namespace-missing/${name}`, severity: 'warning'})]
}

function multipleInjectionLabels({name, state, ist0123Labels, ambient, sidecar, ref}: NamespaceFacts): Finding[] {
  if (!state.multipleInjectionLabels) return []
  return [
    finding(
      'ConflictingInjectionLabels',
      ref,
      {variant: ambient && sidecar ? 'sidecarWins' : 'labels', labels: ist0123Labels.join(' ')},
      {id: `IST0123/${name}`},
    ),
  ]
}

function injectionAndRevisionLabels({name, labels, revision, ref}: NamespaceFacts): Finding[] {
  if (labels[INJECTION_LABEL] === undefined || revision === undefined) return []
  return [
    finding(
      'InjectionAndRevisionLabels',
      ref,
      {name, labels: labels[INJECTION_LABEL], revision},
      {id: `E2/${name}`, severity: 'warning'},
    ),
  ]
}

/** E1: the namespace's istio.io/rev label (empty, a revision or tag, or one no webhook serves). */
function revisionLabel({name, labels, revision, injection, webhooks, ref}: NamespaceFacts): Finding[] {
  if (revision === undefined) return []
  if (revision === '') {
    return [finding('RevisionLabelIssue', ref, {variant: 'empty', name}, {id: `E1/${name}/empty`, severity: 'warning'})]
  }
  const tagOf = webhooks.tags[revision]
  const kind = tagOf !== undefined ? `revision tag "${revision}" (→ revision ${tagOf})` : `revision "${revision}"`
  const findings: Finding[] = [
    finding(
      'RevisionLabelIssue',
      ref,
      {variant: 'revisionLabel', name, revision, kind},
      {id: `E1/${name}`, severity: 'info'},
    ),
  ]
  if (webhooks.webhooks.length > 0 && labels[INJECTION_LABEL] === undefined && injection !== 'enabled') {
    findings.push(
      finding(
        'RevisionLabelIssue',
        ref,
        {variant: 'unknownRevision', revision, name},
        {id: `E1/${name}/unknown-revision`, severity: 'warning'},
      ),
    )
  }
  return findings
}

function injectedByDefault({name, labels, revision, injection, webhooks, ambient, ref}: NamespaceFacts): Finding[] {
  if (
    !webhooks.enabledByDefault ||
    labels[INJECTION_LABEL] !== undefined ||
    revision !== undefined ||
    injection !== 'enabled'
  )
    return []
  return [
    finding(
      'InjectionEnabledByDefault',
      ref,
      {
        variant: 'injectedByDefault',
        name,
        enabledByDefaultEvidence: webhooks.enabledByDefaultEvidence.join('; '),
        detail: ambient ? 'The sidecar wins over ambient for new pods. ' : '',
      },
      {id: `E3/${name}`, severity: 'warning'},
    ),
  ]
}

function namespaceGitOps({name, namespaceObject, ref}: NamespaceFacts): Finding[] {
  const manager = namespaceObject ? gitOpsManager(namespaceObject.metadata) : undefined
  if (!manager) return []
  return [
    finding(
      'GitOpsManaged',
      ref,
      {variant: 'namespaceGitOps', name, manager},
      {id: `E23/Namespace/${name}`, severity: 'warning'},
    ),
  ]
}

function dataplaneModeLabel({name, dataplaneMode, sidecar, ref}: NamespaceFacts): Finding[] {
  if (dataplaneMode === 'none' && sidecar) {
    return [
      finding(
        'DataplaneNoneWithInjection',
        ref,
        {name},
        {id: `dataplane-none-with-injection/${name}`, severity: 'info'},
      ),
    ]
  }
  if (dataplaneMode === undefined || dataplaneMode === 'ambient' || dataplaneMode === 'none') return []
  return [
    finding(
      'DataplaneModeUnknown',
      ref,
      {name, dataplaneMode},
      {id: `dataplane-mode-unknown/${name}`, severity: 'warning'},
    ),
  ]
}

/** The namespace analyzers, in the order their findings appear in the plan. */
const NAMESPACE_ANALYZERS: Array<(facts: NamespaceFacts) => Finding[]> = [
  namespaceMissing,
  multipleInjectionLabels,
  injectionAndRevisionLabels,
  revisionLabel,
  injectedByDefault,
  namespaceGitOps,
  dataplaneModeLabel,
]

// ---------------------------------------------------------------------------------------------
// Pod-level injection prediction (webhooks + injectRequired())

export interface PodInjectionInput {
  namespace: string
  labels: Record<string, string>
  annotations: Record<string, string>
  hostNetwork: boolean
}

export interface InjectionPrediction {
  injected: boolean
  /** Why, in words, for messages: "namespace istio-injection=enabled", "pod label sidecar.istio.io/inject=true"… */
  reason: string
  /** No injection webhook matches the namespace and pod labels at all (not a per-pod refusal such as hostNetwork). */
  noWebhook?: true
}

/**
 * Would a pod with this metadata, created now in the namespace, get a sidecar? Webhook selectors
 * first (the snapshot's webhooks, else the chart's table, DOMAIN §2.1), then `injectRequired()`:
 * hostNetwork never; ignored namespaces never; the pod *label* sidecar.istio.io/inject beats the
 * deprecated annotation; never/always-inject selectors; the injection policy.
 */
export function predictInjection(
  pod: PodInjectionInput,
  ns: NamespaceState,
  webhooks: InjectionWebhooks = NO_INJECTION_WEBHOOKS,
): InjectionPrediction {
  const matched = matchingWebhook(pod, ns, webhooks)
  if (!matched)
    return {injected: false, reason: 'no injection webhook matches the namespace and pod labels', noWebhook: true}
  if (pod.hostNetwork) return {injected: false, reason: 'hostNetwork pods are never injected'}
  if (INJECTION_IGNORED_NAMESPACES.includes(pod.namespace))
    return {injected: false, reason: `${pod.namespace} is never injected`}

  const revision = matched.revision ?? 'default'
  const config = webhooks.injectorConfigs[revision] ?? webhooks.injectorConfigs.default
  let explicit = pod.annotations[SIDECAR_INJECT]
  let explicitFrom = `annotation ${SIDECAR_INJECT}`
  if (Object.hasOwn(pod.labels, SIDECAR_INJECT)) {
    explicit = pod.labels[SIDECAR_INJECT]
    explicitFrom = `label ${SIDECAR_INJECT}`
  }
  let decided: boolean | undefined
  let reason = matched.reason
  switch ((explicit ?? '').toLowerCase()) {
    case 'true':
      decided = true
      reason = `pod ${explicitFrom}=true`
      break
    case 'false':
      decided = false
      reason = `pod ${explicitFrom}=false`
      break
    default:
      break
  }
  if (decided === undefined && config) {
    if (config.neverInjectSelector.some((s) => selectorMatches(s, pod.labels))) {
      decided = false
      reason = `neverInjectSelector of ${config.source}`
    } else if (config.alwaysInjectSelector.some((s) => selectorMatches(s, pod.labels))) {
      decided = true
      reason = `alwaysInjectSelector of ${config.source}`
    }
  }
  if (decided !== undefined) return {injected: decided, reason}
  const policy = config?.policy ?? 'enabled'
  return policy === 'enabled'
    ? {injected: true, reason}
    : {injected: false, reason: `injection policy is disabled in ${config!.source}`}
}

function matchingWebhook(
  pod: PodInjectionInput,
  ns: NamespaceState,
  webhooks: InjectionWebhooks,
): {revision?: string; reason: string} | undefined {
  if (webhooks.webhooks.length > 0) {
    const nsLabels = {[NAMESPACE_NAME_LABEL]: ns.name, ...ns.labels}
    const hook = webhooks.webhooks.find(
      (w) => selectorMatches(w.namespaceSelector, nsLabels) && selectorMatches(w.objectSelector, pod.labels),
    )
    if (!hook) return undefined
    const result: {revision?: string; reason: string} = {
      reason: `injection webhook ${hook.name} (${hook.configuration})`,
    }
    const revision = hook.tag !== undefined ? webhooks.tags[hook.tag] : hook.revision
    if (revision !== undefined) result.revision = revision
    return result
  }
  return tableMatch(pod, ns, webhooks)
}

/** The webhook table of the istiod chart (DOMAIN §2.1), for sources without the webhook objects. */
function tableMatch(
  pod: PodInjectionInput,
  ns: NamespaceState,
  webhooks: InjectionWebhooks,
): {revision?: string; reason: string} | undefined {
  const injection = ns.labels[INJECTION_LABEL]
  const nsRev = ns.labels[REVISION_LABEL]
  const podInject = pod.labels[SIDECAR_INJECT]
  const podRev = pod.labels[REVISION_LABEL]
  if (injection !== undefined) {
    // namespace.sidecar-injector.istio.io: istio-injection In [enabled]; objectSelector inject NotIn [false].
    // Any other value matches no webhook at all (it also blocks pod opt-in and the auto webhook).
    return injection === 'enabled' && podInject !== 'false'
      ? {reason: `namespace ${INJECTION_LABEL}=enabled`}
      : undefined
  }
  if (nsRev !== undefined) {
    // rev.namespace.sidecar-injector.istio.io: istio.io/rev In [<rev>]; objectSelector inject NotIn [false].
    if (nsRev === '' || podInject === 'false') return undefined
    return {revision: webhooks.tags[nsRev] ?? nsRev, reason: `namespace ${REVISION_LABEL}=${nsRev}`}
  }
  if (podRev !== undefined && podInject !== 'false') {
    // rev.object.sidecar-injector.istio.io: pod istio.io/rev In [<rev>].
    return podRev === ''
      ? undefined
      : {revision: webhooks.tags[podRev] ?? podRev, reason: `pod label ${REVISION_LABEL}=${podRev}`}
  }
  if (podInject === 'true' && podRev === undefined) {
    // object.sidecar-injector.istio.io: pod sidecar.istio.io/inject In [true], istio.io/rev DoesNotExist.
    return {reason: `pod label ${SIDECAR_INJECT}=true`}
  }
  if (
    webhooks.enabledByDefault &&
    podInject === undefined &&
    podRev === undefined &&
    !INJECTION_IGNORED_NAMESPACES.includes(ns.name)
  ) {
    // auto.sidecar-injector.istio.io.
    return {reason: 'injection enabled by default (auto webhook)'}
  }
  return undefined
}

// ---------------------------------------------------------------------------------------------
// GitOps ownership (E23)

/**
 * The tool that manages an object through Git/Helm, from its labels and annotations (E23), e.g.
 * "Argo CD (argocd.argoproj.io/instance=shop)". Changes made by the migration to such objects are
 * reverted by the next sync unless made in the source repository too.
 */
export function gitOpsManager(meta: {
  labels?: Record<string, string>
  annotations?: Record<string, string>
}): string | undefined {
  const labels = meta.labels ?? {}
  const annotations = meta.annotations ?? {}
  const found: [string, string | undefined][] = [
    [
      'Argo CD',
      labelOrAnnotation('argocd.argoproj.io/instance', labels) ??
        labelOrAnnotation('argocd.argoproj.io/tracking-id', annotations),
    ],
    [
      'Flux',
      labelOrAnnotation('kustomize.toolkit.fluxcd.io/name', labels) ??
        labelOrAnnotation('helm.toolkit.fluxcd.io/name', labels),
    ],
    ['Helm', labelOrAnnotation('meta.helm.sh/release-name', annotations)],
  ]
  for (const [tool, evidence] of found) if (evidence) return `${tool} (${evidence})`
  const managedBy = labels['app.kubernetes.io/managed-by']
  // Our own label marks objects the tool created; anything else is another manager.
  if (managedBy !== undefined && managedBy !== 'mesh-migrate')
    return `${managedBy} (app.kubernetes.io/managed-by=${managedBy})`
  return undefined
}

function labelOrAnnotation(key: string, map: Record<string, string>): string | undefined {
  return map[key] !== undefined ? `${key}=${map[key]}` : undefined
}

/**
 * A label selector as kubectl takes it (`-l`): `k=v`, `k==v`, `k!=v`, `k`, `!k`, `k in (a,b)`, `k notin (a)`,
 * comma-separated. Throws an Error saying which part it cannot read.
 */
export function parseLabelSelector(text: string): LabelSelector {
  const parts = text
    .split(/,(?![^()]*\))/)
    .map((p) => p.trim())
    .filter(Boolean)
  const matchExpressions: LabelSelectorRequirement[] = []
  for (const part of parts) {
    let m: RegExpExecArray | null
    if ((m = /^([\w./-]+)\s+(in|notin)\s+\(([^()]*)\)$/.exec(part))) {
      matchExpressions.push({
        key: m[1]!,
        operator: m[2] === 'in' ? 'In' : 'NotIn',
        values: m[3]!
          .split(',')
          .map((v) => v.trim())
          .filter(Boolean),
      })
    } else if ((m = /^([\w./-]+)\s*(==|=|!=)\s*([\w.-]*)$/.exec(part))) {
      matchExpressions.push({key: m[1]!, operator: m[2] === '!=' ? 'NotIn' : 'In', values: [m[3]!]})
    } else if ((m = /^!\s*([\w./-]+)$/.exec(part))) {
      matchExpressions.push({key: m[1]!, operator: 'DoesNotExist'})
    } else if ((m = /^([\w./-]+)$/.exec(part))) {
      matchExpressions.push({key: m[1]!, operator: 'Exists'})
    } else {
      throw new Error(
        `cannot read "${part}" (expected key=value, key!=value, key, !key, key in (a,b) or key notin (a,b))`,
      )
    }
  }
  return {matchExpressions}
}
