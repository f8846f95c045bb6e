// The plan file: canonical form, digest, schema and the safety checks of SPEC §7 "Untrusted plans".
import path from 'node:path'

import {stringify} from 'yaml'
import {beforeAll, describe, expect, it} from 'vitest'

import {canonicalize, objectFingerprint, toCanonicalYaml} from '../../src/planner/canonical.js'
import {buildInventory} from '../../src/planner/inventory.js'
import type {KubeObject} from '../../src/planner/model.js'
import {buildPlan} from '../../src/plan/plan-builder.js'
import type {MigrationPlan} from '../../src/planner/plan-types.js'
import {checkPlanText, renderPlanFile, specDigest, textMayHaveWritten} from '../../src/plan/planfile.js'
import {loadManifestFiles} from '../../src/sources/manifests.js'
import {REPO_ROOT} from '../support/shared.js'
import {reverseKeys} from '../support/plan-file.js'

let plan: MigrationPlan
let text: string
beforeAll(async () => {
  const objects = (await loadManifestFiles([path.join(REPO_ROOT, 'examples/bookinfo')])).objects
  const snapshot = {
    namespace: 'bookinfo',
    rootNamespace: 'istio-system',
    target: {manifests: ['examples/bookinfo']},
    objects,
    missingKinds: [],
    findings: [],
  }
  plan = buildPlan({
    inventory: buildInventory(snapshot, {waypointFor: 'service'}),
    snapshot,
    options: {rootNamespace: 'istio-system', waypointName: 'waypoint', waypointFor: 'service'},
    generator: 'test',
  })
  text = renderPlanFile(plan)
})

const problemsOf = (p: unknown) =>
  checkPlanText(typeof p === 'string' ? p : stringify(p, {aliasDuplicateObjects: false})).problems
const mutate = (f: (p: MigrationPlan) => void): MigrationPlan => {
  const copy = structuredClone(plan)
  f(copy)
  return copy
}
const step = (p: MigrationPlan, action: string) => p.spec.steps.find((s) => s.action === action)!

describe('canonical form', () => {
  it('renders the same bytes whatever the key order of the input, and parses back to the same data', () => {
    expect(toCanonicalYaml(reverseKeys(plan))).toBe(toCanonicalYaml(plan))
    const reparsed = checkPlanText(text).plan!
    expect(renderPlanFile(reparsed)).toBe(text)
    expect(canonicalize(reparsed)).toEqual(canonicalize(JSON.parse(JSON.stringify(plan))))
    expect(toCanonicalYaml(reverseKeys(plan), {indentSeq: false})).toBe(
      stringify(canonicalize(plan), {lineWidth: 0, version: '1.1', aliasDuplicateObjects: false, indentSeq: false}),
    )
  })

  it('quotes strings YAML 1.1 would read as booleans, so manifests copied out mean the same to kubectl', () => {
    expect(toCanonicalYaml({a: 'yes', b: 'on', c: 'y', d: 'true'})).toBe('a: "yes"\nb: "on"\nc: "y"\nd: "true"\n')
  })

  it('never folds long strings', () => {
    expect(toCanonicalYaml({d: 'x '.repeat(200)}).split('\n')).toHaveLength(2)
  })

  it('fingerprints what an object means, not bookkeeping a GitOps tool or the server adds', () => {
    const ap: KubeObject = {
      apiVersion: 'security.istio.io/v1',
      kind: 'AuthorizationPolicy',
      metadata: {name: 'a', namespace: 'n'},
      spec: {action: 'DENY'},
    }
    const tracked = {
      ...ap,
      metadata: {
        ...ap.metadata,
        resourceVersion: '9',
        uid: 'u',
        labels: {'argocd.argoproj.io/instance': 'x'},
        annotations: {'kubectl.kubernetes.io/last-applied-configuration': '{}'},
      },
      status: {conditions: []},
    }
    expect(objectFingerprint(tracked)).toBe(objectFingerprint(ap))
    expect(objectFingerprint({...ap, spec: {action: 'ALLOW'}})).not.toBe(objectFingerprint(ap))
    expect(objectFingerprint({...ap, metadata: {...ap.metadata, annotations: {'istio.io/dry-run': 'true'}}})).not.toBe(
      objectFingerprint(ap),
    )
  })
})

