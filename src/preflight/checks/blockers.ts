// Preflight check module (SPEC §6 step 1, DOMAIN §4.4). blockers: the plan's blockers, and the ones the cluster shows now (same planner rules).
import {renderFinding} from '../../planner/findings/finding.js'
import type {Finding} from '../../planner/model.js'
import {formatRef} from '../../planner/refs.js'
import {type CheckContext, type Diag} from './context.js'

export async function checkBlockers(ctx: CheckContext): Promise<Diag[]> {
  if (!(await ctx.reads.namespaceObject())) {
    return [
      renderFinding(
        'NamespaceNotFound',
        {variant: 'checkBlockers', namespace: ctx.input.namespace, context: ctx.input.client.context},
        'error',
      ),
    ]
  }
  const planned: Finding[] = ctx.input.plan?.spec.blockers ?? []
  const live = (await ctx.reads.liveInventory()).findings.filter((f) => f.severity === 'blocker')
  const liveIds = new Set(live.map((f) => f.id))
  const plannedIds = new Set(planned.map((f) => f.id))
  const diags: Diag[] = []
  for (const f of planned) {
    diags.push({
      severity: 'error',
      code: f.code,
      message: `${f.message}${f.ref ? ` [${formatRef(f.ref)}]` : ''} (blocker recorded in the plan${liveIds.has(f.id) ? '' : '; not seen in the cluster any more: re-run `mesh-migrate plan`'})`,
      ...(f.fix ? {fix: f.fix} : {}),
    })
  }
  for (const f of live) {
    if (plannedIds.has(f.id)) continue
    diags.push({
      severity: 'error',
      code: f.code,
      message: `${f.message}${f.ref ? ` [${formatRef(f.ref)}]` : ''}${ctx.input.plan ? ' (new since the plan was made)' : ''}`,
      ...(f.fix ? {fix: f.fix} : {}),
    })
  }
  if (diags.length === 0) diags.push(renderFinding('NoBlockers', {namespace: ctx.input.namespace}, 'ok'))
  return diags
}
