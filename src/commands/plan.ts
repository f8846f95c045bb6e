import type {Interfaces} from '@oclif/core'
import * as Args from '@oclif/core/args'
import * as Flags from '@oclif/core/flags'

import {type FleetSelection, planFleet, planNamespace, type PlanOneOptions, type PlanRun} from '../actions/plan.js'
import {UsageError} from '../errors.js'
import {defaultPlanPath} from '../executor/plan-store.js'
import type {FleetDocument} from '../plan/fleet-file.js'
import {type MigrationPlan, type PlanOptions, STEP_ACTIONS} from '../planner/plan-types.js'
import {waypointNameProblem} from '../planner/waypoint.js'
import {trustDomainProblem} from '../planner/mesh-config.js'
import {canaryWeightsProblem} from '../steps/canary-waypoint.js'
import {openSource} from '../sources/open.js'
import {stdoutPainter} from '../ui/color.js'
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

  async run(): Promise<MigrationPlan | FleetDocument | undefined> {
    const o = this.validate(await this.complete())
    const open = () => openSource(o.flags, this.io)
    if (o.fleet) {
      const fleet = await planFleet(o.run, o.fleet, open, this.io)
      const {renderFleet} = await import('../ui/fleet-view.js')
      const {fleetDocument} = await import('../plan/fleet-file.js')
      return this.emit(fleetDocument(fleet), o.flags.output, () => renderFleet(fleet, stdoutPainter(this.io)))
    }
    const plan = await planNamespace(o.one, open, this.io)
    if (o.one.out === '-' && o.flags.output === 'table' && !this.jsonEnabled()) return undefined
    return this.emit(plan, o.flags.output, () => renderPlan(plan, stdoutPainter(this.io)))
  }

  /** Flags → the namespaces named (arguments, -n, or the kubeconfig context's namespace) and the flags. */
  private async complete(): Promise<{names: string[]; flags: PlanFlags}> {
    const {argv, flags} = await this.parse(PlanCommand)
    const names = withNamespaceFlag(argv as string[], flags.namespace)
    // Nothing named and no fleet asked for: the context's namespace, as kubectl takes it.
    if (names.length === 0 && !flags['all-namespaces'] && flags.selector === undefined) {
      const fromContext = await namespaceOrContext(undefined, undefined, flags, this.io.stderr)
      if (fromContext !== undefined) names.push(fromContext)
    }
    return {names, flags}
  }

  /** The flags checked (no file read, no connection): one namespace's plan options, or a fleet's. */
  private validate({names, flags}: {names: string[]; flags: PlanFlags}): PlanCommandOptions {
    const problem = waypointNameProblem(flags['waypoint-name'])
    if (problem) throw new UsageError(`--waypoint-name "${flags['waypoint-name']}": ${problem}`)
    const trustDomain = flags['trust-domain']
    const tdProblem = trustDomain === undefined ? undefined : trustDomainProblem(trustDomain)
    if (tdProblem) throw new UsageError(`--trust-domain "${trustDomain}": ${tdProblem}`)
    const fleet = flags['all-namespaces'] || flags.selector !== undefined || names.length > 1
    if (flags['waypoint-canary'] !== undefined) {
      const canary = canaryWeightsProblem(flags['waypoint-canary'])
      if (canary.problem)
        throw new UsageError(
          `--waypoint-canary: ${canary.problem}`,
          'Pass increasing weights, e.g. --waypoint-canary 10,50.',
        )
      if (names.length !== 1 || fleet)
        throw new UsageError(
          '--waypoint-canary plans one namespace',
          'Name one namespace: mesh-migrate plan NAMESPACE --waypoint-canary 10,50.',
        )
    }
    const run = planRun(flags, `mesh-migrate/${this.config.version}`)
    if (fleet) return {flags, run, fleet: fleetSelection(names, flags)}
    const namespace = names[0]
    if (!namespace)
      throw new UsageError(
        'which namespace? Name one (or several, or -n NAMESPACE), or pass --all-namespaces / --selector',
        'mesh-migrate plan NAMESPACE, or mesh-migrate plan -A',
      )
    const out = flags.out ?? defaultPlanPath(namespace)
    if (flags['keep-progress'] && out === '-')
      throw new UsageError(
        '--keep-progress keeps the record of the plan file it replaces; --out - writes none',
        'Leave out --out (or name the plan file).',
      )
    const one = {
      ...run,
      namespace,
      out,
      keepProgress: flags['keep-progress'],
      planTextToStdout: !this.jsonEnabled() && flags.output === 'table',
    }
    return {flags, run, one}
  }
}

type PlanFlags = Interfaces.InferredFlags<typeof PlanCommand.flags>

/** The checked flags: the plan of one namespace (`one`), or of a fleet (`fleet`: which namespaces). */
type PlanCommandOptions = {flags: PlanFlags; run: PlanRun} & (
  {one: PlanOneOptions; fleet?: undefined} | {fleet: FleetSelection; one?: undefined}
)

/** What every plan of the run is made with, from the flags. */
function planRun(flags: PlanFlags, generator: string): PlanRun {
  return {
    options: planOptions(flags),
    inventory: {
      waypointFor: flags['waypoint-for'],
      ...(flags['istio-version'] ? {istioVersion: flags['istio-version']} : {}),
    },
    generator,
    ...(flags['istio-version'] ? {istioVersion: flags['istio-version']} : {}),
    ...(flags['trust-domain'] ? {trustDomain: flags['trust-domain']} : {}),
    rootNamespace: flags['root-namespace'],
    force: flags.force,
    detailedExitcode: flags['detailed-exitcode'],
  }
}

/** The namespaces of a fleet plan; --keep-progress and --out are for one namespace. */
function fleetSelection(names: string[], flags: PlanFlags): FleetSelection {
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
  return flags['all-namespaces']
    ? {allNamespaces: true}
    : flags.selector !== undefined
      ? {selector: flags.selector}
      : {namespaces: names}
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
