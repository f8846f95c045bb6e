// Issue 22 §2, §3: the fleet runner's semantics (src/actions/fleet-run.ts, fleet-apply.ts, fleet-rollback.ts) over
// the in-memory client (test/support/fleet-rig.ts: the plans of `plan -A`, a cluster with the controllers a migration
// verifies against) and a fake io — no spawned CLI. Waves run in order and a wave starts only once every plan of the
// one before is Applied and verified; at most --parallel namespaces run at once; the first failure stops new starts
// while the running namespaces finish their step; re-running resumes; --wave / --to-wave; a cycle's plans all go up
// to bind-waypoint before any goes on; rollback --fleet in reverse wave order with the same stop semantics; Ctrl+C
// finishes the request in flight and records Interrupted; the -o json document validates against its schema. The
// real kube-apiserver runs the same through the CLI in test/e2e/fleet-apply.test.ts.
import {mkdtemp, readFile, rm, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import {describe, expect, it} from 'vitest'
import {stringify} from 'yaml'

import {applyFleet, type FleetFlags, fleetApplyOptions, loadFleetFile} from '../../src/actions/fleet-apply.js'
import {type FleetRollbackFlags, fleetRollbackOptions, rollbackFleet} from '../../src/actions/fleet-rollback.js'
import type {FleetApplyResult} from '../../src/cli/contract.js'
import {renderFleetRun} from '../../src/cli/fleet-run-view.js'
import {planStatuses, renderStatusReport} from '../../src/actions/status.js'
import {ClusterConnection} from '../../src/cli/plan-session.js'
import {CancelledError, UsageError, UserError} from '../../src/errors.js'
import {ExitCode} from '../../src/exit-codes.js'
import {
  checkFleetOrder,
  FleetOrderError,
  fullyApplied,
  loadFleetBeside,
  startedDependants,
} from '../../src/executor/fleet-order.js'
import {inventoryChanges} from '../../src/executor/inventory-refresh.js'
import {checkPlanText} from '../../src/plan/planfile.js'
import {formatRef} from '../../src/planner/refs.js'
import {loadManifestFiles} from '../../src/sources/manifests.js'
import type {MigrationPlan} from '../../src/planner/plan-types.js'
import {painterFor} from '../../src/ui/color.js'
import {FakeIo, type FakeIoOptions} from '../support/fake-io.js'
import {fleetRig, type FleetRig, fleetStatusFiles} from '../support/fleet-rig.js'
import type {RequestRecord} from '../support/memory-kube.js'
import {schemaProblems} from '../support/schemas.js'
import {REPO_ROOT} from '../support/shared.js'

// examples/fleet: catalog (wave 1) → frontend (wave 2) → pay ⇄ shop (wave 3, a cycle); accepted as the README does.
const EXAMPLE = [path.join(REPO_ROOT, 'examples/fleet')]
const ACCEPT = ['*/VirtualService/frontend/shop-timeout', 'E11/destination/shop']

const writeFlags = {'dry-run': 'none', timeout: '1s', 'lock-timeout': '0s', 'take-over': false} as const

/** Five namespaces that depend on nothing: one wave of five, for --parallel and the stop semantics within a wave. */
async function independentFleet(names = ['na', 'nb', 'nc', 'nd', 'ne']): Promise<FleetRig> {
  const docs = names.flatMap((ns) => [
    {apiVersion: 'v1', kind: 'Namespace', metadata: {name: ns, labels: {'istio-injection': 'enabled'}}},
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: {name: ns, namespace: ns},
      spec: {selector: {app: ns}, ports: [{name: 'http', port: 8080}]},
    },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: {name: ns, namespace: ns},
      spec: {
        replicas: 1,
        selector: {matchLabels: {app: ns}},
        template: {metadata: {labels: {app: ns}}, spec: {containers: [{name: ns, image: `example/${ns}:1`}]}},
      },
    },
  ])
  const {mkdtemp} = await import('node:fs/promises')
  const os = await import('node:os')
  const dir = await mkdtemp(path.join(os.tmpdir(), 'mesh-migrate-fleet-manifests-'))
  const file = path.join(dir, 'namespaces.json')
  await writeFile(file, JSON.stringify({apiVersion: 'v1', kind: 'List', items: docs}))
  return fleetRig([file])
}

const tty = (opts: FakeIoOptions = {}) => new FakeIo({tty: true, columns: 120, ...opts})

/** `apply --fleet` of `waves` as the command runs it once its flags are read (--yes: nothing asked). */
async function apply(rig: FleetRig, io: FakeIo, waves: number[], opts: {parallel?: number; retry?: boolean} = {}) {
  return applyFleet({
    loaded: await loadFleetFile(rig.fleetFile),
    waves,
    retry: opts.retry ?? false,
    parallel: opts.parallel ?? 4,
    allowOtherCluster: false,
    dryRun: false,
    write: writeFlags,
    connection: ClusterConnection.of(rig.kube),
    io,
    note: (m) => io.stderr.write(`${m}\n`),
  })
}

