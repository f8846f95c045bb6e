// The plan file's encoding (mesh-migrate.io/v1alpha3): the same MigrationPlan the planner builds and the
// executor runs, written so that it reads on its own and nothing large is stored twice (issues 11 §2, 23 §4):
//   - an object reference is one line, `apiVersion Kind namespace/name` (`v1 Namespace big` when cluster-scoped);
//   - every object the plan creates, deletes or re-creates is stored once, in `spec.objects`, under its
//     reference (without the apiVersion, kind, name and namespace the key already says); operations and
//     `spec.waypoints` name it by that key;
//   - every reason and message is written where it applies, in full. The inventory items of one kind and
//     namespace with the same verdict, action, scope and ztunnel effect are one entry that lists their names; a
//     reason every one of them has at the same place is written once, in the entry's `reasons`, where `~` marks
//     the places of each object's own reasons (its `reasons`, in order). Neighbouring hazards of one kind, phase
//     and window are likewise one entry listing each hazard's policy, workloads and message.
// mesh-migrate.io/v1alpha2 (repeated texts once, in `spec.texts`, named `{text: ID}`) is still read.
// The in-memory plan (and every JSON output) stays the expanded form, mesh-migrate.io/v1alpha1; the spec digest
// is taken over that expanded form, so it is the same whichever encoding a plan was read from.
// Pure: data in, data out.
import {stableJson} from '../planner/canonical.js'
import {compareRefs} from '../planner/refs.js'
import type {InventoryItem, KubeObject, ObjectRef} from '../planner/model.js'
import type {PlanProblem} from '../planner/plan-types.js'
import {
  type MigrationPlan,
  type Operation,
  type PlanHazard,
  type PlanSpec,
  type PlanStep,
  type Precondition,
  type UndoPrecondition,
  type Verification,
  PLAN_API_VERSION,
} from '../planner/plan-types.js'
import {cloneJson} from '../planner/json.js'

export const PLAN_FILE_API_VERSION = 'mesh-migrate.io/v1alpha3'
/** The file encoding before v1alpha3, with repeated texts in `spec.texts`: read, never written. */
export const PLAN_FILE_V1ALPHA2 = 'mesh-migrate.io/v1alpha2'

// --- references --------------------------------------------------------------------------------

/**
 * `[apiVersion] Kind [namespace/]name`: no part of a Kubernetes reference may contain a space, nor (but
 * apiVersion) a slash. Without apiVersion, the plan's `spec.apiVersions` gives the kind's.
 */
const REF_TEXT = /^(?:(\S+) )?([^\s/]+) (?:([^\s/]+)\/)?([^\s/]+)$/

/** Kind → the apiVersion every reference to that kind in the plan uses (a kind seen with two has none). */
type ApiVersions = Map<string, string | null>

export function refText(ref: ObjectRef, apiVersions?: ApiVersions): string {
  const version = apiVersions?.get(ref.kind) === ref.apiVersion ? '' : `${ref.apiVersion} `
  return `${version}${ref.kind} ${ref.namespace === undefined ? '' : `${ref.namespace}/`}${ref.name}`
}

/** The reference a one-line text names, or a reason why it names none. */
export function parseRefText(text: string, apiVersions: Record<string, string> = {}): ObjectRef | string {
  const m = REF_TEXT.exec(text)
  if (!m) return 'expected "[apiVersion] Kind namespace/name", or "[apiVersion] Kind name" for a cluster-scoped object'
  const apiVersion = m[1] ?? (Object.hasOwn(apiVersions, m[2]!) ? apiVersions[m[2]!] : undefined)
  if (apiVersion === undefined)
    return `spec.apiVersions has no apiVersion for ${m[2]}: name it ("apiVersion ${m[2]} …")`
  return m[3] === undefined
    ? {apiVersion, kind: m[2]!, name: m[4]!}
    : {apiVersion, kind: m[2]!, namespace: m[3], name: m[4]!}
}

const sameRef = (a: ObjectRef, b: ObjectRef) =>
  a.apiVersion === b.apiVersion && a.kind === b.kind && a.namespace === b.namespace && a.name === b.name

const refOf = (o: KubeObject): ObjectRef => ({
  apiVersion: o.apiVersion,
  kind: o.kind,
  ...(o.metadata.namespace === undefined ? {} : {namespace: o.metadata.namespace}),
  name: o.metadata.name,
})

