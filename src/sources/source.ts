import type {SourceSnapshot, SourceTarget} from '../planner/model.js'

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
}
