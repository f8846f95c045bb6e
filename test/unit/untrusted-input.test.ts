// Issue 20: plan files, manifests and names are untrusted input.
import {mkdtempSync, readFileSync, writeFileSync} from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import {describe, expect, it} from 'vitest'

import {ExitCode} from '../../src/exit-codes.js'
import {defaultPlanPath, isInside} from '../../src/executor/plan-store.js'
import {MAX_NESTING_DEPTH, nestingDepth} from '../../src/planner/input-limits.js'
import {isNamespaceName, nameRuleOf, objectNameProblem} from '../../src/planner/names.js'
import type {MigrationPlan} from '../../src/planner/plan-types.js'
import {checkPlanText, renderPlanFile, specDigest} from '../../src/plan/planfile.js'
import {statusProblems} from '../../src/plan/status-checks.js'
import {loadManifestFiles} from '../../src/sources/manifests.js'
import {InputRefused, readBoundedFile} from '../../src/sources/input-limits.js'

const example = checkPlanText(readFileSync('plans/examples/bookinfo.yaml', 'utf8')).plan!
const clone = () => structuredClone(example)
const problemsOf = (plan: MigrationPlan) => checkPlanText(renderPlanFile(plan)).problems.map((p) => p.message)
const NS_REF = 'core/Namespace//bookinfo'

describe('names (§1)', () => {
  it('namespaces are RFC 1123 labels; object names follow their kind', () => {
    for (const bad of ['../x', '../../etc', 'a/b', 'A', '-a', '', 'a'.repeat(64)])
      expect(isNamespaceName(bad)).toBe(false)
    expect(isNamespaceName('bookinfo')).toBe(true)
    expect(nameRuleOf('v1', 'Service')).toBe('rfc1035-label')
    expect(nameRuleOf('apps/v1', 'Deployment')).toBe('rfc1123-subdomain')
    expect(nameRuleOf('security.istio.io/v1', 'AuthorizationPolicy')).toBe('path-segment')
    expect(nameRuleOf('rbac.authorization.k8s.io/v1', 'ClusterRole')).toBe('path-segment')
    expect(
      objectNameProblem({apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', name: 'system:x'}),
    ).toBeUndefined()
    expect(objectNameProblem({apiVersion: 'v1', kind: 'ConfigMap', name: 'x', namespace: '../y'})).toMatch(
      /namespace "..\/y"/,
    )
    expect(objectNameProblem({apiVersion: 'example.com/v1', kind: 'Thing', name: '..'})).toMatch(/not "." or ".."/)
  })

  it('a plan file path never leaves plans/', () => {
    expect(() => defaultPlanPath('../../x/pwned')).toThrow(/not an RFC 1123 label/)
    expect(defaultPlanPath('bookinfo')).toBe(path.join('plans', 'bookinfo.yaml'))
    expect(isInside('plans', 'plans/../x.yaml')).toBe(false)
    expect(isInside('plans', 'plans/a.yaml')).toBe(true)
  })

  it('a manifest Namespace named ../../x/pwned is an input error (exit 2) at its line', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'untrusted-'))
    writeFileSync(path.join(dir, 'a.yaml'), 'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ../../x/pwned\n')
    await expect(loadManifestFiles([dir])).rejects.toMatchObject({
      exitCode: ExitCode.Usage,
      message: expect.stringMatching(/a\.yaml:1: Namespace name "..\/..\/x\/pwned" is not an RFC 1123 label/),
    })
  })

  it('a plan whose writes name an object ".." is invalid', () => {
    const plan = clone()
    const op = plan.spec.steps.find((s) => s.id === 'bind-waypoint')!.operations[0]!
    if (op.op !== 'label') throw new Error('expected a label operation')
    op.ref = {...op.ref, name: '..'}
    expect(problemsOf(plan).join('\n')).toMatch(/Namespace name ".." is not an RFC 1123 label/)
  })
})

