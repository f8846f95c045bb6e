// An in-memory KubeClient for unit tests: the executor's contract with the API server without a server.
//
// What it models (kube-apiserver v1.32 behaviour the executor relies on):
// - objects stored once per group/kind/namespace/name, served at every served version of their group;
// - uid, creationTimestamp, a cluster-wide resourceVersion bumped by every write that changes the object (a
//   no-op patch or apply leaves it, as the real server does), generation bumped by changes outside
//   metadata and status; status is ignored by create/apply/patch of kinds with a status subresource;
// - the typed errors of src/kube/errors.ts with the server's Status bodies: 404 NotFound (object, namespace,
//   or an API that is not served), 409 AlreadyExists, 409 Conflict for a stale metadata.resourceVersion in a
//   patch or apply and for failed delete preconditions (uid/resourceVersion), 403 Forbidden for denied verbs,
//   400 for a malformed label selector, 403 for creating in a terminating namespace;
// - JSON merge patch (RFC 7386); server-side apply as mesh-migrate uses it: the config is merged into the
//   live object (maps merge, lists and scalars replace), fields this manager applied before and left out now
//   are removed, and without `force` a field another writer set to a different value is a 409 Conflict;
// - list with namespace, label selectors (equality and set-based) and metadata.name/metadata.namespace
//   field selectors; delete of an object with finalizers, or of a Namespace, only marks it deleting;
// - dryRun: everything is checked, nothing is stored.
// What it does not model: admission, schema validation and defaulting, list paging, watches, garbage
// collection, per-field managedFields of several appliers. Where a test needs those, it belongs in the
// cluster tier on a real kube-apiserver.
//
// Test hooks (not part of KubeClient): seed/edit/remove/setStatus act as other actors on the store
// (not logged as requests), `requests` logs what the client was asked, `failNext` injects a fault into
// the next matching request, `onRequest` runs code before a request is processed (a concurrent writer),
// `onWrite` after a stored write (a controller).
import {randomUUID} from 'node:crypto'

import {apiNotServed, type Attempt, KubeApiError, KubeConnectionError, type StatusBody} from '../../src/kube/errors.js'
import type {
  AccessAttributes,
  AccessReview,
  ApiResource,
  ApplyOptions,
  DeleteOptions,
  Discovery,
  KubeClient,
  ListOptions,
  WriteOptions,
} from '../../src/kube/types.js'
import type {KubeObject, ObjectRef} from '../../src/planner/model.js'
import {type LabelSelector, type LabelSelectorRequirement, selectorMatches} from '../../src/planner/namespace.js'
import {groupOf, refKey, versionOf} from '../../src/planner/refs.js'
import {byCodePoint} from '../../src/planner/order.js'

export type Verb = 'get' | 'list' | 'create' | 'apply' | 'patch' | 'delete'

export interface RequestRecord {
  verb: Verb
  kind: string
  apiVersion: string
  namespace?: string
  name?: string
  dryRun: boolean
  /** The body sent (create/apply/patch), as sent. */
  body?: unknown
  /** apply: force; delete: preconditions. */
  force?: boolean
  preconditions?: {uid?: string; resourceVersion?: string}
  /** Set once the server processed the request (an injected fault with afterWrite included). */
  processed?: boolean
}

export interface Fault {
  verb: Verb
  kind?: string
  name?: string
  /** HTTP status of the error (default 500); ignored with `connection`. */
  status?: number
  reason?: string
  message?: string
  /** The connection drops instead of an answer (KubeConnectionError). */
  connection?: boolean
  /** The request is processed (and stored) first, then the answer is lost / replaced by the error. */
  afterWrite?: boolean
  /** How many matching requests fail (default 1). */
  times?: number
}

/** A served resource of the in-memory API: versions[0] is the group's preferred version. */
export interface MemoryResource {
  group: string
  versions: string[]
  kind: string
  plural: string
  namespaced: boolean
  /** Has a status subresource: create/apply/patch of the main resource ignore `status`. */
  status?: boolean
  /** Tracks metadata.generation. */
  generation?: boolean
}

/** Kinds with a status subresource that track metadata.generation (workloads, Istio and Gateway API CRDs). */
const TRACKED = {status: true, generation: true}
const STATUS = {status: true}
const GENERATION = {generation: true}
const NONE = {}

function served(
  group: string,
  versions: string,
  kind: string,
  plural: string,
  namespaced: boolean,
  flags: {status?: boolean; generation?: boolean},
): MemoryResource {
  return {group, versions: versions.split(','), kind, plural, namespaced, ...flags}
}

