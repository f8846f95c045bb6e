// metadata.managedFields: who owns which fields, updated on every write (operation Update)
// and by server-side apply (operation Apply), with conflict detection, forced ownership
// transfer and removal of fields an applier stopped applying (k8s.io/apimachinery
// pkg/util/managedfields + structured-merge-diff's Updater).
import {isObject, type StructuralSchema} from '../validation/schema.js'
import type {JsonObject} from '../types.js'
import {
  compareObjects,
  FieldSet,
  fieldSetOf,
  pathString,
  removePath,
  smdMerge,
  type Path,
  type TypeMode,
} from './fieldset.js'

export interface ManagedFieldsEntry {
  manager: string
  operation: 'Apply' | 'Update'
  apiVersion: string
  time: string
  fieldsType: 'FieldsV1'
  fieldsV1: Record<string, unknown>
  subresource?: string
}

interface Manager {
  entry: Omit<ManagedFieldsEntry, 'fieldsV1'>
  set: FieldSet
}

export interface WriteIdentity {
  manager: string
  apiVersion: string
  subresource?: string
  now: string
}

/** Paths never tracked (fieldmanager's stripSet). */
const STRIPPED: Path[] = [
  ['f:apiVersion'],
  ['f:kind'],
  ['f:metadata'],
  ['f:metadata', 'f:name'],
  ['f:metadata', 'f:namespace'],
  ['f:metadata', 'f:creationTimestamp'],
  ['f:metadata', 'f:selfLink'],
  ['f:metadata', 'f:uid'],
  ['f:metadata', 'f:clusterName'],
  ['f:metadata', 'f:generation'],
  ['f:metadata', 'f:managedFields'],
  ['f:metadata', 'f:resourceVersion'],
  ['f:metadata', 'f:deletionTimestamp'],
  ['f:metadata', 'f:deletionGracePeriodSeconds'],
]

function strip(set: FieldSet): FieldSet {
  let out = set
  for (const p of STRIPPED) {
    // managedFields is dropped with everything below it; the others are exact paths.
    if (p[1] === 'f:managedFields') out = out.withoutPrefix(p)
    else out = out.difference(FieldSet.of([p]))
  }
  return out
}

function managerKey(e: Omit<ManagedFieldsEntry, 'fieldsV1'>): string {
  return e.operation === 'Apply'
    ? JSON.stringify([e.manager, 'Apply', e.subresource ?? ''])
    : JSON.stringify([e.manager, 'Update', e.apiVersion, e.subresource ?? ''])
}

function parseManagers(obj: JsonObject | undefined): Map<string, Manager> {
  const out = new Map<string, Manager>()
  for (const raw of (obj?.metadata?.managedFields ?? []) as ManagedFieldsEntry[]) {
    if (!raw?.manager && raw?.manager !== '') continue
    const {fieldsV1, ...entry} = raw
    out.set(managerKey(entry), {entry, set: FieldSet.fromFieldsV1(fieldsV1)})
  }
  return out
}

/** Encodes managers sorted as the real server sorts them: operation, time, manager, apiVersion, subresource. */
function encodeManagers(managers: Map<string, Manager>): ManagedFieldsEntry[] {
  const entries = [...managers.values()]
    .filter((m) => !m.set.isEmpty())
    .map((m) => {
      const e: ManagedFieldsEntry = {
        manager: m.entry.manager,
        operation: m.entry.operation,
        apiVersion: m.entry.apiVersion,
        time: m.entry.time,
        fieldsType: 'FieldsV1',
        fieldsV1: m.set.toFieldsV1(),
      }
      if (m.entry.subresource) e.subresource = m.entry.subresource
      return e
    })
  const cmp = (a: string | undefined, b: string | undefined) =>
    (a ?? '') < (b ?? '') ? -1 : (a ?? '') > (b ?? '') ? 1 : 0
  return entries.sort(
    (a, b) =>
      cmp(a.operation, b.operation) ||
      cmp(a.time, b.time) ||
      cmp(a.manager, b.manager) ||
      cmp(a.apiVersion, b.apiVersion) ||
      cmp(a.subresource, b.subresource),
  )
}

