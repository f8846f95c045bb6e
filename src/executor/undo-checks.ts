// The undo preconditions a plan carries (src/plan/undo-guards.ts), checked against the cluster: rollback runs
// every step's before its first write, and each step's again right before that step's undo writes.
import {StalePlanError} from '../errors.js'
import {KubeApiError} from '../kube/errors.js'
import type {KubeClient} from '../kube/types.js'
import type {ObjectRef} from '../planner/model.js'
import type {PlanStep, UndoPrecondition} from '../planner/plan-types.js'
import {formatRef, refKey} from '../planner/refs.js'
import {DATAPLANE_MODE_LABEL, INJECTION_LABEL, isRolloutRestartable, REVISION_LABEL} from '../planner/vocab.js'
import {hasSidecar, livePods} from './observe.js'

export interface UndoCheckContext {
  client: KubeClient
  namespace: string
  /** The plan file, for the command a message gives. */
  file: string
  /** All steps of the plan: the injection labels their undos restore, for the advice. */
  steps: PlanStep[]
  warn: (message: string) => void
}

/**
 * E1: restoring istio.io/rev=<r> only brings sidecars back if revision (or tag) r still has an injection webhook;
 * otherwise the restart leaves the pods without a sidecar and — once dataplane-mode is removed — outside the mesh.
 */
async function checkRevisionInjects(revision: string, {client, warn}: UndoCheckContext): Promise<void> {
  const resource = await client.resourceFor('admissionregistration.k8s.io/v1', 'MutatingWebhookConfiguration')
  if (!resource) return
  try {
    const byRev = await client.list(resource, {labelSelector: `istio.io/rev=${revision}`})
    const byTag = byRev.length > 0 ? [] : await client.list(resource, {labelSelector: `istio.io/tag=${revision}`})
    const injects = [...byRev, ...byTag].some((w) =>
      ((w.webhooks as {name?: string}[] | undefined) ?? []).some((h) => h.name?.endsWith('sidecar-injector.istio.io')),
    )
    if (!injects) {
      throw new StalePlanError(
        `revision "${revision}" no longer has an injection webhook (no MutatingWebhookConfiguration labelled istio.io/rev or istio.io/tag=${revision}): restoring istio.io/rev=${revision} would not bring the sidecars back`,
        `Reinstall revision ${revision} (or point a tag named ${revision} at a running revision: istioctl tag set ${revision} --revision <rev>), then re-run the rollback.`,
      )
    }
  } catch (error) {
    if (error instanceof KubeApiError && error.status === 403) {
      warn(`cannot check that revision ${revision} still exists (no permission to list MutatingWebhookConfigurations)`)
      return
    }
    throw error
  }
}

/** The injection labels (istio-injection, istio.io/rev) the plan's undos put back on the namespace, as `key=value`. */
function restoredInjectionLabels(steps: PlanStep[]): string[] {
  return steps.flatMap((s) =>
    s.undo.operations.flatMap((o) =>
      o.op === 'label' && o.ref.kind === 'Namespace'
        ? Object.entries(o.labels)
            .filter(([k, v]) => v !== null && (k === INJECTION_LABEL || k === REVISION_LABEL))
            .map(([k, v]) => `${k}=${v}`)
        : [],
    ),
  )
}

/**
 * Removing istio.io/dataplane-mode=ambient un-enrols every running sidecar-less pod of the namespace at once: they
 * leave the mesh (plaintext, rejected by STRICT peers) until restarted. Refuse while a captured pod without a sidecar
 * would, unless its workload is allowed (sidecar-less before the plan) or one whose sidecars an undo before this
 * one brings back (`returning`). Nothing to check once the namespace is no longer ambient.
 */
async function checkPodsStayInMesh(allowedRefs: ObjectRef[], ctx: UndoCheckContext): Promise<void> {
  const {client, namespace} = ctx
  const ns = await client.get({apiVersion: 'v1', kind: 'Namespace', name: namespace})
  if (ns?.metadata.labels?.[DATAPLANE_MODE_LABEL] !== 'ambient') return
  const allowed = new Set(allowedRefs.map(refKey))
  const offenders = (await livePods(client, namespace)).filter(
    (p) => !hasSidecar(p) && p.captured && !(p.owner && allowed.has(refKey(p.owner))),
  )
  if (offenders.length === 0) return
  const byOwner = new Map<string, {owner: ObjectRef | undefined; pods: string[]}>()
  for (const p of offenders) {
    const key = p.owner ? refKey(p.owner) : p.name
    byOwner.set(key, {owner: p.owner, pods: [...(byOwner.get(key)?.pods ?? []), p.name]})
  }
  const owners = [...byOwner.values()]
  const list = owners
    .map(({owner, pods}) =>
      owner && owner.kind !== 'Pod'
        ? `  - ${formatRef(owner)}: pod(s) ${pods.join(', ')}`
        : `  - Pod ${namespace}/${pods.join(', ')}`,
    )
    .join('\n')
  const restartable = owners.flatMap(({owner}) =>
    owner && isRolloutRestartable(owner.kind) ? [`${owner.kind.toLowerCase()}/${owner.name}`] : [],
  )
  const injection = restoredInjectionLabels(ctx.steps)
  throw new StalePlanError(
    `removing ${DATAPLANE_MODE_LABEL} from namespace ${namespace} would take running pods out of the mesh: they have no sidecar and are captured by ztunnel, and their workloads were not sidecar-less before the migration:\n${list}`,
    `Restart them after the injection label is restored${injection.length > 0 ? ` (if it is not back yet: kubectl label namespace ${namespace} ${injection.join(' ')})` : ''} so they get sidecars${restartable.length > 0 ? ` (kubectl rollout restart -n ${namespace} ${restartable.join(' ')})` : ''}, or remove them; then re-run \`mesh-migrate rollback ${ctx.file}\` once they have sidecars again.`,
  )
}

/** Check one undo's preconditions; `returning`: workloads whose sidecars undos run before this one bring back. */
export async function checkUndoPreconditions(
  preconditions: UndoPrecondition[],
  ctx: UndoCheckContext,
  returning: ObjectRef[] = [],
): Promise<void> {
  for (const p of preconditions) {
    if (p.check === 'revision-injects') await checkRevisionInjects(p.revision, ctx)
    else await checkPodsStayInMesh([...p.allowed, ...returning], ctx)
  }
}
