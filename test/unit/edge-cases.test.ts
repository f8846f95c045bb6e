// What the plan does with each edge case of DOMAIN §7 that concerns config or workloads (issue 5 "Done when").
// One manifest set per edge case under test/fixtures/edge-cases/, read like `--manifests` reads it
// (loadManifestFiles → snapshot → buildInventory → buildPlan); where exit codes and flags matter, through the
// built CLI in test/cli/edge-cases.test.ts. Every plan generated here must pass the tool's own `validate` (schema and safety rules).
//
// Not covered here: E17 (install/upgrade side effects) is a preflight concern with no plan-level behaviour —
// preflight only names the istio-ingressgateway pruning in the fix text of its ambient check, and there is no
// component diff to test; E20 (multicluster) is not handled by the planner at all (no istio.io/global, network
// or cluster markers are read).
import path from 'node:path'

import {parse} from 'yaml'
import {beforeAll, describe, expect, it} from 'vitest'

import type {Finding, Inventory, InventoryItem, KubeObject, ObjectRef, WorkloadItem} from '../../src/planner/model.js'
import type {MigrationPlan, Operation, PlanOptions, PlanStep} from '../../src/planner/plan-types.js'
import {checkPlanText, renderPlanFile} from '../../src/plan/planfile.js'
import {type BoundaryState, simulate, unexpectedHazards} from '../../src/plan/simulate.js'
import {loadManifestFiles} from '../../src/sources/manifests.js'
import {offlinePlan} from '../support/offline-plan.js'
import {REPO_ROOT} from '../support/shared.js'

const FIXTURES = path.join(REPO_ROOT, 'test/fixtures/edge-cases')
const NS = 'bookinfo'
const nsRef = {apiVersion: 'v1', kind: 'Namespace', name: NS}
const WAYPOINT_PRINCIPAL = 'cluster.local/ns/bookinfo/sa/waypoint'
const MANAGED = {'app.kubernetes.io/managed-by': 'mesh-migrate'}

/** The objects of fixture files, read as `--manifests` reads them. */
async function fixture(...files: string[]): Promise<KubeObject[]> {
  const loaded = await loadManifestFiles(
    files.map((f) => path.join(FIXTURES, f)),
    {defaultNamespace: NS},
  )
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
  const {inventory, plan} = offlinePlan(NS, objects, planOptions, 'test/fixtures/edge-cases', istioVersion)
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
  if (!w)
    throw new Error(
      `no workload ${kind}/${name}: ${p.spec.workloads.map((x) => `${x.ref.kind}/${x.ref.name}`).join(', ')}`,
    )
  return w
}

/** "apply Kind/name", "delete Kind/name", "label Kind/name", … — what a step writes, in order. */
const opText = (op: Operation) =>
  `${op.op} ${op.op === 'apply' ? `${op.object.kind}/${op.object.metadata.name}` : `${op.ref.kind}/${op.ref.name}`}`
const opsOf = (s: PlanStep) => s.operations.map(opText)

function applied(s: PlanStep, name: string): KubeObject {
  const op = s.operations.find(
    (o): o is Extract<Operation, {op: 'apply'}> => o.op === 'apply' && o.object.metadata.name === name,
  )
  if (!op) throw new Error(`${s.id} applies no ${name}: ${opsOf(s).join(', ')}`)
  return op.object
}

const ref = (apiVersion: string, kind: string, name: string): ObjectRef => ({apiVersion, kind, namespace: NS, name})
const deployment = (name: string) => ref('apps/v1', 'Deployment', name)

/** Every object a plan's steps (and undos, and verifications) name. */
function namedAnywhere(p: MigrationPlan): string[] {
  const names: string[] = []
  for (const s of p.spec.steps) {
    for (const op of [...s.operations, ...s.undo.operations])
      names.push(op.op === 'apply' ? op.object.metadata.name : op.ref.name)
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
    policies: p.spec.policies,
    ambientAtStart: p.spec.observed.namespaceLabels['istio.io/dataplane-mode'] === 'ambient',
  })
}

/** A workload's data plane after each apply boundary ("start", then each step id). */
function dataPlanes(p: MigrationPlan, key: string): Record<string, string> {
  return Object.fromEntries(timeline(p).apply.map((b) => [b.after, b.dataPlanes[key] ?? '(none)']))
}

/** The objects with one object's labels replaced (a variant of a fixture). */
function relabel(objects: KubeObject[], kind: string, name: string, labels: Record<string, string>): KubeObject[] {
  return objects.map((o) =>
    o.kind === kind && o.metadata.name === name ? {...o, metadata: {...o.metadata, labels}} : o,
  )
}

const without = (objects: KubeObject[], kind: string, name: string) =>
  objects.filter((o) => !(o.kind === kind && o.metadata.name === name))