describe('status is checked against what each step may observe (§4)', () => {
  function applied(plan: MigrationPlan, before: Record<string, unknown>): MigrationPlan {
    plan.status = {
      specDigest: specDigest(plan),
      steps: [
        {id: 'remove-sidecar-injection', phase: 'Applied', at: '2026-01-01T00:00:00Z', by: 'me', observed: {before}},
      ],
    }
    return plan
  }
  const step = () => example.spec.steps.find((s) => s.id === 'remove-sidecar-injection')!
  const nsOp = () => step().operations.find((o) => o.op === 'label')! as {labels: Record<string, string | null>}

  it('what the step really records passes', () => {
    const pre = step().preconditions.find((p) => p.check === 'namespace-labels') as {
      labels: Record<string, string | null>
    }
    const labels = Object.fromEntries(Object.keys(nsOp().labels).map((k) => [k, pre?.labels[k] ?? null]))
    expect(problemsOf(applied(clone(), {[NS_REF]: {labels}}))).toEqual([])
  })

  it('a label key the step does not write is refused (rollback would set it)', () => {
    const problems = problemsOf(
      applied(clone(), {[NS_REF]: {labels: {'pod-security.kubernetes.io/enforce': 'privileged'}}}),
    )
    expect(problems.join('\n')).toContain('label "pod-security.kubernetes.io/enforce" is not one the step writes')
  })

  it('a value the precondition rules out is refused', () => {
    const pre = step().preconditions.find((p) => p.check === 'namespace-labels') as {
      labels: Record<string, string | null>
    }
    const key = Object.keys(pre.labels).find((k) => k in nsOp().labels)!
    const problems = problemsOf(applied(clone(), {[NS_REF]: {labels: {[key]: 'disabled'}}}))
    expect(problems.join('\n')).toContain(`label "${key}" is recorded as "disabled" before the step`)
  })

  it('a step that labels and annotates one object (canary-waypoint) records both; an annotation it does not write is refused', () => {
    const plan = clone()
    const ref = {apiVersion: 'v1', kind: 'Namespace', name: plan.metadata.namespace}
    const WEIGHT = 'istio.io/use-waypoint-canary-weight'
    const CANARY = 'istio.io/use-waypoint-canary'
    plan.spec.steps.push({
      id: 'canary-waypoint-10',
      action: 'canary-waypoint',
      description: 'canary',
      preconditions: [],
      operations: [
        {op: 'annotate', ref, annotations: {[WEIGHT]: '10'}},
        {op: 'label', ref, labels: {[CANARY]: 'waypoint'}},
      ],
      verify: [],
      undo: {description: 'restore', operations: []},
    })
    const recorded = (before: Record<string, unknown>): MigrationPlan => {
      plan.status = {
        specDigest: specDigest(plan),
        steps: [{id: 'canary-waypoint-10', phase: 'Applied', at: '2026-01-01T00:00:00Z', by: 'me', observed: {before}}],
      }
      return plan
    }
    expect(statusProblems(recorded({[NS_REF]: {labels: {[CANARY]: null}, annotations: {[WEIGHT]: null}}}))).toEqual([])
    const problems = statusProblems(recorded({[NS_REF]: {annotations: {'example.io/other': 'x'}}}))
    expect(problems.map((p) => p.message).join('\n')).toContain(
      'annotation "example.io/other" is not one the step writes',
    )
  })

  it('objects the step does not write, unknown fields and unknown steps are refused', () => {
    const plan = applied(clone(), {'core/Namespace//kube-system': {labels: {}}})
    plan.status!.steps.push({id: 'no-such-step', phase: 'Applied', at: '2026-01-01T00:00:00Z', by: 'me'})
    const problems = problemsOf(plan).join('\n')
    expect(problems).toContain('writes no such object')
    expect(problems).toContain('the spec has no step "no-such-step"')
  })
})

