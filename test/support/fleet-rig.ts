// A fleet on the in-memory client for unit tests of apply --fleet / rollback --fleet (issue 22): plans/fleet.yaml and
// one plan per namespace in a fresh directory, planned as `mesh-migrate plan -A --manifests DIR` plans them, and a
// MemoryKube holding the manifests with the few controllers a whole migration needs to verify: the Deployment
// controller and kubelet (a rollout restart replaces the pods, the injection webhook decides their sidecar, istio-cni
// captures the ones an ambient namespace enrolls), and istiod (a waypoint Gateway gets Programmed, an address and a
// running Deployment; a Service labelled for a waypoint gets its istio.io/WaypointBound condition).
import {mkdir, mkdtemp, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import {loadFleetFile} from '../../src/actions/fleet-apply.js'
import {planFleet} from '../../src/plan/fleet.js'
import {renderFleetFile} from '../../src/plan/fleet-file.js'
import {renderPlanFile, specDigest} from '../../src/plan/planfile.js'
import type {KubeObject, ObjectRef} from '../../src/planner/model.js'
import {NO_INJECTION_WEBHOOKS} from '../../src/planner/namespace.js'
import type {MigrationPlan, PlanOptions} from '../../src/planner/plan-types.js'
import {selectNamespaces} from '../../src/plan/fleet.js'
import {ManifestSource, loadManifestFiles} from '../../src/sources/manifests.js'
import {ambientEnrolled, injectSidecar, REDIRECTION_ANNOTATION, serviceWaypointBinding} from './control-plane/index.js'
import {injectorSettings} from './control-plane/istio/settings.js'
import {MemoryKube} from './memory-kube.js'

/** The plan options the fleet tests plan with (plan's defaults). */
export const PLAN_OPTIONS: PlanOptions = {
  rootNamespace: 'istio-system',
  waypointName: 'waypoint',
  waypointFor: 'service',
  routes: 'virtualservice',
  optedOut: 'keep-out',
  denyWaypointBypass: false,
}

export interface FleetRig {
  dir: string
  /** plans/fleet.yaml (absolute). */
  fleetFile: string
  planFile: (namespace: string) => string
  kube: MemoryKube
  plans: MigrationPlan[]
  waves: string[][]
  manifests: KubeObject[]
}

/** The fleet planned from `paths` (manifest files or folders) in a fresh plans/ folder, on a cluster holding them. */
export async function fleetRig(paths: string[], acceptLost: string[] = []): Promise<FleetRig> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'mesh-migrate-fleet-'))
  const plansDir = path.join(dir, 'plans')
  await mkdir(plansDir)
  const source = new ManifestSource(paths)
  const read = await source.fleet({rootNamespace: 'istio-system'})
  const {selected} = selectNamespaces(read.namespaces, {allNamespaces: true}, 'istio-system')
  const snapshots = await Promise.all(selected.map((ns) => read.snapshot(ns)))
  const {fleet, plans} = planFleet({
    snapshots,
    selection: {allNamespaces: true},
    options: {...PLAN_OPTIONS, acceptLost},
    inventory: {waypointFor: 'service'},
    generator: 'mesh-migrate/test',
    planPath: (ns) => `plans/${ns}.yaml`,
    fleetPath: 'plans/fleet.yaml',
    keepEmpty: false,
  })
  // The preflight step checks an installed ambient Istio, which the in-memory server does not model: it is recorded
  // as passed (as test/unit/action-flows.test.ts does), and each plan starts at its first step after it.
  for (const plan of plans) {
    const passed = {id: 'preflight', phase: 'Applied' as const, at: '2026-12-04T11:00:00.000Z', by: 'alice'}
    const text = renderPlanFile({...plan, status: {specDigest: specDigest(plan), steps: [passed]}})
    await writeFile(path.join(plansDir, `${plan.metadata.namespace}.yaml`), text)
  }
  const fleetFile = path.join(plansDir, 'fleet.yaml')
  await writeFile(fleetFile, renderFleetFile(fleet))
  const {objects: manifests} = await loadManifestFiles(paths)
  const kube = new MemoryKube().seed(...manifests)
  simulateControllers(kube)
  for (const d of kube.objects('Deployment')) replacePods(kube, d)
  return {
    dir,
    fleetFile,
    planFile: (ns) => path.join(plansDir, `${ns}.yaml`),
    kube,
    plans,
    waves: fleet.spec.waves.map((w) => w.namespaces),
    manifests,
  }
}

const refOf = (o: KubeObject): ObjectRef => ({
  apiVersion: o.apiVersion,
  kind: o.kind,
  ...(o.metadata.namespace ? {namespace: o.metadata.namespace} : {}),
  name: o.metadata.name,
})

const namespaceOf = (kube: MemoryKube, name: string | undefined) =>
  name === undefined ? undefined : kube.peek({apiVersion: 'v1', kind: 'Namespace', name})