// --- writing ------------------------------------------------------------------------------------

type Json = Record<string, unknown>

/**
 * References in one line. A first pass over the plan (`collecting`) learns each kind's apiVersion; the second
 * writes the references, leaving out the apiVersion of kinds that have one.
 */
class RefWriter {
  readonly apiVersions: ApiVersions = new Map()
  collecting = true

  write(ref: ObjectRef): string | ObjectRef {
    if (this.collecting) {
      const known = this.apiVersions.get(ref.kind)
      this.apiVersions.set(ref.kind, known === undefined || known === ref.apiVersion ? ref.apiVersion : null)
      return ref
    }
    const text = refText(ref, this.apiVersions)
    const back = parseRefText(text, this.table())
    // A name no API server would accept (a space, a slash) keeps the mapping form.
    return typeof back !== 'string' && sameRef(back, ref) ? text : ref
  }

  private cached?: Record<string, string>
  table(): Record<string, string> {
    this.cached ??= Object.fromEntries(
      [...this.apiVersions]
        .filter((e): e is [string, string] => e[1] !== null)
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
    )
    return this.cached
  }
}

/** The objects table being filled: one key per distinct object (a second, different object with the same reference gets "#2"). */
class ObjectTable {
  readonly entries = new Map<string, Json>()
  private readonly keyOfContent = new Map<string, string>()

  constructor(private readonly refs: RefWriter) {}

  add(object: KubeObject): string {
    if (this.refs.collecting) {
      this.refs.write(refOf(object))
      return ''
    }
    const content = stableJson(object)
    const known = this.keyOfContent.get(content)
    if (known !== undefined) return known
    const ref = this.refs.write(refOf(object))
    const base = typeof ref === 'string' ? ref : stableJson(ref)
    let key = base
    for (let n = 2; this.entries.has(key); n++) key = `${base} #${n}`
    this.keyOfContent.set(content, key)
    this.entries.set(key, typeof ref === 'string' ? withoutIdentity(object) : (object as unknown as Json))
    return key
  }
}

/** The object without what its key says (apiVersion, kind, metadata.name, metadata.namespace). */
function withoutIdentity(object: KubeObject): Json {
  const {apiVersion: _a, kind: _k, metadata, ...rest} = object
  const {name: _n, namespace: _ns, ...meta} = metadata
  return Object.keys(meta).length === 0 ? rest : {metadata: meta, ...rest}
}

interface Writer {
  refs: RefWriter
  objects: ObjectTable
}

/** `VERB REF` (`apply KEY`): an operation or check that names one object and nothing else, written as one line. */
const oneLine = (verb: string, ref: string | ObjectRef | Json): string | undefined =>
  typeof ref === 'string' ? `${verb} ${ref}` : undefined

function encodeOperation(op: Operation, w: Writer): Json | string {
  switch (op.op) {
    case 'apply':
      return `apply ${w.objects.add(op.object)}`
    case 'delete':
      // A delete that stores the object it deletes names it once: by the object's key.
      if (op.object && sameRef(refOf(op.object), op.ref)) return {op: 'delete', object: w.objects.add(op.object)}
      if (op.object) return {op: 'delete', ref: w.refs.write(op.ref), object: w.objects.add(op.object)}
      return oneLine('delete', w.refs.write(op.ref)) ?? {op: 'delete', ref: w.refs.write(op.ref)}
    case 'restart':
      return oneLine('restart', w.refs.write(op.ref)) ?? {op: 'restart', ref: w.refs.write(op.ref)}
    default:
      return {...op, ref: w.refs.write(op.ref)}
  }
}

/** The checks that name one object and nothing else (`object-present Deployment ns/app`). */
const ONE_LINE_CHECKS = new Set(['object-absent-or-ours', 'object-present', 'waypoint-ready'])

/** Any check (precondition or verification): its `ref`/`refs` in one-line form, the whole check in one line when it can. */
function encodeCheck(precondition: Precondition | Verification, w: Writer): Json | string {
  const check = precondition as {check: string; ref?: ObjectRef; refs?: ObjectRef[]}
  const out: Json = {...precondition}
  if (check.ref) out.ref = w.refs.write(check.ref)
  if (check.refs) out.refs = check.refs.map((r) => w.refs.write(r))
  return (
    (ONE_LINE_CHECKS.has(check.check) && Object.keys(out).length === 2 && oneLine(check.check, out.ref as string)) ||
    out
  )
}

