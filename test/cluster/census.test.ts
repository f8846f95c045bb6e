// `census` against the test API server: the five namespace states, the pods that disagree with their
// namespace, waypoints and plans, with one cluster-wide LIST per kind (issue 3 item 3).
import {mkdir, writeFile} from 'node:fs/promises'
import path from 'node:path'

import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {buildCensus, type CensusReport} from '../../src/census/census.js'
import {readCensusInput} from '../../src/census/read.js'
import {buildInventory} from '../../src/planner/inventory.js'
import type {KubeObject} from '../../src/planner/model.js'
import {buildPlan} from '../../src/plan/plan-builder.js'
import {renderPlanFile, specDigest} from '../../src/plan/planfile.js'
import {ClusterSource} from '../../src/sources/cluster.js'
import {type ClusterServer, startClusterServer} from './server.js'
import {ambientPod, clientFor, ns, pod, sidecarPod, tempDir} from './support.js'

function waypoint(name: string, namespace: string, ready: boolean): KubeObject[] {
  return [
    {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'Gateway',
      metadata: {name, namespace, labels: {'istio.io/waypoint-for': 'service'}},
      spec: {gatewayClassName: 'istio-waypoint', listeners: [{name: 'mesh', port: 15008, protocol: 'HBONE'}]},
      status: ready
        ? {
            addresses: [{type: 'IPAddress', value: '10.96.0.50'}],
            conditions: [
              {
                type: 'Programmed',
                status: 'True',
                reason: 'Programmed',
                message: 'Resource programmed',
                lastTransitionTime: '2026-01-01T00:00:00Z',
                observedGeneration: 1,
              },
            ],
          }
        : {
            conditions: [
              {
                type: 'Programmed',
                status: 'False',
                reason: 'AddressNotAssigned',
                message: 'no address',
                lastTransitionTime: '2026-01-01T00:00:00Z',
                observedGeneration: 1,
              },
            ],
          },
    },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: {
        name,
        namespace,
        labels: {
          'gateway.istio.io/managed': 'istio.io-mesh-controller',
          'gateway.networking.k8s.io/gateway-name': name,
        },
      },
      spec: {
        selector: {matchLabels: {'gateway.networking.k8s.io/gateway-name': name}},
        template: {
          metadata: {labels: {'gateway.networking.k8s.io/gateway-name': name}},
          spec: {containers: [{name: 'istio-proxy', image: 'auto'}]},
        },
      },
      // A real server refuses availableReplicas above readyReplicas.
      status: {replicas: 1, readyReplicas: ready ? 1 : 0, availableReplicas: ready ? 1 : 0},
    },
  ]
}

