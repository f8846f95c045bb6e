// Issue 21 points 1, 2, 3 and 8: waypoints that exist already (in the namespace or another one), Services that opt
// out of waypoints, and the mesh's trust domain the created policies name the waypoint in. Each rule is upstream
// behaviour; the test names the source (istio/istio at the commit fetched for this work, 86c9f01f, and istio.io).
import {parse, parseAllDocuments} from 'yaml'
import {describe, expect, it} from 'vitest'

import {buildInventory} from '../../src/planner/inventory.js'
import type {Finding, KubeObject, SourceSnapshot} from '../../src/planner/model.js'
import {buildPlan} from '../../src/plan/plan-builder.js'
import type {MigrationPlan, PlanOptions} from '../../src/planner/plan-types.js'
import {checkPlanText, renderPlanFile} from '../../src/plan/planfile.js'
import {unexpectedHazards, simulate} from '../../src/plan/simulate.js'
import {timelineOf} from '../../src/ui/timeline-view.js'

const NS = 'shop'

/** A namespace with sidecars: Services ratings and reviews, each in front of one Deployment. */
function base(nsLabels: Record<string, string> = {}, serviceLabels: Record<string, Record<string, string>> = {}) {
  const objects: KubeObject[] = [
    {apiVersion: 'v1', kind: 'Namespace', metadata: {name: NS, labels: {'istio-injection': 'enabled', ...nsLabels}}},
  ]
  for (const app of ['ratings', 'reviews']) {
    objects.push(
      {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: {name: app, namespace: NS, labels: serviceLabels[app] ?? {}},
        spec: {selector: {app}, ports: [{name: 'http', port: 9080}]},
      },
      {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: {name: app, namespace: NS},
        spec: {
          selector: {matchLabels: {app}},
          template: {metadata: {labels: {app}}, spec: {containers: [{name: app, image: app}]}},
        },
      },
    )
  }
  return objects
}

/** Objects from YAML documents (namespace defaults to shop). */
function yaml(text: string): KubeObject[] {
  return parseAllDocuments(text).map((d) => {
    const o = d.toJS() as KubeObject
    o.metadata.namespace ??= NS
    return o
  })
}

const getOnly = (name: string, app: string) =>
  yaml(`
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: ${name}}
spec:
  selector: {matchLabels: {app: ${app}}}
  action: ALLOW
  rules:
  - to: [{operation: {methods: ["GET"]}}]
`)

interface Run {
  inventory: ReturnType<typeof buildInventory>
  plan: MigrationPlan
}

/** `mesh-migrate plan shop --manifests …` (offline), or from a cluster when `cluster` is set. */
function plan(
  objects: KubeObject[],
  opts: {trustDomain?: string; cluster?: boolean; options?: Partial<PlanOptions>} = {},
): Run {
  const snapshot: SourceSnapshot = {
    namespace: NS,
    rootNamespace: 'istio-system',
    target: opts.cluster
      ? {context: 'test', server: 'https://127.0.0.1:6443', clusterID: 'uid'}
      : {manifests: ['test']},
    objects,
    missingKinds: [],
    findings: [],
  }
  const options: PlanOptions = {
    rootNamespace: 'istio-system',
    waypointName: 'waypoint',
    waypointFor: 'service',
    ...opts.options,
  }
  const inventory = buildInventory(snapshot, {waypointFor: 'service', istioVersion: '1.28'})
  const built = buildPlan({
    inventory,
    snapshot,
    options,
    generator: 'mesh-migrate/test',
    istioVersion: '1.28',
    ...(opts.trustDomain ? {trustDomain: opts.trustDomain} : {}),
  })
  // Every plan here is a valid plan file (schema and safety rules), as `validate` checks it.
  expect(checkPlanText(renderPlanFile(built)).problems).toEqual([])
  return {inventory, plan: built}
}

