// The resource operations of the test API server (get, list, create, update, patch, apply,
// delete, deletecollection, SelfSubjectAccessReview) with kube-apiserver's semantics:
// admission order (decode → prune → default → validate → store), preconditions,
// generation, status subresource rules, managedFields, dry run, finalizers, owner-reference
// garbage collection and namespace/CRD cascades. HTTP concerns live in http/.
//
// Deliberate simplifications (documented in README.md of this folder):
// - deletion is immediate unless finalizers are set; pods have no graceful period, a
//   namespace's contents are removed at once (the response still shows it Terminating);
// - built-in kinds get light validation and keep unknown fields (no pruning).
import {randomUUID} from 'node:crypto'
import {
  alreadyExists,
  ApiError,
  badRequest,
  conflict,
  fieldError,
  forbidden,
  gone,
  invalid,
  notFound,
  OBJECT_MODIFIED,
  resourceNotFound,
  tooLargeResourceVersion,
  unprocessable,
  unsupportedMediaType,
  type FieldError,
} from './errors.js'
import {generateName, validateObjectMeta} from './meta/names.js'
import {
  matchesFields,
  matchesLabels,
  parseFieldSelector,
  parseLabelSelector,
  type FieldRequirement,
  type LabelSelector,
} from './meta/selectors.js'
import {applyJsonPatch, decodeJsonPatch, JsonPatchDecodeError, JsonPatchError} from './patch/json-patch.js'
import {pathString, undeclaredFields} from './patch/fieldset.js'
import {managedFieldsAfterUpdate, resetFieldsFor, serverSideApply} from './patch/managed-fields.js'
import {applyMergePatch} from './patch/merge-patch.js'
import {applyStrategicMergePatch, StrategicPatchError} from './patch/strategic-merge.js'
import {establishedStatus, validateCrd} from './registry/crd.js'
import type {Registry} from './registry/registry.js'
import {ExpiredError, objectKey, type Store} from './store/store.js'
import {apiVersionOf, resourceKey, type JsonObject, type ResourceType, type ServedVersion} from './types.js'
import {CEL_NOT_CHECKED, hasBlockingError, hasCelRules, validateCel} from './validation/cel.js'
import {
  applyDefaults,
  deepCopy,
  deepEqual,
  isObject,
  prune,
  pruneNulls,
  validateListTypes,
  validateValue,
  type StructuralSchema,
} from './validation/schema.js'
import {authorize, type Identity} from './auth/authz.js'

/** Built-in kinds whose /status writes keep label and annotation changes (their registry status strategies). */
const STATUS_KEEPS_METADATA = new Set(['Pod', 'Service', 'Node', 'Namespace'])

export type FieldValidation = 'Ignore' | 'Warn' | 'Strict'

export interface WriteOptions {
  dryRun: boolean
  fieldManager?: string
  fieldValidation: FieldValidation
  /** The request's User-Agent: the field manager's name when fieldManager is not given. */
  userAgent?: string
  /** Seeding only: keep a creationTimestamp given in the object (tests of object age). */
  keepCreationTimestamp?: boolean
}

export interface Result {
  status: number
  body: JsonObject
  warnings: string[]
}

export interface ListOptions {
  labelSelector?: string
  fieldSelector?: string
  limit?: number
  continue?: string
  resourceVersion?: string
  resourceVersionMatch?: string
}

export const PATCH_TYPES = {
  json: 'application/json-patch+json',
  merge: 'application/merge-patch+json',
  strategic: 'application/strategic-merge-patch+json',
  apply: 'application/apply-patch+yaml',
} as const

export type PatchType = (typeof PATCH_TYPES)[keyof typeof PATCH_TYPES]

export interface DeleteOptions {
  dryRun: boolean
  propagationPolicy?: 'Orphan' | 'Background' | 'Foreground'
  preconditions?: {uid?: string; resourceVersion?: string}
}

const SERVER_META = [
  'uid',
  'resourceVersion',
  'generation',
  'creationTimestamp',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
  'selfLink',
  'managedFields',
]

function nowTimestamp(): string {
  return new Date().toISOString().replace(/\.\d+Z$/, 'Z')
}

function continueToken(rv: number, start: string): string {
  return Buffer.from(JSON.stringify({v: 'meta.k8s.io/v1', rv, start})).toString('base64url')
}

function decodeContinue(token: string): {rv: number; start: string} {
  try {
    const o = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'))
    if (o.v !== 'meta.k8s.io/v1' || typeof o.rv !== 'number' || typeof o.start !== 'string') throw new Error('bad')
    return {rv: o.rv, start: o.start}
  } catch {
    throw badRequest(`continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)`)
  }
}

const EXPIRED_CONTINUE =
  'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.'

export class ApiCore {
  private nextClusterIP = 10

  constructor(
    readonly registry: Registry,
    readonly store: Store,
  ) {}

