// The live-cluster source: discovery first, then one paginated LIST per kind (SPEC §3, §8).
// Kinds the cluster does not serve become `missingKinds` (findings), never crashes.
import {KubeApiError} from '../kube/errors.js'
import type {ApiResource, KubeClient} from '../kube/types.js'
import type {Finding, KubeObject, MissingKind, SourceSnapshot, SourceTarget} from '../planner/model.js'
import {groupOf} from '../planner/refs.js'
import {INVENTORY_KINDS, type InventoryKind, istioMinorFromImage} from './kinds.js'
import type {ObjectSource} from './source.js'

/** Run `fn` over `items` with at most `limit` in flight, keeping the order of results. */
export async function mapLimit<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length)
  let next = 0
  const worker = async () => {
    while (next < items.length) {
      const i = next++
      results[i] = await fn(items[i]!)
    }
  }
  await Promise.all(Array.from({length: Math.min(limit, items.length)}, worker))
  return results
}

// Enough parallelism to hide latency, little enough not to trip API priority & fairness.
const LIST_CONCURRENCY = 6

/** The served resource for a wanted kind: the wanted version if served, else the group's preferred one. */
export function pickResource(resources: ApiResource[], kind: Pick<InventoryKind, 'apiVersion' | 'kind'>): ApiResource | undefined {
  const group = groupOf(kind.apiVersion)
  const candidates = resources.filter((r) => r.group === group && r.kind === kind.kind && r.verbs.includes('list'))
  return candidates.find((r) => r.apiVersion === kind.apiVersion) ?? candidates.find((r) => r.preferred) ?? candidates[0]
}

interface ListOutcome {
  objects: KubeObject[]
  missing?: MissingKind
  findings: Finding[]
}

export class ClusterSource implements ObjectSource {
  constructor(readonly client: KubeClient, readonly target: SourceTarget) {}

  /** Connect and identify the cluster (kube-system's uid is the cluster identity plans record). */
  static async open(client: KubeClient): Promise<ClusterSource> {
    let clusterID = ''
    try {
      clusterID = (await client.get({apiVersion: 'v1', kind: 'Namespace', name: 'kube-system'}))?.metadata.uid ?? ''
    } catch (error) {
      // Without read access to kube-system the plan cannot be pinned to this cluster; apply will say so.
      if (!(error instanceof KubeApiError && error.status === 403)) throw error
    }
    return new ClusterSource(client, {context: client.context, server: client.server, clusterID})
  }

  private async listKind(kind: InventoryKind, resource: ApiResource | undefined, namespace: string, rootNamespace: string): Promise<ListOutcome> {
    if (!resource) return {objects: [], missing: {apiVersion: kind.apiVersion, kind: kind.kind, reason: 'not-installed'}, findings: []}
    const selector = kind.labelSelector ? {labelSelector: kind.labelSelector} : {}
    const forbidden = (): ListOutcome => ({objects: [], missing: {apiVersion: resource.apiVersion, kind: kind.kind, reason: 'forbidden'}, findings: []})
    try {
      switch (kind.scope) {
        case 'namespace':
          return {objects: await this.client.list(resource, {namespace, ...selector}), findings: []}
        case 'root':
          return {objects: await this.client.list(resource, {namespace: rootNamespace, ...selector}), findings: []}
        case 'cluster':
          return {objects: await this.client.list(resource, selector), findings: []}
        case 'mesh':
          try {
            return {objects: await this.client.list(resource, selector), findings: []}
          } catch (error) {
            if (!(error instanceof KubeApiError && error.status === 403)) throw error
            // No cluster-wide read: fall back to the two namespaces that matter most, and say what is missing.
            const namespaces = [...new Set([namespace, rootNamespace])]
            const lists = await Promise.all(namespaces.map((ns) => this.client.list(resource, {namespace: ns, ...selector})))
            return {
              objects: lists.flat(),
              findings: [{
                id: `partial-list/${resource.apiVersion}/${kind.kind}`,
                code: 'PartialList',
                severity: 'warning',
                message: `${kind.kind} could not be listed cluster-wide (forbidden); only namespaces ${namespaces.join(' and ')} were read, so config that other namespaces export to this one is not in the inventory.`,
                fix: `Grant cluster-wide list on ${resource.plural}.${resource.group} to see it.`,
              }],
            }
          }
      }
    } catch (error) {
      if (error instanceof KubeApiError && error.status === 403) return forbidden()
      if (error instanceof KubeApiError && error.status === 404) return {objects: [], missing: {apiVersion: resource.apiVersion, kind: kind.kind, reason: 'not-installed'}, findings: []}
      throw error
    }
  }

