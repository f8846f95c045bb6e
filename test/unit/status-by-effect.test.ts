// `status --by-effect` (issue 22 §4): the verification gate after a GitOps sync, which records nothing. Each step is
// judged by what is live in the cluster — its after-state and its verification — never by the record: before the
// sync the first step's effect is missing (exit 10, named with what is missing); after the namespace's overlay
// (`show --fleet -o argocd`'s files) is synced as an engine does, in sync-wave order, and the controllers settle,
// every step is live (exit 0) with nothing recorded; with one patch left out, the step it belongs to is named.
// Nothing is written to the cluster or the plan file. Over the in-memory client with the rig's controllers.
import {readFile} from 'node:fs/promises'
import path from 'node:path'

import {parse} from 'yaml'
import {describe, expect, it} from 'vitest'

import {planStatuses, renderStatusReport, type StatusOptions} from '../../src/actions/status.js'
import {applyFleet, loadFleetFile} from '../../src/actions/fleet-apply.js'
import {ClusterConnection} from '../../src/cli/plan-session.js'
import {ExitCode} from '../../src/exit-codes.js'
import {namespaceOverlay} from '../../src/plan/gitops-fleet.js'
import type {KubeObject} from '../../src/planner/model.js'
import {painterFor} from '../../src/ui/color.js'
import {FakeIo} from '../support/fake-io.js'
import {fleetRig, type FleetRig, fleetStatusFiles} from '../support/fleet-rig.js'
import {schemaProblems} from '../support/schemas.js'
import {REPO_ROOT} from '../support/shared.js'

const EXAMPLE = [path.join(REPO_ROOT, 'examples/fleet')]
const ACCEPT = ['*/VirtualService/frontend/shop-timeout', 'E11/destination/shop']

/** Syncs the namespace's overlay as Argo CD does, file by file in sync-wave order; `skip` leaves files out. */
async function sync(rig: FleetRig, namespace: string, skip: (file: string) => boolean = () => false): Promise<void> {
  const plan = rig.plans.find((p) => p.metadata.namespace === namespace)!
  for (const file of namespaceOverlay(plan, {dir: 'gitops'})) {
    if (file.path.endsWith('/kustomization.yaml') || skip(file.path)) continue
    const doc = parse(file.text) as KubeObject & {$patch?: string}
    const ref = {
      apiVersion: doc.apiVersion,
      kind: doc.kind,
      name: doc.metadata.name,
      ...(doc.metadata.namespace ? {namespace: doc.metadata.namespace} : {}),
    }
    // A removed resource is pruned; a new one created; a patch merged into the object the repository already has.
    if (doc.$patch === 'delete') await rig.kube.delete(ref)
    else if (/-add-/.test(path.basename(file.path))) await rig.kube.apply(doc)
    else await rig.kube.mergePatch(ref, {metadata: doc.metadata, ...(doc.spec ? {spec: doc.spec} : {})})
  }
}

async function gate(rig: FleetRig, namespace: string, extra: Partial<StatusOptions> = {}) {
  const io = new FakeIo()
  const writesBefore = rig.kube.writes().length
  const planBefore = await readFile(rig.planFile(namespace), 'utf8')
  const report = await planStatuses(
    {
      files: [rig.planFile(namespace)],
      onePlan: true,
      planArg: rig.planFile(namespace),
      cluster: ClusterConnection.of(rig.kube),
      offline: false,
      detailedExitcode: true,
      byEffect: true,
      ...extra,
    },
    io,
  )
  // Read-only: no write reached the cluster, the plan file is as it was.
  expect(rig.kube.writes().length).toBe(writesBefore)
  expect(await readFile(rig.planFile(namespace), 'utf8')).toBe(planBefore)
  expect(schemaProblems(JSON.stringify(report), 'StatusReport')).toEqual([])
  const text = renderStatusReport(report, painterFor(io.stdout, {NO_COLOR: '1'}), io.now().getTime())
  return {io, report, plan: report.plans[0]!, text}
}

