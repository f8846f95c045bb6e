import {mkdir} from 'node:fs/promises'
import path from 'node:path'

import type {Interfaces} from '@oclif/core'
import * as Args from '@oclif/core/args'
import * as Flags from '@oclif/core/flags'

import {LockHeldError, UsageError, UserError} from '../errors.js'
import {asRolledBack, carryProgressOrRefuse, progressToKeep, progressWithRecord} from '../executor/keep-progress.js'
import {readRecord} from '../executor/record-store.js'
import {liveHolder, lockHeldSuggestion} from '../executor/lock.js'
import {KubeApiError} from '../kube/errors.js'
import {defaultPlanPath, readTextFile, replanCommand, writeFileAtomic} from '../executor/plan-store.js'
import {buildInventory} from '../planner/inventory.js'
import {buildPlan} from '../plan/plan-builder.js'
import type {FleetPlan} from '../plan/fleet.js'
import {type MigrationPlan, type PlanOptions, STEP_ACTIONS} from '../planner/plan-types.js'
import {checkPlanText, parsePlanText, renderPlanFile, specDigest, textMayHaveWritten} from '../plan/planfile.js'
import {waypointNameProblem} from '../planner/waypoint.js'
import {trustDomainProblem} from '../planner/mesh-config.js'
import type {SourceSnapshot} from '../planner/model.js'
import {canaryWeightsProblem, waypointCanaryRefusal} from '../steps/canary-waypoint.js'
import {openSource, requireNamespace} from '../sources/open.js'
import {ClusterSource} from '../sources/cluster.js'
import {stderrPainter, stdoutPainter} from '../ui/color.js'
import {renderPlan} from '../ui/plan-view.js'
import {BaseCommand, EXIT_CODES_HELP, outputFlag, sourceFlags} from '../cli/base.js'
import {
  checkNamespaceName,
  labelSelectorFlag,
  namespaceFlag,
  namespaceOf,
  namespaceOrContext,
  waypointForFlag,
  waypointNameFlag,
} from '../cli/flags.js'
import {ExitCode} from '../exit-codes.js'

/** Why a namespace needs no step, in the words of its data-plane mode. */
function nothingToMigrateWhy(plan: MigrationPlan): string {
  switch (plan.spec.summary.from) {
    case 'ambient':
      return 'it is already in ambient mode'
    case 'none':
      return 'none of its pods is in the mesh and nothing injects sidecars there (no istio-injection or istio.io/rev label)'
    default:
      return `its data-plane mode is ${plan.spec.summary.from} and no step applies`
  }
}

export default class PlanCommand extends BaseCommand {
  static override summary =
    'Write the ordered, reversible migration plan of a namespace to plans/<namespace>.yaml (of many: -A, -l, or several names, with the fleet overview plans/fleet.yaml).'
  static override description = `Builds the inventory, decides whether the namespace needs a waypoint, generates it, and writes the steps (${STEP_ACTIONS.join(', ')} — only those the namespace needs), each with the objects it writes, its verification and its undo.

The file is canonical YAML: regenerating from unchanged input gives an identical file. A plan with blockers is still written, says so at the top, and the command exits 1. A namespace with nothing to migrate (already ambient, or no pod in the mesh) gets no plan file: the command says why and exits 0.

A PLAN IN PROGRESS (applied steps) is not overwritten. --keep-progress re-plans it from the namespace as a rollback would leave it (the plan's own waypoint, policy copies and labels are not taken for yours) and keeps the record of every applied step the new plan contains unchanged: apply continues after them, rollback still undoes them. It refuses, saying why, when an applied step changed or recreated pods (restart-workloads), or a step is Running, Failed or Interrupted, and while an apply or rollback holds the namespace's lock (exit 5). --force overwrites the plan, losing its record of what was applied.

FLEET: with --all-namespaces (-A), --selector (-l) or several namespaces, the cluster is read once (one cluster-wide LIST per kind, whatever the number of namespaces), each namespace gets its plan (-A/-l: only those with something to migrate) and plans/fleet.yaml orders them into migration waves from their cross-namespace dependencies (routing they export to each other, AuthorizationPolicies naming each other, callers that would bypass a waypoint, shared waypoints). A namespace's exported routing applied by a waypoint of an earlier wave is not lost for its callers. --accept-lost/--accept-hazard apply to every plan. Read it with mesh-migrate show --fleet.

EXIT CODES
${EXIT_CODES_HELP}`

