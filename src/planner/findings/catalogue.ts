// The catalogue of findings (issue 12, like istioctl's messages.yaml; issue 23 §3): every finding the planner,
// the sources, the steps and preflight emit, built from here by `finding()` / `diagnostic()`
// (src/planner/findings/finding.ts): its severities, its message and fix templates (`{arg}` is filled in per
// object from typed arguments), the DOMAIN edge case (E-number) and the istioctl analyzer code (IST…) it
// corresponds to. docs/findings.md is generated from this file (`npm run findings-doc`).
//
// One naming style: a code is PascalCase (the key). Codes of the older styles (E-numbers, IST numbers,
// kebab-case) are kept as `alias`: plan files that carry them still load (`canonicalFindingCode`), and finding
// ids — what --accept-lost / --accept-hazard name — keep their prefixes (see docs/findings.md).
/** How serious a finding is (the catalogue gives every code its severities). */
export type Severity = 'info' | 'warning' | 'error' | 'blocker'

export type FindingArea =
  'namespace' | 'workload' | 'service' | 'policy' | 'routing' | 'retarget' | 'plan' | 'fleet' | 'source' | 'preflight'

export type CatalogueSeverity = Severity | 'ok'

/** One wording of a finding: a code has one, or several `variants` (the cases it distinguishes). */
export interface FindingText {
  /** Message template: "{arg}" marks what is filled in per object. */
  message: string
  /** Fix template (absent when there is nothing for a person to do: ok/info diagnostics). */
  fix?: string
}

export interface FindingSpec extends Partial<FindingText> {
  /** The code of the older naming style this code replaced (still read from plan files). */
  alias?: string
  area: FindingArea
  /** DOMAIN.md edge case(s), e.g. "E11". */
  edgeCase?: string
  /** The istioctl analyzer message it corresponds to, e.g. "IST0118". */
  istio?: string
  /** The severities it is emitted with (the first is the default). */
  severity: readonly CatalogueSeverity[]
  /** Named wordings, for a code whose cases read differently; then there is no top-level message. */
  variants?: Readonly<Record<string, FindingText>>
}

