// The edge cases of DOMAIN §7 whose exit codes and flags matter, through the built CLI (bin/run.js): the planner's
// side of the same fixtures is tested in-process in test/unit/edge-cases.test.ts.
import {mkdtemp} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import {beforeAll, describe, expect, it} from 'vitest'

import {runCli} from '../support/cli.js'
import {planOf} from '../support/plan-file.js'
import {REPO_ROOT} from '../support/shared.js'

const FIXTURES = path.join(REPO_ROOT, 'test/fixtures/edge-cases')
const NS = 'bookinfo'

describe('edge cases through the built CLI (exit codes and flags)', () => {
  let cwd: string
  beforeAll(async () => {
    cwd = await mkdtemp(path.join(os.tmpdir(), 'mesh-migrate-edge-cases-'))
  })
  const plan = (file: string, ...flags: string[]) =>
    runCli(['plan', NS, '--manifests', path.join(FIXTURES, file), '--out', '-', ...flags], {cwd})

  it('E11: exit 1 while a client-side loss is unaccepted; each --accept-lost clears exactly its blocker', async () => {
    const blocked = await plan('E11-client-side-routing.yaml')
    expect(blocked.code).toBe(1)
    expect(blocked.stderr).toContain('The plan has 2 blocker(s)')
    expect(planOf(blocked.stdout).spec.summary.blockers).toBe(2)
    const partly = await plan(
      'E11-client-side-routing.yaml',
      '--accept-lost',
      'E11/VirtualService/bookinfo/shop-ratings-timeout',
    )
    expect(partly.code).toBe(1)
    expect(planOf(partly.stdout).spec.options.acceptLost).toEqual(['E11/VirtualService/bookinfo/shop-ratings-timeout'])
    const accepted = await plan(
      'E11-client-side-routing.yaml',
      '--accept-lost',
      'E11/VirtualService/bookinfo/shop-ratings-timeout',
      '--accept-lost',
      'E11/DestinationRule/bookinfo/shop-ratings-pool',
      '--detailed-exitcode',
    )
    expect(accepted.code).toBe(10)
    expect(planOf(accepted.stdout).spec.blockers).toEqual([])
  })

  it('E16: --istio-version 1.28 blocks on the dry-run policy, 1.29 does not', async () => {
    const old = await plan('E16-custom-audit-dry-run.yaml', '--istio-version', '1.28')
    expect(old.code).toBe(1)
    expect(planOf(old.stdout).spec.blockers.map((b) => b.id)).toEqual([
      'E16/AuthorizationPolicy/bookinfo/details-lockdown-trial/dry-run',
    ])
    const current = await plan('E16-custom-audit-dry-run.yaml', '--istio-version', '1.29')
    expect(current.code).toBe(0)
    expect(planOf(current.stdout).spec.steps.map((s) => s.id)).toContain('create-policies')
  })

  it('E5/E8: --opted-out enroll drops the opt-out step that keep-out writes', async () => {
    const keepOut = planOf((await plan('E5-inject-false.yaml')).stdout)
    expect(keepOut.spec.steps.map((s) => s.id)).toContain('opt-out-workloads')
    const enroll = await plan('E5-inject-false.yaml', '--opted-out', 'enroll')
    expect(enroll.code).toBe(0)
    expect(planOf(enroll.stdout).spec.steps.map((s) => s.id)).not.toContain('opt-out-workloads')
  })

  it('E14: --accept-hazard cannot accept a blocker that is not a hazard', async () => {
    const r = await plan(
      'E14-root-namespace-l7-policies.yaml',
      '--accept-hazard',
      'apply/policy-deny-all/AuthorizationPolicy/istio-system/ratings-read-only/Deployment/ratings-v1/restart-workloads',
    )
    expect(r.code).toBe(1)
    const p = planOf(r.stdout)
    expect(p.spec.hazards.find((h) => h.accepted)?.id).toBe(
      'apply/policy-deny-all/AuthorizationPolicy/istio-system/ratings-read-only/Deployment/ratings-v1/restart-workloads',
    )
    expect(p.spec.blockers.map((b) => b.id)).toContain('E14/AuthorizationPolicy/istio-system/ratings-read-only')
  })

  it('writes a plan file that `validate` accepts', async () => {
    const out = path.join(cwd, 'e25.yaml')
    const r = await runCli(
      ['plan', NS, '--manifests', path.join(FIXTURES, 'E25-network-policies.yaml'), '--out', out],
      {cwd},
    )
    expect(r.code).toBe(0)
    const v = await runCli(['validate', out], {cwd})
    expect(v.code, v.stderr).toBe(0)
  })
})
