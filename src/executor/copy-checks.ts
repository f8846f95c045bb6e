// Issue 20 §5 at apply time: a policy the plan derives from an original it keeps (a waypoint copy, a companion, an L4
// part) is compared with that original as the cluster has it, right before the step creates it. The plan does not
// store a kept original (only the fingerprint of its rules, which validate checks a waypoint copy against), so this is
// where an L4 part of a kept policy is judged, and where a plan whose copy and recorded fingerprint were both widened
// is caught. The derivation is the planner's own (plan/derived-checks.ts).
import {ExitCode} from '../exit-codes.js'
import {StalePlanError, UserError} from '../errors.js'
import type {KubeClient} from '../kube/types.js'
import type {KubeObject, ObjectRef} from '../planner/model.js'
import type {MigrationPlan, PlanStep} from '../planner/plan-types.js'
import {formatRef} from '../planner/refs.js'
import {COPIED_FROM_ANNOTATION, isRetargetable} from '../planner/retarget/objects.js'
import {derivationContext, derivationProblem, rulesFingerprint} from '../plan/derived-checks.js'

/** The original a created object names (copied-from), when the plan keeps it (stores no copy of it). */
function keptOriginal(
  plan: MigrationPlan,
  object: KubeObject,
  stored: ReadonlySet<string>,
): {from: string; ref: ObjectRef} | undefined {
  const from = object.metadata.annotations?.[COPIED_FROM_ANNOTATION]
  if (from === undefined || stored.has(from) || !isRetargetable(object)) return undefined
  const [namespace, name] = from.includes('/')
    ? (from.split('/', 2) as [string, string])
    : [plan.metadata.namespace, from]
  return {from, ref: {apiVersion: object.apiVersion, kind: object.kind, namespace, name}}
}

/**
 * Before `step` creates a policy derived from a kept original: the live original still has the rules the plan
 * recorded (else exit 3: re-plan), and the policy is what the planner derives from it, nothing wider (else exit 4,
 * judged first: a plan whose copy and recorded fingerprint were both widened is a wrong plan, not a stale one).
 */
export async function checkCopiesOfKeptOriginals(
  client: KubeClient,
  plan: MigrationPlan,
  step: PlanStep,
  file: string,
): Promise<void> {
  const stored = new Set(
    plan.spec.steps.flatMap((s) =>
      s.operations.flatMap((op) => (op.op === 'delete' && op.object ? [op.ref.name] : [])),
    ),
  )
  const derivation = derivationContext(plan)
  for (const op of step.operations) {
    if (op.op !== 'apply') continue
    const kept = keptOriginal(plan, op.object, stored)
    if (!kept) continue
    const live = await client.get(kept.ref)
    const what = `${op.object.kind} ${op.object.metadata.name}`
    if (!live)
      throw new StalePlanError(
        `${formatRef(kept.ref)}, which step ${step.id} derives ${what} from, no longer exists; nothing was written by the step`,
      )
    const problem = derivationProblem(op.object, new Map([[kept.from, live]]), derivation)
    if (problem)
      throw new UserError(
        `step ${step.id} would create a policy that is not what the planner derives from its original as the cluster has it (a copy is the original retargeted, nothing wider): ${problem} (compared with the live ${formatRef(kept.ref)}); nothing was written by the step`,
        {
          exitCode: ExitCode.Invalid,
          suggestion: `Restore the reviewed plan (\`git checkout -- ${file}\`), or re-plan with \`mesh-migrate plan ${plan.metadata.namespace} --keep-progress\` and review the new plan.`,
        },
      )
    const recorded = plan.spec.observed.keptRules?.[kept.from]
    if (recorded !== undefined && rulesFingerprint(live) !== recorded)
      throw new StalePlanError(
        `the rules of ${formatRef(kept.ref)}, which step ${step.id} derives ${what} from, changed since the plan was made; nothing was written by the step`,
      )
  }
}