// prettier-ignore
const SPECS = {
  // ── namespace (src/planner/namespace.ts) ──
  RevisionLabelIssue: {alias: 'E1', area: 'namespace', edgeCase: 'E1', severity: ['info', 'warning'], message: 'Namespace {ns} has an empty istio.io/rev, a revision or tag no webhook serves, or a revision tag that waypoints follow.', fix: 'Set istio.io/rev to an installed revision or tag (or remove it), or pin waypoints with their own istio.io/rev.'},
  InjectionAndRevisionLabels: {alias: 'E2', area: 'namespace', edgeCase: 'E2', severity: ['warning'], message: 'Namespace {ns} has both istio-injection and istio.io/rev: istio-injection wins for injection.', fix: 'Remove both in the injection step (the plan does); keep one label if you stay on sidecars.'},
  InjectionEnabledByDefault: {alias: 'E3', area: 'namespace', edgeCase: 'E3', istio: 'IST0148', severity: ['warning'], message: 'Sidecar injection is enabled by default for namespaces without an injection label ({evidence}): removing the labels does not stop injection.', fix: 'Label the namespace istio-injection=disabled in the injection step, or turn off enableNamespacesByDefault.'},
  GitOpsManaged: {alias: 'E23', area: 'namespace', edgeCase: 'E23', severity: ['info', 'warning'], message: '{object} is managed by {manager}: label, template and restart changes made by the migration may be reverted by the next sync.', fix: 'Make the changes in the source repository (mesh-migrate show PLAN -o patches prints them per step).'},
  ConflictingInjectionLabels: {alias: 'IST0123', area: 'namespace', edgeCase: 'E2', istio: 'IST0123', severity: ['warning'], message: 'The namespace has more than one type of injection labels [{labels}] (istioctl analyze IST0123).', fix: 'Keep one injection label.'},
  NamespaceMissing: {alias: 'namespace-missing', area: 'namespace', severity: ['warning'], message: 'No Namespace object for {ns} in the source: it is treated as having no labels.', fix: 'Add the Namespace manifest to the source.'},
  InjectorConfigUnreadable: {alias: 'injector-config-unreadable', area: 'namespace', severity: ['info'], message: '{source} could not be read: injection is predicted without its policy and selectors.'},
  DataplaneNoneWithInjection: {alias: 'dataplane-none-with-injection', area: 'namespace', severity: ['info'], message: 'Namespace {ns} has istio.io/dataplane-mode=none next to sidecar injection: pods keep sidecars and the namespace is excluded from ambient.', fix: 'Remove istio.io/dataplane-mode=none before enabling ambient.'},
  DataplaneModeUnknown: {alias: 'dataplane-mode-unknown', area: 'namespace', severity: ['warning'], message: 'Namespace {ns} has istio.io/dataplane-mode={value}; only "ambient" and "none" mean anything.', fix: 'Remove the label or set it to ambient/none.'},

  // ── workloads (src/planner/workloads.ts) ──
  PodLevelInjection: {alias: 'E4', area: 'workload', edgeCase: 'E4', severity: ['info', 'warning'], message: 'The pod template of {workload} opts in to sidecars ({how}) or carries a kube-injected istio-proxy: namespace label changes do not remove it.', fix: 'Remove the opt-in (or re-generate without kube-inject) in the step that removes the namespace labels.'},
  OptedOutWorkloadCaptured: {alias: 'E5', area: 'workload', edgeCase: 'E5', severity: ['warning'], message: '{workload} runs without a sidecar: ztunnel captures its pods the moment istio.io/dataplane-mode=ambient is set on the namespace.', fix: 'Label its pod template istio.io/dataplane-mode=none to keep it out, or accept the enrolment.'},
  HostNetworkWorkload: {alias: 'E6', area: 'workload', edgeCase: 'E6', severity: ['info'], message: '{workload} uses hostNetwork: never injected and never captured by ztunnel; left out of restarts and data-plane checks.'},
  InjectedGateway: {alias: 'E7', area: 'workload', edgeCase: 'E7', severity: ['info', 'warning'], message: '{workload} is an injected Istio gateway: it keeps its proxy in ambient; {whether it is still injected after the labels change}.', fix: 'Pin its injection (label the pods sidecar.istio.io/inject=true and istio.io/rev) before the labels are removed.'},
  GatewayApiGatewayCaptured: {alias: 'E8', area: 'workload', edgeCase: 'E8', severity: ['warning'], message: '{workload} runs a Gateway API gateway of class istio without istio.io/dataplane-mode=none: ztunnel captures it when the namespace becomes ambient.', fix: 'Label the Gateway istio.io/dataplane-mode=none before enabling ambient, unless the capture is intended.'},
  StatefulRestartLimits: {alias: 'E9', area: 'workload', edgeCase: 'E9', severity: ['warning'], variants: {
    onDelete: {message: '{workload} uses updateStrategy OnDelete: a rollout restart replaces no pod, so its sidecars stay until pods are deleted.', fix: 'Delete its pods one at a time (the controller re-creates them without a sidecar).'},
    partitioned: {message: '{workload} has rollingUpdate.partition={partition}: pods with an ordinal below {partition} are not restarted and keep their sidecars.', fix: 'Lower the partition to 0 for the restart, or delete those pods explicitly.'},
    headlessService: {message: 'Service {service} is headless: clients reach its pods by IP, which a service waypoint never sees, so Service-targeted L7 policies and routes do not protect that traffic (ztunnel L4 policies still apply).', fix: 'Accept L4-only protection for it, or bind its pods to a waypoint-for workload/all waypoint (mind server-first ports).'},
  }},
  NotRestartable: {alias: 'E10', area: 'workload', edgeCase: 'E10', severity: ['warning'], variants: {
    job: {message: '{workload} cannot be rollout-restarted: its running pods keep their sidecars until they complete.', fix: 'Wait for the Job to finish (or re-create it) after the injection label is removed.'},
    cronJob: {message: '{workload} cannot be rollout-restarted: its next scheduled Job starts without a sidecar; running Jobs keep theirs until they complete.', fix: 'Wait for the next schedule (or trigger a Job manually) after the injection label is removed.'},
    barePod: {message: '{workload} is a bare Pod: nothing restarts it, so it keeps its sidecar until it is deleted and re-created.', fix: 'Have its owner (a script, an operator, a person) delete and re-create it after the injection label is removed.'},
    replicaSet: {message: '{workload} has no Deployment: rollout restart does not apply to a ReplicaSet.', fix: 'Delete its pods (the ReplicaSet re-creates them) after the injection label is removed.'},
    rollout: {message: '{workload} is an Argo Rollout: kubectl rollout restart does not apply.', fix: 'Restart it with `kubectl argo rollouts restart` after the injection label is removed.'},
    customController: {message: '{workload} is not a built-in controller: the plan cannot restart it.', fix: 'Restart its pods through {kind}\'s own mechanism after the injection label is removed.'},
    lifecycleCallers: {message: 'Container(s) {containers} of {workload} call the sidecar\'s lifecycle endpoints (15020/quitquitquit, 15000/quitquitquit or 15021/healthz/ready): without a sidecar these calls fail or wait forever.', fix: 'Remove the wrapper (e.g. scuttle) or make it optional before the workload loses its sidecar.'},
  }},
  PodsWithoutProxy: {alias: 'IST0103', area: 'workload', istio: 'IST0103', severity: ['warning'], message: '{n} of {total} pod(s) of {workload} run without the Istio proxy although the namespace injects sidecars.', fix: 'Restart them so they are injected, or opt them out explicitly.'},
  GatewayImageAutoNotInjected: {alias: 'IST0146', area: 'workload', edgeCase: 'E7', istio: 'IST0146', severity: ['warning'], message: '{kind} {name} contains `image: auto` but does not match any Istio injection webhook selectors: its pods cannot start.', fix: 'Let the gateway be injected (sidecar.istio.io/inject=true in a namespace without injection labels), or inject the namespace.'},
  GatewayPodImageAutoNotInjected: {alias: 'IST0147', area: 'workload', edgeCase: 'E7', istio: 'IST0147', severity: ['error'], message: 'Pod {name} contains `image: auto` but does not match any Istio injection webhook selectors: it cannot start.', fix: 'Let the gateway be injected (sidecar.istio.io/inject=true in a namespace without injection labels), or inject the namespace.'},
  AmbientRedirectionPending: {alias: 'ambient-pending', area: 'workload', severity: ['warning'], message: '{n} pod(s) of {workload} have ambient.istio.io/redirection=pending: partially enrolled, they pass no traffic until ztunnel proxies them.', fix: 'Check ztunnel and istio-cni on their nodes.'},
  MixedProxyPods: {alias: 'mixed-proxy', area: 'workload', severity: ['info', 'warning'], message: 'Pods of {workload} differ: {sidecar} with a sidecar, {ambient} captured by ztunnel, {none} outside the mesh.', fix: 'Let the rollout finish (or restart the workload) before migrating.'},
  SidecarsNotHboneCapable: {alias: 'hbone', area: 'workload', severity: ['warning'], message: 'The sidecars of {workload} are not HBONE-capable: ambient clients reach them through the waypoint only with plain mTLS.', fix: 'Restart the workload on an Istio version whose sidecars speak HBONE (1.22+ with ISTIO_META_ENABLE_HBONE).'},
  DataplaneModeNone: {alias: 'dataplane-none', area: 'workload', severity: ['info', 'warning'], message: '{workload} has istio.io/dataplane-mode=none: it stays outside ambient.'},
  TrafficExclusionsLost: {alias: 'traffic-exclusions', area: 'workload', severity: ['warning'], message: '{workload} excludes traffic from the sidecar ({annotations}): ambient has no per-port/CIDR exclusion, so that traffic is captured by ztunnel.', fix: 'Check that the excluded traffic works through ztunnel, or keep the workload out with istio.io/dataplane-mode=none.'},
  NativeSidecarUnknown: {alias: 'native-sidecar-unknown', area: 'workload', severity: ['info'], message: 'Whether newly injected sidecars are native or classic cannot be told from the pod templates: predicted sidecars are shown as "sidecar".', fix: 'Set sidecar.istio.io/nativeSidecar on the pod template, or read the live cluster.'},
  OwnerInferred: {alias: 'owner-inferred', area: 'workload', severity: ['info'], message: 'The owner of some pods was inferred ({notes}).'},

  // ── services (src/planner/services.ts) ──
  PerConnectionBalancing: {alias: 'E27', area: 'service', edgeCase: 'E27', severity: ['info', 'warning'], variants: {
    waypoint: {message: 'Service {service} speaks HTTP/2 on {ports}: the waypoint balances requests again, but client → waypoint connections are balanced per connection by ztunnel.', fix: 'Watch the waypoint’s load distribution; scale it with the traffic.'},
    ztunnel: {message: 'Service {service} speaks HTTP/2 on {ports}: sidecars balanced it per request, ztunnel balances per connection, so long-lived (gRPC) connections stick to one backend.', fix: 'Put a waypoint in front of the Service if per-request balancing matters, or make clients reconnect periodically.'},
  }},
  PortNameNoProtocol: {alias: 'IST0118', area: 'service', edgeCase: 'E19', istio: 'IST0118', severity: ['blocker', 'info'], variants: {
    blocker: {message: 'Port {port} of Service {service} declares no protocol (name prefix or appProtocol), so the waypoint sniffs it: server-first protocols (MySQL, PostgreSQL, SMTP, …) wait for the detection timeout, TLS is handled as plain TCP, and HTTP routes, L7 policies and per-request balancing apply only when sniffing recognises HTTP (IST0118).', fix: 'Name the port <protocol>[-<suffix>] (http, http2, grpc, tcp, tls, https, …) or set appProtocol, then re-plan; to let the waypoint sniff it anyway, re-plan with --accept-hazard {id}.'},
    blockerPodTraffic: {message: 'Port {port} of Service {service} declares no protocol (name prefix or appProtocol), so the waypoint sniffs it: server-first protocols (MySQL, PostgreSQL, SMTP, …) wait for the detection timeout, TLS is handled as plain TCP, and HTTP routes, L7 policies and per-request balancing apply only when sniffing recognises HTTP (IST0118). With waypoint-for workload/all the HTTP inspector also stays on for ports whose protocol is declared.', fix: 'Name the port <protocol>[-<suffix>] (http, http2, grpc, tcp, tls, https, …) or set appProtocol, then re-plan; to let the waypoint sniff it anyway, re-plan with --accept-hazard {id}.'},
    noWaypoint: {message: 'Port {port} of Service {service} declares no protocol (name prefix or appProtocol). ztunnel does not sniff, so this only matters once a waypoint serves the Service (IST0118).', fix: 'Name the port <protocol>[-<suffix>] (http, http2, grpc, tcp, tls, https, …) or set appProtocol before a waypoint serves it.'},
  }},
  ExternalNamePortNameNoProtocol: {alias: 'IST0150', area: 'service', edgeCase: 'E19', istio: 'IST0150', severity: ['warning'], message: 'Port {port} of ExternalName Service {service} is named {naming}: proxies may not forward TCP traffic for it correctly (istioctl analyze IST0150).', fix: 'Name the port after its protocol (e.g. https, tls-…, http-…) or set appProtocol.'},
  WaypointSniffsProtocol: {alias: 'waypoint-sniffing', area: 'service', edgeCase: 'E19', severity: ['info', 'warning'], message: 'Port {port} of Service {service} is {protocol}, but a waypoint that also serves workload traffic (waypoint-for workload/all) keeps the HTTP inspector on every port: a server-first protocol here waits for the detection timeout.', fix: 'Use waypoint-for: service for Services with server-first protocols, or keep them off the waypoint.'},
  UdpPort: {alias: 'udp-port', area: 'service', severity: ['info'], message: 'Service {service} has UDP port(s) {ports}: neither ztunnel nor waypoints proxy UDP (DNS capture aside), so this traffic gets no mTLS or policy in ambient — as with sidecars, which did not capture UDP either.'},
  ServiceWithoutWorkloads: {alias: 'service-no-workloads', area: 'service', severity: ['info'], message: 'Service {service} selects no workload of the namespace (selector {selector}).'},

  // ── policies (src/planner/classify) ──
  RootNamespaceL7Policy: {area: 'policy', edgeCase: 'E14', severity: ['blocker'], message: '{policy} is a mesh-wide or root-namespace selector policy with attributes ztunnel cannot enforce; {consequence}.', fix: 'Split the L7 part into a waypoint policy, or accept the loss with --accept-lost.'},
  RootL7DenyOutsideWaypoint: {area: 'policy', edgeCase: 'E14', severity: ['error', 'warning'], message: 'The L7 part of mesh-wide DENY {policy} is escaped by callers that bypass the waypoint once {ns} is ambient.', fix: 'Carry the DENY to the waypoint and keep callers on it, or accept the loss (E14 id) with --accept-lost.'},
  DryRunPolicyAtZtunnel: {area: 'policy', edgeCase: 'E16', severity: ['warning', 'blocker'], message: '{policy} is a dry-run policy: ztunnel {enforces it | ignores it} depending on the Istio version.', fix: 'Remove the dry-run annotation or move the policy to the waypoint.'},
  CustomAuthorizationStops: {area: 'policy', edgeCase: 'E16', severity: ['error', 'blocker'], message: '{policy} delegates authorization to ext_authz (action CUSTOM); ztunnel does not receive CUSTOM policies, so the check stops once the pods are ambient.', fix: 'Attach a copy to the waypoint (create-policies does this where it can).'},
  AuditPolicyStops: {area: 'policy', edgeCase: 'E16', severity: ['warning'], message: '{policy} (action AUDIT) is not sent to ztunnel: audit logging of these requests stops once the pods are ambient.', fix: 'Attach a copy to the waypoint (create-policies does this where it can).'},
  IdentityPolicyBehindWaypoint: {area: 'policy', edgeCase: 'E21', severity: ['warning'], message: '{policy} allows/denies by {fields}. Once a waypoint fronts {services}, the destination ztunnel sees the waypoint\'s identity and IP for proxied traffic, not the caller\'s.', fix: 'Carry the policy to the waypoint and admit the waypoint at ztunnel (create-policies does this).'},
  ServiceAccountConditionNeedsWaypoint: {area: 'policy', edgeCase: 'E22', severity: ['warning'], message: '{policy} uses when: source.serviceAccount, which ztunnel does not support; the rule is treated as L7.', fix: 'Rewrite it as from.source.serviceAccounts (Istio >= 1.25) or carry it to the waypoint (create-policies does this).'},
  TrustDomainsIgnoredAtZtunnel: {area: 'policy', edgeCase: 'E22', severity: ['warning'], message: '{policy} uses {fields}; ztunnel silently ignores these fields: {consequence}.', fix: 'Move the condition to a waypoint policy.'},
  PeerAuthenticationDisable: {area: 'policy', edgeCase: 'E18', severity: ['blocker'], message: '{policy} sets mTLS DISABLE for {workloads}: ambient has no plaintext mode, so the migration would change its meaning.', fix: 'Remove DISABLE (or move the workloads out of the namespace) before migrating.'},
  StrictRejectsOutOfMeshCallers: {area: 'policy', edgeCase: 'E18', severity: ['warning'], message: '{policy} makes {workloads} STRICT: once ambient, ztunnel rejects every plaintext caller outside the mesh.', fix: 'Enrol those callers in the mesh, or add a workload-selector PeerAuthentication with portLevelMtls PERMISSIVE for the ports they call.'},
  RootPortLevelMtlsIgnored: {area: 'policy', edgeCase: 'E18', severity: ['warning'], message: '{policy} sets portLevelMtls with a selector in the root namespace; ztunnel ignores it for {ns}\'s pods.', fix: 'Add a PeerAuthentication with that portLevelMtls in {ns}.'},
  SidecarEgressControlLost: {area: 'policy', edgeCase: 'E24', severity: ['warning'], message: '{sidecar} restricts outbound traffic ({restrictions}); ambient pods are not restricted by Sidecar resources.', fix: 'Use an egress waypoint with AuthorizationPolicies for the allowed destinations.'},
  EnvoyFilterNotCarried: {area: 'policy', severity: ['blocker'], message: '{envoyFilter} patches the sidecars of {workloads}; its effect disappears once the pods are ambient.', fix: 'Re-create the behaviour on the waypoint (or drop it), then re-plan.'},
  VmWorkloadUnsupported: {area: 'policy', severity: ['blocker'], message: '{object} is a VM workload ({address}); VM workloads are not supported in ambient mode.', fix: 'Keep the namespace on sidecars, or move the VM workload out of it.'},
  WildcardServiceEntryNeedsEgressWaypoint: {area: 'policy', edgeCase: 'E11', severity: ['error'], message: '{serviceEntry} has wildcard host(s) {hosts}; ambient clients of {ns} do not get its routing/policy without an egress waypoint.', fix: 'Bind the ServiceEntry to an egress waypoint, or accept the loss.'},
  BlockerObject: {area: 'policy', severity: ['blocker'], message: '{object} blocks the migration: {reason}.', fix: 'See the object\'s reasons in mesh-migrate inventory.'},
  MissingKind: {area: 'source', severity: ['warning'], message: '{kind} could not be listed (forbidden or not served): objects of this kind are not in the inventory.', fix: 'Grant list on the kind, or install its CRD if it should exist.'},

  // ── routing (src/planner/classify, src/planner/routes) ──
  ClientSideRoutingLost: {area: 'routing', edgeCase: 'E11, E12', severity: ['error'], message: '{object} routes {service} client-side for {ns}\'s callers; ambient callers no longer apply it.', fix: 'Create the route in the Service\'s namespace (producer route) so that its waypoint applies it, or accept the loss with --accept-lost.'},
  ClientSideTrafficPolicyLost: {area: 'routing', edgeCase: 'E11', severity: ['error'], message: '{destinationRule} sets client-side traffic policy for {host}; once {ns}\'s pods are ambient their traffic no longer applies it.', fix: 'Move the traffic policy to the destination\'s namespace where its waypoint applies it, or accept the loss.'},
  DestinationRuleNotUsedByWaypoint: {area: 'routing', edgeCase: 'E13', severity: ['error'], message: '{destinationRule} sets traffic policy for {services}, but the waypoint of {ns} will not use it ({why}).', fix: 'Define the DestinationRule in {ns} for its own hosts.'},
  VirtualServiceAndRouteForSameHost: {area: 'routing', edgeCase: 'E26', severity: ['warning'], message: '{route} and {virtualServices} route the same Service(s) {services}; mixing them is undefined behaviour.', fix: 'Keep one of them.'},
  VirtualServiceSourceLabelsDropped: {area: 'routing', edgeCase: 'E26', severity: ['warning'], message: '{virtualService} matches on sourceLabels; waypoints drop these matches, so the routes would apply to different callers.', fix: 'Rewrite the matches without sourceLabels before migrating.'},
  VirtualServiceKept: {area: 'routing', edgeCase: 'E26', severity: ['info', 'warning'], message: 'VirtualService {name} stays (the waypoint applies it; VirtualService on waypoints is Alpha): {reasons}.'},
  VirtualServiceSubsetUnknown: {area: 'routing', severity: ['error'], message: '{path}.subset: subset {subset} of {service} is defined by no DestinationRule in view; Istio answers requests routed to it with 503.', fix: 'Define the subset, or fix the route.'},
  WaypointWithoutRevision: {area: 'routing', edgeCase: 'E1', severity: ['warning'], message: '{gateway} has no istio.io/rev label; its control-plane revision comes from the namespace\'s istio.io/rev, which the migration removes.', fix: 'Label the waypoint with its istio.io/rev.'},
  SharedWaypointDeniesNamespace: {area: 'routing', severity: ['blocker'], message: '{ns} is labelled to use waypoint {gateway}, but it does not admit the namespace ({why}): binding fails.', fix: 'Allow the namespace in the waypoint\'s listeners (allowedRoutes), or use another waypoint.'},
  HTTPRouteWiderAudience: {area: 'routing', severity: ['warning'], message: 'spec.exportTo limits the VirtualService to {namespaces}; an HTTPRoute with a Service parent applies to every caller through the waypoint.', fix: 'Review whether the wider audience is acceptable, or keep the VirtualService.'},
  HTTPRoutePartialHost: {area: 'routing', istio: 'IST0109', severity: ['warning'], message: '{path}.host {host} is read as Service {service}; Istio itself expands only dot-less short names.', fix: 'Write the host as a short name or FQDN.'},
  HTTPRouteVersionServiceExists: {area: 'routing', severity: ['info'], message: 'Service {service} already selects {base} subset {subset}: the HTTPRoute uses it and none is created.'},
  HTTPRouteVersionServiceTrafficPolicy: {area: 'routing', severity: ['warning'], message: '{destinationRule} gives {base} subset {subset} a traffic policy; the version Service created for the HTTPRoute does not get it.', fix: 'Add a DestinationRule for the version Service.'},
  HTTPRouteMatchNeverApplied: {area: 'routing', severity: ['info'], message: '{path}.port {port} is not an HTTP port of Service {service}: the match never applied and is not carried over.'},
  HTTPRoutePerPort: {area: 'routing', severity: ['info'], message: 'Service {service} has several HTTP ports and the routing differs between them: one HTTPRoute per port.'},
  HTTPRoutePathPrefixSemantics: {area: 'routing', severity: ['warning'], message: '{path}: Gateway API PathPrefix matches whole path segments, Istio prefix matches characters: {prefix} matches fewer paths.', fix: 'Review the converted match.'},
  HTTPRouteHeaderPrefixAsRegex: {area: 'routing', severity: ['info'], message: '{path}: Gateway API has no header prefix match; prefix {prefix} becomes RegularExpression {regex}.'},

  // ── selectors of client proxies and VMs (issue 21 §4-§7: src/planner/classify/destination-rule.ts) ──
  SelectorDestinationRuleLost: {area: 'routing', edgeCase: 'E11', severity: ['error'], message: '{destinationRule} applies client-side traffic policy for {host} to the outbound traffic of {workloads} only (workloadSelector); once they are ambient nothing applies it. {what the destination\'s waypoint would need}', fix: 'Carry the settings to the destination\'s waypoint (a DestinationRule without workloadSelector), or accept the loss with --accept-lost.'},

  // ── policy migration (src/planner/retarget) ──
  RetargetNoService: {area: 'retarget', edgeCase: 'E9', severity: ['error', 'blocker'], message: '{policy} needs the waypoint, but {why}: a service waypoint never sees traffic to those pods.', fix: 'Put a Service in front of the pods, use a workload waypoint, or drop the L7 part.'},
  RetargetTooManyServices: {area: 'retarget', severity: ['warning'], message: '{policy} covers pods behind {n} Services, more than the 16 targetRefs an object may list: its copy targets the waypoint Gateway.'},
  RetargetWidensToService: {area: 'retarget', edgeCase: 'E9', severity: ['warning', 'blocker'], message: '{policy} selects only some of the pods behind Service {service}; its copy targets the whole Service: {effect}.', fix: 'Split the Service or review the widened policy.'},
  RetargetMissesPodTraffic: {area: 'retarget', edgeCase: 'E9', severity: ['info', 'warning'], message: '{policy} applied to traffic addressed to the pods of {workloads} as well; a service waypoint never sees that traffic.', fix: 'Use a workload waypoint (--waypoint-for all) if pod-addressed traffic matters.'},
  RetargetSeveralServices: {area: 'retarget', severity: ['info'], message: '{policy} selects pods behind {n} Services ({services}): its copy lists one targetRef per Service.'},
  RetargetNeedsRequestAuthentication: {area: 'retarget', severity: ['error'], message: '{policy} reads the JWT ({paths}), but no RequestAuthentication will apply at the waypoint for {services}.', fix: 'Add a RequestAuthentication targeting the waypoint or the Services.'},
  RetargetNeedsServiceWaypoint: {area: 'retarget', severity: ['warning', 'blocker'], message: 'The waypoint is istio.io/waypoint-for=workload: Services are not bound to it, so the Service-targeted copies of {policies} never apply.', fix: 'Plan the waypoint for service or all traffic.'},
  RetargetPodTrafficThroughWaypoint: {area: 'retarget', severity: ['warning'], message: 'The waypoint is istio.io/waypoint-for=all: traffic addressed to pod IPs goes through it too, but the copies attach to Services.'},
  RetargetNameTaken: {area: 'retarget', severity: ['blocker'], message: 'The plan would create {object} for {policy}, but that name is taken.', fix: 'Rename or delete the existing object, then re-plan.'},
  RetargetGitOpsManaged: {area: 'retarget', edgeCase: 'E23', severity: ['warning'], message: '{policy} is managed by {manager}: the plan deletes it after the restart and creates {objects}; the next sync restores it.', fix: 'Make the same change in the source repository.'},
  RetargetL4PartAllowsAll: {area: 'retarget', severity: ['error'], message: '{policy} has a rule with no L4 constraint: for callers that bypass the waypoint its L4 part allows everything.', fix: 'Add an L4 constraint (from/to ports, principals) to the rule, or accept the loss.'},
  RetargetCustomProvider: {area: 'retarget', edgeCase: 'E16', severity: ['warning'], message: '{policy} delegates to ext_authz provider {provider}: on the waypoint the check is made by the waypoint.', fix: 'Check that the provider accepts requests from the waypoint.'},
  RetargetAuditProvider: {area: 'retarget', edgeCase: 'E16', severity: ['info'], message: '{policy} (AUDIT) only logs when an audit-capable extension provider is configured for the waypoint too.'},
  RootPolicyNeedsWaypointCopy: {area: 'retarget', edgeCase: 'E14', severity: ['warning', 'error'], message: '{policy} is a mesh-wide or root-namespace {action} policy with attributes ztunnel cannot enforce; waypoints apply it only with a copy.', fix: 'Create a waypoint copy in the root namespace.'},
  WaypointAllowSetIncomplete: {area: 'retarget', severity: ['blocker'], message: '{policy} allows requests to pods behind {n} Services for which the waypoint enforces other ALLOW policies; a copy is missing.', fix: 'Carry every ALLOW of those Services to the waypoint.'},
  WaypointAllowSetCopy: {area: 'retarget', severity: ['info'], message: 'Once the waypoint is bound it enforces ALLOW {policies} for Service {services} and denies every request to them that no ALLOW matches.'},
  WaypointBypassedBySidecarCallers: {area: 'retarget', severity: ['warning'], message: 'Sidecar callers and ingress gateways without istio.io/ingress-use-waypoint do not go through waypoints: for them the L7 rules of {policies} are no longer enforced.', fix: 'Migrate the calling namespaces first, label the Services istio.io/ingress-use-waypoint=true, and add the bypass-prevention DENY once every caller is ambient.'},
  // issue 21: waypoints that exist already, Services that opt out, the mesh's trust domain (src/planner/namespace-waypoint.ts, retarget/migrate.ts)
  RetargetServiceOptedOut: {area: 'retarget', severity: ['blocker'], message: '{policy} needs the waypoint, but Service {service} in front of its pods is labelled istio.io/use-waypoint=none: no waypoint serves it, so a targetRefs copy never applies to its traffic.', fix: 'Remove the label (or bind the Service to a waypoint), or rewrite the policy with L4 fields only; then re-plan.'},
  WaypointCopyReused: {area: 'retarget', severity: ['info'], message: '{object} exists already and is the waypoint copy of {policy} (same kind, targets and rules): the plan uses it instead of creating {copy}.'},
  WaypointInAnotherNamespace: {area: 'plan', severity: ['info', 'warning'], message: 'Namespace {ns} is bound to waypoint {waypoint} of another namespace: the plan creates and binds nothing, carries the policies to it and admits its identity {principal}; that namespace owns it.', fix: 'Check that the waypoint exists, serves Service traffic and admits {ns}.'},
  WaypointAttachmentDenied: {area: 'plan', severity: ['blocker'], message: 'Waypoint {waypoint} does not admit namespace {ns} (allowedRoutes of its HBONE listener): istiod binds none of its Services to it.', fix: 'Admit {ns} in the waypoint\'s allowedRoutes, or bind {ns} to another waypoint.'},
  TrustDomainAssumed: {area: 'plan', severity: ['info', 'warning'], message: 'The policies this plan creates name the waypoint in trust domain cluster.local: {why}.', fix: 'Re-run plan with --trust-domain, or include the mesh ConfigMap.'},
  ServiceAccountConditionNotRewritten: {area: 'retarget', edgeCase: 'E22', severity: ['info'], message: '{policy}: when: source.serviceAccount cannot be rewritten as from.source.serviceAccounts ({why}); it is carried to the waypoint.'},
  ServiceAccountRewriteAssumesVersion: {area: 'retarget', edgeCase: 'E22', severity: ['warning'], message: '{policy} is rewritten with from.source.serviceAccounts, assuming Istio >= 1.25 (the Istio version is unknown).', fix: 'Check the Istio version before applying.'},
  DenyMatchesWaypoint: {area: 'retarget', edgeCase: 'E21', severity: ['warning', 'blocker'], message: '{policy} is keyed on the caller\'s identity or IP and (may) match the waypoint: from bind-waypoint on it denies proxied traffic.', fix: 'Exclude the waypoint\'s identity from the DENY.'},
  DenyMatchesWaypointDuringSwitch: {area: 'retarget', edgeCase: 'E21', severity: ['warning'], message: '{policy} is keyed on the caller\'s identity or IP and (may) match the waypoint between bind-waypoint and the policy switch.', fix: 'Accept the window or exclude the waypoint\'s identity.'},

  // ── plan (src/plan/plan-builder.ts, plan-steps.ts, inventory.ts) ──
  ExistingWaypointTrafficType: {area: 'plan', severity: ['blocker'], message: 'The plan reuses waypoint {gateway}, which is istio.io/waypoint-for={type}: Services the plan binds are not served.', fix: 'Change the waypoint\'s traffic type, or plan another waypoint name.'},
  ExistingWaypointRevision: {area: 'plan', edgeCase: 'E1', severity: ['blocker'], message: 'The existing waypoint {gateway} is served by another revision than the namespace.', fix: 'Label the waypoint with the namespace\'s istio.io/rev.'},
  InjectionByDefaultWithInjectedGateway: {area: 'plan', edgeCase: 'E3, E7', severity: ['blocker'], message: 'Injection is enabled by default (E3) and {ns} runs injected gateway(s) {gateways}: disabling injection stops their injection.', fix: 'Pin the gateways\' injection first, then re-plan.'},
  WaypointNameTaken: {area: 'plan', severity: ['blocker'], message: 'Gateway {gateway} exists and is not a waypoint.', fix: 'Choose another --waypoint-name.'},
  ServiceUsesOwnWaypoint: {area: 'plan', severity: ['warning', 'blocker'], message: 'Service {service} is labelled istio.io/use-waypoint={waypoint} already.', fix: 'Remove the label or plan that waypoint.'},
  UnexpectedHazard: {area: 'plan', edgeCase: 'E19', severity: ['blocker'], message: 'During apply/rollback, from {from} until {until}: {hazard}. No documented window covers this.', fix: 'Accept it with --accept-hazard {id}, or change the plan options.'},
  NetworkPolicySeesWaypoint: {area: 'plan', edgeCase: 'E25', severity: ['warning'], message: 'For traffic through the waypoint, NetworkPolicy sees the waypoint\'s pods, not the caller: {policies} must admit the waypoint.', fix: 'Review the NetworkPolicy step.'},
  OptOutManual: {area: 'plan', edgeCase: 'E5', severity: ['warning'], message: '{workload} is outside the mesh (sidecar.istio.io/inject=false) and will be captured by ztunnel when the namespace becomes ambient.', fix: 'Re-plan with --opted-out keep or label it istio.io/dataplane-mode=none yourself.'},
  BypassDenyHeadless: {area: 'plan', edgeCase: 'E9', severity: ['warning'], message: 'No bypass-prevention DENY for headless Service {service}: its pods are reached by pod IP, which never goes through a service waypoint.'},
  BypassDenyCallers: {area: 'plan', severity: ['warning'], message: 'deny-waypoint-bypass denies every caller that does not come through the waypoint {gateway}.', fix: 'Apply it only once every caller is ambient.'},

  // ── fleet (src/plan/fleet.ts) ──
  FleetOrder: {area: 'fleet', severity: ['warning'], message: 'This plan counts on namespace {ns} being migrated first (wave {wave}): {reasons}.', fix: 'Apply the plans wave by wave.'},
  FleetCycle: {area: 'fleet', severity: ['warning'], message: 'Namespaces {namespaces} depend on each other, so they share wave {wave}.', fix: '{suggestion}'},

  // ── sources (src/sources) ──
  NamespaceNotFound: {area: 'source', severity: ['error', 'info'], message: 'Namespace {ns} does not exist in context {context}.', fix: 'Check the namespace name and the --context.'},
  ClusterUnidentified: {area: 'source', severity: ['info', 'error'], message: 'Namespace kube-system could not be read, so the plan records no cluster uid.', fix: 'Grant get on namespace kube-system.'},
  PartialList: {area: 'source', severity: ['warning'], message: '{kind} could not be listed cluster-wide (forbidden); only namespaces {namespaces} were read.', fix: 'Grant cluster-wide list on {kind}.'},
  ManifestDuplicate: {alias: 'manifest-duplicate', area: 'source', severity: ['warning'], message: '{object} is defined twice: in {file} and in {file}; the later one is used.', fix: 'Remove one of them.'},
  ManifestTemplate: {alias: 'manifest-template', area: 'source', severity: ['warning'], message: '{file} is an unrendered Helm/Go template and not valid YAML; it was skipped.', fix: 'Render it (helm template) and point --manifests at the output.'},
  ManifestSkipped: {alias: 'manifest-skipped', area: 'source', severity: ['info'], message: '{file} document {n} is not a Kubernetes manifest (a kustomization, Helm chart metadata, values) or not a valid object; it was skipped.', fix: 'Render it (kustomize build, helm template) and pass the output with --manifests, or fix the object.'},

  // ── preflight (src/preflight) ──
  UnknownCheck: {area: 'preflight', severity: ['error'], message: 'Unknown preflight check "{check}".', fix: 'Use one of the known checks.'},
  CheckForbidden: {area: 'preflight', severity: ['warning'], message: 'Could not be checked: {error}.', fix: 'Grant the read it needs.'},
  CheckFailed: {area: 'preflight', severity: ['error'], message: 'The check failed: {error}.'},
  IstiodNotFound: {area: 'preflight', severity: ['error'], message: 'No istiod Deployment in the root namespace {root}.', fix: 'Install Istio there, or pass --root-namespace.'},
  IstiodRevisionNotFound: {area: 'preflight', edgeCase: 'E1', severity: ['error'], message: 'Namespace {ns} is served by revision {revision}, but no istiod of that revision runs in {root}.', fix: 'Install that revision or relabel the namespace.'},
  IstioVersionUnknown: {area: 'preflight', severity: ['warning', 'error'], message: 'Cannot tell the Istio version of {istiod} from its image {image}.'},
  IstioTooOld: {area: 'preflight', severity: ['error'], message: '{istiod} runs Istio {version}; ambient mode is GA only from 1.24.', fix: 'Upgrade Istio to 1.24 or later.'},
  IstioVersion124: {area: 'preflight', severity: ['warning', 'ok'], message: '{istiod} runs Istio {version}: ambient works, but ztunnel only honours from.source.serviceAccounts and merges portLevelMtls from 1.25 on.'},
  IstioVersion: {area: 'preflight', severity: ['ok', 'warning'], message: '{istiod} runs Istio {version} (≥ 1.25).'},
  AmbientSettingUnreadable: {area: 'preflight', severity: ['warning', 'error'], message: '{istiod} takes PILOT_ENABLE_AMBIENT from a reference: cannot tell whether ambient is enabled.'},
  AmbientNotEnabled: {area: 'preflight', severity: ['error'], message: '{istiod} does not run with PILOT_ENABLE_AMBIENT=true.', fix: 'Install or upgrade Istio with the ambient profile.'},
  AmbientEnabled: {area: 'preflight', severity: ['ok'], message: '{istiod} runs with PILOT_ENABLE_AMBIENT=true.'},
  HboneMetadataMissing: {area: 'preflight', severity: ['warning'], message: 'Mesh config {configMap} does not set ISTIO_META_ENABLE_HBONE: sidecars are not HBONE-capable.', fix: 'Set defaultConfig.proxyMetadata.ISTIO_META_ENABLE_HBONE=true (the ambient profile does).'},
  AutoAllowWaypointPolicy: {area: 'preflight', severity: ['warning', 'error'], message: '{istiod} runs with PILOT_AUTO_ALLOW_WAYPOINT_POLICY=true: every bound workload admits its waypoint.'},
  LayeredWaypointAuthorization: {area: 'preflight', edgeCase: 'E17', severity: ['warning'], message: '{istiod} runs with ENABLE_LAYERED_WAYPOINT_AUTHORIZATION_POLICIES=true: selector-based policies of bound workloads are also enforced by the waypoint.'},
  AmbientProfilePrunesGateways: {area: 'preflight', edgeCase: 'E17', severity: ['warning'], message: 'istioctl installed {gateways} in {root}: upgrading with --set profile=ambient removes them.', fix: 'Keep the gateways in the install\'s values when upgrading.'},
  AmbientMulticluster: {area: 'preflight', edgeCase: 'E20', severity: ['error'], message: 'Namespace {ns} is set up for ambient multicluster (multi-primary multi-network only, beta since 1.29).'},
  PossiblyMulticluster: {area: 'preflight', edgeCase: 'E20', severity: ['warning'], message: 'This mesh may span several clusters: {evidence}.'},
  // ── issue 21 §11: multicluster topologies (src/preflight/checks/multicluster.ts) ──
  AmbientPrimaryRemote: {area: 'preflight', edgeCase: 'E20', severity: ['error'], message: 'This cluster is part of a primary-remote install ({evidence}): upstream does not support ambient there.', fix: 'Make every cluster a primary (multi-primary, multi-network) before migrating.'},
  MultiNetworkMesh: {area: 'preflight', edgeCase: 'E20', severity: ['warning'], message: 'This mesh spans networks ({evidence}): ambient needs every cluster a primary, identically named waypoints in every cluster and istio.io/global on the Services that cross.', fix: 'Migrate the namespace in every cluster together with the same waypoint name, or ignore this if no other cluster shares it.'},
  NodesUnreadable: {area: 'preflight', severity: ['warning', 'error'], message: 'Nodes could not be listed (forbidden): cannot tell whether {daemonSet} covers every node.', fix: 'Grant list on nodes.'},
  ZtunnelNotFound: {area: 'preflight', severity: ['error'], message: 'No ztunnel DaemonSet in {root}.', fix: 'Install ztunnel.'},
  ZtunnelNotScheduled: {area: 'preflight', severity: ['error'], message: '{daemonSet} runs on no node.', fix: 'Check its nodeSelector, affinity and tolerations.'},
  ZtunnelNotReady: {area: 'preflight', severity: ['error', 'warning'], message: '{daemonSet} is not ready on every node.'},
  ZtunnelNodesNotCovered: {area: 'preflight', severity: ['error'], message: '{daemonSet} does not cover node(s) {nodes}.'},
  ZtunnelFewerThanNodes: {area: 'preflight', severity: ['warning'], message: '{daemonSet} is scheduled on fewer nodes than match its constraints.'},
  ZtunnelRolloutInProgress: {area: 'preflight', severity: ['warning'], message: '{daemonSet} is rolling out.', fix: 'Wait for kubectl rollout status.'},
  ZtunnelReady: {area: 'preflight', severity: ['ok'], message: '{daemonSet} is ready on {n} node(s).'},
  IstioCniNotFound: {area: 'preflight', severity: ['error'], message: 'No istio-cni DaemonSet in {root}.', fix: 'Install istio-cni.'},
  IstioCniNotScheduled: {area: 'preflight', severity: ['error'], message: '{daemonSet} runs on no node.', fix: 'Check its nodeSelector, affinity and tolerations.'},
  IstioCniNotReady: {area: 'preflight', severity: ['error', 'warning'], message: '{daemonSet} is not ready on every node.'},
  IstioCniNodesNotCovered: {area: 'preflight', severity: ['error'], message: '{daemonSet} does not cover node(s) {nodes}.'},
  IstioCniFewerThanNodes: {area: 'preflight', severity: ['warning'], message: '{daemonSet} is scheduled on fewer nodes than match its constraints.'},
  IstioCniRolloutInProgress: {area: 'preflight', severity: ['warning'], message: '{daemonSet} is rolling out.', fix: 'Wait for kubectl rollout status.'},
  IstioCniReady: {area: 'preflight', severity: ['ok'], message: '{daemonSet} is ready on {n} node(s).'},
  IstioCniAmbientDisabled: {area: 'preflight', severity: ['error'], message: '{daemonSet} runs without AMBIENT_ENABLED=true: istio-cni will not capture pods for ztunnel.', fix: 'Upgrade istio-cni with the ambient profile.'},
  IstioCniConfigUnreadable: {area: 'preflight', severity: ['warning'], message: 'Cannot read the istio-cni configuration: whether it has ambient enabled is unknown.'},
  NamespaceExcludedByCni: {area: 'preflight', severity: ['error'], message: 'istio-cni excludes namespace {ns} (cni.excludeNamespaces): its pods are never captured.', fix: 'Remove it from cni.excludeNamespaces.'},
  GatewayApiMissing: {area: 'preflight', severity: ['warning', 'error'], message: 'The cluster does not serve {kinds}.', fix: 'Install the Gateway API standard-channel CRDs.'},
  GatewayApiVersionUnchecked: {area: 'preflight', severity: ['warning'], message: 'Reading CustomResourceDefinitions is forbidden: the Gateway API versions were not checked.'},
  GatewayApiCrdMissing: {area: 'preflight', severity: ['error', 'warning'], message: 'CRD {crd} is not installed.', fix: 'Install the Gateway API standard-channel CRDs.'},
  GatewayApiV1NotServed: {area: 'preflight', istio: 'IST0176', severity: ['warning', 'error'], message: 'CRD {crd} does not serve gateway.networking.k8s.io/v1.', fix: 'Upgrade the Gateway API CRDs.'},
  GatewayApiVersionUnknown: {area: 'preflight', severity: ['warning'], message: 'CRD {crd} has no bundle-version annotation: its version cannot be checked.'},
  GatewayApiCrdBelowMinimum: {area: 'preflight', istio: 'IST0176', severity: ['error', 'warning'], message: 'CRD {crd} is below Istio\'s minimum {minimum}: istiod does not process {kind} objects.', fix: 'Upgrade the Gateway API CRDs.'},
  GatewayApiCrds: {area: 'preflight', severity: ['ok'], message: 'Gateway API CRDs present: {crds}.'},
  WaypointClassMissing: {area: 'preflight', severity: ['error', 'warning'], message: 'GatewayClass istio-waypoint does not exist.', fix: 'Install the Gateway API CRDs; istiod creates the class.'},
  WaypointClassWrongController: {area: 'preflight', severity: ['error'], message: 'GatewayClass istio-waypoint names another controller: no istiod will deploy waypoints.'},
  WaypointClassNotAccepted: {area: 'preflight', severity: ['warning', 'error'], message: 'GatewayClass istio-waypoint is not Accepted.', fix: 'Check istiod\'s logs.'},
  WaypointClass: {area: 'preflight', severity: ['ok'], message: 'GatewayClass istio-waypoint exists with the istiod controller.'},
  SidecarsNotHbone: {area: 'preflight', severity: ['error', 'warning'], message: '{n} sidecar pod(s) in {ns} are not HBONE-capable.', fix: 'Restart them on an HBONE-capable Istio.'},
  MeshSidecarsUnchecked: {area: 'preflight', severity: ['warning'], message: 'Pods could not be listed cluster-wide: sidecars of other namespaces were not checked for HBONE support.', fix: 'Grant cluster-wide list on pods.'},
  MeshSidecarsNotHbone: {area: 'preflight', severity: ['warning', 'ok'], message: '{n} sidecar pod(s) in other namespaces are not HBONE-capable: once {ns} is ambient they cannot reach it through the waypoint.'},
  SidecarsHbone: {area: 'preflight', severity: ['ok'], message: 'The sidecars of {ns} are HBONE-capable.'},
  NoBlockers: {area: 'preflight', severity: ['ok'], message: 'No blockers for {ns}.'},
  NoNetworkPolicies: {area: 'preflight', severity: ['ok'], message: 'No NetworkPolicies in {ns}.'},
  NetworkPolicyBlocksHbone: {area: 'preflight', edgeCase: 'E25', severity: ['error'], message: '{policy}: once ambient, its peers reach {pods} on TCP 15008 (HBONE) and are dropped.', fix: 'Admit TCP 15008 from the peers.'},
  NetworkPolicyBlocksProbes: {area: 'preflight', edgeCase: 'E25', severity: ['warning'], message: '{policy}: kubelet probes from 169.254.7.127 are not admitted.', fix: 'Admit 169.254.7.127/32.'},
  NetworkPoliciesAdmitHbone: {area: 'preflight', edgeCase: 'E25', severity: ['ok'], message: '{n} NetworkPolicies in {ns}: none blocks TCP 15008 or kubelet probes.'},
  RbacWithoutPlan: {area: 'preflight', severity: ['warning'], message: 'No plan to derive permissions from: RBAC was not checked.', fix: 'Pass --plan PLAN.'},
  PlanKindNotServed: {area: 'preflight', severity: ['error'], message: 'The plan writes or reads kinds this cluster does not serve: {kinds}.', fix: 'Install the missing CRDs.'},
  RbacDenied: {area: 'preflight', severity: ['error'], message: 'Not allowed to {verbs} {resource} {scope}; needed by {steps}.', fix: 'Grant the permission.'},
  RbacAllowed: {area: 'preflight', severity: ['ok'], message: 'All {n} permission(s) the plan needs are granted.'},
} as const satisfies Record<string, FindingSpec>