let server: ClusterServer
let plansDir: string
beforeAll(async () => {
  server = await startClusterServer()
  await server.seed([
    ns('side-injection', {'istio-injection': 'enabled', team: 'payments'}),
    sidecarPod('pay-1', 'side-injection'),
    pod('pay-old', 'side-injection', {labels: {app: 'pay'}}),
    pod('pay-node-agent', 'side-injection', {hostNetwork: true}),
    pod('pay-opt-out', 'side-injection', {labels: {'sidecar.istio.io/inject': 'false'}}),
    ns('side-rev', {'istio.io/rev': 'canary', team: 'payments'}),
    sidecarPod('rev-1', 'side-rev'),
    ns('amb', {'istio.io/dataplane-mode': 'ambient', 'istio.io/use-waypoint': 'waypoint'}),
    ambientPod('amb-1', 'amb'),
    sidecarPod('amb-stale', 'amb'),
    pod('amb-uncaptured', 'amb'),
    pod('amb-pending', 'amb', {annotations: {'ambient.istio.io/redirection': 'pending'}}),
    pod('amb-opted-out', 'amb', {labels: {'istio.io/dataplane-mode': 'none'}}),
    ...waypoint('waypoint', 'amb', true),
    // The waypoint's own pod runs istio-proxy as the gateway, not as a sidecar.
    pod('waypoint-7c9f-x1', 'amb', {
      labels: {
        'gateway.istio.io/managed': 'istio.io-mesh-controller',
        'gateway.networking.k8s.io/gateway-name': 'waypoint',
        'istio.io/dataplane-mode': 'none',
      },
      containers: [{name: 'istio-proxy', image: 'docker.io/istio/proxyv2:1.28.1', args: ['proxy', 'waypoint']}],
    }),
    ...waypoint('broken', 'amb', false),
    ns('both', {'istio-injection': 'enabled', 'istio.io/dataplane-mode': 'ambient'}),
    sidecarPod('both-1', 'both'),
    ambientPod('both-2', 'both'),
    ns('plain'),
    pod('plain-1', 'plain'),
    // The node proxy: the chart names its container istio-proxy, but it is not a sidecar.
    ns('istio-system'),
    pod('ztunnel-abcde', 'istio-system', {
      labels: {app: 'ztunnel'},
      containers: [{name: 'istio-proxy', image: 'docker.io/istio/ztunnel:1.28.1'}],
    }),
    // Labels of istio/istio manifests/charts: istiod (app: istiod, istio: pilot), istio-cni (app: istio-cni-node).
    pod('istiod-7d4f8', 'istio-system', {
      labels: {app: 'istiod', istio: 'pilot'},
      containers: [{name: 'discovery', image: 'docker.io/istio/pilot:1.28.1'}],
    }),
    pod('istio-cni-node-x2x', 'istio-system', {
      labels: {app: 'istio-cni-node'},
      containers: [{name: 'install-cni', image: 'docker.io/istio/install-cni:1.28.1'}],
    }),
    ns('opted-none', {'istio-injection': 'enabled', 'istio.io/dataplane-mode': 'none'}),
    {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {name: 'done', namespace: 'side-injection'},
      spec: {containers: [{name: 'c', image: 'c'}]},
      status: {phase: 'Succeeded'},
    },
  ])

  // A plan for side-injection with its first step applied, and a file that is not a plan.
  plansDir = path.join(await tempDir('mesh-migrate-census-'), 'plans')
  await mkdir(plansDir)
  const client = await clientFor(server)
  const snapshot = await (await ClusterSource.open(client)).snapshot('side-injection', {rootNamespace: 'istio-system'})
  const plan = buildPlan({
    inventory: buildInventory(snapshot, {waypointFor: 'service'}),
    snapshot,
    options: {rootNamespace: 'istio-system', waypointName: 'waypoint', waypointFor: 'service'},
    generator: 'test',
  })
  plan.status = {
    specDigest: specDigest(plan),
    steps: [{id: plan.spec.steps[0]!.id, phase: 'Applied', at: '2026-01-01T00:00:00Z', by: 'tester'}],
  }
  await writeFile(path.join(plansDir, 'side-injection.yaml'), renderPlanFile(plan))
  await writeFile(path.join(plansDir, 'junk.yaml'), 'kind: Something\n')
})
afterAll(() => server.close())

async function census(selector?: string): Promise<CensusReport> {
  const client = await clientFor(server)
  return buildCensus(await readCensusInput(client, {plansDir, ...(selector ? {selector} : {})}))
}

const row = (report: CensusReport, name: string) => report.namespaces.find((r) => r.namespace === name)!

