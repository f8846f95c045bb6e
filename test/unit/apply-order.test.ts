// Which steps `apply` runs, given the plan's record (engine.stepsToApply): never a step "behind" one
// that may have written, as a rollback stopped half-way leaves them (its order is not the reverse).
import {copyFile, mkdtemp} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import {beforeEach, describe, expect, it} from 'vitest'

import {stepsToApply} from '../../src/executor/engine.js'
import {clearInvocation, recordInvocation} from '../../src/invocation.js'
import {PlanState} from '../../src/executor/plan-state.js'
import type {StepPhase} from '../../src/planner/plan-types.js'
import {REPO_ROOT} from '../support/shared.js'

describe('stepsToApply', () => {
  let state: PlanState
  const ids = () => state.plan.spec.steps.map((s) => s.id)
  /** Record phases by step id; every other step stays Pending. */
  function phases(map: Record<string, StepPhase>): void {
    state.plan.status = {
      specDigest: 'sha256:x',
      steps: Object.entries(map).map(([id, phase]) => ({id, phase, at: '2025-01-01T00:00:00Z', by: 'test'})),
    }
  }
  const appliedUpTo = (last: string, extra: Record<string, StepPhase> = {}): Record<string, StepPhase> => {
    const out: Record<string, StepPhase> = {}
    for (const id of ids()) {
      out[id] = 'Applied'
      if (id === last) break
    }
    return {...out, ...extra}
  }

  beforeEach(async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'mesh-migrate-apply-order-'))
    const file = path.join(dir, 'bookinfo.yaml')
    await copyFile(path.join(REPO_ROOT, 'plans/examples/bookinfo.yaml'), file)
    state = await PlanState.load(file)
    expect(ids()).toContain('remove-sidecar-injection')
    expect(ids()).toContain('restart-workloads')
  })

  it('a rollback stopped after restoring the injection label but before undoing the restart: apply refuses, naming both steps', () => {
    // The undo order restores remove-sidecar-injection before restart-workloads; the rollback died in between.
    phases(
      appliedUpTo('verify-dataplane', {
        'remove-sidecar-injection': 'RolledBack',
        'delete-sidecar-policies': 'RolledBack',
        'verify-dataplane': 'RolledBack',
      }),
    )
    for (const selection of [{kind: 'next'}, {kind: 'all'}, {kind: 'to', id: 'remove-sidecar-injection'}] as const) {
      let error: unknown
      try {
        stepsToApply(state, selection, false)
      } catch (e) {
        error = e
      }
      expect(error).toBeInstanceOf(Error)
      const e = error as Error & {exitCode: number; suggestion: string}
      expect(e.exitCode).toBe(1)
      expect(e.message).toContain('inconsistent')
      expect(e.message).toContain(
        'step remove-sidecar-injection is RolledBack but the later step restart-workloads is Applied',
      )
      expect(e.suggestion).toContain('mesh-migrate rollback')
      expect(e.suggestion).toContain('--retry')
    }
  })

  it('the same with the restart recorded Failed by the rollback: refused without --retry', () => {
    phases(
      appliedUpTo('verify-dataplane', {
        'remove-sidecar-injection': 'RolledBack',
        'restart-workloads': 'Failed',
        'delete-sidecar-policies': 'RolledBack',
        'verify-dataplane': 'RolledBack',
      }),
    )
    expect(() => stepsToApply(state, {kind: 'next'}, false)).toThrow(
      'step remove-sidecar-injection is RolledBack but the later step restart-workloads is Failed',
    )
  })

  it('with --retry the steps from the first one not Applied up to the last that may have written are re-run together', () => {
    phases(
      appliedUpTo('verify-dataplane', {
        'remove-sidecar-injection': 'RolledBack',
        'delete-sidecar-policies': 'RolledBack',
        'verify-dataplane': 'RolledBack',
      }),
    )
    expect(stepsToApply(state, {kind: 'next'}, true).map((s) => s.id)).toEqual([
      'remove-sidecar-injection',
      'restart-workloads',
    ])
    expect(stepsToApply(state, {kind: 'all'}, true).map((s) => s.id)).toEqual([
      'remove-sidecar-injection',
      'restart-workloads',
      'delete-sidecar-policies',
      'verify-dataplane',
    ])
    expect(() => stepsToApply(state, {kind: 'to', id: 'remove-sidecar-injection'}, true)).toThrow(
      'would stop behind step restart-workloads',
    )
  })

  it('consistent records are unchanged: a failed step blocks, a finished rollback or a --step rollback of the tail does not', () => {
    phases(appliedUpTo('create-policies', {'create-policies': 'Failed'}))
    expect(() => stepsToApply(state, {kind: 'next'}, false)).toThrow('step create-policies is Failed')
    expect(stepsToApply(state, {kind: 'next'}, true).map((s) => s.id)).toEqual(['create-policies'])

    phases(Object.fromEntries(ids().map((id) => [id, 'RolledBack' as StepPhase])))
    expect(stepsToApply(state, {kind: 'next'}, false).map((s) => s.id)).toEqual([ids()[0]])

    phases(
      appliedUpTo('verify-dataplane', {
        'remove-sidecar-injection': 'RolledBack',
        'restart-workloads': 'RolledBack',
        'delete-sidecar-policies': 'RolledBack',
        'verify-dataplane': 'RolledBack',
      }),
    )
    expect(stepsToApply(state, {kind: 'next'}, false).map((s) => s.id)).toEqual(['remove-sidecar-injection'])
  })

  // Issue 19 §7: once nobody holds the namespace (the lock is ours), the same command resumes what a dead or
  // interrupted apply left; only a Failed step (its cause may remain) needs --retry.
  it('a step left Running or Interrupted: refused while another apply may hold it; resumed when resumable', () => {
    for (const phase of ['Running', 'Interrupted'] as const) {
      phases(appliedUpTo('create-waypoint', {'wait-waypoint': phase}))
      expect(() => stepsToApply(state, {kind: 'next'}, false)).toThrow(`step wait-waypoint is ${phase}`)
      expect(stepsToApply(state, {kind: 'next'}, false, true).map((s) => s.id)).toEqual(['wait-waypoint'])
      expect(stepsToApply(state, {kind: 'all'}, false, true)[0]!.id).toBe('wait-waypoint')
    }
  })

  it('a Failed step still needs --retry when resumable, and the way out repeats the command as typed', () => {
    phases(appliedUpTo('create-waypoint', {'wait-waypoint': 'Failed'}))
    recordInvocation('mesh-migrate', ['apply', 'bookinfo', '--all', '--yes', '--timeout', '2m'])
    try {
      let error: (Error & {suggestion?: string}) | undefined
      try {
        stepsToApply(state, {kind: 'all'}, false, true)
      } catch (e) {
        error = e as Error
      }
      expect(error?.message).toContain('step wait-waypoint is Failed')
      expect(error?.suggestion).toContain('`mesh-migrate apply bookinfo --all --yes --timeout 2m --retry` re-runs it')
      expect(stepsToApply(state, {kind: 'all'}, true, true)[0]!.id).toBe('wait-waypoint')
    } finally {
      clearInvocation()
    }
  })
})