  static override examples = [
    '<%= config.bin %> plan bookinfo --manifests examples/bookinfo',
    '<%= config.bin %> plan bookinfo --context prod --waypoint-name bookinfo-waypoint',
    '<%= config.bin %> plan bookinfo --detailed-exitcode   # 0: nothing to migrate, 10: plan has steps',
    '<%= config.bin %> plan -A                              # every namespace, plus plans/fleet.yaml',
    '<%= config.bin %> plan -l team=payments --accept-lost "E11/*"',
    '<%= config.bin %> plan shop payments catalog --manifests gitops/',
  ]

  // Several namespaces may be named (fleet planning).
  static override strict = false
  static override args = {
    namespace: Args.string({description: 'The namespace to migrate (or -n NAMESPACE; several: a fleet plan).'}),
  }
  static override flags = {
    namespace: namespaceFlag,
    'all-namespaces': Flags.boolean({
      char: 'A',
      description: 'Plan every namespace (except kube-* and the root namespace) and write plans/fleet.yaml.',
      default: false,
      exclusive: ['selector'],
    }),
    selector: labelSelectorFlag(
      'Plan the namespaces matching this label selector (e.g. team=payments,env!=dev) and write plans/fleet.yaml.',
    ),
    ...sourceFlags,
    output: outputFlag,
    out: Flags.string({
      description: 'Where to write the plan (default plans/<namespace>.yaml). "-" writes it to stdout only.',
    }),
    force: Flags.boolean({
      description: 'Overwrite a plan that already has applied steps (losing their record).',
      default: false,
      exclusive: ['keep-progress'],
    }),
    'keep-progress': Flags.boolean({
      description:
        'Re-plan a plan in progress, keeping the record of the applied steps it leaves unchanged (see docs/contract.md).',
      default: false,
    }),
    'waypoint-name': waypointNameFlag,
    'waypoint-for': waypointForFlag,
    'trust-domain': Flags.string({
      description:
        "The mesh's trust domain (meshConfig.trustDomain) the created policies name the waypoint in. Default: read from the mesh ConfigMap (istio, or istio-<revision>) of the root namespace, else cluster.local. Needed offline when the manifests lack that ConfigMap.",
    }),
    'detailed-exitcode': Flags.boolean({
      description: 'Exit 0 when there is nothing to migrate, 10 when the plan has steps.',
      default: false,
    }),
    routes: Flags.option({
      description:
        'virtualservice: keep mesh VirtualServices of this namespace (the waypoint applies them; Alpha). httproute: convert them to Gateway API HTTPRoutes with the Service as parent, created and the VirtualServices deleted in one step (swap-routes).',
      options: ['virtualservice', 'httproute'] as const,
      default: 'virtualservice' as const,
    })(),
    'opted-out': Flags.option({
      description:
        'Pods outside the mesh today (sidecar.istio.io/inject=false, class-istio gateways): keep-out labels them istio.io/dataplane-mode=none before the switch; enroll lets ztunnel capture them.',
      options: ['keep-out', 'enroll'] as const,
      default: 'keep-out' as const,
    })(),
    'waypoint-canary': Flags.string({
      description:
        "Istio >= 1.31 (Alpha): when the namespace is bound to a primary waypoint the plan replaces, shift its Services to the plan's waypoint at these increasing weights (1-99, e.g. 10,50), one verified, reversible canary-waypoint step each, before bind-waypoint promotes it.",
    }),
    'deny-waypoint-bypass': Flags.boolean({
      description: 'Add a last, optional step with the bypass-prevention DENY (only once every caller is ambient).',
      default: false,
    }),
    'accept-lost': Flags.string({
      description:
        'Finding id of behaviour that will be lost and that you accept: client-side routing (E11/E12), or the part of a mesh-wide L7 DENY that callers bypassing the waypoint escape (E14); * matches any text (e.g. "E11/DestinationRule/*"). Repeatable.',
      multiple: true,
      multipleNonGreedy: true,
    }),
    'accept-hazard': Flags.string({
      description: 'Hazard id (outside a documented window) that you accept; * matches any text. Repeatable.',
      multiple: true,
      multipleNonGreedy: true,
    }),
  }

