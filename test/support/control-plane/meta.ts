// Small helpers over object metadata shared by the fake controllers: keys, owner references,
// conditions, template hashes and the random name suffixes Kubernetes controllers use.
import {randomBytes} from 'node:crypto'

import type {KubeObject, OwnerReference} from '../../../src/planner/model.js'

/** "namespace/name" (or "name" for cluster-scoped objects): the key of caches and work queues. */
export function keyOf(obj: {metadata: {namespace?: string; name: string}}): string {
  return obj.metadata.namespace ? `${obj.metadata.namespace}/${obj.metadata.name}` : obj.metadata.name
}

export function splitKey(key: string): {namespace?: string; name: string} {
  const slash = key.indexOf('/')
  return slash === -1 ? {name: key} : {namespace: key.slice(0, slash), name: key.slice(slash + 1)}
}

/** RFC 3339 with second precision, as the API server writes timestamps. */
export function now(): string {
  return new Date().toISOString().replace(/\.\d+Z$/, 'Z')
}

export function controllerRef(obj: KubeObject): OwnerReference | undefined {
  return obj.metadata.ownerReferences?.find((o) => o.controller === true)
}

/** Whether `owner` is the managing controller of `obj` (same uid). */
export function isControlledBy(obj: KubeObject, owner: KubeObject): boolean {
  const ref = controllerRef(obj)
  return ref !== undefined && ref.uid !== undefined && ref.uid === owner.metadata.uid
}

/** The ownerReference a controller puts on what it creates (controller + blockOwnerDeletion). */
export function ownerReferenceTo(owner: KubeObject): OwnerReference & {blockOwnerDeletion: boolean} {
  return {
    apiVersion: owner.apiVersion,
    kind: owner.kind,
    name: owner.metadata.name,
    uid: owner.metadata.uid!,
    controller: true,
    blockOwnerDeletion: true,
  }
}

export function isTerminating(obj: KubeObject): boolean {
  return obj.metadata.deletionTimestamp !== undefined && obj.metadata.deletionTimestamp !== null
}

// ---------------------------------------------------------------------------------------------
// Conditions

export interface Condition {
  type: string
  status: 'True' | 'False' | 'Unknown' | string
  reason?: string
  message?: string
  lastTransitionTime?: string
  lastUpdateTime?: string
  lastProbeTime?: string | null
  observedGeneration?: number
}

export function findCondition(obj: {status?: any} | undefined, type: string): Condition | undefined {
  const list = obj?.status?.conditions
  return Array.isArray(list) ? (list as Condition[]).find((c) => c.type === type) : undefined
}

/**
 * Sets a condition the way the Kubernetes helpers do: the transition time only moves when the
 * status changes, and an unchanged condition is left exactly as it was, so that a controller whose
 * view has not changed computes the same status again (and writes nothing).
 */
export function setCondition(list: Condition[], next: Condition, opts: {updateTime?: boolean} = {}): Condition[] {
  const at = now()
  const old = list.find((c) => c.type === next.type)
  const sameContent =
    old !== undefined &&
    old.status === next.status &&
    old.reason === next.reason &&
    old.message === next.message &&
    old.observedGeneration === next.observedGeneration
  if (sameContent) return list
  const merged: Condition = {...next}
  merged.lastTransitionTime = old !== undefined && old.status === next.status ? (old.lastTransitionTime ?? at) : at
  if (opts.updateTime) merged.lastUpdateTime = at
  return old === undefined ? [...list, merged] : list.map((c) => (c.type === next.type ? merged : c))
}

export function removeCondition(list: Condition[], type: string): Condition[] {
  return list.filter((c) => c.type !== type)
}

// ---------------------------------------------------------------------------------------------
// Hashes and names

/** JSON with object keys sorted, so equal objects give equal text. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value))
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys)
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {}
    for (const k of Object.keys(value as object).sort()) {
      const v = (value as Record<string, unknown>)[k]
      if (v !== undefined) out[k] = sortKeys(v)
    }
    return out
  }
  return value
}

/** 32-bit FNV-1a, the hash Kubernetes uses for pod-template-hash and controller-revision-hash. */
export function fnv32a(text: string): number {
  let hash = 0x811c9dc5
  for (const byte of Buffer.from(text, 'utf8')) {
    hash ^= byte
    hash = Math.imul(hash, 0x01000193) >>> 0
  }
  return hash >>> 0
}