async function rollback(rig: FleetRig, io: FakeIo, opts: {parallel?: number; wave?: number} = {}) {
  const flags: FleetRollbackFlags = {
    confirm: 'fleet',
    parallel: opts.parallel ?? 4,
    'allow-other-cluster': false,
    'dry-run': 'none',
    timeout: '1s',
    'lock-timeout': '0s',
    ...(opts.wave ? {wave: opts.wave} : {}),
  }
  const options = await fleetRollbackOptions(rig.fleetFile, flags, (m) => io.stderr.write(`${m}\n`), io)
  return rollbackFleet({...options, connection: ClusterConnection.of(rig.kube)})
}

const readPlan = async (rig: FleetRig, ns: string): Promise<MigrationPlan> =>
  checkPlanText(await readFile(rig.planFile(ns), 'utf8')).plan!

const runOf = (result: FleetApplyResult, ns: string) => result.namespaces.find((n) => n.namespace === ns)!

/** The namespace a request is about (a Namespace's own label writes included). */
const nsOf = (r: RequestRecord) => r.namespace ?? (r.kind === 'Namespace' ? r.name : undefined)

/** Index of the first and last request the tool sent for each namespace (the requests are in the order sent). */
function spans(requests: RequestRecord[]): Map<string, [number, number]> {
  const out = new Map<string, [number, number]>()
  requests.forEach((r, i) => {
    const ns = nsOf(r)
    if (ns === undefined) return
    const span = out.get(ns)
    out.set(ns, span ? [span[0], i] : [i, i])
  })
  return out
}

/** The most namespaces of `members` whose first-to-last request spans overlap (istio-system is read by each). */
function mostAtOnce(requests: RequestRecord[], members: string[]): number {
  const all = [...spans(requests)].filter(([ns]) => members.includes(ns)).map(([, span]) => span)
  return Math.max(...all.map(([start]) => all.filter(([s, e]) => s <= start && start <= e).length))
}

const writesIn = (rig: FleetRig, ns: string) => rig.kube.writes().filter((w) => nsOf(w) === ns && w.kind !== 'Lease')
const labelsOf = (rig: FleetRig, ns: string) =>
  rig.kube.peek({apiVersion: 'v1', kind: 'Namespace', name: ns})?.metadata.labels ?? {}

/** Every namespace ambient: labels switched, every app pod without a sidecar and captured by ztunnel. */
function expectAmbient(rig: FleetRig, ns: string) {
  expect(labelsOf(rig, ns)).toMatchObject({'istio.io/dataplane-mode': 'ambient'})
  expect(labelsOf(rig, ns)['istio-injection']).toBeUndefined()
  const pods = rig.kube.objects('Pod').filter((p) => p.metadata.namespace === ns)
  expect(pods.length).toBeGreaterThan(0)
  for (const pod of pods) {
    expect(pod.metadata.annotations?.['sidecar.istio.io/status']).toBeUndefined()
    expect(pod.metadata.annotations?.['ambient.istio.io/redirection']).toBe('enabled')
  }
}

/**
 * examples/fleet's catalog and frontend, copied under the names a-… and b-…: each catalog's routing is exported to all
 * (judged once for the fleet and left out of the other plans' inventories), so the two catalogs form a cycle.
 */
async function exportedPairs(): Promise<string> {
  const {objects} = await loadManifestFiles(EXAMPLE)
  const pair = objects.filter((o) => ['catalog', 'frontend'].includes(o.metadata.namespace ?? o.metadata.name))
  const copy = (prefix: string) => {
    let text = JSON.stringify(pair)
    for (const n of ['catalog', 'frontend'])
      text = text.replace(new RegExp(`(?<![\\w-])${n}(?![\\w-])`, 'g'), `${prefix}-${n}`)
    return JSON.parse(text) as unknown[]
  }
  const dir = await mkdtemp(path.join(os.tmpdir(), 'mesh-migrate-pairs-'))
  const file = path.join(dir, 'pairs.yaml')
  await writeFile(file, [...copy('a'), ...copy('b')].map((o) => stringify(o)).join('---\n'))
  return file
}

