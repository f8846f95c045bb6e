// istio-cni's enrollment rule (DOMAIN §2.2): which pods ztunnel captures, and the
// ambient.istio.io/redirection value the node agent records on them.
import type {KubeObject} from '../../../../src/planner/model.js'
import {type LabelSelector, selectorMatches} from '../../../../src/planner/namespace.js'
import {SIDECAR_STATUS} from './injector.js'
import {DATAPLANE_MODE_LABEL} from '../../../../src/planner/vocab.js'

export const REDIRECTION_ANNOTATION = 'ambient.istio.io/redirection'

/** The chart's default `ambient.enablementSelectors` (istio-cni values.yaml, 1.27+). */
export const DEFAULT_ENABLEMENT_SELECTORS: {podSelector?: LabelSelector; namespaceSelector?: LabelSelector}[] = [
  {podSelector: {matchLabels: {[DATAPLANE_MODE_LABEL]: 'ambient'}}},
  {
    podSelector: {matchExpressions: [{key: DATAPLANE_MODE_LABEL, operator: 'NotIn', values: ['none']}]},
    namespaceSelector: {matchLabels: {[DATAPLANE_MODE_LABEL]: 'ambient'}},
  },
]

/**
 * Whether istio-cni enrolls the pod in ambient (cni/pkg/util/enablement_selector.go Matches): never
 * hostNetwork pods, never pods with a sidecar (sidecar.istio.io/status), never excluded namespaces;
 * otherwise any enablement selector.
 */
export function ambientEnrolled(
  pod: KubeObject,
  namespace: KubeObject | undefined,
  excludedNamespaces: string[],
): {enrolled: boolean; why: string} {
  if (pod.spec?.hostNetwork === true) return {enrolled: false, why: 'hostNetwork pod'}
  if (pod.metadata.annotations?.[SIDECAR_STATUS] !== undefined)
    return {enrolled: false, why: 'the pod has a sidecar (sidecar.istio.io/status)'}
  if (excludedNamespaces.includes(pod.metadata.namespace ?? ''))
    return {enrolled: false, why: `namespace ${pod.metadata.namespace} is excluded`}
  const podLabels = pod.metadata.labels ?? {}
  const nsLabels = namespace?.metadata.labels ?? {}
  for (const s of DEFAULT_ENABLEMENT_SELECTORS) {
    if (s.podSelector && !selectorMatches(s.podSelector, podLabels)) continue
    if (s.namespaceSelector && !selectorMatches(s.namespaceSelector, nsLabels)) continue
    return {
      enrolled: true,
      why: s.namespaceSelector ? `namespace ${DATAPLANE_MODE_LABEL}=ambient` : `pod ${DATAPLANE_MODE_LABEL}=ambient`,
    }
  }
  return {enrolled: false, why: 'no enablement selector matches'}
}
