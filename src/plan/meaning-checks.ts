// What the writes of a plan mean (issue 20 §5): `safetyProblems` judges each write against its step's rule (kinds,
// label keys, the namespace); these judge what the writes do together, against what the planner itself produces:
// - every object a step deletes is re-created, exactly as stored, by that step's undo (else rollback loses it);
// - a waypoint the plan creates is the planned one (buildWaypoint from the plan's options), in spec.waypoints;
// - an AuthorizationPolicy the plan derives from an original it stores (copied-from) acts as the original does:
//   the same action, and no rule matching every request unless the original has one (an allow-all "copy" of a
//   restrictive ALLOW opens the namespace). The companion admitting the waypoint, and DENY parts, are the
//   documented exceptions (retarget/objects.ts names them).
// Pure.
import {canonicalize} from '../planner/canonical.js'
import type {KubeObject} from '../planner/model.js'
import type {MigrationPlan, Operation, PlanStep} from '../planner/plan-types.js'
import type {PlanProblem} from '../planner/plan-types.js'
import {formatRef, groupOf, refKey, refOf} from '../planner/refs.js'
import {companionName, COPIED_FROM_ANNOTATION, l4PartName} from '../planner/retarget/objects.js'
import {isRecord} from '../planner/json.js'
import {buildWaypoint} from '../planner/waypoint.js'
import {REVISION_LABEL} from '../planner/vocab.js'

const same = (a: unknown, b: unknown) => JSON.stringify(canonicalize(a)) === JSON.stringify(canonicalize(b))

/** Each delete of the step has the apply of the very object it stores in the step's undo. */
function undoRecreates(step: PlanStep, base: string): PlanProblem[] {
  const problems: PlanProblem[] = []
  // By refKey: a step may delete thousands of policies (cost linear in the plan).
  const recreates = new Map<string, Extract<Operation, {op: 'apply'}>>()
  for (const u of step.undo.operations) if (u.op === 'apply') recreates.set(refKey(refOf(u.object)), u)
  step.operations.forEach((op, i) => {
    if (op.op !== 'delete' || !op.object) return
    const recreate = recreates.get(refKey(op.ref))
    if (!recreate)
      problems.push({
        path: `${base}.operations[${i}]`,
        message: `deletes ${formatRef(op.ref)}, and the step's undo does not re-create it: rollback would lose it`,
      })
    else if (!same(recreate.object, op.object))
      problems.push({
        path: `${base}.operations[${i}]`,
        message: `the undo re-creates ${formatRef(op.ref)} differently from the object the step deletes`,
      })
  })
  return problems
}

const isGateway = (o: KubeObject) => groupOf(o.apiVersion) === 'gateway.networking.k8s.io' && o.kind === 'Gateway'

/** A Gateway the plan creates is buildWaypoint's for the plan's options. */
function plannedWaypoint(plan: MigrationPlan, object: KubeObject): string | undefined {
  const {waypointName, waypointFor} = plan.spec.options
  const revision = object.metadata.labels?.[REVISION_LABEL]
  let expected: KubeObject
  try {
    expected = buildWaypoint({
      name: waypointName,
      namespace: plan.metadata.namespace,
      waypointFor,
      ...(revision ? {revision} : {}),
    })
  } catch (error) {
    return (error as Error).message
  }
  if (object.metadata.name !== expected.metadata.name)
    return `creates Gateway "${object.metadata.name}", but the plan's waypoint is "${waypointName}" (spec.options.waypointName)`
  if (
    !same(object.spec, expected.spec) ||
    !same(object.metadata.labels ?? {}, {...object.metadata.labels, ...expected.metadata.labels})
  )
    return `Gateway "${object.metadata.name}" is not the waypoint the planner makes for these options (istio-waypoint, one HBONE listener on 15008, istio.io/waypoint-for=${waypointFor})`
  if (!plan.spec.waypoints.some((w) => same(w.spec, object.spec) && w.metadata.name === object.metadata.name))
    return `Gateway "${object.metadata.name}" is not listed in spec.waypoints`
  return undefined
}

/** A rule that matches every request: no from, to or when. */
function matchesEverything(rule: unknown): boolean {
  return isRecord(rule) && rule.from === undefined && rule.to === undefined && rule.when === undefined
}

function rulesOf(obj: KubeObject): unknown[] {
  return Array.isArray(obj.spec?.rules) ? (obj.spec.rules as unknown[]) : []
}

/** An AuthorizationPolicy derived from a stored original does not act wider than the original. */
function derivedPolicy(object: KubeObject, originals: Map<string, KubeObject>): string | undefined {
  const from = object.metadata.annotations?.[COPIED_FROM_ANNOTATION]
  if (from === undefined) return undefined
  const original = originals.get(from)
  if (!original) return undefined
  // The companion admits the waypoint; the L4 part of an L7 ALLOW is its documented projection (it may match
  // every request at ztunnel: docs/contract.md), not compared rule by rule here.
  if ([companionName(original.metadata.name), l4PartName(original.metadata.name)].includes(object.metadata.name))
    return undefined
  const action = (object.spec?.action as string | undefined) ?? 'ALLOW'
  const originalAction = (original.spec?.action as string | undefined) ?? 'ALLOW'
  if (action !== originalAction)
    return `AuthorizationPolicy "${object.metadata.name}" is ${action}, but ${from}, which it is derived from, is ${originalAction}`
  if (action === 'ALLOW' && rulesOf(object).some(matchesEverything) && !rulesOf(original).some(matchesEverything))
    return `AuthorizationPolicy "${object.metadata.name}" allows every request, but ${from}, which it is derived from, does not: a copy may not be wider than its original`
  return undefined
}

/** Problems with the meaning of the plan's writes (see the module comment). */
export function meaningProblems(plan: MigrationPlan): PlanProblem[] {
  const problems: PlanProblem[] = []
  // The originals the plan stores (the policies it deletes), by the name a copy's copied-from gives.
  const originals = new Map<string, KubeObject>()
  for (const step of plan.spec.steps)
    for (const op of step.operations) if (op.op === 'delete' && op.object) originals.set(op.ref.name, op.object)
  plan.spec.steps.forEach((step, i) => {
    const base = `spec.steps[${i}]`
    problems.push(...undoRecreates(step, base))
    step.operations.forEach((op, j) => {
      if (op.op !== 'apply') return
      const path = `${base}.operations[${j}]`
      const problem = isGateway(op.object)
        ? plannedWaypoint(plan, op.object)
        : groupOf(op.object.apiVersion) === 'security.istio.io' && op.object.kind === 'AuthorizationPolicy'
          ? derivedPolicy(op.object, originals)
          : undefined
      if (problem) problems.push({path, message: problem})
    })
  })
  return problems
}
