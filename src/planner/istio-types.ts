// Small typed views of the Istio and Gateway API specs the classifiers read.
// Only the fields that are read are listed, and every one is optional: manifests are user input, and
// a field that upstream validation would reject must not crash the planner.
// Field names follow istio/api (security/v1beta1, networking/v1alpha3, telemetry/v1alpha1,
// extensions/v1alpha1) and gateway-api v1; the same shapes are served under every API version.

export type Labels = Record<string, string>

/** `selector` of AuthorizationPolicy, PeerAuthentication, RequestAuthentication, Telemetry, WasmPlugin, ProxyConfig; `workloadSelector` of DestinationRule. */
export interface WorkloadSelector {
  matchLabels?: Labels
}

/** `workloadSelector` of Sidecar, EnvoyFilter and ServiceEntry (networking's WorkloadSelector: `labels`, not `matchLabels`). */
export interface LegacyWorkloadSelector {
  labels?: Labels
}

/** istio/api type.v1beta1.PolicyTargetReference. */
export interface PolicyTargetReference {
  group?: string
  kind?: string
  name?: string
  namespace?: string
}

// --- security.istio.io ---------------------------------------------------------------------------

export type AuthorizationAction = 'ALLOW' | 'DENY' | 'AUDIT' | 'CUSTOM'

export interface AuthorizationSource {
  principals?: string[]
  notPrincipals?: string[]
  requestPrincipals?: string[]
  notRequestPrincipals?: string[]
  namespaces?: string[]
  notNamespaces?: string[]
  serviceAccounts?: string[]
  notServiceAccounts?: string[]
  ipBlocks?: string[]
  notIpBlocks?: string[]
  remoteIpBlocks?: string[]
  notRemoteIpBlocks?: string[]
  trustDomains?: string[]
  notTrustDomains?: string[]
}

export interface AuthorizationOperation {
  hosts?: string[]
  notHosts?: string[]
  ports?: string[]
  notPorts?: string[]
  methods?: string[]
  notMethods?: string[]
  paths?: string[]
  notPaths?: string[]
}

export interface AuthorizationCondition {
  key?: string
  values?: string[]
  notValues?: string[]
}

export interface AuthorizationRule {
  from?: Array<{source?: AuthorizationSource}>
  to?: Array<{operation?: AuthorizationOperation}>
  when?: AuthorizationCondition[]
}

export interface AuthorizationPolicySpec {
  selector?: WorkloadSelector
  /** Deprecated singular form of targetRefs. */
  targetRef?: PolicyTargetReference
  targetRefs?: PolicyTargetReference[]
  action?: AuthorizationAction
  provider?: {name?: string}
  rules?: AuthorizationRule[]
}

export type MtlsMode = 'UNSET' | 'DISABLE' | 'PERMISSIVE' | 'STRICT'

export interface PeerAuthenticationSpec {
  selector?: WorkloadSelector
  mtls?: {mode?: MtlsMode}
  portLevelMtls?: Record<string, {mode?: MtlsMode}>
}

export interface RequestAuthenticationSpec {
  selector?: WorkloadSelector
  targetRef?: PolicyTargetReference
  targetRefs?: PolicyTargetReference[]
  jwtRules?: unknown[]
}

// --- networking.istio.io -------------------------------------------------------------------------

export interface Destination {
  host?: string
  subset?: string
  port?: {number?: number}
}

export interface RouteDestination {
  destination?: Destination
  weight?: number
  headers?: unknown
}

export interface HttpMatchRequest {
  name?: string
  uri?: unknown
  scheme?: unknown
  method?: unknown
  authority?: unknown
  headers?: Record<string, unknown>
  port?: number
  sourceLabels?: Labels
  gateways?: string[]
  queryParams?: unknown
  ignoreUriCase?: boolean
  withoutHeaders?: unknown
  sourceNamespace?: string
  statPrefix?: string
}

export interface HttpRoute {
  name?: string
  match?: HttpMatchRequest[]
  route?: RouteDestination[]
  redirect?: unknown
  directResponse?: unknown
  delegate?: {name?: string; namespace?: string}
  rewrite?: unknown
  timeout?: string
  retries?: unknown
  fault?: unknown
  mirror?: Destination
  mirrors?: unknown[]
  mirrorPercent?: unknown
  mirrorPercentage?: unknown
  corsPolicy?: unknown
  headers?: unknown
}

export interface L4MatchAttributes {
  destinationSubnets?: string[]
  port?: number
  sourceLabels?: Labels
  gateways?: string[]
  sourceNamespace?: string
  sniHosts?: string[]
}