describe('E1 revision-labelled namespace (a revision tag)', () => {
  let objects: KubeObject[]
  beforeAll(async () => {
    objects = await fixture('E1-revision-tag.yaml')
  })

  it('recognises the tag and the revision it points to', () => {
    const {inventory, plan} = planOf(objects)
    expect(inventory.namespaceState).toMatchObject({
      revision: 'prod-stable',
      injection: 'enabled',
      mode: 'sidecar',
      multipleInjectionLabels: false,
    })
    expect(finding(plan, 'E1/bookinfo')).toMatchObject({code: 'RevisionLabelIssue', severity: 'info'})
    expect(finding(plan, 'E1/bookinfo').message).toContain('revision tag "prod-stable" (→ revision 1-28-1)')
    expect(findingIds(plan).filter((id) => /^(E2|E3|IST0123)\//.test(id))).toEqual([])
    expect(workload(plan, 'Deployment', 'reviews-v1').proxy).toBe('sidecar')
  })

  it('stamps istio.io/rev on the waypoint before the namespace loses it; removes the label and restores its exact value', () => {
    const {plan} = planOf(objects)
    expect(plan.spec.waypoints.map((w) => w.metadata.labels)).toEqual([
      {'istio.io/rev': 'prod-stable', 'istio.io/waypoint-for': 'service', ...MANAGED},
    ])
    expect(applied(step(plan, 'create-waypoint'), 'waypoint').metadata.labels?.['istio.io/rev']).toBe('prod-stable')
    expect(stepIds(plan)).toEqual([
      'preflight',
      'create-waypoint',
      'wait-waypoint',
      'create-policies',
      'bind-waypoint',
      'enable-ambient',
      'remove-sidecar-injection',
      'restart-workloads',
      'delete-sidecar-policies',
      'verify-dataplane',
    ])
    const remove = step(plan, 'remove-sidecar-injection')
    expect(remove.preconditions).toEqual([{check: 'namespace-labels', labels: {'istio.io/rev': 'prod-stable'}}])
    expect(remove.operations).toEqual([{op: 'label', ref: nsRef, labels: {'istio.io/rev': null}}])
    expect(remove.undo.operations).toEqual([{op: 'label', ref: nsRef, labels: {'istio.io/rev': 'prod-stable'}}])
    expect(step(plan, 'preflight').preconditions).toEqual([
      {
        check: 'namespace-labels',
        labels: {
          'istio-injection': null,
          'istio.io/rev': 'prod-stable',
          'istio.io/dataplane-mode': null,
          'istio.io/use-waypoint': null,
        },
      },
    ])
  })

  it('half-migrated (istio.io/rev next to dataplane-mode=ambient): IST0123, and the plan only removes the revision label', () => {
    const {inventory, plan} = planOf(
      relabel(objects, 'Namespace', NS, {'istio.io/rev': 'prod-stable', 'istio.io/dataplane-mode': 'ambient'}),
    )
    expect(inventory.namespaceState).toMatchObject({mode: 'both', multipleInjectionLabels: true})
    expect(finding(plan, 'IST0123/bookinfo')).toMatchObject({code: 'ConflictingInjectionLabels', severity: 'warning'})
    expect(finding(plan, 'IST0123/bookinfo').message).toContain(
      '[istio.io/rev=prod-stable istio.io/dataplane-mode=ambient]',
    )
    expect(stepIds(plan)).not.toContain('enable-ambient')
    expect(step(plan, 'remove-sidecar-injection').operations).toEqual([
      {op: 'label', ref: nsRef, labels: {'istio.io/rev': null}},
    ])
  })

  it('a revision no installed webhook serves injects nothing: reported, and there is nothing to migrate', () => {
    const {inventory, plan} = planOf(relabel(objects, 'Namespace', NS, {'istio.io/rev': '1-22-0'}))
    expect(inventory.namespaceState.injection).toBe('none')
    expect(finding(plan, 'E1/bookinfo/unknown-revision')).toMatchObject({
      code: 'RevisionLabelIssue',
      severity: 'warning',
    })
    expect(plan.spec.steps).toEqual([])
  })
})

describe('E2 istio-injection and istio.io/rev on one namespace', () => {
  let objects: KubeObject[]
  beforeAll(async () => {
    objects = await fixture('E2-both-injection-labels.yaml')
  })

  it('warns that istio.io/rev is inert for injection but owns the waypoint (IST0123 fires too)', () => {
    const {inventory, plan} = planOf(objects)
    expect(inventory.namespaceState).toMatchObject({
      injection: 'enabled',
      revision: 'canary',
      multipleInjectionLabels: true,
    })
    expect(finding(plan, 'E2/bookinfo')).toMatchObject({code: 'InjectionAndRevisionLabels', severity: 'warning'})
    expect(finding(plan, 'IST0123/bookinfo').message).toContain('[istio-injection=enabled istio.io/rev=canary]')
    expect(plan.spec.waypoints[0]!.metadata.labels?.['istio.io/rev']).toBe('canary')
    expect(stepIds(plan).indexOf('create-waypoint')).toBeLessThan(stepIds(plan).indexOf('remove-sidecar-injection'))
  })

  it('removes both labels in one step and records both values for rollback', () => {
    const {plan} = planOf(objects)
    const remove = step(plan, 'remove-sidecar-injection')
    expect(remove.preconditions).toEqual([
      {check: 'namespace-labels', labels: {'istio-injection': 'enabled', 'istio.io/rev': 'canary'}},
    ])
    expect(remove.operations).toEqual([
      {op: 'label', ref: nsRef, labels: {'istio-injection': null, 'istio.io/rev': null}},
    ])
    expect(remove.verify).toEqual([
      {check: 'namespace-labels', labels: {'istio-injection': null, 'istio.io/rev': null}},
    ])
    expect(remove.undo.operations).toEqual([
      {op: 'label', ref: nsRef, labels: {'istio-injection': 'enabled', 'istio.io/rev': 'canary'}},
    ])
  })
})

describe('E3 injection enabled by default', () => {
  let objects: KubeObject[]
  beforeAll(async () => {
    objects = await fixture('E3-injection-by-default.yaml')
  })

  it('an unlabelled namespace is injected by the auto webhook; the plan sets istio-injection=disabled instead of removing a label', () => {
    const {inventory, plan} = planOf(objects)
    expect(inventory.injectionByDefault).toBe(true)
    expect(inventory.namespaceState).toMatchObject({injection: 'enabled', mode: 'sidecar', sidecarLabels: []})
    expect(finding(plan, 'E3/bookinfo')).toMatchObject({code: 'InjectionEnabledByDefault', severity: 'warning'})
    expect(finding(plan, 'E3/injection-enabled-by-default').message).toContain(
      'webhook auto.sidecar-injector.istio.io in MutatingWebhookConfiguration istio-sidecar-injector',
    )
    expect(stepIds(plan)).toEqual([
      'preflight',
      'enable-ambient',
      'remove-sidecar-injection',
      'restart-workloads',
      'verify-dataplane',
    ])
    const remove = step(plan, 'remove-sidecar-injection')
    expect(remove.preconditions).toEqual([{check: 'namespace-labels', labels: {'istio-injection': null}}])
    expect(remove.operations).toEqual([{op: 'label', ref: nsRef, labels: {'istio-injection': 'disabled'}}])
    expect(remove.verify).toEqual([{check: 'namespace-labels', labels: {'istio-injection': 'disabled'}}])
    expect(remove.undo.operations).toEqual([{op: 'label', ref: nsRef, labels: {'istio-injection': null}}])
    expect(step(plan, 'restart-workloads').operations).toEqual([{op: 'restart', ref: deployment('details-v1')}])
    expect(dataPlanes(plan, 'Deployment/details-v1')).toMatchObject({
      'remove-sidecar-injection': 'sidecar',
      'restart-workloads': 'ambient',
    })
  })

  it('detected from the injector values alone (no webhook configuration in the source)', () => {
    const {inventory, plan} = planOf(objects.filter((o) => o.kind !== 'MutatingWebhookConfiguration'))
    expect(inventory.injectionByDefault).toBe(true)
    expect(finding(plan, 'E3/injection-enabled-by-default').message).toContain(
      'sidecarInjectorWebhook.enableNamespacesByDefault=true in ConfigMap istio-system/istio-sidecar-injector',
    )
    expect(step(plan, 'remove-sidecar-injection').operations).toEqual([
      {op: 'label', ref: nsRef, labels: {'istio-injection': 'disabled'}},
    ])
  })

  it('with an injected gateway in the namespace (E7) no label can work: the plan blocks instead of restarting pods back into sidecars', async () => {
    const [gateway] = (await fixture('E7-injected-gateway-revisioned.yaml')).filter(
      (o) => o.kind === 'Deployment' && o.metadata.name === 'bookinfo-ingressgateway',
    )
    const {plan} = planOf([...objects, gateway!])
    expect(blockerIds(plan)).toEqual(['E3-E7/bookinfo'])
    expect(finding(plan, 'E3-E7/bookinfo')).toMatchObject({
      code: 'InjectionByDefaultWithInjectedGateway',
      severity: 'blocker',
      ref: nsRef,
    })
    expect(finding(plan, 'E3-E7/bookinfo').message).toContain('Deployment bookinfo/bookinfo-ingressgateway')
    // It never sets istio-injection=disabled, which would leave the gateway's `image: auto` pods without a proxy.
    expect(stepIds(plan)).not.toContain('remove-sidecar-injection')
  })
})

describe('E4 pod-level opt-in and kube-inject templates', () => {
  let objects: KubeObject[]
  beforeAll(async () => {
    objects = await fixture('E4-pod-opt-in-and-kube-inject.yaml')
  })

  it('detects each opt-in and the injected template', () => {
    const {plan} = planOf(objects)
    expect(workload(plan, 'Deployment', 'ratings-v1').traits).toEqual(['pod-opt-in'])
    expect(workload(plan, 'Deployment', 'reviews-v2').traits).toEqual(['pod-opt-in'])
    expect(workload(plan, 'Deployment', 'details-v1')).toMatchObject({
      proxy: 'sidecar',
      traits: ['hbone-capable', 'manual-injection'],
    })
    expect(finding(plan, 'E4/Deployment/ratings-v1').message).toContain('label sidecar.istio.io/inject=true')
    expect(finding(plan, 'E4/Deployment/reviews-v2').message).toContain('label istio.io/rev=canary')
    expect(finding(plan, 'E4/manual/Deployment/details-v1')).toMatchObject({
      code: 'PodLevelInjection',
      severity: 'warning',
    })
  })

  it('removes the opt-ins from the pod templates in restart-workloads (the change rolls them) and restores their exact values on undo', () => {
    const {plan} = planOf(objects)
    const restart = step(plan, 'restart-workloads')
    expect(restart.operations).toEqual([
      {op: 'template-labels', ref: deployment('ratings-v1'), labels: {'sidecar.istio.io/inject': null}},
      {op: 'template-labels', ref: deployment('reviews-v2'), labels: {'istio.io/rev': null}},
    ])
    expect(restart.undo.operations).toEqual([
      {op: 'template-labels', ref: deployment('ratings-v1'), labels: {'sidecar.istio.io/inject': 'true'}},
      {op: 'template-labels', ref: deployment('reviews-v2'), labels: {'istio.io/rev': 'canary'}},
    ])
    expect(restart.verify).toEqual([
      {check: 'rollouts-complete', refs: [deployment('ratings-v1'), deployment('reviews-v2')]},
      {check: 'pods-without-sidecar', refs: [deployment('ratings-v1'), deployment('reviews-v2')]},
    ])
    expect(dataPlanes(plan, 'Deployment/ratings-v1')).toMatchObject({
      'remove-sidecar-injection': 'sidecar',
      'restart-workloads': 'ambient',
    })
    expect(dataPlanes(plan, 'Deployment/reviews-v2')['verify-dataplane']).toBe('ambient')
  })

  it('a pod opt-in next to istio.io/dataplane-mode=none is left alone: without it the workload would lose its sidecar and leave the mesh', () => {
    const pinned = objects.map((o) =>
      o.kind === 'Deployment' && o.metadata.name === 'ratings-v1'
        ? {
            ...o,
            spec: {
              ...o.spec,
              template: {
                ...o.spec.template,
                metadata: {
                  ...o.spec.template.metadata,
                  labels: {...o.spec.template.metadata.labels, 'istio.io/dataplane-mode': 'none'},
                },
              },
            },
          }
        : o,
    )
    const {plan} = planOf(pinned)
    expect(workload(plan, 'Deployment', 'ratings-v1').traits).toContain('dataplane-none')
    const restart = step(plan, 'restart-workloads')
    expect(restart.operations).toEqual([
      {op: 'template-labels', ref: deployment('reviews-v2'), labels: {'istio.io/rev': null}},
    ])
    expect(namedAnywhere(plan)).not.toContain('ratings-v1')
    expect(dataPlanes(plan, 'Deployment/ratings-v1')['verify-dataplane']).toBe('sidecar')
  })

  it('the kube-injected workload is listed for a person and not expected to lose its sidecar', () => {
    const {plan} = planOf(objects)
    expect(step(plan, 'restart-workloads').manual).toEqual([
      {
        ref: deployment('details-v1'),
        reason:
          'the pod template itself contains the sidecar (istioctl kube-inject): remove the injected containers, volumes and annotations from the template',
      },
    ])
    expect(step(plan, 'verify-dataplane').verify).toContainEqual({
      check: 'pods-without-sidecar',
      refs: [deployment('ratings-v1'), deployment('reviews-v2')],
    })
    expect(dataPlanes(plan, 'Deployment/details-v1')['verify-dataplane']).toBe('sidecar')
    expect(plan.spec.hazards).toEqual([])
  })
})

describe('E5 pods opted out with sidecar.istio.io/inject=false', () => {
  let objects: KubeObject[]
  beforeAll(async () => {
    objects = await fixture('E5-inject-false.yaml')
  })

  it('reports each one: ztunnel would capture it without a restart', () => {
    const {plan} = planOf(objects)
    for (const key of ['Deployment/loadgen', 'Pod/netshoot', 'Job/schema-migrate'])
      expect(finding(plan, `E5/${key}`)).toMatchObject({code: 'OptedOutWorkloadCaptured', severity: 'warning'})
    expect(workload(plan, 'Deployment', 'loadgen')).toMatchObject({proxy: 'none', traits: ['inject-opt-out']})
  })

  it('keep-out (default): labels them istio.io/dataplane-mode=none before enable-ambient; a Job template cannot be patched and is reported', () => {
    const {plan} = planOf(objects)
    expect(stepIds(plan)).toEqual([
      'preflight',
      'opt-out-workloads',
      'enable-ambient',
      'remove-sidecar-injection',
      'restart-workloads',
      'verify-dataplane',
    ])
    const optOut = step(plan, 'opt-out-workloads')
    const pod = ref('v1', 'Pod', 'netshoot')
    expect(optOut.operations).toEqual([
      {op: 'template-labels', ref: deployment('loadgen'), labels: {'istio.io/dataplane-mode': 'none'}},
      {op: 'label', ref: pod, labels: {'istio.io/dataplane-mode': 'none'}},
    ])
    expect(optOut.undo.operations).toEqual([
      {op: 'template-labels', ref: deployment('loadgen'), labels: {'istio.io/dataplane-mode': null}},
      {op: 'label', ref: pod, labels: {'istio.io/dataplane-mode': null}},
    ])
    expect(optOut.verify).toEqual([{check: 'pods-opted-out', refs: [deployment('loadgen'), pod]}])
    expect(finding(plan, 'E5/opt-out-manual/Job/schema-migrate')).toMatchObject({
      code: 'OptOutManual',
      severity: 'warning',
    })
    // Captured at enable-ambient: only the Job the plan could not opt out.
    expect(step(plan, 'enable-ambient').verify).toContainEqual({
      check: 'pods-captured',
      refs: [ref('batch/v1', 'Job', 'schema-migrate')],
    })
    expect(dataPlanes(plan, 'Deployment/loadgen')).toMatchObject({
      'enable-ambient': 'outside',
      'verify-dataplane': 'outside',
    })
    expect(dataPlanes(plan, 'Pod/netshoot')['verify-dataplane']).toBe('outside')
    expect(dataPlanes(plan, 'Job/schema-migrate')).toMatchObject({
      'opt-out-workloads': 'outside',
      'enable-ambient': 'ambient',
    })
  })

  it('--opted-out enroll: no opt-out step; all three are captured at enable-ambient and checked there', () => {
    const {plan} = planOf(objects, {optedOut: 'enroll'})
    expect(stepIds(plan)).toEqual([
      'preflight',
      'enable-ambient',
      'remove-sidecar-injection',
      'restart-workloads',
      'verify-dataplane',
    ])
    expect(step(plan, 'enable-ambient').verify).toContainEqual({
      check: 'pods-captured',
      refs: [deployment('loadgen'), ref('batch/v1', 'Job', 'schema-migrate'), ref('v1', 'Pod', 'netshoot')],
    })
    expect(dataPlanes(plan, 'Deployment/loadgen')).toMatchObject({preflight: 'outside', 'enable-ambient': 'ambient'})
    expect(findingIds(plan)).not.toContain('E5/opt-out-manual/Job/schema-migrate')
  })
})

describe('E6 hostNetwork pods', () => {
  it('are never injected or captured: left out of restarts, captures and data-plane checks', async () => {
    const {plan} = planOf(await fixture('E6-host-network.yaml'))
    expect(workload(plan, 'DaemonSet', 'node-exporter')).toMatchObject({proxy: 'none', traits: ['host-network']})
    expect(finding(plan, 'E6/DaemonSet/node-exporter')).toMatchObject({code: 'HostNetworkWorkload', severity: 'info'})
    expect(namedAnywhere(plan)).not.toContain('node-exporter')
    expect(step(plan, 'restart-workloads').operations).toEqual([{op: 'restart', ref: deployment('details-v1')}])
    expect(Object.values(dataPlanes(plan, 'DaemonSet/node-exporter'))).toEqual(Array(6).fill('outside'))
    expect(plan.spec.hazards).toEqual([])
  })
})

describe('E7 injected gateways in a revisioned namespace', () => {
  let objects: KubeObject[]
  const gateway = deployment('bookinfo-ingressgateway')
  beforeAll(async () => {
    objects = await fixture('E7-injected-gateway-revisioned.yaml')
  })

  it("pins the gateway to the namespace's revision on its pod template, then removes istio.io/rev; undo reverses both", () => {
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
    expect(remove.preconditions).toEqual([
      {check: 'namespace-labels', labels: {'istio.io/rev': 'canary'}},
      {check: 'object-present', ref: gateway},
    ])
    expect(remove.description).toMatch(
      /^Pin the injected gateway\(s\) Deployment bookinfo\/bookinfo-ingressgateway to revision canary/,
    )
    expect(finding(plan, 'E7/Deployment/bookinfo-ingressgateway')).toMatchObject({
      code: 'InjectedGateway',
      severity: 'warning',
    })
    expect(finding(plan, 'E7/Deployment/bookinfo-ingressgateway').message).toContain(
      'by the default revision instead of canary',
    )
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
        ? {
            ...o,
            spec: {
              ...o.spec,
              template: {
                ...o.spec.template,
                metadata: {
                  ...o.spec.template.metadata,
                  labels: {...o.spec.template.metadata.labels, 'istio.io/rev': 'canary'},
                },
              },
            },
          }
        : o,
    )
    const {plan} = planOf(pinned)
    expect(step(plan, 'remove-sidecar-injection').operations).toEqual([
      {op: 'label', ref: nsRef, labels: {'istio.io/rev': null}},
    ])
    expect(finding(plan, 'E7/Deployment/bookinfo-ingressgateway').severity).toBe('info')
  })

  it('in a namespace labelled istio-injection the gateway needs no pin: the object webhook keeps injecting it', () => {
    const {plan} = planOf(relabel(objects, 'Namespace', NS, {'istio-injection': 'enabled'}))
    expect(step(plan, 'remove-sidecar-injection').operations).toEqual([
      {op: 'label', ref: nsRef, labels: {'istio-injection': null}},
    ])
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
    expect(plan.spec.workloads.map((w) => `${w.ref.kind}/${w.ref.name}`)).toEqual([
      'Deployment/bookinfo-gateway-istio',
      'Deployment/productpage-v1',
    ])
    expect(findingIds(plan)).not.toContain('E4/manual/Deployment/bookinfo-gateway-istio')
    expect(finding(plan, 'E8/Deployment/bookinfo-gateway-istio')).toMatchObject({
      code: 'GatewayApiGatewayCaptured',
      severity: 'warning',
    })
  })

  it('keep-out (default): the Gateway is labelled istio.io/dataplane-mode=none before the namespace turns ambient, and stays outside', () => {
    const {plan} = planOf(objects)
    expect(stepIds(plan)).toEqual([
      'preflight',
      'opt-out-workloads',
      'enable-ambient',
      'remove-sidecar-injection',
      'restart-workloads',
      'verify-dataplane',
    ])
    const gateway = ref('gateway.networking.k8s.io/v1', 'Gateway', 'bookinfo-gateway')
    const s = step(plan, 'opt-out-workloads')
    expect(s.operations).toEqual([{op: 'label', ref: gateway, labels: {'istio.io/dataplane-mode': 'none'}}])
    // istiod propagates the Gateway's labels to the Deployment it renders: its pods are what is checked.
    expect(s.verify).toEqual([{check: 'pods-opted-out', refs: [deployment('bookinfo-gateway-istio')]}])
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
    expect(step(plan, 'enable-ambient').verify).toContainEqual({
      check: 'pods-captured',
      refs: [deployment('bookinfo-gateway-istio')],
    })
    expect(dataPlanes(plan, 'Deployment/bookinfo-gateway-istio')).toMatchObject({
      start: 'outside',
      preflight: 'outside',
      'enable-ambient': 'ambient',
      'verify-dataplane': 'ambient',
    })
  })

  it('running gateway pods (as read from a cluster) are outside the mesh, not sidecars', () => {
    const pod: KubeObject = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: 'bookinfo-gateway-istio-7d9c8b6f5-x2x7q',
        namespace: NS,
        labels: {
          'gateway.istio.io/managed': 'istio.io-gateway-controller',
          'gateway.networking.k8s.io/gateway-name': 'bookinfo-gateway',
          'sidecar.istio.io/inject': 'false',
          'pod-template-hash': '7d9c8b6f5',
        },
        ownerReferences: [
          {apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'bookinfo-gateway-istio-7d9c8b6f5', controller: true},
        ],
      },
      spec: {containers: [{name: 'istio-proxy', image: 'docker.io/istio/proxyv2:1.28.1', args: ['proxy', 'router']}]},
      status: {phase: 'Running'},
    }
    const {plan} = planOf([...objects, pod])
    expect(workload(plan, 'Deployment', 'bookinfo-gateway-istio')).toMatchObject({
      proxy: 'none',
      pods: {total: 1, sidecar: 0, ambient: 0, none: 1},
    })
    expect(step(plan, 'opt-out-workloads').operations).toHaveLength(1)
  })

  it('a waypoint istiod deployed before the migration is a workload of its own, never restarted or listed as manual', () => {
    const waypoint: KubeObject = {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'Gateway',
      metadata: {
        name: 'waypoint',
        namespace: NS,
        uid: '0b6f7d2e-5b7e-4f43-a3b0-6d4c1b2a9f10',
        labels: {'istio.io/waypoint-for': 'service'},
      },
      spec: {gatewayClassName: 'istio-waypoint', listeners: [{name: 'mesh', port: 15008, protocol: 'HBONE'}]},
    }
    const labels = {
      'gateway.istio.io/managed': 'istio.io-mesh-controller',
      'gateway.networking.k8s.io/gateway-name': 'waypoint',
      'gateway.networking.k8s.io/gateway-class-name': 'istio-waypoint',
    }
    const deploymentOfWaypoint: KubeObject = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: {
        name: 'waypoint',
        namespace: NS,
        labels,
        ownerReferences: [
          {apiVersion: 'gateway.networking.k8s.io/v1', kind: 'Gateway', name: 'waypoint', uid: waypoint.metadata.uid!},
        ],
      },
      spec: {
        selector: {matchLabels: {'gateway.networking.k8s.io/gateway-name': 'waypoint'}},
        template: {
          metadata: {labels: {...labels, 'istio.io/dataplane-mode': 'none', 'sidecar.istio.io/inject': 'false'}},
          spec: {
            serviceAccountName: 'waypoint',
            containers: [{name: 'istio-proxy', image: 'docker.io/istio/proxyv2:1.28.1', args: ['proxy', 'waypoint']}],
          },
        },
      },
    }
    const {plan} = planOf([...objects, waypoint, deploymentOfWaypoint])
    expect(workload(plan, 'Deployment', 'waypoint')).toMatchObject({
      proxy: 'none',
      traits: ['dataplane-none', 'inject-opt-out', 'waypoint'],
    })
    expect(plan.spec.workloads.some((w) => w.ref.kind === 'Gateway')).toBe(false)
    const restart = step(plan, 'restart-workloads')
    expect(restart.operations).toEqual([{op: 'restart', ref: deployment('productpage-v1')}])
    expect(restart.manual).toBeUndefined()
    expect(step(plan, 'verify-dataplane').verify).toContainEqual({
      check: 'pods-without-sidecar',
      refs: [deployment('productpage-v1')],
    })
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
      {
        ref: ref('apps/v1', 'StatefulSet', 'kafka'),
        reason:
          'RollingUpdate partition > 0: pods below the partition keep their sidecar; lower the partition or delete them',
      },
      {
        ref: ref('apps/v1', 'StatefulSet', 'mongo'),
        reason: 'updateStrategy OnDelete: a rollout restart changes nothing; delete its pods one at a time',
      },
    ])
    expect(finding(plan, 'E9/StatefulSet/mongo')).toMatchObject({code: 'StatefulRestartLimits', severity: 'warning'})
    expect(finding(plan, 'E9/StatefulSet/kafka').message).toContain('partition=2')
    // Nothing the plan restarts is expected to end up ambient; they keep their sidecars until a person acts.
    expect(step(plan, 'verify-dataplane').verify).toContainEqual({check: 'pods-without-sidecar', refs: []})
    expect(dataPlanes(plan, 'StatefulSet/kafka')['verify-dataplane']).toBe('sidecar')
  })

  it('headless Services are reported and left out of the waypoint-bound check; the carried L7 policy says it misses pod-addressed traffic', () => {
    const {plan} = planOf(objects)
    expect(finding(plan, 'E9/headless/bookinfo/mongo')).toMatchObject({
      code: 'StatefulRestartLimits',
      severity: 'warning',
    })
    expect(finding(plan, 'E9/headless/bookinfo/kafka-headless')).toMatchObject({
      code: 'StatefulRestartLimits',
      severity: 'warning',
    })
    expect(finding(plan, 'retarget/AuthorizationPolicy/bookinfo/kafka-produce-only/pod-addressed')).toMatchObject({
      code: 'RetargetMissesPodTraffic',
      severity: 'warning',
    })
    expect(applied(step(plan, 'create-policies'), 'kafka-produce-only-waypoint').spec.targetRefs).toEqual([
      {group: '', kind: 'Service', name: 'kafka'},
    ])
    const bound = step(plan, 'verify-dataplane').verify.find((v) => v.check === 'waypoint-bound')
    expect(bound).toEqual({
      check: 'waypoint-bound',
      ref: ref('gateway.networking.k8s.io/v1', 'Gateway', 'waypoint'),
      services: ['kafka'],
    })
  })

  it('--deny-waypoint-bypass: no DENY for pods that peers reach by pod IP, whether the Service is headless or not', () => {
    const {plan} = planOf(objects, {denyWaypointBypass: true})
    expect(stepIds(plan)).not.toContain('deny-waypoint-bypass')
    expect(finding(plan, 'deny-bypass-headless/bookinfo/mongo').code).toBe('BypassDenyHeadless')
    expect(finding(plan, 'deny-bypass-headless/bookinfo/kafka-headless').code).toBe('BypassDenyHeadless')
    // kafka has a ClusterIP Service too, but its pods are also behind kafka-headless: a DENY selecting them would
    // cut the brokers' pod-to-pod traffic.
    expect(finding(plan, 'deny-bypass-headless/bookinfo/kafka')).toMatchObject({
      code: 'BypassDenyHeadless',
      severity: 'warning',
    })
    expect(finding(plan, 'deny-bypass-headless/bookinfo/kafka').message).toContain('headless Service kafka-headless')
  })

  it('--deny-waypoint-bypass still protects Deployments that only sit behind a ClusterIP Service', () => {
    const reviews: KubeObject[] = [
      {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: {name: 'reviews', namespace: NS},
        spec: {selector: {app: 'reviews'}, ports: [{name: 'http', port: 9080}]},
      },
      {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: {name: 'reviews-v1', namespace: NS},
        spec: {
          selector: {matchLabels: {app: 'reviews'}},
          template: {
            metadata: {labels: {app: 'reviews'}},
            spec: {containers: [{name: 'reviews', image: 'docker.io/istio/examples-bookinfo-reviews-v1:1.20.2'}]},
          },
        },
      },
    ]
    const {plan} = planOf([...objects, ...reviews], {denyWaypointBypass: true})
    const deny = step(plan, 'deny-waypoint-bypass')
    expect(opsOf(deny)).toEqual(['apply AuthorizationPolicy/reviews-deny-waypoint-bypass'])
    expect(applied(deny, 'reviews-deny-waypoint-bypass').spec).toEqual({
      selector: {matchLabels: {app: 'reviews'}},
      action: 'DENY',
      rules: [{from: [{source: {notPrincipals: [WAYPOINT_PRINCIPAL]}}]}],
    })
    expect(finding(plan, 'deny-bypass-headless/bookinfo/kafka').code).toBe('BypassDenyHeadless')
  })
})

