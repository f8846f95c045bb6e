// delete-sidecar-policies: right after the restart, when ztunnel would degrade the originals (L7 ALLOW: deny-all,
// L7 DENY: no-op or broadened). The L4 parts of L7 ALLOWs are applied in the same step and not earlier: before
// the restart, sidecars would enforce them too and allow more than the originals. Pure.
import {cleanObject, objectFingerprint} from '../planner/canonical.js'
import type {Operation, Precondition} from '../planner/plan-types.js'
import {refOf} from '../planner/refs.js'
import {POLICY_KINDS} from './shared.js'
import type {StepKind} from './types.js'

export const deleteSidecarPolicies: StepKind = {
  action: 'delete-sidecar-policies',
  summary: 'Delete the policies superseded by create-policies; add the L4 parts of L7 ALLOWs',
  // Deletes the superseded originals and creates the L4 parts of L7 ALLOWs (its undo re-creates the former and
  // deletes the latter).
  writes: {apply: ['security.istio.io/AuthorizationPolicy'], delete: POLICY_KINDS},
  undoUnit: 'sidecars-return',
  simulation: {role: 'replaces-sidecar-policies'},
  plan: ({migrating, policies, waypoint}) => {
    const toDelete = policies.replaceAfterRestart.delete
    const toApply = policies.replaceAfterRestart.apply
    if (!migrating || (toDelete.length === 0 && toApply.length === 0)) return {}
    const byDeleted = policies.decisions.filter((d) => d.original.deletedIn === 'delete-sidecar-policies')
    const applied = policies.decisions.flatMap((d) =>
      d.created.filter((c) => c.createdIn === 'delete-sidecar-policies'),
    )
    return {
      step: {
        id: 'delete-sidecar-policies',
        action: 'delete-sidecar-policies',
        description: `Right after the restart${toApply.length > 0 ? `, create the L4 part of each L7 ALLOW (${applied.map((c) => c.ref.name).join(', ')}: its rules without the L7 attributes, so that callers bypassing the waypoint — sidecar clients, pod-IP traffic — keep the restriction ztunnel can enforce) and` : ','} delete the ${toDelete.length} polic${toDelete.length === 1 ? 'y' : 'ies'} superseded by the objects of create-policies: ${byDeleted.map((d) => `${d.ref.kind} ${d.ref.name}`).join(', ')}. Until then ztunnel degrades them for restarted pods (an L7 ALLOW is deny-all for callers that bypass the waypoint, an L7 DENY a no-op). Not earlier: sidecars would enforce the L4 parts too and allow more. Each deleted policy is stored here in full so rollback can re-create it.`,
        preconditions: [
          ...toDelete.map((o): Precondition => ({
            check: 'object-unchanged',
            ref: refOf(o),
            fingerprint: objectFingerprint(o),
          })),
          ...toApply.map((o): Precondition => ({check: 'object-absent-or-ours', ref: refOf(o)})),
          // The originals go only while the waypoint that enforces their copies is ready.
          ...(waypoint ? [{check: 'waypoint-ready' as const, ref: waypoint.ref}] : []),
        ],
        operations: [
          ...toApply.map((object): Operation => ({op: 'apply', object})),
          ...toDelete.map((o): Operation => ({op: 'delete', ref: refOf(o), object: cleanObject(o)})),
        ],
        verify: [
          ...(toDelete.length > 0 ? [{check: 'objects-absent' as const, refs: toDelete.map(refOf)}] : []),
          ...(toApply.length > 0 ? [{check: 'objects-present' as const, refs: toApply.map(refOf)}] : []),
        ],
        undo: {
          description: `Re-create the deleted policies from the copies stored in this step${toApply.length > 0 ? ', then delete the L4 parts it applied (sidecars coming back must not enforce them)' : ''}.`,
          operations: [
            ...toDelete.map((o): Operation => ({op: 'apply', object: cleanObject(o)})),
            ...toApply.map((object): Operation => ({op: 'delete', ref: refOf(object)})),
          ],
        },
      },
    }
  },
}
