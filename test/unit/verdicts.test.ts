// Issue 10, "Domain: the planner's verdicts": upstream behaviour the planner got wrong, one describe per point.
// Each test names its upstream source. Fixtures: test/fixtures/verdicts/ (base-shop.yaml + one file per case),
// read as `plan --manifests` reads them; every plan must pass the tool's own validation.
import path from 'node:path'

import {describe, expect, it} from 'vitest'

import {buildInventory} from '../../src/planner/inventory.js'
import type {InventoryItem, KubeObject, SourceSnapshot} from '../../src/planner/model.js'
import {buildPlan} from '../../src/plan/plan-builder.js'
import type {MigrationPlan, PlanOptions} from '../../src/planner/plan-types.js'
import {checkPlanText, renderPlanFile} from '../../src/plan/planfile.js'
import {loadManifestFiles} from '../../src/sources/manifests.js'
import {REPO_ROOT} from '../support/shared.js'
import {istio} from './support/classify-context.js'

const FIXTURES = path.join(REPO_ROOT, 'test/fixtures/verdicts')
const NS = 'shop'

async function fixture(...files: string[]): Promise<KubeObject[]> {
  return standalone('base-shop.yaml', ...files)
}

/** Fixture files without base-shop.yaml (they bring their own Namespace). */
async function standalone(...files: string[]): Promise<KubeObject[]> {
  const loaded = await loadManifestFiles(
    files.map((f) => path.join(FIXTURES, f)),
    {defaultNamespace: NS},
  )
  expect(loaded.findings).toEqual([])
  return loaded.objects
}

/** The plan exactly as `plan` builds it; it must pass `validate`. */
function planOf(objects: KubeObject[], options: Partial<PlanOptions> & {istioVersion?: string} = {}): MigrationPlan {
  const {istioVersion, ...rest} = options
  const snapshot: SourceSnapshot = {
    namespace: NS,
    rootNamespace: 'istio-system',
    target: {manifests: [FIXTURES]},
    objects,
    missingKinds: [],
    findings: [],
  }
  const waypointFor = rest.waypointFor ?? 'service'
  const inventory = buildInventory(snapshot, {waypointFor, ...(istioVersion ? {istioVersion} : {})})
  const plan = buildPlan({
    inventory,
    snapshot,
    options: {rootNamespace: 'istio-system', waypointName: 'waypoint', waypointFor, ...rest},
    generator: 'mesh-migrate/test',
    ...(istioVersion ? {istioVersion} : {}),
  })
  expect(checkPlanText(renderPlanFile(plan)).problems).toEqual([])
  return plan
}

function item(plan: MigrationPlan, kind: string, name: string, namespace = NS): InventoryItem {
  const found = plan.spec.inventory.find(
    (i) => i.ref.kind === kind && i.ref.name === name && i.ref.namespace === namespace,
  )
  if (!found) throw new Error(`no ${kind} ${namespace}/${name} in the inventory`)
  return found
}

const stepIds = (p: MigrationPlan) => p.spec.steps.map((s) => s.id)
const blockerIds = (p: MigrationPlan) => p.spec.blockers.map((b) => b.id)
const reasonsOf = (i: InventoryItem) => i.reasons.join('\n')