/** What a cluster with Istio (ambient) and the Gateway API serves, as far as mesh-migrate reads or writes it. */
export const DEFAULT_RESOURCES: MemoryResource[] = [
  served('', 'v1', 'Namespace', 'namespaces', false, STATUS),
  served('', 'v1', 'Node', 'nodes', false, STATUS),
  served('', 'v1', 'Pod', 'pods', true, STATUS),
  served('', 'v1', 'Service', 'services', true, STATUS),
  served('', 'v1', 'ServiceAccount', 'serviceaccounts', true, NONE),
  served('', 'v1', 'ConfigMap', 'configmaps', true, NONE),
  served('', 'v1', 'Secret', 'secrets', true, NONE),
  served('apps', 'v1', 'Deployment', 'deployments', true, TRACKED),
  served('apps', 'v1', 'StatefulSet', 'statefulsets', true, TRACKED),
  served('apps', 'v1', 'DaemonSet', 'daemonsets', true, TRACKED),
  served('apps', 'v1', 'ReplicaSet', 'replicasets', true, TRACKED),
  served('batch', 'v1', 'Job', 'jobs', true, TRACKED),
  served('batch', 'v1', 'CronJob', 'cronjobs', true, TRACKED),
  served('coordination.k8s.io', 'v1', 'Lease', 'leases', true, NONE),
  served('networking.k8s.io', 'v1', 'NetworkPolicy', 'networkpolicies', true, GENERATION),
  served(
    'admissionregistration.k8s.io',
    'v1',
    'MutatingWebhookConfiguration',
    'mutatingwebhookconfigurations',
    false,
    GENERATION,
  ),
  served(
    'admissionregistration.k8s.io',
    'v1',
    'ValidatingWebhookConfiguration',
    'validatingwebhookconfigurations',
    false,
    GENERATION,
  ),
  served('security.istio.io', 'v1,v1beta1', 'AuthorizationPolicy', 'authorizationpolicies', true, TRACKED),
  served('security.istio.io', 'v1,v1beta1', 'PeerAuthentication', 'peerauthentications', true, TRACKED),
  served('security.istio.io', 'v1,v1beta1', 'RequestAuthentication', 'requestauthentications', true, TRACKED),
  served('networking.istio.io', 'v1,v1beta1,v1alpha3', 'VirtualService', 'virtualservices', true, TRACKED),
  served('networking.istio.io', 'v1,v1beta1,v1alpha3', 'DestinationRule', 'destinationrules', true, TRACKED),
  served('networking.istio.io', 'v1,v1beta1,v1alpha3', 'ServiceEntry', 'serviceentries', true, TRACKED),
  served('networking.istio.io', 'v1,v1beta1,v1alpha3', 'Sidecar', 'sidecars', true, TRACKED),
  served('networking.istio.io', 'v1,v1beta1,v1alpha3', 'Gateway', 'gateways', true, TRACKED),
  served('networking.istio.io', 'v1alpha3', 'EnvoyFilter', 'envoyfilters', true, TRACKED),
  served('telemetry.istio.io', 'v1,v1alpha1', 'Telemetry', 'telemetries', true, TRACKED),
  served('extensions.istio.io', 'v1alpha1', 'WasmPlugin', 'wasmplugins', true, TRACKED),
  served('gateway.networking.k8s.io', 'v1,v1beta1', 'Gateway', 'gateways', true, TRACKED),
  served('gateway.networking.k8s.io', 'v1,v1beta1', 'GatewayClass', 'gatewayclasses', false, TRACKED),
  served('gateway.networking.k8s.io', 'v1,v1beta1', 'HTTPRoute', 'httproutes', true, TRACKED),
  served('gateway.networking.k8s.io', 'v1', 'GRPCRoute', 'grpcroutes', true, TRACKED),
  served('gateway.networking.k8s.io', 'v1alpha2', 'TCPRoute', 'tcproutes', true, TRACKED),
  served('gateway.networking.k8s.io', 'v1alpha2', 'TLSRoute', 'tlsroutes', true, TRACKED),
]

interface Stored {
  obj: KubeObject
  /** The last configuration mesh-migrate applied (server-side apply), for field ownership. */
  applied?: Record<string, unknown>
}

type Json = Record<string, unknown>
const isMap = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v)
const copy = <T>(v: T): T => structuredClone(v)
/** Deep equality regardless of key order (JSON data only). */
function same(a: unknown, b: unknown): boolean {
  if (Array.isArray(a) || Array.isArray(b))
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((v, i) => same(v, b[i]))
  if (!isMap(a) || !isMap(b)) return a === b
  const keys = Object.keys(a).filter((k) => a[k] !== undefined)
  return keys.length === Object.keys(b).filter((k) => b[k] !== undefined).length && keys.every((k) => same(a[k], b[k]))
}

