// What the writes of a plan mean (issue 20 §5): `safetyProblems` judges each write against its step's rule (kinds,
// label keys, the namespace); these judge what the writes do together, against what the planner itself produces:
// - every object a step deletes is re-created, exactly as stored, by that step's undo (else rollback loses it);
// - a waypoint the plan creates is the planned one (buildWaypoint from the plan's options), in spec.waypoints;
// - a policy the plan derives from an original (copied-from) is what the planner derives from it, nothing wider:
//   derived-checks.ts.
// Pure.
import {canonicalize} from '../planner/canonical.js'
import type {KubeObject} from '../planner/model.js'
import type {MigrationPlan, Operation, PlanStep} from '../planner/plan-types.js'
import type {PlanProblem} from '../planner/plan-types.js'
import {formatRef, groupOf, refKey, refOf} from '../planner/refs.js'
import {isRetargetable} from '../planner/retarget/objects.js'
import {buildWaypoint} from '../planner/waypoint.js'
import {REVISION_LABEL} from '../planner/vocab.js'
import {derivationContext, derivationProblem} from './derived-checks.js'

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

/** Problems with the meaning of the plan's writes (see the module comment). */
export function meaningProblems(plan: MigrationPlan): PlanProblem[] {
  const problems: PlanProblem[] = []
  // The originals the plan stores (the policies it deletes), by the name a copy's copied-from gives.
  const originals = new Map<string, KubeObject>()
  for (const step of plan.spec.steps)
    for (const op of step.operations) if (op.op === 'delete' && op.object) originals.set(op.ref.name, op.object)
  const derivation = derivationContext(plan)
  plan.spec.steps.forEach((step, i) => {
    const base = `spec.steps[${i}]`
    problems.push(...undoRecreates(step, base))
    step.operations.forEach((op, j) => {
      if (op.op !== 'apply') return
      const path = `${base}.operations[${j}]`
      const problem = isGateway(op.object)
        ? plannedWaypoint(plan, op.object)
        : isRetargetable(op.object)
          ? derivationProblem(op.object, originals, derivation)
          : undefined
      if (problem) problems.push({path, message: problem})
    })
  })
  return problems
}