describe('census', () => {
  it('classifies sidecar (by istio-injection and by istio.io/rev), ambient, both and none', async () => {
    const report = await census()
    expect(row(report, 'side-injection')).toMatchObject({mode: 'sidecar', sidecarInjection: 'istio-injection=enabled'})
    expect(row(report, 'side-injection').conflict).toBeUndefined()
    expect(row(report, 'side-rev')).toMatchObject({mode: 'sidecar', sidecarInjection: 'istio.io/rev=canary'})
    expect(row(report, 'amb')).toMatchObject({mode: 'ambient', dataplaneMode: 'ambient', useWaypoint: 'waypoint'})
    expect(row(report, 'both')).toMatchObject({
      mode: 'both',
      conflict: ['istio-injection=enabled', 'istio.io/dataplane-mode=ambient'],
    })
    expect(row(report, 'plain').mode).toBe('none')
    // IST0123 counts dataplane-mode=none next to istio-injection=enabled too; the sidecar still injects.
    expect(row(report, 'opted-none')).toMatchObject({
      mode: 'sidecar',
      conflict: ['istio-injection=enabled', 'istio.io/dataplane-mode=none'],
    })
    expect(report.summary).toMatchObject({both: 1, ambient: 1, conflicts: 2})
    // istiod, ztunnel and istio-cni are the control plane and node agents, not gateways (issue 13 §6).
    expect(row(report, 'istio-system').pods).toEqual({
      total: 3,
      sidecar: 0,
      ambient: 0,
      none: 0,
      gateway: 0,
      controlPlane: 3,
    })
    expect(report.summary.sidecar).toBe(3)
  })

  it('lists pods outside the mesh and sidecars left in an ambient namespace, leaving out deliberate opt-outs', async () => {
    const report = await census()
    const side = row(report, 'side-injection')
    expect(side.outsideMesh.map((p) => p.name)).toEqual(['pay-old'])
    expect(side.pods).toEqual({total: 4, sidecar: 1, ambient: 0, none: 3, gateway: 0, controlPlane: 0})
    const amb = row(report, 'amb')
    expect(amb.outsideMesh.map((p) => p.name).sort()).toEqual(['amb-pending', 'amb-uncaptured'])
    expect(amb.outsideMesh.find((p) => p.name === 'amb-pending')?.why).toContain('pending')
    expect(amb.sidecarInAmbient).toEqual([
      {name: 'amb-stale', why: 'not restarted since the namespace left sidecar mode'},
    ])
    expect(amb.pods).toEqual({total: 6, sidecar: 1, ambient: 1, none: 3, gateway: 1, controlPlane: 0})
    // In "both" the sidecar wins: a sidecar pod there is expected, not an anomaly.
    expect(row(report, 'both').sidecarInAmbient).toEqual([])
    expect(row(report, 'both').outsideMesh).toEqual([])
    expect(row(report, 'plain').outsideMesh).toEqual([])
  })

  it('shows waypoints with readiness and plans with their progress', async () => {
    const report = await census()
    expect(row(report, 'amb').waypoints).toEqual([
      {name: 'broken', ready: false, detail: 'not Programmed (AddressNotAssigned)'},
      {name: 'waypoint', ready: true, detail: 'Programmed, 1 replica(s) available'},
    ])
    const plans = row(report, 'side-injection').plans
    expect(plans).toHaveLength(1)
    expect(plans[0]).toMatchObject({file: path.join(plansDir, 'side-injection.yaml'), applied: 1, state: 'in-progress'})
    expect(plans[0]!.next).toBeDefined()
    expect(report.notes.some((n) => n.includes('junk.yaml is not a readable plan'))).toBe(true)
  })

  it('reads each kind with one cluster-wide LIST, never per namespace', async () => {
    server.resetRequestLog()
    await census()
    const lists = server.requestsMatching({verb: 'list'})
    expect(lists.every((e) => e.namespace === undefined)).toBe(true)
    const first = lists
      .filter((e) => !e.query.continue)
      .map((e) => `${e.resource}?${e.query.labelSelector ?? ''}`)
      .sort()
    expect(first).toEqual([
      'deployments?gateway.istio.io/managed=istio.io-mesh-controller',
      'gateways?',
      'mutatingwebhookconfigurations?',
      'namespaces?',
      'pods?',
    ])
    expect(server.requestsMatching({verb: 'get'})).toHaveLength(0)
  })

  it('--selector filters namespaces on the server and the rest by namespace', async () => {
    server.resetRequestLog()
    const report = await census('team=payments')
    expect(report.namespaces.map((r) => r.namespace)).toEqual(['side-injection', 'side-rev'])
    expect(server.requestsMatching({verb: 'list', resource: 'namespaces'})[0]!.query.labelSelector).toBe(
      'team=payments',
    )
    expect(report.summary.outsideMesh).toBe(1)
  })
})
