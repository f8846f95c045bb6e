import {mkdir} from 'node:fs/promises'
import path from 'node:path'

import {Args, Flags} from '@oclif/core'

import {UserError} from '../errors.js'
import {defaultPlanPath, readTextFile, writeFileAtomic} from '../executor/plan-store.js'
import {buildInventory} from '../planner/inventory.js'
import {buildPlan} from '../planner/plan-builder.js'
import type {MigrationPlan} from '../planner/plan-types.js'
import {checkPlanText, hasStarted, renderPlanFile} from '../planner/planfile.js'
import {waypointNameProblem} from '../planner/waypoint.js'
import {openSource, requireNamespace} from '../sources/open.js'
import {ClusterSource} from '../sources/cluster.js'
import {stderrPainter, stdoutPainter} from '../ui/color.js'
import {renderPlan} from '../ui/plan-view.js'
import {BaseCommand, EXIT_CODES_HELP, outputFlag, sourceFlags} from '../cli/base.js'
import {namespaceFlag, requireNamespaceArg, waypointForFlag, waypointNameFlag} from '../cli/flags.js'

export default class PlanCommand extends BaseCommand {
  static override summary = 'Write the ordered, reversible migration plan of a namespace to plans/<namespace>.yaml.'
  static override description = `Builds the inventory, decides whether the namespace needs a waypoint, generates it, and writes the steps (preflight, create-waypoint, wait-waypoint, create-policies, bind-waypoint, enable-ambient, remove-sidecar-injection, restart-workloads, delete-sidecar-policies, verify-dataplane — only those the namespace needs), each with the objects it writes, its verification and its undo.

The file is canonical YAML: regenerating from unchanged input gives an identical file. A plan with blockers is still written, says so at the top, and the command exits 1.

EXIT CODES
${EXIT_CODES_HELP}`

  static override examples = [
    '<%= config.bin %> plan bookinfo --manifests examples/bookinfo',
    '<%= config.bin %> plan bookinfo --context prod --waypoint-name bookinfo-waypoint',
    '<%= config.bin %> plan bookinfo --detailed-exitcode   # 0: nothing to migrate, 10: plan has steps',
  ]

  static override args = {namespace: Args.string({description: 'The namespace to migrate (or -n NAMESPACE).'})}
  static override flags = {
    namespace: namespaceFlag,
    ...sourceFlags,
    output: outputFlag,
    out: Flags.string({description: 'Where to write the plan (default plans/<namespace>.yaml). "-" writes it to stdout only.'}),
    force: Flags.boolean({description: 'Overwrite a plan that already has applied steps.', default: false}),
    'waypoint-name': waypointNameFlag,
    'waypoint-for': waypointForFlag,
    'detailed-exitcode': Flags.boolean({description: 'Exit 0 when there is nothing to migrate, 10 when the plan has steps.', default: false}),
    routes: Flags.option({
      description: 'virtualservice: keep mesh VirtualServices of this namespace (the waypoint applies them; Alpha). httproute: convert them to Gateway API HTTPRoutes with the Service as parent, created and the VirtualServices deleted in one step (swap-routes).',
      options: ['virtualservice', 'httproute'] as const,
      default: 'virtualservice' as const,
    })(),
    'opted-out': Flags.option({
      description: 'Pods outside the mesh today (sidecar.istio.io/inject=false, class-istio gateways): keep-out labels them istio.io/dataplane-mode=none before the switch; enroll lets ztunnel capture them.',
      options: ['keep-out', 'enroll'] as const,
      default: 'keep-out' as const,
    })(),
    'deny-waypoint-bypass': Flags.boolean({description: 'Add a last, optional step with the bypass-prevention DENY (only once every caller is ambient).', default: false}),
    'accept-lost': Flags.string({description: 'Finding id of client-side behaviour that will be lost (E11/E12) and that you accept; * matches any text (e.g. "E11/DestinationRule/*"). Repeatable.', multiple: true, multipleNonGreedy: true}),
    'accept-hazard': Flags.string({description: 'Hazard id (outside a documented window) that you accept; * matches any text. Repeatable.', multiple: true, multipleNonGreedy: true}),
  }