describe('E10 Jobs, CronJobs, bare Pods, ReplicaSets and quitquitquit scripts', () => {
  let objects: KubeObject[]
  beforeAll(async () => {
    objects = await fixture('E10-jobs-bare-pods.yaml')
  })

  it('restarts only the Deployment; lists the others for a person with what to do', () => {
    const {plan} = planOf(objects)
    const restart = step(plan, 'restart-workloads')
    expect(restart.operations).toEqual([{op: 'restart', ref: deployment('productpage-v1')}])
    const jobs =
      'Jobs cannot be restarted: running pods keep their sidecar until they complete; the next run starts without one'
    expect(restart.manual).toEqual([
      {ref: ref('batch/v1', 'CronJob', 'reviews-report'), reason: jobs},
      {ref: ref('batch/v1', 'Job', 'ratings-import'), reason: jobs},
      {
        ref: ref('v1', 'Pod', 'ratings-debug'),
        reason: 'a bare Pod has no controller to restart it: delete and re-create it from its source',
      },
      {
        ref: ref('apps/v1', 'ReplicaSet', 'details-legacy'),
        reason: 'ReplicaSet has no rollout restart: recreate its pods',
      },
    ])
    expect(step(plan, 'verify-dataplane').verify).toContainEqual({
      check: 'pods-without-sidecar',
      refs: [deployment('productpage-v1')],
    })
    for (const id of [
      'E10/CronJob/reviews-report',
      'E10/Job/ratings-import',
      'E10/Pod/ratings-debug',
      'E10/ReplicaSet/details-legacy',
    ]) {
      expect(finding(plan, id)).toMatchObject({code: 'NotRestartable', severity: 'warning'})
    }
    // They keep their sidecars when the plan is done: still in the mesh, no hazard.
    expect(dataPlanes(plan, 'Pod/ratings-debug')['verify-dataplane']).toBe('sidecar')
    expect(dataPlanes(plan, 'Job/ratings-import')['verify-dataplane']).toBe('sidecar')
    expect(plan.spec.hazards).toEqual([])
  })

  it("flags the container that calls the sidecar's quitquitquit endpoint", () => {
    const {plan} = planOf(objects)
    expect(workload(plan, 'Job', 'ratings-import').traits).toEqual(['job', 'quitquitquit'])
    expect(finding(plan, 'E10-quitquitquit/Job/ratings-import')).toMatchObject({
      code: 'NotRestartable',
      severity: 'warning',
    })
    expect(finding(plan, 'E10-quitquitquit/Job/ratings-import').message).toMatch(
      /^Container\(s\) import of Job ratings-import/,
    )
    expect(workload(plan, 'CronJob', 'reviews-report').traits).toEqual(['job'])
  })
})