/** Every finding/diagnostic code: `Finding.code` and `PreflightDiagnostic.code` only take these. */
export type FindingCode = keyof typeof SPECS

/** The catalogue's entry of each code, with its literal templates (what `FindingArgs` reads the arguments from). */
export type CatalogueEntry<C extends FindingCode> = (typeof SPECS)[C]

/** The catalogue, code → spec. */
export const FINDING_CATALOGUE: Readonly<Record<FindingCode, FindingSpec>> = SPECS

export function isFindingCode(code: string): code is FindingCode {
  return Object.hasOwn(SPECS, code)
}

const BY_ALIAS: ReadonlyMap<string, FindingCode> = new Map(
  (Object.keys(SPECS) as FindingCode[]).flatMap((code) => {
    const alias = FINDING_CATALOGUE[code].alias
    return alias ? [[alias, code] as const] : []
  }),
)

/** The code for a code or an old-style alias ("E4" → "PodLevelInjection"); undefined when neither. */
export function canonicalFindingCode(codeOrAlias: string): FindingCode | undefined {
  return isFindingCode(codeOrAlias) ? codeOrAlias : BY_ALIAS.get(codeOrAlias)
}

/**
 * The spellings of a finding id (or --accept-* pattern) that name the same findings. Ids keep the prefixes they
 * had before codes took one style (`IST0118/web/8080`, `E4/Deployment/x`): a plan's accepted ids and scripts
 * go on matching. Where an id starts with an old code, the code's one-style name is accepted in its place
 * (`PortNameNoProtocol/web/8080`), so either spelling accepts the finding.
 */
export function findingIdSpellings(idOrPattern: string): string[] {
  const slash = idOrPattern.indexOf('/')
  const head = slash < 0 ? idOrPattern : idOrPattern.slice(0, slash)
  const alias = isFindingCode(head) ? FINDING_CATALOGUE[head].alias : undefined
  return alias ? [idOrPattern, alias + idOrPattern.slice(head.length)] : [idOrPattern]
}
