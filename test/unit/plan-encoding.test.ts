// The plan file's encoding, mesh-migrate.io/v1alpha3 (src/plan/plan-encoding.ts): every reason and message in
// place, objects stored once, items that share a verdict in one entry, the same plan read back, byte-deterministic,
// tamper-evident, and plans written as v1alpha2 (texts table) and v1alpha1 (expanded) still read.
import {readFileSync} from 'node:fs'
import path from 'node:path'

import {parse} from 'yaml'
import {describe, expect, it} from 'vitest'

import {canonicalize, toCanonicalYaml} from '../../src/planner/canonical.js'
import {parseRefText, PLAN_FILE_API_VERSION, PLAN_FILE_V1ALPHA2, refText} from '../../src/plan/plan-encoding.js'
import type {MigrationPlan} from '../../src/planner/plan-types.js'
import {checkPlanText, renderPlanFile, specDigest} from '../../src/plan/planfile.js'
import type {KubeObject} from '../../src/planner/model.js'
import {variedNamespace} from '../support/generated-namespace.js'
import {generatedPlan} from '../support/generated-plan.js'
import {offlinePlan} from '../support/offline-plan.js'
import {REPO_ROOT} from '../support/shared.js'
import {reverseKeys} from '../support/plan-file.js'

const plain = (v: unknown) => canonicalize(JSON.parse(JSON.stringify(v)))

/** The plan as the first apply leaves it: one step Applied, the reviewed spec's digest recorded. */
function started(plan: MigrationPlan): MigrationPlan {
  return {
    ...plan,
    status: {
      specDigest: specDigest(plan),
      steps: [{id: plan.spec.steps[0]!.id, phase: 'Applied', at: '2026-01-01T00:00:00Z', by: 'test'}],
    },
  }
}

const plan = generatedPlan(3)
const text = renderPlanFile(plan)