describe("E11 client-side routing for other namespaces' and external hosts", () => {
  let objects: KubeObject[]
  const lost = ['E11/DestinationRule/bookinfo/shop-ratings-pool', 'E11/VirtualService/bookinfo/shop-ratings-timeout']
  beforeAll(async () => {
    objects = await fixture('E11-client-side-routing.yaml')
  })

  it("each is lost for bookinfo's ambient pods and blocks the plan until accepted; the egress TLS origination is kept", () => {
    const {plan} = planOf(objects)
    expect(item(plan, 'VirtualService', 'shop-ratings-timeout')).toMatchObject({
      verdict: 'L7',
      action: 'lost-client-side',
      scope: 'client-side',
    })
    expect(item(plan, 'DestinationRule', 'shop-ratings-pool')).toMatchObject({
      verdict: 'L7',
      action: 'lost-client-side',
    })
    // issue 10 point 2 (https://istio.io/latest/docs/ambient/usage/egress-gateway/): bookinfo's own ServiceEntry is
    // bound to bookinfo's waypoint by the namespace label, and that waypoint originates the TLS.
    expect(item(plan, 'DestinationRule', 'payments-api-tls')).toMatchObject({verdict: 'L7', action: 'keep'})
    expect(item(plan, 'ServiceEntry', 'payments-api')).toMatchObject({verdict: 'L4', action: 'keep'})
    expect(blockerIds(plan)).toEqual(lost)
    expect(plan.spec.summary.blockers).toBe(2)
    for (const id of lost) expect(finding(plan, id).fix).toContain(`--accept-lost ${id}`)
    // What is lost cannot be carried; the waypoint is there for the egress host only.
    expect(plan.spec.summary.waypointRequired).toBe(true)
    expect(step(plan, 'bind-waypoint').description).toContain('so are its ServiceEntries (payments-api)')
  })

  it('--accept-lost turns exactly the named loss into a warning', () => {
    const one = planOf(objects, {acceptLost: ['E11/VirtualService/bookinfo/shop-ratings-timeout']}).plan
    expect(blockerIds(one)).toEqual(lost.slice(0, 1))
    expect(finding(one, 'E11/VirtualService/bookinfo/shop-ratings-timeout')).toMatchObject({
      severity: 'warning',
      code: 'ClientSideRoutingLost',
    })
    expect(finding(one, 'E11/VirtualService/bookinfo/shop-ratings-timeout').message).toMatch(
      /\(accepted with --accept-lost\)$/,
    )
    const all = planOf(objects, {acceptLost: lost}).plan
    expect(all.spec.blockers).toEqual([])
    expect(all.spec.steps).toEqual(planOf(objects).plan.spec.steps)
  })
})

describe("E12 routing for bookinfo's Services that its waypoint never applies", () => {
  let objects: KubeObject[]
  const lost = [
    'E12/VirtualService/bookinfo/ratings-frontend-only',
    'E12/VirtualService/frontend/reviews-for-frontend',
    'E12/VirtualService/istio-system/reviews-retries',
  ]
  beforeAll(async () => {
    objects = await fixture('E12-foreign-virtualservices.yaml')
  })

  it("a client namespace's, the root namespace's and a non-exported VirtualService are lost and block until accepted", () => {
    const {plan} = planOf(objects)
    expect(item(plan, 'VirtualService', 'reviews-for-frontend', 'frontend')).toMatchObject({
      verdict: 'L7',
      action: 'lost-client-side',
      scope: 'client-side',
      services: ['reviews'],
    })
    expect(item(plan, 'VirtualService', 'reviews-retries', 'istio-system')).toMatchObject({
      verdict: 'L7',
      action: 'lost-client-side',
      scope: 'client-side',
      services: ['reviews'],
    })
    expect(item(plan, 'VirtualService', 'ratings-frontend-only')).toMatchObject({
      verdict: 'L7',
      action: 'lost-client-side',
      scope: 'mesh-routing',
      services: ['ratings'],
    })
    expect(item(plan, 'VirtualService', 'reviews-retries', 'istio-system').reasons[0]).toContain(
      'the root namespace istio-system (#58747)',
    )
    expect(blockerIds(plan)).toEqual(lost)
    expect(finding(plan, 'E12/VirtualService/bookinfo/ratings-frontend-only').fix).toContain('Export it to bookinfo')
    // The subsets only a foreign VirtualService uses are no reason for a waypoint of bookinfo.
    expect(item(plan, 'DestinationRule', 'reviews')).toMatchObject({verdict: 'unaffected', action: 'keep'})
    expect(plan.spec.summary.waypointRequired).toBe(false)
  })

  it("even with a waypoint and --routes httproute none of them is converted (none is bookinfo's to convert); accepting all unblocks", () => {
    const l7: KubeObject = {
      apiVersion: 'security.istio.io/v1',
      kind: 'AuthorizationPolicy',
      metadata: {name: 'reviews-get-only', namespace: NS},
      spec: {
        selector: {matchLabels: {app: 'reviews'}},
        action: 'ALLOW',
        rules: [{from: [{source: {namespaces: ['frontend']}}], to: [{operation: {methods: ['GET']}}]}],
      },
    }
    const {plan} = planOf([...objects, l7], {routes: 'httproute', acceptLost: lost})
    expect(plan.spec.summary.waypointRequired).toBe(true)
    expect(stepIds(plan)).not.toContain('swap-routes')
    expect(JSON.stringify(plan.spec.steps)).not.toContain('VirtualService')
    expect(plan.spec.blockers).toEqual([])
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
    expect(meshDefaults.reasons).toContain(
      'spec.host: not used for reviews: the waypoint resolves DestinationRule bookinfo/reviews first (DRs are not merged across namespaces, E13)',
    )
    expect(item(plan, 'DestinationRule', 'reviews')).toMatchObject({verdict: 'inert', action: 'no-effect'})
    expect(item(plan, 'DestinationRule', 'reviews').reasons).toContain(
      'spec.trafficPolicy.tls.mode: ISTIO_MUTUAL: ignored at waypoints and by ztunnel; mesh traffic is HBONE (mTLS) anyway',
    )
  })

  it("a root rule shadowed by the Service namespace's own rule was shadowed for sidecar clients too: nothing is lost, nothing blocks", () => {
    const {plan} = planOf(objects)
    const lb = item(plan, 'DestinationRule', 'reviews-lb', 'istio-system')
    expect(lb).toMatchObject({verdict: 'inert', action: 'keep'})
    expect(
      lb.reasons.some((r) =>
        r.startsWith('spec.host: sidecar clients of bookinfo resolve DestinationRule bookinfo/reviews first too'),
      ),
    ).toBe(true)
    expect(findingIds(plan).filter((id) => id.startsWith('E13/'))).toEqual([])
    expect(plan.spec.blockers).toEqual([])
  })

  it("without bookinfo's own rule the waypoint resolves the root rule, and the plan keeps it", () => {
    const {plan} = planOf(without(objects, 'DestinationRule', 'reviews'))
    expect(item(plan, 'DestinationRule', 'reviews-lb', 'istio-system')).toMatchObject({
      verdict: 'L7',
      action: 'keep',
      services: ['reviews'],
    })
    expect(plan.spec.blockers).toEqual([])
  })

  it("a rule in a client namespace for bookinfo's Service is never used by the waypoint: lost unless accepted", () => {
    const frontend: KubeObject = {
      apiVersion: 'networking.istio.io/v1',
      kind: 'DestinationRule',
      metadata: {name: 'reviews-from-frontend', namespace: 'frontend'},
      spec: {host: 'reviews.bookinfo.svc.cluster.local', trafficPolicy: {loadBalancer: {simple: 'ROUND_ROBIN'}}},
    }
    const {plan} = planOf([...objects, frontend])
    expect(item(plan, 'DestinationRule', 'reviews-from-frontend', 'frontend')).toMatchObject({
      verdict: 'L7',
      action: 'lost-client-side',
    })
    expect(blockerIds(plan)).toEqual(['E13/DestinationRule/frontend/reviews-from-frontend'])
    expect(
      planOf([...objects, frontend], {acceptLost: ['E13/DestinationRule/frontend/reviews-from-frontend']}).plan.spec
        .blockers,
    ).toEqual([])
  })
})

describe('E14 L7 AuthorizationPolicies in the root namespace', () => {
  let objects: KubeObject[]
  // The mesh-wide DENY is copied onto bookinfo's waypoint (issue 10 point 8), so it is no longer "enforced nowhere".
  const hazardIds = [
    'hazard/apply/policy-deny-all/AuthorizationPolicy/istio-system/ratings-read-only/Deployment/ratings-v1/restart-workloads',
  ]
  beforeAll(async () => {
    objects = await fixture('E14-root-namespace-l7-policies.yaml')
  })

  it('are blockers with the manifests the mesh administrator should apply; the L4 root policy is kept', () => {
    const {plan} = planOf(objects)
    expect(item(plan, 'AuthorizationPolicy', 'mesh-no-admin-paths', 'istio-system')).toMatchObject({
      verdict: 'L7',
      action: 'retarget',
      scope: 'mesh',
      ztunnel: 'no-op',
    })
    expect(item(plan, 'AuthorizationPolicy', 'ratings-read-only', 'istio-system')).toMatchObject({
      verdict: 'blocker',
      action: 'blocker',
      scope: 'workload',
      ztunnel: 'deny-all',
    })
    // L4 and kept at ztunnel; keyed on the caller's namespace, so with bookinfo's waypoint planned it is also
    // copied onto the waypoint (E21).
    expect(item(plan, 'AuthorizationPolicy', 'mesh-deny-legacy-namespace', 'istio-system')).toMatchObject({
      verdict: 'L4',
      action: 'keep-verify',
      ztunnel: 'as-written',
    })
    expect(blockerIds(plan)).toEqual(
      [
        'E14/AuthorizationPolicy/istio-system/mesh-no-admin-paths',
        'E14/AuthorizationPolicy/istio-system/ratings-read-only',
        ...hazardIds,
        'retarget-root/AuthorizationPolicy/istio-system/ratings-read-only',
      ].sort(),
    )
    expect(finding(plan, 'E14/AuthorizationPolicy/istio-system/ratings-read-only').code).toBe('RootNamespaceL7Policy')
    expect(finding(plan, 'E14/AuthorizationPolicy/istio-system/mesh-no-admin-paths').code).toBe(
      'RootL7DenyOutsideWaypoint',
    )
    expect(finding(plan, 'retarget-root/AuthorizationPolicy/istio-system/mesh-no-admin-paths').severity).toBe('warning')
    // The mesh-wide DENY goes to every waypoint through the GatewayClass; the root selector policy is carried per
    // namespace (for bookinfo: a Service-targeted copy in bookinfo).
    const mesh = parse(
      finding(plan, 'retarget-root/AuthorizationPolicy/istio-system/mesh-no-admin-paths')
        .fix!.split('\n')
        .slice(1)
        .join('\n')
        .split('---\n')[0]!,
    )
    expect(mesh).toMatchObject({
      metadata: {name: 'mesh-no-admin-paths-waypoint', namespace: 'istio-system'},
      spec: {
        targetRefs: [{group: 'gateway.networking.k8s.io', kind: 'GatewayClass', name: 'istio-waypoint'}],
        action: 'DENY',
      },
    })
    const perNamespace = parse(
      finding(plan, 'retarget-root/AuthorizationPolicy/istio-system/ratings-read-only')
        .fix!.split('\n')
        .slice(1)
        .join('\n'),
    )
    expect(perNamespace).toMatchObject({
      metadata: {name: 'ratings-read-only-waypoint', namespace: 'bookinfo'},
      spec: {
        targetRefs: [{group: '', kind: 'Service', name: 'ratings'}],
        action: 'ALLOW',
        rules: [{to: [{operation: {methods: ['GET', 'HEAD']}}]}],
      },
    })
  })

  it("the plan writes nothing outside bookinfo; for the mesh-wide DENY it plans bookinfo's waypoint and a copy there", () => {
    const {plan} = planOf(objects)
    expect(plan.spec.summary.waypointRequired).toBe(true)
    expect(stepIds(plan)).toEqual([
      'preflight',
      'create-waypoint',
      'wait-waypoint',
      'create-policies',
      'bind-waypoint',
      'enable-ambient',
      'remove-sidecar-injection',
      'restart-workloads',
      'verify-dataplane',
    ])
    expect(opsOf(step(plan, 'create-policies'))).toEqual([
      'apply AuthorizationPolicy/mesh-deny-legacy-namespace-waypoint',
      'apply AuthorizationPolicy/mesh-no-admin-paths-waypoint',
    ])
    expect(applied(step(plan, 'create-policies'), 'mesh-no-admin-paths-waypoint').spec).toEqual({
      targetRefs: [{group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'waypoint'}],
      action: 'DENY',
      rules: [{to: [{operation: {paths: ['/admin', '/admin/*']}}]}],
    })
    const ops = plan.spec.steps.flatMap((s) => s.operations)
    for (const op of ops)
      expect(op.op === 'apply' ? op.object.metadata.namespace : (op.ref.namespace ?? 'bookinfo')).toBe('bookinfo')
  })

  it("--accept-hazard accepts the simulation's hazards, not the E14 blockers", () => {
    const ids = hazardIds.map((h) => h.slice('hazard/'.length))
    const {plan} = planOf(objects, {acceptHazards: ids})
    expect(
      plan.spec.hazards
        .filter((h) => h.accepted)
        .map((h) => h.id)
        .sort(),
    ).toEqual(ids.sort())
    expect(blockerIds(plan)).toEqual([
      'E14/AuthorizationPolicy/istio-system/mesh-no-admin-paths',
      'E14/AuthorizationPolicy/istio-system/ratings-read-only',
      'retarget-root/AuthorizationPolicy/istio-system/ratings-read-only',
    ])
  })
})

