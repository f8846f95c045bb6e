import {Args, Flags} from '@oclif/core'

import {InvalidPlanError} from '../errors.js'
import {readTextFile, resolvePlanArg} from '../executor/plan-store.js'
import type {MigrationPlan} from '../planner/plan-types.js'
import {checkPlanText} from '../planner/planfile.js'
import {stdoutPainter} from '../ui/color.js'
import {renderPlan, renderPlanMarkdown} from '../ui/plan-view.js'
import {BaseCommand, EXIT_CODES_HELP} from '../cli/base.js'
import {type ManifestChanges, type Timeline, typed} from '../cli/contract.js'
import {namespaceFlag, requireNamespaceArg} from '../cli/flags.js'

export default class ShowCommand extends BaseCommand {
  static override summary = 'Render a plan for people: steps with their state, blockers and findings.'
  static override description = `PLAN is a plan file, or a namespace name meaning plans/<namespace>.yaml. -o markdown gives a pull-request comment body. -o patches gives the plan's changes as manifests for a Git repository, step by step (Kustomize strategic-merge patches and new objects): for namespaces and workloads that Argo CD, Flux or Helm manage, where a live change is reverted by the next sync (E23). --timeline shows the step-by-step simulation: after each step of apply (and of a rollback), which pods run with a sidecar, ambient or outside the mesh, and where each policy is enforced.

EXIT CODES
${EXIT_CODES_HELP}`

  static override examples = [
    '<%= config.bin %> show plans/bookinfo.yaml',
    '<%= config.bin %> show bookinfo -o markdown > comment.md',
    '<%= config.bin %> show bookinfo -o patches > migration-patches.yaml',
  ]

  static override args = {plan: Args.string({description: 'Plan file, or namespace name (or -n NAMESPACE).'})}
  static override flags = {
    namespace: namespaceFlag,
    output: Flags.option({char: 'o', description: 'Output format: table (fits the terminal), wide (nothing cut), markdown (a pull-request comment), patches (manifests for Git), json or yaml (docs/contract.md).', options: ['table', 'wide', 'markdown', 'patches', 'json', 'yaml'] as const, default: 'table' as const})(),
    timeline: Flags.boolean({description: 'Show, for every step boundary of apply and of a rollback, each workload\'s data plane and where each policy is enforced, and the hazards.', default: false}),
  }

  async run(): Promise<MigrationPlan | Timeline | ManifestChanges | undefined> {
    const {args, flags} = await this.parse(ShowCommand)
    const file = await resolvePlanArg(requireNamespaceArg(args.plan, flags.namespace))
    const checked = checkPlanText(await readTextFile(file, 'plan file'))
    if (!checked.plan || checked.problems.length > 0) throw new InvalidPlanError(file, checked.problems)
    const plan = checked.plan
    if (flags.timeline) {
      const {renderTimeline, timelineOf} = await import('../ui/timeline-view.js')
      const sim = timelineOf(plan)
      const timeline = typed('Timeline', {plan: file, namespace: plan.metadata.namespace, apply: sim.apply, rollback: sim.rollback, hazards: plan.spec.hazards})
      return this.emit(timeline, flags.output === 'markdown' || flags.output === 'patches' ? 'table' : flags.output, () => renderTimeline(plan, stdoutPainter()))
    }
    if (flags.output === 'patches') {
      const {manifestChanges} = await import('../planner/gitops.js')
      if (this.jsonEnabled()) return this.emit(typed('ManifestChanges', {plan: file, steps: manifestChanges(plan)}), 'json', () => '')
      const {renderManifestPatches} = await import('../ui/patches-view.js')
      process.stdout.write(renderManifestPatches(plan))
      return undefined
    }
    if (flags.output === 'markdown' && !this.jsonEnabled()) {
      process.stdout.write(`${renderPlanMarkdown(plan)}\n`)
      return undefined
    }
    const format = flags.output === 'markdown' ? 'table' : (flags.output as Exclude<typeof flags.output, 'patches'>)
    return this.emit(plan, format, () => renderPlan(plan, stdoutPainter()))
  }
}
