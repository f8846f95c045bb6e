import * as Args from '@oclif/core/args'
import * as Flags from '@oclif/core/flags'

import {
  fleetGitOpsObjects,
  planManifestChanges,
  planTimeline,
  readFleetOverview,
  readShownPlan,
  type ShownPlan,
} from '../actions/show.js'
import {UsageError} from '../errors.js'
import type {FleetPlan} from '../plan/fleet.js'
import type {FleetDocument} from '../plan/fleet-file.js'
import type {GitOpsOptions} from '../plan/gitops-fleet.js'
import type {MigrationPlan} from '../planner/plan-types.js'
import {stdoutPainter} from '../ui/color.js'
import {renderPlan, renderPlanMarkdown} from '../ui/plan-view.js'
import {BaseCommand, EXIT_CODES_HELP} from '../cli/base.js'
import type {ManifestChanges, Timeline} from '../cli/contract.js'
import {namespaceFlag, requirePlanOrContext} from '../cli/flags.js'

export default class ShowCommand extends BaseCommand {
  static override summary = 'Render a plan for people: steps with their state, blockers and findings.'
  static override description = `PLAN is a plan file, or a namespace name meaning plans/<namespace>.yaml. -o markdown gives a pull-request comment body. -o patches gives the plan's changes as manifests for a Git repository, step by step (Kustomize strategic-merge patches and new objects): for namespaces and workloads that Argo CD, Flux or Helm manage, where a live change is reverted by the next sync (E23). --timeline shows the step-by-step simulation: after each step of apply (and of a rollback), which pods run with a sidecar, ambient or outside the mesh, and where each policy is enforced.

EXIT CODES
${EXIT_CODES_HELP}`

  static override examples = [
    '<%= config.bin %> show plans/bookinfo.yaml',
    '<%= config.bin %> show bookinfo -o markdown > comment.md',
    '<%= config.bin %> show bookinfo -o patches > migration-patches.yaml',
    '<%= config.bin %> show --fleet -o markdown > fleet-comment.md',
  ]

  static override args = {
    plan: Args.string({
      description:
        'Plan file, or namespace name (or -n NAMESPACE; with --fleet: the fleet file, default plans/fleet.yaml).',
    }),
  }
  static override flags = {
    namespace: namespaceFlag,
    output: Flags.option({
      char: 'o',
      description:
        "Output format: table (fits the terminal), wide (nothing cut), markdown (a pull-request comment), patches (manifests for Git), json or yaml (docs/contract.md); with --fleet also argocd (an ApplicationSet syncing wave by wave) or flux (a Kustomization per namespace), each namespace's overlay written under --overlay-dir.",
      options: ['table', 'wide', 'markdown', 'patches', 'json', 'yaml', 'argocd', 'flux'] as const,
      default: 'table' as const,
    })(),
    fleet: Flags.boolean({
      description:
        'Show the fleet overview (plans/fleet.yaml, written by plan -A / -l / NS1 NS2): waves, the edges that order them, cycles; -o markdown draws them as a Mermaid graph.',
      default: false,
      exclusive: ['timeline', 'namespace'],
    }),
    'overlay-dir': Flags.string({
      description:
        'With -o argocd|flux: where the per-namespace Kustomize overlays are written (a path in the repository).',
      default: 'gitops',
    }),
    'repo-url': Flags.string({description: 'With -o argocd: the Git repository the Applications sync from.'}),
    'source-ref': Flags.string({
      description: 'With -o flux: the source the Kustomizations sync from (KIND/NAME).',
      default: 'GitRepository/flux-system',
    }),
    timeline: Flags.boolean({
      description:
        "Show, for every step boundary of apply and of a rollback, each workload's data plane and where each policy is enforced, and the hazards.",
      default: false,
    }),
  }

