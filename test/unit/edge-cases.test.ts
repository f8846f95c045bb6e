// What the plan does with each edge case of DOMAIN §7 that concerns config or workloads (issue 5 "Done when").
// One manifest set per edge case under test/fixtures/edge-cases/, read like `--manifests` reads it
// (loadManifestFiles → snapshot → buildInventory → buildPlan); where exit codes and flags matter, through the
// built CLI. Every plan generated here must pass the tool's own `validate` (schema and safety rules).
//
// Not covered here: E17 (install/upgrade side effects) is a preflight concern with no plan-level behaviour —
// preflight only names the istio-ingressgateway pruning in the fix text of its ambient check, and there is no
// component diff to test; E20 (multicluster) is not handled by the planner at all (no istio.io/global, network
// or cluster markers are read).
import {mkdtemp, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import {parse} from 'yaml'
import {beforeAll, describe, expect, it} from 'vitest'

import {buildInventory} from '../../src/planner/inventory.js'
import type {Finding, Inventory, InventoryItem, KubeObject, ObjectRef, SourceSnapshot, WorkloadItem} from '../../src/planner/model.js'
import {buildPlan, simPolicies} from '../../src/planner/plan-builder.js'
import type {MigrationPlan, Operation, PlanOptions, PlanStep} from '../../src/planner/plan-types.js'
import {checkPlanText, renderPlanFile} from '../../src/planner/planfile.js'
import {type BoundaryState, simulate} from '../../src/planner/simulate.js'
import {loadManifestFiles} from '../../src/sources/manifests.js'
import {runCli} from '../support/cli.js'
import {REPO_ROOT} from '../support/shared.js'

const FIXTURES = path.join(REPO_ROOT, 'test/fixtures/edge-cases')
const NS = 'bookinfo'
const nsRef = {apiVersion: 'v1', kind: 'Namespace', name: NS}
const WAYPOINT_PRINCIPAL = 'cluster.local/ns/bookinfo/sa/waypoint'
const MANAGED = {'app.kubernetes.io/managed-by': 'mesh-migrate'}

/** The objects of fixture files, read as `--manifests` reads them. */
async function fixture(...files: string[]): Promise<KubeObject[]> {
  const loaded = await loadManifestFiles(files.map((f) => path.join(FIXTURES, f)), {defaultNamespace: NS})
  expect(loaded.findings).toEqual([])
  return loaded.objects
}

type RunOptions = Partial<PlanOptions> & {istioVersion?: string}

interface Planned {
  inventory: Inventory
  plan: MigrationPlan
}

/** Inventory and plan exactly as `plan` builds them; the plan must pass `validate`. */
function planOf(objects: KubeObject[], opts: RunOptions = {}): Planned {
  const {istioVersion, ...planOptions} = opts
  const snapshot: SourceSnapshot = {namespace: NS, rootNamespace: 'istio-system', target: {manifests: ['test/fixtures/edge-cases']}, objects, missingKinds: [], findings: []}
  const waypointFor = planOptions.waypointFor ?? 'service'
  const inventory = buildInventory(snapshot, {waypointFor, ...(istioVersion ? {istioVersion} : {})})
  const plan = buildPlan({
    inventory,
    snapshot,
    options: {rootNamespace: 'istio-system', waypointName: 'waypoint', waypointFor, ...planOptions},
    generator: 'mesh-migrate/test',
    ...(istioVersion ? {istioVersion} : {}),
  })
  expect(checkPlanText(renderPlanFile(plan)).problems).toEqual([])
  return {inventory, plan}
}

const stepIds = (p: MigrationPlan) => p.spec.steps.map((s) => s.id)

function step(p: MigrationPlan, id: string): PlanStep {
  const s = p.spec.steps.find((x) => x.id === id)
  if (!s) throw new Error(`no step ${id} in ${stepIds(p).join(', ')}`)
  return s
}

function finding(p: MigrationPlan, id: string): Finding {
  const f = [...p.spec.blockers, ...p.spec.findings].find((x) => x.id === id)
  if (!f) throw new Error(`no finding ${id}: ${[...p.spec.blockers, ...p.spec.findings].map((x) => x.id).join(', ')}`)
  return f
}

const findingIds = (p: MigrationPlan) => [...p.spec.blockers, ...p.spec.findings].map((f) => f.id)
const blockerIds = (p: MigrationPlan) => p.spec.blockers.map((f) => f.id).sort()

function item(p: MigrationPlan, kind: string, name: string, namespace = NS): InventoryItem {
  const i = p.spec.inventory.find((x) => x.ref.kind === kind && x.ref.name === name && x.ref.namespace === namespace)
  if (!i) throw new Error(`no ${kind} ${namespace}/${name} in the inventory`)
  return i
}

function workload(p: MigrationPlan, kind: string, name: string): WorkloadItem {
  const w = p.spec.workloads.find((x) => x.ref.kind === kind && x.ref.name === name)
  if (!w) throw new Error(`no workload ${kind}/${name}: ${p.spec.workloads.map((x) => `${x.ref.kind}/${x.ref.name}`).join(', ')}`)
  return w
}

/** "apply Kind/name", "delete Kind/name", "label Kind/name", … — what a step writes, in order. */
const opText = (op: Operation) => `${op.op} ${op.op === 'apply' ? `${op.object.kind}/${op.object.metadata.name}` : `${op.ref.kind}/${op.ref.name}`}`
const opsOf = (s: PlanStep) => s.operations.map(opText)

function applied(s: PlanStep, name: string): KubeObject {
  const op = s.operations.find((o): o is Extract<Operation, {op: 'apply'}> => o.op === 'apply' && o.object.metadata.name === name)
  if (!op) throw new Error(`${s.id} applies no ${name}: ${opsOf(s).join(', ')}`)
  return op.object
}

const ref = (apiVersion: string, kind: string, name: string): ObjectRef => ({apiVersion, kind, namespace: NS, name})
const deployment = (name: string) => ref('apps/v1', 'Deployment', name)

/** Every object a plan's steps (and undos, and verifications) name. */
function namedAnywhere(p: MigrationPlan): string[] {
  const names: string[] = []
  for (const s of p.spec.steps) {
    for (const op of [...s.operations, ...s.undo.operations]) names.push(op.op === 'apply' ? op.object.metadata.name : op.ref.name)
    for (const v of s.verify) if ('refs' in v) names.push(...v.refs.map((r) => r.name))
    for (const m of s.manual ?? []) names.push(m.ref.name)
  }
  return names
}

/** The step-by-step simulation recorded by the plan, as `show --timeline` computes it. */
function timeline(p: MigrationPlan): {apply: BoundaryState[]; rollback: BoundaryState[]} {
  return simulate({
    namespace: NS,
    workloads: p.spec.workloads,
    steps: p.spec.steps,
    policies: simPolicies(p.spec.policies),
    ambientAtStart: p.spec.observed.namespaceLabels['istio.io/dataplane-mode'] === 'ambient',
  })
}

/** A workload's data plane after each apply boundary ("start", then each step id). */
function dataPlanes(p: MigrationPlan, key: string): Record<string, string> {
  return Object.fromEntries(timeline(p).apply.map((b) => [b.after, b.dataPlanes[key] ?? '(none)']))
}

/** The objects with one object's labels replaced (a variant of a fixture). */
function relabel(objects: KubeObject[], kind: string, name: string, labels: Record<string, string>): KubeObject[] {
  return objects.map((o) => (o.kind === kind && o.metadata.name === name ? {...o, metadata: {...o.metadata, labels}} : o))
}

const without = (objects: KubeObject[], kind: string, name: string) => objects.filter((o) => !(o.kind === kind && o.metadata.name === name))

describe('E3 injection enabled by default', () => {
  let objects: KubeObject[]
  beforeAll(async () => {
    objects = await fixture('E3-injection-by-default.yaml')
  })

  it('an unlabelled namespace is injected by the auto webhook; the plan sets istio-injection=disabled instead of removing a label', () => {
    const {inventory, plan} = planOf(objects)
    expect(inventory.injectionByDefault).toBe(true)
    expect(inventory.namespaceState).toMatchObject({injection: 'enabled', mode: 'sidecar', sidecarLabels: []})
    expect(finding(plan, 'E3/bookinfo')).toMatchObject({code: 'E3', severity: 'warning'})
    expect(finding(plan, 'E3/injection-enabled-by-default').message).toContain('webhook auto.sidecar-injector.istio.io in MutatingWebhookConfiguration istio-sidecar-injector')
    expect(stepIds(plan)).toEqual(['preflight', 'enable-ambient', 'remove-sidecar-injection', 'restart-workloads', 'verify-dataplane'])
    const remove = step(plan, 'remove-sidecar-injection')
    expect(remove.preconditions).toEqual([{check: 'namespace-labels', labels: {'istio-injection': null}}])
    expect(remove.operations).toEqual([{op: 'label', ref: nsRef, labels: {'istio-injection': 'disabled'}}])
    expect(remove.verify).toEqual([{check: 'namespace-labels', labels: {'istio-injection': 'disabled'}}])
    expect(remove.undo.operations).toEqual([{op: 'label', ref: nsRef, labels: {'istio-injection': null}}])
    expect(step(plan, 'restart-workloads').operations).toEqual([{op: 'restart', ref: deployment('details-v1')}])
    expect(dataPlanes(plan, 'Deployment/details-v1')).toMatchObject({'remove-sidecar-injection': 'sidecar', 'restart-workloads': 'ambient'})
  })

  it('detected from the injector values alone (no webhook configuration in the source)', () => {
    const {inventory, plan} = planOf(objects.filter((o) => o.kind !== 'MutatingWebhookConfiguration'))
    expect(inventory.injectionByDefault).toBe(true)
    expect(finding(plan, 'E3/injection-enabled-by-default').message).toContain('sidecarInjectorWebhook.enableNamespacesByDefault=true in ConfigMap istio-system/istio-sidecar-injector')
    expect(step(plan, 'remove-sidecar-injection').operations).toEqual([{op: 'label', ref: nsRef, labels: {'istio-injection': 'disabled'}}])
  })

  it('with an injected gateway in the namespace (E7) no label can work: the plan blocks instead of restarting pods back into sidecars', async () => {
    const [gateway] = (await fixture('E7-injected-gateway-revisioned.yaml')).filter((o) => o.kind === 'Deployment' && o.metadata.name === 'bookinfo-ingressgateway')
    const {plan} = planOf([...objects, gateway!])
    expect(blockerIds(plan)).toEqual(['E3-E7/bookinfo'])
    expect(finding(plan, 'E3-E7/bookinfo')).toMatchObject({code: 'InjectionByDefaultWithInjectedGateway', severity: 'blocker', ref: nsRef})
    expect(finding(plan, 'E3-E7/bookinfo').message).toContain('Deployment bookinfo/bookinfo-ingressgateway')
    // It never sets istio-injection=disabled, which would leave the gateway's `image: auto` pods without a proxy.
    expect(stepIds(plan)).not.toContain('remove-sidecar-injection')
  })
})

describe('E7 injected gateways in a revisioned namespace', () => {
  let objects: KubeObject[]
  const gateway = deployment('bookinfo-ingressgateway')
  beforeAll(async () => {
    objects = await fixture('E7-injected-gateway-revisioned.yaml')
  })

  it('pins the gateway to the namespace\'s revision on its pod template, then removes istio.io/rev; undo reverses both', () => {
    const {plan} = planOf(objects)
    expect(workload(plan, 'Deployment', 'bookinfo-ingressgateway').traits).toEqual(['injected-gateway'])
    const remove = step(plan, 'remove-sidecar-injection')
    expect(remove.operations).toEqual([
      {op: 'template-labels', ref: gateway, labels: {'istio.io/rev': 'canary'}},
      {op: 'label', ref: nsRef, labels: {'istio.io/rev': null}},
    ])
    expect(remove.undo.operations).toEqual([
      {op: 'label', ref: nsRef, labels: {'istio.io/rev': 'canary'}},
      {op: 'template-labels', ref: gateway, labels: {'istio.io/rev': null}},
    ])
    expect(remove.preconditions).toEqual([{check: 'namespace-labels', labels: {'istio.io/rev': 'canary'}}, {check: 'object-present', ref: gateway}])
    expect(remove.description).toMatch(/^Pin the injected gateway\(s\) Deployment bookinfo\/bookinfo-ingressgateway to revision canary/)
    expect(finding(plan, 'E7/Deployment/bookinfo-ingressgateway')).toMatchObject({code: 'E7', severity: 'warning'})
    expect(finding(plan, 'E7/Deployment/bookinfo-ingressgateway').message).toContain('by the default revision instead of canary')
  })

  it('never sets istio-injection=disabled and leaves the gateway out of restarts and data-plane checks', () => {
    const {plan} = planOf(objects)
    expect(JSON.stringify(plan.spec.steps)).not.toContain('"disabled"')
    expect(step(plan, 'restart-workloads').operations).toEqual([{op: 'restart', ref: deployment('productpage-v1')}])
    expect(step(plan, 'restart-workloads').manual).toBeUndefined()
    expect(step(plan, 'verify-dataplane').verify).toEqual([
      {check: 'pods-without-sidecar', refs: [deployment('productpage-v1')]},
      {check: 'pods-captured', refs: [deployment('productpage-v1')]},
    ])
    expect(step(plan, 'enable-ambient').verify).toContainEqual({check: 'pods-captured', refs: []})
  })

  it('a gateway already pinned by its template is left as it is', () => {
    const pinned = objects.map((o) =>
      o.kind === 'Deployment' && o.metadata.name === 'bookinfo-ingressgateway'
        ? {...o, spec: {...o.spec, template: {...o.spec.template, metadata: {...o.spec.template.metadata, labels: {...o.spec.template.metadata.labels, 'istio.io/rev': 'canary'}}}}}
        : o,
    )
    const {plan} = planOf(pinned)
    expect(step(plan, 'remove-sidecar-injection').operations).toEqual([{op: 'label', ref: nsRef, labels: {'istio.io/rev': null}}])
    expect(finding(plan, 'E7/Deployment/bookinfo-ingressgateway').severity).toBe('info')
  })

  it('in a namespace labelled istio-injection the gateway needs no pin: the object webhook keeps injecting it', () => {
    const {plan} = planOf(relabel(objects, 'Namespace', NS, {'istio-injection': 'enabled'}))
    expect(step(plan, 'remove-sidecar-injection').operations).toEqual([{op: 'label', ref: nsRef, labels: {'istio-injection': null}}])
    expect(finding(plan, 'E7/Deployment/bookinfo-ingressgateway').severity).toBe('info')
  })
})

describe('E8 Gateway API gateways of class istio', () => {
  let objects: KubeObject[]
  beforeAll(async () => {
    objects = await fixture('E8-kube-gateway.yaml')
  })

  it('the Deployment istiod renders for the Gateway is the workload; its istio-proxy is the gateway, not a sidecar', () => {
    const {plan} = planOf(objects)
    const gw = workload(plan, 'Deployment', 'bookinfo-gateway-istio')
    expect(gw.proxy).toBe('none')
    expect(gw.traits).toEqual(['inject-opt-out', 'kube-gateway'])
    expect(plan.spec.workloads.map((w) => `${w.ref.kind}/${w.ref.name}`)).toEqual(['Deployment/bookinfo-gateway-istio', 'Deployment/productpage-v1'])
    expect(findingIds(plan)).not.toContain('E4/manual/Deployment/bookinfo-gateway-istio')
    expect(finding(plan, 'E8/Deployment/bookinfo-gateway-istio')).toMatchObject({code: 'E8', severity: 'warning'})
  })

  it('keep-out (default): the Gateway is labelled istio.io/dataplane-mode=none before the namespace turns ambient, and stays outside', () => {
    const {plan} = planOf(objects)
    expect(stepIds(plan)).toEqual(['preflight', 'opt-out-workloads', 'enable-ambient', 'remove-sidecar-injection', 'restart-workloads', 'verify-dataplane'])
    const gateway = ref('gateway.networking.k8s.io/v1', 'Gateway', 'bookinfo-gateway')
    const s = step(plan, 'opt-out-workloads')
    expect(s.operations).toEqual([{op: 'label', ref: gateway, labels: {'istio.io/dataplane-mode': 'none'}}])
    expect(s.undo.operations).toEqual([{op: 'label', ref: gateway, labels: {'istio.io/dataplane-mode': null}}])
    // The gateway is neither restarted nor listed for a person, nor expected to be captured.
    expect(step(plan, 'restart-workloads').operations).toEqual([{op: 'restart', ref: deployment('productpage-v1')}])
    expect(step(plan, 'restart-workloads').manual).toBeUndefined()
    expect(step(plan, 'enable-ambient').verify).toContainEqual({check: 'pods-captured', refs: []})
    expect(Object.values(dataPlanes(plan, 'Deployment/bookinfo-gateway-istio'))).toEqual(Array(7).fill('outside'))
    expect(plan.spec.hazards).toEqual([])
  })

  it('--opted-out enroll: no opt-out step; the gateway pods are captured when the namespace is labelled', () => {
    const {plan} = planOf(objects, {optedOut: 'enroll'})
    expect(stepIds(plan)).not.toContain('opt-out-workloads')
    expect(step(plan, 'enable-ambient').verify).toContainEqual({check: 'pods-captured', refs: [deployment('bookinfo-gateway-istio')]})
    expect(dataPlanes(plan, 'Deployment/bookinfo-gateway-istio')).toMatchObject({start: 'outside', preflight: 'outside', 'enable-ambient': 'ambient', 'verify-dataplane': 'ambient'})
  })

  it('running gateway pods (as read from a cluster) are outside the mesh, not sidecars', () => {
    const pod: KubeObject = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: 'bookinfo-gateway-istio-7d9c8b6f5-x2x7q',
        namespace: NS,
        labels: {'gateway.istio.io/managed': 'istio.io-gateway-controller', 'gateway.networking.k8s.io/gateway-name': 'bookinfo-gateway', 'sidecar.istio.io/inject': 'false', 'pod-template-hash': '7d9c8b6f5'},
        ownerReferences: [{apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'bookinfo-gateway-istio-7d9c8b6f5', controller: true}],
      },
      spec: {containers: [{name: 'istio-proxy', image: 'docker.io/istio/proxyv2:1.28.1', args: ['proxy', 'router']}]},
      status: {phase: 'Running'},
    }
    const {plan} = planOf([...objects, pod])
    expect(workload(plan, 'Deployment', 'bookinfo-gateway-istio')).toMatchObject({proxy: 'none', pods: {total: 1, sidecar: 0, ambient: 0, none: 1}})
    expect(step(plan, 'opt-out-workloads').operations).toHaveLength(1)
  })

  it('a waypoint istiod deployed before the migration is a workload of its own, never restarted or listed as manual', () => {
    const waypoint: KubeObject = {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'Gateway',
      metadata: {name: 'waypoint', namespace: NS, uid: '0b6f7d2e-5b7e-4f43-a3b0-6d4c1b2a9f10', labels: {'istio.io/waypoint-for': 'service'}},
      spec: {gatewayClassName: 'istio-waypoint', listeners: [{name: 'mesh', port: 15008, protocol: 'HBONE'}]},
    }
    const labels = {'gateway.istio.io/managed': 'istio.io-mesh-controller', 'gateway.networking.k8s.io/gateway-name': 'waypoint', 'gateway.networking.k8s.io/gateway-class-name': 'istio-waypoint'}
    const deploymentOfWaypoint: KubeObject = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: {name: 'waypoint', namespace: NS, labels, ownerReferences: [{apiVersion: 'gateway.networking.k8s.io/v1', kind: 'Gateway', name: 'waypoint', uid: waypoint.metadata.uid!}]},
      spec: {
        selector: {matchLabels: {'gateway.networking.k8s.io/gateway-name': 'waypoint'}},
        template: {
          metadata: {labels: {...labels, 'istio.io/dataplane-mode': 'none', 'sidecar.istio.io/inject': 'false'}},
          spec: {serviceAccountName: 'waypoint', containers: [{name: 'istio-proxy', image: 'docker.io/istio/proxyv2:1.28.1', args: ['proxy', 'waypoint']}]},
        },
      },
    }
    const {plan} = planOf([...objects, waypoint, deploymentOfWaypoint])
    expect(workload(plan, 'Deployment', 'waypoint')).toMatchObject({proxy: 'none', traits: ['dataplane-none', 'inject-opt-out', 'waypoint']})
    expect(plan.spec.workloads.some((w) => w.ref.kind === 'Gateway')).toBe(false)
    const restart = step(plan, 'restart-workloads')
    expect(restart.operations).toEqual([{op: 'restart', ref: deployment('productpage-v1')}])
    expect(restart.manual).toBeUndefined()
    expect(step(plan, 'verify-dataplane').verify).toContainEqual({check: 'pods-without-sidecar', refs: [deployment('productpage-v1')]})
  })
})