/** k8s.io/apimachinery/pkg/util/rand's alphabet: no vowels (no words), no 0/1/3 (look like o/l/e). */
const SAFE_ALPHANUMS = 'bcdfghjklmnpqrstvwxz2456789'

/** rand.SafeEncodeString: every character of `s` mapped onto the safe alphabet. */
export function safeEncode(s: string): string {
  let out = ''
  for (const byte of Buffer.from(s, 'utf8')) out += SAFE_ALPHANUMS[byte % SAFE_ALPHANUMS.length]
  return out
}

/**
 * The hash of a pod template as controllers label it (pod-template-hash, controller-revision-hash):
 * FNV-32a over the template (here: its canonical JSON) and the collision count, safe-encoded.
 */
export function templateHash(template: unknown, collisionCount?: number): string {
  const text = canonicalJson(template) + (collisionCount ? String(collisionCount) : '')
  return safeEncode(String(fnv32a(text)))
}

/** A container runtime id (`containerd://<64 hex>`). */
export function containerId(): string {
  return `containerd://${randomBytes(32).toString('hex')}`
}

// ---------------------------------------------------------------------------------------------
// Comparisons

/**
 * Whether every field of `want` is present with the same value in `have` (objects compared key by
 * key, arrays element by element with the same length). Fields only `have` carries — defaults the
 * API server filled in — do not count, so a controller can tell "what I rendered is there" without
 * fighting the server's defaulting.
 */
export function isSubset(want: unknown, have: unknown): boolean {
  if (want === undefined) return true
  if (want === null || typeof want !== 'object') return want === have
  if (Array.isArray(want)) {
    if (!Array.isArray(have) || have.length !== want.length) return false
    return want.every((w, i) => isSubset(w, have[i]))
  }
  if (have === null || typeof have !== 'object' || Array.isArray(have)) return false
  return Object.entries(want as Record<string, unknown>).every(([k, v]) =>
    isSubset(v, (have as Record<string, unknown>)[k]),
  )
}

/** Deep equality of JSON values (key order ignored). */
export function jsonEqual(a: unknown, b: unknown): boolean {
  return canonicalJson(a) === canonicalJson(b)
}

/**
 * Compares two resourceVersions. They are opaque by contract; in practice (etcd revisions, the test
 * server's counter) they are integers, and only then is an order known. undefined = cannot tell.
 */
export function compareResourceVersions(a: string | undefined, b: string | undefined): number | undefined {
  if (a === undefined || b === undefined || !/^\d+$/.test(a) || !/^\d+$/.test(b)) return undefined
  const x = BigInt(a)
  const y = BigInt(b)
  return x < y ? -1 : x > y ? 1 : 0
}

/** intstr percentages and integers against a total (maxSurge rounds up, maxUnavailable down). */
export function scaledValue(
  value: number | string | undefined,
  total: number,
  roundUp: boolean,
  fallback: number | string,
): number {
  const v = value ?? fallback
  if (typeof v === 'number') return v
  const match = /^(\d+)%$/.exec(v)
  if (!match) return Number.parseInt(v, 10) || 0
  const exact = (Number(match[1]) * total) / 100
  return roundUp ? Math.ceil(exact) : Math.floor(exact)
}

/**
 * A status patch for counters the API marks omitempty: zero becomes null, which a merge patch
 * removes, so the stored status looks like the real controllers' (absent rather than 0).
 */
export function omitZero<T extends Record<string, unknown>>(status: T, keys: (keyof T)[]): Record<string, unknown> {
  const out: Record<string, unknown> = {...status}
  for (const k of keys) if (out[k as string] === 0) out[k as string] = null
  return out
}

/** Whether the counters of `current` (absent = 0) equal `next`'s. */
export function sameCounters(current: Record<string, unknown> | undefined, next: Record<string, unknown>): boolean {
  return Object.entries(next).every(
    ([k, v]) => (current?.[k] ?? 0) === (v ?? 0) || (v === null && (current?.[k] ?? 0) === 0),
  )
}