function encodeStep(step: PlanStep, w: Writer): Json {
  return {
    ...step,
    description: step.description,
    preconditions: step.preconditions.map((p) => encodeCheck(p, w)),
    operations: step.operations.map((op) => encodeOperation(op, w)),
    ...(step.manual ? {manual: step.manual.map((m) => ({ref: w.refs.write(m.ref), reason: m.reason}))} : {}),
    verify: step.verify.map((v) => encodeCheck(v, w)),
    undo: {
      description: step.undo.description,
      ...(step.undo.preconditions
        ? {preconditions: step.undo.preconditions.map((p) => encodeUndoPrecondition(p, w))}
        : {}),
      operations: step.undo.operations.map((op) => encodeOperation(op, w)),
      ...(step.undo.verify ? {verify: step.undo.verify.map((v) => encodeCheck(v, w))} : {}),
    },
  }
}

function encodeUndoPrecondition(p: UndoPrecondition, w: Writer): Json {
  return p.check === 'pods-stay-in-mesh' ? {...p, allowed: p.allowed.map((r) => w.refs.write(r))} : {...p}
}

function encodeSpec(spec: PlanSpec, w: Writer): Json {
  const finding = (f: PlanSpec['findings'][number]) => ({...f, ...(f.ref ? {ref: w.refs.write(f.ref)} : {})})
  return {
    ...spec,
    blockers: spec.blockers.map(finding),
    findings: spec.findings.map(finding),
    inventory: encodeInventory(spec.inventory, w.refs),
    workloads: spec.workloads.map((wl) => ({...wl, ref: w.refs.write(wl.ref)})),
    waypoints: spec.waypoints.map((wp) => w.objects.add(wp)),
    hazards: encodeHazards(spec.hazards),
    steps: spec.steps.map((s) => encodeStep(s, w)),
  }
}

/** Items that share `key`, groups in the order of their first item (for neighbours: order is kept). */
function groups<T>(items: T[], key: (item: T) => string): T[][] {
  const out = new Map<string, T[]>()
  for (const item of items) {
    const k = key(item)
    const group = out.get(k)
    if (group) group.push(item)
    else out.set(k, [item])
  }
  return [...out.values()]
}

/** Runs of neighbours that share `key` (order is kept: the file lists them as the plan does). */
function runs<T>(items: T[], key: (item: T) => string): T[][] {
  const out: T[][] = []
  let last: string | undefined
  for (const item of items) {
    const k = key(item)
    if (out.length > 0 && k === last) out.at(-1)!.push(item)
    else out.push([item])
    last = k
  }
  return out
}

/** `[apiVersion] Kind`, the apiVersion left out when spec.apiVersions has it (as in references). */
function kindText(ref: ObjectRef, refs: RefWriter): string {
  return refs.apiVersions.get(ref.kind) === ref.apiVersion ? ref.kind : `${ref.apiVersion} ${ref.kind}`
}

/**
 * Inventory entries: the items of one kind and namespace that share verdict, action, scope, ztunnel and their
 * number of reasons are one entry listing their names. A reason all of them have at the same place
 * is written once in the entry's `reasons`; `null` (`~`) marks where each object's own reasons go.
 */
function encodeInventory(items: InventoryItem[], refs: RefWriter): Json[] {
  if (refs.collecting) {
    for (const item of items) refs.write(item.ref)
    return []
  }
  const key = (i: InventoryItem) =>
    stableJson([
      i.ref.apiVersion,
      i.ref.kind,
      i.ref.namespace ?? null,
      i.verdict,
      i.action,
      i.scope ?? null,
      i.ztunnel ?? null,
      i.reasons.length,
    ])
  // The planner lists the inventory in reference order (buildInventory), which reading restores (inventoryItems).
  const inOrder = [...items].sort((a, b) => compareRefs(a.ref, b.ref))
  return groups(inOrder, key).map((run) => {
    const [first] = run as [InventoryItem]
    const shared = first.reasons.map((r, p) => run.every((i) => i.reasons[p] === r))
    return {
      kind: kindText(first.ref, refs),
      ...(first.ref.namespace === undefined ? {} : {namespace: first.ref.namespace}),
      verdict: first.verdict,
      action: first.action,
      ...(first.scope === undefined ? {} : {scope: first.scope}),
      ...(first.ztunnel === undefined ? {} : {ztunnel: first.ztunnel}),
      reasons: first.reasons.map((r, p) => (shared[p] ? r : null)),
      objects: run.map((i) => {
        const own = i.reasons.filter((_, p) => !shared[p])
        return {
          name: i.ref.name,
          ...(own.length > 0 ? {reasons: own} : {}),
          ...(i.services === undefined ? {} : {services: i.services}),
        }
      }),
    }
  })
}