describe('E9 StatefulSets and headless Services', () => {
  let objects: KubeObject[]
  beforeAll(async () => {
    objects = await fixture('E9-statefulset-headless.yaml')
  })

  it('OnDelete and partitioned StatefulSets are listed for a person, never rollout-restarted', () => {
    const {plan} = planOf(objects)
    expect(workload(plan, 'StatefulSet', 'mongo').traits).toEqual(['on-delete'])
    expect(workload(plan, 'StatefulSet', 'kafka').traits).toEqual(['partitioned'])
    const restart = step(plan, 'restart-workloads')
    expect(restart.operations).toEqual([])
    expect(restart.manual).toEqual([
      {ref: ref('apps/v1', 'StatefulSet', 'kafka'), reason: 'RollingUpdate partition > 0: pods below the partition keep their sidecar; lower the partition or delete them'},
      {ref: ref('apps/v1', 'StatefulSet', 'mongo'), reason: 'updateStrategy OnDelete: a rollout restart changes nothing; delete its pods one at a time'},
    ])
    expect(finding(plan, 'E9/StatefulSet/mongo')).toMatchObject({code: 'E9', severity: 'warning'})
    expect(finding(plan, 'E9/StatefulSet/kafka').message).toContain('partition=2')
    // Nothing the plan restarts is expected to end up ambient; they keep their sidecars until a person acts.
    expect(step(plan, 'verify-dataplane').verify).toContainEqual({check: 'pods-without-sidecar', refs: []})
    expect(dataPlanes(plan, 'StatefulSet/kafka')['verify-dataplane']).toBe('sidecar')
  })

  it('headless Services are reported and left out of the waypoint-bound check; the carried L7 policy says it misses pod-addressed traffic', () => {
    const {plan} = planOf(objects)
    expect(finding(plan, 'E9/headless/bookinfo/mongo')).toMatchObject({code: 'E9', severity: 'warning'})
    expect(finding(plan, 'E9/headless/bookinfo/kafka-headless')).toMatchObject({code: 'E9', severity: 'warning'})
    expect(finding(plan, 'retarget/AuthorizationPolicy/bookinfo/kafka-produce-only/pod-addressed')).toMatchObject({code: 'RetargetMissesPodTraffic', severity: 'warning'})
    expect(applied(step(plan, 'create-policies'), 'kafka-produce-only-waypoint').spec.targetRefs).toEqual([{group: '', kind: 'Service', name: 'kafka'}])
    const bound = step(plan, 'verify-dataplane').verify.find((v) => v.check === 'waypoint-bound')
    expect(bound).toEqual({check: 'waypoint-bound', ref: ref('gateway.networking.k8s.io/v1', 'Gateway', 'waypoint'), services: ['kafka']})
  })

  it('--deny-waypoint-bypass: no DENY for pods that peers reach by pod IP, whether the Service is headless or not', () => {
    const {plan} = planOf(objects, {denyWaypointBypass: true})
    expect(stepIds(plan)).not.toContain('deny-waypoint-bypass')
    expect(finding(plan, 'deny-bypass-headless/bookinfo/mongo').code).toBe('BypassDenyHeadless')
    expect(finding(plan, 'deny-bypass-headless/bookinfo/kafka-headless').code).toBe('BypassDenyHeadless')
    // kafka has a ClusterIP Service too, but its pods are also behind kafka-headless: a DENY selecting them would
    // cut the brokers' pod-to-pod traffic.
    expect(finding(plan, 'deny-bypass-headless/bookinfo/kafka')).toMatchObject({code: 'BypassDenyHeadless', severity: 'warning'})
    expect(finding(plan, 'deny-bypass-headless/bookinfo/kafka').message).toContain('headless Service kafka-headless')
  })

  it('--deny-waypoint-bypass still protects Deployments that only sit behind a ClusterIP Service', () => {
    const reviews: KubeObject[] = [
      {apiVersion: 'v1', kind: 'Service', metadata: {name: 'reviews', namespace: NS}, spec: {selector: {app: 'reviews'}, ports: [{name: 'http', port: 9080}]}},
      {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: {name: 'reviews-v1', namespace: NS},
        spec: {selector: {matchLabels: {app: 'reviews'}}, template: {metadata: {labels: {app: 'reviews'}}, spec: {containers: [{name: 'reviews', image: 'docker.io/istio/examples-bookinfo-reviews-v1:1.20.2'}]}}},
      },
    ]
    const {plan} = planOf([...objects, ...reviews], {denyWaypointBypass: true})
    const deny = step(plan, 'deny-waypoint-bypass')
    expect(opsOf(deny)).toEqual(['apply AuthorizationPolicy/reviews-deny-waypoint-bypass'])
    expect(applied(deny, 'reviews-deny-waypoint-bypass').spec).toEqual({selector: {matchLabels: {app: 'reviews'}}, action: 'DENY', rules: [{from: [{source: {notPrincipals: [WAYPOINT_PRINCIPAL]}}]}]})
    expect(finding(plan, 'deny-bypass-headless/bookinfo/kafka').code).toBe('BypassDenyHeadless')
  })
})