const allFindings = (p: MigrationPlan): Finding[] => [...p.spec.blockers, ...p.spec.findings]
const codes = (p: MigrationPlan) => allFindings(p).map((f) => f.code)
const step = (p: MigrationPlan, id: string) => p.spec.steps.find((s) => s.id === id)
const applied = (p: MigrationPlan, id: string) =>
  (step(p, id)?.operations ?? []).flatMap((op) => (op.op === 'apply' ? [op.object] : []))
const named = (objects: KubeObject[], name: string) => objects.find((o) => o.metadata.name === name)
const companionPrincipals = (p: MigrationPlan, name: string) =>
  named(applied(p, 'create-policies'), name)?.spec.rules[0].from[0].source.principals as string[] | undefined

describe('issue 21 point 1: a Service labelled istio.io/use-waypoint=none never reaches a waypoint', () => {
  // istio/istio pilot/pkg/serviceregistry/ambient/waypoints.go fetchWaypointForTarget: `wp, isNone :=
  // GetUseWaypoint(o, ...); if isNone { // we've got a local override here opting out of waypoint; return nil, nil }`
  // — before the namespace's label is even read. A targetRefs copy attached to such a Service never applies.
  const objects = [
    ...base({}, {reviews: {'istio.io/use-waypoint': 'none'}}),
    ...getOnly('reviews-get', 'reviews'),
    ...getOnly('ratings-get', 'ratings'),
  ]
  const {inventory, plan: p} = plan(objects)

  it('inventory and plan agree: a blocker with that reason, no copy created, no companion', () => {
    const item = inventory.objects.find((i) => i.ref.name === 'reviews-get')!
    expect(item).toMatchObject({verdict: 'L7', action: 'blocker'})
    expect(item.reasons.at(-1)).toContain('istio.io/use-waypoint=none')
    const decision = p.spec.blockers.find((f) => f.code === 'RetargetServiceOptedOut')!
    expect(decision).toMatchObject({severity: 'blocker', ref: {name: 'reviews-get'}})
    expect(inventory.findings.map((f) => f.id)).toContain(decision.id)
    const created = applied(p, 'create-policies').map((o) => o.metadata.name)
    expect(created).toEqual(['ratings-get-waypoint', 'ratings-get-ztunnel'])
    // The original stays where it is: nothing replaces it, so delete-sidecar-policies does not delete it.
    expect(JSON.stringify(step(p, 'delete-sidecar-policies'))).not.toContain('"reviews-get"')
    // The Service's own label is still reported, but it no longer blocks through a copy that is not made.
    expect(allFindings(p).find((f) => f.code === 'ServiceUsesOwnWaypoint')?.severity).toBe('warning')
  })

  it('blocks a policy whose pods sit behind an opted-out Service and a bound one', () => {
    const both = yaml(`
apiVersion: v1
kind: Service
metadata: {name: reviews-direct, labels: {istio.io/use-waypoint: none}}
spec: {selector: {app: ratings}, ports: [{name: http, port: 9080}]}
`)
    const {inventory: inv, plan: q} = plan([...base(), ...both, ...getOnly('ratings-get', 'ratings')])
    expect(inv.objects.find((i) => i.ref.name === 'ratings-get')?.action).toBe('blocker')
    expect(codes(q)).toContain('RetargetServiceOptedOut')
    expect(applied(q, 'create-policies').map((o) => o.metadata.name)).not.toContain('ratings-get-waypoint')
  })

  it('does not block what needs no waypoint (E22 rewrite) and keeps identity copies off the opted-out Service', () => {
    const e22 = yaml(`
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: reviews-sa}
spec:
  selector: {matchLabels: {app: reviews}}
  action: ALLOW
  rules:
  - when: [{key: source.serviceAccount, values: ["shop/ratings"]}]
`)
    const {inventory: inv, plan: q} = plan([...objects, ...e22])
    expect(inv.objects.find((i) => i.ref.name === 'reviews-sa')?.action).toBe('retarget')
    expect(
      allFindings(q)
        .filter((f) => f.ref?.name === 'reviews-sa')
        .map((f) => f.code),
    ).not.toContain('RetargetServiceOptedOut')
    expect(named(applied(q, 'create-policies'), 'reviews-sa-l4')).toBeDefined()
  })
})