describe('plan file v1alpha3', () => {
  it('reads back as the same plan, and writes the same bytes again whatever the key order', () => {
    expect(text).toContain(`\napiVersion: ${PLAN_FILE_API_VERSION}\n`)
    const checked = checkPlanText(text)
    expect(checked.problems).toEqual([])
    expect(plain(checked.plan)).toEqual(plain(plan))
    expect(renderPlanFile(checked.plan!)).toBe(text)
    expect(renderPlanFile(reverseKeys(plan) as MigrationPlan)).toBe(text)
    // The YAML itself is plain data: a reviewer's tools (yq, an editor) read it without mesh-migrate.
    expect(parse(text).spec.objects['AuthorizationPolicy big/svc-0-allow'].spec.action).toBe('ALLOW')
  })

  it('writes every reason and message in place, objects once, and items that share a verdict as one entry', () => {
    const data = parse(text)
    expect(data.spec.texts).toBeUndefined()
    expect(text).not.toMatch(/\{text: [0-9a-f]+\}|^ *text: [0-9a-f]{8}/m)
    // The original svc-0-allow: deleted by delete-sidecar-policies and re-created by its undo, stored once.
    const mentions = text
      .split('\n')
      .filter((l) => l.includes('AuthorizationPolicy big/svc-0-allow') && !l.includes('svc-0-allow-'))
    expect(mentions.filter((l) => /^ {4}AuthorizationPolicy big\/svc-0-allow:$/.test(l))).toHaveLength(1)
    // The three policies share their verdict: one entry lists them; a reason all three give is written once in
    // full, and each policy's own reasons (naming its workload) stand under its name, at the places marked ~.
    const reason = 'spec.rules[0].to[0].operation.methods: HTTP method match: L7, needs a waypoint'
    expect(plan.spec.inventory.filter((i) => i.reasons.includes(reason))).toHaveLength(3)
    expect(text.split(reason)).toHaveLength(2)
    const policies = data.spec.inventory.filter((e: {kind: string}) => e.kind === 'AuthorizationPolicy')
    expect(policies).toHaveLength(1)
    expect(policies[0].objects.map((o: {name: string}) => o.name)).toEqual([
      'svc-0-allow',
      'svc-1-allow',
      'svc-2-allow',
    ])
    expect(policies[0].reasons).toContain(reason)
    expect(policies[0].reasons).toContain(null)
    const own = plan.spec.inventory
      .find((i) => i.ref.name === 'svc-1-allow')!
      .reasons.filter((r) => r.includes('svc-1'))
    expect(own.length).toBeGreaterThan(0)
    expect(policies[0].objects[1].reasons).toEqual(own)
    // Hazards of one kind and window: one entry, each hazard's message in full.
    expect(data.spec.hazards.length).toBeLessThan(plan.spec.hazards.length)
    for (const h of plan.spec.hazards) expect(text).toContain(h.message)
    // No apiVersion repeated in references: spec.apiVersions says it once per kind.
    expect(data.spec.apiVersions).toMatchObject({AuthorizationPolicy: 'security.istio.io/v1', Deployment: 'apps/v1'})
  })

  it('detects an edit after the first apply in the tables too (the digest is over the expanded spec)', () => {
    const applied = renderPlanFile(started(plan))
    expect(checkPlanText(applied).problems).toEqual([])
    const editedObject = applied.replace('methods: [GET]', 'methods: [GET, POST]')
    expect(editedObject).not.toBe(applied)
    // The digest catches it; validate also says the copy is no longer its original retargeted (issue 20 §5).
    expect(checkPlanText(editedObject).problems.map((p) => p.path)).toContain('spec')
    const data = parse(applied)
    data.spec.inventory[0].reasons[0] = 'nothing to see here'
    expect(
      checkPlanText(toCanonicalYaml(data))
        .problems.map((p) => p.message)
        .join(),
    ).toContain('spec was edited after the first apply')
  })

  it('names what does not add up: an object or text nothing has, an entry nothing uses, a kind without apiVersion', () => {
    const edit = (f: (spec: Record<string, any>) => void) => {
      const data = parse(text)
      f(data.spec)
      return checkPlanText(toCanonicalYaml(data)).problems
    }
    const createPolicies = (spec: Record<string, any>) =>
      spec.steps.find((s: {id: string}) => s.id === 'create-policies')
    const dangling = edit((spec) => (createPolicies(spec).operations[0] = 'apply AuthorizationPolicy big/nowhere'))
    expect(dangling).toContainEqual({
      path: 'spec.steps[3].operations[0]',
      message: 'names object "AuthorizationPolicy big/nowhere", which spec.objects does not have',
    })
    expect(dangling).toContainEqual({
      path: 'spec.objects.AuthorizationPolicy big/svc-0-allow-waypoint',
      message: 'no operation or waypoint uses this object',
    })
    const noKind = edit((spec) => delete spec.apiVersions.Deployment)
    expect(noKind).toContainEqual(
      expect.objectContaining({
        message:
          '"Deployment big/svc-0" is not a reference: spec.apiVersions has no apiVersion for Deployment: name it ("apiVersion Deployment …")',
      }),
    )
    const policies = (spec: Record<string, any>) =>
      spec.inventory.find((e: {kind: string}) => e.kind === 'AuthorizationPolicy')
    const missingReason = edit((spec) => policies(spec).objects[1].reasons.pop())
    expect(missingReason).toContainEqual(
      expect.objectContaining({path: expect.stringMatching(/^spec\.inventory\[\d+\]\.objects\[1\]\.reasons$/)}),
    )
    const noEntryKind = edit((spec) => (policies(spec).kind = 'Unknown'))
    expect(noEntryKind.map((p) => p.message).join()).toContain('spec.apiVersions has no apiVersion for Unknown')
  })

  it('still reads plans written as v1alpha1 (the expanded form), with their recorded digest', () => {
    const v1alpha1 = `# an older plan\n${toCanonicalYaml(started(plan))}`
    expect(v1alpha1).toContain('apiVersion: mesh-migrate.io/v1alpha1')
    const checked = checkPlanText(v1alpha1)
    expect(checked.problems).toEqual([])
    expect(plain(checked.plan)).toEqual(plain(started(plan)))
    // Written again (the next apply records its step), it becomes v1alpha3 and its digest still holds.
    const rewritten = renderPlanFile(checked.plan!)
    expect(rewritten).toContain(`apiVersion: ${PLAN_FILE_API_VERSION}`)
    expect(checkPlanText(rewritten).problems).toEqual([])
  })

  it('writes references in one line and reads them back, cluster-scoped ones too', () => {
    const versions = new Map([['Deployment', 'apps/v1']])
    expect(refText({apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'big', name: 'a'}, versions)).toBe(
      'Deployment big/a',
    )
    expect(refText({apiVersion: 'v1', kind: 'Namespace', name: 'big'})).toBe('v1 Namespace big')
    expect(parseRefText('v1 Namespace big')).toEqual({apiVersion: 'v1', kind: 'Namespace', name: 'big'})
    expect(parseRefText('Deployment big/a', {Deployment: 'apps/v1'})).toEqual({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      namespace: 'big',
      name: 'a',
    })
    expect(parseRefText('Deployment big/a')).toMatch(/no apiVersion for Deployment/)
    expect(parseRefText('a b c/d/e')).toMatch(/expected/)
  })

  it('still reads plans written as v1alpha2 (repeated texts in spec.texts), with their recorded digest', () => {
    const v1alpha2 = readFileSync(path.join(REPO_ROOT, 'test/fixtures/plan-files/bookinfo-v1alpha2.yaml'), 'utf8')
    expect(v1alpha2).toContain(`apiVersion: ${PLAN_FILE_V1ALPHA2}`)
    expect(v1alpha2).toMatch(/\{text: [0-9a-f]{8}\}/)
    const checked = checkPlanText(v1alpha2)
    expect(checked.problems).toEqual([])
    const old = checked.plan!
    expect(JSON.stringify(old)).not.toMatch(/"text":/)
    // The first apply records the digest and writes the file as v1alpha3: same plan, same digest.
    const rewritten = renderPlanFile(started(old))
    expect(rewritten).toContain(`apiVersion: ${PLAN_FILE_API_VERSION}`)
    expect(rewritten).not.toMatch(/\{text: [0-9a-f]+\}/)
    const reread = checkPlanText(rewritten)
    expect(reread.problems).toEqual([])
    expect(plain(reread.plan!.spec)).toEqual(plain(old.spec))
    expect(specDigest(reread.plan!)).toBe(specDigest(old))
    // A v1alpha2 file with its digest recorded still detects an edit of a shared text.
    const startedV1alpha2 = parse(v1alpha2)
    startedV1alpha2.status = started(old).status
    expect(checkPlanText(toCanonicalYaml(startedV1alpha2)).problems).toEqual([])
    const id = Object.keys(startedV1alpha2.spec.texts)[0]!
    startedV1alpha2.spec.texts[id] = 'nothing to see here'
    expect(
      checkPlanText(toCanonicalYaml(startedV1alpha2))
        .problems.map((p) => p.message)
        .join(),
    ).toContain('spec was edited after the first apply')
  })

  it('keeps the inventory in reference order, which reading restores from its entries', () => {
    const varied = offlinePlan('big', variedNamespace(30) as unknown as KubeObject[], {}, 'varied').plan
    for (const built of [generatedPlan(3), generatedPlan(12), varied]) {
      const refs = built.spec.inventory.map((i) => `${i.ref.kind}/${i.ref.namespace}/${i.ref.name}`)
      expect(refs).toEqual([...refs].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)))
      expect(plain(checkPlanText(renderPlanFile(built)).plan)).toEqual(plain(built))
    }
  })
})