describe('status --by-effect: the verification gate after a GitOps sync', () => {
  it('exit 10 naming the first step before the sync; 0 after it, with nothing recorded', async () => {
    const rig = await fleetRig(EXAMPLE, ACCEPT)
    const before = await gate(rig, 'catalog')
    expect(before.io.exitCode).toBe(ExitCode.ChangesPending)
    const first = before.plan.steps.find((s) => s.effect === 'missing')!
    expect(first.id).toBe('create-waypoint')
    expect(first.effectDetail).toContain('Gateway catalog/waypoint is missing')
    expect(before.plan.steps.find((s) => s.id === 'preflight')!.effect).toBe('n/a')
    expect(before.plan.notLive).toBe(before.plan.steps.filter((s) => s.effect === 'missing').length)
    expect(before.text).toMatch(
      /not live in the cluster; the first is create-waypoint: .*Gateway catalog\/waypoint is missing/,
    )

    await sync(rig, 'catalog')
    const after = await gate(rig, 'catalog')
    expect(after.io.stderr.text).toBe('')
    expect(after.io.exitCode ?? 0).toBe(0)
    expect(after.plan.notLive).toBe(0)
    expect(after.plan.steps.map((s) => [s.id, s.effect])).toEqual(
      after.plan.steps.map((s) => [s.id, s.id === 'preflight' ? 'n/a' : 'live']),
    )
    // The record is untouched: the steps are still pending by the record, live by their effect.
    expect(after.plan.pending).toBe(before.plan.pending)
    expect(after.text).toContain("Every step's effect is live in the cluster and verified")

    // Without the flag, status still judges by the record: pending (10), as before.
    const byRecord = await gate(rig, 'catalog', {byEffect: false})
    expect(byRecord.io.exitCode).toBe(ExitCode.ChangesPending)
    expect(byRecord.plan.notLive).toBeUndefined()
  }, 60_000)

  it('one patch left out of the sync: its step is named with what is missing (exit 10)', async () => {
    const rig = await fleetRig(EXAMPLE, ACCEPT)
    await sync(rig, 'catalog', (file) => /bind-waypoint-labels-namespace/.test(file))
    const r = await gate(rig, 'catalog')
    expect(r.io.exitCode).toBe(ExitCode.ChangesPending)
    const missing = r.plan.steps.filter((s) => s.effect === 'missing')
    expect(missing[0]!.id).toBe('bind-waypoint')
    expect(missing[0]!.effectDetail).toContain(
      'Namespace catalog: label istio.io/use-waypoint is absent, the step sets "waypoint"',
    )
    // The end state's check sees the Services unbound too.
    expect(missing.at(-1)!.id).toBe('verify-dataplane')
    expect(missing.at(-1)!.effectDetail).toMatch(/waypoint-bound: not bound/)
    expect(r.text).toMatch(/the first is bind-waypoint: Namespace catalog: label istio.io\/use-waypoint is absent/)
  }, 60_000)

  it('a cluster that cannot be read is never green: exit 1, the effect unknown', async () => {
    const rig = await fleetRig(EXAMPLE, ACCEPT)
    await sync(rig, 'catalog')
    rig.kube.failNext({verb: 'list', kind: 'Pod', status: 403, times: 100})
    const r = await gate(rig, 'catalog')
    expect(r.io.exitCode).toBe(ExitCode.Failure)
    expect(r.plan.notLive).toBeNull()
    expect(r.io.stderr.text).toContain('effect not checked')
  }, 60_000)

  it('status --fleet --by-effect: a NOT LIVE column, naming the first step of each namespace not yet synced', async () => {
    const rig = await fleetRig(EXAMPLE, ACCEPT)
    await sync(rig, 'catalog')
    const io = new FakeIo()
    const report = await planStatuses(
      {
        ...(await fleetStatusFiles(rig)),
        onePlan: false,
        cluster: ClusterConnection.of(rig.kube),
        offline: false,
        detailedExitcode: true,
        byEffect: true,
      },
      io,
    )
    expect(io.exitCode).toBe(ExitCode.ChangesPending)
    expect(report.plans.map((p) => [p.namespace, p.notLive === 0])).toEqual([
      ['catalog', true],
      ['frontend', false],
      ['pay', false],
      ['shop', false],
    ])
    const lines = renderStatusReport(report, painterFor(io.stdout, {NO_COLOR: '1'}), io.now().getTime()).split('\n')
    expect(lines[0]).toMatch(/^WAVE\s+NAMESPACE\s+STATE\s+APPLIED\s+NOT LIVE\s+LOCK\s+PLAN$/)
    expect(lines[1]).toMatch(/^1\s+catalog\s+\S+\s+1\/8\s+0\s+/)
    // frontend needs no waypoint (L4 only): its first step with an effect is the label switch.
    expect(lines[2]).toMatch(/^2\s+frontend\s+\S+\s+1\/5\s+4 \(enable-ambient\)\s+/)
    expect(lines[3]).toMatch(/^3\s+pay\s+\S+\s+1\/10\s+9 \(create-waypoint\)\s+/)
  }, 60_000)

  it('after apply (the tool wrote it, with its marks) the effect is live too; an object deleted later names its step', async () => {
    const rig = await fleetRig(EXAMPLE, ACCEPT)
    const io = new FakeIo()
    const applied = await applyFleet({
      loaded: await loadFleetFile(rig.fleetFile),
      waves: [1],
      retry: false,
      parallel: 1,
      allowOtherCluster: false,
      dryRun: false,
      write: {'dry-run': 'none', timeout: '1s', 'lock-timeout': '0s', 'take-over': false},
      connection: ClusterConnection.of(rig.kube),
      io,
      note: (m) => io.stderr.write(`${m}\n`),
    })
    expect(applied.result, io.stderr.text).toBe('incomplete')
    const live = await gate(rig, 'catalog')
    expect(live.io.exitCode ?? 0).toBe(0)
    expect(live.plan.pending).toBe(0)

    // Someone deletes the waypoint: create-waypoint is not live, and everything verified through it neither.
    rig.kube.remove({
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'Gateway',
      namespace: 'catalog',
      name: 'waypoint',
    })
    const r = await gate(rig, 'catalog')
    expect(r.io.exitCode).toBe(ExitCode.ChangesPending)
    expect(r.plan.steps.find((s) => s.effect === 'missing')).toMatchObject({
      id: 'create-waypoint',
      effectDetail: expect.stringContaining('Gateway catalog/waypoint is missing'),
    })
    expect(r.plan.steps.find((s) => s.id === 'wait-waypoint')!.effect).toBe('missing')
  }, 60_000)
})
