// Preflight check module (SPEC §6 step 1, DOMAIN §4.4). Shared by the checks: their input, the memoised cluster reads, the diagnostic type.
import {KubeApiError} from '../../kube/errors.js'
import type {KubeClient, ListOptions} from '../../kube/types.js'
import {buildInventory} from '../../planner/inventory.js'
import type {Inventory, KubeObject, SourceSnapshot} from '../../planner/model.js'
import type {MigrationPlan} from '../../planner/plan-types.js'
import {ClusterSource} from '../../sources/cluster.js'
import type {PreflightDiagnostic} from '../types.js'
import {TLS_MODE_LABEL} from '../../planner/vocab.js'

export interface PreflightInput {
  client: KubeClient
  namespace: string
  rootNamespace: string
  /** The plan whose RBAC needs and blockers are checked (and whose waypoint decides severities). */
  plan?: MigrationPlan
  /** The live inventory, when the caller has just built one (saves reading the cluster again). */
  inventory?: Inventory
  /** The snapshot that inventory was built from: its lists are reused instead of listing again. */
  snapshot?: SourceSnapshot
}

export const WAYPOINT_CONTROLLER_NAME = 'istio.io/mesh-controller'

export const isForbidden = (error: unknown): boolean => error instanceof KubeApiError && error.status === 403

/** A read that may be forbidden: undefined instead of a 403. */
export async function soft<T>(read: Promise<T>): Promise<T | undefined> {
  try {
    return await read
  } catch (error) {
    if (isForbidden(error)) return undefined
    throw error
  }
}

/** The cluster reads the checks share, each done once. */
export class ClusterReads {
  private readonly memo = new Map<string, Promise<unknown>>()

  constructor(readonly input: PreflightInput) {
    if (input.snapshot) this.seed(input.snapshot)
  }

  /** What the cluster source already listed (same kinds, same scopes) needs no second LIST. */
  private seed(snapshot: SourceSnapshot): void {
    const missing = new Set(snapshot.missingKinds.map((m) => m.kind))
    const of = (kind: string, namespace?: string) =>
      snapshot.objects.filter((o) => o.kind === kind && (namespace === undefined || o.metadata.namespace === namespace))
    const seed = (key: string, kind: string, value: unknown) => {
      if (!missing.has(kind)) this.memo.set(key, Promise.resolve(value))
    }
    const ns = this.input.namespace
    seed(`list/v1/Pod/${ns}/`, 'Pod', of('Pod', ns))
    seed(`list/networking.k8s.io/v1/NetworkPolicy/${ns}/`, 'NetworkPolicy', of('NetworkPolicy', ns))
    seed(
      'list/admissionregistration.k8s.io/v1/MutatingWebhookConfiguration/*/',
      'MutatingWebhookConfiguration',
      of('MutatingWebhookConfiguration'),
    )
    seed(`list/v1/ConfigMap/${this.input.rootNamespace}/`, 'ConfigMap', of('ConfigMap', this.input.rootNamespace))
    seed(`list/v1/Service/${ns}/`, 'Service', of('Service', ns))
    const namespace = snapshot.objects.find((o) => o.kind === 'Namespace' && o.metadata.name === ns)
    if (namespace) this.memo.set(`get/v1/Namespace//${ns}`, Promise.resolve(namespace))
  }

  private once<T>(key: string, read: () => Promise<T>): Promise<T> {
    let p = this.memo.get(key) as Promise<T> | undefined
    if (!p) {
      p = read()
      this.memo.set(key, p)
    }
    return p
  }

  /** Objects of a kind; [] when the cluster does not serve it. */
  list(apiVersion: string, kind: string, opts: ListOptions = {}): Promise<KubeObject[]> {
    return this.once(`list/${apiVersion}/${kind}/${opts.namespace ?? '*'}/${opts.labelSelector ?? ''}`, async () => {
      const resource = await this.input.client.resourceFor(apiVersion, kind)
      return resource ? this.input.client.list(resource, opts) : []
    })
  }

  get(ref: {apiVersion: string; kind: string; namespace?: string; name: string}): Promise<KubeObject | undefined> {
    return this.once(`get/${ref.apiVersion}/${ref.kind}/${ref.namespace ?? ''}/${ref.name}`, () =>
      this.input.client.get(ref),
    )
  }

  namespaceObject(): Promise<KubeObject | undefined> {
    return this.get({apiVersion: 'v1', kind: 'Namespace', name: this.input.namespace})
  }

  rootDeployments(): Promise<KubeObject[]> {
    return this.list('apps/v1', 'Deployment', {namespace: this.input.rootNamespace})
  }

  rootConfigMaps(): Promise<KubeObject[]> {
    return this.list('v1', 'ConfigMap', {namespace: this.input.rootNamespace})
  }

  daemonSets(namespace: string): Promise<KubeObject[]> {
    return this.list('apps/v1', 'DaemonSet', {namespace})
  }

  allDaemonSets(): Promise<KubeObject[]> {
    return this.list('apps/v1', 'DaemonSet')
  }

  pods(namespace: string): Promise<KubeObject[]> {
    return this.list('v1', 'Pod', {namespace})
  }

  nodes(): Promise<KubeObject[]> {
    return this.list('v1', 'Node')
  }

  webhooks(): Promise<KubeObject[]> {
    return this.list('admissionregistration.k8s.io/v1', 'MutatingWebhookConfiguration')
  }

  /** Every sidecar pod of the mesh: one cluster-wide LIST with a label selector. */
  meshSidecarPods(): Promise<KubeObject[]> {
    return this.list('v1', 'Pod', {labelSelector: `${TLS_MODE_LABEL}=istio`})
  }

  networkPolicies(): Promise<KubeObject[]> {
    return this.list('networking.k8s.io/v1', 'NetworkPolicy', {namespace: this.input.namespace})
  }

  /** The live inventory of the namespace (the planner's blockers, from the cluster as it is now). */
  liveInventory(): Promise<Inventory> {
    return this.once('inventory', async () => {
      if (this.input.inventory) return this.input.inventory
      const source = await ClusterSource.open(this.input.client)
      const snapshot = await source.snapshot(this.input.namespace, {rootNamespace: this.input.rootNamespace})
      return buildInventory(snapshot, {waypointFor: this.input.plan?.spec.options.waypointFor ?? 'service'})
    })
  }
}

export interface CheckContext {
  input: PreflightInput
  reads: ClusterReads
}

export type Diag = Omit<PreflightDiagnostic, 'check'>

export function listNames(names: string[], max = 8): string {
  return names.length <= max ? names.join(', ') : `${names.slice(0, max).join(', ')} and ${names.length - max} more`
}