/** RFC 7386: maps merge key by key, null deletes, anything else (lists included) replaces. */
export function mergePatchOf(target: unknown, patch: unknown): unknown {
  if (!isMap(patch)) return copy(patch)
  const out: Json = isMap(target) ? {...target} : {}
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k]
    else out[k] = mergePatchOf(out[k], v)
  }
  return out
}

/** Leaf paths of a configuration (maps are descended, lists and scalars are leaves). */
function leafPaths(value: unknown, prefix: string[] = []): string[][] {
  if (!isMap(value) || (Object.keys(value).length === 0 && prefix.length > 0)) return [prefix]
  return Object.entries(value).flatMap(([k, v]) => leafPaths(v, [...prefix, k]))
}

function at(value: unknown, path: string[]): unknown {
  let v = value
  for (const k of path) v = isMap(v) ? v[k] : undefined
  return v
}

function removeAt(value: unknown, path: string[]): void {
  const parent = at(value, path.slice(0, -1))
  if (isMap(parent)) delete parent[path.at(-1)!]
}

/** Fields that identify the object or belong to the server: never part of an applied configuration. */
function configOf(obj: KubeObject): Json {
  const {apiVersion: _a, kind: _k, status: _s, ...rest} = copy(obj) as Json
  const meta = {...(rest.metadata as Json)}
  for (const k of ['name', 'namespace', 'uid', 'resourceVersion', 'generation', 'creationTimestamp', 'managedFields'])
    delete meta[k]
  return {...rest, metadata: meta}
}

/** `kubectl -l` syntax: a=b, a==b, a!=b, a, !a, a in (x,y), a notin (x,y), comma-separated. */
export function parseLabelSelector(text: string): LabelSelector | undefined {
  const requirements: LabelSelectorRequirement[] = []
  const parts = text.match(/[^,(]+(\([^)]*\))?/g) ?? []
  for (const raw of parts.map((p) => p.trim()).filter(Boolean)) {
    const set = /^(\S+)\s+(in|notin)\s+\(([^)]*)\)$/.exec(raw)
    const eq = /^([^=!\s]+)\s*(==|=|!=)\s*([^=!\s]*)$/.exec(raw)
    const exists = /^(!?)([A-Za-z0-9][-A-Za-z0-9_./]*)$/.exec(raw)
    if (set)
      requirements.push({
        key: set[1]!,
        operator: set[2] === 'in' ? 'In' : 'NotIn',
        values: set[3]!.split(',').map((v) => v.trim()),
      })
    else if (eq) requirements.push({key: eq[1]!, operator: eq[2] === '!=' ? 'NotIn' : 'In', values: [eq[3]!]})
    else if (exists) requirements.push({key: exists[2]!, operator: exists[1] ? 'DoesNotExist' : 'Exists'})
    else return undefined
  }
  return {matchExpressions: requirements}
}

export interface MemoryKubeOptions {
  context?: string
  server?: string
  version?: string
  /** Served resources (default DEFAULT_RESOURCES); leave a group out to model a CRD that is not installed. */
  resources?: MemoryResource[]
}

export class MemoryKube implements KubeClient {
  readonly context: string
  readonly server: string
  readonly requests: RequestRecord[] = []
  private readonly resources: MemoryResource[]
  private readonly version: string
  private readonly store = new Map<string, Stored>()
  private revision = 1000
  private faults: Fault[] = []
  private forbidden: {verb: string; resource: string; group: string; namespace?: string}[] = []
  private requestHooks: ((req: RequestRecord) => void | Promise<void>)[] = []
  private writeHooks: ((obj: KubeObject, req: RequestRecord) => void | Promise<void>)[] = []

  constructor(opts: MemoryKubeOptions = {}) {
    this.context = opts.context ?? 'memory'
    this.server = opts.server ?? 'https://memory.invalid'
    this.version = opts.version ?? 'v1.32.13'
    this.resources = opts.resources ?? DEFAULT_RESOURCES
  }

  // --- KubeClient ------------------------------------------------------------------------------

  async discover(): Promise<Discovery> {
    const groupVersions = [
      ...new Set(this.resources.flatMap((r) => r.versions.map((v) => (r.group ? `${r.group}/${v}` : v)))),
    ]
    return {
      groupVersions,
      resources: this.resources.flatMap((r) => r.versions.map((v, i) => this.apiResource(r, v, i === 0))),
    }
  }