  // -------------------------------------------------------------------------------------
  // Presentation

  /** The object as served at `version`: conversion strategy None only changes apiVersion. */
  present(rt: ResourceType, obj: JsonObject, version: string): JsonObject {
    const out = deepCopy(obj)
    const ordered: JsonObject = {apiVersion: apiVersionOf(rt.group, version), kind: rt.kind}
    for (const [k, v] of Object.entries(out)) if (k !== 'apiVersion' && k !== 'kind') ordered[k] = v
    return ordered
  }

  private toStorage(rt: ResourceType, obj: JsonObject): JsonObject {
    return {...obj, apiVersion: apiVersionOf(rt.group, rt.storageVersion), kind: rt.kind}
  }

  private rk(rt: ResourceType): string {
    return resourceKey(rt.group, rt.plural)
  }

  private allocateClusterIP(): string {
    const n = this.nextClusterIP++
    return `10.96.${Math.floor(n / 256)}.${n % 256}`
  }

  // -------------------------------------------------------------------------------------
  // Reads

  get(rt: ResourceType, version: string, namespace: string, name: string): Result {
    const obj = this.store.get(this.rk(rt), namespace, name)
    if (!obj) throw notFound(rt.group, rt.plural, name)
    return {status: 200, body: this.present(rt, obj, version), warnings: []}
  }

  /** Label and field selectors parsed against what this resource supports. */
  selectors(
    rt: ResourceType,
    opts: {labelSelector?: string; fieldSelector?: string},
  ): {labels: LabelSelector; fields: FieldRequirement[]} {
    const labels = parseLabelSelector(opts.labelSelector ?? '')
    const fields = parseFieldSelector(opts.fieldSelector ?? '')
    const supported = ['metadata.name', 'metadata.namespace', ...Object.keys(rt.fieldSelectors ?? {})]
    for (const f of fields) {
      if (supported.includes(f.field)) continue
      if (rt.custom)
        throw badRequest(
          `"${f.field}" is not a known field selector: only ${supported.map((s) => `"${s}"`).join(', ')}`,
        )
      throw badRequest(`field label not supported: ${f.field}`)
    }
    return {labels, fields}
  }

  fieldSet(rt: ResourceType, obj: JsonObject): Record<string, string> {
    const f: Record<string, string> = {
      'metadata.name': obj.metadata?.name ?? '',
      'metadata.namespace': obj.metadata?.namespace ?? '',
    }
    for (const [k, fn] of Object.entries(rt.fieldSelectors ?? {})) f[k] = fn(obj)
    return f
  }

  matches(rt: ResourceType, obj: JsonObject, sel: {labels: LabelSelector; fields: FieldRequirement[]}): boolean {
    return matchesLabels(sel.labels, obj.metadata?.labels) && matchesFields(sel.fields, this.fieldSet(rt, obj))
  }

  list(rt: ResourceType, version: string, namespace: string | undefined, opts: ListOptions): Result {
    const sel = this.selectors(rt, opts)
    if (opts.continue && opts.resourceVersion)
      throw badRequest('specifying resource version is not allowed when using continue')
    const limit = opts.limit && opts.limit > 0 ? opts.limit : undefined
    let atRv = this.store.currentRv
    let start = ''
    if (opts.continue) {
      const tok = decodeContinue(opts.continue)
      atRv = tok.rv
      start = tok.start
    } else if (opts.resourceVersion && opts.resourceVersion !== '0') {
      const rv = Number(opts.resourceVersion)
      if (!Number.isInteger(rv) || rv < 0) throw badRequest(`invalid resource version: ${opts.resourceVersion}`)
      if (rv > this.store.currentRv) throw tooLargeResourceVersion(rv, this.store.currentRv)
      // Exact when asked, and (legacy rule) when paging from a non-zero resourceVersion.
      if (opts.resourceVersionMatch === 'Exact' || (limit && !opts.resourceVersionMatch)) atRv = rv
    }
    let items: JsonObject[]
    try {
      items = this.store.snapshot(this.rk(rt), atRv, rt.namespaced ? namespace : undefined)
    } catch (e) {
      if (!(e instanceof ExpiredError)) throw e
      if (opts.continue) throw new ApiError({message: EXPIRED_CONTINUE, reason: 'Expired', code: 410})
      throw gone(`too old resource version: ${atRv} (${this.store.oldestRv})`)
    }
    const keyOf = (o: JsonObject) => objectKey(rt.namespaced ? (o.metadata.namespace ?? '') : '', o.metadata.name)
    items = items.filter((o) => keyOf(o) >= start && this.matches(rt, o, sel))
    const metadata: JsonObject = {resourceVersion: String(atRv)}
    if (limit && items.length > limit) {
      const page = items.slice(0, limit)
      metadata.continue = continueToken(atRv, `${keyOf(page[page.length - 1]!)}\u0000`)
      if (!opts.labelSelector && !opts.fieldSelector) metadata.remainingItemCount = items.length - limit
      items = page
    }
    const presented = items.map((o) => {
      const p = this.present(rt, o, version)
      if (!rt.custom) {
        delete p.apiVersion
        delete p.kind
      }
      return p
    })
    return {
      status: 200,
      body: {kind: rt.listKind, apiVersion: apiVersionOf(rt.group, version), metadata, items: presented},
      warnings: [],
    }
  }

