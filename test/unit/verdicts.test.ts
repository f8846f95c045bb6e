// Issue 10, "Domain: the planner's verdicts": upstream behaviour the planner got wrong, one describe per point.
// Each test names its upstream source. Fixtures: test/fixtures/verdicts/ (base-shop.yaml + one file per case),
// read as `plan --manifests` reads them; every plan must pass the tool's own validation.
import path from 'node:path'

import {describe, expect, it} from 'vitest'

import {buildInventory} from '../../src/planner/inventory.js'
import type {InventoryItem, KubeObject, SourceSnapshot} from '../../src/planner/model.js'
import {buildPlan} from '../../src/planner/plan-builder.js'
import type {MigrationPlan, PlanOptions} from '../../src/planner/plan-types.js'
import {checkPlanText, renderPlanFile} from '../../src/planner/planfile.js'
import {loadManifestFiles} from '../../src/sources/manifests.js'
import {REPO_ROOT} from '../support/shared.js'
import {istio} from './support/classify-context.js'

const FIXTURES = path.join(REPO_ROOT, 'test/fixtures/verdicts')
const NS = 'shop'

async function fixture(...files: string[]): Promise<KubeObject[]> {
  const loaded = await loadManifestFiles(['base-shop.yaml', ...files].map((f) => path.join(FIXTURES, f)), {defaultNamespace: NS})
  expect(loaded.findings).toEqual([])
  return loaded.objects
}

/** The plan exactly as `plan` builds it; it must pass `validate`. */
function planOf(objects: KubeObject[], options: Partial<PlanOptions> & {istioVersion?: string} = {}): MigrationPlan {
  const {istioVersion, ...rest} = options
  const snapshot: SourceSnapshot = {namespace: NS, rootNamespace: 'istio-system', target: {manifests: [FIXTURES]}, objects, missingKinds: [], findings: []}
  const waypointFor = rest.waypointFor ?? 'service'
  const inventory = buildInventory(snapshot, {waypointFor, ...(istioVersion ? {istioVersion} : {})})
  const plan = buildPlan({inventory, snapshot, options: {rootNamespace: 'istio-system', waypointName: 'waypoint', waypointFor, ...rest}, generator: 'mesh-migrate/test', ...(istioVersion ? {istioVersion} : {})})
  expect(checkPlanText(renderPlanFile(plan)).problems).toEqual([])
  return plan
}

function item(plan: MigrationPlan, kind: string, name: string, namespace = NS): InventoryItem {
  const found = plan.spec.inventory.find((i) => i.ref.kind === kind && i.ref.name === name && i.ref.namespace === namespace)
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
    expect(stepIds(plan)).toEqual(['preflight', 'create-waypoint', 'wait-waypoint', 'bind-waypoint', 'enable-ambient', 'remove-sidecar-injection', 'restart-workloads', 'verify-dataplane'])
    expect(plan.spec.blockers).toEqual([])
    const telemetry = item(plan, 'Telemetry', 'access-logs')
    expect(telemetry).toMatchObject({verdict: 'L7', action: 'keep', scope: 'namespace'})
    expect(reasonsOf(telemetry)).toContain('the waypoint that will serve shop applies it as it is')
    expect(plan.spec.policies).toEqual([{key: 'Telemetry/access-logs', ztunnel: 'ignored', workloads: ['Deployment/cart'], appliedByWaypoint: true}])
    // Only the sidecar-callers window remains (callers with sidecars never pass the waypoint).
    expect(plan.spec.hazards.map((h) => h.kind)).toEqual(['sidecar-callers-bypass'])
  })

  it('root (mesh-wide) access logging needs the namespace waypoint too; one that only disables needs none', async () => {
    const rootLogs = istio('Telemetry', 'mesh-default', {accessLogging: [{providers: [{name: 'envoy'}]}]}, {namespace: 'istio-system'})
    const plan = planOf([...(await fixture()), rootLogs])
    expect(plan.spec.summary.waypointRequired).toBe(true)
    expect(plan.spec.blockers).toEqual([])
    expect(plan.spec.policies.find((p) => p.key === 'Telemetry/istio-system/mesh-default')).toMatchObject({appliedByWaypoint: true})

    const onlyOff = istio('Telemetry', 'quiet', {accessLogging: [{disabled: true}]}, {namespace: NS})
    const quiet = planOf([...(await fixture()), onlyOff])
    expect(quiet.spec.summary.waypointRequired).toBe(false)
    expect(quiet.spec.blockers).toEqual([])
    expect(item(quiet, 'Telemetry', 'quiet')).toMatchObject({verdict: 'inert', action: 'keep'})
  })
})