  async resourceFor(apiVersion: string, kind: string): Promise<ApiResource | undefined> {
    const r = this.resources.find((x) => x.group === groupOf(apiVersion) && x.kind === kind)
    if (!r) return undefined
    const version = r.versions.includes(versionOf(apiVersion)) ? versionOf(apiVersion) : r.versions[0]!
    return this.apiResource(r, version, version === r.versions[0])
  }

  async list(resource: ApiResource, opts: ListOptions = {}): Promise<KubeObject[]> {
    const r = this.served(resource)
    const req = this.record('list', resource, opts.namespace ? {namespace: opts.namespace} : {})
    return this.handle(req, resource, () => {
      const labels = opts.labelSelector ? parseLabelSelector(opts.labelSelector) : undefined
      if (opts.labelSelector && !labels)
        throw this.error(
          400,
          'BadRequest',
          `unable to parse requirement: invalid label selector "${opts.labelSelector}"`,
          req,
          resource,
        )
      const fields = this.fieldFilter(opts.fieldSelector, req, resource)
      return [...this.store.values()]
        .map((s) => s.obj)
        .filter((o) => groupOf(o.apiVersion) === r.group && o.kind === r.kind)
        .filter((o) => !r.namespaced || !opts.namespace || o.metadata.namespace === opts.namespace)
        .filter((o) => !labels || selectorMatches(labels, o.metadata.labels ?? {}))
        .filter(fields)
        .sort((a, b) =>
          byCodePoint(
            `${a.metadata.namespace ?? ''}/${a.metadata.name}`,
            `${b.metadata.namespace ?? ''}/${b.metadata.name}`,
          ),
        )
        .map((o) => ({...copy(o), apiVersion: resource.apiVersion, kind: resource.kind}))
    })
  }

  async get(ref: ObjectRef): Promise<KubeObject | undefined> {
    const res = await this.requireResource(ref)
    const req = this.record('get', res, scope(ref))
    return this.handle(req, res, () => {
      const stored = this.store.get(refKey(ref))
      return stored ? {...copy(stored.obj), apiVersion: res.apiVersion} : undefined
    })
  }

  async create(obj: KubeObject, opts: WriteOptions = {}): Promise<KubeObject> {
    const res = await this.requireResource(obj)
    const req = this.record('create', res, {...scope(refOfObject(obj)), dryRun: opts.dryRun === true, body: copy(obj)})
    return this.handle(req, res, () => {
      if (this.store.has(refKey(refOfObject(obj))))
        throw this.error(
          409,
          'AlreadyExists',
          `${this.qualified(res)} "${obj.metadata.name}" already exists`,
          req,
          res,
          obj.metadata.name,
        )
      return this.persist(req, this.newObject(obj, res, req))
    })
  }

  async apply(obj: KubeObject, opts: ApplyOptions = {}): Promise<KubeObject> {
    const res = await this.requireResource(obj)
    const ref = refOfObject(obj)
    const req = this.record('apply', res, {
      ...scope(ref),
      dryRun: opts.dryRun === true,
      body: copy(obj),
      force: opts.force === true,
    })
    return this.handle(req, res, () => {
      const stored = this.store.get(refKey(ref))
      const config = configOf(obj)
      if (!stored) return this.persist(req, this.newObject(obj, res, req), config)
      this.checkResourceVersion(obj.metadata.resourceVersion, stored.obj, req, res)
      if (!opts.force) this.checkApplyConflicts(config, stored, req, res)
      const next = copy(stored.obj) as Json
      // Fields this manager applied before and no longer applies are removed (it owned them).
      const now = new Set(leafPaths(config).map((p) => p.join('\0')))
      for (const path of leafPaths(stored.applied ?? {})) if (!now.has(path.join('\0'))) removeAt(next, path)
      const merged = deepMerge(next, config) as KubeObject
      return this.update(req, res, stored, merged, config)
    })
  }

  async mergePatch(ref: ObjectRef, patch: Record<string, unknown>, opts: WriteOptions = {}): Promise<KubeObject> {
    const res = await this.requireResource(ref)
    const req = this.record('patch', res, {...scope(ref), dryRun: opts.dryRun === true, body: copy(patch)})
    return this.handle(req, res, () => {
      const stored = this.store.get(refKey(ref))
      if (!stored) throw this.notFound(req, res, ref.name)
      this.checkResourceVersion(
        (patch.metadata as Json | undefined)?.resourceVersion as string | undefined,
        stored.obj,
        req,
        res,
      )
      const patched = mergePatchOf(stored.obj, patch) as KubeObject
      return this.update(req, res, stored, patched, stored.applied)
    })
  }

