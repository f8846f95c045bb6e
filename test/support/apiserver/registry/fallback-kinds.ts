// The kinds the end-to-end suite needs when ../shared/ (and its real CRD files) is absent,
// as in a user's clone. Names, versions and scopes match Istio (master, 1.30+) and Gateway
// API v1.6.1; there is no schema, so objects are stored without validation or pruning.
import type {JsonObject} from '../types.js'

type Row = [group: string, kind: string, plural: string, shortNames: string[], categories: string[], scope: 'Namespaced' | 'Cluster', versions: string, status: boolean]

const ISTIO = (g: string) => ['istio-io', `${g.split('.')[0]}-istio-io`]
const GW = ['gateway-api']

// versions: served versions, the storage one marked with '*'
const ROWS: Row[] = [
  ['networking.istio.io', 'VirtualService', 'virtualservices', ['vs'], ISTIO('networking.istio.io'), 'Namespaced', 'v1* v1beta1 v1alpha3', true],
  ['networking.istio.io', 'DestinationRule', 'destinationrules', ['dr'], ISTIO('networking.istio.io'), 'Namespaced', 'v1* v1beta1 v1alpha3', true],
  ['networking.istio.io', 'Gateway', 'gateways', ['gw'], ISTIO('networking.istio.io'), 'Namespaced', 'v1* v1beta1 v1alpha3', true],
  ['networking.istio.io', 'ServiceEntry', 'serviceentries', ['se'], ISTIO('networking.istio.io'), 'Namespaced', 'v1* v1beta1 v1alpha3', true],
  ['networking.istio.io', 'Sidecar', 'sidecars', [], ISTIO('networking.istio.io'), 'Namespaced', 'v1* v1beta1 v1alpha3', true],
  ['networking.istio.io', 'WorkloadEntry', 'workloadentries', ['we'], ISTIO('networking.istio.io'), 'Namespaced', 'v1* v1beta1 v1alpha3', true],
  ['networking.istio.io', 'WorkloadGroup', 'workloadgroups', ['wg'], ISTIO('networking.istio.io'), 'Namespaced', 'v1* v1beta1 v1alpha3', true],
  ['networking.istio.io', 'EnvoyFilter', 'envoyfilters', [], ISTIO('networking.istio.io'), 'Namespaced', 'v1alpha3*', true],
  ['networking.istio.io', 'ProxyConfig', 'proxyconfigs', [], ISTIO('networking.istio.io'), 'Namespaced', 'v1beta1*', true],
  ['security.istio.io', 'AuthorizationPolicy', 'authorizationpolicies', ['ap'], ISTIO('security.istio.io'), 'Namespaced', 'v1* v1beta1', true],
  ['security.istio.io', 'PeerAuthentication', 'peerauthentications', ['pa'], ISTIO('security.istio.io'), 'Namespaced', 'v1* v1beta1', true],
  ['security.istio.io', 'RequestAuthentication', 'requestauthentications', ['ra'], ISTIO('security.istio.io'), 'Namespaced', 'v1* v1beta1', true],
  ['telemetry.istio.io', 'Telemetry', 'telemetries', ['telemetry'], ISTIO('telemetry.istio.io'), 'Namespaced', 'v1 v1alpha1*', true],
  ['extensions.istio.io', 'WasmPlugin', 'wasmplugins', [], ISTIO('extensions.istio.io'), 'Namespaced', 'v1alpha1*', true],
  ['extensions.istio.io', 'TrafficExtension', 'trafficextensions', [], ISTIO('extensions.istio.io'), 'Namespaced', 'v1alpha1*', true],
  ['gateway.networking.k8s.io', 'GatewayClass', 'gatewayclasses', ['gc'], GW, 'Cluster', 'v1* v1beta1', true],
  ['gateway.networking.k8s.io', 'Gateway', 'gateways', ['gtw'], GW, 'Namespaced', 'v1* v1beta1', true],
  ['gateway.networking.k8s.io', 'HTTPRoute', 'httproutes', [], GW, 'Namespaced', 'v1* v1beta1', true],
  ['gateway.networking.k8s.io', 'GRPCRoute', 'grpcroutes', [], GW, 'Namespaced', 'v1*', true],
  ['gateway.networking.k8s.io', 'TCPRoute', 'tcproutes', [], GW, 'Namespaced', 'v1*', true],
  ['gateway.networking.k8s.io', 'TLSRoute', 'tlsroutes', [], GW, 'Namespaced', 'v1*', true],
  ['gateway.networking.k8s.io', 'UDPRoute', 'udproutes', [], GW, 'Namespaced', 'v1*', true],
  ['gateway.networking.k8s.io', 'ReferenceGrant', 'referencegrants', ['refgrant'], GW, 'Namespaced', 'v1 v1beta1*', false],
  ['gateway.networking.k8s.io', 'BackendTLSPolicy', 'backendtlspolicies', ['btlspolicy'], GW, 'Namespaced', 'v1*', true],
  ['gateway.networking.k8s.io', 'ListenerSet', 'listenersets', ['lset'], GW, 'Namespaced', 'v1*', true],
]

/** CRD objects for the fallback kinds (a schema that keeps everything, since none is known). */
export function fallbackCrds(): JsonObject[] {
  return ROWS.map(([group, kind, plural, shortNames, categories, scope, versions, status]) => ({
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: {name: `${plural}.${group}`},
    spec: {
      group,
      names: {kind, listKind: `${kind}List`, plural, singular: kind.toLowerCase(), ...(shortNames.length ? {shortNames} : {}), categories},
      scope,
      versions: versions.split(' ').map((v) => ({
        name: v.replace('*', ''),
        served: true,
        storage: v.endsWith('*'),
        schema: {openAPIV3Schema: {type: 'object', 'x-kubernetes-preserve-unknown-fields': true}},
        ...(status ? {subresources: {status: {}}} : {}),
      })),
    },
  }))
}
