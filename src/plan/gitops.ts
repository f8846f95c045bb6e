// E23: namespaces and workloads managed through Git (Argo CD, Flux, Helm) get the migration's label and
// template changes reverted by the next sync. For them the plan is also expressed as manifest changes, in
// step order, as Kustomize strategic-merge patches: a label set to null is removed, `$patch: delete`
// removes an object, and objects the plan creates are given in full to add to the repository.
// Pure: from the plan alone.
import {canonicalFindingCode} from '../planner/findings/catalogue.js'
import type {KubeObject, ObjectRef} from '../planner/model.js'
import {
  MANAGED_BY_LABEL,
  MANAGED_BY_VALUE,
  type MigrationPlan,
  type Operation,
  PLAN_ANNOTATION,
  type StepAction,
} from '../planner/plan-types.js'
import {refKey} from '../planner/refs.js'
import {templateLabelsPatch} from '../planner/workloads.js'
import {cloneJson} from '../planner/json.js'

export type ManifestChangeKind = 'labels' | 'annotations' | 'template-labels' | 'add' | 'remove'

export interface ManifestChange {
  kind: ManifestChangeKind
  ref: ObjectRef
  /** The tool that manages the object (from the plan's E23 findings), when one does. */
  managedBy?: string
  /** The strategic-merge patch (labels, template-labels, remove) or the full object (add). */
  document: Record<string, unknown>
}

export interface StepManifestChanges {
  id: string
  action: StepAction
  description: string
  changes: ManifestChange[]
  /** Workloads the step restarts: not a manifest change, done after the sync (restarts are safe to repeat). */
  restarts: ObjectRef[]
}

/** Finding codes that name a GitOps-managed object in their ref. */
const GITOPS_CODES = new Set(['GitOpsManaged', 'RetargetGitOpsManaged'])

/** Which objects of the plan a GitOps tool manages, and which tool (as the finding says it). */
export function gitOpsManagedObjects(plan: MigrationPlan): Map<string, string> {
  const managed = new Map<string, string>()
  for (const finding of [...plan.spec.blockers, ...plan.spec.findings]) {
    // A plan file written before issue 23 carries the old code (E23): read through the alias.
    if (!GITOPS_CODES.has(canonicalFindingCode(finding.code) ?? finding.code) || !finding.ref) continue
    const manager = /managed by (.+?)(?: \(E23\))?:/.exec(finding.message)?.[1] ?? 'a GitOps tool'
    managed.set(refKey(finding.ref), manager)
  }
  return managed
}

const identity = (ref: ObjectRef) => ({
  apiVersion: ref.apiVersion,
  kind: ref.kind,
  metadata: {name: ref.name, ...(ref.namespace ? {namespace: ref.namespace} : {})},
})

/**
 * A created object as it goes into the repository: without the tool's ownership marks. Once Git manages
 * it, rollback must not delete it (it deletes only objects still carrying the plan annotation); a revert
 * of the commit removes it instead.
 */
function asRepositoryObject(object: KubeObject): Record<string, unknown> {
  const copy = cloneJson(object)
  const labels = {...copy.metadata.labels}
  if (labels[MANAGED_BY_LABEL] === MANAGED_BY_VALUE) delete labels[MANAGED_BY_LABEL]
  const annotations = {...copy.metadata.annotations}
  delete annotations[PLAN_ANNOTATION]
  const {labels: _l, annotations: _a, ...rest} = copy.metadata
  copy.metadata = {
    ...rest,
    ...(Object.keys(labels).length > 0 ? {labels} : {}),
    ...(Object.keys(annotations).length > 0 ? {annotations} : {}),
  }
  return copy as KubeObject & Record<string, unknown>
}

function changeOf(op: Operation): Omit<ManifestChange, 'managedBy'> | undefined {
  switch (op.op) {
    case 'label': {
      const id = identity(op.ref)
      return {kind: 'labels', ref: op.ref, document: {...id, metadata: {...id.metadata, labels: op.labels}}}
    }
    case 'annotate': {
      const id = identity(op.ref)
      return {
        kind: 'annotations',
        ref: op.ref,
        document: {...id, metadata: {...id.metadata, annotations: op.annotations}},
      }
    }
    case 'template-labels':
      return {
        kind: 'template-labels',
        ref: op.ref,
        document: {...identity(op.ref), ...templateLabelsPatch(op.ref.kind, op.labels)},
      }
    case 'apply': {
      const {apiVersion, kind, metadata} = op.object
      return {
        kind: 'add',
        ref: {apiVersion, kind, name: metadata.name, ...(metadata.namespace ? {namespace: metadata.namespace} : {})},
        document: asRepositoryObject(op.object),
      }
    }
    case 'delete':
      return {kind: 'remove', ref: op.ref, document: {...identity(op.ref), $patch: 'delete'}}
    case 'restart':
      return undefined
  }
}

/** The plan's writes as manifest changes, step by step (steps without writes are left out). */
export function manifestChanges(plan: MigrationPlan): StepManifestChanges[] {
  const managed = gitOpsManagedObjects(plan)
  const out: StepManifestChanges[] = []
  for (const step of plan.spec.steps) {
    const changes: ManifestChange[] = []
    for (const op of step.operations) {
      const change = changeOf(op)
      if (!change) continue
      const manager = managed.get(refKey(change.ref))
      changes.push({...change, ...(manager ? {managedBy: manager} : {})})
    }
    const restarts = step.operations.flatMap((op) => (op.op === 'restart' ? [op.ref] : []))
    if (changes.length > 0 || restarts.length > 0)
      out.push({id: step.id, action: step.action, description: step.description, changes, restarts})
  }
  return out
}