describe('2. Egress through the namespace\'s waypoint', () => {
  // Source: https://istio.io/latest/docs/ambient/usage/egress-gateway/ ("If you place a ServiceEntry in a namespace
  // enrolled to use a waypoint, all mesh traffic to that external host passes through the waypoint"), DOMAIN §3.5;
  // waypoint DestinationRule lookup waypoint ns → service ns → root: istio/istio pilot/pkg/model/push_context.go.
  it('a TLS-originating DestinationRule for the namespace\'s own ServiceEntry is kept on the namespace waypoint', async () => {
    const plan = planOf(await fixture('egress-tls-origination.yaml'))
    expect(plan.spec.blockers).toEqual([])
    expect(plan.spec.summary.waypointRequired).toBe(true)
    const dr = item(plan, 'DestinationRule', 'payments-api-tls')
    expect(dr).toMatchObject({verdict: 'L7', action: 'keep'})
    expect(reasonsOf(dr)).toContain('ServiceEntry payments-api (VIP auto-allocated by istiod) is bound to the waypoint of shop')
    expect(reasonsOf(item(plan, 'ServiceEntry', 'payments-api'))).toContain('as their egress waypoint')
    const bind = plan.spec.steps.find((s) => s.id === 'bind-waypoint')!
    expect(bind.description).toContain('so are its ServiceEntries (payments-api): the waypoint becomes their egress waypoint')
  })

  it('what is still lost is named: an entry without a VIP (resolution NONE), one labelled use-waypoint=none', async () => {
    const plan = planOf(await fixture('egress-tls-origination.yaml', 'egress-resolution-none.yaml'))
    expect(item(plan, 'DestinationRule', 'payments-api-tls')).toMatchObject({action: 'keep'})
    expect(item(plan, 'DestinationRule', 'legacy-ldap-mtls')).toMatchObject({verdict: 'L7', action: 'lost-client-side'})
    expect(blockerIds(plan)).toEqual(['E11/DestinationRule/shop/legacy-ldap-mtls'])
    expect(plan.spec.blockers[0]!.message).toContain('ServiceEntry legacy-ldap has no VIP: resolution NONE without spec.addresses')

    const objects = (await fixture('egress-tls-origination.yaml')).map((o) =>
      o.kind === 'ServiceEntry' ? {...o, metadata: {...o.metadata, labels: {'istio.io/use-waypoint': 'none'}}} : o,
    )
    const optedOut = planOf(objects)
    expect(item(optedOut, 'DestinationRule', 'payments-api-tls')).toMatchObject({action: 'lost-client-side'})
    expect(reasonsOf(item(optedOut, 'DestinationRule', 'payments-api-tls'))).toContain('is labelled istio.io/use-waypoint=none')
  })

  it('the waypoint applies the most specific DestinationRule for the host; a shadowed one is named as lost', async () => {
    const wildcardDr = istio('DestinationRule', 'all-external', {host: '*.example.com', trafficPolicy: {connectionPool: {tcp: {maxConnections: 5}}}}, {namespace: NS})
    const plan = planOf([...(await fixture('egress-tls-origination.yaml')), wildcardDr])
    expect(item(plan, 'DestinationRule', 'payments-api-tls')).toMatchObject({action: 'keep'})
    expect(item(plan, 'DestinationRule', 'all-external')).toMatchObject({action: 'lost-client-side'})

    const rootDr = istio('DestinationRule', 'payments-root', {host: 'api.payments.example.com', trafficPolicy: {tls: {mode: 'SIMPLE'}}}, {namespace: 'istio-system'})
    const shadowed = planOf([...(await fixture('egress-tls-origination.yaml')), rootDr])
    expect(item(shadowed, 'DestinationRule', 'payments-api-tls')).toMatchObject({action: 'keep'})
    // shop's sidecars resolved shop's rule first as well (client namespace → service namespace → root): nothing lost.
    expect(item(shadowed, 'DestinationRule', 'payments-root', 'istio-system')).toMatchObject({verdict: 'inert', action: 'keep'})
    expect(reasonsOf(item(shadowed, 'DestinationRule', 'payments-root', 'istio-system'))).toContain('but it resolves DestinationRule shop/payments-api-tls for api.payments.example.com')
    expect(shadowed.spec.blockers).toEqual([])
  })
})

describe('3. AUDIT is not sent to ztunnel', () => {
  // Source: istio/istio pilot/pkg/serviceregistry/ambient/authorization.go (only ALLOW and DENY are converted for
  // ztunnel; CUSTOM/AUDIT get ZtunnelAccepted=False "ztunnel does not support the AUDIT action"); DOMAIN §3.1.
  it('no reason says "enforced by ztunnel" for an AUDIT policy, whatever its rules', async () => {
    const auditL4 = istio('AuthorizationPolicy', 'audit-l4', {selector: {matchLabels: {app: 'cart'}}, action: 'AUDIT', rules: [{from: [{source: {namespaces: ['front']}}], to: [{operation: {ports: ['8080']}}], when: [{key: 'source.ip', values: ['10.0.0.0/8']}]}]}, {namespace: NS})
    const auditNs = istio('AuthorizationPolicy', 'audit-ns', {action: 'AUDIT', rules: [{to: [{operation: {ports: ['8080']}}]}]}, {namespace: NS})
    const plan = planOf([...(await fixture()), auditL4, auditNs])
    for (const name of ['audit-l4', 'audit-ns']) {
      const ap = item(plan, 'AuthorizationPolicy', name)
      expect(ap).toMatchObject({verdict: 'L7', action: 'retarget', ztunnel: 'ignored'})
      expect(reasonsOf(ap)).not.toMatch(/(?<!not )enforced by (the destination )?ztunnel/)
      expect(reasonsOf(ap)).toContain('action AUDIT is never sent to ztunnel')
    }
    expect(reasonsOf(item(plan, 'AuthorizationPolicy', 'audit-l4'))).toContain('spec.rules[0].to[0].operation.ports: destination port: an L4 attribute, but action AUDIT is never sent to ztunnel: not enforced by ztunnel')
  })
})
