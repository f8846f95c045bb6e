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
import {specDigest} from '../plan/planfile.js'
import {mayHaveWritten} from '../plan/rollback.js'
import {guardedMergePatch} from './operations.js'
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
  // Loading checks the spec against status.specDigest once the plan has written, so this is stable. A plan edited
  // after its first apply (loaded for its rollback from the record, issue 19 §5) is the reviewed plan it was.
  return state.edited && state.plan.status ? state.plan.status.specDigest : specDigest(state.plan)
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
  if (path.normalize(owner.plan) === path.normalize(state.file)) {
    // The same file with another spec: edited after the first apply (with status.specDigest recomputed, or it
    // would not have loaded), or re-planned. Only the digest says which plan this is (issue 20 §2).
    throw new LockHeldError(
      `${state.file} is not the plan first applied to namespace ${state.namespace}: its spec digest is ${planDigest(state).slice(0, 19)}…, the namespace's owner (applied by ${owner.by} at ${owner.since}) is ${owner.digest.slice(0, 19)}…; the spec was edited after the first apply, or re-planned`,
      `Restore the reviewed plan (\`git checkout -- ${state.file}\`) and ${verb === 'apply' ? 'apply' : 'roll back'} that. If this is a re-plan you reviewed (\`mesh-migrate plan ${state.namespace} --keep-progress\`), let it take over: \`mesh-migrate ${verb === 'apply' ? 'apply' : 'rollback'} ${state.file} --take-over\`.`,
    )
  }
  throw new LockHeldError(
    `namespace ${state.namespace} is being migrated by another plan: ${owner.plan} (first applied by ${owner.by} at ${owner.since}); ${state.file} is a different plan and may not ${verb} there`,
    `Finish that plan (\`mesh-migrate apply ${owner.plan}\`) or undo it (\`mesh-migrate rollback ${owner.plan} --confirm ${state.namespace}\`), then use ${state.file}. Its objects carry the same plan name as this plan's, so they must not be mixed.`,
  )
}

/**
 * The owner is this plan: the same reviewed spec. Never the same path: a file edited in place, its specDigest
 * recomputed, is another plan (issue 20 §2). A reviewed re-plan (--keep-progress, --force) takes over explicitly
 * (--take-over).
 */
function ownedBy(owner: PlanOwner, state: PlanState): boolean {
  return owner.digest === planDigest(state)
}

/** Refuse (exit 5) when another plan owns the namespace, unless taking over; returns the Namespace as read. */
export async function checkOwner(
  client: KubeClient,
  state: PlanState,
  verb: 'apply' | 'roll back',
  takeOver = false,
): Promise<KubeObject | undefined> {
  const ns = await client.get(nsRef(state.namespace))
  const owner = readOwner(ns)
  if (owner && !ownedBy(owner, state) && !takeOver) refuse(state, owner, verb)
  return ns
}

/** Before the plan's first write: record it as the namespace's owner (refused when another plan is, unless taking over). */
export async function claimNamespace(
  client: KubeClient,
  state: PlanState,
  who: string,
  takeOver = false,
): Promise<void> {
  const ns = await checkOwner(client, state, 'apply', takeOver)
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
    return claimNamespace(client, state, who, takeOver)
  }
}

/** The Namespace's owner is this plan (or the plan taken over): rollback may give it up. */
function isReleasable(owner: PlanOwner | undefined, state: PlanState, takeOver: boolean): boolean {
  return owner !== undefined && (ownedBy(owner, state) || takeOver)
}

/** After a rollback: a plan with no step that may still have written gives the namespace up. */
export async function releaseIfRolledBack(client: KubeClient, state: PlanState, takeOver = false): Promise<boolean> {
  if (state.plan.spec.steps.some((s) => mayHaveWritten(state.phase(s)))) return false
  const ns = await client.get(nsRef(state.namespace))
  const owner = readOwner(ns)
  if (!ns || !isReleasable(owner, state, takeOver)) return false
  // Guarded by the resourceVersion just read; a 409 is read again: this patch's own earlier send (applied before the
  // connection dropped, then resent) has already removed the annotation, and an unrelated write to the Namespace
  // (a label) is re-applied over while the plan still owns it.
  await guardedMergePatch(
    client,
    nsRef(state.namespace),
    {metadata: {resourceVersion: ns.metadata.resourceVersion, annotations: {[OWNER_ANNOTATION]: null}}},
    (live) => live?.metadata.annotations?.[OWNER_ANNOTATION] === undefined,
    {dryRun: false, unchanged: (live) => isReleasable(readOwner(live), state, takeOver)},
  )
  return true
}