  async run(): Promise<MigrationPlan | undefined> {
    const {args, flags} = await this.parse(PlanCommand)
    const namespace = requireNamespaceArg(args.namespace, flags.namespace)
    const problem = waypointNameProblem(flags['waypoint-name'])
    if (problem) throw new UserError(`--waypoint-name "${flags['waypoint-name']}": ${problem}`, {exitCode: 2})

    const out = flags.out ?? defaultPlanPath(namespace)
    const previousText = out === '-' ? undefined : await readTextFile(out).catch(() => undefined)
    if (previousText !== undefined && !flags.force) {
      const previous = checkPlanText(previousText).plan
      if (previous && hasStarted(previous)) {
        throw new UserError(`${out} has applied steps: refusing to overwrite a plan in progress`, {
          suggestion: `Finish it with \`mesh-migrate apply ${out}\` or undo it with \`mesh-migrate rollback ${out}\`; --force overwrites it (its progress record is lost).`,
        })
      }
    }

    const source = await openSource(flags)
    const snapshot = requireNamespace(await source.snapshot(namespace, {rootNamespace: flags['root-namespace']}))
    const inventory = buildInventory(snapshot, {
      waypointFor: flags['waypoint-for'],
      ...(flags['istio-version'] ? {istioVersion: flags['istio-version']} : {}),
    })
    const plan = buildPlan({
      inventory,
      snapshot,
      options: {
        rootNamespace: flags['root-namespace'],
        waypointName: flags['waypoint-name'],
        waypointFor: flags['waypoint-for'],
        routes: flags.routes,
        optedOut: flags['opted-out'],
        denyWaypointBypass: flags['deny-waypoint-bypass'],
        ...(flags['accept-lost']?.length ? {acceptLost: [...new Set(flags['accept-lost'])].sort()} : {}),
        ...(flags['accept-hazard']?.length ? {acceptHazards: [...new Set(flags['accept-hazard'])].sort()} : {}),
      },
      generator: `mesh-migrate/${this.config.version}`,
      ...(flags['istio-version'] ? {istioVersion: flags['istio-version']} : {}),
    })
    const text = renderPlanFile(plan)

    if (out === '-') {
      if (!this.jsonEnabled() && flags.output === 'table') process.stdout.write(text)
    } else if (previousText === text) {
      this.note(`${out} is up to date (unchanged).`)
    } else {
      await mkdir(path.dirname(out), {recursive: true})
      await writeFileAtomic(out, text)
      this.note(`Wrote ${out}.`)
    }

    // On a live cluster, show now what the preflight step will check at apply time.
    if (source instanceof ClusterSource && plan.spec.steps.length > 0) {
      const {runPreflight} = await import('../preflight/runner.js')
      const {renderPreflight} = await import('../preflight/view.js')
      const diagnostics = await runPreflight(source.client, namespace, {plan, inventory, snapshot, rootNamespace: flags['root-namespace']})
      this.note(`\nPreflight (re-checked by the preflight step when you apply):\n${renderPreflight(diagnostics, stderrPainter())}`)
    }

    const blockers = plan.spec.summary.blockers
    if (blockers > 0) {
      process.exitCode = 1
      this.note(`The plan has ${blockers} blocker(s); it cannot be applied until they are resolved (mesh-migrate show ${out === '-' ? namespace : out}).`)
    } else if (flags['detailed-exitcode']) {
      process.exitCode = plan.spec.steps.length > 0 ? 10 : 0
    }
    if (out === '-' && flags.output === 'table' && !this.jsonEnabled()) return undefined
    return this.emit(plan, flags.output, () => renderPlan(plan, stdoutPainter()))
  }
}