describe('1. Telemetry needs a waypoint', () => {
  // Sources: istio/istio pilot/pkg/model/telemetry.go (waypoints apply root and namespace-wide Telemetry of their
  // namespace and of the Service's), istio/ztunnel (no Telemetry support), https://istio.io/latest/docs/ambient/usage/waypoint/
  // ("Observability: HTTP metrics, access logs, tracing" need a waypoint); DOMAIN §3.11.
  it('namespace-wide access logging plans, binds and simulates the waypoint: no "enforced nowhere" blocker', async () => {
    const plan = planOf(await fixture('telemetry-namespace.yaml'))
    expect(plan.spec.summary.waypointRequired).toBe(true)
    expect(stepIds(plan)).toEqual([
      'preflight',
      'create-waypoint',
      'wait-waypoint',
      'bind-waypoint',
      'enable-ambient',
      'remove-sidecar-injection',
      'restart-workloads',
      'verify-dataplane',
    ])
    expect(plan.spec.blockers).toEqual([])
    const telemetry = item(plan, 'Telemetry', 'access-logs')
    expect(telemetry).toMatchObject({verdict: 'L7', action: 'keep', scope: 'namespace'})
    expect(reasonsOf(telemetry)).toContain('the waypoint that will serve shop applies it as it is')
    expect(plan.spec.policies).toEqual([
      {key: 'Telemetry/access-logs', ztunnel: 'ignored', workloads: ['Deployment/cart'], appliedByWaypoint: true},
    ])
    // Only the sidecar-callers window remains (callers with sidecars never pass the waypoint).
    expect(plan.spec.hazards.map((h) => h.kind)).toEqual(['sidecar-callers-bypass'])
  })

  it('root (mesh-wide) access logging needs the namespace waypoint too; one that only disables needs none', async () => {
    const rootLogs = istio(
      'Telemetry',
      'mesh-default',
      {accessLogging: [{providers: [{name: 'envoy'}]}]},
      {namespace: 'istio-system'},
    )
    const plan = planOf([...(await fixture()), rootLogs])
    expect(plan.spec.summary.waypointRequired).toBe(true)
    expect(plan.spec.blockers).toEqual([])
    expect(plan.spec.policies.find((p) => p.key === 'Telemetry/istio-system/mesh-default')).toMatchObject({
      appliedByWaypoint: true,
    })

    const onlyOff = istio('Telemetry', 'quiet', {accessLogging: [{disabled: true}]}, {namespace: NS})
    const quiet = planOf([...(await fixture()), onlyOff])
    expect(quiet.spec.summary.waypointRequired).toBe(false)
    expect(quiet.spec.blockers).toEqual([])
    expect(item(quiet, 'Telemetry', 'quiet')).toMatchObject({verdict: 'inert', action: 'keep'})
  })
})

describe("2. Egress through the namespace's waypoint", () => {
  // Source: https://istio.io/latest/docs/ambient/usage/egress-gateway/ ("If you place a ServiceEntry in a namespace
  // enrolled to use a waypoint, all mesh traffic to that external host passes through the waypoint"), DOMAIN §3.5;
  // waypoint DestinationRule lookup waypoint ns → service ns → root: istio/istio pilot/pkg/model/push_context.go.
  it("a TLS-originating DestinationRule for the namespace's own ServiceEntry is kept on the namespace waypoint", async () => {
    const plan = planOf(await fixture('egress-tls-origination.yaml'))
    expect(plan.spec.blockers).toEqual([])
    expect(plan.spec.summary.waypointRequired).toBe(true)
    const dr = item(plan, 'DestinationRule', 'payments-api-tls')
    expect(dr).toMatchObject({verdict: 'L7', action: 'keep'})
    expect(reasonsOf(dr)).toContain(
      'ServiceEntry payments-api (VIP auto-allocated by istiod) is bound to the waypoint of shop',
    )
    expect(reasonsOf(item(plan, 'ServiceEntry', 'payments-api'))).toContain('as their egress waypoint')
    const bind = plan.spec.steps.find((s) => s.id === 'bind-waypoint')!
    expect(bind.description).toContain(
      'so are its ServiceEntries (payments-api): the waypoint becomes their egress waypoint',
    )
  })

  it('what is still lost is named: an entry without a VIP (resolution NONE), one labelled use-waypoint=none', async () => {
    const plan = planOf(await fixture('egress-tls-origination.yaml', 'egress-resolution-none.yaml'))
    expect(item(plan, 'DestinationRule', 'payments-api-tls')).toMatchObject({action: 'keep'})
    expect(item(plan, 'DestinationRule', 'legacy-ldap-mtls')).toMatchObject({verdict: 'L7', action: 'lost-client-side'})
    expect(blockerIds(plan)).toEqual(['E11/DestinationRule/shop/legacy-ldap-mtls'])
    expect(plan.spec.blockers[0]!.message).toContain(
      'ServiceEntry legacy-ldap has no VIP: resolution NONE without spec.addresses',
    )
    // Only entries with a VIP are named as served by the waypoint.
    expect(plan.spec.steps.find((s) => s.id === 'bind-waypoint')!.description).toContain(
      'so are its ServiceEntries (payments-api):',
    )
    expect(reasonsOf(item(plan, 'ServiceEntry', 'legacy-ldap'))).toContain(
      'but without a VIP ztunnel never sends its traffic there',
    )

    const objects = (await fixture('egress-tls-origination.yaml')).map((o) =>
      o.kind === 'ServiceEntry' ? {...o, metadata: {...o.metadata, labels: {'istio.io/use-waypoint': 'none'}}} : o,
    )
    const optedOut = planOf(objects)
    expect(item(optedOut, 'DestinationRule', 'payments-api-tls')).toMatchObject({action: 'lost-client-side'})
    expect(reasonsOf(item(optedOut, 'DestinationRule', 'payments-api-tls'))).toContain(
      'is labelled istio.io/use-waypoint=none',
    )
  })

  it('the waypoint applies the most specific DestinationRule for the host; a shadowed one is named as lost', async () => {
    const wildcardDr = istio(
      'DestinationRule',
      'all-external',
      {host: '*.example.com', trafficPolicy: {connectionPool: {tcp: {maxConnections: 5}}}},
      {namespace: NS},
    )
    const plan = planOf([...(await fixture('egress-tls-origination.yaml')), wildcardDr])
    expect(item(plan, 'DestinationRule', 'payments-api-tls')).toMatchObject({action: 'keep'})
    expect(item(plan, 'DestinationRule', 'all-external')).toMatchObject({action: 'lost-client-side'})

    const rootDr = istio(
      'DestinationRule',
      'payments-root',
      {host: 'api.payments.example.com', trafficPolicy: {tls: {mode: 'SIMPLE'}}},
      {namespace: 'istio-system'},
    )
    const shadowed = planOf([...(await fixture('egress-tls-origination.yaml')), rootDr])
    expect(item(shadowed, 'DestinationRule', 'payments-api-tls')).toMatchObject({action: 'keep'})
    // shop's sidecars resolved shop's rule first as well (client namespace → service namespace → root): nothing lost.
    expect(item(shadowed, 'DestinationRule', 'payments-root', 'istio-system')).toMatchObject({
      verdict: 'inert',
      action: 'keep',
    })
    expect(reasonsOf(item(shadowed, 'DestinationRule', 'payments-root', 'istio-system'))).toContain(
      'but it resolves DestinationRule shop/payments-api-tls for api.payments.example.com',
    )
    expect(shadowed.spec.blockers).toEqual([])
  })
})