  async snapshot(namespace: string, opts: {rootNamespace: string}): Promise<SourceSnapshot> {
    const {resources} = await this.client.discover()
    const outcomes = await mapLimit(INVENTORY_KINDS, LIST_CONCURRENCY, (kind) => this.listKind(kind, pickResource(resources, kind), namespace, opts.rootNamespace))
    const objects = outcomes.flatMap((o) => o.objects)
    const missingKinds = outcomes.flatMap((o) => (o.missing ? [o.missing] : []))
    const findings = outcomes.flatMap((o) => o.findings)

    // Namespaces may be unlistable for namespace-scoped users: read the one that matters directly.
    if (missingKinds.some((m) => m.kind === 'Namespace' && m.reason === 'forbidden')) {
      // A 403 here is what it is (no read access), not "does not exist": the error names the verb and
      // resource and the `kubectl auth can-i` check, as preflight does.
      const ns = await this.client.get({apiVersion: 'v1', kind: 'Namespace', name: namespace})
      if (ns) objects.push({...ns, apiVersion: 'v1', kind: 'Namespace'})
    }
    if (!objects.some((o) => o.kind === 'Namespace' && o.metadata.name === namespace)) {
      findings.push({
        id: `namespace-not-found/${namespace}`,
        code: 'NamespaceNotFound',
        severity: 'error',
        message: `namespace "${namespace}" does not exist in context ${this.client.context}.`,
        fix: 'Check the namespace name and the --context.',
      })
    }

    if ('clusterID' in this.target && !this.target.clusterID) {
      findings.push({
        id: 'cluster-unidentified',
        code: 'ClusterUnidentified',
        severity: 'info',
        message: `namespace kube-system could not be read, so the plan records no cluster uid: apply and rollback will recognise the cluster by its API server URL (${this.target.server}) only.`,
        fix: 'Grant get on namespaces/kube-system to pin plans to the cluster itself.',
      })
    }

    const istioVersion = this.istioVersion(objects, namespace, opts.rootNamespace)
    return {
      namespace,
      rootNamespace: opts.rootNamespace,
      target: this.target,
      objects,
      missingKinds,
      findings,
      ...(istioVersion ? {istioVersion} : {}),
    }
  }

  /** The version of the istiod that serves this namespace: its revision's, else the default one. */
  private istioVersion(objects: KubeObject[], namespace: string, rootNamespace: string): string | undefined {
    const ns = objects.find((o) => o.kind === 'Namespace' && o.metadata.name === namespace)
    const revision = ns?.metadata.labels?.['istio.io/rev']
    const istiods = objects.filter((o) => o.kind === 'Deployment' && o.metadata.namespace === rootNamespace && o.metadata.labels?.app === 'istiod')
    const rev = (o: KubeObject) => o.metadata.labels?.['istio.io/rev'] ?? 'default'
    const chosen = istiods.find((o) => rev(o) === (revision ?? 'default')) ?? istiods.find((o) => rev(o) === 'default') ?? istiods[0]
    const containers: {name?: string; image?: string}[] = chosen?.spec?.template?.spec?.containers ?? []
    const image = (containers.find((c) => c.name === 'discovery') ?? containers[0])?.image
    return istioMinorFromImage(image)
  }
}