  async run(): Promise<MigrationPlan | FleetDocument | Timeline | ManifestChanges | undefined> {
    const o = this.validate(await this.complete())
    if (o.fleet && (o.output === 'argocd' || o.output === 'flux')) {
      this.io.stdout.write(await fleetGitOpsObjects(o.planArg, o.output, o.gitops, this.io))
      return undefined
    }
    if (o.fleet) return this.showFleet(await readFleetOverview(o.planArg), o.output)
    const shown = await readShownPlan(o.planArg!, this.io)
    const plan = shown.plan
    if (o.timeline) return this.showTimeline(shown, o.output)
    if (o.output === 'patches') return this.showPatches(shown)
    if (o.output === 'markdown' && !this.jsonEnabled()) {
      this.io.stdout.write(`${renderPlanMarkdown(plan)}\n`)
      return undefined
    }
    const format = o.output === 'markdown' ? 'table' : (o.output as DocumentOutput)
    return this.emit(plan, format, () => renderPlan(plan, stdoutPainter(this.io)))
  }

  /** Flags → options: which plan (a file, a namespace or, with --fleet, the fleet file) and how to show it. */
  private async complete(): Promise<ShowOptions> {
    const {args, flags} = await this.parse(ShowCommand)
    return {
      fleet: flags.fleet,
      planArg: flags.fleet
        ? args.plan
        : await requirePlanOrContext(
            args.plan,
            flags.namespace,
            {},
            'which plan? Name a plan file or a namespace (or pass --fleet)',
            this.io.stderr,
          ),
      output: flags.output,
      timeline: flags.timeline,
      gitops: {
        dir: flags['overlay-dir'],
        ...(flags['repo-url'] ? {repoURL: flags['repo-url']} : {}),
        sourceRef: flags['source-ref'],
      },
    }
  }

  /** A plan to show, and an output the view has. */
  private validate(o: ShowOptions): ShowOptions {
    if (!o.fleet && !o.planArg)
      throw new UsageError(
        'which plan? Name a plan file or a namespace (or -n NAMESPACE, or pass --fleet)',
        'mesh-migrate show NAMESPACE, or mesh-migrate show --fleet',
      )
    if (!o.fleet && (o.output === 'argocd' || o.output === 'flux'))
      throw new UsageError(`-o ${o.output} is for the fleet`, `mesh-migrate show --fleet -o ${o.output}`)
    if (o.fleet && o.output === 'patches')
      throw new UsageError('-o patches is for one plan; the fleet overview has table, markdown, json and yaml')
    return o
  }

  /** --timeline: the simulation at every step boundary (markdown and patches show it as the table). */
  private async showTimeline(shown: ShownPlan, output: ShowOutput): Promise<Timeline | undefined> {
    const timeline = await planTimeline(shown)
    const {renderTimeline} = await import('../ui/timeline-view.js')
    return this.emit(
      timeline,
      output === 'markdown' || output === 'patches' ? 'table' : (output as DocumentOutput),
      () => renderTimeline(shown.plan, stdoutPainter(this.io)),
    )
  }

  /** -o patches: the plan's changes as manifests for Git (--json: the same as data). */
  private async showPatches(shown: ShownPlan): Promise<ManifestChanges | undefined> {
    if (this.jsonEnabled()) return this.emit(await planManifestChanges(shown), 'json', () => '')
    const {renderManifestPatches} = await import('../ui/patches-view.js')
    this.io.stdout.write(renderManifestPatches(shown.plan))
    return undefined
  }

  private async showFleet(fleet: FleetPlan, output: ShowOutput): Promise<FleetDocument | undefined> {
    const {renderFleet, renderFleetMarkdown} = await import('../ui/fleet-view.js')
    if (output === 'markdown' && !this.jsonEnabled()) {
      this.io.stdout.write(`${renderFleetMarkdown(fleet)}\n`)
      return undefined
    }
    const {fleetDocument} = await import('../plan/fleet-file.js')
    return this.emit(fleetDocument(fleet), output === 'markdown' ? 'table' : (output as DocumentOutput), () =>
      renderFleet(fleet, stdoutPainter(this.io)),
    )
  }
}

type ShowOutput = 'table' | 'wide' | 'markdown' | 'patches' | 'json' | 'yaml' | 'argocd' | 'flux'
/** The outputs emit renders (patches, argocd and flux are written by their own views; validate refuses the rest). */
type DocumentOutput = Exclude<ShowOutput, 'patches' | 'argocd' | 'flux'>
interface ShowOptions {
  fleet: boolean
  /** A plan file or namespace; with --fleet the fleet file (absent: plans/fleet.yaml). */
  planArg: string | undefined
  output: ShowOutput
  timeline: boolean
  gitops: GitOpsOptions
}
