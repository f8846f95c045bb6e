// The plan file's encoding, mesh-migrate.io/v1alpha2 (src/planner/plan-encoding.ts): nothing stored twice, the
// same plan read back, byte-deterministic, tamper-evident, and plans written as v1alpha1 still read.
import {parse} from 'yaml'
import {describe, expect, it} from 'vitest'

import {canonicalize, toCanonicalYaml} from '../../src/planner/canonical.js'
import {parseRefText, PLAN_FILE_API_VERSION, refText} from '../../src/planner/plan-encoding.js'
import type {MigrationPlan} from '../../src/planner/plan-types.js'
import {checkPlanText, renderPlanFile, specDigest} from '../../src/planner/planfile.js'
import {generatedPlan} from '../support/generated-plan.js'
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

describe('plan file v1alpha2', () => {
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

  it('stores every object, reason and message once', () => {
    const data = parse(text)
    // The original svc-0-allow: deleted by delete-sidecar-policies and re-created by its undo, stored once.
    const mentions = text
      .split('\n')
      .filter((l) => l.includes('AuthorizationPolicy big/svc-0-allow') && !l.includes('svc-0-allow-'))
    expect(mentions.filter((l) => /^ {4}AuthorizationPolicy big\/svc-0-allow:$/.test(l))).toHaveLength(1)
    // A reason shared by the three policies is in the texts table once and named three times.
    const reason = 'spec.rules[0].to[0].operation.methods: HTTP method match: L7, needs a waypoint'
    expect(plan.spec.inventory.filter((i) => i.reasons.includes(reason))).toHaveLength(3)
    expect(text.split(reason)).toHaveLength(2)
    // Texts that differ only before a shared explanation keep their own beginning as `prefix`.
    expect(
      data.spec.inventory.some((i: {reasons: unknown[]}) =>
        i.reasons.some((r) => typeof r === 'object' && r !== null && 'prefix' in r),
      ),
    ).toBe(true)
    // No apiVersion repeated in references: spec.apiVersions says it once per kind.
    expect(data.spec.apiVersions).toMatchObject({AuthorizationPolicy: 'security.istio.io/v1', Deployment: 'apps/v1'})
  })

  it('detects an edit after the first apply in the tables too (the digest is over the expanded spec)', () => {
    const applied = renderPlanFile(started(plan))
    expect(checkPlanText(applied).problems).toEqual([])
    const editedObject = applied.replace('methods: [GET]', 'methods: [GET, POST]')
    expect(editedObject).not.toBe(applied)
    expect(checkPlanText(editedObject).problems.map((p) => p.path)).toEqual(['spec'])
    const data = parse(applied)
    data.spec.texts[Object.keys(data.spec.texts)[0]!] = 'nothing to see here'
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
    const noText = edit((spec) => (spec.hazards[0].message = {text: '0000000000'}))
    expect(noText).toContainEqual({
      path: 'spec.hazards[0].message',
      message: 'names text "0000000000", which spec.texts does not have',
    })
  })

  it('still reads plans written as v1alpha1 (the expanded form), with their recorded digest', () => {
    const v1alpha1 = `# an older plan\n${toCanonicalYaml(started(plan))}`
    expect(v1alpha1).toContain('apiVersion: mesh-migrate.io/v1alpha1')
    const checked = checkPlanText(v1alpha1)
    expect(checked.problems).toEqual([])
    expect(plain(checked.plan)).toEqual(plain(started(plan)))
    // Written again (the next apply records its step), it becomes v1alpha2 and its digest still holds.
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
})
