// A plan of a namespace with hundreds of services stays reviewable: its markdown fits a pull-request
// comment (GitHub: 65,536 characters) with repeated changes summarised, and nothing is stored twice.
import {describe, expect, it} from 'vitest'

import {renderPlanFile} from '../../src/plan/planfile.js'
import {renderPlanMarkdown} from '../../src/ui/plan-view.js'
import {generatedPlan} from '../support/generated-plan.js'

describe('plans of many services', () => {
  const plan = generatedPlan(800)

  it('show -o markdown of 800 services fits a PR comment, counting repeated changes instead of listing them', () => {
    const md = renderPlanMarkdown(plan)
    expect(md.length).toBeLessThanOrEqual(65_536)
    expect(md).toContain('`create AuthorizationPolicy` ×1600: big/svc-0-allow-waypoint')
    expect(md).toContain('`restart Deployment` ×800:')
    expect(md).toMatch(/\| AuthorizationPolicy \| L7 \| [a-z-]+ \| 800 \| svc-0-allow, /)
    // Every step is still there, and small plans keep their full lists.
    for (const step of plan.spec.steps) expect(md).toContain(`\`${step.id}\``)
    const small = renderPlanMarkdown(generatedPlan(3))
    expect(small).toContain('| AuthorizationPolicy big/svc-1-allow |')
  })

  it('stores each object once: operations name it by its key, undo deletes name only the ref', () => {
    const text = renderPlanFile(plan)
    // Each created policy (1600 in create-policies, 800 L4 parts) and each deleted original (800) is stored once.
    const objects = text.slice(text.indexOf('\n  objects:\n'), text.indexOf('\n  texts:'))
    expect(objects.match(/^ {4}AuthorizationPolicy big\//gm)).toHaveLength(3200)
    // One apply per created policy, plus the undo of delete-sidecar-policies re-creating the 800 originals.
    expect(text.match(/^ *- apply AuthorizationPolicy big\//gm)).toHaveLength(3200)
    expect(text.split('\nkind: MigrationPlan')[1]!.match(/^\s*apiVersion: security.istio.io/gm)).toBeNull()
    for (const step of plan.spec.steps)
      for (const op of step.undo.operations) if (op.op === 'delete') expect(Object.keys(op)).toEqual(['op', 'ref'])
  })

  it("writes at most 6 KB per service for the generator's shape (issue 11)", () => {
    expect(Buffer.byteLength(renderPlanFile(plan)) / 800).toBeLessThanOrEqual(6 * 1024)
  })
})