describe('issue 21 point 2: a waypoint in another namespace', () => {
  // istio/istio waypoints.go GetUseWaypoint: istio.io/use-waypoint + istio.io/use-waypoint-namespace name
  // <namespace>/<name>; pilot/pkg/model/policyattachment.go: a targetRefs Service policy in the Service's namespace
  // is applied by that Service's waypoint wherever it lives (DOMAIN §1.6).
  const shared = (extra = '', listener = 'allowedRoutes: {namespaces: {from: All}}') =>
    yaml(`
apiVersion: v1
kind: Namespace
metadata: {name: infra, namespace: null, labels: {team: platform}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata:
  name: shared
  namespace: infra
  labels: {istio.io/waypoint-for: service, app.kubernetes.io/managed-by: platform-team}
  ${extra}
spec:
  gatewayClassName: istio-waypoint
  listeners:
  - {name: mesh, port: 15008, protocol: HBONE, ${listener}}
`).map((o) => (o.kind === 'Namespace' ? {...o, metadata: {name: 'infra', labels: {team: 'platform'}}} : o))
  const bound = {'istio.io/use-waypoint': 'shared', 'istio.io/use-waypoint-namespace': 'infra'}

  it("binds nothing new, carries the policies with Service targetRefs, admits the waypoint's own ServiceAccount and says who owns it", () => {
    // The ServiceAccount: pilot/pkg/config/kube/gatewaycommon/deploymentcontroller.go, `ServiceAccount:
    // model.GetOrDefault(gw.Annotations[annotation.GatewayServiceAccount.Name], defaultName)`.
    const objects = [
      ...base(bound),
      ...shared('annotations: {gateway.istio.io/service-account: shared-sa}'),
      ...getOnly('reviews-get', 'reviews'),
    ]
    const {plan: p} = plan(objects)
    const ids = p.spec.steps.map((s) => s.id)
    expect(ids).not.toContain('create-waypoint')
    expect(ids).not.toContain('bind-waypoint')
    expect(step(p, 'wait-waypoint')!.verify).toEqual([
      {
        check: 'waypoint-ready',
        ref: {apiVersion: 'gateway.networking.k8s.io/v1', kind: 'Gateway', namespace: 'infra', name: 'shared'},
      },
    ])
    expect(p.spec.waypoints).toEqual([])
    expect(named(applied(p, 'create-policies'), 'reviews-get-waypoint')!.spec.targetRefs).toEqual([
      {group: '', kind: 'Service', name: 'reviews'},
    ])
    expect(companionPrincipals(p, 'reviews-get-ztunnel')).toEqual(['cluster.local/ns/infra/sa/shared-sa'])
    const owner = allFindings(p).find((f) => f.code === 'WaypointInAnotherNamespace')!
    expect(owner.severity).toBe('info')
    expect(owner.message).toContain('belongs to namespace infra (managed by platform-team)')
    expect(p.spec.blockers).toEqual([])
    // The namespace is bound from the start: the simulation must not invent a gap the plan cannot close.
    expect(unexpectedHazards(timelineOf(p))).toEqual([])
  })

  it("reads the ServiceAccount from the waypoint's pods first, and falls back to the Gateway name", () => {
    // waypoints.go gatewayToWaypointTransform: `serviceAccounts := slices.Map(instances, func(p *v1.Pod) string {
    // return p.Spec.ServiceAccountName })` for the pods labelled gateway.networking.k8s.io/gateway-name.
    const pod = yaml(`
apiVersion: v1
kind: Pod
metadata: {name: shared-abc, namespace: infra, labels: {gateway.networking.k8s.io/gateway-name: shared}}
spec: {serviceAccountName: from-pod, containers: [{name: istio-proxy, image: proxyv2}]}
`)
    const withPod = plan([
      ...base(bound),
      ...shared('annotations: {gateway.istio.io/service-account: shared-sa}'),
      ...pod,
      ...getOnly('reviews-get', 'reviews'),
    ])
    expect(companionPrincipals(withPod.plan, 'reviews-get-ztunnel')).toEqual(['cluster.local/ns/infra/sa/from-pod'])
    const byName = plan([...base(bound), ...shared(), ...getOnly('reviews-get', 'reviews')])
    expect(companionPrincipals(byName.plan, 'reviews-get-ztunnel')).toEqual(['cluster.local/ns/infra/sa/shared'])
  })

  it('blocks when the waypoint does not admit the namespace or does not serve Services', () => {
    // waypoints.go AllowsAttachmentFromNamespace / makeAllowedRoutes: the HBONE listener's allowedRoutes, "Same"
    // when unset; fetchWaypointForService: TrafficType must be service or all (UnsupportedTrafficType).
    const same = plan([...base(bound), ...shared('', 'allowedRoutes: {}'), ...getOnly('reviews-get', 'reviews')])
    expect(same.plan.spec.blockers.map((f) => f.code)).toContain('WaypointAttachmentDenied')
    const selector = plan([
      ...base({...bound, team: 'shop'}),
      ...shared('', 'allowedRoutes: {namespaces: {from: Selector, selector: {matchLabels: {team: shop}}}}'),
      ...getOnly('reviews-get', 'reviews'),
    ])
    expect(selector.plan.spec.blockers).toEqual([])
    const workload = shared().map((o) =>
      o.kind === 'Gateway' ? {...o, metadata: {...o.metadata, labels: {'istio.io/waypoint-for': 'workload'}}} : o,
    )
    const wl = plan([...base(bound), ...workload, ...getOnly('reviews-get', 'reviews')])
    expect(wl.plan.spec.blockers.map((f) => f.code)).toContain('ExistingWaypointTrafficType')
  })

  it('warns when that waypoint is not in what was read', () => {
    const {plan: p} = plan([...base(bound), ...getOnly('reviews-get', 'reviews')])
    expect(allFindings(p).find((f) => f.code === 'WaypointInAnotherNamespace')?.severity).toBe('warning')
    expect(companionPrincipals(p, 'reviews-get-ztunnel')).toEqual(['cluster.local/ns/infra/sa/shared'])
  })

  it("a Service bound to another namespace's waypoint: its copy applies there, the companion admits that waypoint too", () => {
    const objects = [
      ...base({}, {reviews: bound}),
      ...shared('annotations: {gateway.istio.io/service-account: shared-sa}'),
      ...getOnly('reviews-get', 'reviews'),
    ]
    const {plan: p} = plan(objects)
    expect(p.spec.blockers).toEqual([])
    expect(companionPrincipals(p, 'reviews-get-ztunnel')).toEqual([
      'cluster.local/ns/shop/sa/waypoint',
      'cluster.local/ns/infra/sa/shared-sa',
    ])
    const own = allFindings(p).find((f) => f.code === 'ServiceUsesOwnWaypoint')!
    expect(own.severity).toBe('warning')
    expect(own.message).toContain('infra/shared applies it')
  })
})