describe('apply --fleet: the waves in order', () => {
  it('applies plans that count on routing judged once for the fleet: the inventory refresh takes the fleet’s routing edges as handled', async () => {
    const rig = await fleetRig([await exportedPairs()], ['*'])
    const refs = JSON.stringify(
      (await loadFleetFile(rig.fleetFile)).fleet.spec.edges.filter((e) => e.kind === 'routing'),
    )
    expect(refs).toContain('a-catalog')
    expect(refs).toContain('b-catalog')
    const io = new FakeIo()
    const result = await apply(rig, io, [1, 2], {parallel: 2})
    expect(result.result, io.stderr.text).toBe('complete')
    for (const ns of ['a-catalog', 'b-catalog', 'a-frontend', 'b-frontend']) expectAmbient(rig, ns)
  })

  it('without the fleet file, apply of one of those plans stops before bind-waypoint on the routing it counted on', async () => {
    const rig = await fleetRig([await exportedPairs()], ['*'])
    await rm(rig.fleetFile)
    const changes = await inventoryChanges(rig.kube, await readPlan(rig, 'a-catalog'))
    expect(changes.map((c) => [formatRef(c.ref), c.change, c.action])).toContainEqual([
      'VirtualService b-catalog/b-catalog',
      'new',
      'lost-client-side',
    ])
  })

  it('wave N+1 starts only once every plan of wave N is Applied and verified; the cycle goes to bind-waypoint first; every namespace ends ambient', async () => {
    const rig = await fleetRig(EXAMPLE, ACCEPT)
    expect(rig.waves).toEqual([['catalog'], ['frontend'], ['pay', 'shop']])
    // At the first request of a later wave, the plans of the earlier waves are read from their files.
    const seenAtStart: Record<string, boolean[]> = {}
    const waveOf = (ns: string) => rig.waves.findIndex((w) => w.includes(ns)) + 1
    rig.kube.onRequest(async (req) => {
      const ns = nsOf(req)
      if (ns === undefined || seenAtStart[ns] || waveOf(ns) <= 1) return
      seenAtStart[ns] = await Promise.all(
        rig.waves
          .slice(0, waveOf(ns) - 1)
          .flat()
          .map(async (earlier) => fullyApplied(await readPlan(rig, earlier))),
      )
    })
    const io = new FakeIo()
    const result = await apply(rig, io, [1, 2, 3], {parallel: 2})

    expect(result.result).toBe('complete')
    expect(result.namespaces.map((n) => [n.wave, n.namespace, n.state])).toEqual([
      [1, 'catalog', 'applied'],
      [2, 'frontend', 'applied'],
      [3, 'pay', 'applied'],
      [3, 'shop', 'applied'],
    ])
    expect(seenAtStart).toEqual({frontend: [true], pay: [true, true], shop: [true, true]})
    // By the requests sent: no request of a wave before the last of the wave before it.
    const span = spans(rig.kube.requests)
    expect(span.get('catalog')![1]).toBeLessThan(span.get('frontend')![0])
    expect(span.get('frontend')![1]).toBeLessThan(Math.min(span.get('pay')![0], span.get('shop')![0]))
    // By the steps' recorded times (the plan files): every step of a wave before any step of the next.
    const times = async (ns: string, keep: (id: string) => boolean = () => true) =>
      (await readPlan(rig, ns))
        .status!.steps.filter((s) => s.id !== 'preflight' && keep(s.id))
        .map((s) => Date.parse(s.at))
    expect(Math.max(...(await times('catalog')))).toBeLessThanOrEqual(Math.min(...(await times('frontend'))))
    expect(Math.max(...(await times('frontend')))).toBeLessThanOrEqual(
      Math.min(...(await times('pay')), ...(await times('shop'))),
    )
    // The cycle: both plans up to bind-waypoint (its namespace label write) before either switches to ambient.
    const labelWrites = (key: string) =>
      rig.kube.requests.flatMap((r, i) =>
        r.kind === 'Namespace' &&
        ['pay', 'shop'].includes(r.name!) &&
        r.verb === 'patch' &&
        JSON.stringify(r.body).includes(key)
          ? [i]
          : [],
      )
    const binds = labelWrites('istio.io/use-waypoint')
    const ambient = labelWrites('istio.io/dataplane-mode')
    expect(binds).toHaveLength(2)
    expect(ambient).toHaveLength(2)
    expect(Math.max(...binds)).toBeLessThan(Math.min(...ambient))
    const early = new Set(['create-waypoint', 'wait-waypoint', 'create-policies', 'bind-waypoint'])
    expect(
      Math.max(...(await times('pay', (id) => early.has(id))), ...(await times('shop', (id) => early.has(id)))),
    ).toBeLessThanOrEqual(
      Math.min(...(await times('pay', (id) => !early.has(id))), ...(await times('shop', (id) => !early.has(id)))),
    )
    for (const ns of ['catalog', 'frontend', 'pay', 'shop']) {
      expectAmbient(rig, ns)
      expect(fullyApplied(await readPlan(rig, ns))).toBe(true)
    }
    // The -o json document validates against schemas/fleet-apply-result.json; no Ctrl+C handler outlives the run.
    expect(schemaProblems(JSON.stringify(result), 'FleetApplyResult')).toEqual([])
    expect(result.next).toBeUndefined()
    expect(io.listening).toBe(0)

    // Re-running a finished fleet writes nothing.
    const changes = () => rig.kube.writes().filter((w) => w.kind !== 'Lease').length
    const before = changes()
    const again = await apply(rig, new FakeIo(), [1, 2, 3])
    expect(again.result).toBe('complete')
    expect(again.namespaces.map((n) => n.state)).toEqual(['up-to-date', 'up-to-date', 'up-to-date', 'up-to-date'])
    expect(changes()).toBe(before)
  }, 60_000)

  it('--parallel N: at most N namespaces of a wave at once (and more than one)', async () => {
    for (const parallel of [1, 2, 3]) {
      const rig = await independentFleet()
      expect(rig.waves).toEqual([['na', 'nb', 'nc', 'nd', 'ne']])
      const result = await apply(rig, new FakeIo(), [1], {parallel})
      expect(result.result).toBe('complete')
      expect(result.namespaces.every((n) => n.state === 'applied')).toBe(true)
      expect(mostAtOnce(rig.kube.requests, rig.waves[0]!)).toBe(parallel)
      expect(result.parallel).toBe(parallel)
    }
  }, 60_000)
})