/**
 * printManager of the real conflict error. It prints the manager identifier, which leaves the
 * time out, so Update managers read `"name" using apps/v1` (never "at <time>").
 */
function printManager(e: Omit<ManagedFieldsEntry, 'fieldsV1'>): string {
  let s = JSON.stringify(e.manager)
  if (e.subresource) s = `${s} with subresource ${JSON.stringify(e.subresource)}`
  if (e.operation === 'Update') return `${s} using ${e.apiVersion}`
  return s
}

/** Which part of the object a write through a subresource may touch. */
export function resetFieldsFor(obj: JsonObject, subresource: string | undefined, hasStatus: boolean): JsonObject {
  const copy = structuredClone(obj)
  if (subresource === 'status') {
    for (const k of Object.keys(copy)) if (!['apiVersion', 'kind', 'metadata', 'status'].includes(k)) delete copy[k]
  } else if (hasStatus) delete copy.status
  return copy
}

/** managedFields after a non-apply write (create, update, patch). */
export function managedFieldsAfterUpdate(
  old: JsonObject | undefined,
  updated: JsonObject,
  schema: StructuralSchema | undefined,
  mode: TypeMode,
  who: WriteIdentity,
): ManagedFieldsEntry[] {
  const managers = parseManagers(old)
  const cmp = compareObjects(old ?? {}, updated, schema, mode)
  const changed = strip(cmp.added.union(cmp.modified))
  const key = managerKey({
    manager: who.manager,
    operation: 'Update',
    apiVersion: who.apiVersion,
    time: '',
    fieldsType: 'FieldsV1',
    ...(who.subresource ? {subresource: who.subresource} : {}),
  })
  for (const [k, m] of managers) {
    if (k === key) continue
    m.set = m.set.difference(changed).difference(cmp.removed)
  }
  const mine = managers.get(key)
  const set = (mine?.set ?? new FieldSet()).difference(cmp.removed).union(changed)
  if (mine && mine.set.paths().length === set.paths().length && set.paths().every((p) => mine.set.has(p))) {
    // Nothing this manager owns changed: keep its entry (and timestamp) as it was.
  } else if (!set.isEmpty()) {
    managers.set(key, {
      entry: {
        manager: who.manager,
        operation: 'Update',
        apiVersion: who.apiVersion,
        time: who.now,
        fieldsType: 'FieldsV1',
        ...(who.subresource ? {subresource: who.subresource} : {}),
      },
      set,
    })
  } else managers.delete(key)
  return encodeManagers(managers)
}

export interface ApplyConflict {
  manager: string
  path: string
}

export interface ApplyResult {
  object?: JsonObject
  conflicts?: {message: string; causes: {reason: string; message: string; field: string}[]}
}

