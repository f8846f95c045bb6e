// Runs the policy migration over plain objects, with the real classifier producing the inventory items.
import {classifyObjects} from '../../../src/planner/classify/index.js'
import type {KubeObject} from '../../../src/planner/model.js'
import {type PolicyDecision, type PolicyMigration, planPolicyMigration} from '../../../src/planner/retarget.js'
import {classifyContext} from './classify-context.js'

export interface MigrateOptions {
  namespace?: string
  istioVersion?: string
  waypointPlanned?: boolean
  waypointNamespace?: string
  trustDomain?: string
  waypointFor?: 'service' | 'workload' | 'all'
}

export function migrate(objects: KubeObject[], opts: MigrateOptions = {}): PolicyMigration {
  const waypointPlanned = opts.waypointPlanned ?? true
  const ctx = classifyContext(objects, {
    ...(opts.namespace ? {namespace: opts.namespace} : {}),
    ...(opts.istioVersion ? {istioVersion: opts.istioVersion} : {}),
    waypointPlanned,
  })
  const {items} = classifyObjects(ctx)
  return planPolicyMigration({
    namespace: ctx.namespace,
    planName: ctx.namespace,
    waypointName: 'waypoint',
    rootNamespace: ctx.rootNamespace,
    waypointPlanned,
    ...(opts.istioVersion ? {istioVersion: opts.istioVersion} : {}),
    ...(opts.waypointNamespace ? {waypointNamespace: opts.waypointNamespace} : {}),
    ...(opts.trustDomain ? {trustDomain: opts.trustDomain} : {}),
    ...(opts.waypointFor ? {waypointFor: opts.waypointFor} : {}),
    items,
    objects: ctx.objects,
    workloads: ctx.workloads,
    services: ctx.services,
  })
}

export function decisionFor(m: PolicyMigration, name: string): PolicyDecision {
  const d = m.decisions.find((x) => x.ref.name === name)
  if (!d) throw new Error(`no decision for ${name}: ${m.decisions.map((x) => x.ref.name).join(', ')}`)
  return d
}

/** Every object the migration writes (both steps). */
export function allCreated(m: PolicyMigration): KubeObject[] {
  return [...m.createBeforeBind, ...m.replaceAfterRestart.apply]
}

export function named(objects: KubeObject[], name: string): KubeObject {
  const o = objects.find((x) => x.metadata.name === name)
  if (!o) throw new Error(`no object ${name} among ${objects.map((x) => x.metadata.name).join(', ')}`)
  return o
}