/** Hazard entries: neighbouring hazards of one kind, phase, window (from, until, accepted) are one entry. */
function encodeHazards(hazards: PlanHazard[]): Json[] {
  const shared = ({kind, phase, from, until, window, accepted}: PlanHazard) => ({
    kind,
    phase,
    from,
    until,
    ...(window === undefined ? {} : {window}),
    ...(accepted === undefined ? {} : {accepted}),
  })
  return runs(hazards, (h) => stableJson(shared(h))).map((run) => ({
    ...shared(run[0]!),
    hazards: run.map(({id, policy, workloads, message}) => ({
      id,
      ...(policy === undefined ? {} : {policy}),
      workloads,
      message,
    })),
  }))
}

/** The plan as the file stores it (plain data for the canonical YAML emitter). */
export function encodePlan(plan: MigrationPlan): Json {
  const refs = new RefWriter()
  const w: Writer = {refs, objects: new ObjectTable(refs)}
  encodeSpec(plan.spec, w) // learns the kinds' apiVersions
  refs.collecting = false
  const encoded = encodeSpec(plan.spec, w)
  encoded.apiVersions = refs.table()
  encoded.objects = Object.fromEntries(w.objects.entries)
  return {...plan, apiVersion: PLAN_FILE_API_VERSION, spec: encoded}
}

// --- reading ------------------------------------------------------------------------------------

/** Expands a schema-valid v1alpha2 document; names that lead nowhere (or tables entries nothing uses) are problems. */
class Decoder {
  readonly problems: PlanProblem[] = []
  private readonly usedObjects = new Set<string>()
  private readonly usedTexts = new Set<string>()

  constructor(
    private readonly apiVersions: Record<string, string>,
    private readonly objects: Record<string, Json>,
    private readonly texts: Record<string, string>,
  ) {}

  ref(value: unknown, path: string): ObjectRef {
    if (typeof value !== 'string') return value as ObjectRef
    const ref = parseRefText(value, this.apiVersions)
    if (typeof ref === 'string') this.problems.push({path, message: `"${value}" is not a reference: ${ref}`})
    return typeof ref === 'string' ? {apiVersion: '', kind: '', name: ''} : ref
  }

  text(value: unknown, path: string): string {
    if (typeof value === 'string') return value
    const {text: id, prefix = ''} = value as {text: string; prefix?: string}
    const text = Object.hasOwn(this.texts, id) ? this.texts[id] : undefined
    if (text === undefined) this.problems.push({path, message: `names text "${id}", which spec.texts does not have`})
    else this.usedTexts.add(id)
    return prefix + (text ?? '')
  }