describe('E15 a selector-less L7 policy in the namespace', () => {
  it('is split: full rules on the waypoint (Gateway target), the waypoint admitted namespace-wide, the L4 part after the restart', async () => {
    const {plan} = planOf(await fixture('E15-namespace-wide-l7.yaml'))
    expect(item(plan, 'AuthorizationPolicy', 'bookinfo-read-only')).toMatchObject({
      verdict: 'L7',
      action: 'retarget',
      scope: 'namespace',
      ztunnel: 'deny-all',
    })
    const create = step(plan, 'create-policies')
    expect(opsOf(create)).toEqual([
      'apply AuthorizationPolicy/bookinfo-read-only-waypoint',
      'apply AuthorizationPolicy/bookinfo-read-only-ztunnel',
    ])
    const rules = [
      {from: [{source: {namespaces: ['bookinfo', 'istio-ingress']}}], to: [{operation: {methods: ['GET', 'HEAD']}}]},
    ]
    expect(applied(create, 'bookinfo-read-only-waypoint').spec).toEqual({
      targetRefs: [{group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'waypoint'}],
      action: 'ALLOW',
      rules,
    })
    expect(applied(create, 'bookinfo-read-only-ztunnel').spec).toEqual({
      action: 'ALLOW',
      rules: [{from: [{source: {principals: [WAYPOINT_PRINCIPAL]}}]}],
    })
    const del = step(plan, 'delete-sidecar-policies')
    expect(opsOf(del)).toEqual([
      'apply AuthorizationPolicy/bookinfo-read-only-l4',
      'delete AuthorizationPolicy/bookinfo-read-only',
    ])
    expect(applied(del, 'bookinfo-read-only-l4').spec).toEqual({
      action: 'ALLOW',
      rules: [{from: [{source: {namespaces: ['bookinfo', 'istio-ingress']}}]}],
    })
    expect(del.undo.operations.map(opText)).toEqual([
      'apply AuthorizationPolicy/bookinfo-read-only',
      'delete AuthorizationPolicy/bookinfo-read-only-l4',
    ])
    expect(stepIds(plan).indexOf('restart-workloads')).toBe(stepIds(plan).indexOf('delete-sidecar-policies') - 1)
    // Only the documented windows: the restart windows of apply and rollback, sidecar callers bypassing the waypoint.
    expect(plan.spec.hazards.map((h) => h.window)).toEqual(['restart', 'rollback-restart', 'sidecar-callers'])
    expect(plan.spec.blockers).toEqual([])
  })
})

describe('E16 CUSTOM, AUDIT and dry-run policies', () => {
  let objects: KubeObject[]
  beforeAll(async () => {
    objects = await fixture('E16-custom-audit-dry-run.yaml')
  })

  it('CUSTOM and AUDIT are carried to the waypoint (provider included) before the restart and deleted after it', () => {
    const {plan} = planOf(objects, {istioVersion: '1.29'})
    expect(item(plan, 'AuthorizationPolicy', 'productpage-ext-authz')).toMatchObject({
      verdict: 'L7',
      action: 'retarget',
      ztunnel: 'ignored',
    })
    expect(finding(plan, 'E16/AuthorizationPolicy/bookinfo/productpage-ext-authz/custom')).toMatchObject({
      code: 'CustomAuthorizationStops',
      severity: 'error',
    })
    expect(finding(plan, 'E16/AuthorizationPolicy/bookinfo/details-audit-writes/audit')).toMatchObject({
      code: 'AuditPolicyStops',
      severity: 'warning',
    })
    expect(
      finding(plan, 'retarget/AuthorizationPolicy/bookinfo/productpage-ext-authz/custom-provider').message,
    ).toContain('reachable from bookinfo/waypoint')
    const create = step(plan, 'create-policies')
    expect(applied(create, 'productpage-ext-authz-waypoint').spec).toEqual({
      targetRefs: [{group: '', kind: 'Service', name: 'productpage'}],
      action: 'CUSTOM',
      provider: {name: 'oauth2-proxy'},
      rules: [{to: [{operation: {paths: ['/productpage', '/api/*']}}]}],
    })
    expect(applied(create, 'details-audit-writes-waypoint').spec).toMatchObject({
      targetRefs: [{group: '', kind: 'Service', name: 'details'}],
      action: 'AUDIT',
    })
    expect(opsOf(step(plan, 'delete-sidecar-policies'))).toEqual([
      'delete AuthorizationPolicy/details-audit-writes',
      'delete AuthorizationPolicy/details-lockdown-trial',
      'delete AuthorizationPolicy/productpage-ext-authz',
    ])
  })

  it('Istio 1.28: ztunnel would enforce the dry-run policy — a blocker', () => {
    const {plan} = planOf(objects, {istioVersion: '1.28'})
    expect(item(plan, 'AuthorizationPolicy', 'details-lockdown-trial')).toMatchObject({
      verdict: 'blocker',
      action: 'blocker',
    })
    expect(blockerIds(plan)).toEqual(['E16/AuthorizationPolicy/bookinfo/details-lockdown-trial/dry-run'])
    expect(finding(plan, 'E16/AuthorizationPolicy/bookinfo/details-lockdown-trial/dry-run').message).toContain(
      'ztunnel on Istio 1.28 ignores istio.io/dry-run and enforces it',
    )
    expect(JSON.stringify(plan.spec.steps)).not.toContain('details-lockdown-trial')
  })

  it('Istio 1.29: not sent to ztunnel — a warning; the waypoint copy keeps the dry-run annotation', () => {
    const {plan} = planOf(objects, {istioVersion: '1.29'})
    expect(item(plan, 'AuthorizationPolicy', 'details-lockdown-trial')).toMatchObject({
      verdict: 'inert',
      action: 'no-effect',
    })
    expect(finding(plan, 'E16/AuthorizationPolicy/bookinfo/details-lockdown-trial/dry-run')).toMatchObject({
      code: 'DryRunPolicyAtZtunnel',
      severity: 'warning',
    })
    const copy = applied(step(plan, 'create-policies'), 'details-lockdown-trial-waypoint')
    expect(copy.metadata.annotations?.['istio.io/dry-run']).toBe('true')
    expect(copy.spec).toEqual({
      targetRefs: [{group: '', kind: 'Service', name: 'details'}],
      action: 'DENY',
      rules: [{from: [{source: {notNamespaces: ['bookinfo']}}]}],
    })
    expect(plan.spec.blockers).toEqual([])
  })

  it('unknown Istio version: the dry-run policy needs a person', () => {
    const {plan} = planOf(objects)
    expect(item(plan, 'AuthorizationPolicy', 'details-lockdown-trial')).toMatchObject({
      verdict: 'blocker',
      action: 'manual',
    })
    expect(blockerIds(plan)).toEqual(['E16/AuthorizationPolicy/bookinfo/details-lockdown-trial/dry-run'])
    expect(finding(plan, 'E16/AuthorizationPolicy/bookinfo/details-lockdown-trial/dry-run').message).toContain(
      'the Istio version is unknown',
    )
  })
})

describe('E18 PeerAuthentication', () => {
  let objects: KubeObject[]
  beforeAll(async () => {
    objects = await fixture('E18-peer-authentication.yaml')
  })

  it('DISABLE in force for a workload is a blocker; STRICT is kept and names the scraped workload', () => {
    const {plan} = planOf(objects)
    expect(item(plan, 'PeerAuthentication', 'legacy-plaintext')).toMatchObject({verdict: 'blocker', action: 'blocker'})
    expect(blockerIds(plan)).toEqual(['E18/PeerAuthentication/bookinfo/legacy-plaintext/disable'])
    expect(finding(plan, 'E18/PeerAuthentication/bookinfo/legacy-plaintext/disable').message).toContain(
      'mTLS mode DISABLE for legacy-billing',
    )
    expect(item(plan, 'PeerAuthentication', 'default')).toMatchObject({verdict: 'L4', action: 'keep'})
    const strict = finding(plan, 'E18/PeerAuthentication/bookinfo/default/strict')
    expect(strict).toMatchObject({code: 'StrictRejectsOutOfMeshCallers', severity: 'warning'})
    expect(strict.message).toContain('Workloads annotated prometheus.io/scrape=true: reviews-v1.')
    expect(strict.fix).toContain('portLevelMtls {<port>: {mode: PERMISSIVE}}')
  })

  it('workload-selector portLevelMtls PERMISSIVE is kept (ztunnel honours it); no PeerAuthentication is ever deleted', () => {
    const {plan} = planOf(without(objects, 'PeerAuthentication', 'legacy-plaintext'))
    expect(plan.spec.blockers).toEqual([])
    expect(item(plan, 'PeerAuthentication', 'ratings-metrics').reasons).toContain(
      'spec.portLevelMtls[9090].mode: PERMISSIVE: honoured by ztunnel (workload-selector policy outside the root namespace; merged with the STRICT parent since 1.25)',
    )
    expect(JSON.stringify(plan.spec.steps)).not.toContain('PeerAuthentication')
  })
})

describe('E19 Service ports without a declared protocol behind a waypoint', () => {
  let objects: KubeObject[]
  beforeAll(async () => {
    objects = await fixture('E19-unnamed-ports.yaml')
  })

  it('block the plan once the namespace gets a waypoint (the waypoint would sniff them), until named or accepted; declared ports do not', () => {
    const {plan} = planOf(objects)
    expect(plan.spec.summary.waypointRequired).toBe(true)
    expect(finding(plan, 'IST0118/bookinfo/reviews/9080')).toMatchObject({
      code: 'PortNameNoProtocol',
      severity: 'blocker',
    })
    expect(finding(plan, 'IST0118/bookinfo/reviews-db/5432')).toMatchObject({
      code: 'PortNameNoProtocol',
      severity: 'blocker',
    })
    const accepted = planOf(objects, {acceptHazards: ['IST0118/bookinfo/*']}).plan
    expect(finding(accepted, 'IST0118/bookinfo/reviews/9080')).toMatchObject({severity: 'warning'})
    expect(accepted.spec.blockers.filter((b) => b.code === 'PortNameNoProtocol')).toEqual([])
    expect(finding(plan, 'IST0118/bookinfo/reviews-db/5432').message).toContain('server-first protocols')
    expect(findingIds(plan).filter((id) => id.startsWith('IST0118/'))).toEqual([
      'IST0118/bookinfo/reviews-db/5432',
      'IST0118/bookinfo/reviews/9080',
    ])
    expect(step(plan, 'bind-waypoint').operations).toEqual([
      {op: 'label', ref: nsRef, labels: {'istio.io/use-waypoint': 'waypoint'}},
    ])
  })

  it('are only informational without a waypoint (ztunnel does not sniff)', () => {
    const {plan} = planOf(without(objects, 'AuthorizationPolicy', 'reviews-get-only'))
    expect(plan.spec.summary.waypointRequired).toBe(false)
    expect(finding(plan, 'IST0118/bookinfo/reviews/9080').severity).toBe('info')
    expect(finding(plan, 'IST0118/bookinfo/reviews-db/5432').severity).toBe('info')
  })
})