describe('3. AUDIT is not sent to ztunnel', () => {
  // Source: istio/istio pilot/pkg/serviceregistry/ambient/authorization.go (only ALLOW and DENY are converted for
  // ztunnel; CUSTOM/AUDIT get ZtunnelAccepted=False "ztunnel does not support the AUDIT action"); DOMAIN §3.1.
  it('no reason says "enforced by ztunnel" for an AUDIT policy, whatever its rules', async () => {
    const auditL4 = istio(
      'AuthorizationPolicy',
      'audit-l4',
      {
        selector: {matchLabels: {app: 'cart'}},
        action: 'AUDIT',
        rules: [
          {
            from: [{source: {namespaces: ['front']}}],
            to: [{operation: {ports: ['8080']}}],
            when: [{key: 'source.ip', values: ['10.0.0.0/8']}],
          },
        ],
      },
      {namespace: NS},
    )
    const auditNs = istio(
      'AuthorizationPolicy',
      'audit-ns',
      {action: 'AUDIT', rules: [{to: [{operation: {ports: ['8080']}}]}]},
      {namespace: NS},
    )
    const plan = planOf([...(await fixture()), auditL4, auditNs])
    for (const name of ['audit-l4', 'audit-ns']) {
      const ap = item(plan, 'AuthorizationPolicy', name)
      expect(ap).toMatchObject({verdict: 'L7', action: 'retarget', ztunnel: 'ignored'})
      expect(reasonsOf(ap)).not.toMatch(/(?<!not )enforced by (the destination )?ztunnel/)
      expect(reasonsOf(ap)).toContain('action AUDIT is never sent to ztunnel')
    }
    expect(reasonsOf(item(plan, 'AuthorizationPolicy', 'audit-l4'))).toContain(
      'spec.rules[0].to[0].operation.ports: destination port: an L4 attribute, but action AUDIT is never sent to ztunnel: not enforced by ztunnel',
    )
  })
})