  async run(): Promise<MigrationPlan | FleetPlan | undefined> {
    const {names, flags} = await this.complete()
    if (flags['all-namespaces'] || flags.selector !== undefined || names.length > 1) return this.runFleet(names, flags)
    const options = await this.validate(names[0], flags)
    const {plan, source, inventory, snapshot} = await this.build(options)
    await this.write(options, plan)
    // On a live cluster, show now what the preflight step will check at apply time.
    if (source instanceof ClusterSource && plan.spec.steps.length > 0) {
      const {runPreflight} = await import('../preflight/runner.js')
      const {renderPreflight} = await import('../preflight/view.js')
      // The preflight table goes to stderr: laid out for its terminal (emit lays stdout's result out for stdout's).
      const {setTableLayout, terminalWidth} = await import('../ui/table.js')
      setTableLayout({width: terminalWidth(this.io.env, this.io.stderr)})
      const diagnostics = await runPreflight(source.client, options.namespace, {
        plan,
        inventory,
        snapshot,
        rootNamespace: flags['root-namespace'],
      })
      this.note(
        `\nPreflight (re-checked by the preflight step when you apply):\n${renderPreflight(diagnostics, stderrPainter(this.io))}`,
      )
    }
    this.setExitCode(options, plan)
    if (options.out === '-' && flags.output === 'table' && !this.jsonEnabled()) return undefined
    return this.emit(plan, flags.output, () => renderPlan(plan, stdoutPainter(this.io)))
  }

  /** Flags → the namespaces named (arguments or -n) and the checked flags. */
  private async complete(): Promise<{names: string[]; flags: PlanFlags}> {
    const {argv, flags} = await this.parse(PlanCommand)
    const names = withNamespaceFlag(argv as string[], flags.namespace)
    // Nothing named and no fleet asked for: the context's namespace, as kubectl takes it.
    if (names.length === 0 && !flags['all-namespaces'] && flags.selector === undefined) {
      const fromContext = await namespaceOrContext(undefined, undefined, flags, this.io.stderr)
      if (fromContext !== undefined) names.push(fromContext)
    }
    const problem = waypointNameProblem(flags['waypoint-name'])
    if (problem) throw new UsageError(`--waypoint-name "${flags['waypoint-name']}": ${problem}`)
    const trustDomain = flags['trust-domain']
    const tdProblem = trustDomain === undefined ? undefined : trustDomainProblem(trustDomain)
    if (tdProblem) throw new UsageError(`--trust-domain "${trustDomain}": ${tdProblem}`)
    if (flags['waypoint-canary'] !== undefined) {
      const canary = canaryWeightsProblem(flags['waypoint-canary'])
      if (canary.problem)
        throw new UsageError(
          `--waypoint-canary: ${canary.problem}`,
          'Pass increasing weights, e.g. --waypoint-canary 10,50.',
        )
      if (names.length !== 1 || flags['all-namespaces'] || flags.selector !== undefined)
        throw new UsageError(
          '--waypoint-canary plans one namespace',
          'Name one namespace: mesh-migrate plan NAMESPACE --waypoint-canary 10,50.',
        )
    }
    return {names, flags}
  }

