// Issue 10 point 10: `plan --keep-progress`. The re-plan must see the namespace as a rollback of the
// applied steps would leave it (the plan's own writes are not the user's state), keep the records of
// applied steps that come out identical, and refuse what it cannot carry correctly.
import {readFile} from 'node:fs/promises'
import path from 'node:path'

import {describe, expect, it} from 'vitest'

import {asRolledBack, carryProgress, keepProgressRefusals} from '../../src/executor/keep-progress.js'
import type {KubeObject, SourceSnapshot} from '../../src/planner/model.js'
import type {MigrationPlan, StepPhase} from '../../src/planner/plan-types.js'
import {planOf} from '../support/plan-file.js'
import {REPO_ROOT} from '../support/shared.js'

async function examplePlan(): Promise<MigrationPlan> {
  return planOf(await readFile(path.join(REPO_ROOT, 'plans/examples/bookinfo.yaml'), 'utf8'))
}

function withPhases(
  plan: MigrationPlan,
  phases: Record<string, StepPhase>,
  observed: Record<string, Record<string, unknown>> = {},
): MigrationPlan {
  const steps = plan.spec.steps
    .filter((s) => phases[s.action])
    .map((s) => ({
      id: s.id,
      phase: phases[s.action]!,
      at: 't',
      by: 'u',
      ...(observed[s.action] ? {observed: observed[s.action]} : {}),
    }))
  return {...plan, status: {specDigest: 'x', steps}}
}

const ours = {
  labels: {'app.kubernetes.io/managed-by': 'mesh-migrate'},
  annotations: {'mesh-migrate.io/plan': 'bookinfo'},
}

function snapshot(objects: KubeObject[]): SourceSnapshot {
  return {
    namespace: 'bookinfo',
    rootNamespace: 'istio-system',
    target: {context: 'c', server: 'https://x', clusterID: 'u1'},
    objects,
    missingKinds: [],
    findings: [],
  }
}