describe('validate checks what the writes mean (§5)', () => {
  it('a delete without its re-create in the undo is refused', () => {
    const plan = clone()
    const step = plan.spec.steps.find((s) => s.operations.some((o) => o.op === 'delete'))!
    step.undo.operations = step.undo.operations.filter((o) => o.op !== 'apply')
    expect(problemsOf(plan).join('\n')).toMatch(/the step's undo does not re-create it/)
  })

  it('an allow-all copy of a restrictive ALLOW is refused', () => {
    const plan = clone()
    const step = plan.spec.steps.find((s) => s.id === 'create-policies')!
    const copy = step.operations.find(
      // ratings-get-only is deleted by the plan, which stores it: its copy is compared with it.
      (o) => o.op === 'apply' && o.object.metadata.name === 'ratings-get-only-waypoint',
    )
    if (copy?.op !== 'apply') throw new Error('expected a waypoint copy')
    copy.object.spec = {...copy.object.spec, rules: [{}]}
    expect(problemsOf(plan)).toContain(
      `AuthorizationPolicy "ratings-get-only-waypoint" is not ratings-get-only retargeted: spec.rules is [{}], the original's is [{"from":[{"source":{"principals":["cluster.local/ns/bookinfo/sa/bookinfo-reviews"]}}],"to":[{"operation":{"methods":["GET"],"paths":["/ratings/*"]}}]}]`,
    )
  })

  // Each created policy is compared with what the planner derives from the original the plan stores.
  const created = (plan: MigrationPlan, name: string) => {
    for (const step of plan.spec.steps)
      for (const op of step.operations) if (op.op === 'apply' && op.object.metadata.name === name) return op.object
    throw new Error(`the example plan creates no ${name}`)
  }

  it('a waypoint copy with an extra rule is refused', () => {
    const plan = clone()
    const copy = created(plan, 'details-no-delete-waypoint')
    copy.spec = {...copy.spec, rules: [...(copy.spec!.rules as unknown[]), {to: [{operation: {methods: ['GET']}}]}]}
    expect(problemsOf(plan).join('\n')).toMatch(
      /AuthorizationPolicy "details-no-delete-waypoint" is not details-no-delete retargeted: spec.rules is .*"GET".*, the original's is /,
    )
  })

  it('a waypoint copy with another action or a selector is refused', () => {
    const plan = clone()
    created(plan, 'details-no-delete-waypoint').spec!.action = 'ALLOW'
    const other = clone()
    created(other, 'ratings-get-only-waypoint').spec!.selector = {matchLabels: {app: 'ratings'}}
    expect(problemsOf(plan).join('\n')).toMatch(/spec.action is "ALLOW", the original's is "DENY"/)
    expect(problemsOf(other).join('\n')).toMatch(
      /"ratings-get-only-waypoint" is a waypoint copy, but it is not attached with targetRefs only/,
    )
  })

  it('an L4 part wider than the projection of the original is refused', () => {
    const plan = clone()
    // The projection keeps the principal (the method and path are L7): dropping it too allows every caller.
    created(plan, 'ratings-get-only-l4').spec!.rules = [{}]
    expect(problemsOf(plan)).toContain(
      'AuthorizationPolicy "ratings-get-only-l4" is not the L4 part of ratings-get-only: its rules [{}] are not what the planner derives from the original\'s ([{"from":[{"source":{"principals":["cluster.local/ns/bookinfo/sa/bookinfo-reviews"]}}]}])',
    )
    const widerSelector = clone()
    created(widerSelector, 'ratings-get-only-l4').spec!.selector = undefined
    expect(problemsOf(widerSelector).join('\n')).toMatch(
      /"ratings-get-only-l4" selects null, but ratings-get-only, whose L4 part it is, selects/,
    )
  })

  it('a companion admitting another principal, or more than the waypoint, is refused', () => {
    const plan = clone()
    const companion = created(plan, 'productpage-ingress-only-ztunnel')
    companion.spec!.rules = [
      {from: [{source: {principals: ['cluster.local/ns/bookinfo/sa/waypoint', 'cluster.local/ns/evil/sa/x']}}]},
    ]
    expect(problemsOf(plan)).toContain(
      `AuthorizationPolicy "productpage-ingress-only-ztunnel" admits cluster.local/ns/evil/sa/x, which is not the waypoint's principal (cluster.local/ns/bookinfo/sa/waypoint): a companion admits the waypoint only`,
    )
    const wider = clone()
    created(wider, 'ratings-get-only-ztunnel').spec!.rules = [
      {from: [{source: {principals: ['cluster.local/ns/bookinfo/sa/waypoint']}}]},
      {to: [{operation: {ports: ['9080']}}]},
    ]
    expect(problemsOf(wider).join('\n')).toMatch(
      /"ratings-get-only-ztunnel" is a companion, but not one ALLOW rule admitting principals/,
    )
  })

  // reviews-from-productpage is an L4 ALLOW the plan keeps (ztunnel enforces it as written): it is not stored in the plan,
  // only the fingerprint of its rules (spec.observed.keptRules), which its waypoint copy must hash to.
  const KEPT_COPY = 'reviews-from-productpage-waypoint'
  const keptRefusal = `AuthorizationPolicy "${KEPT_COPY}" is not reviews-from-productpage retargeted: its spec (without targetRefs) is not the rules of the original the plan recorded (spec.observed.keptRules["reviews-from-productpage"]): a copy carries the original's rules, nothing wider`

  it('the copy of a kept policy as planned passes; the plan records the fingerprint of the original rules', () => {
    const plan = clone()
    expect(Object.keys(plan.spec.observed.keptRules ?? {})).toEqual([
      'productpage-ingress-only',
      'reviews-from-productpage',
    ])
    expect(problemsOf(plan)).toEqual([])
  })

  it('an allow-all copy of a kept policy is refused', () => {
    const plan = clone()
    created(plan, KEPT_COPY).spec!.rules = [{}]
    expect(problemsOf(plan)).toContain(keptRefusal)
  })

  it('a copy of a kept policy with an extra rule, or an extra `from` in its rule, is refused', () => {
    const plan = clone()
    const copy = created(plan, KEPT_COPY)
    copy.spec!.rules = [...(copy.spec!.rules as unknown[]), {from: [{source: {namespaces: ['evil']}}]}]
    expect(problemsOf(plan)).toContain(keptRefusal)
    const other = clone()
    const rule = (created(other, KEPT_COPY).spec!.rules as {from: unknown[]}[])[0]!
    rule.from.push({source: {namespaces: ['evil']}})
    expect(problemsOf(other)).toContain(keptRefusal)
  })

  it('a copy of a kept policy without the fingerprint of its rules recorded is refused (it cannot be checked)', () => {
    const plan = clone()
    delete plan.spec.observed.keptRules!['reviews-from-productpage']
    expect(problemsOf(plan)).toContain(
      `AuthorizationPolicy "${KEPT_COPY}" is derived from reviews-from-productpage, which the plan keeps without recording the fingerprint of its rules (spec.observed.keptRules): it cannot be checked`,
    )
  })

  it('a policy naming an original it is not derived from is refused', () => {
    const plan = clone()
    const copy = created(plan, 'ratings-get-only-waypoint')
    copy.metadata.name = 'ratings-open'
    expect(problemsOf(plan).join('\n')).toMatch(
      /AuthorizationPolicy "ratings-open" says it is copied from ratings-get-only, but the planner derives only ratings-get-only-waypoint, ratings-get-only-ztunnel and ratings-get-only-l4 from it/,
    )
  })

  it('a waypoint other than the planned one is refused', () => {
    const plan = clone()
    const op = plan.spec.steps.find((s) => s.id === 'create-waypoint')!.operations[0]!
    if (op.op !== 'apply') throw new Error('expected an apply')
    op.object.spec = {...op.object.spec, listeners: [{name: 'mesh', port: 80, protocol: 'HTTP'}]}
    expect(problemsOf(plan).join('\n')).toMatch(/is not the waypoint the planner makes/)
  })
})

describe('bounded input (§7)', () => {
  it('devices and FIFOs are not read; files over the limit are refused', () => {
    expect(() => readBoundedFile('/dev/zero')).toThrow(InputRefused)
    const dir = mkdtempSync(path.join(os.tmpdir(), 'untrusted-'))
    const file = path.join(dir, 'big.yaml')
    writeFileSync(file, 'x'.repeat(200))
    process.env.MESH_MIGRATE_MAX_INPUT_BYTES = '100'
    try {
      expect(() => readBoundedFile(file)).toThrow(/over the input limit of 100 bytes/)
    } finally {
      delete process.env.MESH_MIGRATE_MAX_INPUT_BYTES
    }
    expect(readBoundedFile(file)).toHaveLength(200)
  })

  it('nesting 5,000 deep is an input error, in a plan file (exit 4 problem) and in manifests (exit 2)', async () => {
    const deep = `a: ${'['.repeat(5000)}${']'.repeat(5000)}\n`
    expect(checkPlanText(deep).problems[0]!.message).toMatch(/nested more than 100 levels/)
    const dir = mkdtempSync(path.join(os.tmpdir(), 'untrusted-'))
    writeFileSync(path.join(dir, 'deep.yaml'), deep)
    await expect(loadManifestFiles([dir])).rejects.toMatchObject({exitCode: ExitCode.Usage})
    expect(nestingDepth({a: {b: [1]}})).toBe(3)
    expect(MAX_NESTING_DEPTH).toBe(100)
  })

  it('an alias bomb is an input error (exit 2)', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'untrusted-'))
    const lines = ['a: &a [x, x, x, x, x, x, x, x, x]']
    for (let i = 0; i < 8; i++)
      lines.push(
        `${String.fromCharCode(98 + i)}: &${String.fromCharCode(98 + i)} [${Array(9)
          .fill(`*${String.fromCharCode(97 + i)}`)
          .join(', ')}]`,
      )
    writeFileSync(path.join(dir, 'bomb.yaml'), lines.join('\n') + '\n')
    await expect(loadManifestFiles([dir])).rejects.toMatchObject({exitCode: ExitCode.Usage})
  })
})