describe('4. ServiceEntry addresses', () => {
  // Sources: istio/istio pilot/pkg/serviceregistry/ambient (ServiceEntry → workloadapi.Service: auto-assigned
  // addresses only when resolution != NONE, and for wildcard hosts only with DYNAMIC_DNS),
  // pilot/pkg/serviceregistry/serviceentry shouldV2AutoAllocateIPFromPieces (label
  // networking.istio.io/enable-autoallocate-ip=false opts out; spec.addresses win), pilot/pkg/features
  // PILOT_ENABLE_IP_AUTOALLOCATE (default true; the 1.24 compatibility profile sets it false); DOMAIN §3.7.
  const se = (name: string, spec: Record<string, unknown>, labels?: Record<string, string>) =>
    istio(
      'ServiceEntry',
      name,
      {location: 'MESH_EXTERNAL', ports: [{number: 443, name: 'tls', protocol: 'TLS'}], ...spec},
      {namespace: NS, ...(labels ? {labels} : {})},
    )
  const hostsReason = (plan: MigrationPlan, name: string) =>
    item(plan, 'ServiceEntry', name).reasons.find((r) => r.startsWith('spec.hosts: '))!

  it('reasons promise a VIP only where ztunnel gets one', async () => {
    const plan = planOf([
      ...(await fixture()),
      se('explicit', {hosts: ['a.example.com'], addresses: ['240.0.0.10'], resolution: 'NONE'}),
      se('dns', {hosts: ['b.example.com'], resolution: 'DNS'}),
      se('none', {hosts: ['c.example.com'], resolution: 'NONE'}),
      se(
        'opted-out',
        {hosts: ['d.example.com'], resolution: 'DNS'},
        {'networking.istio.io/enable-autoallocate-ip': 'false'},
      ),
      se('static', {hosts: ['e.example.com'], resolution: 'STATIC', endpoints: [{address: '10.1.2.3'}]}),
    ])
    expect(hostsReason(plan, 'explicit')).toContain('VIP 240.0.0.10 (spec.addresses)')
    expect(hostsReason(plan, 'dns')).toContain('VIP auto-allocated by istiod')
    expect(hostsReason(plan, 'static')).toContain('VIP auto-allocated by istiod')
    expect(hostsReason(plan, 'none')).toContain('no VIP: resolution NONE without spec.addresses')
    expect(hostsReason(plan, 'opted-out')).toContain('no VIP: networking.istio.io/enable-autoallocate-ip=false')
    for (const name of ['none', 'opted-out'])
      expect(hostsReason(plan, name)).not.toContain('ambient DNS capture resolves')
  })

  it('wildcard hosts get a VIP only with DYNAMIC_DNS; Istio < 1.25 does not auto-allocate by default', async () => {
    const plan = planOf([
      ...(await fixture()),
      se('wild', {hosts: ['*.example.com'], resolution: 'DNS'}),
      se('wild-dynamic', {hosts: ['*.example.org'], resolution: 'DYNAMIC_DNS'}),
    ])
    expect(hostsReason(plan, 'wild')).toContain(
      'no VIP: wildcard hosts are auto-allocated an address only with resolution DYNAMIC_DNS',
    )
    expect(hostsReason(plan, 'wild-dynamic')).toContain('VIP auto-allocated')
    const old = planOf([...(await fixture()), se('dns', {hosts: ['b.example.com'], resolution: 'DNS'})], {
      istioVersion: '1.24',
    })
    expect(hostsReason(old, 'dns')).toContain('no VIP unless istiod runs with PILOT_ENABLE_IP_AUTOALLOCATE=true')
  })
})

