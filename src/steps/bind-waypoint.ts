// bind-waypoint: label the namespace istio.io/use-waypoint=<waypoint> once the waypoint is ready; its Services (and
// ServiceEntries ztunnel has a VIP for) are bound to it (DOMAIN §1.5, §4.2). Pure.
import {serviceEntryVip} from '../planner/classify/service-entry.js'
import type {Finding} from '../planner/model.js'
import type {CatalogueEntry} from '../planner/findings/catalogue.js'
import {finding} from '../planner/findings/finding.js'
import {formatRef} from '../planner/refs.js'
import {findWaypointGateway} from '../planner/namespace-waypoint.js'
import {labelPrecondition} from './shared.js'
import type {StepContext, StepKind} from './types.js'
import {
  USE_WAYPOINT_CANARY_LABEL,
  USE_WAYPOINT_CANARY_NAMESPACE_LABEL,
  USE_WAYPOINT_CANARY_WEIGHT_ANNOTATION,
  USE_WAYPOINT_LABEL,
  USE_WAYPOINT_NAMESPACE_LABEL,
} from '../planner/vocab.js'
import {replacedPrimary} from './canary-waypoint.js'
import type {Operation} from '../planner/plan-types.js'

export const bindWaypoint: StepKind = {
  action: 'bind-waypoint',
  summary: 'Label the namespace istio.io/use-waypoint once the waypoint is ready',
  writes: {
    label: {
      kinds: ['/Namespace', '/Service'],
      keys: [
        USE_WAYPOINT_LABEL,
        USE_WAYPOINT_NAMESPACE_LABEL,
        USE_WAYPOINT_CANARY_LABEL,
        USE_WAYPOINT_CANARY_NAMESPACE_LABEL,
      ],
    },
    // Promotion after canary-waypoint removes the canary weight.
    annotate: {kinds: ['/Namespace'], keys: [USE_WAYPOINT_CANARY_WEIGHT_ANNOTATION]},
  },
  simulation: {
    role: 'binds-waypoint',
    forward: (_step, _input, state) => {
      state.bound = true
    },
    undo: (_step, state) => {
      state.bound = false
    },
  },
  plan: (ctx) => {
    const {waypoint, labels, options, binding, snapshot, ns, nsRef, istioVersion} = ctx
    // A waypoint of another namespace the namespace is bound to already: nothing new to bind (issue 21 point 2).
    if (!waypoint || waypoint.remote) return {}
    const waypointRef = waypoint.ref
    const boundNames = binding.bound.map((s) => s.ref.name)
    const previous = labels[USE_WAYPOINT_LABEL] ?? null
    const previousNamespace = labels[USE_WAYPOINT_NAMESPACE_LABEL] ?? null
    // A namespace istio.io/use-waypoint-namespace would send the binding to a waypoint of that namespace.
    // After canary-waypoint steps, binding promotes the canary: use-waypoint is the plan's waypoint and the canary label
    // and weight annotation go (istio.io "Shift traffic between waypoints").
    const canary = canaryWeights(ctx)
    const change: Record<string, string | null> = {
      [USE_WAYPOINT_LABEL]: options.waypointName,
      ...(previousNamespace !== null ? {[USE_WAYPOINT_NAMESPACE_LABEL]: null} : {}),
      ...(canary.length > 0 ? {[USE_WAYPOINT_CANARY_LABEL]: null} : {}),
    }
    // As the canary steps leave the namespace: the canary label names the plan's waypoint (undo restores what apply saw).
    const labelsBefore: Record<string, string> = {
      ...labels,
      ...(canary.length > 0 ? {[USE_WAYPOINT_CANARY_LABEL]: options.waypointName} : {}),
    }
    if (canary.length > 0) delete labelsBefore[USE_WAYPOINT_CANARY_NAMESPACE_LABEL]
    const restore = Object.fromEntries(Object.keys(change).map((k) => [k, labelsBefore[k] ?? null]))
    const weightOps = (weight: string | null): Operation[] =>
      canary.length > 0
        ? [{op: 'annotate', ref: nsRef, annotations: {[USE_WAYPOINT_CANARY_WEIGHT_ANNOTATION]: weight}}]
        : []
    const excluded = binding.ownLabel.map((o) => o.service.ref.name)
    // ServiceEntries of the namespace without a label of their own are bound too: the waypoint is the egress waypoint
    // of those ztunnel has a VIP for (the others never reach it).
    const entries = snapshot.objects
      .filter(
        (o) =>
          o.kind === 'ServiceEntry' &&
          o.apiVersion.startsWith('networking.istio.io/') &&
          (o.metadata.namespace ?? ns) === ns &&
          o.metadata.labels?.[USE_WAYPOINT_LABEL] === undefined,
      )
      .filter((o) =>
        (Array.isArray(o.spec?.hosts) ? o.spec.hosts : []).some(
          (h: unknown) => serviceEntryVip(o, String(h), {...(istioVersion ? {istioVersion} : {})}).vip,
        ),
      )
      .map((o) => o.metadata.name)
    const boundEntries = [...new Set(entries)].sort()
    return {
      findings: ownLabelFindings(ctx),
      step: {
        id: 'bind-waypoint',
        action: 'bind-waypoint',
        description: `${waypoint.exists ? `Activate waypoint ${formatRef(waypointRef)}, which exists already: l` : 'L'}abel namespace ${ns} ${USE_WAYPOINT_LABEL}=${options.waypointName}${previousNamespace !== null ? ` and remove ${USE_WAYPOINT_NAMESPACE_LABEL}=${previousNamespace} (it would point the binding at namespace ${previousNamespace})` : ''}, once the waypoint is ready (a bound waypoint that is not ready is bypassed silently): its Services are bound to the waypoint (${boundNames.join(', ') || 'none'})${excluded.length > 0 ? `, except ${excluded.join(', ')}, which carry ${USE_WAYPOINT_LABEL} of their own` : ''}${boundEntries.length > 0 ? `; so are its ServiceEntries (${boundEntries.join(', ')}): the waypoint becomes their egress waypoint` : ''}. Ambient callers start going through it; sidecar callers do not (they never use waypoints).${canary.length > 0 ? ` This promotes the canary of the canary-waypoint steps: ${USE_WAYPOINT_CANARY_LABEL} and the ${USE_WAYPOINT_CANARY_WEIGHT_ANNOTATION} annotation are removed, all traffic goes through ${options.waypointName}.` : ''}`,
        // The readiness gate (DOMAIN §4.2): re-checked right before the label is written, not only by wait-waypoint.
        preconditions: [
          labelPrecondition(labelsBefore, [
            USE_WAYPOINT_LABEL,
            USE_WAYPOINT_NAMESPACE_LABEL,
            ...(canary.length > 0 ? [USE_WAYPOINT_CANARY_LABEL] : []),
          ]),
          {check: 'waypoint-ready', ref: waypointRef},
        ],
        operations: [{op: 'label', ref: nsRef, labels: change}, ...weightOps(null)],
        verify: [
          {check: 'namespace-labels', labels: change},
          {check: 'waypoint-bound', ref: waypointRef, services: boundNames},
        ],
        undo: {
          description:
            previous === null && previousNamespace === null
              ? `Remove ${USE_WAYPOINT_LABEL} from namespace ${ns}.`
              : `Restore ${Object.entries(restore)
                  .map(([k, v]) => (v === null ? `no ${k}` : `${k}=${v}`))
                  .join(', ')}.`,
          operations: [{op: 'label', ref: nsRef, labels: restore}, ...weightOps(String(canary[canary.length - 1]))],
        },
      },
    }
  },
}