describe('the plans folder (§8)', () => {
  it("temp files of killed runs are removed by the next write; a live process's are left", async () => {
    const {writeFileAtomic} = await import('../../src/executor/plan-store.js')
    const {readdirSync} = await import('node:fs')
    const dir = mkdtempSync(path.join(os.tmpdir(), 'untrusted-plans-'))
    // PID 2^22+1 is above Linux's pid_max limit: no such process runs.
    const dead = `.bookinfo.yaml.tmp-${2 ** 22 + 1}-0123abcd`
    const live = `.bookinfo.yaml.tmp-${process.ppid}-0123abcd`
    writeFileSync(path.join(dir, dead), 'half a plan')
    writeFileSync(path.join(dir, live), 'being written')
    const warnings: string[] = []
    await writeFileAtomic(path.join(dir, 'bookinfo.yaml'), 'plan\n', (m) => warnings.push(m))
    expect(readdirSync(dir).sort()).toEqual([live, 'bookinfo.yaml'].sort())
    expect(warnings).toEqual([])
  })

  it('a plans folder every user may write to is warned about', async () => {
    const {chmodSync} = await import('node:fs')
    const {writeFileAtomic} = await import('../../src/executor/plan-store.js')
    const dir = mkdtempSync(path.join(os.tmpdir(), 'untrusted-plans-'))
    chmodSync(dir, 0o777)
    // The warning goes where the caller says (the command's stderr), not to the process's stderr.
    const written: string[] = []
    await writeFileAtomic(path.join(dir, 'a.yaml'), 'x\n', (m) => written.push(m))
    expect(written).toEqual([
      `Warning: ${dir}/ is writable by every user of this machine: anyone can replace a plan in it between review and apply. Restrict it: chmod o-w ${dir}`,
    ])
  })
})
