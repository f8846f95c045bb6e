// The set of served resources (built-ins plus registered CRDs) and the discovery
// documents built from it (/api, /api/v1, /apis, /apis/<g>, /apis/<g>/<v>).
import {compareKubeAwareVersions} from '../meta/versions.js'
import {apiVersionOf, type JsonObject, type ResourceType, type ServedVersion} from '../types.js'
import {collectSkippedRules, type SkippedCelRule} from '../validation/cel.js'
import {BUILTIN_GROUP_ORDER, builtinResourceTypes} from './builtin-kinds.js'
import {resourceTypeFromCrd} from './crd.js'

export interface Resolved {
  rt: ResourceType
  version: ServedVersion
}

export class Registry {
  private readonly builtins: ResourceType[] = builtinResourceTypes()
  private readonly crds = new Map<string, ResourceType>()
  /** Rules that cannot be evaluated, by CRD name. */
  private readonly skipped = new Map<string, SkippedCelRule[]>()

  all(): ResourceType[] {
    return [...this.builtins, ...this.crds.values()]
  }

  /** Registers (or re-registers, on CRD update) the resource a CRD defines. */
  registerCrd(crd: JsonObject, opts: {fallback?: boolean} = {}): ResourceType {
    const rt = resourceTypeFromCrd(crd, opts)
    this.crds.set(rt.crdName!, rt)
    const skipped: SkippedCelRule[] = []
    for (const v of rt.versions) skipped.push(...collectSkippedRules(v.schema, rt.crdName!, v.name))
    if (skipped.length) this.skipped.set(rt.crdName!, skipped)
    else this.skipped.delete(rt.crdName!)
    return rt
  }

  unregisterCrd(name: string): ResourceType | undefined {
    const rt = this.crds.get(name)
    this.crds.delete(name)
    this.skipped.delete(name)
    return rt
  }

  skippedCelRules(): SkippedCelRule[] {
    return [...this.skipped.values()].flat()
  }

  resolve(group: string, version: string, plural: string): Resolved | undefined {
    for (const rt of this.all()) {
      if (rt.group !== group || rt.plural !== plural) continue
      const v = rt.versions.find((x) => x.name === version)
      if (v) return {rt, version: v}
    }
    return undefined
  }

  byKind(apiVersion: string, kind: string): Resolved | undefined {
    const slash = apiVersion.indexOf('/')
    const group = slash < 0 ? '' : apiVersion.slice(0, slash)
    const version = slash < 0 ? apiVersion : apiVersion.slice(slash + 1)
    for (const rt of this.all()) {
      if (rt.group !== group || rt.kind !== kind) continue
      const v = rt.versions.find((x) => x.name === version)
      if (v) return {rt, version: v}
    }
    return undefined
  }

  // -------------------------------------------------------------------------------------
  // Discovery

  private groupVersions(group: string): string[] {
    const versions = new Set<string>()
    for (const rt of this.all()) if (rt.group === group) for (const v of rt.versions) versions.add(v.name)
    return [...versions].sort(compareKubeAwareVersions)
  }

  private groups(): string[] {
    const groups = new Set(
      this.all()
        .map((rt) => rt.group)
        .filter((g) => g !== ''),
    )
    const builtin = BUILTIN_GROUP_ORDER.filter((g) => groups.has(g))
    const rest = [...groups].filter((g) => !BUILTIN_GROUP_ORDER.includes(g)).sort()
    return [...builtin, ...rest]
  }

  apiVersions(serverAddress: string): JsonObject {
    return {
      kind: 'APIVersions',
      versions: ['v1'],
      serverAddressByClientCIDRs: [{clientCIDR: '0.0.0.0/0', serverAddress}],
    }
  }

  apiGroup(group: string): JsonObject | undefined {
    const versions = this.groupVersions(group)
    if (!versions.length) return undefined
    const gv = versions.map((v) => ({groupVersion: apiVersionOf(group, v), version: v}))
    return {kind: 'APIGroup', apiVersion: 'v1', name: group, versions: gv, preferredVersion: gv[0]}
  }

  apiGroupList(): JsonObject {
    const groups = this.groups().map((g) => {
      const doc = this.apiGroup(g)!
      return {name: doc.name, versions: doc.versions, preferredVersion: doc.preferredVersion}
    })
    return {kind: 'APIGroupList', apiVersion: 'v1', groups}
  }

  /** APIResourceList for one group-version, or undefined when nothing serves it. */
  apiResourceList(group: string, version: string): JsonObject | undefined {
    const resources: JsonObject[] = []
    for (const rt of this.all()) {
      if (rt.group !== group || !rt.versions.some((v) => v.name === version)) continue
      const entry: JsonObject = {
        name: rt.plural,
        singularName: rt.singular,
        namespaced: rt.namespaced,
        kind: rt.kind,
        verbs: rt.verbs,
      }
      if (rt.shortNames.length) entry.shortNames = rt.shortNames
      if (rt.categories.length) entry.categories = rt.categories
      resources.push(entry)
      if (rt.hasStatus)
        resources.push({
          name: `${rt.plural}/status`,
          singularName: '',
          namespaced: rt.namespaced,
          kind: rt.kind,
          verbs: ['get', 'patch', 'update'],
        })
    }
    if (!resources.length) return undefined
    const list: JsonObject = {kind: 'APIResourceList', groupVersion: apiVersionOf(group, version), resources}
    // /api/v1 has no apiVersion field on a real server; group versions do.
    if (group !== '') return {kind: 'APIResourceList', apiVersion: 'v1', groupVersion: list.groupVersion, resources}
    return list
  }
}