describe('issue 21 point 3: the state the istio.io migration guide leaves behind', () => {
  // istio.io content/en/docs/ambient/migrate (DOMAIN §4.1): "install ambient components" may deploy the waypoint
  // without istio.io/use-waypoint; "migrate policies" creates targetRefs copies of the L7 policies and keeps the
  // selector originals until the restart. The plan activates that waypoint and reuses those copies.
  const deployed = yaml(`
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: waypoint, labels: {istio.io/waypoint-for: service}}
spec:
  gatewayClassName: istio-waypoint
  listeners: [{name: mesh, port: 15008, protocol: HBONE}]
status:
  addresses: [{type: Hostname, value: waypoint.shop.svc.cluster.local}]
  conditions: [{type: Programmed, status: "True", reason: Programmed}]
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: reviews-get-waypoint}
spec:
  targetRefs: [{kind: Service, group: "", name: reviews}]
  action: ALLOW
  rules:
  - to: [{operation: {methods: ["GET"]}}]
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: ratings-l7}
spec:
  targetRefs: [{kind: Service, name: ratings}]
  rules:
  - to: [{operation: {methods: ["GET"]}}]
`)
  const objects = [...base(), ...deployed, ...getOnly('reviews-get', 'reviews'), ...getOnly('ratings-get', 'ratings')]
  const {plan: p} = plan(objects)

  it('activates the waypoint and reuses the copies, whatever their name, without a name clash or a duplicate', () => {
    expect(p.spec.blockers).toEqual([])
    expect(codes(p)).not.toContain('RetargetNameTaken')
    const ids = p.spec.steps.map((s) => s.id)
    expect(ids).not.toContain('create-waypoint')
    expect(step(p, 'bind-waypoint')!.description).toMatch(
      /^Activate waypoint Gateway shop\/waypoint, which exists already/,
    )
    const created = applied(p, 'create-policies').map((o) => o.metadata.name)
    expect(created).toEqual(['ratings-get-ztunnel', 'reviews-get-ztunnel'])
    expect(
      allFindings(p)
        .filter((f) => f.code === 'WaypointCopyReused')
        .map((f) => f.id),
    ).toEqual([
      'retarget/AuthorizationPolicy/shop/ratings-get/copy-reused/ratings-l7',
      'retarget/AuthorizationPolicy/shop/reviews-get/copy-reused/reviews-get-waypoint',
    ])
    // They must still be what the plan saw when create-policies runs; rollback deletes only what the plan created.
    const s = step(p, 'create-policies')!
    expect(
      s.preconditions.filter((c) => c.check === 'object-unchanged').map((c) => ('ref' in c ? c.ref?.name : '')),
    ).toEqual(['ratings-get', 'reviews-get', 'ratings-l7', 'reviews-get-waypoint'])
    expect(s.undo.operations.map((o) => ('ref' in o ? o.ref.name : ''))).toEqual([
      'ratings-get-ztunnel',
      'reviews-get-ztunnel',
    ])
    // The originals go after the restart as usual; the reused copies enforce the rules at the waypoint from bind on.
    expect(
      unexpectedHazards(
        simulate({
          namespace: NS,
          workloads: p.spec.workloads,
          steps: p.spec.steps,
          policies: p.spec.policies,
          ambientAtStart: false,
        }),
      ),
    ).toEqual([])
    expect(p.spec.policies.find((x) => x.key === 'AuthorizationPolicy/reviews-get')?.waypointCopyIn).toBe('preflight')
  })

  it("still refuses a different object that has the copy's name", () => {
    const other = deployed.map((o) =>
      o.metadata.name === 'reviews-get-waypoint'
        ? {...o, spec: {...o.spec, rules: [{to: [{operation: {methods: ['POST']}}]}]}}
        : o,
    )
    const {plan: q} = plan([...base(), ...other, ...getOnly('reviews-get', 'reviews')])
    expect(q.spec.blockers.map((f) => f.code)).toContain('RetargetNameTaken')
  })
})