  /** One namespace, and a plan file that may be (over)written: a plan in progress is not replaced without --force. */
  private async validate(namespace: string | undefined, flags: PlanFlags): Promise<PlanOneOptions> {
    if (!namespace)
      throw new UsageError(
        'which namespace? Name one (or several, or -n NAMESPACE), or pass --all-namespaces / --selector',
        'mesh-migrate plan NAMESPACE, or mesh-migrate plan -A',
      )

    const out = flags.out ?? defaultPlanPath(namespace)
    const previousText = out === '-' ? undefined : await readTextFile(out).catch(() => undefined)
    if (flags['keep-progress'] && out === '-')
      throw new UsageError(
        '--keep-progress keeps the record of the plan file it replaces; --out - writes none',
        'Leave out --out (or name the plan file).',
      )
    const inProgress = flags['keep-progress'] ? progressToKeep(previousText, out, namespace) : undefined
    if (previousText !== undefined && !flags.force && !flags['keep-progress']) {
      // A fully rolled-back plan has nothing left to undo: it may be replaced.
      if (textMayHaveWritten(previousText)) {
        throw new UserError(`${out} has applied steps: refusing to overwrite a plan in progress`, {
          suggestion: `Finish it with \`mesh-migrate apply ${out}\`, undo it with \`mesh-migrate rollback ${out} --confirm ${namespace}\` (then plan replaces it), or re-plan keeping the record of the applied steps the new plan leaves unchanged: \`${replanCommand(namespace, out, '--keep-progress')}\`; --force overwrites it now, losing its record of what was applied (rollback can then no longer undo those steps).`,
        })
      }
    }
    return {namespace, out, previousText, flags, inProgress}
  }

  /** Read the namespace (cluster or manifests), classify it and build the plan: pure from here on. */
  private async build({namespace, out, flags, inProgress: inFile, previousText}: PlanOneOptions) {
    const source = await openSource(flags, this.io.stderr)
    // --keep-progress: the progress is the cluster's record of the plan at `out` (issue 19 §5), even of an edited file.
    const record =
      flags['keep-progress'] && previousText !== undefined && source instanceof ClusterSource
        ? await readRecord(source.client, namespace, namespace)
        : undefined
    const inProgress = flags['keep-progress']
      ? progressWithRecord(inFile ?? validPlan(previousText), record, out)
      : undefined
    if ((inProgress || record) && source instanceof ClusterSource) await refuseWhileWriting(source, namespace)
    const read = requireNamespace(await source.snapshot(namespace, {rootNamespace: flags['root-namespace']}))
    // The plan's own writes are not the user's state: plan from the namespace as its rollback would leave it.
    const snapshot = inProgress ? asRolledBack(read, inProgress) : read
    refuseCanary(flags, snapshot, namespace)
    const inventory = buildInventory(snapshot, {
      waypointFor: flags['waypoint-for'],
      ...(flags['istio-version'] ? {istioVersion: flags['istio-version']} : {}),
    })
    const fresh = buildPlan({
      inventory,
      snapshot,
      options: planOptions(flags),
      generator: `mesh-migrate/${this.config.version}`,
      ...(flags['istio-version'] ? {istioVersion: flags['istio-version']} : {}),
      ...(flags['trust-domain'] ? {trustDomain: flags['trust-domain']} : {}),
    })
    const plan = inProgress
      ? this.keepProgress(inProgress, fresh, out)
      : flags.force
        ? replacing(fresh, previousText)
        : fresh
    return {plan, source, inventory, snapshot}
  }

  /** The plan file (or stdout for --out -); none when there is nothing to migrate, untouched when unchanged. */
  private async write({namespace, out, previousText, flags}: PlanOneOptions, plan: MigrationPlan): Promise<void> {
    const text = renderPlanFile(plan)

    const nothingToDo = plan.spec.steps.length === 0 && plan.spec.blockers.length === 0
    if (out === '-') {
      if (!this.jsonEnabled() && flags.output === 'table') this.io.stdout.write(text)
    } else if (nothingToDo) {
      // A plan without steps would only be a file to review and merge for nothing.
      this.note(
        `Nothing to migrate in namespace ${namespace}: ${nothingToMigrateWhy(plan)}. No plan file written${previousText !== undefined ? ` (${out} from an earlier plan is left as it is)` : ''}.`,
      )
    } else if (previousText === text) {
      this.note(`${out} is up to date (unchanged).`)
    } else {
      await mkdir(path.dirname(out), {recursive: true})
      await writeFileAtomic(out, text)
      this.note(`Wrote ${out}.`)
    }
  }