/** Holds the requests `held` matches until `ns`'s plan file records `step` Failed: that namespace is running then. */
function holdUntilFailed(rig: FleetRig, held: (r: RequestRecord) => boolean, ns: string, step: string) {
  rig.kube.onRequest(async (req) => {
    if (!held(req)) return
    for (let i = 0; i < 200; i++) {
      const plan = await readPlan(rig, ns)
      if (plan.status?.steps.some((s) => s.id === step && s.phase === 'Failed')) break
      await new Promise((r) => setTimeout(r, 10))
    }
    // The failure is recorded; the fleet learns of it as the namespace's apply returns.
    await new Promise((r) => setTimeout(r, 20))
  })
}

const restartOf = (ns: string) => (r: RequestRecord) => r.verb === 'patch' && r.kind === 'Deployment' && r.name === ns
const invalid = (ns: string) =>
  ({
    verb: 'patch',
    kind: 'Deployment',
    name: ns,
    status: 422,
    reason: 'Invalid',
    message: `admission denied ${ns}`,
  }) as const

describe('apply NS in a cycle: the protocol the plans count on', () => {
  it('goes past bind-waypoint only once the namespaces of its cycle it depends on have bound their waypoints; rollback warns the other way', async () => {
    const rig = await fleetRig(EXAMPLE, ACCEPT)
    expect((await apply(rig, new FakeIo(), [1, 2])).namespaces.every((n) => n.state === 'applied')).toBe(true)
    // pay ⇄ shop: up to its own bind-waypoint pay may go now; past it, not before shop has bound its waypoint.
    expect(await checkFleetOrder(rig.planFile('pay'), 'pay', false, false)).toBeUndefined()
    const refused = await checkFleetOrder(rig.planFile('pay'), 'pay', false, true).catch((e: unknown) => e)
    expect(refused).toBeInstanceOf(FleetOrderError)
    const error = refused as FleetOrderError
    expect(error.exitCode).toBe(ExitCode.Locked)
    expect(error.message).toContain('pay is in a cycle of')
    expect(error.message).toMatch(
      /- shop \(wave 3, .*shop\.yaml: bind-waypoint not applied, \d+ of \d+ steps applied\)/,
    )
    expect(error.message).toContain('shop → pay (authorization)')
    expect(error.suggestion).toContain('mesh-migrate apply shop --to bind-waypoint')
    expect(error.suggestion).toContain('--wave 3')
    // --ignore-fleet-order: returned, to be warned about and recorded.
    expect((await checkFleetOrder(rig.planFile('pay'), 'pay', true, true))!.pending.map((d) => d.namespace)).toEqual([
      'shop',
    ])
    // The runner keeps the protocol (both up to bind-waypoint first); then nothing is pending.
    expect((await apply(rig, new FakeIo(), [3])).namespaces.every((n) => n.state === 'applied')).toBe(true)
    expect(await checkFleetOrder(rig.planFile('pay'), 'pay', false, true)).toBeUndefined()
    // The mirror image: rolling shop back warns that pay, past its bind-waypoint, counts on shop's waypoint.
    const dependants = await startedDependants(await loadFleetBeside(rig.planFile('shop')).then((l) => l!), 'shop')
    expect(dependants.map((d) => d.namespace)).toEqual(['pay'])
  })
})

