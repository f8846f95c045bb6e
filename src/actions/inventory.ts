// `inventory NAMESPACE` as an action (issue 23 §2): the namespace read from an object source the command opens
// (manifests, or the context's cluster) and every object that affects its data plane classified. The inventory
// command parses flags, opens the source, runs it and renders the document.
import {type InventoryDocument, typed} from '../cli/contract.js'
import {buildInventory} from '../planner/inventory.js'
import type {WaypointFor} from '../planner/waypoint.js'
import {requireNamespace} from '../sources/open.js'
import type {ObjectSource} from '../sources/source.js'

export interface InventoryRequest {
  namespace: string
  /** The Istio root namespace whose mesh-wide policies apply to every namespace. */
  rootNamespace: string
  waypointFor: WaypointFor
  /** --istio-version, when the cluster's cannot be read. */
  istioVersion?: string
}

/** The namespace's objects with their verdicts; a namespace the source does not have is an error (not "nothing"). */
export async function namespaceInventory(source: ObjectSource, request: InventoryRequest): Promise<InventoryDocument> {
  const snapshot = requireNamespace(await source.snapshot(request.namespace, {rootNamespace: request.rootNamespace}))
  return typed(
    'Inventory',
    buildInventory(snapshot, {
      waypointFor: request.waypointFor,
      ...(request.istioVersion ? {istioVersion: request.istioVersion} : {}),
    }),
  )
}