describe('E21 identity-keyed L4 policies meeting the new waypoint', () => {
  let objects: KubeObject[]
  beforeAll(async () => {
    objects = await fixture('E21-identity-policy-behind-waypoint.yaml')
  })

  it("stay at ztunnel; the waypoint enforces them too (with the caller's identity) and an ALLOW admits the waypoint", () => {
    const {plan} = planOf(objects)
    expect(item(plan, 'AuthorizationPolicy', 'reviews-from-productpage')).toMatchObject({
      verdict: 'L4',
      action: 'keep-verify',
      ztunnel: 'as-written',
    })
    expect(item(plan, 'AuthorizationPolicy', 'details-deny-legacy')).toMatchObject({
      verdict: 'L4',
      action: 'keep-verify',
    })
    expect(finding(plan, 'E21/AuthorizationPolicy/bookinfo/reviews-from-productpage')).toMatchObject({
      code: 'IdentityPolicyBehindWaypoint',
      severity: 'warning',
    })
    const create = step(plan, 'create-policies')
    expect(applied(create, 'reviews-from-productpage-waypoint').spec).toEqual({
      targetRefs: [{group: '', kind: 'Service', name: 'reviews'}],
      action: 'ALLOW',
      rules: [{from: [{source: {principals: ['cluster.local/ns/bookinfo/sa/bookinfo-productpage']}}]}],
    })
    expect(applied(create, 'reviews-from-productpage-ztunnel').spec).toEqual({
      selector: {matchLabels: {app: 'reviews'}},
      action: 'ALLOW',
      rules: [{from: [{source: {principals: [WAYPOINT_PRINCIPAL]}}]}],
    })
    expect(applied(create, 'details-deny-legacy-waypoint').spec).toEqual({
      targetRefs: [{group: '', kind: 'Service', name: 'details'}],
      action: 'DENY',
      rules: [{from: [{source: {namespaces: ['legacy']}}]}],
    })
    expect(opsOf(create)).not.toContain('apply AuthorizationPolicy/details-deny-legacy-ztunnel')
    // The companions are in place before the waypoint is bound, and the originals are never deleted.
    expect(stepIds(plan).indexOf('create-policies')).toBeLessThan(stepIds(plan).indexOf('bind-waypoint'))
    expect(opsOf(step(plan, 'delete-sidecar-policies'))).toEqual([
      'apply AuthorizationPolicy/ratings-get-only-l4',
      'delete AuthorizationPolicy/ratings-get-only',
    ])
    expect(plan.spec.policies.find((p) => p.key === 'AuthorizationPolicy/reviews-from-productpage')).toMatchObject({
      identityKeyed: true,
      companionIn: 'create-policies',
      waypointCopyIn: 'create-policies',
    })
    expect(plan.spec.hazards.filter((h) => h.kind === 'waypoint-identity')).toEqual([])
    expect(plan.spec.blockers).toEqual([])
  })

  it('without a waypoint they are plain L4 policies: kept as they are, nothing created', () => {
    const {plan} = planOf(without(objects, 'AuthorizationPolicy', 'ratings-get-only'))
    expect(plan.spec.summary.waypointRequired).toBe(false)
    expect(item(plan, 'AuthorizationPolicy', 'reviews-from-productpage')).toMatchObject({verdict: 'L4', action: 'keep'})
    expect(stepIds(plan)).toEqual([
      'preflight',
      'enable-ambient',
      'remove-sidecar-injection',
      'restart-workloads',
      'verify-dataplane',
    ])
    expect(findingIds(plan).filter((id) => id.startsWith('E21/'))).toEqual([])
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
    expect(stepIds(plan)).toEqual([
      'preflight',
      'create-policies',
      'enable-ambient',
      'remove-sidecar-injection',
      'restart-workloads',
      'delete-sidecar-policies',
      'verify-dataplane',
    ])
    const create = step(plan, 'create-policies')
    expect(opsOf(create)).toEqual(['apply AuthorizationPolicy/ratings-from-reviews-l4'])
    expect(applied(create, 'ratings-from-reviews-l4').spec).toEqual({
      selector: {matchLabels: {app: 'ratings'}},
      action: 'ALLOW',
      rules: [
        {from: [{source: {serviceAccounts: ['bookinfo/bookinfo-reviews']}}], to: [{operation: {ports: ['9080']}}]},
      ],
    })
    expect(opsOf(step(plan, 'delete-sidecar-policies'))).toEqual(['delete AuthorizationPolicy/ratings-from-reviews'])
    // ztunnel enforces the rewrite exactly: the policy is never degraded or deny-all, before or after the original goes.
    expect(plan.spec.hazards).toEqual([])
    expect(plan.spec.blockers).toEqual([])
    expect(plan.spec.policies).toEqual([
      {
        key: 'AuthorizationPolicy/ratings-from-reviews',
        action: 'ALLOW',
        ztunnel: 'deny-all',
        workloads: ['Deployment/ratings-v1'],
        deletedIn: 'delete-sidecar-policies',
        l4PartIn: 'create-policies',
        rewrittenIn: 'create-policies',
      },
    ])
    expect(timeline(plan).apply.at(-1)!.policies['AuthorizationPolicy/ratings-from-reviews']).toEqual({
      ztunnel: ['Deployment/ratings-v1'],
    })
  })

  it('rewritable, Istio version unknown: rewritten on the assumption of >= 1.25, said as a warning', () => {
    const {plan} = planOf(rewritableOnly)
    expect(finding(plan, 'retarget/AuthorizationPolicy/bookinfo/ratings-from-reviews/e22-version')).toMatchObject({
      code: 'ServiceAccountRewriteAssumesVersion',
      severity: 'warning',
    })
    expect(opsOf(step(plan, 'create-policies'))).toEqual(['apply AuthorizationPolicy/ratings-from-reviews-l4'])
  })

  it('Istio 1.24 (no serviceAccounts at ztunnel): carried to a waypoint instead', () => {
    const {plan} = planOf(rewritableOnly, {istioVersion: '1.24'})
    expect(plan.spec.summary.waypointRequired).toBe(true)
    expect(opsOf(step(plan, 'create-policies'))).toEqual([
      'apply AuthorizationPolicy/ratings-from-reviews-waypoint',
      'apply AuthorizationPolicy/ratings-from-reviews-ztunnel',
    ])
    expect(applied(step(plan, 'create-policies'), 'ratings-from-reviews-waypoint').spec.rules[0].when).toEqual([
      {key: 'source.serviceAccount', values: ['bookinfo/bookinfo-reviews']},
    ])
  })

  it('not rewritable (principals in the same source): carried to the waypoint, with the rewritable one also enforced there (E21)', () => {
    const {plan} = planOf(objects, {istioVersion: '1.28'})
    expect(plan.spec.summary.waypointRequired).toBe(true)
    expect(
      finding(plan, 'retarget/AuthorizationPolicy/bookinfo/details-from-productpage/e22-not-rewritten'),
    ).toMatchObject({code: 'ServiceAccountConditionNotRewritten', severity: 'info'})
    expect(
      finding(plan, 'retarget/AuthorizationPolicy/bookinfo/details-from-productpage/e22-not-rewritten').message,
    ).toContain('serviceAccounts cannot be combined with principals or namespaces in one source')
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
      rules: [
        {
          from: [{source: {principals: ['cluster.local/ns/bookinfo/sa/bookinfo-productpage']}}],
          when: [{key: 'source.serviceAccount', values: ['bookinfo-productpage']}],
        },
      ],
    })
    expect(opsOf(step(plan, 'delete-sidecar-policies'))).toEqual([
      'apply AuthorizationPolicy/details-from-productpage-l4',
      'delete AuthorizationPolicy/details-from-productpage',
      'delete AuthorizationPolicy/ratings-from-reviews',
    ])
    expect(plan.spec.blockers).toEqual([])
  })
})

describe('E23 GitOps-managed namespace, workloads and policies', () => {
  it("every changed object managed elsewhere is reported; created objects carry none of the manager's labels", async () => {
    const {plan} = planOf(await fixture('E23-gitops-managed.yaml'))
    expect(finding(plan, 'E23/Namespace/bookinfo').message).toContain(
      'Argo CD (argocd.argoproj.io/instance=bookinfo-platform)',
    )
    expect(finding(plan, 'E23/Deployment/reviews-v1').message).toContain('Helm (meta.helm.sh/release-name=reviews)')
    expect(finding(plan, 'retarget/AuthorizationPolicy/bookinfo/reviews-get-only/gitops')).toMatchObject({
      code: 'RetargetGitOpsManaged',
      severity: 'warning',
    })
    expect(finding(plan, 'retarget/AuthorizationPolicy/bookinfo/reviews-get-only/gitops').message).toContain(
      'Flux (kustomize.toolkit.fluxcd.io/name=bookinfo-security)',
    )
    expect(workload(plan, 'Deployment', 'reviews-v1').traits).toEqual(['gitops-managed'])
    // A copy with Flux's labels would be pruned (or claimed) by the next sync.
    const create = step(plan, 'create-policies')
    for (const op of create.operations)
      expect((op as Extract<Operation, {op: 'apply'}>).object.metadata.labels).toEqual(MANAGED)
    // The plan still makes the changes live (it does not emit a manifest diff); the findings say to mirror them in Git.
    expect(step(plan, 'enable-ambient').operations).toEqual([
      {op: 'label', ref: nsRef, labels: {'istio.io/dataplane-mode': 'ambient'}},
    ])
  })
})

describe('E24 Sidecar with REGISTRY_ONLY', () => {
  it('is reported as lost egress control and left in place (sidecars coming back on rollback still need it)', async () => {
    const {plan} = planOf(await fixture('E24-sidecar-registry-only.yaml'))
    expect(item(plan, 'Sidecar', 'default')).toMatchObject({verdict: 'inert', action: 'no-effect', scope: 'namespace'})
    expect(item(plan, 'Sidecar', 'default').reasons).toContain(
      'spec.outboundTrafficPolicy.mode: REGISTRY_ONLY: lost — ztunnel passes traffic to destinations outside the registry (it implements no outboundTrafficPolicy)',
    )
    expect(finding(plan, 'E24/Sidecar/bookinfo/default')).toMatchObject({
      code: 'SidecarEgressControlLost',
      severity: 'warning',
    })
    expect(finding(plan, 'E24/Sidecar/bookinfo/default').message).toContain(
      'egress host isolation, REGISTRY_ONLY outbound policy',
    )
    expect(JSON.stringify(plan.spec.steps)).not.toContain('"Sidecar"')
    expect(plan.spec.blockers).toEqual([])
  })
})

describe("the waypoint's ALLOW set (DOMAIN §3.1)", () => {
  let objects: KubeObject[]
  beforeAll(async () => {
    objects = await fixture('waypoint-allow-set.yaml')
  })

  it('an L4 ALLOW for pods behind a Service that gets a waypoint ALLOW is copied to the waypoint too; the original stays', () => {
    const {plan} = planOf(objects)
    const create = step(plan, 'create-policies')
    expect(opsOf(create)).toEqual([
      'apply AuthorizationPolicy/ratings-from-monitoring-waypoint',
      'apply AuthorizationPolicy/ratings-get-only-waypoint',
      'apply AuthorizationPolicy/ratings-get-only-ztunnel',
    ])
    expect(applied(create, 'ratings-from-monitoring-waypoint').spec).toEqual({
      targetRefs: [{group: '', kind: 'Service', name: 'ratings'}],
      action: 'ALLOW',
      rules: [{to: [{operation: {ports: ['9090']}}]}],
    })
    expect(create.preconditions).toContainEqual(
      expect.objectContaining({
        check: 'object-unchanged',
        ref: ref('security.istio.io/v1', 'AuthorizationPolicy', 'ratings-from-monitoring'),
      }),
    )
    // Nothing for reviews (the waypoint enforces no ALLOW for it) or for the ALLOW that admits nothing; no original of them is deleted.
    expect(namedAnywhere(plan)).not.toContain('reviews-port-only-waypoint')
    expect(namedAnywhere(plan)).not.toContain('ratings-allow-nothing-waypoint')
    expect(opsOf(step(plan, 'delete-sidecar-policies'))).toEqual([
      'apply AuthorizationPolicy/ratings-get-only-l4',
      'delete AuthorizationPolicy/ratings-get-only',
    ])
    expect(
      finding(plan, 'retarget/AuthorizationPolicy/bookinfo/ratings-from-monitoring/waypoint-allow-set'),
    ).toMatchObject({code: 'WaypointAllowSetCopy', severity: 'info'})
    expect(
      finding(plan, 'retarget/AuthorizationPolicy/bookinfo/ratings-from-monitoring/waypoint-allow-set').message,
    ).toContain('enforces ALLOW ratings-get-only-waypoint for Service ratings')
    expect(plan.spec.policies.find((p) => p.key === 'AuthorizationPolicy/ratings-from-monitoring')).toEqual({
      key: 'AuthorizationPolicy/ratings-from-monitoring',
      action: 'ALLOW',
      ztunnel: 'as-written',
      workloads: ['Deployment/ratings-v1'],
      waypointCopyIn: 'create-policies',
      waypointAllowFor: ['Deployment/ratings-v1'],
    })
    expect(plan.spec.policies.find((p) => p.key === 'AuthorizationPolicy/ratings-allow-nothing')).toMatchObject({
      allowsNothing: true,
    })
    expect(plan.spec.hazards.filter((h) => h.kind === 'waypoint-allow-gap')).toEqual([])
    expect(plan.spec.blockers).toEqual([])
  })

  it('the simulation flags an ALLOW the waypoint set lacks: from bind-waypoint on, the waypoint denies what only it allows', () => {
    const {plan} = planOf(objects)
    const policies = plan.spec.policies.map((p) => {
      if (p.key !== 'AuthorizationPolicy/ratings-from-monitoring') return p
      const {waypointCopyIn: _w, waypointAllowFor: _f, ...rest} = p
      return rest
    })
    const sim = simulate({
      namespace: NS,
      workloads: plan.spec.workloads,
      steps: plan.spec.steps,
      policies,
      ambientAtStart: false,
    })
    const gaps = unexpectedHazards(sim).filter((h) => h.kind === 'waypoint-allow-gap')
    expect(
      gaps.map((h) => ({phase: h.phase, from: h.from, until: h.until, policy: h.policy, workloads: h.workloads})),
    ).toEqual([
      {
        phase: 'apply',
        from: 'bind-waypoint',
        until: 'end',
        policy: 'AuthorizationPolicy/ratings-from-monitoring',
        workloads: ['Deployment/ratings-v1'],
      },
    ])
    expect(gaps[0]!.message).toContain('the waypoint enforces other ALLOW policies for their Services and not this one')
    expect(sim.apply.find((b) => b.after === 'create-policies')!.waypointAllowGaps).toBeUndefined()
    // The plan's own timeline (with the copy) has no gap at any boundary.
    expect([...timeline(plan).apply, ...timeline(plan).rollback].filter((b) => b.waypointAllowGaps)).toEqual([])
  })

  it("a targetRefs ALLOW that exists already makes its Service's ALLOWs need a copy as well", () => {
    const existing: KubeObject = {
      apiVersion: 'security.istio.io/v1',
      kind: 'AuthorizationPolicy',
      metadata: {name: 'reviews-at-waypoint', namespace: NS},
      spec: {
        targetRefs: [{group: '', kind: 'Service', name: 'reviews'}],
        action: 'ALLOW',
        rules: [{to: [{operation: {methods: ['GET']}}]}],
      },
    }
    const {plan} = planOf([...objects, existing])
    expect(applied(step(plan, 'create-policies'), 'reviews-port-only-waypoint').spec).toEqual({
      targetRefs: [{group: '', kind: 'Service', name: 'reviews'}],
      action: 'ALLOW',
      rules: [{to: [{operation: {ports: ['9080']}}]}],
    })
    expect(
      finding(plan, 'retarget/AuthorizationPolicy/bookinfo/reviews-port-only/waypoint-allow-set').message,
    ).toContain('enforces ALLOW reviews-at-waypoint for Service reviews')
    expect(plan.spec.policies.find((p) => p.key === 'AuthorizationPolicy/reviews-at-waypoint')).toEqual({
      key: 'AuthorizationPolicy/reviews-at-waypoint',
      action: 'ALLOW',
      ztunnel: 'ignored',
      workloads: [],
      waypointAllowFor: ['Deployment/reviews-v1'],
    })
    expect(plan.spec.blockers).toEqual([])
  })
})