  async delete(ref: ObjectRef, opts: DeleteOptions = {}): Promise<boolean> {
    const res = await this.requireResource(ref)
    const req = this.record('delete', res, {
      ...scope(ref),
      dryRun: opts.dryRun === true,
      ...(opts.preconditions ? {preconditions: opts.preconditions} : {}),
    })
    try {
      return await this.handle(req, res, () => {
        const stored = this.store.get(refKey(ref))
        if (!stored) throw this.notFound(req, res, ref.name)
        const {uid, resourceVersion} = opts.preconditions ?? {}
        if (uid !== undefined && uid !== stored.obj.metadata.uid) {
          throw this.error(
            409,
            'Conflict',
            `Precondition failed: UID in precondition: ${uid}, UID in object meta: ${stored.obj.metadata.uid}`,
            req,
            res,
            ref.name,
          )
        }
        if (resourceVersion !== undefined && resourceVersion !== stored.obj.metadata.resourceVersion) {
          throw this.error(
            409,
            'Conflict',
            `Precondition failed: ResourceVersion in precondition: ${resourceVersion}, ResourceVersion in object meta: ${stored.obj.metadata.resourceVersion}`,
            req,
            res,
            ref.name,
          )
        }
        if (req.dryRun) return true
        const finalizers = (stored.obj.metadata.finalizers as string[] | undefined) ?? []
        if (finalizers.length > 0 || ref.kind === 'Namespace') {
          // Deletion waits for the finalizers (a Namespace for the namespace controller): the object stays, marked.
          const marked = copy(stored.obj)
          marked.metadata.deletionTimestamp ??= new Date().toISOString()
          if (ref.kind === 'Namespace') marked.status = {...marked.status, phase: 'Terminating'}
          this.store.set(refKey(ref), {...stored, obj: this.stamp(marked, stored.obj, res)})
        } else {
          this.store.delete(refKey(ref))
        }
        return true
      })
    } catch (error) {
      if (error instanceof KubeApiError && error.status === 404) return false
      throw error
    }
  }

  async canI(attrs: AccessAttributes): Promise<AccessReview> {
    const denied = this.denies(attrs.verb, attrs.group, attrs.resource, attrs.namespace)
    return denied ? {allowed: false, reason: 'no RBAC policy matched'} : {allowed: true}
  }

  async serverVersion(): Promise<string | undefined> {
    return this.version
  }

  // --- test hooks: other actors, faults, permissions --------------------------------------------

  /** Store objects as they are (status included), as if they had been there before the test. */
  seed(...objects: KubeObject[]): this {
    for (const obj of objects) {
      const r = this.kindOf(obj)
      const o = copy(obj)
      o.metadata.uid ??= randomUUID()
      o.metadata.creationTimestamp ??= new Date().toISOString()
      o.metadata.resourceVersion = this.nextRevision()
      if (r.generation) o.metadata.generation ??= 1
      this.store.set(refKey(refOfObject(o)), {obj: o})
    }
    return this
  }

  /** Another actor changes the object (kubectl edit, a controller): a new resourceVersion, generation as the server sets it. */
  edit(ref: ObjectRef, mutate: (obj: KubeObject) => void): KubeObject {
    const stored = this.store.get(refKey(ref))
    if (!stored) throw new Error(`memory-kube: edit of missing ${refKey(ref)}`)
    const next = copy(stored.obj)
    mutate(next)
    const r = this.kindOf(next)
    next.metadata.resourceVersion = this.nextRevision()
    if (r.generation && !same(specOf(next), specOf(stored.obj)))
      next.metadata.generation = (stored.obj.metadata.generation ?? 0) + 1
    this.store.set(refKey(ref), {...stored, obj: next})
    return copy(next)
  }

  /** Another actor (a controller) writes the status subresource. */
  setStatus(ref: ObjectRef, status: Record<string, unknown>): KubeObject {
    return this.edit(ref, (o) => {
      o.status = copy(status)
    })
  }

  /** Another actor deletes the object outright. */
  remove(ref: ObjectRef): void {
    this.store.delete(refKey(ref))
  }

  /** The stored object (not logged as a request). */
  peek(ref: ObjectRef): KubeObject | undefined {
    const stored = this.store.get(refKey(ref))
    return stored ? copy(stored.obj) : undefined
  }

  /** Every stored object, optionally of one kind. */
  objects(kind?: string): KubeObject[] {
    return [...this.store.values()].map((s) => copy(s.obj)).filter((o) => !kind || o.kind === kind)
  }