/** Server-side apply of `applied` onto `live` (undefined when the object does not exist yet). */
export function serverSideApply(
  live: JsonObject | undefined,
  applied: JsonObject,
  schema: StructuralSchema | undefined,
  mode: TypeMode,
  who: WriteIdentity,
  force: boolean,
): ApplyResult {
  const managers = parseManagers(live)
  const key = managerKey({
    manager: who.manager,
    operation: 'Apply',
    apiVersion: who.apiVersion,
    time: '',
    fieldsType: 'FieldsV1',
    ...(who.subresource ? {subresource: who.subresource} : {}),
  })
  const config = structuredClone(applied)
  if (isObject(config.metadata)) {
    delete config.metadata.managedFields
    delete config.metadata.resourceVersion
    delete config.metadata.uid
    delete config.metadata.creationTimestamp
    delete config.metadata.generation
  }
  const liveObj = live ?? {}
  let merged = smdMerge(liveObj, config, schema) as JsonObject
  const newSet = strip(fieldSetOf(config, schema, mode))
  const lastSet = managers.get(key)?.set
  const others = [...managers.entries()].filter(([k]) => k !== key)

  // Remove what this manager applied before and applies no more, unless someone owns it.
  if (lastSet) {
    const owners = [newSet, ...others.map(([, m]) => m.set)]
    const dropped = lastSet
      .difference(newSet)
      .paths()
      .sort((a, b) => b.length - a.length)
    for (const p of dropped) {
      if (owners.some((s) => s.hasSelfOrDescendant(p))) continue
      removePath(merged, p, schema)
    }
  }
  merged = merged as JsonObject

  const cmp = compareObjects(liveObj, merged, schema, mode)
  const touched = strip(cmp.modified.union(cmp.added))
  const conflicts: {entry: Manager['entry']; paths: Path[]}[] = []
  for (const [, m] of others) {
    const c = m.set.intersection(touched)
    if (!c.isEmpty()) conflicts.push({entry: m.entry, paths: c.paths().sort(comparePaths)})
  }
  if (conflicts.length && !force) return {conflicts: conflictError(conflicts)}
  for (const [, m] of others) m.set = m.set.difference(touched).difference(cmp.removed)
  managers.set(key, {
    entry: {
      manager: who.manager,
      operation: 'Apply',
      apiVersion: who.apiVersion,
      time: who.now,
      fieldsType: 'FieldsV1',
      ...(who.subresource ? {subresource: who.subresource} : {}),
    },
    set: newSet,
  })
  const previous = live ? parseManagers(live).get(key) : undefined
  if (
    previous &&
    sameSet(previous.set, newSet) &&
    cmp.added.isEmpty() &&
    cmp.modified.isEmpty() &&
    cmp.removed.isEmpty()
  ) {
    managers.get(key)!.entry.time = previous.entry.time
  }
  merged.metadata = {...(merged.metadata ?? {}), managedFields: encodeManagers(managers)}
  return {object: merged}
}

function sameSet(a: FieldSet, b: FieldSet): boolean {
  return a.size === b.size && a.paths().every((p) => b.has(p))
}

function comparePaths(a: Path, b: Path): number {
  const sa = pathString(a)
  const sb = pathString(b)
  return sa < sb ? -1 : sa > sb ? 1 : 0
}

function conflictError(conflicts: {entry: Manager['entry']; paths: Path[]}[]): NonNullable<ApplyResult['conflicts']> {
  const flat: {entry: Manager['entry']; path: Path}[] = []
  const sorted = [...conflicts].sort((a, b) => (managerKey(a.entry) < managerKey(b.entry) ? -1 : 1))
  for (const c of sorted) for (const p of c.paths) flat.push({entry: c.entry, path: p})
  const causes = flat.map((c) => ({
    reason: 'FieldManagerConflict',
    message: `conflict with ${printManager(c.entry)}`,
    field: pathString(c.path),
  }))
  let message: string
  if (flat.length === 1) {
    message = `Apply failed with 1 conflict: conflict with ${printManager(flat[0]!.entry)}: ${pathString(flat[0]!.path)}`
  } else {
    const lines: string[] = []
    const byManager = new Map<string, {entry: Manager['entry']; paths: Path[]}>()
    for (const c of flat) {
      const k = printManager(c.entry)
      if (!byManager.has(k)) byManager.set(k, {entry: c.entry, paths: []})
      byManager.get(k)!.paths.push(c.path)
    }
    for (const k of [...byManager.keys()].sort()) {
      lines.push(`conflicts with ${k}:`)
      for (const p of byManager.get(k)!.paths) lines.push(`- ${pathString(p)}`)
    }
    message = `Apply failed with ${flat.length} conflicts: ${lines.join('\n')}`
  }
  return {message, causes}
}
