// CustomResourceDefinitions: turning one into a served resource, the checks the real
// server's CRD validation makes that matter here, and loading CRD files.
import {existsSync, readdirSync, readFileSync} from 'node:fs'
import path from 'node:path'
import {parseAllDocuments} from 'yaml'
import {childPath, fieldError, type FieldError} from '../errors.js'
import {compareKubeAwareVersions} from '../meta/versions.js'
import type {JsonObject, ResourceType, ServedVersion} from '../types.js'
import type {StructuralSchema} from '../validation/schema.js'

const CRD_VERBS = ['delete', 'deletecollection', 'get', 'list', 'patch', 'create', 'update', 'watch']

export function resourceTypeFromCrd(crd: JsonObject, opts: {fallback?: boolean} = {}): ResourceType {
  const spec = crd.spec
  const names = spec.names
  const versions: ServedVersion[] = (spec.versions as JsonObject[])
    .filter((v) => v.served)
    .map((v) => {
      const sv: ServedVersion = {name: v.name}
      const schema = v.schema?.openAPIV3Schema as StructuralSchema | undefined
      if (schema && !opts.fallback) sv.schema = schema
      const selectable = (v.selectableFields ?? []) as {jsonPath: string}[]
      if (selectable.length) sv.selectableFields = selectable.map((f) => f.jsonPath.replace(/^\./, ''))
      if (v.deprecated) sv.deprecated = true
      if (v.deprecationWarning) sv.deprecationWarning = v.deprecationWarning
      return sv
    })
    .sort((a, b) => compareKubeAwareVersions(a.name, b.name))
  const storage = (spec.versions as JsonObject[]).find((v) => v.storage)
  const hasStatus = (spec.versions as JsonObject[]).some((v) => v.served && v.subresources?.status !== undefined)
  const rt: ResourceType = {
    group: spec.group,
    kind: names.kind,
    listKind: names.listKind ?? `${names.kind}List`,
    plural: names.plural,
    singular: names.singular ?? String(names.kind).toLowerCase(),
    namespaced: spec.scope !== 'Cluster',
    shortNames: names.shortNames ?? [],
    categories: names.categories ?? [],
    versions,
    storageVersion: storage?.name ?? versions[0]?.name ?? 'v1',
    verbs: CRD_VERBS,
    hasStatus,
    generation: 'spec',
    custom: true,
    returnDeletedObject: false,
    nameRule: 'dns1123-subdomain',
    crdName: crd.metadata?.name ?? `${names.plural}.${spec.group}`,
  }
  if (opts.fallback) rt.fallback = true
  const selectable = new Set(versions.flatMap((v) => v.selectableFields ?? []))
  if (selectable.size) {
    rt.fieldSelectors = {}
    for (const f of selectable) rt.fieldSelectors[f] = (o) => String(readPath(o, f) ?? '')
  }
  return rt
}

function readPath(o: JsonObject, dotted: string): unknown {
  let cur: unknown = o
  for (const part of dotted.split('.')) {
    if (cur === null || typeof cur !== 'object') return undefined
    cur = (cur as JsonObject)[part]
  }
  return cur
}

/** The subset of apiextensions validation a test server needs to refuse nonsense CRDs. */
export function validateCrd(crd: JsonObject): FieldError[] {
  const errs: FieldError[] = []
  const spec = crd.spec ?? {}
  const names = spec.names ?? {}
  if (!spec.group) errs.push(fieldError.required('spec.group', ''))
  else if (!String(spec.group).includes('.'))
    errs.push(fieldError.invalid('spec.group', spec.group, 'should be a domain with at least one dot'))
  if (!names.plural) errs.push(fieldError.required('spec.names.plural', ''))
  if (!names.kind) errs.push(fieldError.required('spec.names.kind', ''))
  if (spec.scope !== 'Namespaced' && spec.scope !== 'Cluster')
    errs.push(fieldError.notSupported('spec.scope', spec.scope ?? '', ['Cluster', 'Namespaced']))
  if (names.plural && spec.group && crd.metadata?.name !== `${names.plural}.${spec.group}`)
    errs.push(
      fieldError.invalid(
        childPath('metadata', 'name'),
        crd.metadata?.name ?? '',
        'must be spec.names.plural+"."+spec.group',
      ),
    )
  const versions = spec.versions
  if (!Array.isArray(versions) || versions.length === 0)
    errs.push(
      fieldError.invalid('spec.versions', versions ?? null, 'must have exactly one version marked as storage version'),
    )
  else {
    const storage = versions.filter((v: JsonObject) => v.storage)
    if (storage.length !== 1)
      errs.push(
        fieldError.invalid('spec.versions', versions, 'must have exactly one version marked as storage version'),
      )
    versions.forEach((v: JsonObject, i: number) => {
      if (!v.name) errs.push(fieldError.required(`spec.versions[${i}].name`, ''))
      if (!v.schema?.openAPIV3Schema)
        errs.push(fieldError.required(`spec.versions[${i}].schema.openAPIV3Schema`, 'schemas are required'))
    })
  }
  return errs
}

/** Reads every CustomResourceDefinition document from the given YAML files. */
export function loadCrdFiles(files: string[]): JsonObject[] {
  const out: JsonObject[] = []
  for (const file of files) {
    for (const doc of parseAllDocuments(readFileSync(file, 'utf8'))) {
      const o = doc.toJS() as JsonObject | null
      if (o?.kind === 'CustomResourceDefinition') out.push(o)
    }
  }
  return out
}

/**
 * The default upstream set: the Istio CRDs (current) and the Gateway API standard channel,
 * without the ValidatingAdmissionPolicy file that sits next to them.
 */
export function upstreamCrdFiles(crdsDir: string): string[] {
  const files: string[] = []
  const istio = path.join(crdsDir, 'istio-crds.yaml')
  if (existsSync(istio)) files.push(istio)
  const gw = path.join(crdsDir, 'gateway-api-standard')
  if (existsSync(gw)) {
    for (const f of readdirSync(gw).sort()) {
      if (f.startsWith('gateway.networking.k8s.io_') && f.endsWith('.yaml') && !f.includes('vap_'))
        files.push(path.join(gw, f))
    }
  }
  return files
}

/** What the CRD's status says once the real server has accepted and established it. */
export function establishedStatus(crd: JsonObject, now: string): JsonObject {
  const names = crd.spec.names
  const storage = (crd.spec.versions as JsonObject[]).find((v) => v.storage)?.name
  const previous: string[] = crd.status?.storedVersions ?? []
  return {
    acceptedNames: {
      kind: names.kind,
      listKind: names.listKind ?? `${names.kind}List`,
      plural: names.plural,
      singular: names.singular ?? String(names.kind).toLowerCase(),
      ...(names.shortNames ? {shortNames: names.shortNames} : {}),
      ...(names.categories ? {categories: names.categories} : {}),
    },
    conditions: [
      {
        type: 'NamesAccepted',
        status: 'True',
        lastTransitionTime: now,
        reason: 'NoConflicts',
        message: 'no conflicts found',
      },
      {
        type: 'Established',
        status: 'True',
        lastTransitionTime: now,
        reason: 'InitialNamesAccepted',
        message: 'the initial names have been accepted',
      },
    ],
    storedVersions: storage && !previous.includes(storage) ? [...previous, storage] : previous,
  }
}
