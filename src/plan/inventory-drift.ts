// The namespace's inventory now against the one the plan was made from (issue 19 §1): before the first step that
// changes the data plane, apply re-reads the inventory (the planner's own buildInventory over the cluster as a
// rollback of the applied steps would leave it) and stops on anything new or changed the plan does not handle — an
// object whose verdict is neither unaffected nor inert (an L7 policy, a route, a Telemetry, a ServiceEntry) that the
// plan did not see, or saw with other content. The plan records what it saw in `spec.observed`: one fingerprint
// over every input (the fast path: equal, nothing changed) and one fingerprint per object that matters (`objects`).
// The objects the plan acts on are checked by its steps' own preconditions (a sharper message, naming the step).
// Pure.
import type {Action, Inventory, ObjectRef, SourceSnapshot, Verdict} from '../planner/model.js'
import type {MigrationPlan} from '../planner/plan-types.js'
import {refKey, refOf} from '../planner/refs.js'
import {inventoryFingerprint, matters, shortFingerprint} from './plan-builder.js'
import {phaseOf} from './rollback.js'

/** An object the plan does not handle as it is now. */
export interface InventoryChange {
  ref: ObjectRef
  verdict: Verdict
  action: Action
  /** new: the plan never saw it; changed: its content (or, for a plan without per-object fingerprints, its verdict) differs. */
  change: 'new' | 'changed'
  reasons: string[]
}

export interface InventoryComparison {
  /** Nothing the plan was computed from changed (the plan's fingerprint over all inputs is the same). */
  unchanged: boolean
  /** New or changed objects whose verdict is neither unaffected nor inert: apply stops on them. */
  changes: InventoryChange[]
  /** Objects that mattered to the plan and are gone (the preconditions of the steps acting on them judge those). */
  removed: ObjectRef[]
}

/**
 * Compare the inventory built now (from `snapshot`) with what `plan` recorded. Linear in the objects: one map of
 * the plan's per-object fingerprints, one of its inventory items, one pass over the new inventory.
 */
export function compareInventory(
  plan: MigrationPlan,
  inventory: Inventory,
  snapshot: SourceSnapshot,
): InventoryComparison {
  if (inventoryFingerprint(inventory, snapshot) === plan.spec.observed.fingerprint)
    return {unchanged: true, changes: [], removed: []}
  const recorded = plan.spec.observed.objects
  const planned = new Map(plan.spec.inventory.map((i) => [refKey(i.ref), i] as const))
  const objects = new Map(snapshot.objects.map((o) => [refKey(refOf(o)), o] as const))
  const changes: InventoryChange[] = []
  const seen = new Set<string>()
  const checked = checkedByPendingSteps(plan)
  for (const item of inventory.objects) {
    if (!matters(item)) continue
    const key = refKey(item.ref)
    seen.add(key)
    if (checked.has(key)) continue
    const before = planned.get(key)
    let change: InventoryChange['change'] | undefined
    if (recorded) {
      const object = objects.get(key)
      if (!(key in recorded)) change = before ? 'changed' : 'new'
      else if (object && recorded[key] !== shortFingerprint(object)) change = 'changed'
    } else if (!before) change = 'new'
    // A plan without per-object fingerprints (written before them) tells a change only by its classification.
    else if (
      before.verdict !== item.verdict ||
      before.action !== item.action ||
      !sameList(before.reasons, item.reasons)
    )
      change = 'changed'
    if (change) changes.push({ref: item.ref, verdict: item.verdict, action: item.action, change, reasons: item.reasons})
  }
  const removedKeys = recorded ? Object.keys(recorded) : plan.spec.inventory.filter(matters).map((i) => refKey(i.ref))
  const removed = removedKeys
    .filter((k) => !seen.has(k) && !objects.has(k))
    .flatMap((k) => {
      const item = planned.get(k)
      return item ? [item.ref] : []
    })
  return {unchanged: false, changes, removed}
}

/**
 * The objects a step not yet applied checks itself (object-unchanged: the originals the plan copies or deletes). A
 * change to one of them is the step's stale precondition, reported before any write with the step that needs it
 * (engine.ts checkLaterSteps), and a re-plan cannot keep the progress of the steps that copied it: not ours to name.
 */
function checkedByPendingSteps(plan: MigrationPlan): Set<string> {
  return new Set(
    plan.spec.steps
      .filter((s) => phaseOf(plan, s) !== 'Applied')
      .flatMap((s) => s.preconditions.flatMap((p) => (p.check === 'object-unchanged' ? [refKey(p.ref)] : []))),
  )
}

const sameList = (a: string[], b: string[]) => a.length === b.length && a.every((x, i) => x === b[i])