describe('E13 DestinationRules of the root namespace', () => {
  let objects: KubeObject[]
  beforeAll(async () => {
    objects = await fixture('E13-root-destination-rule.yaml')
  })

  it('reports per Service which DestinationRule the waypoint resolves: the root *.local rule for ratings, bookinfo/reviews for reviews', () => {
    const {plan} = planOf(objects)
    expect(plan.spec.summary.waypointRequired).toBe(true)
    const meshDefaults = item(plan, 'DestinationRule', 'mesh-defaults', 'istio-system')
    expect(meshDefaults).toMatchObject({verdict: 'L7', action: 'keep', services: ['ratings']})
    expect(meshDefaults.reasons).toContain('spec.host: not used for reviews: the waypoint resolves DestinationRule bookinfo/reviews first (DRs are not merged across namespaces, E13)')
    expect(item(plan, 'DestinationRule', 'reviews')).toMatchObject({verdict: 'inert', action: 'no-effect'})
    expect(item(plan, 'DestinationRule', 'reviews').reasons).toContain('spec.trafficPolicy.tls.mode: ISTIO_MUTUAL: ignored at waypoints and by ztunnel; mesh traffic is HBONE (mTLS) anyway')
  })

  it('a root rule shadowed by the Service namespace\'s own rule was shadowed for sidecar clients too: nothing is lost, nothing blocks', () => {
    const {plan} = planOf(objects)
    const lb = item(plan, 'DestinationRule', 'reviews-lb', 'istio-system')
    expect(lb).toMatchObject({verdict: 'inert', action: 'keep'})
    expect(lb.reasons.some((r) => r.startsWith('spec.host: sidecar clients of bookinfo resolve DestinationRule bookinfo/reviews first too'))).toBe(true)
    expect(findingIds(plan).filter((id) => id.startsWith('E13/'))).toEqual([])
    expect(plan.spec.blockers).toEqual([])
  })

  it('without bookinfo\'s own rule the waypoint resolves the root rule, and the plan keeps it', () => {
    const {plan} = planOf(without(objects, 'DestinationRule', 'reviews'))
    expect(item(plan, 'DestinationRule', 'reviews-lb', 'istio-system')).toMatchObject({verdict: 'L7', action: 'keep', services: ['reviews']})
    expect(plan.spec.blockers).toEqual([])
  })

  it('a rule in a client namespace for bookinfo\'s Service is never used by the waypoint: lost unless accepted', () => {
    const frontend: KubeObject = {
      apiVersion: 'networking.istio.io/v1',
      kind: 'DestinationRule',
      metadata: {name: 'reviews-from-frontend', namespace: 'frontend'},
      spec: {host: 'reviews.bookinfo.svc.cluster.local', trafficPolicy: {loadBalancer: {simple: 'ROUND_ROBIN'}}},
    }
    const {plan} = planOf([...objects, frontend])
    expect(item(plan, 'DestinationRule', 'reviews-from-frontend', 'frontend')).toMatchObject({verdict: 'L7', action: 'lost-client-side'})
    expect(blockerIds(plan)).toEqual(['E13/DestinationRule/frontend/reviews-from-frontend'])
    expect(planOf([...objects, frontend], {acceptLost: ['E13/DestinationRule/frontend/reviews-from-frontend']}).plan.spec.blockers).toEqual([])
  })
})