describe('5. PeerAuthentication port exceptions are honoured by ztunnel', () => {
  // Sources: istio/istio pilot/pkg/serviceregistry/ambient/policies.go (workload portLevelMtls → per-port
  // exceptions of the STRICT DENY, merged with a STRICT parent since 1.25, #54073); security/v1beta1
  // peer_authentication.proto; DOMAIN §3.2, E18.
  it('the STRICT finding names the exception, does not say "every plaintext caller", and does not ask for it again', async () => {
    const plan = planOf(await fixture('peer-authentication-port-exception.yaml'))
    const strict = [...plan.spec.findings, ...plan.spec.blockers].filter(
      (f) => f.code === 'StrictRejectsOutOfMeshCallers',
    )
    expect(strict.map((f) => f.id).sort()).toEqual(['E18/PeerAuthentication/shop/cart-metrics/strict'])
    const f = strict[0]!
    expect(f.message).not.toContain('every plaintext caller')
    expect(f.message).toContain(
      'on every port except the portLevelMtls PERMISSIVE exceptions it honours: cart port(s) 9090 (PeerAuthentication cart-metrics)',
    )
    expect(f.fix).toContain('nothing to add for those ports')
    expect(f.fix).not.toContain('add a workload-selector PeerAuthentication with portLevelMtls {<port>')
    expect(item(plan, 'PeerAuthentication', 'cart-metrics').reasons).toContain(
      'spec.portLevelMtls[9090].mode: PERMISSIVE: honoured by ztunnel (workload-selector policy outside the root namespace; merged with the STRICT parent since 1.25)',
    )
  })

  it('inherited STRICT (workload policy without a mode) still counts the exception; without one the advice stays', async () => {
    const objects = (await fixture('peer-authentication-port-exception.yaml')).map((o) =>
      o.metadata.name === 'cart-metrics'
        ? {...o, spec: {selector: o.spec.selector, portLevelMtls: o.spec.portLevelMtls}}
        : o,
    )
    const inherited = planOf(objects)
    const f = inherited.spec.findings.find((x) => x.code === 'StrictRejectsOutOfMeshCallers')!
    expect(f.id).toBe('E18/PeerAuthentication/shop/default/strict')
    expect(f.message).toContain('except the portLevelMtls PERMISSIVE exceptions it honours: cart port(s) 9090')
    const plain = planOf(
      (await fixture('peer-authentication-port-exception.yaml')).filter((o) => o.metadata.name !== 'cart-metrics'),
    )
    const g = plain.spec.findings.find((x) => x.code === 'StrictRejectsOutOfMeshCallers')!
    expect(g.message).toContain('rejects every plaintext caller outside the mesh')
    expect(g.fix).toContain('add a workload-selector PeerAuthentication with portLevelMtls')
  })
})

describe('6. Injection in istio-injection=disabled namespaces', () => {
  // Source: istio/istio manifests/charts/istio-control/istio-discovery/templates/mutatingwebhook.yaml — every
  // webhook requires istio-injection In [enabled] or DoesNotExist, so `disabled` blocks pod opt-ins as well;
  // DOMAIN §2.1, E4.
  it('E4 says the opt-in gives no sidecar, the plan keeps istio-injection=disabled, and only the injected workload is migrated', async () => {
    const plan = planOf(await standalone('injection-disabled.yaml'))
    const e4 = plan.spec.findings.find((f) => f.id === 'E4/Deployment/cart')!
    expect(e4.severity).toBe('info')
    expect(e4.message).toContain(
      'namespace shop is labelled istio-injection=disabled, which blocks pod opt-ins too, so the opt-in gives no sidecar',
    )
    expect(e4.message).toContain('removing it would start injecting these pods')
    expect(e4.message).not.toContain('does not stop its injection')
    const cart = plan.spec.workloads.find((w) => w.ref.name === 'cart')!
    expect(cart.traits).not.toContain('pod-opt-in')
    expect(cart.proxy).toBe('none')
    // The label that blocks injection is never removed (no remove-sidecar-injection step touches it).
    for (const s of plan.spec.steps) {
      for (const op of s.operations)
        if (op.op === 'label' && op.ref.kind === 'Namespace')
          expect(Object.keys(op.labels)).not.toContain('istio-injection')
    }
    expect(stepIds(plan)).not.toContain('remove-sidecar-injection')
  })

  it('with istio-injection=enabled the opt-in is still reported as keeping the sidecar', async () => {
    const objects = (await standalone('injection-disabled.yaml')).map((o) =>
      o.kind === 'Namespace' ? {...o, metadata: {...o.metadata, labels: {'istio-injection': 'enabled'}}} : o,
    )
    const plan = planOf(objects)
    expect(plan.spec.findings.find((f) => f.id === 'E4/Deployment/cart')).toMatchObject({severity: 'warning'})
    expect(plan.spec.workloads.find((w) => w.ref.name === 'cart')!.traits).toContain('pod-opt-in')
  })
})

