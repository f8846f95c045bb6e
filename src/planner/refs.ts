import type {KubeObject, ObjectRef} from './model.js'
import type {Operation} from './plan-types.js'
import {byCodePoint} from './order.js'

/** The API group of an apiVersion ("" for the core group). */
export function groupOf(apiVersion: string): string {
  const slash = apiVersion.indexOf('/')
  return slash === -1 ? '' : apiVersion.slice(0, slash)
}

export function versionOf(apiVersion: string): string {
  const slash = apiVersion.indexOf('/')
  return slash === -1 ? apiVersion : apiVersion.slice(slash + 1)
}

export function refOf(obj: KubeObject): ObjectRef {
  const ref: ObjectRef = {apiVersion: obj.apiVersion, kind: obj.kind, name: obj.metadata.name}
  if (obj.metadata.namespace !== undefined) ref.namespace = obj.metadata.namespace
  return ref
}

/** The object an operation of a plan step acts on. */
export function operationRef(op: Operation): ObjectRef {
  return op.op === 'apply' ? refOf(op.object) : op.ref
}

/**
 * Identity of an object independent of the API version it was read at: Istio serves the
 * same VirtualService as v1, v1beta1 and v1alpha3, and they must not count twice.
 */
export function refKey(ref: ObjectRef): string {
  return `${groupOf(ref.apiVersion) || 'core'}/${ref.kind}/${ref.namespace ?? ''}/${ref.name}`
}

export function objectKey(obj: KubeObject): string {
  return refKey(refOf(obj))
}

/** "Kind ns/name" — how refs appear in messages and tables. */
export function formatRef(ref: ObjectRef): string {
  return ref.namespace ? `${ref.kind} ${ref.namespace}/${ref.name}` : `${ref.kind} ${ref.name}`
}

export function sameRef(a: ObjectRef, b: ObjectRef): boolean {
  return refKey(a) === refKey(b)
}

/** Stable ordering for refs: kind, namespace, name (then group). */
export function compareRefs(a: ObjectRef, b: ObjectRef): number {
  return (
    byCodePoint(a.kind, b.kind) ||
    byCodePoint(a.namespace ?? '', b.namespace ?? '') ||
    byCodePoint(a.name, b.name) ||
    byCodePoint(groupOf(a.apiVersion), groupOf(b.apiVersion))
  )
}