  object(key: string, path: string): KubeObject {
    const stored = Object.hasOwn(this.objects, key) ? this.objects[key] : undefined
    if (stored === undefined) {
      this.problems.push({path, message: `names object "${key}", which spec.objects does not have`})
      return {apiVersion: '', kind: '', metadata: {name: ''}}
    }
    this.usedObjects.add(key)
    if (typeof stored.apiVersion === 'string') return cloneJson(stored) as unknown as KubeObject
    const ref = this.ref(key.replace(/ #\d+$/, ''), `spec.objects.${key}`)
    const {metadata, ...rest} = cloneJson(stored) as {metadata?: Json}
    return {
      apiVersion: ref.apiVersion,
      kind: ref.kind,
      metadata: {name: ref.name, ...(ref.namespace === undefined ? {} : {namespace: ref.namespace}), ...metadata},
      ...rest,
    } as KubeObject
  }

  unused(): PlanProblem[] {
    return [
      ...Object.keys(this.objects)
        .filter((k) => !this.usedObjects.has(k))
        .map((k) => ({path: `spec.objects.${k}`, message: 'no operation or waypoint uses this object'})),
      ...Object.keys(this.texts)
        .filter((k) => !this.usedTexts.has(k))
        .map((k) => ({path: `spec.texts.${k}`, message: 'nothing names this text'})),
    ]
  }
}

/** `VERB REF` → {verb, rest}. */
function splitOneLine(text: string): [string, string] {
  const at = text.indexOf(' ')
  return [text.slice(0, at), text.slice(at + 1)]
}

function decodeOperation(value: Json | string, d: Decoder, path: string): Operation {
  if (typeof value === 'string') {
    const [verb, rest] = splitOneLine(value)
    return verb === 'apply'
      ? {op: 'apply', object: d.object(rest, path)}
      : ({op: verb, ref: d.ref(rest, path)} as Operation)
  }
  const op = value
  if (op.op === 'apply') return {op: 'apply', object: d.object(op.object as string, `${path}.object`)}
  if (op.op === 'delete' && op.object !== undefined) {
    const object = d.object(op.object as string, `${path}.object`)
    return {op: 'delete', ref: op.ref === undefined ? refOf(object) : d.ref(op.ref, `${path}.ref`), object}
  }
  return {...op, ref: d.ref(op.ref, `${path}.ref`)} as unknown as Operation
}

function decodeCheck(value: Json | string, d: Decoder, path: string): Json {
  if (typeof value === 'string') {
    const [check, ref] = splitOneLine(value)
    return {check, ref: d.ref(ref, path)}
  }
  const check = value
  const out: Json = {...check}
  if (check.ref !== undefined) out.ref = d.ref(check.ref, `${path}.ref`)
  if (check.refs !== undefined) out.refs = (check.refs as unknown[]).map((r, i) => d.ref(r, `${path}.refs[${i}]`))
  return out
}

function decodeStep(step: Json, d: Decoder, path: string): PlanStep {
  const undo = step.undo as Json
  const manual = step.manual as Json[] | undefined
  return {
    ...step,
    description: d.text(step.description, `${path}.description`),
    preconditions: (step.preconditions as Json[]).map((p, i) => decodeCheck(p, d, `${path}.preconditions[${i}]`)),
    operations: (step.operations as Json[]).map((op, i) => decodeOperation(op, d, `${path}.operations[${i}]`)),
    ...(manual
      ? {
          manual: manual.map((m, i) => ({
            ref: d.ref(m.ref, `${path}.manual[${i}].ref`),
            reason: d.text(m.reason, `${path}.manual[${i}].reason`),
          })),
        }
      : {}),
    verify: (step.verify as Json[]).map((v, i) => decodeCheck(v, d, `${path}.verify[${i}]`)),
    undo: {
      description: d.text(undo.description, `${path}.undo.description`),
      ...(undo.preconditions
        ? {
            preconditions: (undo.preconditions as Json[]).map((p, i) =>
              p.check === 'pods-stay-in-mesh'
                ? {
                    ...p,
                    allowed: (p.allowed as unknown[]).map((r, j) =>
                      d.ref(r, `${path}.undo.preconditions[${i}].allowed[${j}]`),
                    ),
                  }
                : p,
            ),
          }
        : {}),
      operations: (undo.operations as Json[]).map((op, i) => decodeOperation(op, d, `${path}.undo.operations[${i}]`)),
      ...(undo.verify
        ? {verify: (undo.verify as Json[]).map((v, i) => decodeCheck(v, d, `${path}.undo.verify[${i}]`))}
        : {}),
    },
  } as unknown as PlanStep
}

/** The inventory items of v1alpha3's entries (encodeInventory), in reference order (as the planner lists them). */
function inventoryItems(entries: Json[], apiVersions: Record<string, string>, problems: PlanProblem[]): Json[] {
  const items = entries.flatMap((entry, i) => {
    const path = `spec.inventory[${i}]`
    const [named, kind] = (entry.kind as string).includes(' ')
      ? (entry.kind as string).split(' ', 2)
      : [undefined, entry.kind as string]
    const apiVersion = named ?? (Object.hasOwn(apiVersions, kind!) ? apiVersions[kind!] : undefined)
    if (apiVersion === undefined)
      problems.push({
        path: `${path}.kind`,
        message: `spec.apiVersions has no apiVersion for ${kind}: name it ("apiVersion ${kind}")`,
      })
    const {
      kind: _k,
      namespace,
      reasons,
      objects,
      ...shared
    } = entry as {kind: string; namespace?: string; reasons: (string | null)[]; objects: Json[]}
    const places = reasons.filter((r) => r === null).length
    return objects.map((object, j) => {
      const own = (object.reasons ?? []) as string[]
      if (own.length !== places)
        problems.push({
          path: `${path}.objects[${j}].reasons`,
          message: `${own.length} reason(s) of its own for the ${places} place(s) marked ~ in ${path}.reasons`,
        })
      let next = 0
      return {
        ref: {apiVersion: apiVersion ?? '', kind, ...(namespace === undefined ? {} : {namespace}), name: object.name},
        ...shared,
        reasons: reasons.map((r) => r ?? own[next++] ?? ''),
        ...(object.services === undefined ? {} : {services: object.services}),
      }
    })
  })
  return items.sort((a, b) => compareRefs(a.ref as ObjectRef, b.ref as ObjectRef))
}

/** The hazards of v1alpha3's entries (encodeHazards), in the order they are listed. */
function hazardItems(entries: Json[]): Json[] {
  return entries.flatMap(({hazards, ...shared}) =>
    (hazards as Json[]).map(({id, policy, workloads, message}) => ({
      id,
      ...shared,
      ...(policy === undefined ? {} : {policy}),
      workloads,
      message,
    })),
  )
}

/** The expanded plan of a schema-valid v1alpha3 (or v1alpha2) document, and what in it does not add up. */
export function decodePlan(data: Json): {plan: MigrationPlan; problems: PlanProblem[]} {
  const {apiVersions, objects, texts, ...encoded} = data.spec as Json
  const grouped: PlanProblem[] = []
  const spec =
    data.apiVersion === PLAN_FILE_V1ALPHA2
      ? encoded
      : {
          ...encoded,
          inventory: inventoryItems(
            encoded.inventory as Json[],
            (apiVersions ?? {}) as Record<string, string>,
            grouped,
          ),
          hazards: hazardItems(encoded.hazards as Json[]),
        }
  const d = new Decoder(
    (apiVersions ?? {}) as Record<string, string>,
    (objects ?? {}) as Record<string, Json>,
    (texts ?? {}) as Record<string, string>,
  )
  const finding = (kind: string) => (f: Json, i: number) => {
    const out: Json = {...f, message: d.text(f.message, `spec.${kind}[${i}].message`)}
    if (f.ref !== undefined) out.ref = d.ref(f.ref, `spec.${kind}[${i}].ref`)
    if (f.fix !== undefined) out.fix = d.text(f.fix, `spec.${kind}[${i}].fix`)
    return out
  }
  const expanded = {
    ...spec,
    blockers: (spec.blockers as Json[]).map(finding('blockers')),
    findings: (spec.findings as Json[]).map(finding('findings')),
    inventory: (spec.inventory as Json[]).map((item, i) => ({
      ...item,
      ref: d.ref(item.ref, `spec.inventory[${i}].ref`),
      reasons: (item.reasons as unknown[]).map((r, j) => d.text(r, `spec.inventory[${i}].reasons[${j}]`)),
    })),
    workloads: (spec.workloads as Json[]).map((w, i) => ({...w, ref: d.ref(w.ref, `spec.workloads[${i}].ref`)})),
    waypoints: (spec.waypoints as string[]).map((key, i) => d.object(key, `spec.waypoints[${i}]`)),
    hazards: (spec.hazards as Json[]).map((h, i) => ({...h, message: d.text(h.message, `spec.hazards[${i}].message`)})),
    steps: (spec.steps as Json[]).map((s, i) => decodeStep(s, d, `spec.steps[${i}]`)),
  } as unknown as PlanSpec
  const plan = {...data, apiVersion: PLAN_API_VERSION, spec: expanded} as unknown as MigrationPlan
  return {plan, problems: [...grouped, ...d.problems, ...d.unused()]}
}