describe('7. Routes by protocol', () => {
  // Sources: istio/istio pilot/pkg/networking/core/listener_waypoint.go (tcp/tls VirtualService routes on the
  // waypoint's TCP chain), https://istio.io/latest/docs/ambient/overview/APIs/ (TCPRoute, TLSRoute Alpha); DOMAIN §3.4, §3.6.
  it('a tcp-only VirtualService is TCPRoute material, not HTTPRoute; --routes httproute keeps it as a VirtualService', async () => {
    const objects = await fixture('tcp-virtual-service.yaml')
    const plan = planOf(objects)
    const vs = item(plan, 'VirtualService', 'db-split')
    expect(vs).toMatchObject({verdict: 'L7', action: 'retarget'})
    expect(reasonsOf(vs)).toContain(
      'rewrite as TCPRoute (Alpha, experimental-channel CRDs), not HTTPRoute, for its tcp routes — or keep it a VirtualService on the waypoint',
    )
    expect(reasonsOf(vs)).not.toContain('rewrite as HTTPRoute')

    const swapped = planOf(objects, {routes: 'httproute'})
    const kept = swapped.spec.findings.find((f) => f.id === 'VirtualServiceKept/VirtualService/shop/db-split')!
    expect(kept.message).toContain('their Gateway API form is TCPRoute')
    const created = swapped.spec.steps
      .flatMap((s) => s.operations)
      .filter((op) => op.op === 'apply' && op.object.kind === 'HTTPRoute')
    expect(created).toEqual([])
  })
})

describe('8. Mesh-wide L7 DENY in the root namespace', () => {
  // Sources: istio/istio pilot/pkg/model/policyattachment.go (waypoints apply only targetRefs policies, never
  // selector-less root ones; targetRefs kind Gateway = the waypoint), pilot/pkg/serviceregistry/ambient/authorization.go
  // (ztunnel strips L7 from a DENY: an L7-only rule never fires, a mixed one is enforced on its L4 part);
  // istio/istio#51445 (sidecar callers never go through waypoints); DOMAIN §3.0, §3.1, E14.
  it('plans the namespace waypoint and a copy targeting it; the E14 finding says exactly what remains unenforced', async () => {
    const plan = planOf(await fixture('root-mesh-deny.yaml'))
    const ap = item(plan, 'AuthorizationPolicy', 'mesh-no-admin', 'istio-system')
    expect(ap).toMatchObject({verdict: 'L7', action: 'retarget', scope: 'mesh', ztunnel: 'broadened'})
    expect(plan.spec.summary.waypointRequired).toBe(true)
    const create = plan.spec.steps.find((s) => s.id === 'create-policies')!
    const copy = create.operations.find((op) => op.op === 'apply')!
    expect(copy.op === 'apply' && copy.object).toMatchObject({
      metadata: {
        name: 'mesh-no-admin-waypoint',
        namespace: NS,
        annotations: {'mesh-migrate.io/copied-from': 'istio-system/mesh-no-admin'},
      },
      spec: {
        targetRefs: [{group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'waypoint'}],
        action: 'DENY',
        rules: (await fixture('root-mesh-deny.yaml')).find((o) => o.metadata.name === 'mesh-no-admin')!.spec.rules,
      },
    })
    // The original is not the plan's to change or delete.
    expect(JSON.stringify(plan.spec.steps.flatMap((s) => s.operations))).not.toContain('"namespace":"istio-system"')

    expect(blockerIds(plan)).toEqual(['E14/AuthorizationPolicy/istio-system/mesh-no-admin'])
    const e14 = plan.spec.blockers[0]!
    expect(e14.code).toBe('RootL7DenyOutsideWaypoint')
    expect(e14.message).toContain(
      'copies the DENY into shop with targetRefs Gateway (the waypoint), so requests through the waypoint (Service-addressed calls from ambient clients) stay denied',
    )
    expect(e14.message).toContain(
      "still unenforced for shop's pods: requests that bypass the waypoint — callers that still have sidecars, traffic addressed to pod IPs, ingress gateways without istio.io/ingress-use-waypoint — get only its L4 part at ztunnel",
    )
    expect(e14.fix).toContain('--accept-lost E14/AuthorizationPolicy/istio-system/mesh-no-admin')
    // The mesh administrator's manifests stay available, as advice.
    expect(
      plan.spec.findings.find((f) => f.id === 'retarget-root/AuthorizationPolicy/istio-system/mesh-no-admin'),
    ).toMatchObject({severity: 'warning'})

    // The simulation sees the copy: enforced at the waypoint after the restart, no "enforced nowhere".
    expect(plan.spec.policies.find((p) => p.key === 'AuthorizationPolicy/istio-system/mesh-no-admin')).toMatchObject({
      waypointCopyIn: 'create-policies',
      ztunnel: 'broadened',
    })
    expect(plan.spec.hazards.filter((h) => !h.window)).toEqual([])

    const accepted = planOf(await fixture('root-mesh-deny.yaml'), {
      acceptLost: ['E14/AuthorizationPolicy/istio-system/mesh-no-admin'],
    })
    expect(accepted.spec.blockers).toEqual([])
    expect(
      accepted.spec.findings.find((f) => f.id === 'E14/AuthorizationPolicy/istio-system/mesh-no-admin')!.message,
    ).toMatch(/\(accepted with --accept-lost\)$/)
  })

  it('an L7-only DENY gets nothing at ztunnel; a mesh-wide L7 ALLOW stays a blocker with no copy', async () => {
    const l7Only = istio(
      'AuthorizationPolicy',
      'mesh-no-admin',
      {action: 'DENY', rules: [{to: [{operation: {paths: ['/admin']}}]}]},
      {namespace: 'istio-system'},
    )
    const plan = planOf([...(await fixture()), l7Only])
    expect(plan.spec.blockers[0]!.message).toContain('get nothing of it (its L7-only rules never fire at ztunnel)')

    const allow = istio(
      'AuthorizationPolicy',
      'mesh-get-only',
      {action: 'ALLOW', rules: [{to: [{operation: {methods: ['GET']}}]}]},
      {namespace: 'istio-system'},
    )
    const blocked = planOf([...(await fixture()), allow])
    expect(item(blocked, 'AuthorizationPolicy', 'mesh-get-only', 'istio-system')).toMatchObject({
      verdict: 'blocker',
      action: 'blocker',
    })
    expect(blocked.spec.summary.waypointRequired).toBe(false)
    expect(blockerIds(blocked)).toContain('retarget-root/AuthorizationPolicy/istio-system/mesh-get-only')
  })
})