describe('checks', () => {
  it('accepts the plans the tool writes', () => {
    expect(checkPlanText(text).problems).toEqual([])
  })

  it('rejects unknown fields, unknown actions and wrong versions with the path of each', () => {
    const p = problemsOf(
      mutate((x) => {
        ;(x.spec.steps[0] as unknown as Record<string, unknown>).extra = 1
        ;(x.spec.steps[1] as unknown as Record<string, unknown>).action = 'delete-namespace'
      }),
    )
    expect(p).toContainEqual({path: 'spec.steps[0].extra', message: 'unknown field'})
    expect(p.some((q) => q.path === 'spec.steps[1].action' && q.message.startsWith('must be one of'))).toBe(true)
    expect(problemsOf({...plan, apiVersion: 'mesh-migrate.io/v2'})).toEqual([
      {
        path: 'apiVersion',
        message:
          'must be mesh-migrate.io/v1alpha3 (or mesh-migrate.io/v1alpha2 or mesh-migrate.io/v1alpha1, written by earlier versions) (got "mesh-migrate.io/v2"); a newer mesh-migrate may have written it',
      },
    ])
  })

  it('rejects writes outside the namespace, cluster-scoped objects, Secrets and kinds a step may not write', () => {
    const p = problemsOf(
      mutate((x) => {
        const apply = step(x, 'create-policies').operations[0] as {object: KubeObject}
        apply.object.metadata.namespace = 'kube-system'
        step(x, 'create-policies').operations.push({
          op: 'apply',
          object: {apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: {name: 'pwn'}},
        })
        step(x, 'create-policies').operations.push({
          op: 'apply',
          object: {apiVersion: 'v1', kind: 'Secret', metadata: {name: 's', namespace: 'bookinfo'}},
        })
        step(x, 'bind-waypoint').operations.push({
          op: 'label',
          ref: {apiVersion: 'v1', kind: 'Namespace', name: 'bookinfo'},
          labels: {'istio-injection': null},
        })
        step(x, 'restart-workloads').operations.push({
          op: 'delete',
          ref: {apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'bookinfo', name: 'reviews-v1'},
          object: {apiVersion: 'apps/v1', kind: 'Deployment', metadata: {name: 'reviews-v1', namespace: 'bookinfo'}},
        })
      }),
    )
    const messages = p.map((q) => q.message)
    expect(messages).toContain('writes to namespace "kube-system", outside the plan\'s namespace "bookinfo"')
    expect(messages).toContain(
      'writes to cluster-scoped ClusterRoleBinding "pwn": plans may only write inside namespace "bookinfo"',
    )
    expect(messages).toContain('plans never carry Secrets')
    expect(messages).toContain(
      'this step may not change label "istio-injection" (allowed: istio.io/use-waypoint, istio.io/use-waypoint-namespace, istio.io/use-waypoint-canary, istio.io/use-waypoint-canary-namespace)',
    )
    expect(messages).toContain('this step may not delete Deployment')
  })

  it('rejects a waypoint that is not of class istio-waypoint and steps out of catalogue order', () => {
    const p = problemsOf(
      mutate((x) => {
        ;(step(x, 'create-waypoint').operations[0] as {object: KubeObject}).object.spec.gatewayClassName = 'istio'
        const [a, b] = [x.spec.steps[1]!, x.spec.steps[2]!]
        x.spec.steps[1] = b
        x.spec.steps[2] = a
      }),
    )
    expect(p.some((q) => q.message.includes('not istio-waypoint'))).toBe(true)
    expect(p.some((q) => q.message.includes('out of order'))).toBe(true)
  })

  it('accepts an edited spec before the first apply, and rejects it once a step has been applied', () => {
    const edited = mutate((x) => {
      x.spec.steps[0]!.description = 'edited'
    })
    expect(problemsOf(edited)).toEqual([])
    const applied = mutate((x) => {
      x.status = {specDigest: specDigest(x), steps: [{id: 'preflight', phase: 'Applied', at: 't', by: 'me'}]}
      x.spec.steps[0]!.description = 'edited after review'
    })
    expect(problemsOf(applied).map((q) => q.path)).toEqual(['spec'])
    expect(problemsOf(applied)[0]!.message).toContain('spec was edited after the first apply')
  })

  it('lists the other problems too when the schema fails', () => {
    const p = problemsOf(
      mutate((x) => {
        x.status = {specDigest: specDigest(x), steps: [{id: 'preflight', phase: 'Applied', at: 't', by: 'me'}]}
        ;(x.spec as unknown as Record<string, unknown>).unexpected = true
        const apply = step(x, 'create-policies').operations[0] as {object: KubeObject}
        apply.object.metadata.namespace = 'kube-system'
      }),
    )
    expect(p.map((q) => q.message)).toEqual(
      expect.arrayContaining([
        'unknown field',
        expect.stringContaining("outside the plan's namespace"),
        expect.stringContaining('spec was edited after the first apply'),
      ]),
    )
  })

  it('refuses YAML aliases with a problem, not an exception', () => {
    const p = checkPlanText(
      'apiVersion: mesh-migrate.io/v1alpha1\nkind: MigrationPlan\nmetadata: &m {name: a}\nspec: *m\n',
    ).problems
    expect(p[0]!.message).toContain('must not use anchors/aliases')
  })

  it('reports YAML errors with their line, never throws', () => {
    const p = checkPlanText('apiVersion: x\nkind: y\nspec:\n  a: 1\n  a: 2\n').problems
    expect(p[0]!.line).toBe(5)
    expect(checkPlanText('- just\n- a list\n').problems[0]!.message).toContain('not a YAML mapping')
  })
})