describe('apply --fleet: the first failure', () => {
  it('stops new starts, lets the running namespace finish its step, names the namespace, the step and what to run; re-running resumes', async () => {
    const rig = await independentFleet()
    rig.kube.failNext(invalid('na'))
    // nb restarts its workloads while na fails at the same step.
    holdUntilFailed(rig, restartOf('nb'), 'na', 'restart-workloads')
    const io = new FakeIo()
    const result = await apply(rig, io, [1], {parallel: 2})

    expect(result.result).toBe('failed')
    expect(result.namespaces.map((n) => [n.namespace, n.state])).toEqual([
      ['na', 'failed'],
      ['nb', 'stopped'],
      ['nc', 'not-started'],
      ['nd', 'not-started'],
      ['ne', 'not-started'],
    ])
    const na = runOf(result, 'na')
    expect(na.error).toMatchObject({step: 'restart-workloads', exitCode: ExitCode.Failure})
    expect(na.error!.message).toContain('admission denied na')
    expect(na.remaining).toEqual(['restart-workloads', 'verify-dataplane'])
    // nb finished the step it was running (recorded Applied), then started no other.
    const nb = runOf(result, 'nb')
    expect(nb.steps.at(-1)).toBe('restart-workloads')
    expect(nb.remaining).toEqual(['verify-dataplane'])
    expect((await readPlan(rig, 'nb')).status!.steps.find((s) => s.id === 'restart-workloads')?.phase).toBe('Applied')
    for (const ns of ['nc', 'nd', 'ne']) {
      expect(writesIn(rig, ns)).toEqual([])
      // Not started: every step but the preflight recorded before is left.
      expect(runOf(result, ns).remaining).toEqual([
        'enable-ambient',
        'remove-sidecar-injection',
        'restart-workloads',
        'verify-dataplane',
      ])
    }
    // The progress: the failed namespace's line is marked failed, the others say why they stopped or never started.
    expect(io.stderr.text).toContain('✖ wave 1 na [FAILED: failed at restart-workloads: ')
    expect(io.stderr.text).toContain('✔ wave 1 nb — stopped (1 step(s) left)')
    expect(io.stderr.text).toContain('wave 1 nc — not started (an earlier failure)')
    // What to run: the failed step needs --retry (the fleet command again, with it).
    expect(result.next).toContain(`mesh-migrate apply --fleet ${rig.fleetFile} --all --yes --retry`)
    const text = renderFleetRun(result, painterFor(io.stdout, {NO_COLOR: '1'}))
    expect(text).toContain(`Failed in wave 1 of ${rig.fleetFile}.`)
    expect(text).toContain('na failed at step restart-workloads: ')
    expect(text).toContain(`Next: ${result.next}`)
    expect(schemaProblems(JSON.stringify(result), 'FleetApplyResult')).toEqual([])

    // Re-running without --retry: the Failed step is not re-run behind the user's back.
    const plain = await apply(rig, new FakeIo(), [1], {parallel: 2})
    expect(runOf(plain, 'na').state).toBe('failed')
    expect(runOf(plain, 'na').error?.message).toContain('restart-workloads is Failed')
    // With --retry: each namespace goes on from where it was.
    const again = await apply(rig, new FakeIo(), [1], {parallel: 2, retry: true})
    expect(again.result).toBe('complete')
    expect(again.namespaces.map((n) => [n.namespace, n.state, n.steps])).toEqual([
      ['na', 'applied', ['restart-workloads', 'verify-dataplane']],
      ['nb', 'applied', ['verify-dataplane']],
      ['nc', 'applied', ['enable-ambient', 'remove-sidecar-injection', 'restart-workloads', 'verify-dataplane']],
      ['nd', 'applied', ['enable-ambient', 'remove-sidecar-injection', 'restart-workloads', 'verify-dataplane']],
      ['ne', 'applied', ['enable-ambient', 'remove-sidecar-injection', 'restart-workloads', 'verify-dataplane']],
    ])
    for (const ns of rig.waves[0]!) expectAmbient(rig, ns)
  }, 60_000)

  it('a failure in wave 1 starts no later wave: nothing is written in them', async () => {
    const rig = await fleetRig(EXAMPLE, ACCEPT)
    rig.kube.failNext({
      verb: 'apply',
      kind: 'Gateway',
      status: 422,
      reason: 'Invalid',
      message: 'no GatewayClass istio-waypoint',
    })
    const result = await apply(rig, new FakeIo(), [1, 2, 3])
    expect(result.result).toBe('failed')
    expect(result.namespaces.map((n) => n.state)).toEqual(['failed', 'not-started', 'not-started', 'not-started'])
    expect(runOf(result, 'catalog').error).toMatchObject({step: 'create-waypoint'})
    for (const ns of ['frontend', 'pay', 'shop']) {
      expect(writesIn(rig, ns)).toEqual([])
      expect((await readPlan(rig, ns)).status!.steps.map((s) => s.id)).toEqual(['preflight'])
    }
  }, 60_000)
})