describe('E22 when: source.serviceAccount', () => {
  let objects: KubeObject[]
  let rewritableOnly: KubeObject[]
  beforeAll(async () => {
    objects = await fixture('E22-source-service-account.yaml')
    rewritableOnly = without(objects, 'AuthorizationPolicy', 'details-from-productpage')
  })

  it('rewritable (Istio >= 1.25): the rewrite is created before the switch and the original deleted after the restart — no waypoint, no hazard', () => {
    const {plan} = planOf(rewritableOnly, {istioVersion: '1.28'})
    expect(plan.spec.summary.waypointRequired).toBe(false)
    expect(stepIds(plan)).toEqual(['preflight', 'create-policies', 'enable-ambient', 'remove-sidecar-injection', 'restart-workloads', 'delete-sidecar-policies', 'verify-dataplane'])
    const create = step(plan, 'create-policies')
    expect(opsOf(create)).toEqual(['apply AuthorizationPolicy/ratings-from-reviews-l4'])
    expect(applied(create, 'ratings-from-reviews-l4').spec).toEqual({
      selector: {matchLabels: {app: 'ratings'}},
      action: 'ALLOW',
      rules: [{from: [{source: {serviceAccounts: ['bookinfo/bookinfo-reviews']}}], to: [{operation: {ports: ['9080']}}]}],
    })
    expect(opsOf(step(plan, 'delete-sidecar-policies'))).toEqual(['delete AuthorizationPolicy/ratings-from-reviews'])
    // ztunnel enforces the rewrite exactly: the policy is never degraded or deny-all, before or after the original goes.
    expect(plan.spec.hazards).toEqual([])
    expect(plan.spec.blockers).toEqual([])
    expect(plan.spec.policies).toEqual([
      {key: 'AuthorizationPolicy/ratings-from-reviews', action: 'ALLOW', ztunnel: 'deny-all', workloads: ['Deployment/ratings-v1'], deletedIn: 'delete-sidecar-policies', l4PartIn: 'create-policies', rewrittenIn: 'create-policies'},
    ])
    expect(timeline(plan).apply.at(-1)!.policies['AuthorizationPolicy/ratings-from-reviews']).toEqual({ztunnel: ['Deployment/ratings-v1']})
  })

  it('rewritable, Istio version unknown: rewritten on the assumption of >= 1.25, said as a warning', () => {
    const {plan} = planOf(rewritableOnly)
    expect(finding(plan, 'retarget/AuthorizationPolicy/bookinfo/ratings-from-reviews/e22-version')).toMatchObject({code: 'ServiceAccountRewriteAssumesVersion', severity: 'warning'})
    expect(opsOf(step(plan, 'create-policies'))).toEqual(['apply AuthorizationPolicy/ratings-from-reviews-l4'])
  })

  it('Istio 1.24 (no serviceAccounts at ztunnel): carried to a waypoint instead', () => {
    const {plan} = planOf(rewritableOnly, {istioVersion: '1.24'})
    expect(plan.spec.summary.waypointRequired).toBe(true)
    expect(opsOf(step(plan, 'create-policies'))).toEqual(['apply AuthorizationPolicy/ratings-from-reviews-waypoint', 'apply AuthorizationPolicy/ratings-from-reviews-ztunnel'])
    expect(applied(step(plan, 'create-policies'), 'ratings-from-reviews-waypoint').spec.rules[0].when).toEqual([{key: 'source.serviceAccount', values: ['bookinfo/bookinfo-reviews']}])
  })

  it('not rewritable (principals in the same source): carried to the waypoint, with the rewritable one also enforced there (E21)', () => {
    const {plan} = planOf(objects, {istioVersion: '1.28'})
    expect(plan.spec.summary.waypointRequired).toBe(true)
    expect(finding(plan, 'retarget/AuthorizationPolicy/bookinfo/details-from-productpage/e22-not-rewritten')).toMatchObject({code: 'ServiceAccountConditionNotRewritten', severity: 'info'})
    expect(finding(plan, 'retarget/AuthorizationPolicy/bookinfo/details-from-productpage/e22-not-rewritten').message).toContain('serviceAccounts cannot be combined with principals or namespaces in one source')
    expect(opsOf(step(plan, 'create-policies'))).toEqual([
      'apply AuthorizationPolicy/details-from-productpage-waypoint',
      'apply AuthorizationPolicy/details-from-productpage-ztunnel',
      'apply AuthorizationPolicy/ratings-from-reviews-waypoint',
      'apply AuthorizationPolicy/ratings-from-reviews-ztunnel',
      'apply AuthorizationPolicy/ratings-from-reviews-l4',
    ])
    expect(applied(step(plan, 'create-policies'), 'details-from-productpage-waypoint').spec).toEqual({
      targetRefs: [{group: '', kind: 'Service', name: 'details'}],
      action: 'ALLOW',
      rules: [{from: [{source: {principals: ['cluster.local/ns/bookinfo/sa/bookinfo-productpage']}}], when: [{key: 'source.serviceAccount', values: ['bookinfo-productpage']}]}],
    })
    expect(opsOf(step(plan, 'delete-sidecar-policies'))).toEqual([
      'apply AuthorizationPolicy/details-from-productpage-l4',
      'delete AuthorizationPolicy/details-from-productpage',
      'delete AuthorizationPolicy/ratings-from-reviews',
    ])
    expect(plan.spec.blockers).toEqual([])
  })
})