  // -------------------------------------------------------------------------------------
  // Admission pipeline shared by writes

  private checkTypeMeta(
    rt: ResourceType,
    version: string,
    body: unknown,
    requireTypeMeta: boolean,
  ): asserts body is JsonObject {
    if (!isObject(body))
      throw badRequest(
        `the object provided is unrecognized (must be of type ${rt.kind}): couldn't get version/kind; json parse error: expected an object`,
      )
    const expected = apiVersionOf(rt.group, version)
    if (body.kind === undefined || body.kind === '') {
      if (requireTypeMeta) throw badRequest(`Object 'Kind' is missing in '${JSON.stringify(body)}'`)
    } else if (body.kind !== rt.kind) {
      throw badRequest(
        `${body.kind} in version "${version}" cannot be handled as a ${rt.kind}: no kind "${body.kind}" is registered for version "${expected}"`,
      )
    }
    if (body.apiVersion !== undefined && body.apiVersion !== expected) {
      throw badRequest(
        `the API version in the data (${body.apiVersion}) does not match the expected API version (${expected})`,
      )
    }
    if (body.metadata !== undefined && !isObject(body.metadata))
      throw badRequest(
        `${rt.kind} in version "${version}" cannot be handled as a ${rt.kind}: metadata must be an object`,
      )
  }

  private checkNamespace(rt: ResourceType, namespace: string, obj: JsonObject): void {
    obj.metadata ??= {}
    if (rt.namespaced) {
      if (obj.metadata.namespace && obj.metadata.namespace !== namespace)
        throw badRequest('the namespace of the provided object does not match the namespace sent on the request')
      obj.metadata.namespace = namespace
    } else {
      delete obj.metadata.namespace
    }
  }

  private requireNamespace(rt: ResourceType, namespace: string): void {
    if (!rt.namespaced) return
    if (!this.store.get('/namespaces', '', namespace)) throw notFound('', 'namespaces', namespace)
  }

  /** Pruning, nulls and defaults for custom resources; defaulting hooks for built-ins. */
  private decodeAndDefault(
    rt: ResourceType,
    sv: ServedVersion,
    obj: JsonObject,
    opts: WriteOptions,
    warnings: string[],
  ): void {
    if (sv.schema) {
      const unknown = prune(obj, sv.schema)
      if (unknown.length) {
        if (opts.fieldValidation === 'Strict')
          throw badRequest(
            `${rt.kind} in version "${sv.name}" cannot be handled as a ${rt.kind}: strict decoding error: ${unknown.map((p) => `unknown field "${p}"`).join(', ')}`,
          )
        if (opts.fieldValidation === 'Warn') for (const p of unknown) warnings.push(`unknown field "${p}"`)
      }
      pruneNulls(obj, sv.schema)
      applyDefaults(obj, sv.schema)
    }
    rt.hooks?.applyDefaults?.(obj)
  }

  private validate(
    rt: ResourceType,
    sv: ServedVersion,
    obj: JsonObject,
    old: JsonObject | undefined,
    warnings: string[],
  ): void {
    const errs: FieldError[] = [...validateObjectMeta(obj.metadata, rt.namespaced, rt.nameRule)]
    if (sv.schema) {
      const oldRef = old ? {value: old} : undefined
      errs.push(...validateValue(obj, sv.schema, '', oldRef))
      errs.push(...validateListTypes(obj, sv.schema as StructuralSchema, '', oldRef))
      if (!hasCelRules(sv.schema)) {
        // no CEL validator at all
      } else if (hasBlockingError(errs)) errs.push(CEL_NOT_CHECKED)
      else {
        const cel = validateCel(obj, sv.schema, oldRef)
        errs.push(...cel.errors)
        for (const s of cel.skipped)
          warnings.push(`test API server: CEL rule at ${s.path} was not evaluated (${s.reason}): ${s.rule}`)
      }
    }
    if (rt.kind === 'CustomResourceDefinition' && rt.group === 'apiextensions.k8s.io') errs.push(...validateCrd(obj))
    errs.push(...(rt.hooks?.validate?.(obj, old) ?? []))
    if (errs.length) throw invalid(rt.group, rt.kind, obj.metadata?.name ?? '', errs)
    if (sv.deprecated)
      warnings.push(sv.deprecationWarning ?? `${apiVersionOf(rt.group, sv.name)} ${rt.kind} is deprecated`)
  }