export interface TcpRoute {
  match?: L4MatchAttributes[]
  route?: RouteDestination[]
}

export interface TlsRoute {
  match?: L4MatchAttributes[]
  route?: RouteDestination[]
}

export interface VirtualServiceSpec {
  hosts?: string[]
  gateways?: string[]
  http?: HttpRoute[]
  tls?: TlsRoute[]
  tcp?: TcpRoute[]
  exportTo?: string[]
}

export interface ClientTlsSettings {
  mode?: 'DISABLE' | 'SIMPLE' | 'MUTUAL' | 'ISTIO_MUTUAL'
}

export interface TrafficPolicy {
  loadBalancer?: unknown
  connectionPool?: unknown
  outlierDetection?: unknown
  tls?: ClientTlsSettings
  portLevelSettings?: Array<TrafficPolicy & {port?: {number?: number}}>
  tunnel?: unknown
  proxyProtocol?: unknown
  retryBudget?: unknown
}

export interface Subset {
  name?: string
  labels?: Labels
  trafficPolicy?: TrafficPolicy
}

export interface DestinationRuleSpec {
  host?: string
  trafficPolicy?: TrafficPolicy
  subsets?: Subset[]
  exportTo?: string[]
  workloadSelector?: WorkloadSelector
}

export interface ServiceEntrySpec {
  hosts?: string[]
  addresses?: string[]
  ports?: Array<{number?: number; name?: string; protocol?: string; targetPort?: number}>
  location?: 'MESH_EXTERNAL' | 'MESH_INTERNAL'
  resolution?: 'NONE' | 'STATIC' | 'DNS' | 'DNS_ROUND_ROBIN' | 'DYNAMIC_DNS'
  endpoints?: unknown[]
  workloadSelector?: LegacyWorkloadSelector
  exportTo?: string[]
}

export interface SidecarSpec {
  workloadSelector?: LegacyWorkloadSelector
  ingress?: unknown[]
  egress?: Array<{hosts?: string[]; port?: unknown; bind?: string; captureMode?: string}>
  outboundTrafficPolicy?: {mode?: 'REGISTRY_ONLY' | 'ALLOW_ANY'; egressProxy?: unknown}
  inboundConnectionPool?: unknown
}

export interface EnvoyFilterSpec {
  workloadSelector?: LegacyWorkloadSelector
  targetRefs?: PolicyTargetReference[]
  configPatches?: Array<{
    applyTo?: string
    match?: {context?: 'ANY' | 'SIDECAR_INBOUND' | 'SIDECAR_OUTBOUND' | 'GATEWAY'}
  }>
  priority?: number
}

export interface ProxyConfigSpec {
  selector?: WorkloadSelector
  concurrency?: number
  environmentVariables?: Labels
  image?: unknown
}

export interface IstioGatewaySpec {
  selector?: Labels
  servers?: unknown[]
}

// --- telemetry.istio.io / extensions.istio.io ----------------------------------------------------

export interface TelemetrySpec {
  selector?: WorkloadSelector
  targetRef?: PolicyTargetReference
  targetRefs?: PolicyTargetReference[]
  tracing?: unknown[]
  metrics?: unknown[]
  accessLogging?: unknown[]
}

export interface WasmPluginSpec {
  selector?: WorkloadSelector
  targetRef?: PolicyTargetReference
  targetRefs?: PolicyTargetReference[]
  url?: string
  phase?: string
}

// --- gateway.networking.k8s.io -------------------------------------------------------------------

export interface LabelSelectorRequirement {
  key?: string
  operator?: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist'
  values?: string[]
}

export interface LabelSelector {
  matchLabels?: Labels
  matchExpressions?: LabelSelectorRequirement[]
}

export interface GatewayListener {
  name?: string
  port?: number
  protocol?: string
  allowedRoutes?: {namespaces?: {from?: 'All' | 'Same' | 'Selector'; selector?: LabelSelector}}
}

export interface KubeGatewaySpec {
  gatewayClassName?: string
  listeners?: GatewayListener[]
}

export interface ParentReference {
  group?: string
  kind?: string
  namespace?: string
  name?: string
  port?: number
  sectionName?: string
}

export interface BackendReference {
  group?: string
  kind?: string
  namespace?: string
  name?: string
  port?: number
  weight?: number
}

export interface RouteSpec {
  parentRefs?: ParentReference[]
  hostnames?: string[]
  rules?: Array<{backendRefs?: BackendReference[]; matches?: unknown[]; filters?: unknown[]}>
}