describe('apply --fleet: Ctrl+C', () => {
  it('finishes the request in flight, records Interrupted, starts nothing more, releases the locks; re-running resumes', async () => {
    const rig = await independentFleet()
    const io = new FakeIo()
    rig.kube.onRequest((req) => {
      if (restartOf('na')(req)) io.interrupt()
    })
    const result = await apply(rig, io, [1], {parallel: 2})
    expect(result.result).toBe('interrupted')
    expect(runOf(result, 'na').state).toBe('interrupted')
    // The request in flight was sent and processed: the restart happened, and the step is recorded Interrupted.
    expect(rig.kube.writes().some(restartOf('na'))).toBe(true)
    const phase = (plan: MigrationPlan, id: string) => plan.status!.steps.find((s) => s.id === id)?.phase
    expect(phase(await readPlan(rig, 'na'), 'restart-workloads')).toBe('Interrupted')
    // nb, running at the same time, stops too: its step in progress recorded Interrupted (or finished), none Running.
    expect(['interrupted', 'stopped']).toContain(runOf(result, 'nb').state)
    expect((await readPlan(rig, 'nb')).status!.steps.filter((s) => s.phase === 'Running')).toEqual([])
    for (const ns of ['nc', 'nd', 'ne']) {
      expect(runOf(result, ns).state).toBe('not-started')
      expect(writesIn(rig, ns)).toEqual([])
    }
    expect(io.stderr.text).toContain('Interrupting: finishing the request in flight')
    expect(result.next).toBe(`mesh-migrate apply --fleet ${rig.fleetFile} --all --yes (resumes the interrupted steps)`)
    for (const ns of ['na', 'nb'])
      expect(
        rig.kube.peek({apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', namespace: ns, name: 'mesh-migrate-lock'})
          ?.spec?.holderIdentity ?? undefined,
      ).toBeUndefined()
    expect(io.listening).toBe(0)
    expect(schemaProblems(JSON.stringify(result), 'FleetApplyResult')).toEqual([])

    const again = await apply(rig, new FakeIo(), [1], {parallel: 2})
    expect(again.result).toBe('complete')
    expect(runOf(again, 'na').steps).toEqual(['restart-workloads', 'verify-dataplane'])
    for (const ns of rig.waves[0]!) expectAmbient(rig, ns)
  }, 60_000)
})

describe('apply --fleet: which waves', () => {
  const flags = (more: Partial<FleetFlags>): FleetFlags => ({
    all: false,
    yes: true,
    retry: false,
    parallel: 4,
    'allow-other-cluster': false,
    'dry-run': 'none',
    timeout: '1s',
    'lock-timeout': '0s',
    ...more,
  })
  const options = async (rig: FleetRig, io: FakeIo, more: Partial<FleetFlags>) => ({
    ...(await fleetApplyOptions(rig.fleetFile, flags(more), (m) => io.stderr.write(`${m}\n`), io)),
    connection: ClusterConnection.of(rig.kube),
  })

  it('--to-wave, then the next unfinished wave by default, --wave; a wave out of range is a usage error', async () => {
    const rig = await fleetRig(EXAMPLE, ACCEPT)
    const io = new FakeIo()
    expect((await options(rig, io, {})).waves).toEqual([1])
    expect((await options(rig, io, {all: true})).waves).toEqual([1, 2, 3])
    expect((await options(rig, io, {wave: 2})).waves).toEqual([2])
    const wrong = await options(rig, io, {wave: 4}).catch((e: unknown) => e)
    expect(wrong).toBeInstanceOf(UsageError)
    expect((wrong as UserError).message).toBe(`--wave 4: ${rig.fleetFile} has waves 1 to 3`)

    const upTo2 = await applyFleet(await options(rig, io, {'to-wave': 2}))
    expect(upTo2.waves).toEqual([1, 2])
    expect(upTo2.result).toBe('incomplete')
    expect(upTo2.namespaces.map((n) => [n.namespace, n.state])).toEqual([
      ['catalog', 'applied'],
      ['frontend', 'applied'],
    ])
    expect(upTo2.next).toBe(`mesh-migrate apply --fleet ${rig.fleetFile} --yes --wave 3`)
    for (const ns of ['pay', 'shop']) expect(writesIn(rig, ns)).toEqual([])

    // Without a wave flag: the next unfinished wave.
    const next = await options(rig, io, {})
    expect(next.waves).toEqual([3])
    const rest = await applyFleet(next)
    expect(rest.result).toBe('complete')
    for (const ns of ['catalog', 'frontend', 'pay', 'shop']) expectAmbient(rig, ns)
  }, 60_000)

  it('--wave 3 before waves 1 and 2: each namespace refused by the fleet order (exit 5), nothing written', async () => {
    const rig = await fleetRig(EXAMPLE, ACCEPT)
    const result = await applyFleet(await options(rig, new FakeIo(), {wave: 3}))
    expect(result.result).toBe('failed')
    const failed = result.namespaces.find((n) => n.state === 'failed')!
    expect(failed.error?.exitCode).toBe(ExitCode.Locked)
    expect(failed.error?.message).toContain(`is in wave 3 of ${rig.fleetFile}`)
    expect(failed.error?.message).toMatch(/catalog → (pay|shop) \(routing\): /)
    // Its way out is a command that runs (--to-wave with --all would be refused as a usage error).
    expect(failed.error?.next).toContain(`\`mesh-migrate apply --fleet ${rig.fleetFile} --to-wave 2\``)
    expect((await options(rig, new FakeIo(), {'to-wave': 2})).waves).toEqual([1, 2])
    for (const ns of ['catalog', 'frontend', 'pay', 'shop']) expect(writesIn(rig, ns)).toEqual([])
  }, 60_000)

  it('asks once on a terminal; without one (or in CI) and without --yes: exit 2 before anything is read from the cluster', async () => {
    const rig = await fleetRig(EXAMPLE, ACCEPT)
    for (const io of [new FakeIo(), tty({env: {CI: 'true'}})]) {
      const error = await options(rig, io, {yes: false, all: true}).catch((e: unknown) => e)
      expect(error).toBeInstanceOf(UsageError)
      expect((error as UserError).exitCode).toBe(ExitCode.Usage)
      expect((error as UserError).message).toBe(
        `apply --fleet asks before it starts, but there is no terminal to ask on${io.env.CI ? ' (CI is set)' : ''}`,
      )
      expect((error as UserError).suggestion).toContain('then pass --yes')
    }
    const no = tty({answers: [false]})
    const cancelled = await options(rig, no, {yes: false, all: true}).catch((e: unknown) => e)
    expect(cancelled).toBeInstanceOf(CancelledError)
    expect(no.questions).toEqual([`Apply 4 namespace(s) of wave(s) 1, 2, 3 of ${rig.fleetFile}, every step?`])
    expect(rig.kube.requests).toEqual([])
  }, 60_000)
})

describe('apply --fleet: progress', () => {
  it('one line per namespace refreshed in place on a terminal; plain lines naming their namespace in a log', async () => {
    const plainRig = await independentFleet(['na', 'nb'])
    const log = new FakeIo()
    await apply(plainRig, log, [1], {parallel: 2})
    expect(log.stderr.text).not.toContain('\u001B[')
    const lines = log.stderr.text.split('\n').filter((l) => l.trim() !== '')
    // Every line names the wave and namespace it is about: the lines of namespaces running at once interleave.
    expect(lines.every((l) => /wave 1 n[ab]\b/.test(l))).toBe(true)
    expect(lines.some((l) => /wave 1 na: step 4\/5 restart-workloads: running/.test(l))).toBe(true)
    expect(lines.filter((l) => /wave 1 na — applied/.test(l))).toHaveLength(1)

    const ttyRig = await independentFleet(['na', 'nb'])
    const terminal = tty({env: {NO_COLOR: '1'}})
    await apply(ttyRig, terminal, [1], {parallel: 2})
    // listr2's renderer redraws its lines in place: cursor up and erase line, not one line per update.
    expect(terminal.stderr.text).toMatch(/\u001B\[(\d*A|2K)/)
    expect(terminal.stderr.text).toContain('wave 1 na — applied')
    expect(terminal.stderr.text).toContain('wave 1 nb — applied')
    // Progress is diagnostics: stdout stays for the result.
    expect(terminal.stdout.text).toBe('')
    expect(log.stdout.text).toBe('')
  }, 60_000)
})

describe('rollback --fleet', () => {
  it('rolls the waves back in reverse order, each wave only once the later one is undone; labels and objects restored exactly', async () => {
    const rig = await fleetRig(EXAMPLE, ACCEPT)
    const objectsBefore = (kind: string) =>
      rig.kube
        .objects(kind)
        .filter((o) => ['catalog', 'frontend', 'pay', 'shop'].includes(o.metadata.namespace ?? o.metadata.name))
        .map((o) => ({
          name: `${o.metadata.namespace}/${o.metadata.name}`,
          labels: o.metadata.labels ?? {},
          spec: o.spec,
        }))
        .sort((a, b) => a.name.localeCompare(b.name))
    const kinds = ['Namespace', 'AuthorizationPolicy', 'VirtualService', 'Service', 'Gateway', 'PeerAuthentication']
    const before = Object.fromEntries(kinds.map((k) => [k, objectsBefore(k)]))
    expect((await apply(rig, new FakeIo(), [1, 2, 3])).result).toBe('complete')
    const from = rig.kube.requests.length

    const io = new FakeIo()
    const result = await rollback(rig, io, {parallel: 2})
    expect(result.operation).toBe('rollback')
    expect(result.waves).toEqual([3, 2, 1])
    expect(result.result).toBe('complete')
    expect(result.namespaces.map((n) => [n.wave, n.namespace, n.state])).toEqual([
      [3, 'pay', 'rolled-back'],
      [3, 'shop', 'rolled-back'],
      [2, 'frontend', 'rolled-back'],
      [1, 'catalog', 'rolled-back'],
    ])
    const span = spans(rig.kube.requests.slice(from))
    expect(Math.max(span.get('pay')![1], span.get('shop')![1])).toBeLessThan(span.get('frontend')![0])
    expect(span.get('frontend')![1]).toBeLessThan(span.get('catalog')![0])
    // Every namespace as it was: its labels and every object the plans touched (the waypoints gone again).
    for (const k of kinds) expect(objectsBefore(k)).toEqual(before[k])
    for (const ns of ['catalog', 'frontend', 'pay', 'shop']) {
      for (const pod of rig.kube.objects('Pod').filter((p) => p.metadata.namespace === ns))
        expect(pod.metadata.annotations?.['sidecar.istio.io/status']).toBeDefined()
      const plan = await readPlan(rig, ns)
      expect(plan.status!.steps.every((s) => s.phase === 'RolledBack')).toBe(true)
    }
    expect(schemaProblems(JSON.stringify(result), 'FleetApplyResult')).toEqual([])
    expect(io.listening).toBe(0)
  }, 60_000)

  it('the first failure stops new starts: the running namespace finishes its undo, no earlier wave starts', async () => {
    const rig = await independentFleet()
    expect((await apply(rig, new FakeIo(), [1], {parallel: 5})).result).toBe('complete')
    const from = rig.kube.requests.length
    // The undo of restart-workloads restarts the workloads again: na's is refused while nb's runs.
    rig.kube.failNext(invalid('na'))
    holdUntilFailed(rig, restartOf('nb'), 'na', 'restart-workloads')
    const result = await rollback(rig, new FakeIo(), {parallel: 2})
    expect(result.result).toBe('failed')
    expect(result.namespaces.map((n) => [n.namespace, n.state])).toEqual([
      ['na', 'failed'],
      ['nb', 'stopped'],
      ['nc', 'not-started'],
      ['nd', 'not-started'],
      ['ne', 'not-started'],
    ])
    expect(runOf(result, 'na').error).toMatchObject({step: 'restart-workloads'})
    expect(runOf(result, 'na').error!.message).toContain('admission denied na')
    expect(runOf(result, 'nb').steps.at(-1)).toBe('restart-workloads')
    expect(result.next).toContain(`mesh-migrate rollback --fleet ${rig.fleetFile} --confirm fleet`)
    for (const ns of ['nc', 'nd', 'ne'])
      expect(
        rig.kube.requests.slice(from).filter((r) => r.verb !== 'get' && r.verb !== 'list' && nsOf(r) === ns),
      ).toEqual([])

    // Re-running finishes the rollback.
    const again = await rollback(rig, new FakeIo(), {parallel: 2})
    expect(again.result).toBe('complete')
    for (const ns of rig.waves[0]!) expect(labelsOf(rig, ns)).toEqual({'istio-injection': 'enabled'})
  }, 60_000)

  it('a failure in a later wave starts no earlier wave', async () => {
    const rig = await fleetRig(EXAMPLE, ACCEPT)
    expect((await apply(rig, new FakeIo(), [1, 2, 3])).result).toBe('complete')
    const from = rig.kube.requests.length
    rig.kube.failNext(invalid('frontend'))
    const result = await rollback(rig, new FakeIo())
    expect(result.namespaces.map((n) => [n.namespace, n.state])).toEqual([
      ['pay', 'rolled-back'],
      ['shop', 'rolled-back'],
      ['frontend', 'failed'],
      ['catalog', 'not-started'],
    ])
    expect(runOf(result, 'frontend').error).toMatchObject({step: 'restart-workloads'})
    expect(rig.kube.requests.slice(from).filter((r) => nsOf(r) === 'catalog')).toEqual([])
    expectAmbient(rig, 'catalog')
  }, 60_000)

  it('is confirmed with the word fleet', async () => {
    const rig = await independentFleet(['na'])
    const io = new FakeIo()
    for (const confirm of [undefined, 'na']) {
      const flags: FleetRollbackFlags = {
        ...(confirm ? {confirm} : {}),
        parallel: 4,
        'allow-other-cluster': false,
        'dry-run': 'none',
        timeout: '1s',
        'lock-timeout': '0s',
      }
      const error = await fleetRollbackOptions(rig.fleetFile, flags, () => undefined, io).catch((e: unknown) => e)
      expect(error).toBeInstanceOf(UsageError)
      expect((error as UserError).suggestion).toBe('Pass --confirm fleet.')
    }
    expect(rig.kube.requests).toEqual([])
  })
})

describe('status --fleet', () => {
  it('one line per plan by wave: progress, drift and lock holder; --detailed-exitcode is 10 while anything is pending or drifted', async () => {
    const rig = await fleetRig(EXAMPLE, ACCEPT)
    expect((await apply(rig, new FakeIo(), [1, 2])).result).toBe('incomplete')
    // Someone deletes catalog's waypoint (drift); someone else holds frontend's lock (a host's process, renewing).
    rig.kube.remove({
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'Gateway',
      namespace: 'catalog',
      name: 'waypoint',
    })
    rig.kube.seed({
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: {name: 'mesh-migrate-lock', namespace: 'frontend'},
      spec: {holderIdentity: 'bob@elsewhere/4242/abc', leaseDurationSeconds: 3600, renewTime: new Date().toISOString()},
    })
    const io = new FakeIo()
    const report = await planStatuses(
      {
        ...(await fleetStatusFiles(rig)),
        onePlan: false,
        cluster: ClusterConnection.of(rig.kube),
        offline: false,
        detailedExitcode: true,
      },
      io,
    )
    expect(io.exitCode).toBe(ExitCode.ChangesPending)
    expect(schemaProblems(JSON.stringify(report), 'StatusReport')).toEqual([])
    expect(
      report.plans.map((p) => [p.wave, p.namespace, p.state, p.pending, (p.drifted ?? 0) > 0, p.lock ?? '-']),
    ).toEqual([
      [1, 'catalog', 'applied', 0, true, '-'],
      [2, 'frontend', 'applied', 0, false, 'bob@elsewhere/4242/abc'],
      // The rig records their preflight as passed: in progress, 9 steps pending.
      [3, 'pay', 'in-progress', 9, false, '-'],
      [3, 'shop', 'in-progress', 9, false, '-'],
    ])
    const lines = renderStatusReport(report, painterFor(io.stdout, {NO_COLOR: '1'}), io.now().getTime()).split('\n')
    expect(lines[0]).toMatch(/^WAVE\s+NAMESPACE\s+STATE\s+APPLIED\s+DRIFTED\s+LOCK\s+PLAN$/)
    expect(lines[1]).toMatch(/^1\s+catalog\s+applied\s+8\/8\s+[1-9]\d*\s+-\s+/)
    expect(lines[2]).toMatch(/^2\s+frontend\s+applied\s+5\/5\s+0\s+bob@elsewhere\/4242\/abc\s+/)
    expect(lines[3]).toMatch(/^3\s+pay\s+in-progress\s+1\/10\s+0\s+-\s+/)
  }, 60_000)
})