describe('bind-waypoint: what the namespace label binds (DOMAIN §1.5, §1.4, §1.8)', () => {
  let objects: KubeObject[]
  beforeAll(async () => {
    objects = await fixture('bind-waypoint.yaml')
  })
  const gateway = (labels: Record<string, string>): KubeObject => ({
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'Gateway',
    metadata: {name: 'waypoint', namespace: NS, labels},
    spec: {gatewayClassName: 'istio-waypoint', listeners: [{name: 'mesh', port: 15008, protocol: 'HBONE'}]},
  })

  it('removes istio.io/use-waypoint-namespace with the label it sets, and undo restores both exactly', () => {
    const {plan} = planOf(objects)
    const bind = step(plan, 'bind-waypoint')
    expect(bind.preconditions).toContainEqual({
      check: 'namespace-labels',
      labels: {'istio.io/use-waypoint': null, 'istio.io/use-waypoint-namespace': 'shared-waypoints'},
    })
    expect(bind.operations).toEqual([
      {op: 'label', ref: nsRef, labels: {'istio.io/use-waypoint': 'waypoint', 'istio.io/use-waypoint-namespace': null}},
    ])
    expect(bind.verify).toContainEqual({
      check: 'namespace-labels',
      labels: {'istio.io/use-waypoint': 'waypoint', 'istio.io/use-waypoint-namespace': null},
    })
    expect(bind.undo.operations).toEqual([
      {
        op: 'label',
        ref: nsRef,
        labels: {'istio.io/use-waypoint': null, 'istio.io/use-waypoint-namespace': 'shared-waypoints'},
      },
    ])
    expect(bind.undo.description).toBe(
      'Restore no istio.io/use-waypoint, istio.io/use-waypoint-namespace=shared-waypoints.',
    )
  })

  it('without istio.io/use-waypoint-namespace on the namespace, only istio.io/use-waypoint changes (and must still be absent)', () => {
    const {plan} = planOf(relabel(objects, 'Namespace', NS, {'istio-injection': 'enabled'}))
    const bind = step(plan, 'bind-waypoint')
    expect(bind.preconditions).toContainEqual({
      check: 'namespace-labels',
      labels: {'istio.io/use-waypoint': null, 'istio.io/use-waypoint-namespace': null},
    })
    expect(bind.operations).toEqual([{op: 'label', ref: nsRef, labels: {'istio.io/use-waypoint': 'waypoint'}}])
    expect(bind.undo.operations).toEqual([{op: 'label', ref: nsRef, labels: {'istio.io/use-waypoint': null}}])
  })

  it('Services with an istio.io/use-waypoint of their own are reported and not claimed as bound; one naming this waypoint is', () => {
    const {plan} = planOf(objects)
    expect(finding(plan, 'bind-waypoint/service-label/bookinfo/reviews')).toMatchObject({
      code: 'ServiceUsesOwnWaypoint',
      severity: 'warning',
      ref: ref('v1', 'Service', 'reviews'),
    })
    expect(finding(plan, 'bind-waypoint/service-label/bookinfo/reviews').message).toContain('it uses no waypoint')
    expect(finding(plan, 'bind-waypoint/service-label/bookinfo/details').message).toContain(
      'it stays on bookinfo/team-waypoint',
    )
    expect(findingIds(plan)).not.toContain('bind-waypoint/service-label/bookinfo/productpage')
    const bind = step(plan, 'bind-waypoint')
    expect(bind.description).toContain(
      '(productpage, ratings), except details, reviews, which carry istio.io/use-waypoint of their own',
    )
    expect(step(plan, 'verify-dataplane').verify).toContainEqual({
      check: 'waypoint-bound',
      ref: ref('gateway.networking.k8s.io/v1', 'Gateway', 'waypoint'),
      services: ['productpage', 'ratings'],
    })
    expect(plan.spec.blockers).toEqual([])
  })

  it('readiness gate: bind-waypoint and delete-sidecar-policies re-check that the waypoint is ready; bind-waypoint verifies exactly the Services it binds', () => {
    const {plan} = planOf(objects)
    const waypointRef = ref('gateway.networking.k8s.io/v1', 'Gateway', 'waypoint')
    const bind = step(plan, 'bind-waypoint')
    expect(bind.preconditions).toContainEqual({check: 'waypoint-ready', ref: waypointRef})
    expect(bind.verify).toContainEqual({
      check: 'waypoint-bound',
      ref: waypointRef,
      services: ['productpage', 'ratings'],
    })
    expect(step(plan, 'delete-sidecar-policies').preconditions).toContainEqual({
      check: 'waypoint-ready',
      ref: waypointRef,
    })
  })

  it('readiness gate: headless and ExternalName Services are not among what bind-waypoint verifies; without a waypoint nothing waits for one', async () => {
    const external: KubeObject = {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: {name: 'legacy', namespace: NS},
      spec: {type: 'ExternalName', externalName: 'legacy.example.com'},
    }
    const {plan} = planOf([...(await fixture('E9-statefulset-headless.yaml')), external])
    expect(step(plan, 'bind-waypoint').verify).toContainEqual({
      check: 'waypoint-bound',
      ref: ref('gateway.networking.k8s.io/v1', 'Gateway', 'waypoint'),
      services: ['kafka'],
    })
    const noWaypoint = planOf(
      without(await fixture('E22-source-service-account.yaml'), 'AuthorizationPolicy', 'details-from-productpage'),
      {istioVersion: '1.28'},
    ).plan
    expect(noWaypoint.spec.steps.flatMap((s) => s.preconditions).filter((p) => p.check === 'waypoint-ready')).toEqual(
      [],
    )
  })

  it('a policy carried to a Service bound to a waypoint that does not exist blocks; to one that exists, it is carried there', () => {
    const detailsL7: KubeObject = {
      apiVersion: 'security.istio.io/v1',
      kind: 'AuthorizationPolicy',
      metadata: {name: 'details-get-only', namespace: NS},
      spec: {
        selector: {matchLabels: {app: 'details'}},
        action: 'ALLOW',
        rules: [{to: [{operation: {methods: ['GET']}}]}],
      },
    }
    const {plan} = planOf([...objects, detailsL7])
    expect(finding(plan, 'bind-waypoint/service-label/bookinfo/details')).toMatchObject({
      code: 'ServiceUsesOwnWaypoint',
      severity: 'blocker',
    })
    // team-waypoint does not exist: istiod binds details to nothing (waypoints.go fetchWaypointForTarget,
    // WaypointIsNotReady), so the Service-targeted copy never applies (issue 21 point 2).
    expect(finding(plan, 'bind-waypoint/service-label/bookinfo/details').message).toContain(
      'no such waypoint Gateway was found, and istiod binds nothing to a waypoint that does not exist), and details-get-only-waypoint attached to it would never apply',
    )
    // Once team-waypoint exists, the copy targeting the Service applies there (pilot/pkg/model/policyattachment.go):
    // no blocker, and the companion admits that waypoint as well as the plan's.
    const team: KubeObject = {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'Gateway',
      metadata: {name: 'team-waypoint', namespace: NS},
      spec: {gatewayClassName: 'istio-waypoint', listeners: [{name: 'mesh', port: 15008, protocol: 'HBONE'}]},
    }
    const withTeam = planOf([...objects, detailsL7, team]).plan
    expect(finding(withTeam, 'bind-waypoint/service-label/bookinfo/details').severity).toBe('warning')
    const companion = withTeam.spec.steps
      .find((s) => s.id === 'create-policies')!
      .operations.find((o) => o.op === 'apply' && o.object.metadata.name === 'details-get-only-ztunnel')
    expect(companion?.op === 'apply' && companion.object.spec.rules[0].from[0].source.principals).toEqual([
      'cluster.local/ns/bookinfo/sa/waypoint',
      'cluster.local/ns/bookinfo/sa/team-waypoint',
    ])
  })

  it('an existing waypoint that serves no Service traffic blocks, with the label to fix', () => {
    const {plan} = planOf([...objects, gateway({'istio.io/waypoint-for': 'workload'})])
    expect(stepIds(plan)).not.toContain('create-waypoint')
    expect(finding(plan, 'existing-waypoint/waypoint-for/bookinfo/waypoint')).toMatchObject({
      code: 'ExistingWaypointTrafficType',
      severity: 'blocker',
    })
    expect(finding(plan, 'existing-waypoint/waypoint-for/bookinfo/waypoint').fix).toContain(
      'kubectl label gateway waypoint -n bookinfo istio.io/waypoint-for=service --overwrite',
    )
    // service, all, or no label (istiod's default is service) are fine.
    for (const labels of [{'istio.io/waypoint-for': 'service'}, {'istio.io/waypoint-for': 'all'}, {}] as Record<
      string,
      string
    >[]) {
      expect(
        findingIds(planOf([...objects, gateway(labels)]).plan).filter((id) => id.startsWith('existing-waypoint/')),
      ).toEqual([])
    }
  })

  it('an existing waypoint in a revision-labelled namespace must carry that revision itself', () => {
    const revisioned = relabel(objects, 'Namespace', NS, {'istio.io/rev': 'canary'})
    const unlabelled = planOf([...revisioned, gateway({'istio.io/waypoint-for': 'service'})]).plan
    expect(finding(unlabelled, 'existing-waypoint/revision/bookinfo/waypoint')).toMatchObject({
      code: 'ExistingWaypointRevision',
      severity: 'blocker',
    })
    expect(finding(unlabelled, 'existing-waypoint/revision/bookinfo/waypoint').message).toContain(
      'remove-sidecar-injection removes',
    )
    expect(finding(unlabelled, 'existing-waypoint/revision/bookinfo/waypoint').fix).toContain(
      'kubectl label gateway waypoint -n bookinfo istio.io/rev=canary --overwrite',
    )
    const other = planOf([...revisioned, gateway({'istio.io/waypoint-for': 'service', 'istio.io/rev': 'stable'})]).plan
    expect(finding(other, 'existing-waypoint/revision/bookinfo/waypoint').message).toContain(
      "labelled istio.io/rev=stable, but the namespace's revision is canary",
    )
    const same = planOf([...revisioned, gateway({'istio.io/waypoint-for': 'service', 'istio.io/rev': 'canary'})]).plan
    expect(findingIds(same).filter((id) => id.startsWith('existing-waypoint/'))).toEqual([])
  })
})