/** The Deployment controller and kubelet: the pods of `deployment` replaced by one of its current template. */
function replacePods(kube: MemoryKube, deployment: KubeObject): void {
  const ns = deployment.metadata.namespace!
  for (const pod of kube.objects('Pod'))
    if (pod.metadata.namespace === ns && pod.metadata.ownerReferences?.[0]?.name === deployment.metadata.name)
      kube.remove(refOf(pod))
  const template = deployment.spec?.template ?? {}
  const generation = deployment.metadata.generation ?? 1
  const created: KubeObject = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: `${deployment.metadata.name}-${generation}`,
      namespace: ns,
      labels: {...template.metadata?.labels},
      annotations: {...template.metadata?.annotations},
      ownerReferences: [
        {
          apiVersion: 'apps/v1',
          kind: 'Deployment',
          name: deployment.metadata.name,
          uid: deployment.metadata.uid!,
          controller: true,
        },
      ],
    },
    spec: structuredClone(template.spec ?? {containers: []}),
    status: {phase: 'Running'},
  }
  const namespace = namespaceOf(kube, ns)
  const {pod} = injectSidecar(created, {
    namespace,
    webhooks: NO_INJECTION_WEBHOOKS,
    settings: (revision) => injectorSettings(revision, [], [], 'istio-system'),
    nodes: [],
  })
  kube.seed(pod)
  capture(kube, ns)
  const replicas = deployment.spec?.replicas ?? 1
  kube.setStatus(refOf(deployment), {
    observedGeneration: generation,
    replicas,
    updatedReplicas: replicas,
    readyReplicas: replicas,
    availableReplicas: replicas,
  })
}

/** istio-cni: the pods of `ns` ztunnel captures carry ambient.istio.io/redirection=enabled, the others none. */
function capture(kube: MemoryKube, ns: string): void {
  const namespace = namespaceOf(kube, ns)
  for (const pod of kube.objects('Pod')) {
    if (pod.metadata.namespace !== ns) continue
    const enrolled = ambientEnrolled(pod, namespace, []).enrolled
    if (enrolled === (pod.metadata.annotations?.[REDIRECTION_ANNOTATION] === 'enabled')) continue
    kube.edit(refOf(pod), (p) => {
      p.metadata.annotations = {...p.metadata.annotations}
      if (enrolled) p.metadata.annotations[REDIRECTION_ANNOTATION] = 'enabled'
      else delete p.metadata.annotations[REDIRECTION_ANNOTATION]
    })
  }
}

/** istiod: the WaypointBound condition of every Service of `ns`, as the waypoint it is labelled for allows. */
function bindServices(kube: MemoryKube, ns: string): void {
  const lookup = {
    gateway: (namespace: string, name: string) =>
      kube.peek({apiVersion: 'gateway.networking.k8s.io/v1', kind: 'Gateway', namespace, name}),
    gatewayClass: () => undefined,
    namespace: (name: string) => namespaceOf(kube, name),
  }
  for (const svc of kube.objects('Service')) {
    if (svc.metadata.namespace !== ns) continue
    const binding = serviceWaypointBinding(svc, namespaceOf(kube, ns), lookup)
    const others = ((svc.status?.conditions ?? []) as {type: string}[]).filter(
      (c) => c.type !== 'istio.io/WaypointBound',
    )
    const conditions = binding ? [...others, {type: 'istio.io/WaypointBound', ...binding.condition}] : others
    if (JSON.stringify(conditions) !== JSON.stringify(svc.status?.conditions ?? []))
      kube.setStatus(refOf(svc), {...svc.status, conditions})
  }
}

/** istiod programs a waypoint Gateway: Programmed, an address, its proxy Deployment running (gone with it). */
function programWaypoint(kube: MemoryKube, gateway: KubeObject, deleted: boolean): void {
  const ns = gateway.metadata.namespace!
  const deployment: ObjectRef = {apiVersion: 'apps/v1', kind: 'Deployment', namespace: ns, name: gateway.metadata.name}
  if (deleted) {
    if (kube.peek(deployment)) kube.remove(deployment)
    return
  }
  if (gateway.status?.addresses) return
  kube.setStatus(refOf(gateway), {
    addresses: [{type: 'IPAddress', value: '10.96.0.10'}],
    conditions: [{type: 'Programmed', status: 'True', reason: 'Programmed'}],
  })
  if (!kube.peek(deployment))
    kube.seed({
      ...deployment,
      metadata: {
        name: gateway.metadata.name,
        namespace: ns,
        labels: {'gateway.istio.io/managed': 'istio.io-mesh-controller'},
      },
      spec: {replicas: 1},
      status: {observedGeneration: 1, availableReplicas: 1},
    })
}

function simulateControllers(kube: MemoryKube): void {
  kube.onWrite((obj, req) => {
    if (req.dryRun) return
    const deleted = req.verb === 'delete'
    const ns = obj.kind === 'Namespace' ? obj.metadata.name : obj.metadata.namespace
    if (obj.kind === 'Gateway') programWaypoint(kube, kube.peek(refOf(obj)) ?? obj, deleted)
    if (obj.kind === 'Deployment' && !deleted) {
      const now = kube.peek(refOf(obj))
      if (now && (now.status?.observedGeneration ?? 0) < (now.metadata.generation ?? 1)) replacePods(kube, now)
    }
    if (ns === undefined) return
    capture(kube, ns)
    bindServices(kube, ns)
  })
}

/** What status --fleet is given for the rig's fleet: its plan files, the fleet file and each plan's wave. */
export async function fleetStatusFiles(
  rig: FleetRig,
): Promise<{files: string[]; fleet: string; waves: Map<string, number>}> {
  const loaded = await loadFleetFile(rig.fleetFile)
  const waves = new Map(loaded.fleet.spec.namespaces.map((n) => [rig.planFile(n.name), n.wave]))
  return {files: [...waves.keys()], fleet: rig.fleetFile, waves}
}
