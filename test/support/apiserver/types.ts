// Types shared by the test API server's modules.
import type {StructuralSchema} from './validation/schema.js'

/** A JSON object as stored and served. */
export type JsonObject = Record<string, any>

/** How metadata.generation behaves for a kind. */
export type GenerationPolicy =
  /** No generation field (Pod in 1.32, ConfigMap, Namespace, Service, ...). */
  | 'none'
  /** Set to 1 on create; bumped when anything but metadata and status changes (CRs, Deployments, ...). */
  | 'spec'

/** One served version of a resource (a CRD can serve several; built-ins serve one here). */
export interface ServedVersion {
  name: string
  /** OpenAPI schema with k8s extensions; undefined = no validation, no pruning. */
  schema?: StructuralSchema
  /** Extra field selectors (CRD selectableFields). */
  selectableFields?: string[]
  deprecated?: boolean
  deprecationWarning?: string
}

/** Everything the server knows about one API resource (one plural in one group). */
export interface ResourceType {
  group: string
  kind: string
  listKind: string
  plural: string
  singular: string
  namespaced: boolean
  shortNames: string[]
  categories: string[]
  /** Served versions in kube-aware priority order. */
  versions: ServedVersion[]
  /** The version objects are stored at (apiVersion of stored objects). */
  storageVersion: string
  /** Verbs listed in discovery for the main resource. */
  verbs: string[]
  hasStatus: boolean
  generation: GenerationPolicy
  /** Custom resource (from a CRD) vs built-in kind: decides patch types and response shapes. */
  custom: boolean
  /** DELETE answers with the object instead of a Status (ReturnDeletedObject in the real registry). */
  returnDeletedObject: boolean
  /** Extra field selectors beyond metadata.name/metadata.namespace, with how to read them. */
  fieldSelectors?: Record<string, (obj: JsonObject) => string>
  /** metadata.name rule. */
  nameRule: 'dns1123-subdomain' | 'dns1123-label' | 'dns1035-label' | 'path-segment'
  /** Set for resources that exist only as a create endpoint (SelfSubjectAccessReview). */
  virtual?: boolean
  /** Name of the CRD that registered this resource. */
  crdName?: string
  /** True when the schema came from the small built-in fallback table (no validation). */
  fallback?: boolean
  /**
   * Built-in kinds: list/map merge semantics (patchMergeKey, list types) for strategic merge
   * patch and server-side apply. Custom resources use their validation schema instead.
   */
  mergeSchema?: StructuralSchema
  /** Built-in kinds: defaulting, create-time preparation and light validation. */
  hooks?: KindHooks
}

export interface KindHooks {
  /** Fills defaults the real API server's defaulting functions set (in place). */
  applyDefaults?(obj: JsonObject): void
  /** What the registry's PrepareForCreate does beyond the generic parts (in place). */
  prepareForCreate?(obj: JsonObject, env: {allocateClusterIP(): string}): void
  /** Validation beyond ObjectMeta (light: required fields and the checks the tool can trip). */
  validate?(obj: JsonObject, old?: JsonObject): import('./errors.js').FieldError[]
}

export function apiVersionOf(group: string, version: string): string {
  return group ? `${group}/${version}` : version
}

export function resourceKey(group: string, plural: string): string {
  return `${group}/${plural}`
}

export interface ObjectRefLike {
  apiVersion: string
  kind: string
  namespace?: string
  name: string
}