describe('E25 NetworkPolicies written for sidecar mode', () => {
  let objects: KubeObject[]
  beforeAll(async () => {
    objects = await fixture('E25-network-policies.yaml')
  })

  it('before anything else, adds NetworkPolicies admitting HBONE from the same peers and kubelet probes from 169.254.7.127', () => {
    const {plan} = planOf(objects)
    expect(stepIds(plan)).toEqual([
      'preflight',
      'patch-network-policies',
      'enable-ambient',
      'remove-sidecar-injection',
      'restart-workloads',
      'verify-dataplane',
    ])
    const s = step(plan, 'patch-network-policies')
    expect(opsOf(s)).toEqual([
      'apply NetworkPolicy/default-deny-ambient',
      'apply NetworkPolicy/ratings-from-bookinfo-ambient',
      'apply NetworkPolicy/reviews-from-productpage-ambient',
    ])
    const probe = {from: [{ipBlock: {cidr: '169.254.7.127/32'}}], ports: [{protocol: 'TCP', port: 9080}]}
    expect(applied(s, 'reviews-from-productpage-ambient').spec).toEqual({
      podSelector: {matchLabels: {app: 'reviews'}},
      policyTypes: ['Ingress'],
      ingress: [{from: [{podSelector: {matchLabels: {app: 'productpage'}}}], ports: [{protocol: 'TCP', port: 15008}]}],
    })
    expect(applied(s, 'ratings-from-bookinfo-ambient').spec).toEqual({
      podSelector: {matchLabels: {app: 'ratings'}},
      policyTypes: ['Ingress'],
      ingress: [probe],
    })
    expect(applied(s, 'default-deny-ambient').spec).toEqual({
      podSelector: {},
      policyTypes: ['Ingress'],
      ingress: [probe],
    })
    expect(applied(s, 'default-deny-ambient').metadata).toEqual({
      name: 'default-deny-ambient',
      namespace: NS,
      labels: MANAGED,
      annotations: {'mesh-migrate.io/complements': 'default-deny', 'mesh-migrate.io/plan': NS},
    })
    expect(s.preconditions.map((p) => p.check)).toEqual([
      'object-absent-or-ours',
      'object-absent-or-ours',
      'object-absent-or-ours',
    ])
    expect(s.undo.operations.map(opText)).toEqual([
      'delete NetworkPolicy/default-deny-ambient',
      'delete NetworkPolicy/ratings-from-bookinfo-ambient',
      'delete NetworkPolicy/reviews-from-productpage-ambient',
    ])
    // The originals are never changed.
    expect(JSON.stringify(s.operations)).not.toContain('"name":"reviews-from-productpage"')
  })

  it('without NetworkPolicies there is no such step', () => {
    const {plan} = planOf(objects.filter((o) => o.kind !== 'NetworkPolicy'))
    expect(stepIds(plan)).not.toContain('patch-network-policies')
  })

  it("with a waypoint: the pods behind it admit the waypoint's pods on 15008, and the waypoint's own pods (selected by default-deny) admit the callers on 15008", async () => {
    const {plan} = planOf(await fixture('E25-network-policies.yaml', 'E25-waypoint.yaml'))
    expect(plan.spec.summary.waypointRequired).toBe(true)
    const s = step(plan, 'patch-network-policies')
    expect(opsOf(s)).toEqual([
      'apply NetworkPolicy/default-deny-ambient',
      'apply NetworkPolicy/ratings-from-bookinfo-ambient',
      'apply NetworkPolicy/reviews-from-productpage-ambient',
      'apply NetworkPolicy/waypoint-waypoint-ambient',
    ])
    const fromWaypoint = {
      from: [{podSelector: {matchLabels: {'gateway.networking.k8s.io/gateway-name': 'waypoint'}}}],
      ports: [{protocol: 'TCP', port: 15008}],
    }
    expect(applied(s, 'reviews-from-productpage-ambient').spec.ingress).toEqual([
      {from: [{podSelector: {matchLabels: {app: 'productpage'}}}], ports: [{protocol: 'TCP', port: 15008}]},
      fromWaypoint,
    ])
    // ratings-from-bookinfo admits bookinfo's pods on 15008 already, the waypoint's included.
    expect(applied(s, 'ratings-from-bookinfo-ambient').spec.ingress).not.toContainEqual(fromWaypoint)
    expect(applied(s, 'waypoint-waypoint-ambient')).toEqual({
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: {
        name: 'waypoint-waypoint-ambient',
        namespace: NS,
        labels: MANAGED,
        annotations: {'mesh-migrate.io/complements': 'default-deny', 'mesh-migrate.io/plan': NS},
      },
      spec: {
        podSelector: {matchLabels: {'gateway.networking.k8s.io/gateway-name': 'waypoint'}},
        policyTypes: ['Ingress'],
        ingress: [
          {
            from: [
              {namespaceSelector: {matchLabels: {'kubernetes.io/metadata.name': 'bookinfo'}}},
              {podSelector: {matchLabels: {app: 'productpage'}}},
            ],
            ports: [{protocol: 'TCP', port: 15008}],
          },
        ],
      },
    })
    expect(s.description).toContain("default-deny selects the waypoint's own pods")
    expect(s.undo.operations.map(opText)).toContain('delete NetworkPolicy/waypoint-waypoint-ambient')
    expect(finding(plan, 'E25/waypoint-peer/bookinfo')).toMatchObject({
      code: 'NetworkPolicySeesWaypoint',
      severity: 'warning',
    })
    expect(stepIds(plan).indexOf('patch-network-policies')).toBeLessThan(stepIds(plan).indexOf('create-waypoint'))
  })

  it("with a waypoint, a rule admitting every source needs no waypoint rule, and the waypoint's pods then admit every source on 15008", async () => {
    const objs = (await fixture('E25-network-policies.yaml', 'E25-waypoint.yaml')).map((o) =>
      o.kind === 'NetworkPolicy' && o.metadata.name === 'reviews-from-productpage'
        ? {...o, spec: {...o.spec, ingress: [{ports: [{protocol: 'TCP', port: 9080}]}]}}
        : o,
    )
    const s = step(planOf(objs).plan, 'patch-network-policies')
    expect(applied(s, 'reviews-from-productpage-ambient').spec.ingress).toEqual([
      {ports: [{protocol: 'TCP', port: 15008}]},
    ])
    expect(applied(s, 'waypoint-waypoint-ambient').spec.ingress).toEqual([{ports: [{protocol: 'TCP', port: 15008}]}])
  })

  it('with a waypoint and no policy selecting its pods, only the pods behind it need the waypoint admitted', async () => {
    const objs = (await fixture('E25-network-policies.yaml', 'E25-waypoint.yaml')).filter(
      (o) => !(o.kind === 'NetworkPolicy' && o.metadata.name === 'default-deny'),
    )
    const {plan} = planOf(objs)
    const s = step(plan, 'patch-network-policies')
    expect(opsOf(s)).not.toContain('apply NetworkPolicy/waypoint-waypoint-ambient')
    expect(applied(s, 'reviews-from-productpage-ambient').spec.ingress).toContainEqual({
      from: [{podSelector: {matchLabels: {'gateway.networking.k8s.io/gateway-name': 'waypoint'}}}],
      ports: [{protocol: 'TCP', port: 15008}],
    })
  })
})

describe('E26 a VirtualService and an HTTPRoute for the same Service', () => {
  let objects: KubeObject[]
  beforeAll(async () => {
    objects = await fixture('E26-virtualservice-and-httproute.yaml')
  })

  it('the mix is reported; with --routes virtualservice the plan keeps the VirtualService for the waypoint', () => {
    const {plan} = planOf(objects)
    expect(finding(plan, 'E26/HTTPRoute/bookinfo/reviews-mirror')).toMatchObject({
      code: 'VirtualServiceAndRouteForSameHost',
      severity: 'warning',
    })
    expect(item(plan, 'HTTPRoute', 'reviews-mirror')).toMatchObject({
      verdict: 'L7',
      action: 'keep',
      services: ['reviews'],
    })
    expect(item(plan, 'VirtualService', 'reviews')).toMatchObject({verdict: 'L7', action: 'retarget'})
    expect(stepIds(plan)).not.toContain('swap-routes')
  })

  it('--routes httproute: per-version Services and the HTTPRoute are created in the step that deletes the VirtualService, after the waypoint is bound', () => {
    const {plan} = planOf(objects, {routes: 'httproute'})
    const ids = stepIds(plan)
    expect(ids.slice(ids.indexOf('bind-waypoint'), ids.indexOf('enable-ambient') + 1)).toEqual([
      'bind-waypoint',
      'swap-routes',
      'enable-ambient',
    ])
    const swap = step(plan, 'swap-routes')
    expect(opsOf(swap)).toEqual([
      'apply Service/reviews-v1',
      'apply Service/reviews-v2',
      'apply HTTPRoute/reviews',
      'delete VirtualService/reviews',
    ])
    expect(applied(swap, 'reviews').spec).toEqual({
      parentRefs: [{group: '', kind: 'Service', name: 'reviews', port: 9080}],
      rules: [
        {
          matches: [{headers: [{type: 'Exact', name: 'end-user', value: 'jason'}]}],
          backendRefs: [{name: 'reviews-v2', port: 9080, weight: 1}],
        },
        {backendRefs: [{name: 'reviews-v1', port: 9080, weight: 1}]},
      ],
    })
    expect(applied(swap, 'reviews-v2').spec).toEqual({
      selector: {app: 'reviews', version: 'v2'},
      ports: [{name: 'http', port: 9080}],
    })
    expect(swap.verify).toEqual([
      {
        check: 'objects-present',
        refs: [
          ref('v1', 'Service', 'reviews-v1'),
          ref('v1', 'Service', 'reviews-v2'),
          ref('gateway.networking.k8s.io/v1', 'HTTPRoute', 'reviews'),
        ],
      },
      {check: 'objects-absent', refs: [ref('networking.istio.io/v1', 'VirtualService', 'reviews')]},
    ])
    expect(swap.undo.operations.map(opText)).toEqual([
      'apply VirtualService/reviews',
      'delete Service/reviews-v1',
      'delete Service/reviews-v2',
      'delete HTTPRoute/reviews',
    ])
    // The existing route is left alone: two HTTPRoutes for one parent merge by Gateway API precedence.
    expect(namedAnywhere(plan)).not.toContain('reviews-mirror')
  })
})

describe('E27 gRPC services relying on per-request balancing', () => {
  let objects: KubeObject[]
  beforeAll(async () => {
    objects = await fixture('E27-grpc-per-request-balancing.yaml')
  })

  it('without a waypoint: a warning that ztunnel balances per connection (no waypoint is deployed for balancing alone)', () => {
    const {plan} = planOf(objects)
    expect(plan.spec.summary.waypointRequired).toBe(false)
    expect(finding(plan, 'E27/bookinfo/ratings-grpc')).toMatchObject({
      code: 'PerConnectionBalancing',
      severity: 'warning',
    })
    expect(finding(plan, 'E27/bookinfo/ratings-grpc').message).toContain('9090 (GRPC)')
    expect(finding(plan, 'E27/bookinfo/ratings-grpc').message).not.toContain('9091')
  })

  it('with a waypoint in front: informational (the waypoint balances requests again)', () => {
    const l7: KubeObject = {
      apiVersion: 'security.istio.io/v1',
      kind: 'AuthorizationPolicy',
      metadata: {name: 'ratings-grpc-read', namespace: NS},
      spec: {
        selector: {matchLabels: {app: 'ratings-grpc'}},
        action: 'ALLOW',
        rules: [
          {from: [{source: {namespaces: ['bookinfo']}}], to: [{operation: {paths: ['/ratings.v1.Ratings/Get*']}}]},
        ],
      },
    }
    const {plan} = planOf([...objects, l7])
    expect(plan.spec.summary.waypointRequired).toBe(true)
    expect(finding(plan, 'E27/bookinfo/ratings-grpc').severity).toBe('info')
  })
})

describe('bookinfo (examples/bookinfo) with --routes httproute', () => {
  it('carries header routing, subsets and the L7 authorization; keeps what Gateway API cannot express', async () => {
    const loaded = await loadManifestFiles([path.join(REPO_ROOT, 'examples/bookinfo')], {defaultNamespace: NS})
    const {plan} = planOf(loaded.objects, {routes: 'httproute'})
    expect(plan.spec.blockers).toEqual([])
    const swap = step(plan, 'swap-routes')
    expect(opsOf(swap)).toEqual([
      'apply Service/reviews-v1',
      'apply Service/reviews-v2',
      'apply HTTPRoute/reviews',
      'delete VirtualService/reviews',
    ])
    expect(applied(swap, 'reviews').spec.rules).toEqual([
      {
        matches: [{headers: [{type: 'Exact', name: 'end-user', value: 'jason'}]}],
        backendRefs: [{name: 'reviews-v2', port: 9080, weight: 1}],
      },
      {backendRefs: [{name: 'reviews-v1', port: 9080, weight: 1}]},
    ])
    expect(applied(swap, 'reviews-v1').spec.selector).toEqual({app: 'reviews', version: 'v1'})
    // ratings' retries have no standard-channel equivalent: that VirtualService stays for the waypoint.
    expect(finding(plan, 'routes-kept/bookinfo/ratings').code).toBe('VirtualServiceKept')
    expect(opsOf(step(plan, 'create-policies'))).toEqual(
      expect.arrayContaining([
        'apply AuthorizationPolicy/ratings-get-only-waypoint',
        'apply AuthorizationPolicy/details-no-delete-waypoint',
      ]),
    )
    expect(opsOf(step(plan, 'delete-sidecar-policies'))).toEqual([
      'apply AuthorizationPolicy/ratings-get-only-l4',
      'delete AuthorizationPolicy/details-no-delete',
      'delete AuthorizationPolicy/ratings-get-only',
    ])
  })
})
