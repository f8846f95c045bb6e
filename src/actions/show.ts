// `show PLAN` and `show --fleet` as actions (issue 23 §2): the plan (or fleet overview) read and checked, the timeline
// simulated, the manifest changes for Git, the fleet's GitOps overlays written — with the warnings and the exit code
// of a plan edited after its first apply on the injected io. The show command parses flags, picks one and renders it.
import path from 'node:path'

import {type ManifestChanges, type Timeline, typed} from '../cli/contract.js'
import {InvalidPlanError, UserError} from '../errors.js'
import {PLANS_DIR, readTextFile, resolvePlanArg} from '../executor/plan-store.js'
import type {FleetPlan} from '../plan/fleet.js'
import {checkFleetText, FLEET_FILE} from '../plan/fleet-file.js'
import type {GitOpsOptions} from '../plan/gitops-fleet.js'
import {checkPlanText} from '../plan/planfile.js'
import {isEditedAfterApply} from '../plan/record.js'
import type {MigrationPlan} from '../planner/plan-types.js'
import {type Io, writeErr} from '../ui/io.js'
import {ExitCode} from '../exit-codes.js'

/** A plan to show: its file and the plan it holds. */
export interface ShownPlan {
  file: string
  plan: MigrationPlan
}

/**
 * PLAN (a file, or a namespace for plans/<namespace>.yaml) read and checked: an invalid plan is exit 4; one edited
 * after its first apply is still shown, with its progress (issue 19 §5), its problems a warning and exit 4 on the io.
 */
export async function readShownPlan(planArg: string, io: Io): Promise<ShownPlan> {
  const file = await resolvePlanArg(planArg)
  const checked = checkPlanText(await readTextFile(file, 'plan file'))
  if (checked.problems.length > 0 && isEditedAfterApply(checked.plan)) {
    writeErr(io, `Warning: ${new InvalidPlanError(file, checked.problems).message}`)
    io.setExitCode(ExitCode.Invalid)
  } else if (!checked.plan || checked.problems.length > 0) throw new InvalidPlanError(file, checked.problems)
  return {file, plan: checked.plan!}
}

/** --timeline: the simulation at every step boundary of apply and of a rollback, and the plan's hazards. */
export async function planTimeline({file, plan}: ShownPlan): Promise<Timeline> {
  const {timelineOf} = await import('../ui/timeline-view.js')
  const sim = timelineOf(plan)
  return typed('Timeline', {
    plan: file,
    namespace: plan.metadata.namespace,
    apply: sim.apply,
    rollback: sim.rollback,
    hazards: plan.spec.hazards,
  })
}

/** -o patches as data: the plan's changes as manifests for Git, step by step. */
export async function planManifestChanges({file, plan}: ShownPlan): Promise<ManifestChanges> {
  const {manifestChanges} = await import('../plan/gitops.js')
  return typed('ManifestChanges', {plan: file, steps: manifestChanges(plan)})
}

/** --fleet: the fleet overview (the file given, or plans/fleet.yaml), checked; a missing default says how to write it. */
export async function readFleetOverview(arg: string | undefined): Promise<FleetPlan> {
  const file = arg ?? path.join(PLANS_DIR, FLEET_FILE)
  const checked = checkFleetText(
    await readTextFile(file, 'fleet file').catch((error: unknown) => {
      if (error instanceof UserError && !arg)
        throw new UserError(`${file} does not exist`, {
          suggestion: 'Write it with mesh-migrate plan -A (or -l SELECTOR, or several namespaces).',
        })
      throw error
    }),
  )
  if (!checked.fleet) throw new InvalidPlanError(file, checked.problems)
  return checked.fleet
}

/**
 * --fleet -o argocd|flux: each namespace's overlay written under the overlay directory (said on the io's stderr), and
 * the engine's objects (an ApplicationSet, or a Kustomization per namespace) as the YAML stream for stdout.
 */
export async function fleetGitOpsObjects(
  arg: string | undefined,
  engine: 'argocd' | 'flux',
  options: GitOpsOptions,
  io: Io,
): Promise<string> {
  const {loadFleetFile} = await import('./fleet-apply.js')
  const {fleetGitOps} = await import('../cli/fleet-gitops.js')
  return fleetGitOps(await loadFleetFile(arg), engine, options, (m) => writeErr(io, m))
}