  private setExitCode({namespace, out, flags}: PlanOneOptions, plan: MigrationPlan): void {
    const blockers = plan.spec.summary.blockers
    if (blockers > 0) {
      this.io.setExitCode(ExitCode.Failure)
      this.note(
        `The plan has ${blockers} blocker(s); it cannot be applied until they are resolved (mesh-migrate show ${out === '-' ? namespace : out}).`,
      )
    } else if (flags['detailed-exitcode']) {
      this.io.setExitCode(plan.spec.steps.length > 0 ? ExitCode.ChangesPending : ExitCode.Ok)
    }
  }

  /** The new plan with the kept records of the plan in progress, saying what was kept and what apply runs. */
  private keepProgress(old: MigrationPlan, fresh: MigrationPlan, out: string): MigrationPlan {
    const {plan, kept, toApply} = carryProgressOrRefuse(old, fresh, out)
    this.note(
      `Kept the record of ${kept.length} applied step(s) the new plan leaves unchanged: ${kept.join(', ') || 'none'}.`,
    )
    this.note(
      toApply.length > 0
        ? `To apply: ${toApply.join(', ')} (\`mesh-migrate apply ${out}\` continues from there).`
        : 'Every step of the new plan is applied.',
    )
    return plan
  }

  private async runFleet(names: string[], flags: PlanFlags): Promise<FleetPlan | undefined> {
    if (flags['keep-progress'])
      throw new UsageError(
        '--keep-progress re-plans one namespace',
        'Run `mesh-migrate plan NAMESPACE --keep-progress` for each namespace whose plan is in progress.',
      )
    if (flags.out !== undefined)
      throw new UsageError(
        '--out names one plan file; a fleet plan writes plans/<namespace>.yaml and plans/fleet.yaml',
        'Leave out --out.',
      )
    if (names.length > 0 && (flags['all-namespaces'] || flags.selector !== undefined)) {
      throw new UsageError('name namespaces or select them (--all-namespaces, --selector), not both')
    }
    const {runFleetPlan} = await import('../cli/fleet-plan.js')
    const fleet = await runFleetPlan({
      source: flags,
      rootNamespace: flags['root-namespace'],
      selection: flags['all-namespaces']
        ? {allNamespaces: true}
        : flags.selector !== undefined
          ? {selector: flags.selector}
          : {namespaces: names},
      options: planOptions(flags),
      inventory: {
        waypointFor: flags['waypoint-for'],
        ...(flags['istio-version'] ? {istioVersion: flags['istio-version']} : {}),
      },
      generator: `mesh-migrate/${this.config.version}`,
      ...(flags['istio-version'] ? {istioVersion: flags['istio-version']} : {}),
      ...(flags['trust-domain'] ? {trustDomain: flags['trust-domain']} : {}),
      force: flags.force,
      note: (m) => this.note(m),
    })
    if (fleet.spec.summary.blocked > 0) {
      this.io.setExitCode(ExitCode.Failure)
      this.note(
        `${fleet.spec.summary.blocked} plan(s) have blockers; they cannot be applied until resolved (mesh-migrate show --fleet).`,
      )
    } else if (flags['detailed-exitcode']) {
      this.io.setExitCode(fleet.spec.namespaces.some((n) => n.steps > 0) ? ExitCode.ChangesPending : ExitCode.Ok)
    }
    const {renderFleet} = await import('../ui/fleet-view.js')
    return this.emit(fleet, flags.output, () => renderFleet(fleet, stdoutPainter(this.io)))
  }
}

type PlanFlags = Interfaces.InferredFlags<typeof PlanCommand.flags>

/** The plan of one namespace: where it goes (a path, or - for stdout) and the file it replaces, if any. */
interface PlanOneOptions {
  namespace: string
  out: string
  previousText: string | undefined
  flags: PlanFlags
  /** --keep-progress: the plan in progress whose applied, unchanged steps keep their record. */
  inProgress: MigrationPlan | undefined
}