  /** Write requests the server processed for real (not refused, not dry runs): what changed the cluster. */
  writes(): RequestRecord[] {
    return this.requests.filter((r) => r.verb !== 'get' && r.verb !== 'list' && !r.dryRun && r.processed === true)
  }

  failNext(fault: Fault): this {
    this.faults.push({...fault, times: fault.times ?? 1})
    return this
  }

  /** RBAC: this verb on this resource (plural, in `group`, optionally only in `namespace`) is Forbidden. */
  forbid(verb: string, group: string, resource: string, namespace?: string): this {
    this.forbidden.push({verb, group, resource, ...(namespace ? {namespace} : {})})
    return this
  }

  /** Runs before each request is processed (e.g. a concurrent writer); returns a function that removes it. */
  onRequest(hook: (req: RequestRecord) => void | Promise<void>): () => void {
    this.requestHooks.push(hook)
    return () => {
      this.requestHooks = this.requestHooks.filter((h) => h !== hook)
    }
  }

  /** Runs after each stored write (e.g. a controller reacting to it). */
  onWrite(hook: (obj: KubeObject, req: RequestRecord) => void | Promise<void>): () => void {
    this.writeHooks.push(hook)
    return () => {
      this.writeHooks = this.writeHooks.filter((h) => h !== hook)
    }
  }

  // --- internals -------------------------------------------------------------------------------

  private apiResource(r: MemoryResource, version: string, preferred: boolean): ApiResource {
    const apiVersion = r.group ? `${r.group}/${version}` : version
    const verbs = ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch']
    return {
      group: r.group,
      version,
      apiVersion,
      kind: r.kind,
      plural: r.plural,
      namespaced: r.namespaced,
      verbs,
      preferred,
    }
  }

  private served(res: Pick<ApiResource, 'group' | 'kind'>): MemoryResource {
    const r = this.resources.find((x) => x.group === res.group && x.kind === res.kind)
    if (!r) throw new Error(`memory-kube: ${res.kind} (${res.group}) is not served`)
    return r
  }

  private kindOf(obj: Pick<KubeObject, 'apiVersion' | 'kind'>): MemoryResource {
    return this.served({group: groupOf(obj.apiVersion), kind: obj.kind})
  }

  /** As HttpKubeClient: an API that is not served is a 404 before any request. */
  private async requireResource(ref: Pick<ObjectRef, 'apiVersion' | 'kind'>): Promise<ApiResource> {
    const res = await this.resourceFor(ref.apiVersion, ref.kind)
    if (!res) throw apiNotServed(ref, groupOf(ref.apiVersion), this.context)
    return res
  }

  /** Log a request as the server would see it: verb, resource, namespace/name, dryRun, body. */
  private record(verb: Verb, res: ApiResource, details: Partial<RequestRecord>): RequestRecord {
    const req: RequestRecord = {verb, kind: res.kind, apiVersion: res.apiVersion, dryRun: false, ...details}
    this.requests.push(req)
    return req
  }

  /** Hooks, RBAC, faults, then the operation; a fault with afterWrite lets the operation happen first. */
  private async handle<T>(req: RequestRecord, res: ApiResource, run: () => T | Promise<T>): Promise<T> {
    for (const hook of [...this.requestHooks]) await hook(req)
    const rbacVerb = req.verb === 'apply' ? 'patch' : req.verb
    if (this.denies(rbacVerb, res.group, res.plural, req.namespace)) {
      const where = req.namespace ? ` in the namespace "${req.namespace}"` : ' at the cluster scope'
      const target = req.name ? `${this.qualified(res)} "${req.name}"` : this.qualified(res)
      throw this.error(
        403,
        'Forbidden',
        `${target} is forbidden: User "memory-user" cannot ${rbacVerb} resource "${res.plural}" in API group "${res.group}"${where}`,
        req,
        res,
        req.name,
      )
    }
    const fault = this.takeFault(req)
    if (fault && !fault.afterWrite) throw this.faultError(fault, req, res)
    const result = await run()
    req.processed = true
    if (fault) throw this.faultError(fault, req, res)
    return result
  }

  private denies(verb: string, group: string, resource: string, namespace: string | undefined): boolean {
    return this.forbidden.some(
      (f) =>
        f.verb === verb && f.group === group && f.resource === resource && (!f.namespace || f.namespace === namespace),
    )
  }

  private takeFault(req: RequestRecord): Fault | undefined {
    const fault = this.faults.find(
      (f) => f.verb === req.verb && (!f.kind || f.kind === req.kind) && (!f.name || f.name === req.name),
    )
    if (!fault) return undefined
    fault.times = (fault.times ?? 1) - 1
    if (fault.times <= 0) this.faults = this.faults.filter((f) => f !== fault)
    return fault
  }

