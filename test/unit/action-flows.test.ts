// Issue 23 §2: the apply, rollback and status flows through the action layer (src/actions) over the in-memory client
// and a fake io (test/support/fake-io.ts) — what the commands run between their flags and their rendering, with the
// prompt, Ctrl+C, the exit code and the terminal's width under the test's control instead of the process's. The plan
// is `mesh-migrate plan bookinfo --manifests examples/bookinfo`; the cluster starts as those manifests. The cli tier
// only proves the wiring of these flows to flags and the real process.
import {mkdtemp, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import {Config} from '@oclif/core'
import {beforeAll, describe, expect, it} from 'vitest'

import ApplyCommand from '../../src/commands/apply.js'
import {applyPlanSteps, type ApplyOptions, terminalApplyIO, validateApply} from '../../src/actions/apply.js'
import {rollBackPlan, selectFromRecord, terminalRollbackIO} from '../../src/actions/rollback.js'
import {planStatuses, renderStatusReport, type StatusOptions} from '../../src/actions/status.js'
import {ClusterConnection, lockOptions, PlanSession} from '../../src/cli/plan-session.js'
import {CancelledError, UsageError, UserError} from '../../src/errors.js'
import {ExitCode} from '../../src/exit-codes.js'
import {clearInvocation} from '../../src/invocation.js'
import type {StepSelection} from '../../src/executor/engine.js'
import type {KubeObject, ObjectRef} from '../../src/planner/model.js'
import {renderPlanFile, specDigest} from '../../src/plan/planfile.js'
import {painterFor} from '../../src/ui/color.js'
import {setTableLayout, stringWidth, terminalWidth} from '../../src/ui/table.js'
import {loadManifestFiles} from '../../src/sources/manifests.js'
import {FakeIo, type FakeIoOptions} from '../support/fake-io.js'
import {MemoryKube} from '../support/memory-kube.js'
import {offlinePlan} from '../support/offline-plan.js'
import {REPO_ROOT} from '../support/shared.js'

const NS = 'bookinfo'
const waypointRef: ObjectRef = {
  apiVersion: 'gateway.networking.k8s.io/v1',
  kind: 'Gateway',
  namespace: NS,
  name: 'waypoint',
}
const leaseRef: ObjectRef = {
  apiVersion: 'coordination.k8s.io/v1',
  kind: 'Lease',
  namespace: NS,
  name: 'mesh-migrate-lock',
}

let manifests: KubeObject[]
let planText: string

beforeAll(async () => {
  manifests = (await loadManifestFiles([path.join(REPO_ROOT, 'examples/bookinfo')], {defaultNamespace: NS})).objects
  const plan = offlinePlan(NS, manifests, {}, 'examples/bookinfo').plan
  // The preflight step checks an installed ambient Istio (istiod, ztunnel, istio-cni, Gateway API CRDs), which the
  // in-memory server does not model: it is recorded as passed, and the flows start at create-waypoint.
  const passed = {id: 'preflight', phase: 'Applied' as const, at: '2026-12-04T11:00:00.000Z', by: 'alice'}
  planText = renderPlanFile({...plan, status: {specDigest: specDigest(plan), steps: [passed]}})
})

/** istiod programs the waypoint once it is created (a controller on the in-memory server). */
function programWaypoints(kube: MemoryKube): void {
  kube.onWrite((obj, req) => {
    if (req.verb !== 'apply' || obj.kind !== 'Gateway' || obj.status) return
    kube.setStatus(waypointRef, {
      addresses: [{type: 'IPAddress', value: '10.96.0.10'}],
      conditions: [{type: 'Programmed', status: 'True', reason: 'Programmed'}],
    })
    kube.seed({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: {name: 'waypoint', namespace: NS},
      spec: {replicas: 1},
      status: {observedGeneration: 1, availableReplicas: 1},
    })
  })
}

/** The plan in a fresh file and a cluster holding the manifests, as the apply and rollback commands open them. */
async function rig() {
  const file = path.join(await mkdtemp(path.join(os.tmpdir(), 'mesh-migrate-actions-')), 'bookinfo.yaml')
  await writeFile(file, planText)
  const kube = new MemoryKube().seed(...manifests)
  programWaypoints(kube)
  return {file, kube}
}

async function openSession(file: string, kube: MemoryKube, io: FakeIo): Promise<PlanSession> {
  return PlanSession.load(file, ClusterConnection.of(kube), (m) => io.stderr.write(`${m}\n`))
}

const writeFlags = {'dry-run': 'none', timeout: '1s', 'lock-timeout': '0s', 'take-over': false} as const

/** `apply FILE` with these options, through validateApply and applyPlanSteps as the apply command runs them. */
async function apply(file: string, kube: MemoryKube, io: FakeIo, opts: {selection: StepSelection; yes?: boolean}) {
  const session = await openSession(file, kube, io)
  const options: ApplyOptions = {
    session,
    selection: opts.selection,
    lock: lockOptions('apply', file, writeFlags),
    dryRun: false,
    yes: opts.yes ?? false,
    diff: false,
    retry: false,
    allowOtherCluster: false,
    ignoreFleetOrder: false,
  }
  const applyIo = terminalApplyIO(io, {
    note: (m) => io.stderr.write(`${m}\n`),
    result: (m) => io.stdout.write(`${m}\n`),
  })
  const steps = await validateApply(options, applyIo)
  if (steps === 'up-to-date') return {session, applied: []}
  return {session, applied: await applyPlanSteps(options, applyIo, steps)}
}

/** `rollback FILE --confirm bookinfo`, through selectFromRecord and rollBackPlan as the rollback command runs them. */
async function rollback(file: string, kube: MemoryKube, io: FakeIo) {
  const session = await openSession(file, kube, io)
  const base = {
    session,
    lastOnly: false,
    lock: lockOptions('rollback', file, writeFlags),
    dryRun: false,
    allowOtherCluster: false,
  }
  const selection = await selectFromRecord(base, (m) => io.stderr.write(`${m}\n`))
  const undone = await rollBackPlan(
    {...base, selection},
    terminalRollbackIO(io, (m) => io.stderr.write(`${m}\n`)),
  )
  return {session, selection, undone}
}

const terminal = (opts: FakeIoOptions = {}) => new FakeIo({tty: true, columns: 120, ...opts})
const phases = (session: PlanSession) => session.state.plan.spec.steps.map((s) => [s.id, session.state.phase(s)])

describe('apply through the action layer', () => {
  it('applies several steps, asking before each on the terminal; records them in the file and the cluster', async () => {
    const {file, kube} = await rig()
    const io = terminal({answers: [true, true, true]})
    const {session, applied} = await apply(file, kube, io, {selection: {kind: 'to', id: 'create-policies'}})
    expect(applied?.map((a) => [a.id, a.outcome])).toEqual([
      ['create-waypoint', 'applied'],
      ['wait-waypoint', 'verified'],
      ['create-policies', 'applied'],
    ])
    expect(io.questions).toEqual([
      'Apply step create-waypoint?',
      'Apply step wait-waypoint?',
      'Apply step create-policies?',
    ])
    expect(io.exitCode).toBeUndefined()
    // Results on stdout, what will change on stderr.
    expect(io.stdout.text).toContain('Step 2/')
    expect(io.stdout.text).toMatch(/create-waypoint: applied and verified/)
    expect(io.stderr.text).toMatch(/will (create|apply) Gateway bookinfo\/waypoint/)
    expect(kube.peek(waypointRef)).toBeDefined()
    // The file records each step Applied; the lock is given back; no Ctrl+C handler outlives the command.
    const reread = await openSession(file, kube, io)
    expect(phases(reread).slice(0, 4)).toEqual(phases(session).slice(0, 4))
    expect(
      phases(reread)
        .slice(0, 4)
        .every(([, phase]) => phase === 'Applied'),
    ).toBe(true)
    expect(kube.peek(leaseRef)?.spec?.holderIdentity ?? undefined).toBeUndefined()
    expect(io.listening).toBe(0)
  })

  it('a prompt answered no: CancelledError naming the step and what was applied before it; nothing written for it', async () => {
    const {file, kube} = await rig()
    const io = terminal({answers: [true, true, false]})
    const error = await apply(file, kube, io, {selection: {kind: 'to', id: 'create-policies'}}).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(CancelledError)
    expect((error as UserError).message).toBe(
      'Apply cancelled: nothing was written for step create-policies (create-waypoint, wait-waypoint applied before it).',
    )
    expect((error as UserError).suggestion).toBe(`Re-run \`mesh-migrate apply ${file} --step\` when ready.`)
    expect(io.questions.at(-1)).toBe('Apply step create-policies?')
    // The policies the step would create were never sent; the steps before it stay applied.
    expect(kube.writes().filter((w) => w.kind === 'AuthorizationPolicy')).toEqual([])
    const reread = await openSession(file, kube, io)
    expect(phases(reread).slice(0, 4)).toEqual([
      ['preflight', 'Applied'],
      ['create-waypoint', 'Applied'],
      ['wait-waypoint', 'Applied'],
      ['create-policies', 'Pending'],
    ])
    expect(kube.peek(leaseRef)?.spec?.holderIdentity ?? undefined).toBeUndefined()
  })

  it('Ctrl+C during a step: the step is recorded Interrupted, the lock released, exit 130 and what to run next', async () => {
    const {file, kube} = await rig()
    const io = terminal()
    // Ctrl+C arrives while create-policies sends its second object.
    let applies = 0
    kube.onRequest((req) => {
      if (req.verb === 'apply' && req.kind === 'AuthorizationPolicy' && ++applies === 2) io.interrupt()
    })
    const {session, applied} = await apply(file, kube, io, {selection: {kind: 'to', id: 'create-policies'}, yes: true})
    expect(applied).toBeUndefined()
    expect(io.exitCode).toBe(ExitCode.Interrupted)
    expect(io.stderr.text).toContain('Interrupting: finishing the request in flight')
    expect(io.stderr.text).toContain(
      `Interrupted. The step is recorded as Interrupted in ${file}; re-run \`mesh-migrate apply ${file}\` to finish it or \`mesh-migrate rollback ${file}\` to undo.`,
    )
    const reread = await openSession(file, kube, io)
    expect(reread.state.phase(session.state.plan.spec.steps.find((s) => s.id === 'create-policies')!)).toBe(
      'Interrupted',
    )
    expect(kube.peek(leaseRef)?.spec?.holderIdentity ?? undefined).toBeUndefined()
    expect(io.listening).toBe(0)
  })

  it('nobody to ask (stdin is not a terminal, or CI is set): refused with exit 2 and the flag, before the cluster is contacted', async () => {
    for (const io of [new FakeIo(), terminal({env: {CI: 'true'}})]) {
      const {file, kube} = await rig()
      const error = await apply(file, kube, io, {selection: {kind: 'next'}}).catch((e: unknown) => e)
      expect(error).toBeInstanceOf(UsageError)
      expect((error as UserError).exitCode).toBe(ExitCode.Usage)
      expect((error as UserError).message).toBe(
        `apply asks before each step, but there is no terminal to ask on${io.env.CI ? ' (CI is set)' : ''}`,
      )
      expect((error as UserError).suggestion).toBe('Review the plan (mesh-migrate show), then pass --yes.')
      expect(kube.requests).toEqual([])
      expect(io.questions).toEqual([])
    }
  })
})

describe('a command over a fake io', () => {
  it('a refusal: exit code on the io, Error and Next on its stderr, nothing on its stdout, nothing asked', async () => {
    const {file} = await rig()
    const config = await Config.load(REPO_ROOT)
    // No terminal to ask on: refused before the cluster is contacted (the kubeconfig given does not exist).
    const command = new ApplyCommand([file, '--kubeconfig', path.join(path.dirname(file), 'none')], config)
    const io = new FakeIo()
    Object.assign(command, {io})
    try {
      await (command as unknown as {_run(): Promise<unknown>})._run()
    } finally {
      // The command recorded its command line for its Next: lines (src/invocation.ts): no state outlives the test.
      clearInvocation()
    }
    expect(io.exitCode).toBe(ExitCode.Usage)
    expect(io.stderr.text).toContain(
      'Error: apply asks before each step, but there is no terminal to ask on\nNext: Review the plan (mesh-migrate show), then pass --yes.\n',
    )
    expect(io.stdout.text).toBe('')
    expect(io.questions).toEqual([])
  })
})

describe('rollback through the action layer', () => {
  it('undoes what the record says was applied, in the safe order, and frees the namespace', async () => {
    const {file, kube} = await rig()
    await apply(file, kube, terminal(), {selection: {kind: 'to', id: 'create-policies'}, yes: true})
    const io = terminal()
    const {session, selection, undone} = await rollback(file, kube, io)
    expect(selection.steps.map((s) => s.id)).toEqual([
      'create-policies',
      'wait-waypoint',
      'create-waypoint',
      'preflight',
    ])
    expect(undone?.map((u) => u.id)).toEqual(['create-policies', 'wait-waypoint', 'create-waypoint', 'preflight'])
    expect(kube.peek(waypointRef)).toBeUndefined()
    expect(io.stderr.text).toContain(`Every step of ${file} is rolled back: namespace ${NS} is free for another plan.`)
    expect(io.exitCode).toBeUndefined()
    expect(
      phases(session)
        .slice(0, 4)
        .every(([, phase]) => phase === 'RolledBack'),
    ).toBe(true)
  })

  it('Ctrl+C during an undo: exit 130, the rollback says how to finish, the lock is released', async () => {
    const {file, kube} = await rig()
    await apply(file, kube, terminal(), {selection: {kind: 'to', id: 'create-policies'}, yes: true})
    const io = terminal()
    let deletes = 0
    kube.onRequest((req) => {
      if (req.verb === 'delete' && req.kind === 'AuthorizationPolicy' && ++deletes === 1) io.interrupt()
    })
    const {undone} = await rollback(file, kube, io)
    expect(undone).toBeUndefined()
    expect(io.exitCode).toBe(ExitCode.Interrupted)
    expect(io.stderr.text).toContain(`Interrupted. Re-run \`mesh-migrate rollback ${file}\` to finish the rollback.`)
    expect(kube.peek(leaseRef)?.spec?.holderIdentity ?? undefined).toBeUndefined()
    // The waypoint's step was not reached: still there for the re-run to undo.
    expect(kube.peek(waypointRef)).toBeDefined()
  })
})

describe('status through the action layer', () => {
  /** `status FILE` as the status command runs it, then laid out and rendered for the io's stdout as emit does. */
  async function status(file: string, kube: MemoryKube, io: FakeIo, extra: Partial<StatusOptions> = {}) {
    const report = await planStatuses(
      {
        files: [file],
        onePlan: true,
        cluster: ClusterConnection.of(kube),
        offline: false,
        detailedExitcode: false,
        ...extra,
      },
      io,
    )
    setTableLayout({wide: false, width: terminalWidth(io.env, io.stdout)})
    try {
      return {report, text: renderStatusReport(report, painterFor(io.stdout, io.env), io.now().getTime())}
    } finally {
      setTableLayout({width: Number.POSITIVE_INFINITY})
    }
  }

  it('progress from the cluster, drift of the applied steps, exit 10 with --detailed-exitcode', async () => {
    const {file, kube} = await rig()
    await apply(file, kube, terminal(), {selection: {kind: 'to', id: 'create-policies'}, yes: true})
    // Someone deletes the waypoint: the applied step drifted.
    kube.remove(waypointRef)
    const io = terminal()
    const {report} = await status(file, kube, io, {detailedExitcode: true})
    const plan = report.plans[0]!
    expect(plan.progressFrom).toBe('cluster')
    expect(plan.steps.filter((s) => s.phase === 'Applied').map((s) => s.id)).toEqual([
      'preflight',
      'create-waypoint',
      'wait-waypoint',
      'create-policies',
    ])
    expect(plan.steps.find((s) => s.id === 'create-waypoint')?.drift).toBe('drifted')
    expect(plan.drifted).toBeGreaterThanOrEqual(1)
    expect(io.exitCode).toBe(ExitCode.ChangesPending)
  })

  it('renders to the width of the io, 80 or 200 columns, and colours only its terminal, whatever the test process runs in', async () => {
    const {file, kube} = await rig()
    await apply(file, kube, terminal(), {selection: {kind: 'to', id: 'create-policies'}, yes: true})
    // A drifted step names what drifted in the NOTE column: the column that gives way on a narrow terminal.
    kube.remove(waypointRef)
    const texts: Record<number, string> = {}
    for (const columns of [80, 200]) {
      const io = terminal({columns, env: {NO_COLOR: '1'}})
      const {text} = await status(file, kube, io)
      texts[columns] = text
      const lines = text.split('\n')
      expect(lines[0]).toMatch(new RegExp(`^${file} \\(namespace ${NS}\\): in-progress, 4/\\d+ applied, 1 drifted$`))
      expect(lines[1]).toMatch(/^STEP\s+PHASE\s+AGE\s+BY\s+DRIFT\s+NOTE$/)
      expect(lines.find((l) => l.startsWith('create-waypoint'))).toMatch(
        /^create-waypoint\s+Applied\s+\S+\s+\S+\s+drifted\s+/,
      )
      for (const line of lines.slice(1)) expect(stringWidth(line)).toBeLessThanOrEqual(columns)
    }
    // At 80 columns the drifted step's note wraps onto three lines; at 200 it takes one.
    expect(texts[80]!.split('\n').length).toBe(texts[200]!.split('\n').length + 2)
    expect(texts[80]).not.toBe(texts[200])
    // The width is the io's: COLUMNS given to it counts where there is no terminal; a pipe without it has no limit.
    expect((await status(file, kube, new FakeIo({env: {COLUMNS: '80'}}))).text).toBe(texts[80])
    expect((await status(file, kube, new FakeIo({env: {COLUMNS: '200'}}))).text).toBe(texts[200])
    expect((await status(file, kube, new FakeIo())).text).toBe(texts[200])
    // Colour only on the io's terminal, never with NO_COLOR: the plan's name is bold, a drifted step red.
    const coloured = (await status(file, kube, terminal({columns: 200}))).text
    expect(coloured).toContain(`\u001B[1m${file}\u001B[22m`)
    expect(coloured).toContain('\u001B[31mdrifted\u001B[39m')
    expect(texts[200]).not.toContain('\u001B[')
  })
})
