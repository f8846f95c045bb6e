// The cluster reads of `census`: one cluster-wide paginated LIST per kind, never one call per
// namespace (SPEC §8), plus the plan files on disk.
import {readFile} from 'node:fs/promises'
import path from 'node:path'

import {UserError} from '../errors.js'
import {listPlanFiles, readTextFile} from '../executor/plan-store.js'
import {KubeApiError} from '../kube/errors.js'
import type {KubeClient, ListOptions} from '../kube/types.js'
import type {KubeObject} from '../planner/model.js'
import type {MigrationPlan} from '../planner/plan-types.js'
import {checkFleetText, FLEET_FILE} from '../plan/fleet-file.js'
import {checkPlanText} from '../plan/planfile.js'
import {WAYPOINT_CONTROLLER} from '../planner/workloads.js'
import type {CensusInput} from './census.js'
import {GATEWAY_MANAGED} from '../planner/vocab.js'

/** A kind that may be absent or unreadable: [] and a note instead of a failure. */
async function optionalList(
  client: KubeClient,
  apiVersion: string,
  kind: string,
  opts: ListOptions,
  notes: string[],
  consequence: string,
): Promise<KubeObject[]> {
  const resource = await client.resourceFor(apiVersion, kind)
  if (!resource) {
    notes.push(`${kind} (${apiVersion}) is not served by this cluster: ${consequence}.`)
    return []
  }
  try {
    return await client.list(resource, opts)
  } catch (error) {
    if (error instanceof KubeApiError && error.status === 403) {
      notes.push(`${kind} could not be listed cluster-wide (forbidden): ${consequence}.`)
      return []
    }
    throw error
  }
}

async function requiredList(
  client: KubeClient,
  apiVersion: string,
  kind: string,
  opts: ListOptions,
): Promise<KubeObject[]> {
  const resource = await client.resourceFor(apiVersion, kind)
  if (!resource)
    throw new UserError(`the API server at ${client.server} does not serve ${kind} (${apiVersion})`, {
      suggestion: 'Check that --kubeconfig/--context point at a Kubernetes API server.',
    })
  return client.list(resource, opts)
}

export async function readCensusInput(
  client: KubeClient,
  opts: {selector?: string; plansDir: string},
): Promise<CensusInput> {
  const notes: string[] = []
  const [namespaces, pods, gateways, deployments, mutatingWebhooks] = await Promise.all([
    // The selector is applied by the server to the namespace list; the other lists are filtered by namespace.
    requiredList(client, 'v1', 'Namespace', opts.selector ? {labelSelector: opts.selector} : {}),
    requiredList(client, 'v1', 'Pod', {}),
    optionalList(client, 'gateway.networking.k8s.io/v1', 'Gateway', {}, notes, 'waypoints are not shown'),
    optionalList(
      client,
      'apps/v1',
      'Deployment',
      {labelSelector: `${GATEWAY_MANAGED}=${WAYPOINT_CONTROLLER}`},
      notes,
      'waypoint readiness cannot be told',
    ),
    optionalList(
      client,
      'admissionregistration.k8s.io/v1',
      'MutatingWebhookConfiguration',
      {},
      notes,
      "injection is read from the namespace labels by the istiod chart's selector table, not from the installed webhooks",
    ),
  ])
  const selected = new Set(namespaces.map((n) => n.metadata.name))
  const inSelected = (o: KubeObject) => selected.has(o.metadata.namespace ?? '')

  const plans: {file: string; plan: MigrationPlan}[] = []
  for (const file of await listPlanFiles(opts.plansDir)) {
    const checked = checkPlanText(await readTextFile(file, 'plan file'))
    if (!checked.plan) {
      notes.push(`${file} is not a readable plan (${checked.problems[0]?.message ?? 'invalid'}); skipped.`)
      continue
    }
    if (!selected.has(checked.plan.metadata.namespace)) {
      if (!opts.selector)
        notes.push(
          `${file} is the plan of namespace ${checked.plan.metadata.namespace}, which does not exist in context ${client.context}.`,
        )
      continue
    }
    plans.push({file, plan: checked.plan})
  }

  const waves = await fleetWaves(opts.plansDir, notes)
  return {
    ...(waves ? {waves} : {}),
    context: client.context,
    namespaces,
    pods: pods.filter(inSelected),
    gateways: gateways.filter(inSelected),
    deployments: deployments.filter(inSelected),
    mutatingWebhooks,
    plans,
    notes,
  }
}

/** Each namespace's wave from the fleet plan (plan -A writes plans/fleet.yaml), if there is a readable one. */
async function fleetWaves(plansDir: string, notes: string[]): Promise<Record<string, number> | undefined> {
  const file = path.join(plansDir, FLEET_FILE)
  const text = await readFile(file, 'utf8').catch(() => undefined)
  if (text === undefined) return undefined
  const checked = checkFleetText(text)
  if (!checked.fleet) {
    notes.push(
      `${file} is not a readable fleet plan (${checked.problems[0]?.message ?? 'invalid'}); waves are not shown.`,
    )
    return undefined
  }
  return Object.fromEntries(checked.fleet.spec.namespaces.map((n) => [n.name, n.wave]))
}
