// create-policies: before bind-waypoint, because from then on the waypoint carries traffic and destinations see
// its identity; the copies are inert until then (sidecars and ztunnel ignore targetRefs) and the companions only
// admit the waypoint. E22 rewrites need no waypoint, so the step exists without one too. Pure.
import {objectFingerprint} from '../planner/canonical.js'
import type {Operation, Precondition} from '../planner/plan-types.js'
import {refOf} from '../planner/refs.js'
import type {PolicyMigration, PolicyPlacement} from '../planner/retarget.js'
import {POLICY_KINDS} from './shared.js'
import type {StepKind} from './types.js'

export const createPolicies: StepKind = {
  action: 'create-policies',
  summary: 'Create waypoint copies, ztunnel companions and L4 parts of policies (inert until bound)',
  preparesOnly: true,
  writes: {apply: [...POLICY_KINDS, '/Service']},
  plan: ({migrating, policies}) => {
    const toCreate = policies.createBeforeBind
    if (!migrating || toCreate.length === 0) return {}
    const carried = policies.decisions.filter((d) => d.created.some((c) => c.createdIn === 'create-policies'))
    // Copies that exist already (issue 21 point 3): used as they are, so they must still be what the plan saw.
    const reused = policies.decisions.flatMap((d) => d.created.filter((c) => c.reused))
    const short = (c: PolicyPlacement) =>
      c.role === 'waypoint-copy'
        ? `${c.reused ? 'existing ' : ''}${c.ref.name} (${c.targetRefs?.[0]?.kind === 'Gateway' ? `Gateway ${c.targetRefs[0].name}` : `Service ${c.services.join(', ')}`})`
        : c.ref.name
    return {
      step: {
        id: 'create-policies',
        action: 'create-policies',
        description: `Before the waypoint is bound, create ${toCreate.length} polic${toCreate.length === 1 ? 'y' : 'ies'}: ${carried
          .map(
            (d) =>
              `${d.ref.name} → ${d.created
                .filter((c) => c.createdIn === 'create-policies' || c.reused)
                .map(short)
                .join(', ')}`,
          )
          .join('; ')}. ${whyCreated(policies).join('; ').replace(/^t/, 'T')}.`,
        preconditions: [
          ...carried.map((d): Precondition => ({
            check: 'object-unchanged',
            ref: d.ref,
            fingerprint: objectFingerprint(d.original.object),
          })),
          ...reused.map((c): Precondition => ({
            check: 'object-unchanged',
            ref: c.ref,
            fingerprint: objectFingerprint(c.object),
          })),
          ...toCreate.map((c): Precondition => ({check: 'object-absent-or-ours', ref: refOf(c)})),
        ],
        operations: toCreate.map((object): Operation => ({op: 'apply', object})),
        verify: [{check: 'objects-present', refs: toCreate.map(refOf)}],
        undo: {
          description: "Delete exactly the policies this step created (only while they carry this plan's annotation).",
          operations: toCreate.map((object): Operation => ({op: 'delete', ref: refOf(object)})),
        },
      },
    }
  },
}

/** Why each role of created object is there, for the step description. */
function whyCreated(policies: PolicyMigration): string[] {
  const carried = policies.decisions.filter((d) => d.created.some((c) => c.createdIn === 'create-policies'))
  const made = carried.flatMap((d) => d.created.filter((c) => c.createdIn === 'create-policies'))
  const roles = new Set(made.map((c) => c.role))
  const companion = made.find((c) => c.role === 'ztunnel-companion')
  return [
    roles.has('waypoint-copy')
      ? "the -waypoint copies carry the full rules to the waypoint, which sees the caller's identity (sidecars and ztunnel ignore targetRefs: inert until bind-waypoint)"
      : '',
    companion
      ? `the -ztunnel companions ALLOW the waypoint (${companion.object.spec.rules[0].from[0].source.principals.join(', ')}) at the destination, which sees the waypoint instead of the caller for proxied traffic`
      : '',
    carried.some((d) => d.disposition === 'keep-copy')
      ? `the waypoint denies requests to a Service that none of the ALLOWs attached to it matches, so ALLOWs that stay at the destination are copied to the waypoint too (${carried
          .filter((d) => d.disposition === 'keep-copy')
          .map((d) => d.ref.name)
          .join(', ')})`
      : '',
    roles.has('ztunnel-l4')
      ? 'the -l4 objects are what ztunnel enforces of a policy (DENY rules it enforces as written, E22 rewrites); they change nothing while the originals exist'
      : '',
  ].filter((w) => w !== '')
}
