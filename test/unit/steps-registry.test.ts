// The step registry (src/steps/index.ts) is the one place that knows the step kinds: the catalogue, validate's write
// rules, the rollback order and the step lists in the docs must all agree with it.
import {readFileSync} from 'node:fs'
import {describe, expect, it} from 'vitest'
import {STEP_ACTIONS} from '../../src/planner/plan-types.js'
import {rollbackSequence} from '../../src/plan/rollback.js'
import {STEP_KINDS, UNDO_KINDS, UNDO_UNITS, WRITE_RULES} from '../../src/steps/index.js'
import {stepKindTable} from '../support/step-table.js'
import type {MigrationPlan, PlanStep} from '../../src/planner/plan-types.js'

const read = (file: string) => readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8')
const inOrder = (text: string) =>
  [...text.matchAll(/`([a-z-]+)`/g)].map((m) => m[1]).filter((a) => (STEP_ACTIONS as readonly string[]).includes(a!))

describe('step registry', () => {
  it('has one module per action of the catalogue, in plan order, and each is undone exactly once', () => {
    expect(STEP_KINDS.map((k) => k.action)).toEqual([...STEP_ACTIONS])
    expect([...UNDO_KINDS].map((k) => k.action).sort()).toEqual([...STEP_ACTIONS].sort())
    expect(Object.keys(WRITE_RULES).sort()).toEqual([...STEP_ACTIONS].sort())
  })

  it('undoes the sidecar tail as one unit, injection label and restart before istio.io/dataplane-mode (DOMAIN §4.3)', () => {
    expect(UNDO_UNITS).toEqual([
      ['remove-sidecar-injection', 'restart-workloads', 'delete-sidecar-policies', 'verify-dataplane'],
    ])
    const undo = UNDO_KINDS.map((k) => k.action)
    expect(undo.indexOf('restart-workloads')).toBeLessThan(undo.indexOf('enable-ambient'))
    expect(undo.indexOf('remove-sidecar-injection')).toBeLessThan(undo.indexOf('restart-workloads'))
    expect(undo.indexOf('bind-waypoint')).toBeLessThan(undo.indexOf('create-policies'))
    expect(undo.indexOf('create-policies')).toBeLessThan(undo.indexOf('create-waypoint'))
  })

  it('rollback --step takes the whole unit of the last touched step, in undo order', () => {
    const step = (action: PlanStep['action']): PlanStep => ({
      id: action,
      action,
      description: '',
      preconditions: [],
      operations: [],
      verify: [],
      undo: {description: '', operations: []},
    })
    const steps = STEP_KINDS.map((k) => step(k.action))
    const applied = [
      'preflight',
      'create-waypoint',
      'wait-waypoint',
      'bind-waypoint',
      'enable-ambient',
      'remove-sidecar-injection',
      'restart-workloads',
    ]
    const plan = {
      spec: {steps},
      status: {steps: applied.map((id) => ({id, phase: 'Applied'}))},
    } as unknown as MigrationPlan
    expect(rollbackSequence(plan, {lastOnly: true}).steps.map((s) => s.id)).toEqual([
      'remove-sidecar-injection',
      'restart-workloads',
    ])
    expect(rollbackSequence(plan).steps.map((s) => s.id)).toEqual([
      'remove-sidecar-injection',
      'restart-workloads',
      'enable-ambient',
      'bind-waypoint',
      'wait-waypoint',
      'create-waypoint',
      'preflight',
    ])
  })

  it('docs/architecture.md shows the step-kind table rendered from the registry', () => {
    const doc = read('docs/architecture.md')
    const table = doc
      .slice(
        doc.indexOf('<!-- step-kinds:start -->') + '<!-- step-kinds:start -->'.length,
        doc.indexOf('<!-- step-kinds:end -->'),
      )
      .trim()
    // On failure: paste the expected table between the markers.
    expect(table).toBe(stepKindTable())
  })

  it('docs/contract.md and the README list every step action, in plan order', () => {
    const contract = read('docs/contract.md')
    const section = contract.slice(contract.indexOf('### Step actions'), contract.indexOf('### Operations'))
    expect(inOrder(section)).toEqual([...STEP_ACTIONS])
    const readme = read('README.md')
    const list = readme.slice(readme.indexOf('The steps, in order'), readme.indexOf('describes\nthem.'))
    expect(inOrder(list)).toEqual([...STEP_ACTIONS])
  })
})
