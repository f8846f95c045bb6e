// One active plan per namespace. Objects a plan creates are marked with the plan's name, which is the
// namespace's name for every plan of it: two plan files of one namespace cannot tell their objects
// apart, and rolling back the second would delete or relabel what the first applied. So the first
// write of a plan records it as the namespace's owner (an annotation on the Namespace, kept until the
// plan is fully rolled back); another plan's apply or rollback is refused before any write (exit 5),
// as a held lock is.
import path from 'node:path'

import {LockHeldError} from '../errors.js'
import {KubeApiError} from '../kube/errors.js'
import type {KubeClient} from '../kube/types.js'
import type {KubeObject} from '../planner/model.js'
import {specDigest} from '../planner/planfile.js'
import {mayHaveWritten} from '../planner/rollback.js'
import type {PlanState} from './plan-state.js'

export const OWNER_ANNOTATION = 'mesh-migrate.io/owner-plan'

export interface PlanOwner {
  /** The plan file, as the owner's operator named it. */
  plan: string
  /** The reviewed spec's digest: what tells two plans of one namespace apart. */
  digest: string
  by: string
  since: string
}

function planDigest(state: PlanState): string {
  // Loading checks the spec against status.specDigest once the plan has written, so this is stable.
  return specDigest(state.plan)
}

export function readOwner(ns: KubeObject | undefined): PlanOwner | undefined {
  const raw = ns?.metadata.annotations?.[OWNER_ANNOTATION]
  if (!raw) return undefined
  try {
    const owner = JSON.parse(raw) as PlanOwner
    return typeof owner.digest === 'string' ? owner : undefined
  } catch {
    return undefined
  }
}

function nsRef(namespace: string) {
  return {apiVersion: 'v1', kind: 'Namespace', name: namespace}
}

function refuse(state: PlanState, owner: PlanOwner, verb: 'apply' | 'roll back'): never {
  throw new LockHeldError(
    `namespace ${state.namespace} is being migrated by another plan: ${owner.plan} (first applied by ${owner.by} at ${owner.since}); ${state.file} is a different plan and may not ${verb} there`,
    `Finish that plan (\`mesh-migrate apply ${owner.plan}\`) or undo it (\`mesh-migrate rollback ${owner.plan} --confirm ${state.namespace}\`), then use ${state.file}. Its objects carry the same plan name as this plan's, so they must not be mixed.`,
  )
}

/**
 * The owner is this plan: the same reviewed spec, or the same plan file (re-planned with --force, which
 * replaces the plan in progress and takes over what it applied).
 */
function ownedBy(owner: PlanOwner, state: PlanState): boolean {
  return owner.digest === planDigest(state) || path.normalize(owner.plan) === path.normalize(state.file)
}

/** Refuse (exit 5) when another plan owns the namespace; returns the Namespace as read. */
export async function checkOwner(
  client: KubeClient,
  state: PlanState,
  verb: 'apply' | 'roll back',
): Promise<KubeObject | undefined> {
  const ns = await client.get(nsRef(state.namespace))
  const owner = readOwner(ns)
  if (owner && !ownedBy(owner, state)) refuse(state, owner, verb)
  return ns
}

/** Before the plan's first write: record it as the namespace's owner (refused when another plan is). */
export async function claimNamespace(client: KubeClient, state: PlanState, who: string): Promise<void> {
  const ns = await checkOwner(client, state, 'apply')
  if (!ns || readOwner(ns)?.digest === planDigest(state)) return
  const owner: PlanOwner = {plan: state.file, digest: planDigest(state), by: who, since: new Date().toISOString()}
  try {
    await client.mergePatch(nsRef(state.namespace), {
      metadata: {
        resourceVersion: ns.metadata.resourceVersion,
        annotations: {[OWNER_ANNOTATION]: JSON.stringify(owner)},
      },
    })
  } catch (error) {
    // Someone wrote the Namespace since it was read: read again; another plan may have claimed it first.
    if (!(error instanceof KubeApiError && error.status === 409)) throw error
    return claimNamespace(client, state, who)
  }
}

/** After a rollback: a plan with no step that may still have written gives the namespace up. */
export async function releaseIfRolledBack(client: KubeClient, state: PlanState): Promise<boolean> {
  if (state.plan.spec.steps.some((s) => mayHaveWritten(state.phase(s)))) return false
  const ns = await client.get(nsRef(state.namespace))
  const owner = readOwner(ns)
  if (!ns || !owner || !ownedBy(owner, state)) return false
  await client.mergePatch(nsRef(state.namespace), {
    metadata: {resourceVersion: ns.metadata.resourceVersion, annotations: {[OWNER_ANNOTATION]: null}},
  })
  return true
}