describe("issue 21 point 8: the mesh's trust domain", () => {
  // istio/istio pilot/pkg/serviceregistry/ambient/workloads.go pickTrustDomain (workload identities are in
  // meshConfig.trustDomain); authorization.go copies `principals` to ztunnel as written (stringToMatch, no alias
  // rewriting); pilot/pkg/security/trustdomain/bundle.go ReplaceTrustDomainAliases (sidecars and waypoints read
  // cluster.local and the aliases as the trust domain).
  const meshConfigMap = (name: string, mesh: string) =>
    yaml(`
apiVersion: v1
kind: ConfigMap
metadata: {name: ${name}, namespace: istio-system}
data:
  mesh: |
${mesh
  .split('\n')
  .map((l) => `    ${l}`)
  .join('\n')}
`)
  const policies = [...getOnly('reviews-get', 'reviews')]

  it('reads meshConfig.trustDomain and its aliases from the ConfigMap istio and records where it came from', () => {
    const cm = meshConfigMap('istio', 'trustDomain: corp.example\ntrustDomainAliases: [old.example]')
    const {plan: p} = plan([...base(), ...cm, ...policies], {cluster: true})
    expect(companionPrincipals(p, 'reviews-get-ztunnel')).toEqual([
      'corp.example/ns/shop/sa/waypoint',
      'old.example/ns/shop/sa/waypoint',
    ])
    expect(p.spec.observed.trustDomain).toEqual({
      name: 'corp.example',
      aliases: ['old.example'],
      source: 'ConfigMap istio-system/istio',
    })
    expect(codes(p)).not.toContain('TrustDomainAssumed')
    expect(JSON.stringify(p)).not.toContain('cluster.local/ns/shop/sa/waypoint')
  })

  it("reads the revision's ConfigMap istio-<rev>, through a revision tag too", () => {
    const cms = [
      ...meshConfigMap('istio', 'trustDomain: default.example'),
      ...meshConfigMap('istio-1-28', 'trustDomain: rev.example'),
    ]
    const rev = plan([
      ...base({'istio.io/rev': '1-28'}).map((o) =>
        o.kind === 'Namespace' ? {...o, metadata: {...o.metadata, labels: {'istio.io/rev': '1-28'}}} : o,
      ),
      ...cms,
      ...policies,
    ])
    expect(rev.plan.spec.observed.trustDomain).toMatchObject({
      name: 'rev.example',
      source: 'ConfigMap istio-system/istio-1-28',
    })
    const tag = yaml(`
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: istio-revision-tag-prod, namespace: null, labels: {istio.io/tag: prod, istio.io/rev: 1-28}}
webhooks: []
`).map((o) => ({...o, metadata: {name: o.metadata.name, labels: o.metadata.labels}}))
    const tagged = plan([
      ...base().map((o) =>
        o.kind === 'Namespace' ? {...o, metadata: {...o.metadata, labels: {'istio.io/rev': 'prod'}}} : o,
      ),
      ...cms,
      ...tag,
      ...policies,
    ])
    expect(tagged.plan.spec.observed.trustDomain).toMatchObject({
      name: 'rev.example',
      source: 'ConfigMap istio-system/istio-1-28',
    })
  })

  it('takes --trust-domain offline, and says when it had to assume cluster.local', () => {
    const given = plan([...base(), ...policies], {trustDomain: 'given.example'})
    expect(companionPrincipals(given.plan, 'reviews-get-ztunnel')).toEqual(['given.example/ns/shop/sa/waypoint'])
    expect(given.plan.spec.observed.trustDomain).toEqual({name: 'given.example', source: '--trust-domain'})
    const assumed = plan([...base(), ...policies])
    expect(assumed.plan.spec.observed.trustDomain).toEqual({name: 'cluster.local', source: 'default'})
    expect(allFindings(assumed.plan).find((f) => f.code === 'TrustDomainAssumed')?.severity).toBe('info')
    // The finding that asked users to hand-edit the principals is gone (issue 21 point 8).
    expect(JSON.stringify(assumed.plan)).not.toContain('WaypointPrincipalTrustDomain')
    const cluster = plan([...base(), ...policies], {cluster: true})
    expect(allFindings(cluster.plan).find((f) => f.code === 'TrustDomainAssumed')?.severity).toBe('warning')
  })

  it('a DENY naming the waypoint in cluster.local or an alias matches it (bundle.go), and is exempted in the trust domain', () => {
    const cm = meshConfigMap('istio', 'trustDomain: corp.example\ntrustDomainAliases: [old.example]')
    const deny = yaml(`
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: deny-old-waypoint}
spec:
  selector: {matchLabels: {app: reviews}}
  action: DENY
  rules:
  - from: [{source: {principals: ["old.example/ns/shop/sa/waypoint"]}}]
`)
    const {plan: p} = plan([...base(), ...cm, ...policies, ...deny])
    const f = p.spec.blockers.find((x) => x.code === 'DenyMatchesWaypoint')!
    expect(f.message).toContain('corp.example/ns/shop/sa/waypoint')
    expect(parse(f.fix!.slice(f.fix!.indexOf('\n') + 1)).spec.rules[0].from[0].source.notPrincipals).toEqual([
      'corp.example/ns/shop/sa/waypoint',
    ])
  })
})
