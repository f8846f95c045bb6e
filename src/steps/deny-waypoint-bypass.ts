// deny-waypoint-bypass: optional selector DENY (notPrincipals: the waypoint) so L7 policies on the waypoint cannot
// be bypassed by addressing pods directly (DOMAIN §3.1 recipe). Only once every caller is ambient. Pure.
import {finding} from '../planner/findings/finding.js'
import type {Finding, Inventory, KubeObject} from '../planner/model.js'
import type {Operation, PlanStep, Precondition} from '../planner/plan-types.js'
import {refOf} from '../planner/refs.js'
import {markManaged} from '../planner/retarget.js'
import type {WaypointIdentity} from '../planner/waypoint.js'
import type {StepKind} from './types.js'

export const denyWaypointBypass: StepKind = {
  action: 'deny-waypoint-bypass',
  summary: 'Optional (--deny-waypoint-bypass): DENY traffic that bypasses the waypoint',
  writes: {apply: ['security.istio.io/AuthorizationPolicy']},
  plan: ({migrating, waypointRequired, options, inventory, ns, waypointIdentity}) =>
    migrating && waypointRequired && options.denyWaypointBypass && waypointIdentity
      ? denyBypassStep(inventory, waypointIdentity, ns)
      : {},
}

function denyBypassStep(
  inventory: Inventory,
  waypoint: WaypointIdentity,
  planName: string,
): {step?: PlanStep; findings: Finding[]} {
  const ns = inventory.namespace
  const waypointName = `${waypoint.namespace}/${waypoint.name}`
  // The waypoint's principal in the mesh's trust domain and each alias (ztunnel compares them literally).
  const principals = waypoint.principals
  const findings: Finding[] = []
  const policies: KubeObject[] = []
  for (const svc of inventory.services) {
    if (!svc.selector || Object.keys(svc.selector).length === 0 || svc.labels?.['gateway.istio.io/managed']) continue
    if (svc.headless) {
      findings.push(
        finding(
          'BypassDenyHeadless',
          svc.ref,
          {variant: 'denyBypassStep', refName: svc.ref.name},
          {id: `deny-bypass-headless/${ns}/${svc.ref.name}`, severity: 'warning'},
        ),
      )
      continue
    }
    // The DENY selects pods, not a Service: pods that are also behind a headless Service (or StatefulSet pods,
    // which their peers address directly) would lose that pod-addressed traffic too (E9).
    const podAddressed = inventory.services
      .filter((s) => s.headless && s.workloads.some((w) => svc.workloads.includes(w)))
      .map((s) => s.ref.name)
    const statefulSets = inventory.workloads
      .filter((w) => w.ref.kind === 'StatefulSet' && svc.workloads.includes(w.ref.name))
      .map((w) => w.ref.name)
    if (podAddressed.length > 0 || statefulSets.length > 0) {
      const why =
        podAddressed.length > 0
          ? `headless Service ${podAddressed.sort().join(', ')}`
          : `StatefulSet ${statefulSets.sort().join(', ')}`
      findings.push(
        finding(
          'BypassDenyHeadless',
          svc.ref,
          {variant: 'denyBypassStep2', refName: svc.ref.name, why},
          {id: `deny-bypass-headless/${ns}/${svc.ref.name}`, severity: 'warning'},
        ),
      )
      continue
    }
    policies.push({
      apiVersion: 'security.istio.io/v1',
      kind: 'AuthorizationPolicy',
      metadata: {name: `${svc.ref.name}-deny-waypoint-bypass`, namespace: ns},
      spec: {
        selector: {matchLabels: {...svc.selector}},
        action: 'DENY',
        rules: [{from: [{source: {notPrincipals: [...principals]}}]}],
      },
    })
  }
  const created = policies.map((p) => markManaged(p, planName))
  if (created.length === 0) return {findings}
  findings.push(
    finding('BypassDenyCallers', undefined, {waypointName}, {id: `deny-bypass-callers/${ns}`, severity: 'warning'}),
  )
  return {
    findings,
    step: {
      id: 'deny-waypoint-bypass',
      action: 'deny-waypoint-bypass',
      description: `Deny traffic to ${created.length} workload group(s) that did not come through the waypoint (selector DENY, notPrincipals ${principals.join(', ')}), so L7 policies on the waypoint cannot be bypassed by addressing pods directly. Only once every caller is ambient: sidecar callers never use waypoints and would be denied.`,
      preconditions: created.map((o): Precondition => ({check: 'object-absent-or-ours', ref: refOf(o)})),
      operations: created.map((object): Operation => ({op: 'apply', object})),
      verify: [{check: 'objects-present', refs: created.map(refOf)}],
      undo: {
        description: 'Delete the bypass-prevention policies.',
        operations: created.map((object): Operation => ({op: 'delete', ref: refOf(object)})),
      },
    },
  }
}