/** The weights of the canary-waypoint steps before this binding (none without a primary the plan replaces). */
function canaryWeights({options, labels, ns, waypoint}: StepContext): number[] {
  if (!waypoint || !replacedPrimary(labels, ns, options.waypointName)) return []
  return options.waypointCanary ?? []
}

type ServiceUsesOwnWaypointVariant = keyof CatalogueEntry<'ServiceUsesOwnWaypoint'>['variants']

/** Services with an istio.io/use-waypoint of their own keep it: a Service label beats the namespace label (DOMAIN §1.5). */
function ownLabelFindings({binding, policies, ns, waypoint, snapshot}: StepContext): Finding[] {
  const copiesTo = (svc: string, via: 'Gateway' | 'Service') =>
    policies.decisions
      .flatMap((d) =>
        d.created
          .filter(
            (c) =>
              c.role === 'waypoint-copy' &&
              c.services.includes(svc) &&
              (c.targetRefs?.[0]?.kind === 'Gateway') === (via === 'Gateway'),
          )
          .map((c) => c.ref.name),
      )
      .sort()
  return binding.ownLabel.map(({service, target}): Finding => {
    // A copy targeting the Service applies at whichever waypoint serves it (pilot/pkg/model/policyattachment.go);
    // one targeting this plan's waypoint Gateway never reaches a Service bound elsewhere, and neither applies when
    // that waypoint does not exist (waypoints.go fetchWaypointForTarget: WaypointIsNotReady, no waypoint). Opted-out
    // Services (none) get no copy at all: the policies needing them are blocked (RetargetServiceOptedOut).
    const gatewayCopies = copiesTo(service.ref.name, 'Gateway')
    const serviceCopies = copiesTo(service.ref.name, 'Service')
    const [targetNs = ns, targetName = ''] = target.split('/')
    const missing = target !== 'none' && !findWaypointGateway(snapshot.objects, {namespace: targetNs, name: targetName})
    const lost = [...gatewayCopies, ...(missing ? serviceCopies : [])]
    const applied = missing ? [] : serviceCopies
    const own = `${USE_WAYPOINT_LABEL}=${service.labels?.[USE_WAYPOINT_LABEL]}${service.labels?.[USE_WAYPOINT_NAMESPACE_LABEL] ? ` (${USE_WAYPOINT_NAMESPACE_LABEL}=${service.labels[USE_WAYPOINT_NAMESPACE_LABEL]})` : ''}`
    // A Service opted out with `none` gets no copies, and copies for a missing waypoint are all lost.
    const stays = target === 'none' ? 'noWaypoint' : missing ? 'missingWaypoint' : 'otherWaypoint'
    const lostPart = lost.length > 0 ? 'PoliciesLost' : ''
    const appliedPart =
      stays !== 'otherWaypoint' || applied.length === 0 ? '' : applied.length === 1 ? 'OneApplied' : 'SomeApplied'
    const variant = `${stays}${lostPart}${appliedPart}` as ServiceUsesOwnWaypointVariant
    const args = {
      variant,
      service: service.ref.name,
      label: own,
      waypoint: formatRef(waypoint!.ref),
      target,
      targetNamespace: targetNs,
      lostPolicies: lost,
      appliedPolicies: applied,
      namespace: ns,
    }
    return finding('ServiceUsesOwnWaypoint', service.ref, args, {
      id: `bind-waypoint/service-label/${ns}/${service.ref.name}`,
      severity: lost.length > 0 ? 'blocker' : 'warning',
    })
  })
}