  private faultError(fault: Fault, req: RequestRecord, res: ApiResource): Error {
    if (fault.connection)
      return new KubeConnectionError(
        this.attempt(req, res),
        this.server,
        Object.assign(new Error('socket hang up'), {code: 'ECONNRESET'}),
      )
    const status = fault.status ?? 500
    return this.error(
      status,
      fault.reason ?? (status === 409 ? 'Conflict' : 'InternalError'),
      fault.message ?? `injected ${status}`,
      req,
      res,
      req.name,
    )
  }

  private attempt(req: RequestRecord, res: ApiResource): Attempt {
    const method = {get: 'GET', list: 'GET', create: 'POST', apply: 'PATCH', patch: 'PATCH', delete: 'DELETE'}[req.verb]
    const target = `${res.plural}${res.group ? `.${res.group}` : ''}${req.name ? `/${req.name}` : ''}`
    return {
      method,
      verb: req.verb,
      group: res.group,
      resource: res.plural,
      kind: res.kind,
      apiVersion: res.apiVersion,
      ...(req.namespace === undefined ? {} : {namespace: req.namespace}),
      what: `${req.verb} ${target}${req.namespace ? ` in namespace ${req.namespace}` : ''}`,
    }
  }

  private qualified(res: Pick<ApiResource, 'plural' | 'group'>): string {
    return res.group ? `${res.plural}.${res.group}` : res.plural
  }

  private error(
    status: number,
    reason: string,
    message: string,
    req: RequestRecord,
    res: ApiResource,
    name?: string,
  ): KubeApiError {
    const body: StatusBody = {
      kind: 'Status',
      status: 'Failure',
      code: status,
      reason,
      message,
      ...(name ? {details: {name, group: res.group, kind: res.plural}} : {}),
    }
    return new KubeApiError(status, body, this.attempt(req, res), this.context)
  }

  private notFound(req: RequestRecord, res: ApiResource, name: string): KubeApiError {
    return this.error(404, 'NotFound', `${this.qualified(res)} "${name}" not found`, req, res, name)
  }

  private checkResourceVersion(
    wanted: string | undefined,
    live: KubeObject,
    req: RequestRecord,
    res: ApiResource,
  ): void {
    if (wanted === undefined || wanted === live.metadata.resourceVersion) return
    throw this.error(
      409,
      'Conflict',
      `Operation cannot be fulfilled on ${this.qualified(res)} "${live.metadata.name}": the object has been modified; please apply your changes to the latest version and try again`,
      req,
      res,
      live.metadata.name,
    )
  }

  /** Without force, applying a value over one another writer set is a conflict (the field is theirs). */
  private checkApplyConflicts(config: Json, stored: Stored, req: RequestRecord, res: ApiResource): void {
    const ours = new Set(leafPaths(stored.applied ?? {}).map((p) => p.join('\0')))
    const conflicts = leafPaths(config).filter((p) => {
      const live = at(stored.obj, p)
      return live !== undefined && !same(live, at(config, p)) && !ours.has(p.join('\0'))
    })
    if (conflicts.length === 0) return
    const list = conflicts.map((p) => `.${p.join('.')}`).join(', ')
    throw this.error(
      409,
      'Conflict',
      `Apply failed with ${conflicts.length} conflict${conflicts.length === 1 ? '' : 's'}: conflict with another field manager using ${res.apiVersion}: ${list}`,
      req,
      res,
      stored.obj.metadata.name,
    )
  }

  private fieldFilter(selector: string | undefined, req: RequestRecord, res: ApiResource): (o: KubeObject) => boolean {
    if (!selector) return () => true
    const terms = selector.split(',').map((t) => /^(metadata\.name|metadata\.namespace)(==|=|!=)(.*)$/.exec(t.trim()))
    if (terms.some((t) => !t))
      throw this.error(
        400,
        'BadRequest',
        `"${selector}" is not a known field selector: only "metadata.name", "metadata.namespace"`,
        req,
        res,
      )
    return (o) =>
      terms.every((t) => {
        const value = t![1] === 'metadata.name' ? o.metadata.name : o.metadata.namespace
        return t![2] === '!=' ? value !== t![3] : value === t![3]
      })
  }

