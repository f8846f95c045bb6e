// The one small interface between mesh-migrate and a Kubernetes API server. Everything that talks
// to a cluster goes through KubeClient; tests and the executor depend on this, not on client-node.
import type {KubeObject, ObjectRef} from '../planner/model.js'

/** One served resource of the API (from discovery). */
export interface ApiResource {
  group: string
  version: string
  /** "v1" or "group/version" */
  apiVersion: string
  kind: string
  /** URL plural, e.g. "authorizationpolicies" */
  plural: string
  namespaced: boolean
  verbs: string[]
  /** Whether the group lists this version first (the server's preferred version for the group). */
  preferred: boolean
}

export interface Discovery {
  /** Every served group-version ("v1", "apps/v1", "networking.istio.io/v1", …). */
  groupVersions: string[]
  /** Every served resource, all versions. */
  resources: ApiResource[]
}

export interface ListOptions {
  namespace?: string
  labelSelector?: string
  fieldSelector?: string
}

export interface WriteOptions {
  /** Send dryRun=All: the server validates and admits, nothing is persisted. */
  dryRun?: boolean
}

export interface ApplyOptions extends WriteOptions {
  /** Take ownership of fields another manager owns (server-side apply force). */
  force?: boolean
}

export interface DeleteOptions extends WriteOptions {
  /** Only delete if the object still has this uid / resourceVersion. */
  preconditions?: {uid?: string; resourceVersion?: string}
}

export interface AccessAttributes {
  verb: string
  group: string
  resource: string
  namespace?: string
  name?: string
  subresource?: string
}

export interface AccessReview {
  allowed: boolean
  reason?: string
}

export interface KubeClient {
  /** kubeconfig context name and API server URL (for plans and messages). */
  readonly context: string
  readonly server: string
  /** Discovery: served group-versions and resources. Cached after the first call. */
  discover(): Promise<Discovery>
  /** The resource serving group+kind, at `apiVersion` when served, else the group's preferred version. */
  resourceFor(apiVersion: string, kind: string): Promise<ApiResource | undefined>
  /** Every object of a resource (all pages: limit + continue). */
  list(resource: ApiResource, opts?: ListOptions): Promise<KubeObject[]>
  /** One object, or undefined when it does not exist. */
  get(ref: ObjectRef): Promise<KubeObject | undefined>
  create(obj: KubeObject, opts?: WriteOptions): Promise<KubeObject>
  /** Server-side apply with field manager mesh-migrate. */
  apply(obj: KubeObject, opts?: ApplyOptions): Promise<KubeObject>
  /** JSON merge patch (RFC 7386): null removes a key. */
  mergePatch(ref: ObjectRef, patch: Record<string, unknown>, opts?: WriteOptions): Promise<KubeObject>
  /** Delete; resolves false when the object was already gone. */
  delete(ref: ObjectRef, opts?: DeleteOptions): Promise<boolean>
  /** SelfSubjectAccessReview for the current identity. */
  canI(attrs: AccessAttributes): Promise<AccessReview>
  /** Server version (/version gitVersion). */
  serverVersion(): Promise<string | undefined>
}