describe('each object stored once', () => {
  it('undo deletes name only the ref of what their step applied; step deletes keep the full object', () => {
    for (const s of plan.spec.steps) {
      for (const op of s.undo.operations) if (op.op === 'delete') expect(op).toEqual({op: 'delete', ref: op.ref})
      for (const op of s.operations) if (op.op === 'delete') expect(op.object?.metadata.name).toBe(op.ref.name)
    }
    expect(plan.spec.steps.some((s) => s.undo.operations.some((op) => op.op === 'delete'))).toBe(true)
  })

  it('refuses a step delete without the object rollback needs, and still reads an undo delete that carries one (older plans)', () => {
    const withoutObject = mutate((p) => {
      const op = p.spec.steps.flatMap((s) => s.operations).find((o) => o.op === 'delete') as
        {object?: unknown} | undefined
      delete op!.object
    })
    expect(problemsOf(withoutObject).map((p) => p.message)).toContain(
      'a step that deletes an object must store it in full (`object`), so that rollback can re-create it',
    )
    const older = mutate((p) => {
      const s = p.spec.steps.find(
        (x) => x.undo.operations.some((o) => o.op === 'delete') && x.operations.some((o) => o.op === 'apply'),
      )!
      const del = s.undo.operations.find((o) => o.op === 'delete') as {ref: {name: string}; object?: unknown}
      del.object = (
        s.operations.find((o) => o.op === 'apply' && o.object.metadata.name === del.ref.name) as {object: unknown}
      ).object
    })
    expect(problemsOf(older)).toEqual([])
  })
})

describe('textMayHaveWritten (plan reads only the status of the plan it would replace)', () => {
  const withPhase = (phase: string) =>
    mutate((p) => {
      p.status = {
        specDigest: specDigest(p),
        steps: p.spec.steps.map((s, i) => ({id: s.id, phase: (i === 0 ? phase : 'Pending') as never})),
      } as never
    })
  it('is false for a fresh plan and one whose steps are all Pending, true once a step ran, in block or flow style', () => {
    expect(textMayHaveWritten(text)).toBe(false)
    expect(textMayHaveWritten(renderPlanFile(withPhase('Pending')))).toBe(false)
    expect(textMayHaveWritten(renderPlanFile(withPhase('Applied')))).toBe(true)
    expect(textMayHaveWritten(renderPlanFile(withPhase('Running')))).toBe(true)
    // A fully rolled-back plan has nothing left to undo (plan replaces it without --force).
    expect(textMayHaveWritten(renderPlanFile(withPhase('RolledBack')))).toBe(false)
    // Not the tool's layout (JSON is YAML too): read in full.
    expect(textMayHaveWritten(JSON.stringify(withPhase('Applied')))).toBe(true)
    expect(textMayHaveWritten('not: [a plan')).toBe(false)
    expect(textMayHaveWritten('apiVersion: x\nstatus:\n  steps: [null, 3]\n')).toBe(false)
  })
})
