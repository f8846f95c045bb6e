import type {KubeObject, SourceSnapshot, SourceTarget} from '../planner/model.js'

/**
 * Where objects come from: manifest files (`--manifests`) or a live cluster. Both hand the planner the
 * same `SourceSnapshot`, so the inventory does not depend on the source (SPEC §3).
 */
export interface ObjectSource {
  readonly target: SourceTarget
  /**
   * Every object that may affect `namespace`: its own, the root namespace's and other namespaces'
   * (the planner decides relevance), plus the Namespace objects seen.
   */
  snapshot(namespace: string, opts: {rootNamespace: string}): Promise<SourceSnapshot>
  /** Fleet planning: one read for many namespaces (issue 11 §4). */
  fleet(opts: {rootNamespace: string}): Promise<FleetRead>
}

/** What a fleet read gives: the Namespace objects seen, and each namespace's snapshot cut from the one read. */
export interface FleetRead {
  namespaces: KubeObject[]
  snapshot(namespace: string): Promise<SourceSnapshot>
  /**
   * Every object of the snapshots taken so far, each once, when the read has them so (a cluster read: from its lists).
   * Each snapshot of a fleet holds the mesh-wide kinds of every namespace: found from the snapshots, each of those
   * objects is looked up once per namespace.
   */
  objects?: () => KubeObject[]
}
