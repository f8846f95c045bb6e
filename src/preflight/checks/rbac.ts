// Preflight check module (SPEC §6 step 1, DOMAIN §4.4). rbac: a SelfSubjectAccessReview for every permission the plan needs.
import {renderFinding} from '../../planner/findings/finding.js'
import {mapLimit} from '../../sources/cluster.js'
import {planAccessNeeds} from '../rbac.js'
import {type CheckContext, type Diag, listNames} from './context.js'

const SSAR_CONCURRENCY = 8

export async function checkRbac(ctx: CheckContext): Promise<Diag[]> {
  const plan = ctx.input.plan
  if (!plan) {
    return [renderFinding('RbacWithoutPlan', {}, 'warning')]
  }
  const needs = planAccessNeeds(plan)
  const resolved = await Promise.all(
    needs.map(async (need) => ({need, resource: await ctx.input.client.resourceFor(need.apiVersion, need.kind)})),
  )
  const unserved = resolved.filter((r) => !r.resource)
  const reviews = await mapLimit(
    resolved.filter((r) => r.resource),
    SSAR_CONCURRENCY,
    async ({need, resource}) => ({
      need,
      resource: resource!,
      review: await ctx.input.client.canI({
        verb: need.verb,
        group: resource!.group,
        resource: resource!.plural,
        ...(need.namespace ? {namespace: need.namespace} : {}),
        ...(need.name ? {name: need.name} : {}),
      }),
    }),
  )
  const diags: Diag[] = []
  const unservedKinds = [...new Set(unserved.map((u) => `${u.need.kind} (${u.need.apiVersion})`))]
  if (unservedKinds.length > 0) {
    diags.push(renderFinding('PlanKindNotServed', {unservedKinds}, 'error'))
  }
  // Group denials per resource and namespace: one diagnostic, one Role rule to add.
  const denied = new Map<
    string,
    {resource: string; group: string; namespace?: string; verbs: Set<string>; names: Set<string>; why: Set<string>}
  >()
  for (const {need, resource, review} of reviews) {
    if (review.allowed) continue
    const key = `${resource.group}/${resource.plural}/${need.namespace ?? ''}`
    const entry = denied.get(key) ?? {
      resource: resource.plural,
      group: resource.group,
      ...(need.namespace ? {namespace: need.namespace} : {}),
      verbs: new Set<string>(),
      names: new Set<string>(),
      why: new Set<string>(),
    }
    entry.verbs.add(need.verb)
    if (need.name) entry.names.add(need.name)
    for (const w of need.why) entry.why.add(w)
    denied.set(key, entry)
  }
  for (const d of denied.values()) {
    const qualified = d.group ? `${d.resource}.${d.group}` : d.resource
    const verbs = [...d.verbs].sort()
    const names = [...d.names].sort()
    const args = {verbs, verbList: verbs.join(','), resource: qualified, steps: listNames([...d.why], 4)}
    const named = {names: listNames(names, 5), resourceNameFlags: names.map((n) => `--resource-name=${n}`).join(' ')}
    const cluster = {...args, resourcePlural: d.resource}
    diags.push(
      d.namespace
        ? renderFinding(
            'RbacDenied',
            names.length > 0
              ? {...args, ...named, variant: 'inNamespaceNamed', namespace: d.namespace}
              : {...args, variant: 'inNamespace', namespace: d.namespace},
            'error',
          )
        : renderFinding(
            'RbacDenied',
            names.length > 0
              ? {...cluster, ...named, variant: 'clusterWideNamed'}
              : {...cluster, variant: 'clusterWide'},
            'error',
          ),
    )
  }
  if (diags.length === 0) diags.push(renderFinding('RbacAllowed', {reviewsLength: reviews.length}, 'ok'))
  return diags
}
