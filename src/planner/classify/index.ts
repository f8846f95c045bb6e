// Classification of every Istio / Gateway API object that bears on the migrated namespace (SPEC §4,
// DOMAIN §3, §7, §8). Selection: the namespace's own objects; root-namespace mesh-wide config and root
// selector policies matching its pods; other namespaces' VirtualServices/DestinationRules/ServiceEntries
// visible to it (exportTo) or naming its Services; routes and waypoints attached to it. Workloads and
// Services themselves are analysed elsewhere and arrive in the context.
import type {ClassifyContext} from '../context.js'
import type {Finding, InventoryItem, KubeObject} from '../model.js'
import {compareRefs, refKey} from '../refs.js'
import {authorizationPolicyClassifier} from './authz.js'
import {type KindClassifier} from './results.js'
import {kindKey, namespaceOf} from './objects.js'
import {destinationRuleClassifier} from './destination-rule.js'
import {envoyFilterClassifier} from './envoy-filter.js'
import {istioGatewayClassifier, kubeGatewayClassifier, routeClassifier} from './gateway-api.js'
import {peerAuthenticationClassifier} from './peer-authentication.js'
import {proxyConfigClassifier} from './proxy-config.js'
import {requestAuthenticationClassifier} from './request-authentication.js'
import {serviceEntryClassifier, workloadEntryClassifier, workloadGroupClassifier} from './service-entry.js'
import {sidecarClassifier} from './sidecar.js'
import {telemetryClassifier} from './telemetry.js'
import {virtualServiceClassifier} from './virtual-service.js'
import {wasmPluginClassifier} from './wasm-plugin.js'

export {analyzeAuthorizationPolicy} from './authz.js'
export type {
  AuthorizationPolicyAnalysis,
  AuthzField,
  AuthzMatchAnalysis,
  AuthzRuleAnalysis,
  AuthzScope,
  RuleOutcome,
} from './authz.js'

export const CLASSIFIERS: KindClassifier[] = [
  authorizationPolicyClassifier,
  peerAuthenticationClassifier,
  requestAuthenticationClassifier,
  virtualServiceClassifier,
  destinationRuleClassifier,
  serviceEntryClassifier,
  workloadEntryClassifier,
  workloadGroupClassifier,
  sidecarClassifier,
  envoyFilterClassifier,
  proxyConfigClassifier,
  istioGatewayClassifier,
  telemetryClassifier,
  wasmPluginClassifier,
  kubeGatewayClassifier,
  routeClassifier,
]

/** Kind → `<group>/<Kind>` → classifier: most objects (Deployments, Pods, Services) are turned away by their kind alone. */
const BY_KIND = new Map<string, Map<string, KindClassifier>>()
for (const c of CLASSIFIERS)
  for (const k of c.kinds) {
    const kind = k.slice(k.indexOf('/') + 1)
    BY_KIND.set(kind, (BY_KIND.get(kind) ?? new Map()).set(k, c))
  }

/** The classifier for an object's kind (any served API version), or undefined when the kind is not classified here. */
export function classifierFor(obj: Pick<KubeObject, 'apiVersion' | 'kind'>): KindClassifier | undefined {
  return BY_KIND.get(obj.kind)?.get(kindKey(obj))
}

/** Whether an object bears on the migrated namespace. */
export function isRelevant(obj: KubeObject, ctx: ClassifyContext): boolean {
  const c = classifierFor(obj)
  if (!c) return false
  return namespaceOf(obj, ctx) === ctx.namespace || c.relevantElsewhere(obj, ctx)
}

/**
 * Classifies the snapshot's objects that bear on the migrated namespace; `only` limits the run to some of them (each
 * object's classification depends on the context, never on which other objects are classified with it).
 */
export function classifyObjects(
  ctx: ClassifyContext,
  only?: (obj: KubeObject) => boolean,
): {items: InventoryItem[]; findings: Finding[]} {
  const seen = new Set<string>()
  const classified: {item: InventoryItem; findings: Finding[]}[] = []
  for (const obj of ctx.objects) {
    if (
      !obj ||
      typeof obj !== 'object' ||
      typeof obj.kind !== 'string' ||
      typeof obj.apiVersion !== 'string' ||
      !obj.metadata?.name
    )
      continue
    if (only && !only(obj)) continue
    const c = classifierFor(obj)
    if (!c) continue
    // The same object may be listed under several served versions (v1, v1beta1, ...): classify it once.
    const key = refKey({
      apiVersion: obj.apiVersion,
      kind: obj.kind,
      namespace: namespaceOf(obj, ctx),
      name: obj.metadata.name,
    })
    if (seen.has(key)) continue
    if (!isRelevant(obj, ctx)) continue
    seen.add(key)
    classified.push(c.classify(obj, ctx))
  }
  classified.sort((a, b) => compareRefs(a.item.ref, b.item.ref))
  const findings = classified.flatMap((c) => c.findings)
  const ids = new Set<string>()
  return {
    items: classified.map((c) => c.item),
    findings: findings.filter((f) => (ids.has(f.id) ? false : (ids.add(f.id), true))),
  }
}