describe('Issue 21 §4-§7: client-side selectors, VMs and external endpoints, capture modes (end to end)', () => {
  // Sources: istio/istio pilot/pkg/model/sidecar.go SidecarScope.DestinationRule (workloadSelector rules: outbound of
  // the selected proxies of their namespace only); pilot/pkg/serviceregistry/serviceentry/conversion.go
  // getTLSModeFromWorkloadEntry (no serviceAccount, no tlsMode label: no proxy); pilot/pkg/serviceregistry/ambient/
  // workloads.go (Services and policies select WorkloadEntries by labels); pkg/kube/inject/validate.go (interceptionMode).
  it('the workloadSelector DestinationRule blocks as a client-side loss until accepted; the rest plans without blockers', async () => {
    const objects = await fixture('vms-and-client-selectors.yaml')
    const plan = planOf(objects)
    const dr = item(plan, 'DestinationRule', 'cart-to-payments')
    expect(dr).toMatchObject({verdict: 'L7', action: 'lost-client-side', scope: 'client-side'})
    expect(blockerIds(plan)).toEqual(['E11/DestinationRule/shop/cart-to-payments'])
    expect(plan.spec.blockers[0]!.message).toContain('api.payments.example.com has no waypoint: it would need one')
    expect(plan.spec.blockers[0]!.fix).toContain('--accept-lost E11/DestinationRule/shop/cart-to-payments')

    const accepted = planOf(objects, {acceptLost: ['E11/DestinationRule/shop/cart-to-payments']})
    expect(accepted.spec.blockers).toEqual([])
    expect(accepted.spec.findings.find((f) => f.code === 'SelectorDestinationRuleLost')).toMatchObject({
      severity: 'warning',
    })
    // §6: the proxy-less database entry is no VM: no blocker, kept.
    expect(item(accepted, 'WorkloadEntry', 'orders-db-1')).toMatchObject({verdict: 'L4', action: 'keep'})
    // §5: the policy selecting only that entry enforces nothing, and says so (not "matches no workload").
    const ap = item(accepted, 'AuthorizationPolicy', 'orders-db-clients')
    expect(ap).toMatchObject({verdict: 'inert', action: 'no-effect', services: ['orders-db']})
    expect(reasonsOf(ap)).toContain('only WorkloadEntry orders-db-1 (no serviceAccount and no tlsMode label: no proxy)')
    expect(accepted.spec.findings.filter((f) => f.code === 'ServiceWithoutWorkloads')).toEqual([])
    // §7: TPROXY is a capture mode, no traffic exclusion finding.
    const tproxy = accepted.spec.workloads.find((w) => w.ref.name === 'tproxy')!
    expect(tproxy.lostAnnotations[0]!.replacement).toMatch(/^TPROXY: a capture mode/)
    expect(accepted.spec.findings.filter((f) => f.code === 'TrafficExclusionsLost')).toEqual([])
  })
})