  private managerName(opts: WriteOptions): string {
    if (opts.fieldManager) return opts.fieldManager
    return (opts.userAgent ?? '').split('/')[0]!.slice(0, 128)
  }

  private specChanged(rt: ResourceType, a: JsonObject, b: JsonObject): boolean {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)])
    for (const k of keys) {
      if (k === 'apiVersion' || k === 'kind' || k === 'metadata') continue
      if (k === 'status' && rt.hasStatus) continue
      if (!deepEqual(a[k], b[k])) return true
    }
    return false
  }

  // -------------------------------------------------------------------------------------
  // Create

  create(
    rt: ResourceType,
    sv: ServedVersion,
    namespace: string,
    body: unknown,
    opts: WriteOptions,
    applyConfig?: JsonObject,
  ): Result {
    const warnings: string[] = []
    this.checkTypeMeta(rt, sv.name, body, true)
    const obj = deepCopy(body)
    this.checkNamespace(rt, namespace, obj)
    if (obj.metadata.resourceVersion) throw badRequest('resourceVersion should not be set on objects to be created')
    this.requireNamespace(rt, namespace)
    if (!obj.metadata.name && obj.metadata.generateName) obj.metadata.name = generateName(obj.metadata.generateName)
    this.decodeAndDefault(rt, sv, obj, opts, warnings)
    const requestedTimestamp = obj.metadata.creationTimestamp
    for (const k of SERVER_META) delete obj.metadata[k]
    // The field manager sees the request after defaulting, before the registry's preparation.
    const asRequested = this.toStorage(rt, deepCopy(obj))
    if (rt.hasStatus) delete asRequested.status
    obj.metadata.uid = randomUUID()
    obj.metadata.creationTimestamp =
      opts.keepCreationTimestamp && requestedTimestamp ? requestedTimestamp : nowTimestamp()
    if (rt.generation === 'spec') obj.metadata.generation = 1
    if (rt.hasStatus && rt.custom) delete obj.status
    rt.hooks?.prepareForCreate?.(obj, {allocateClusterIP: () => this.allocateClusterIP()})
    this.validate(rt, sv, obj, undefined, warnings)
    const name = obj.metadata.name
    if (this.store.get(this.rk(rt), rt.namespaced ? namespace : '', name))
      throw alreadyExists(rt.group, rt.plural, name)
    const stored = this.toStorage(rt, obj)
    const who = {manager: this.managerName(opts), apiVersion: apiVersionOf(rt.group, sv.name), now: nowTimestamp()}
    const mode = {builtin: !rt.custom}
    stored.metadata.managedFields = applyConfig
      ? (serverSideApply(undefined, applyConfig, this.mergeSchema(rt, sv), mode, who, true).object!.metadata
          .managedFields as JsonObject[])
      : managedFieldsAfterUpdate(undefined, asRequested, this.mergeSchema(rt, sv), mode, who)
    if (opts.dryRun) return {status: 201, body: this.present(rt, stored, sv.name), warnings}
    const saved = this.store.put(this.rk(rt), stored)
    this.afterCreate(rt, saved)
    return {status: 201, body: this.present(rt, saved, sv.name), warnings}
  }

  private afterCreate(rt: ResourceType, saved: JsonObject): void {
    if (rt.group === 'apiextensions.k8s.io' && rt.kind === 'CustomResourceDefinition') {
      this.registry.registerCrd(saved)
      const withStatus = {...saved, status: establishedStatus(saved, nowTimestamp())}
      this.store.put(this.rk(rt), withStatus)
    }
  }

  /** Schema used for merge semantics (SSA, field sets): the served schema for CRs, the merge table for built-ins. */
  private mergeSchema(rt: ResourceType, sv: ServedVersion): StructuralSchema | undefined {
    return rt.custom ? sv.schema : rt.mergeSchema
  }

  // -------------------------------------------------------------------------------------
  // Update / patch / apply share this: `next` is the desired object.

  private commitUpdate(
    rt: ResourceType,
    sv: ServedVersion,
    old: JsonObject,
    next: JsonObject,
    subresource: string,
    opts: WriteOptions,
    warnings: string[],
    managed: 'update' | {managedFields: JsonObject[]},
  ): Result {
    const name = old.metadata.name
    if (next.metadata?.resourceVersion && next.metadata.resourceVersion !== old.metadata.resourceVersion)
      throw conflict(rt.group, rt.plural, name, OBJECT_MODIFIED)
    if (next.metadata?.uid && next.metadata.uid !== old.metadata.uid)
      throw invalid(rt.group, rt.kind, name, [
        fieldError.invalid('metadata.uid', next.metadata.uid, 'field is immutable'),
      ])
    let obj: JsonObject
    if (subresource === 'status') {
      obj = deepCopy(old)
      if (next.status === undefined) delete obj.status
      else obj.status = deepCopy(next.status)
      // The core status strategies of these kinds only reset spec (and, for pods, ownerReferences):
      // labels and annotations written through /status are kept — istio-cni writes
      // ambient.istio.io/redirection this way. Custom resources and apps/* kinds drop metadata changes.
      if (!rt.custom && STATUS_KEEPS_METADATA.has(rt.kind)) {
        for (const k of ['labels', 'annotations'] as const) {
          if (next.metadata?.[k] === undefined) delete obj.metadata[k]
          else obj.metadata[k] = deepCopy(next.metadata[k])
        }
      }
    } else {
      obj = deepCopy(next)
      obj.metadata ??= {}
      if (rt.hasStatus) {
        if (old.status === undefined) delete obj.status
        else obj.status = deepCopy(old.status)
      }
    }
    for (const k of ['uid', 'creationTimestamp', 'deletionTimestamp', 'deletionGracePeriodSeconds']) {
      if (old.metadata[k] === undefined) delete obj.metadata[k]
      else obj.metadata[k] = old.metadata[k]
    }
    obj.metadata.name = old.metadata.name
    if (rt.namespaced) obj.metadata.namespace = old.metadata.namespace
    obj.metadata.resourceVersion = old.metadata.resourceVersion
    this.decodeAndDefault(rt, sv, obj, opts, warnings)
    if (rt.generation === 'spec')
      obj.metadata.generation = (old.metadata.generation ?? 1) + (this.specChanged(rt, old, obj) ? 1 : 0)
    else delete obj.metadata.generation
    this.validate(rt, sv, obj, old, warnings)
    const stored = this.toStorage(rt, obj)
    const who = {
      manager: this.managerName(opts),
      apiVersion: apiVersionOf(rt.group, sv.name),
      now: nowTimestamp(),
      ...(subresource ? {subresource} : {}),
    }
    const schema = this.mergeSchema(rt, sv)
    stored.metadata.managedFields =
      managed === 'update'
        ? managedFieldsAfterUpdate(old, stored, schema, {builtin: !rt.custom}, who)
        : managed.managedFields
    // A finalizer-free object that is being deleted goes away with this write.
    const finishing = stored.metadata.deletionTimestamp && !(stored.metadata.finalizers ?? []).length
    if (deepEqual(stored, old) && !finishing) return {status: 200, body: this.present(rt, old, sv.name), warnings}
    if (opts.dryRun) return {status: 200, body: this.present(rt, stored, sv.name), warnings}
    if (finishing) {
      const last = this.store.remove(this.rk(rt), old.metadata.namespace ?? '', name)!
      this.afterDelete(rt, last, 'Background')
      return {
        status: 200,
        body: this.present(
          rt,
          {...stored, metadata: {...stored.metadata, resourceVersion: last.metadata.resourceVersion}},
          sv.name,
        ),
        warnings,
      }
    }
    const saved = this.store.put(this.rk(rt), stored)
    if (rt.group === 'apiextensions.k8s.io' && rt.kind === 'CustomResourceDefinition') this.registry.registerCrd(saved)
    return {status: 200, body: this.present(rt, saved, sv.name), warnings}
  }

  private existing(rt: ResourceType, namespace: string, name: string): JsonObject {
    const old = this.store.get(this.rk(rt), rt.namespaced ? namespace : '', name)
    if (!old) throw notFound(rt.group, rt.plural, name)
    return old
  }

  update(
    rt: ResourceType,
    sv: ServedVersion,
    namespace: string,
    name: string,
    subresource: string,
    body: unknown,
    opts: WriteOptions,
  ): Result {
    const warnings: string[] = []
    this.checkTypeMeta(rt, sv.name, body, true)
    const next = deepCopy(body)
    next.metadata ??= {}
    if (next.metadata.name !== undefined && next.metadata.name !== name)
      throw badRequest(`the name of the object (${next.metadata.name}) does not match the name on the URL (${name})`)
    this.checkNamespace(rt, namespace, next)
    const old = this.existing(rt, namespace, name)
    next.metadata.name = name
    return this.commitUpdate(rt, sv, old, next, subresource, opts, warnings, 'update')
  }

  patch(
    rt: ResourceType,
    sv: ServedVersion,
    namespace: string,
    name: string,
    subresource: string,
    patchType: string,
    body: unknown,
    opts: WriteOptions & {force?: boolean; authorizeCreate?: () => {allowed: boolean; reason: string}},
  ): Result {
    const accepted: string[] = rt.custom
      ? [PATCH_TYPES.json, PATCH_TYPES.merge, PATCH_TYPES.apply]
      : [PATCH_TYPES.json, PATCH_TYPES.merge, PATCH_TYPES.strategic, PATCH_TYPES.apply]
    if (!accepted.includes(patchType)) throw unsupportedMediaType(accepted)
    const optErrs: FieldError[] = []
    if (patchType !== PATCH_TYPES.apply && opts.force !== undefined)
      optErrs.push(fieldError.forbidden('force', 'may not be specified for non-apply patch'))
    if (patchType === PATCH_TYPES.apply && !opts.fieldManager)
      optErrs.push(fieldError.required('fieldManager', 'is required for apply patch'))
    if (optErrs.length) throw invalid('meta.k8s.io', 'PatchOptions', '', optErrs)
    const warnings: string[] = []

    if (patchType === PATCH_TYPES.apply) return this.apply(rt, sv, namespace, name, subresource, body, opts, warnings)

    const old = this.existing(rt, namespace, name)
    const current = this.present(rt, old, sv.name)
    let next: unknown
    try {
      if (patchType === PATCH_TYPES.merge) {
        if (!isObject(body))
          throw badRequest(
            `json: cannot unmarshal ${Array.isArray(body) ? 'array' : typeof body} into Go value of type map[string]interface {}`,
          )
        next = applyMergePatch(current, body)
      } else if (patchType === PATCH_TYPES.json) {
        next = applyJsonPatch(current, decodeJsonPatch(body))
      } else {
        next = applyStrategicMergePatch(current, body, rt.mergeSchema)
      }
    } catch (e) {
      if (e instanceof JsonPatchDecodeError) throw badRequest(e.message)
      if (e instanceof JsonPatchError) throw unprocessable(e.message)
      if (e instanceof StrategicPatchError) throw badRequest(e.message)
      throw e
    }
    if (!isObject(next)) throw badRequest('patched object is not an object')
    this.checkTypeMeta(rt, sv.name, next, false)
    next.metadata ??= {}
    if (next.metadata.name !== name)
      throw badRequest(`the name of the object (${next.metadata.name}) does not match the name on the URL (${name})`)
    if (rt.namespaced && next.metadata.namespace !== namespace)
      throw badRequest('the namespace of the provided object does not match the namespace sent on the request')
    return this.commitUpdate(rt, sv, old, next, subresource, opts, warnings, 'update')
  }

  private apply(
    rt: ResourceType,
    sv: ServedVersion,
    namespace: string,
    name: string,
    subresource: string,
    body: unknown,
    opts: WriteOptions & {force?: boolean; authorizeCreate?: () => {allowed: boolean; reason: string}},
    warnings: string[],
  ): Result {
    if (!isObject(body)) throw badRequest('error decoding YAML: the applied configuration must be an object')
    if (!body.apiVersion || !body.kind)
      throw badRequest(`invalid object type: ${body.apiVersion ?? ''}, Kind=${body.kind ?? ''}`)
    this.checkTypeMeta(rt, sv.name, body, true)
    const applied = deepCopy(body)
    applied.metadata ??= {}
    if (applied.metadata.name !== undefined && applied.metadata.name !== name)
      throw badRequest(`the name of the object (${applied.metadata.name}) does not match the name on the URL (${name})`)
    if (rt.namespaced && applied.metadata.namespace !== undefined && applied.metadata.namespace !== namespace)
      throw badRequest('the namespace of the provided object does not match the namespace sent on the request')
    if (rt.custom && sv.schema) {
      const undeclared = undeclaredFields(applied, sv.schema)
      if (undeclared.length) {
        const errs = undeclared.map((p) => `${pathString(p)}: field not declared in schema`)
        const detail = errs.length === 1 ? errs[0] : `errors:\n  ${errs.join('\n  ')}`
        // Not a Status error in the real server either: it surfaces as a reason-less 500.
        throw new ApiError({
          message: `failed to create typed patch object (${rt.namespaced ? namespace : ''}/${name}; ${apiVersionOf(rt.group, sv.name)}, Kind=${rt.kind}): ${detail}`,
          code: 500,
        })
      }
    }
    const old = this.store.get(this.rk(rt), rt.namespaced ? namespace : '', name)
    const scoped = resetFieldsFor(applied, subresource || undefined, rt.hasStatus)
    if (!old) {
      if (subresource) throw notFound(rt.group, rt.plural, name)
      // Creating through apply also needs the create verb (withAuthorization in the real patch handler).
      const decision = opts.authorizeCreate?.()
      if (decision && !decision.allowed) throw forbidden(rt.group, rt.plural, name, decision.reason)
      // Create-if-absent: the applied configuration becomes the object, owned by this manager.
      const created = deepCopy(applied)
      created.metadata.name = name
      const r = this.create(rt, sv, namespace, created, opts, scoped)
      return {...r, warnings: [...warnings, ...r.warnings]}
    }
    const current = this.present(rt, old, sv.name)
    const who = {
      manager: opts.fieldManager!,
      apiVersion: apiVersionOf(rt.group, sv.name),
      now: nowTimestamp(),
      ...(subresource ? {subresource} : {}),
    }
    const result = serverSideApply(
      current,
      scoped,
      this.mergeSchema(rt, sv),
      {builtin: !rt.custom},
      who,
      opts.force === true,
    )
    if (result.conflicts)
      throw new ApiError({
        message: result.conflicts.message,
        reason: 'Conflict',
        details: {causes: result.conflicts.causes},
        code: 409,
      })
    const next = result.object!
    next.metadata.resourceVersion = applied.metadata.resourceVersion ?? old.metadata.resourceVersion
    const managedFields = next.metadata.managedFields as JsonObject[]
    return this.commitUpdate(rt, sv, old, next, subresource, opts, warnings, {managedFields})
  }

  // -------------------------------------------------------------------------------------
  // Delete

  delete(rt: ResourceType, sv: ServedVersion, namespace: string, name: string, opts: DeleteOptions): Result {
    const old = this.existing(rt, namespace, name)
    const pre = opts.preconditions
    if (pre?.uid && pre.uid !== old.metadata.uid)
      throw conflict(
        rt.group,
        rt.plural,
        name,
        `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${old.metadata.uid}`,
      )
    if (pre?.resourceVersion && pre.resourceVersion !== old.metadata.resourceVersion)
      throw conflict(
        rt.group,
        rt.plural,
        name,
        `Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in object meta: ${old.metadata.resourceVersion}`,
      )
    const ns = rt.namespaced ? namespace : ''
    if ((old.metadata.finalizers ?? []).length) {
      // Pending finalization: the object stays, marked for deletion; the response is the object.
      if (old.metadata.deletionTimestamp) return {status: 200, body: this.present(rt, old, sv.name), warnings: []}
      const marked = deepCopy(old)
      marked.metadata.deletionTimestamp = nowTimestamp()
      marked.metadata.deletionGracePeriodSeconds = 0
      if (opts.dryRun) return {status: 200, body: this.present(rt, marked, sv.name), warnings: []}
      return {status: 200, body: this.present(rt, this.store.put(this.rk(rt), marked), sv.name), warnings: []}
    }
    let last: JsonObject
    if (opts.dryRun) last = old
    else {
      last = this.store.remove(this.rk(rt), ns, name)!
      this.afterDelete(rt, last, opts.propagationPolicy ?? 'Background')
    }
    if (rt.plural === 'namespaces' && rt.group === '') {
      const shown = deepCopy(last)
      shown.metadata.deletionTimestamp = nowTimestamp()
      shown.status = {...(shown.status ?? {}), phase: 'Terminating'}
      return {status: 200, body: this.present(rt, shown, sv.name), warnings: []}
    }
    if (rt.returnDeletedObject) return {status: 200, body: this.present(rt, last, sv.name), warnings: []}
    return {
      status: 200,
      body: {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Success',
        details: {name, ...(rt.group ? {group: rt.group} : {}), kind: rt.plural, uid: old.metadata.uid},
      },
      warnings: [],
    }
  }

  deleteCollection(
    rt: ResourceType,
    sv: ServedVersion,
    namespace: string | undefined,
    opts: DeleteOptions & ListOptions,
  ): Result {
    const listed = this.list(rt, sv.name, namespace, {
      ...(opts.labelSelector ? {labelSelector: opts.labelSelector} : {}),
      ...(opts.fieldSelector ? {fieldSelector: opts.fieldSelector} : {}),
    })
    const items: JsonObject[] = []
    for (const item of listed.body.items as JsonObject[]) {
      const r = this.delete(rt, sv, item.metadata.namespace ?? '', item.metadata.name, {
        dryRun: opts.dryRun,
        ...(opts.propagationPolicy ? {propagationPolicy: opts.propagationPolicy} : {}),
      })
      items.push(r.body.kind === 'Status' ? this.present(rt, item, sv.name) : r.body)
    }
    return {
      status: 200,
      body: {
        kind: rt.listKind,
        apiVersion: apiVersionOf(rt.group, sv.name),
        metadata: {resourceVersion: String(this.store.currentRv)},
        items,
      },
      warnings: [],
    }
  }

  /** Cascades of a completed deletion: namespace contents, a CRD's objects, owned dependents. */
  private afterDelete(rt: ResourceType, deleted: JsonObject, policy: 'Orphan' | 'Background' | 'Foreground'): void {
    if (rt.group === '' && rt.plural === 'namespaces') {
      for (const {resource, obj} of this.store.namespaceContents(deleted.metadata.name))
        this.store.remove(resource, obj.metadata.namespace, obj.metadata.name)
    }
    if (rt.group === 'apiextensions.k8s.io' && rt.kind === 'CustomResourceDefinition') {
      const gone = this.registry.unregisterCrd(deleted.metadata.name)
      if (gone)
        for (const o of this.store.list(resourceKey(gone.group, gone.plural)))
          this.store.remove(resourceKey(gone.group, gone.plural), o.metadata.namespace ?? '', o.metadata.name)
    }
    this.collectGarbage(deleted.metadata.uid, policy)
  }

  /** Owner-reference garbage collection, done synchronously. */
  private collectGarbage(ownerUid: string, policy: 'Orphan' | 'Background' | 'Foreground'): void {
    const existingUids = new Set(this.store.allObjects().map((e) => e.obj.metadata.uid))
    for (const {resource, obj} of this.store.allObjects()) {
      const refs = (obj.metadata.ownerReferences ?? []) as JsonObject[]
      if (!refs.some((r) => r.uid === ownerUid)) continue
      if (policy === 'Orphan') {
        const copy = deepCopy(obj)
        copy.metadata.ownerReferences = refs.filter((r) => r.uid !== ownerUid)
        if (!copy.metadata.ownerReferences.length) delete copy.metadata.ownerReferences
        this.store.put(resource, copy)
        continue
      }
      if (refs.some((r) => r.uid !== ownerUid && existingUids.has(r.uid))) continue
      const last = this.store.remove(resource, obj.metadata.namespace ?? '', obj.metadata.name)
      if (last) this.collectGarbage(last.metadata.uid, 'Background')
    }
  }

  // -------------------------------------------------------------------------------------
  // SelfSubjectAccessReview

  /** authentication.k8s.io/v1 SelfSubjectReview: the requester's user info, as authenticated. */
  selfSubjectReview(identity: Identity): Result {
    return {
      status: 201,
      body: {
        kind: 'SelfSubjectReview',
        apiVersion: 'authentication.k8s.io/v1',
        metadata: {creationTimestamp: null},
        status: {userInfo: {username: identity.user, groups: identity.groups}},
      },
      warnings: [],
    }
  }

  selfSubjectAccessReview(identity: Identity, body: unknown): Result {
    if (!isObject(body) || !isObject(body.spec))
      throw invalid('authorization.k8s.io', 'SelfSubjectAccessReview', '', [
        fieldError.invalid(
          'spec',
          null,
          'exactly one of nonResourceAttributes or resourceAttributes must be specified',
        ),
      ])
    const ra = body.spec.resourceAttributes
    const nra = body.spec.nonResourceAttributes
    if (!!ra === !!nra)
      throw invalid('authorization.k8s.io', 'SelfSubjectAccessReview', '', [
        fieldError.invalid(
          'spec.resourceAttributes',
          null,
          'exactly one of nonResourceAttributes or resourceAttributes must be specified',
        ),
      ])
    const attrs = ra
      ? {
          user: identity.user,
          verb: ra.verb ?? '',
          resourceRequest: true,
          apiGroup: ra.group ?? '',
          resource: ra.resource ?? '',
          subresource: ra.subresource ?? '',
          namespace: ra.namespace ?? '',
          name: ra.name ?? '',
          path: '',
        }
      : {
          user: identity.user,
          verb: nra.verb ?? '',
          resourceRequest: false,
          apiGroup: '',
          resource: '',
          subresource: '',
          namespace: '',
          name: '',
          path: nra.path ?? '',
        }
    const decision = authorize(identity, attrs)
    const status: JsonObject = {allowed: decision.allowed}
    if (decision.reason) status.reason = decision.reason
    return {
      status: 201,
      body: {
        kind: 'SelfSubjectAccessReview',
        apiVersion: 'authorization.k8s.io/v1',
        metadata: {creationTimestamp: null},
        spec: body.spec,
        status,
      },
      warnings: [],
    }
  }

  // -------------------------------------------------------------------------------------
  // Seeding (bypasses HTTP and authorization, keeps revisions and uids consistent)

  seed(obj: JsonObject): JsonObject {
    const r = this.registry.byKind(obj.apiVersion, obj.kind)
    if (!r) throw resourceNotFound()
    const {rt, version} = r
    const ns = rt.namespaced ? (obj.metadata?.namespace ?? 'default') : ''
    const opts: WriteOptions = {
      dryRun: false,
      fieldValidation: 'Warn',
      fieldManager: 'test-seed',
      keepCreationTimestamp: true,
    }
    if (rt.namespaced && !this.store.get('/namespaces', '', ns)) {
      const nsRt = this.registry.resolve('', 'v1', 'namespaces')!
      this.create(nsRt.rt, nsRt.version, '', {apiVersion: 'v1', kind: 'Namespace', metadata: {name: ns}}, opts)
    }
    const name = obj.metadata?.name ?? ''
    const existing = this.store.get(this.rk(rt), ns, name)
    const body = deepCopy(obj)
    if (body.metadata) delete body.metadata.resourceVersion
    let out = existing
      ? this.update(rt, version, ns, name, '', body, opts).body
      : this.create(rt, version, ns, body, opts).body
    if (rt.hasStatus && obj.status !== undefined) {
      out = this.update(rt, version, ns, out.metadata.name, 'status', {...out, status: deepCopy(obj.status)}, opts).body
    }
    return out
  }
}
