// Canonical forms: the same data always serialises to the same bytes, so an unchanged plan
// regenerates with an empty diff and digests/fingerprints are reproducible.
import {createHash} from 'node:crypto'
import {stringify} from 'yaml'

import type {KubeObject} from './model.js'

// Keys that read best first, in this order; every other key follows alphabetically.
// One global order (rather than per-location rules) keeps the canonical form a pure function of the data.
const KEY_PRIORITY = [
  'apiVersion',
  'kind',
  'metadata',
  'id',
  'key',
  'ref',
  'name',
  'namespace',
  'generator',
  'verdict',
  'action',
  'op',
  'check',
  'code',
  'severity',
  'phase',
  'scope',
  'ztunnel',
  'proxy',
  'predicted',
  'description',
  'message',
  'fix',
  'target',
  'options',
  'observed',
  'summary',
  'blockers',
  'findings',
  'inventory',
  'workloads',
  'waypoints',
  'policies',
  'hazards',
  'steps',
  'preconditions',
  'operations',
  'manual',
  'verify',
  'undo',
  'reasons',
  'labels',
  'annotations',
  'spec',
  'status',
]
const PRIORITY_INDEX = new Map(KEY_PRIORITY.map((k, i) => [k, i]))

function compareKeys(a: string, b: string): number {
  const pa = PRIORITY_INDEX.get(a)
  const pb = PRIORITY_INDEX.get(b)
  if (pa !== undefined && pb !== undefined) return pa - pb
  if (pa !== undefined) return -1
  if (pb !== undefined) return 1
  return a < b ? -1 : a > b ? 1 : 0
}

/** A deep copy with keys in canonical order and `undefined` members dropped. */
export function canonicalize<T>(value: T): T {
  if (Array.isArray(value)) return value.map((v) => canonicalize(v)) as T
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {}
    for (const key of Object.keys(value).sort(compareKeys)) {
      const v = (value as Record<string, unknown>)[key]
      if (v !== undefined) out[key] = canonicalize(v)
    }
    return out as T
  }
  return value
}

/**
 * Canonical YAML. Written as YAML 1.1-safe text (strings such as `yes`, `on`, `y` are quoted) so that
 * manifests copied out of a plan mean the same to kubectl's YAML 1.1 parser; read back with the YAML 1.2
 * core schema it is the same data. `lineWidth: 0` never folds long strings.
 */
export function toCanonicalYaml(value: unknown): string {
  return stringify(canonicalize(value), {lineWidth: 0, version: '1.1', aliasDuplicateObjects: false})
}

/** JSON with recursively sorted keys: the input of every digest. */
export function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((v) => stableJson(v)).join(',')}]`
  if (value !== null && typeof value === 'object') {
    const entries = Object.keys(value)
      .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${stableJson((value as Record<string, unknown>)[k])}`)
    return `{${entries.join(',')}}`
  }
  return JSON.stringify(value) ?? 'null'
}

export function sha256(text: string): string {
  return `sha256:${createHash('sha256').update(text).digest('hex')}`
}

export function digestOf(value: unknown): string {
  return sha256(stableJson(value))
}

const SERVER_SET_METADATA = [
  'resourceVersion',
  'uid',
  'managedFields',
  'creationTimestamp',
  'generation',
  'selfLink',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
]

/**
 * A copy of an object fit to be stored in a plan and re-created later: no server-set fields
 * (resourceVersion, uid, managedFields, status, …), which a create would reject or ignore.
 */
export function cleanObject(obj: KubeObject): KubeObject {
  const copy = structuredClone(obj)
  for (const key of SERVER_SET_METADATA) delete copy.metadata[key]
  delete copy.status
  if (copy.metadata.annotations && Object.keys(copy.metadata.annotations).length === 0) delete copy.metadata.annotations
  if (copy.metadata.labels && Object.keys(copy.metadata.labels).length === 0) delete copy.metadata.labels
  return copy
}

// Only metadata that Istio reads changes what an object means. Labels and annotations added by
// GitOps tools (Argo CD tracking ids, Helm release names, last-applied-configuration) must not make a
// plan look stale.
const MEANINGFUL_METADATA = /^([a-z0-9.-]+\.)?istio\.io\//

function meaningful(map: Record<string, string> | undefined): Record<string, string> {
  return Object.fromEntries(Object.entries(map ?? {}).filter(([k]) => MEANINGFUL_METADATA.test(k) && !k.startsWith('mesh-migrate.io/')))
}

/**
 * Fingerprint of what an object means: its spec (and any other top-level data) plus the labels and
 * annotations Istio reads (`*istio.io/*`), ignoring server-set fields, status and bookkeeping
 * metadata. Computed the same way from a manifest and from the API, so apply can tell whether an
 * object changed since the plan was made.
 */
export function objectFingerprint(obj: KubeObject): string {
  const clean = cleanObject(obj)
  const {apiVersion: _apiVersion, metadata, ...content} = clean
  return digestOf({labels: meaningful(metadata.labels), annotations: meaningful(metadata.annotations), content})
}
