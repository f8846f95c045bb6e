// `show --fleet -o argocd|flux` (issue 22 §4): reads the fleet's plans, writes each namespace's Kustomize overlay
// under --overlay-dir (each file atomically), and returns the engine's objects for stdout.
import {mkdir} from 'node:fs/promises'
import path from 'node:path'

import {InvalidPlanError, UsageError} from '../errors.js'
import {writeFileAtomic} from '../executor/plan-store.js'
import {hasPlan, readFleetMember, type LoadedFleet} from '../executor/fleet-order.js'
import {
  argoApplicationSet,
  fluxKustomizations,
  type GitOpsOptions,
  namespaceOverlay,
  yamlStream,
} from '../plan/gitops-fleet.js'
import type {MigrationPlan} from '../planner/plan-types.js'

export async function fleetGitOps(
  loaded: LoadedFleet,
  engine: 'argocd' | 'flux',
  options: GitOpsOptions,
  note: (message: string) => void,
): Promise<string> {
  if (engine === 'argocd' && !options.repoURL)
    throw new UsageError('-o argocd needs the repository the Applications sync from', 'Pass --repo-url URL.')
  if (path.isAbsolute(options.dir) || options.dir.split(/[\\/]/).includes('..'))
    throw new UsageError(`--overlay-dir ${options.dir}: a path inside the repository is expected`)
  const plans: MigrationPlan[] = []
  for (const n of loaded.fleet.spec.namespaces) {
    if (!hasPlan(loaded, n.name)) continue
    const member = await readFleetMember(loaded, n.name)
    if (!member.plan) throw new InvalidPlanError(member.file, [{path: '', message: member.problem ?? 'not valid'}])
    plans.push(member.plan)
  }
  let files = 0
  for (const plan of plans) {
    for (const file of namespaceOverlay(plan, options)) {
      await mkdir(path.dirname(file.path), {recursive: true})
      await writeFileAtomic(file.path, file.text, note)
      files++
    }
  }
  note(`Wrote ${files} file(s) of ${plans.length} overlay(s) under ${options.dir}/ (one directory per namespace).`)
  const objects =
    engine === 'argocd'
      ? [
          argoApplicationSet(
            loaded.fleet,
            plans.map((p) => p.metadata.namespace),
            options,
          ),
        ]
      : fluxKustomizations(loaded.fleet, plans, options)
  return yamlStream(objects)
}
