// swap-routes: HTTPRoutes (and per-version Services) replace the VirtualServices in one step, never both for one
// host (E26). Only with --routes httproute and a waypoint. Pure.
import {finding} from '../planner/findings/finding.js'
import {cleanObject, objectFingerprint} from '../planner/canonical.js'
import type {Finding, Inventory, KubeObject, SourceSnapshot} from '../planner/model.js'
import type {Operation, PlanStep, Precondition} from '../planner/plan-types.js'
import {refKey, refOf} from '../planner/refs.js'
import {markManaged} from '../planner/retarget.js'
import {convertVirtualServices} from '../planner/routes.js'
import {objectFor} from './shared.js'
import type {StepKind} from './types.js'

export const swapRoutes: StepKind = {
  action: 'swap-routes',
  summary: 'Replace VirtualServices with HTTPRoutes in one step (E26, --routes httproute)',
  writes: {apply: ['gateway.networking.k8s.io/HTTPRoute', '/Service'], delete: ['networking.istio.io/VirtualService']},
  plan: ({migrating, waypointRequired, options, inventory, snapshot, ns}) =>
    migrating && waypointRequired && options.routes === 'httproute' ? swapRoutesStep(inventory, snapshot, ns) : {},
}

function swapRoutesStep(
  inventory: Inventory,
  snapshot: SourceSnapshot,
  planName: string,
): {step?: PlanStep; findings: Finding[]} {
  const ns = inventory.namespace
  const wanted = new Set(
    inventory.objects
      .filter((i) => i.ref.kind === 'VirtualService' && i.ref.namespace === ns && i.action === 'retarget')
      .map((i) => refKey(i.ref)),
  )
  if (wanted.size === 0) return {findings: []}
  const local = (kind: string) => snapshot.objects.filter((o) => o.kind === kind && o.metadata.namespace === ns)
  const conversion = convertVirtualServices({
    namespace: ns,
    virtualServices: local('VirtualService').filter((o) => wanted.has(refKey(refOf(o)))),
    destinationRules: snapshot.objects.filter(
      (o) => o.kind === 'DestinationRule' && o.apiVersion.startsWith('networking.istio.io/'),
    ),
    services: local('Service').filter((o) => o.apiVersion === 'v1'),
  })
  const findings = [...conversion.findings]
  for (const kept of conversion.kept) {
    findings.push(
      finding(
        'VirtualServiceKept',
        kept.ref,
        {variant: 'swapRoutesStep', refName: kept.ref.name, reasons: kept.reasons.join('; ')},
        {id: `routes-kept/${kept.ref.namespace}/${kept.ref.name}`, severity: 'info'},
      ),
    )
  }
  if (conversion.converted.length === 0) return {findings}
  const created = [...conversion.versionServices, ...conversion.httpRoutes].map((o) => markManaged(o, planName))
  const deleted = conversion.converted
    .map((ref) => objectFor(snapshot, ref))
    .filter((o): o is KubeObject => o !== undefined)
    .map(cleanObject)
  const step: PlanStep = {
    id: 'swap-routes',
    action: 'swap-routes',
    description: `Replace ${deleted.length} VirtualService(s) with Gateway API routes the waypoint applies (GAMMA, the Service as parent): create ${created.map((o) => `${o.kind} ${o.metadata.name}`).join(', ')} and delete ${deleted.map((o) => o.metadata.name).join(', ')} in the same step — a VirtualService and an HTTPRoute must never serve one host at once (E26). Remaining sidecar callers execute the HTTPRoutes client-side, ambient callers get them from the waypoint.`,
    preconditions: [
      ...deleted.map((o): Precondition => ({
        check: 'object-unchanged',
        ref: refOf(o),
        fingerprint: objectFingerprint(o),
      })),
      ...created.map((o): Precondition => ({check: 'object-absent-or-ours', ref: refOf(o)})),
    ],
    operations: [
      ...created.map((object): Operation => ({op: 'apply', object})),
      ...deleted.map((o): Operation => ({op: 'delete', ref: refOf(o), object: o})),
    ],
    verify: [
      {check: 'objects-present', refs: created.map(refOf)},
      {check: 'objects-absent', refs: deleted.map(refOf)},
    ],
    undo: {
      description:
        'Re-create the VirtualServices from the copies stored here, then delete the routes and Services this step created.',
      operations: [
        ...deleted.map((object): Operation => ({op: 'apply', object})),
        ...created.map((object): Operation => ({op: 'delete', ref: refOf(object)})),
      ],
    },
  }
  return {step, findings}
}
