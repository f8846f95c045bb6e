// Issue 23 §2: the plan, inventory, census, preflight and show actions (src/actions) over the in-memory client, the
// manifest source and a fake io (test/support/fake-io.ts): what the commands run between their flags and their
// rendering, with stdout, stderr and the exit code the test's own. Nothing here reads the test process's COLUMNS,
// LANG, TTY or streams; the cli tier only proves the wiring of these actions to flags and the real process.
import {mkdir, mkdtemp, readdir, readFile, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import {beforeAll, describe, expect, it} from 'vitest'

import {census} from '../../src/actions/census.js'
import {unlockNamespace} from '../../src/actions/unlock.js'
import {validatePlans} from '../../src/actions/validate.js'
import {OWNER_ANNOTATION} from '../../src/executor/ownership.js'
import {namespaceInventory} from '../../src/actions/inventory.js'
import {planFleet, planNamespace, type PlanOneOptions, type PlanRun} from '../../src/actions/plan.js'
import {preflight, type PreflightOptions} from '../../src/actions/preflight.js'
import {planManifestChanges, planTimeline, readFleetOverview, readShownPlan} from '../../src/actions/show.js'
import {ClusterConnection} from '../../src/cli/plan-session.js'
import {CancelledError, InvalidPlanError, LockHeldError, UsageError, UserError} from '../../src/errors.js'
import {ExitCode} from '../../src/exit-codes.js'
import type {KubeClient} from '../../src/kube/types.js'
import type {KubeObject} from '../../src/planner/model.js'
import {renderPlanFile, specDigest} from '../../src/plan/planfile.js'
import {ClusterSource} from '../../src/sources/cluster.js'
import {loadManifestFiles, ManifestSource} from '../../src/sources/manifests.js'
import {FakeIo} from '../support/fake-io.js'
import {MemoryKube} from '../support/memory-kube.js'
import {REPO_ROOT} from '../support/shared.js'

const NS = 'bookinfo'
const BOOKINFO = path.join(REPO_ROOT, 'examples/bookinfo')
const FLEET = path.join(REPO_ROOT, 'examples/fleet')
/** What test/cli/fleet.test.ts accepts for examples/fleet: client-side routing its callers lose. */
const ACCEPT_LOST = ['E11/destination/shop', '*/VirtualService/frontend/shop-timeout']

let manifests: KubeObject[]

beforeAll(async () => {
  manifests = (await loadManifestFiles([BOOKINFO], {defaultNamespace: NS})).objects
})

const tmp = () => mkdtemp(path.join(os.tmpdir(), 'mesh-migrate-command-actions-'))

/** What `plan` makes every plan with, by default (its flags' defaults). */
const run: PlanRun = {
  options: {rootNamespace: 'istio-system', waypointName: 'waypoint', waypointFor: 'service'},
  inventory: {waypointFor: 'service'},
  generator: 'mesh-migrate/test',
  rootNamespace: 'istio-system',
  force: false,
  detailedExitcode: false,
}

/** `plan bookinfo --manifests examples/bookinfo --out OUT` with these options. */
function one(out: string, extra: Partial<PlanOneOptions> = {}): PlanOneOptions {
  return {...run, namespace: NS, out, keepProgress: false, planTextToStdout: true, ...extra}
}

/** An opener of the manifest source that counts how often it was opened. */
function manifestOpener(paths: string[]) {
  const opener = async () => {
    opener.opened++
    return new ManifestSource(paths)
  }
  opener.opened = 0
  return opener
}

/** A cluster connection that must not be made (a refusal comes first). */
const noConnection = ClusterConnection.of(
  new Proxy({} as KubeClient, {
    get(_, name) {
      throw new Error(`the cluster was contacted (${String(name)})`)
    },
  }),
)

describe('plan through the action layer', () => {
  it('writes the plan file, says so on stderr and nothing on stdout; unchanged on a re-run; exit 10 with --detailed-exitcode', async () => {
    const out = path.join(await tmp(), 'plans', 'bookinfo.yaml')
    const io = new FakeIo()
    const plan = await planNamespace(one(out), manifestOpener([BOOKINFO]), io)
    expect(plan.metadata.namespace).toBe(NS)
    expect(plan.spec.steps.map((s) => s.id)).toContain('create-waypoint')
    expect(await readFile(out, 'utf8')).toBe(renderPlanFile(plan))
    expect(io.stderr.text).toBe(`Wrote ${out}.\n`)
    expect(io.stdout.text).toBe('')
    expect(io.exitCode).toBeUndefined()

    const again = new FakeIo()
    await planNamespace(one(out, {detailedExitcode: true}), manifestOpener([BOOKINFO]), again)
    expect(again.stderr.text).toBe(`${out} is up to date (unchanged).\n`)
    expect(again.exitCode).toBe(ExitCode.ChangesPending)
    expect((await readdir(path.dirname(out))).sort()).toEqual(['bookinfo.yaml'])
  })

  it("--out -: the plan file on the io's stdout (none when stdout carries a document), no file written", async () => {
    const dir = await tmp()
    const io = new FakeIo()
    const plan = await planNamespace(one('-'), manifestOpener([BOOKINFO]), io)
    expect(io.stdout.text).toBe(renderPlanFile(plan))
    expect(io.stdout.text).toMatch(/^# /)
    expect(io.stderr.text).toBe('')
    const json = new FakeIo()
    await planNamespace(one('-', {planTextToStdout: false}), manifestOpener([BOOKINFO]), json)
    expect(json.stdout.text).toBe('')
    expect(await readdir(dir)).toEqual([])
  })

  it('refuses to overwrite a plan in progress before reading the source; --force replaces it', async () => {
    const out = path.join(await tmp(), 'bookinfo.yaml')
    const first = await planNamespace(one(out), manifestOpener([BOOKINFO]), new FakeIo())
    const applied = {id: 'preflight', phase: 'Applied' as const, at: '2026-12-04T11:00:00.000Z', by: 'alice'}
    const inProgress = renderPlanFile({...first, status: {specDigest: specDigest(first), steps: [applied]}})
    await writeFile(out, inProgress)

    const opener = manifestOpener([BOOKINFO])
    const error = await planNamespace(one(out), opener, new FakeIo()).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(UserError)
    expect((error as UserError).message).toBe(`${out} has applied steps: refusing to overwrite a plan in progress`)
    expect((error as UserError).exitCode).toBe(ExitCode.Failure)
    expect((error as UserError).suggestion).toContain(`mesh-migrate rollback ${out} --confirm ${NS}`)
    expect(opener.opened).toBe(0)
    expect(await readFile(out, 'utf8')).toBe(inProgress)

    const io = new FakeIo()
    await planNamespace(one(out, {force: true}), manifestOpener([BOOKINFO]), io)
    expect(io.stderr.text).toBe(`Wrote ${out}.\n`)
    expect(await readFile(out, 'utf8')).toBe(renderPlanFile(first))
  })

  it('a write that fails leaves no half-written plan and no temp file', async () => {
    const dir = await tmp()
    // The plan's path is a directory with something in it: the final rename fails after the text was written.
    const out = path.join(dir, 'bookinfo.yaml')
    await mkdir(out)
    await writeFile(path.join(out, 'keep'), 'x')
    const error = await planNamespace(one(out), manifestOpener([BOOKINFO]), new FakeIo()).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(Error)
    expect(await readdir(dir)).toEqual(['bookinfo.yaml'])
    expect(await readdir(out)).toEqual(['keep'])
  })

  it('a namespace the manifests do not have: an error naming it, no file', async () => {
    const dir = await tmp()
    const out = path.join(dir, 'nope.yaml')
    const error = await planNamespace(one(out, {namespace: 'nope'}), manifestOpener([BOOKINFO]), new FakeIo()).catch(
      (e: unknown) => e,
    )
    expect(error).toBeInstanceOf(UserError)
    expect((error as UserError).message).toMatch(/nope/)
    expect(await readdir(dir)).toEqual([])
  })

  it('from a live cluster: the plan, then the preflight preview on stderr, nothing on stdout, nothing written to the cluster', async () => {
    const out = path.join(await tmp(), 'bookinfo.yaml')
    const kube = new MemoryKube().seed(...manifests)
    const io = new FakeIo({env: {NO_COLOR: '1'}})
    const plan = await planNamespace(one(out), () => ClusterSource.open(kube), io)
    expect(plan.spec.steps.map((s) => s.id)).toContain('create-waypoint')
    expect(io.stderr.text).toMatch(
      new RegExp(
        `^Wrote ${out.replace(/[.]/g, '\\.')}\\.\n\nPreflight \\(re-checked by the preflight step when you apply\\):\n`,
      ),
    )
    // The in-memory cluster has no istiod: the preview says so.
    expect(io.stderr.text).toMatch(/istio-version/)
    expect(io.stdout.text).toBe('')
    // Planning reads; it never writes to the cluster.
    expect(
      kube.requests.filter((r) => !['get', 'list'].includes(r.verb) && r.kind !== 'SelfSubjectAccessReview'),
    ).toEqual([])
  })

  it('a fleet: one plan per namespace and plans/fleet.yaml in waves, said on stderr; blockers exit 1, else 10 with --detailed-exitcode', async () => {
    const dir = await tmp()
    const cwd = process.cwd()
    process.chdir(dir)
    try {
      const names = ['shop', 'pay', 'catalog', 'frontend']
      // Routing that shop's and frontend's callers would lose (E11) blocks their plans until it is accepted.
      const blocked = new FakeIo()
      const first = await planFleet(run, {namespaces: names}, manifestOpener([FLEET]), blocked)
      expect(blocked.stderr.text).toBe(
        `Wrote plans/fleet.yaml and 4 plan(s) (4 changed, 0 unchanged); 0 namespace(s) have nothing to migrate.\n${first.spec.summary.blocked} plan(s) have blockers; they cannot be applied until resolved (mesh-migrate show --fleet).\n`,
      )
      expect(first.spec.summary.blocked).toBeGreaterThan(0)
      expect(blocked.exitCode).toBe(ExitCode.Failure)

      const io = new FakeIo()
      const accepted = {...run, options: {...run.options, acceptLost: [...ACCEPT_LOST].sort()}, detailedExitcode: true}
      const fleet = await planFleet(accepted, {namespaces: names}, manifestOpener([FLEET]), io)
      expect(fleet.spec.waves.map((w) => w.namespaces)).toEqual([['catalog'], ['frontend'], ['pay', 'shop']])
      expect(fleet.spec.summary.blocked).toBe(0)
      expect((await readdir('plans')).sort()).toEqual([
        'catalog.yaml',
        'fleet.yaml',
        'frontend.yaml',
        'pay.yaml',
        'shop.yaml',
      ])
      expect(io.stderr.text).toMatch(
        /^Wrote plans\/fleet\.yaml and 4 plan\(s\) \(\d changed, \d unchanged\); 0 namespace\(s\) have nothing to migrate\.\n$/,
      )
      expect(io.stdout.text).toBe('')
      expect(io.exitCode).toBe(ExitCode.ChangesPending)
      expect(await readFleetOverview(undefined)).toEqual(fleet)

      // A namespace the manifests do not have: refused, naming it; nothing rewritten.
      const before = await readFile('plans/fleet.yaml', 'utf8')
      const error = await planFleet(run, {namespaces: ['shop', 'nope']}, manifestOpener([FLEET]), new FakeIo()).catch(
        (e: unknown) => e,
      )
      expect((error as UserError).message).toBe('namespace(s) nope do not exist in the manifests')
      expect(await readFile('plans/fleet.yaml', 'utf8')).toBe(before)
    } finally {
      process.chdir(cwd)
    }
  })
})

describe('inventory through the action layer', () => {
  it('offline and live give the same verdicts for the same objects', async () => {
    const request = {namespace: NS, rootNamespace: 'istio-system', waypointFor: 'service' as const}
    const offline = await namespaceInventory(new ManifestSource([BOOKINFO]), request)
    const live = await namespaceInventory(await ClusterSource.open(new MemoryKube().seed(...manifests)), request)
    expect(offline.apiVersion).toBeDefined()
    expect(offline.kind).toBe('Inventory')
    const verdicts = (doc: typeof offline) => doc.objects.map((o) => `${o.ref.kind}/${o.ref.name}: ${o.verdict}`).sort()
    expect(verdicts(offline).length).toBeGreaterThan(3)
    expect(verdicts(offline)).toContain('AuthorizationPolicy/ratings-get-only: L7')
    expect(verdicts(offline)).toContain('PeerAuthentication/default: L4')
    expect(verdicts(live)).toEqual(verdicts(offline))
  })

  it('a namespace the cluster does not have is an error with what to check, not an empty inventory', async () => {
    const source = await ClusterSource.open(new MemoryKube().seed(...manifests))
    const error = await namespaceInventory(source, {
      namespace: 'bookinf',
      rootNamespace: 'istio-system',
      waypointFor: 'service',
    }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(UserError)
    expect((error as UserError).message).toMatch(/bookinf/)
    expect((error as UserError).suggestion).toBe(
      'Check the name (kubectl get namespaces) and the --context; to plan from files, pass --manifests.',
    )
  })
})

describe('census through the action layer', () => {
  it('every namespace by data-plane mode, with its plan under the plans directory', async () => {
    const plansDir = await tmp()
    const planned = await planNamespace(
      one(path.join(plansDir, 'bookinfo.yaml')),
      manifestOpener([BOOKINFO]),
      new FakeIo(),
    )
    const kube = new MemoryKube().seed(...manifests, {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: {name: 'quiet', labels: {}},
    })
    const io = new FakeIo()
    const report = await census({cluster: ClusterConnection.of(kube), plansDir, plansDirGiven: true}, io)
    expect(report.kind).toBe('Census')
    expect(report.context).toBe('memory')
    const bookinfo = report.namespaces.find((n) => n.namespace === NS)
    expect(bookinfo?.mode).toBe('sidecar')
    expect(bookinfo?.sidecarInjection).toBe('istio-injection=enabled')
    expect(bookinfo?.plans).toEqual([
      {
        file: path.join(plansDir, 'bookinfo.yaml'),
        applied: 0,
        steps: planned.spec.steps.length,
        state: 'not-started',
        next: planned.spec.steps[0]!.id,
      },
    ])
    expect(report.namespaces.find((n) => n.namespace === 'quiet')?.mode).toBe('none')
    expect(io.stdout.text).toBe('')
    expect(io.stderr.text).toBe(report.notes.map((n) => `Note: ${n}\n`).join(''))
  })

  it('a --plans-dir that does not exist: exit 2 before the cluster is contacted', async () => {
    const missing = path.join(await tmp(), 'nope')
    const error = await census({cluster: noConnection, plansDir: missing, plansDirGiven: true}, new FakeIo()).catch(
      (e: unknown) => e,
    )
    expect(error).toBeInstanceOf(UsageError)
    expect((error as UserError).message).toBe(`--plans-dir ${missing} does not exist`)
  })
})

describe('preflight through the action layer', () => {
  const options = (extra: Partial<PreflightOptions> = {}): PreflightOptions => ({
    namespace: NS,
    cluster: noConnection,
    rootNamespace: 'istio-system',
    waypointName: 'waypoint',
    waypointFor: 'service',
    generator: 'mesh-migrate/test',
    ...extra,
  })

  it('a cluster without ambient Istio: the checks say what is missing, ok false, exit 1 on the io', async () => {
    const kube = new MemoryKube().seed(...manifests)
    const io = new FakeIo()
    const report = await preflight(options({cluster: ClusterConnection.of(kube)}), io)
    expect(report.kind).toBe('PreflightReport')
    expect(report.plan).toBe('(built from the cluster)')
    expect(report.context).toBe('memory')
    expect(report.ok).toBe(false)
    const errors = report.diagnostics.filter((d) => d.severity === 'error')
    expect(errors.length).toBeGreaterThan(0)
    expect(report.diagnostics.some((d) => d.check === 'istio-version' && d.severity === 'error')).toBe(true)
    expect(io.exitCode).toBe(ExitCode.Failure)
    expect(io.stdout.text).toBe('')
  })

  it('--check runs only the checks named', async () => {
    const kube = new MemoryKube().seed(...manifests)
    const report = await preflight(
      options({cluster: ClusterConnection.of(kube), checks: ['network-policies']}),
      new FakeIo(),
    )
    expect(new Set(report.diagnostics.map((d) => d.check))).toEqual(new Set(['network-policies']))
  })

  it('--plan of another namespace: exit 2 naming both, before the cluster is contacted', async () => {
    const dir = await tmp()
    const file = path.join(dir, 'bookinfo.yaml')
    await planNamespace(one(file), manifestOpener([BOOKINFO]), new FakeIo())
    const error = await preflight(options({namespace: 'shop', plan: file}), new FakeIo()).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(UsageError)
    expect((error as UserError).message).toBe(`${file} is the plan of namespace ${NS}, not shop`)
    expect((error as UserError).suggestion).toBe(`Run \`mesh-migrate preflight ${NS} --plan ${file}\`.`)
  })
})

describe('show through the action layer', () => {
  async function planned() {
    const file = path.join(await tmp(), 'bookinfo.yaml')
    const plan = await planNamespace(one(file), manifestOpener([BOOKINFO]), new FakeIo())
    return {file, plan}
  }

  it('a plan: read and checked, nothing said, no exit code; its timeline and its manifest changes', async () => {
    const {file, plan} = await planned()
    const io = new FakeIo()
    const shown = await readShownPlan(file, io)
    expect(shown).toEqual({file, plan})
    expect(io.stderr.text).toBe('')
    expect(io.exitCode).toBeUndefined()
    const timeline = await planTimeline(shown)
    expect(timeline.kind).toBe('Timeline')
    expect(timeline.namespace).toBe(NS)
    expect(timeline.apply.length).toBe(plan.spec.steps.length + 1)
    const changes = await planManifestChanges(shown)
    expect(changes.plan).toBe(file)
    expect(changes.steps.length).toBeGreaterThan(0)
  })

  it('a half-written (truncated) plan file is refused as invalid (exit 4), saying where', async () => {
    const {file} = await planned()
    const text = await readFile(file, 'utf8')
    await writeFile(file, text.slice(0, Math.floor(text.length / 2)))
    const error = await readShownPlan(file, new FakeIo()).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(InvalidPlanError)
    expect((error as InvalidPlanError).exitCode).toBe(ExitCode.Invalid)
    expect((error as InvalidPlanError).problems.length).toBeGreaterThan(0)
    expect((error as InvalidPlanError).message).toContain(file)
  })

  it('a plan edited after its first apply is shown with a warning on stderr and exit 4', async () => {
    const {file, plan} = await planned()
    const applied = {id: 'preflight', phase: 'Applied' as const, at: '2026-12-04T11:00:00.000Z', by: 'alice'}
    const edited = {...plan, spec: {...plan.spec, steps: plan.spec.steps.slice(0, -1)}}
    await writeFile(file, renderPlanFile({...edited, status: {specDigest: specDigest(plan), steps: [applied]}}))
    const io = new FakeIo()
    const shown = await readShownPlan(file, io)
    expect(shown.plan.spec.steps.length).toBe(plan.spec.steps.length - 1)
    expect(io.stderr.text).toMatch(new RegExp(`^Warning: ${file.replace(/[.]/g, '\\.')}`))
    expect(io.exitCode).toBe(ExitCode.Invalid)
  })

  it('--fleet without plans/fleet.yaml says how to write it', async () => {
    const dir = await tmp()
    const cwd = process.cwd()
    process.chdir(dir)
    try {
      const error = await readFleetOverview(undefined).catch((e: unknown) => e)
      expect((error as UserError).message).toBe('plans/fleet.yaml does not exist')
      expect((error as UserError).suggestion).toBe(
        'Write it with mesh-migrate plan -A (or -l SELECTOR, or several namespaces).',
      )
    } finally {
      process.chdir(cwd)
    }
  })
})

describe('unlock through the action layer', () => {
  const leaseRef = {apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', namespace: NS, name: 'mesh-migrate-lock'}
  /** A namespace locked by bob on another host, who last renewed the lock at `renewTime`. */
  function locked(renewTime: string) {
    return new MemoryKube().seed({
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: {name: 'mesh-migrate-lock', namespace: NS},
      spec: {holderIdentity: 'bob@elsewhere/4242/abc123', leaseDurationSeconds: 60, renewTime},
    })
  }
  const expired = '2026-01-01T00:00:00.000000Z'
  const unlock = (kube: MemoryKube, io: FakeIo, extra: {confirm?: string; force?: boolean} = {}) =>
    unlockNamespace(
      {namespace: NS, cluster: ClusterConnection.of(kube), confirm: extra.confirm, force: extra.force ?? false},
      io,
    )

  it('not locked: nothing released, nothing said, nothing deleted', async () => {
    const kube = new MemoryKube()
    const io = new FakeIo()
    expect(await unlock(kube, io)).toEqual({})
    expect(io.stderr.text).toBe('')
    expect(kube.requests.map((r) => r.verb)).toEqual(['get'])
  })

  it('an expired lock with --confirm: its holder said on stderr, the Lease deleted', async () => {
    const kube = locked(expired)
    const io = new FakeIo()
    expect(await unlock(kube, io, {confirm: NS})).toEqual({released: 'bob@elsewhere/4242/abc123'})
    expect(io.stderr.text).toBe(
      `Namespace ${NS} is locked by bob@elsewhere/4242/abc123 (expired: the holder stopped renewing).\n`,
    )
    expect(kube.peek(leaseRef)).toBeUndefined()
    expect(io.questions).toEqual([])
  })

  it('a holder that renews: exit 5 without --force; with --force the namespace typed at the prompt breaks it', async () => {
    const kube = locked(new Date().toISOString())
    const refused = await unlock(kube, new FakeIo(), {confirm: NS}).catch((e: unknown) => e)
    expect(refused).toBeInstanceOf(LockHeldError)
    expect((refused as UserError).exitCode).toBe(ExitCode.Locked)
    expect((refused as UserError).suggestion).toContain(`mesh-migrate unlock ${NS} --force`)
    expect(kube.peek(leaseRef)).toBeDefined()

    const wrong = new FakeIo({tty: true, answers: ['bookinf']})
    const cancelled = await unlock(kube, wrong, {force: true}).catch((e: unknown) => e)
    expect(cancelled).toBeInstanceOf(CancelledError)
    expect(kube.peek(leaseRef)).toBeDefined()

    const io = new FakeIo({tty: true, answers: [NS]})
    expect(await unlock(kube, io, {force: true})).toEqual({released: 'bob@elsewhere/4242/abc123'})
    expect(io.questions).toEqual([
      `Break the lock held by bob@elsewhere/4242/abc123. Type the namespace name (${NS}) to confirm:`,
    ])
    expect(kube.peek(leaseRef)).toBeUndefined()
  })

  it('nobody to ask and no --confirm, or a --confirm of another namespace: exit 2, the lock left in place', async () => {
    const kube = locked(expired)
    const unasked = await unlock(kube, new FakeIo()).catch((e: unknown) => e)
    expect(unasked).toBeInstanceOf(UsageError)
    expect((unasked as UserError).message).toBe(
      `breaking the lock on ${NS} needs confirmation, and there is no terminal to ask on`,
    )
    expect((unasked as UserError).suggestion).toBe(`Pass --confirm ${NS}.`)
    const mismatch = await unlock(kube, new FakeIo(), {confirm: 'shop'}).catch((e: unknown) => e)
    expect((mismatch as UserError).message).toBe(`--confirm shop does not match ${NS}`)
    expect(kube.peek(leaseRef)).toBeDefined()
  })
})

describe('validate through the action layer', () => {
  async function planned() {
    const file = path.join(await tmp(), 'bookinfo.yaml')
    const plan = await planNamespace(one(file), manifestOpener([BOOKINFO]), new FakeIo())
    return {file, plan}
  }

  it('a valid plan passes: nothing on stderr, no exit code', async () => {
    const {file} = await planned()
    const io = new FakeIo()
    const report = await validatePlans({names: [file]}, io)
    expect(report).toEqual({
      apiVersion: report.apiVersion,
      kind: 'ValidationReport',
      valid: true,
      files: [{file, valid: true, problems: [], blockers: []}],
    })
    expect(io.stderr.text).toBe('')
    expect(io.exitCode).toBeUndefined()
  })

  it('a truncated plan and a missing one: every problem on stderr as file:line, exit 4; the valid one still valid', async () => {
    const {file} = await planned()
    const dir = path.dirname(file)
    const text = await readFile(file, 'utf8')
    const cut = path.join(dir, 'cut.yaml')
    await writeFile(cut, text.slice(0, Math.floor(text.length / 2)))
    const io = new FakeIo()
    const report = await validatePlans({names: [file, cut, path.join(dir, 'none.yaml')]}, io)
    expect(report.valid).toBe(false)
    expect(report.files.map((f) => [f.file, f.valid])).toEqual([
      [file, true],
      [cut, false],
      [path.join(dir, 'none.yaml'), false],
    ])
    expect(io.exitCode).toBe(ExitCode.Invalid)
    const lines = io.stderr.text.split('\n').filter(Boolean)
    expect(lines.length).toBe(report.files[1]!.problems.length + report.files[2]!.problems.length)
    expect(
      lines.every((l) => l.startsWith(`invalid ${cut}`) || l.startsWith(`invalid ${path.join(dir, 'none.yaml')}`)),
    ).toBe(true)
  })

  it('a plan in progress: offline, a note that only the cluster knows its owner; --cluster, another owner is a problem', async () => {
    const {file, plan} = await planned()
    const applied = {id: 'preflight', phase: 'Applied' as const, at: '2026-12-04T11:00:00.000Z', by: 'alice'}
    await writeFile(file, renderPlanFile({...plan, status: {specDigest: specDigest(plan), steps: [applied]}}))
    const offline = new FakeIo()
    expect((await validatePlans({names: [file]}, offline)).valid).toBe(true)
    expect(offline.stderr.text).toBe(
      'Checked offline: whether a plan in progress is the one first applied to its namespace is only known in the cluster (validate --cluster).\n',
    )
    const other = `sha256:${'0'.repeat(64)}`
    const owner = {plan: file, digest: other, by: 'bob', since: '2026-12-01T00:00:00Z'}
    const kube = new MemoryKube().seed({
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: {name: NS, annotations: {[OWNER_ANNOTATION]: JSON.stringify(owner)}},
    })
    const io = new FakeIo()
    const report = await validatePlans({names: [file], cluster: ClusterConnection.of(kube)}, io)
    expect(report.valid).toBe(false)
    expect(report.files[0]!.problems.map((p) => p.message)).toEqual([
      expect.stringMatching(new RegExp(`^namespace ${NS} is owned by another plan: .* first applied by bob`)),
    ])
    expect(io.stderr.text).toMatch(
      new RegExp(`^invalid ${file.replace(/[.]/g, '\\.')}: spec: namespace ${NS} is owned by another plan`),
    )
    expect(io.exitCode).toBe(ExitCode.Invalid)
  })
})

describe('the connection of a command', () => {
  it("finds the kubeconfig through the io's environment, not the test process's", async () => {
    const dir = await tmp()
    const missing = path.join(dir, 'no-such-kubeconfig')
    const io = new FakeIo({env: {KUBECONFIG: missing, HOME: dir}})
    const error = await ClusterConnection.fromFlags({}, io)
      .connect()
      .catch((e: unknown) => e)
    expect(error).toBeInstanceOf(UserError)
    expect((error as UserError).message).toContain(`none of the files in $KUBECONFIG exist (${missing})`)
  })
})