  /** A new object as the server stores it (create, or apply of an absent object). */
  private newObject(obj: KubeObject, res: ApiResource, req: RequestRecord): KubeObject {
    const r = this.served(res)
    if (!obj.metadata?.name)
      throw this.error(
        422,
        'Invalid',
        `${res.kind} is invalid: metadata.name: Required value: name or generateName is required`,
        req,
        res,
      )
    if (r.namespaced) {
      const namespace = obj.metadata.namespace
      const ns = namespace ? this.store.get(refKey({apiVersion: 'v1', kind: 'Namespace', name: namespace})) : undefined
      if (!ns)
        throw this.error(
          404,
          'NotFound',
          `namespaces "${namespace ?? ''}" not found`,
          req,
          {group: '', plural: 'namespaces'} as ApiResource,
          namespace,
        )
      if (ns.obj.metadata.deletionTimestamp) {
        throw this.error(
          403,
          'Forbidden',
          `${this.qualified(res)} "${obj.metadata.name}" is forbidden: unable to create new content in namespace ${namespace} because it is being terminated`,
          req,
          res,
          obj.metadata.name,
        )
      }
    }
    const o = copy(obj)
    if (r.status) delete o.status
    o.apiVersion = res.apiVersion
    o.metadata = {...o.metadata, uid: randomUUID(), creationTimestamp: new Date().toISOString()}
    delete o.metadata.resourceVersion
    if (r.generation) o.metadata.generation = 1
    if (res.kind === 'Namespace') o.status = {phase: 'Active'}
    return o
  }

  /** Store an object's new state (unless dry run); a write that changes nothing keeps its resourceVersion. */
  private update(
    req: RequestRecord,
    res: ApiResource,
    stored: Stored,
    next: KubeObject,
    applied: Json | undefined,
  ): Promise<KubeObject> | KubeObject {
    const r = this.served(res)
    const out = copy(next)
    // Identity, server-owned metadata and (for kinds with a status subresource) status stay as stored.
    out.apiVersion = res.apiVersion
    out.kind = stored.obj.kind
    for (const k of ['name', 'namespace', 'uid', 'creationTimestamp', 'generation', 'deletionTimestamp'] as const) {
      if (stored.obj.metadata[k] === undefined) delete out.metadata[k]
      else (out.metadata as Json)[k] = stored.obj.metadata[k]
    }
    if (r.status) {
      if (stored.obj.status === undefined) delete out.status
      else out.status = copy(stored.obj.status)
    }
    out.metadata.resourceVersion = stored.obj.metadata.resourceVersion
    if (same({...out, apiVersion: ''}, {...stored.obj, apiVersion: ''}) && same(applied, stored.applied)) return out
    return this.persist(req, this.stamp(out, stored.obj, res), applied)
  }

  /** New resourceVersion; generation bumped when something outside metadata and status changed. */
  private stamp(next: KubeObject, previous: KubeObject, res: ApiResource): KubeObject {
    next.metadata.resourceVersion = this.nextRevision()
    if (this.served(res).generation && !same(specOf(next), specOf(previous)))
      next.metadata.generation = (previous.metadata.generation ?? 0) + 1
    return next
  }

  private persist(req: RequestRecord, obj: KubeObject, applied?: Json): KubeObject | Promise<KubeObject> {
    if (req.dryRun) return copy(obj)
    obj.metadata.resourceVersion ??= this.nextRevision()
    const existing = this.store.get(refKey(refOfObject(obj)))
    this.store.set(refKey(refOfObject(obj)), {
      obj,
      ...((applied ?? existing?.applied) ? {applied: applied ?? existing?.applied} : {}),
    })
    if (this.writeHooks.length === 0) return copy(obj)
    return (async () => {
      for (const hook of [...this.writeHooks]) await hook(copy(obj), req)
      return copy(obj)
    })()
  }

  private nextRevision(): string {
    this.revision += 1
    return String(this.revision)
  }
}

function refOfObject(obj: KubeObject): ObjectRef {
  return {
    apiVersion: obj.apiVersion,
    kind: obj.kind,
    name: obj.metadata.name,
    ...(obj.metadata.namespace ? {namespace: obj.metadata.namespace} : {}),
  }
}

function scope(ref: ObjectRef): {namespace?: string; name: string} {
  return {...(ref.namespace ? {namespace: ref.namespace} : {}), name: ref.name}
}

/** Everything outside metadata and status: what metadata.generation tracks. */
function specOf(obj: KubeObject): unknown {
  const {metadata: _m, status: _s, apiVersion: _a, kind: _k, ...rest} = obj
  return rest
}

/** Server-side apply's merge of a configuration: maps merge, lists and scalars replace. */
function deepMerge(live: unknown, config: unknown): unknown {
  if (!isMap(config) || !isMap(live)) return copy(config)
  const out: Json = {...live}
  for (const [k, v] of Object.entries(config)) out[k] = k in out ? deepMerge(out[k], v) : copy(v)
  return out
}