describe('keep-progress', () => {
  it('refuses a step that may have written only part of its operations, and an applied step that recreated pods', async () => {
    const plan = await examplePlan()
    expect(
      keepProgressRefusals(withPhases(plan, {'create-waypoint': 'Applied', 'create-policies': 'Applied'}), 'p.yaml'),
    ).toEqual([])
    const failed = keepProgressRefusals(
      withPhases(plan, {'create-waypoint': 'Applied', 'create-policies': 'Failed'}),
      'p.yaml',
    )
    expect(failed).toHaveLength(1)
    expect(failed[0]).toContain('is Failed: it may have written only part of its operations')
    expect(failed[0]).toContain('`mesh-migrate apply p.yaml --retry`')
    const restarted = keepProgressRefusals(withPhases(plan, {'restart-workloads': 'Applied'}), 'p.yaml')
    expect(restarted.join('\n')).toMatch(/restart-workloads is Applied and recreated pods/)
  })

  it("lays the undo of applied steps over the snapshot: objects still marked as the plan's go with what they own, labels still as written are restored to what the step saw before", async () => {
    const plan = await examplePlan()
    const old = withPhases(
      plan,
      {
        'create-waypoint': 'Applied',
        'wait-waypoint': 'Applied',
        'create-policies': 'Applied',
        'bind-waypoint': 'Applied',
      },
      {
        'bind-waypoint': {before: {'core/Namespace//bookinfo': {labels: {'istio.io/use-waypoint': null}}}},
      },
    )
    const gateway: KubeObject = {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'Gateway',
      metadata: {name: 'waypoint', namespace: 'bookinfo', uid: 'g1', ...ours},
    }
    const deployment: KubeObject = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: {
        name: 'waypoint',
        namespace: 'bookinfo',
        uid: 'd1',
        ownerReferences: [{apiVersion: 'gateway.networking.k8s.io/v1', kind: 'Gateway', name: 'waypoint', uid: 'g1'}],
      },
    }
    const pod: KubeObject = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: 'waypoint-abc',
        namespace: 'bookinfo',
        uid: 'p1',
        ownerReferences: [{apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'waypoint-x', uid: 'r1'}],
      },
    }
    const rs: KubeObject = {
      apiVersion: 'apps/v1',
      kind: 'ReplicaSet',
      metadata: {
        name: 'waypoint-x',
        namespace: 'bookinfo',
        uid: 'r1',
        ownerReferences: [{apiVersion: 'apps/v1', kind: 'Deployment', name: 'waypoint', uid: 'd1'}],
      },
    }
    // A copy someone took over (the marks removed) is theirs now: rollback leaves it, so does the re-plan.
    const adopted: KubeObject = {
      apiVersion: 'security.istio.io/v1',
      kind: 'AuthorizationPolicy',
      metadata: {name: 'details-no-delete-waypoint', namespace: 'bookinfo'},
      spec: {},
    }
    const copy: KubeObject = {
      apiVersion: 'security.istio.io/v1',
      kind: 'AuthorizationPolicy',
      metadata: {name: 'ratings-get-only-waypoint', namespace: 'bookinfo', ...ours},
      spec: {},
    }
    const userPolicy: KubeObject = {
      apiVersion: 'security.istio.io/v1',
      kind: 'AuthorizationPolicy',
      metadata: {name: 'details-no-delete', namespace: 'bookinfo'},
      spec: {action: 'DENY'},
    }
    const ns: KubeObject = {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: {
        name: 'bookinfo',
        labels: {'istio-injection': 'enabled', 'istio.io/use-waypoint': 'waypoint', team: 'a'},
      },
    }
    const out = asRolledBack(snapshot([gateway, deployment, rs, pod, adopted, copy, userPolicy, ns]), old)
    const names = out.objects.map((o) => `${o.kind}/${o.metadata.name}`).sort()
    expect(names).toEqual([
      'AuthorizationPolicy/details-no-delete',
      'AuthorizationPolicy/details-no-delete-waypoint',
      'Namespace/bookinfo',
    ])
    expect(out.objects.find((o) => o.kind === 'Namespace')!.metadata.labels).toEqual({
      'istio-injection': 'enabled',
      team: 'a',
    })

    // A label someone changed since the step wrote it is theirs: left as it is.
    const changed = {
      ...ns,
      metadata: {...ns.metadata, labels: {...ns.metadata.labels, 'istio.io/use-waypoint': 'other'}},
    }
    expect(asRolledBack(snapshot([changed]), old).objects[0]!.metadata.labels!['istio.io/use-waypoint']).toBe('other')
  })

  it('keeps the records of identical applied steps; refuses an applied step that changed or is gone, a new step placed before an applied one, and another cluster', async () => {
    const plan = await examplePlan()
    const old = withPhases(plan, {
      preflight: 'Applied',
      'create-waypoint': 'Applied',
      'wait-waypoint': 'Applied',
      'create-policies': 'Pending',
    })
    const same = carryProgress(old, plan)
    expect(same.refusals).toEqual([])
    expect(same.kept).toEqual(
      plan.spec.steps
        .filter((s) => ['preflight', 'create-waypoint', 'wait-waypoint'].includes(s.action))
        .map((s) => s.id),
    )
    expect(same.toApply[0]).toBe(plan.spec.steps.find((s) => s.action === 'create-policies')!.id)
    expect(same.plan.status!.steps.map((s) => s.phase)).toEqual(['Applied', 'Applied', 'Applied'])

    // The waypoint step writes something else now (another name): its record cannot be carried.
    const renamed = structuredClone(plan)
    const createWaypoint = renamed.spec.steps.find((s) => s.action === 'create-waypoint')!
    const gw = createWaypoint.operations[0] as {op: 'apply'; object: KubeObject}
    gw.object.metadata.name = 'waypoint-b'
    const changed = carryProgress(old, renamed)
    expect(changed.refusals.join('\n')).toContain(
      `step ${createWaypoint.id} was applied and the new plan changes it (adds Gateway bookinfo/waypoint-b, drops Gateway bookinfo/waypoint)`,
    )
    // Rolled back to before it, the rest can be carried: the refusal says down to which step.
    expect(changed.undoFrom).toBe(createWaypoint.id)

    const dropped = structuredClone(plan)
    dropped.spec.steps = dropped.spec.steps.filter((s) => s.action !== 'wait-waypoint')
    expect(carryProgress(old, dropped).refusals.join('\n')).toMatch(
      /wait-waypoint was applied and the new plan has no such step/,
    )

    // A new step ahead of applied ones would run behind them.
    const inserted = structuredClone(plan)
    inserted.spec.steps.splice(1, 0, {
      ...structuredClone(plan.spec.steps.find((s) => s.action === 'create-policies')!),
      id: '01b-new',
    })
    const ahead = carryProgress(old, inserted)
    expect(ahead.refusals.join('\n')).toMatch(/step 01b-new would run after the applied step/)
    expect(ahead.undoFrom).toBe(plan.spec.steps.find((s) => s.action === 'create-waypoint')!.id)

    const elsewhere = {...plan, spec: {...plan.spec, target: {context: 'b', server: 'https://b', clusterID: 'other'}}}
    const fromCluster = {...old, spec: {...old.spec, target: {context: 'a', server: 'https://a', clusterID: 'uid-a'}}}
    expect(carryProgress(fromCluster, elsewhere).refusals.join('\n')).toContain(
      'was made for another cluster (a, https://a)',
    )
  })
})