/**
 * --force over a plan that has written: the new plan says it replaces it (status.replaces), so that its first write
 * takes over the old plan's record in the cluster instead of being refused as another plan's (src/plan/record.ts).
 * The old record is lost, as --force says.
 */
function replacing(fresh: MigrationPlan, previousText: string | undefined): MigrationPlan {
  if (previousText === undefined) return fresh
  const old = (parsePlanText(previousText).data as {status?: {specDigest?: unknown}} | undefined)?.status?.specDigest
  const digest = specDigest(fresh)
  if (typeof old !== 'string' || !/^sha256:[0-9a-f]{64}$/.test(old) || old === digest) return fresh
  return {...fresh, status: {specDigest: digest, replaces: old, steps: []}}
}

/** The plan file's plan when it is valid (a teammate's reviewed copy, no progress of its own). */
function validPlan(text: string | undefined): MigrationPlan | undefined {
  const checked = text === undefined ? undefined : checkPlanText(text)
  return checked?.plan && checked.problems.length === 0 ? checked.plan : undefined
}

/** The namespaces named: the arguments, or -n (which names one, and must agree with a single argument). */
function withNamespaceFlag(args: string[], flag: string | undefined): string[] {
  if (flag !== undefined && args.length > 1) {
    throw new UsageError(
      `-n ${flag} names one namespace, and ${args.length} are given as arguments`,
      'List the namespaces as arguments, without -n.',
    )
  }
  const one = namespaceOf(args[0], flag)
  return args.length > 1 ? args.map((name) => checkNamespaceName(name)) : one === undefined ? [] : [one]
}

/** The plan options every plan of the run shares (acceptances are given once, for the fleet too). */
function planOptions(flags: PlanFlags): PlanOptions {
  return {
    rootNamespace: flags['root-namespace'],
    waypointName: flags['waypoint-name'],
    waypointFor: flags['waypoint-for'],
    routes: flags.routes,
    optedOut: flags['opted-out'],
    denyWaypointBypass: flags['deny-waypoint-bypass'],
    ...(flags['waypoint-canary'] !== undefined
      ? {waypointCanary: canaryWeightsProblem(flags['waypoint-canary']).weights ?? []}
      : {}),
    ...(flags['accept-lost']?.length ? {acceptLost: [...new Set(flags['accept-lost'])].sort()} : {}),
    ...(flags['accept-hazard']?.length ? {acceptHazards: [...new Set(flags['accept-hazard'])].sort()} : {}),
  }
}

/** --waypoint-canary needs Istio >= 1.31 and a primary waypoint the plan replaces (exit 2 otherwise, saying why). */
function refuseCanary(flags: PlanFlags, snapshot: SourceSnapshot, namespace: string): void {
  if (flags['waypoint-canary'] === undefined) return
  const ns = snapshot.objects.find((o) => o.kind === 'Namespace' && o.metadata.name === namespace)
  const refusal = waypointCanaryRefusal({
    labels: ns?.metadata.labels ?? {},
    ns: namespace,
    waypointName: flags['waypoint-name'],
    istioVersion: flags['istio-version'] ?? snapshot.istioVersion,
    versionSource: flags['istio-version'] ? '--istio-version' : 'the serving istiod',
  })
  if (refusal) throw new UsageError(refusal.message, refusal.suggestion)
}

/**
 * --keep-progress rewrites the record of a plan in progress: not while an apply or rollback holds the namespace's
 * lock (it writes that record). Read-only (plan needs no write permission): the Lease is read, not taken.
 */
async function refuseWhileWriting(source: ClusterSource, namespace: string): Promise<void> {
  // Without permission to read Leases there is nothing to tell: the re-plan goes on, as before this check.
  const holder = await liveHolder(source.client, namespace).catch((error: unknown) => {
    if (error instanceof KubeApiError && error.status === 403) return undefined
    throw error
  })
  if (holder)
    throw new LockHeldError(
      `namespace ${namespace} is locked by ${holder}: it is writing the record --keep-progress would re-plan`,
      lockHeldSuggestion(namespace),
    )
}
