// E23: the plan of a GitOps-managed namespace as manifest changes (`show -o patches`), step by step.
import path from 'node:path'

import {beforeAll, describe, expect, it} from 'vitest'

import {gitOpsManagedObjects, manifestChanges} from '../../src/plan/gitops.js'
import {buildInventory} from '../../src/planner/inventory.js'
import type {SourceSnapshot} from '../../src/planner/model.js'
import {buildPlan} from '../../src/plan/plan-builder.js'
import type {MigrationPlan} from '../../src/planner/plan-types.js'
import {loadManifestFiles} from '../../src/sources/manifests.js'
import {REPO_ROOT} from '../support/shared.js'

const FIXTURE = path.join(REPO_ROOT, 'test/fixtures/edge-cases/E23-gitops-managed.yaml')
const NS = 'bookinfo'

let plan: MigrationPlan

beforeAll(async () => {
  const loaded = await loadManifestFiles([FIXTURE], {defaultNamespace: NS})
  const snapshot: SourceSnapshot = {
    namespace: NS,
    rootNamespace: 'istio-system',
    target: {manifests: [FIXTURE]},
    objects: loaded.objects,
    missingKinds: [],
    findings: [],
  }
  const inventory = buildInventory(snapshot, {waypointFor: 'service'})
  plan = buildPlan({
    inventory,
    snapshot,
    options: {rootNamespace: 'istio-system', waypointName: 'waypoint', waypointFor: 'service'},
    generator: 'mesh-migrate/test',
  })
})

describe('manifestChanges', () => {
  it("names the managed objects with their tool, from the plan's findings", () => {
    expect(Object.fromEntries(gitOpsManagedObjects(plan))).toEqual({
      'core/Namespace//bookinfo': 'Argo CD (argocd.argoproj.io/instance=bookinfo-platform)',
      'apps/Deployment/bookinfo/reviews-v1': 'Helm (meta.helm.sh/release-name=reviews)',
      'security.istio.io/AuthorizationPolicy/bookinfo/reviews-get-only':
        'Flux (kustomize.toolkit.fluxcd.io/name=bookinfo-security)',
    })
  })

  it('gives every write of the plan as a patch or object, in step order; restarts stay commands', () => {
    const steps = manifestChanges(plan)
    const order = plan.spec.steps.map((s) => s.id)
    expect(steps.map((s) => s.id)).toEqual(order.filter((id) => steps.some((s) => s.id === id)))
    const summary = steps.flatMap((s) =>
      s.changes.map((c) => `${s.id}: ${c.kind} ${c.ref.kind}/${c.ref.name}${c.managedBy ? ' (managed)' : ''}`),
    )
    expect(summary).toEqual([
      'create-waypoint: add Gateway/waypoint',
      'create-policies: add AuthorizationPolicy/reviews-get-only-waypoint',
      'create-policies: add AuthorizationPolicy/reviews-get-only-ztunnel',
      'bind-waypoint: labels Namespace/bookinfo (managed)',
      'enable-ambient: labels Namespace/bookinfo (managed)',
      'remove-sidecar-injection: labels Namespace/bookinfo (managed)',
      'delete-sidecar-policies: add AuthorizationPolicy/reviews-get-only-l4',
      'delete-sidecar-policies: remove AuthorizationPolicy/reviews-get-only (managed)',
    ])
    const restart = steps.find((s) => s.id === 'restart-workloads')!
    expect(restart.changes).toEqual([])
    expect(restart.restarts.map((r) => r.name)).toEqual(['reviews-v1'])
  })

  it('patches are strategic-merge patches: null removes a label, $patch: delete removes an object', () => {
    const steps = manifestChanges(plan)
    const removeInjection = steps.find((s) => s.id === 'remove-sidecar-injection')!.changes[0]!
    expect(removeInjection.document).toEqual({
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: {name: 'bookinfo', labels: {'istio-injection': null}},
    })
    const removed = steps.find((s) => s.id === 'delete-sidecar-policies')!.changes.find((c) => c.kind === 'remove')!
    expect(removed.document).toEqual({
      apiVersion: 'security.istio.io/v1',
      kind: 'AuthorizationPolicy',
      metadata: {name: 'reviews-get-only', namespace: 'bookinfo'},
      $patch: 'delete',
    })
  })

  it("objects for the repository carry none of the tool's ownership marks, which the plan's own objects keep", () => {
    const added = manifestChanges(plan)
      .flatMap((s) => s.changes)
      .filter((c) => c.kind === 'add')
    for (const change of added) {
      const meta = change.document.metadata as {labels?: Record<string, string>; annotations?: Record<string, string>}
      expect(meta.labels?.['app.kubernetes.io/managed-by']).toBeUndefined()
      expect(meta.annotations?.['mesh-migrate.io/plan']).toBeUndefined()
    }
    const copy = added.find((c) => c.ref.name === 'reviews-get-only-waypoint')!
    expect((copy.document.metadata as {annotations?: Record<string, string>}).annotations).toEqual({
      'mesh-migrate.io/copied-from': 'reviews-get-only',
    })
    // The plan itself is not changed by the rendering.
    const planned = plan.spec.steps.find((s) => s.id === 'create-policies')!.operations[0] as {
      object: {metadata: {labels: Record<string, string>}}
    }
    expect(planned.object.metadata.labels['app.kubernetes.io/managed-by']).toBe('mesh-migrate')
  })
})
