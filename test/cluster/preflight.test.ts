// Every preflight check against the test API server, passing on a healthy ambient installation and
// failing for each thing that can be wrong (issue 3 item 2, DOMAIN §4.4).
import {AsyncLocalStorage} from 'node:async_hooks'
import {readFile} from 'node:fs/promises'
import path from 'node:path'

import {describe, expect, it, vi} from 'vitest'

import type {HttpKubeClient} from '../../src/kube/http-client.js'
import {buildInventory} from '../../src/planner/inventory.js'
import type {KubeObject} from '../../src/planner/model.js'
import {buildPlan} from '../../src/plan/plan-builder.js'
import {PREFLIGHT_CHECKS} from '../../src/planner/vocab.js'
import type {MigrationPlan} from '../../src/planner/plan-types.js'
import {planAccessNeeds} from '../../src/preflight/rbac.js'
import {preflightRunner, runPreflight} from '../../src/preflight/runner.js'
import type {PreflightDiagnostic} from '../../src/preflight/types.js'
import {ClusterSource} from '../../src/sources/cluster.js'
import {runEnvtest} from '../support/envtest.js'
import {type ClusterServer, startClusterServer} from './server.js'
import {
  cniConfigMap,
  daemonSet,
  daemonSetPods,
  deleteCrd,
  istiod,
  meshConfig,
  NAMESPACE,
  node,
  ROOT,
  seedAmbientCluster,
  setBundleVersion,
  waypointClass,
  ZTUNNEL_LABELS,
} from './ambient-cluster.js'
import {clientFor, kubeconfigFile, ns, pod, sidecarPod, tempDir} from './support.js'
import {hasStackTrace, runCli} from '../support/cli.js'
import {planOf} from '../support/plan-file.js'

// Each test gets a fresh cluster; a real kube-apiserver takes seconds to start and to establish the
// CRDs (measured 12–50 s per cluster under a load average of 20 here; one test builds three), the
// in-repo one milliseconds. Starting one keeps two CPUs less than half busy (measured: 6.9 s of CPU in
// 7.8 s of wall time, two at once in 8.4 s), so the tests run two at a time (maxConcurrency of the cluster
// project), each with its own servers: testServers holds those of the test the code runs for.
if (runEnvtest()) vi.setConfig({testTimeout: 300_000})

const testServers = new AsyncLocalStorage<ClusterServer[]>()

/** A test of this file: concurrent with one other, its servers closed when it ends, whatever happens. */
function serverTest(name: string, body: () => Promise<void>): void {
  it.concurrent(name, () =>
    testServers.run([], async () => {
      try {
        await body()
      } finally {
        await Promise.all(testServers.getStore()!.map((s) => s.close()))
      }
    }),
  )
}

/** The server the current test started last. */
function current(): ClusterServer {
  const servers = testServers.getStore()
  if (!servers || servers.length === 0) throw new Error('no server started by this test (cluster() first)')
  return servers.at(-1)!
}

/** Close the current test's last server before it starts another. */
async function closeCurrent(): Promise<void> {
  const servers = testServers.getStore()!
  await servers.pop()?.close()
}

/** A fresh server with a healthy ambient installation, then `change` applied to it. */
async function cluster(
  change: (s: ClusterServer) => unknown | Promise<unknown> = () => undefined,
): Promise<ClusterServer> {
  const server = await startClusterServer()
  testServers.getStore()!.push(server)
  await seedAmbientCluster(server)
  await change(server)
  return server
}

async function planFrom(
  client: HttpKubeClient,
  namespace = NAMESPACE,
): Promise<{plan: MigrationPlan; inventory: ReturnType<typeof buildInventory>}> {
  const snapshot = await (await ClusterSource.open(client)).snapshot(namespace, {rootNamespace: ROOT})
  const inventory = buildInventory(snapshot, {waypointFor: 'service'})
  const plan = buildPlan({
    inventory,
    snapshot,
    options: {rootNamespace: ROOT, waypointName: 'waypoint', waypointFor: 'service'},
    generator: 'test',
  })
  return {plan, inventory}
}

async function preflight(
  s: ClusterServer,
  checks?: string[],
  opts: {token?: string; namespace?: string} = {},
): Promise<PreflightDiagnostic[]> {
  const admin = await clientFor(s)
  const {plan} = await planFrom(admin, opts.namespace)
  const client = opts.token ? await clientFor(s, opts.token) : admin
  return runPreflight(client, opts.namespace ?? NAMESPACE, {plan, rootNamespace: ROOT, ...(checks ? {checks} : {})})
}

const of = (diags: PreflightDiagnostic[], check: string) => diags.filter((d) => d.check === check)
const codes = (diags: PreflightDiagnostic[]) => diags.map((d) => `${d.severity}:${d.code}`)

describe.concurrent('reads', () => {
  serverTest('reuses the lists of the snapshot the plan was built from instead of listing them again', async () => {
    const s = await cluster()
    const client = await clientFor(s)
    const snapshot = await (await ClusterSource.open(client)).snapshot(NAMESPACE, {rootNamespace: ROOT})
    const inventory = buildInventory(snapshot, {waypointFor: 'service'})
    const plan = buildPlan({
      inventory,
      snapshot,
      options: {rootNamespace: ROOT, waypointName: 'waypoint', waypointFor: 'service'},
      generator: 'test',
    })
    s.resetRequestLog()
    const diags = await runPreflight(client, NAMESPACE, {plan, inventory, snapshot, rootNamespace: ROOT})
    expect(diags.filter((d) => d.severity === 'error')).toEqual([])
    const reread = s.requests.filter(
      (e) =>
        e.user === 'admin' &&
        e.verb === 'list' &&
        ((e.resource === 'pods' && e.namespace === NAMESPACE) ||
          e.resource === 'networkpolicies' ||
          e.resource === 'mutatingwebhookconfigurations' ||
          (e.resource === 'configmaps' && e.namespace === ROOT)),
    )
    expect(reread).toEqual([])
    expect(
      s.requests.filter(
        (e) => e.user === 'admin' && e.verb === 'get' && e.resource === 'namespaces' && e.name === NAMESPACE,
      ),
    ).toEqual([])
  })
})

describe.concurrent('a healthy ambient installation', () => {
  serverTest('passes every check, each with an ok diagnostic, and the apply runner says ok', async () => {
    const s = await cluster()
    const diags = await preflight(s)
    expect(diags.filter((d) => d.severity === 'error' || d.severity === 'warning')).toEqual([])
    for (const check of PREFLIGHT_CHECKS)
      expect(
        of(diags, check).some((d) => d.severity === 'ok'),
        check,
      ).toBe(true)
    expect(of(diags, 'istio-version')[0]!.message).toContain('runs Istio 1.28.1')
    expect(of(diags, 'istio-version')[0]!.message).toContain('ztunnel enforces istio.io/dry-run AuthorizationPolicies')
    expect(of(diags, 'ztunnel-ready')[0]!.message).toBe(
      'DaemonSet istio-system/ztunnel is ready on 2 node(s) (2 eligible node(s) checked).',
    )
    expect(of(diags, 'istio-cni-ready')[0]!.message).toContain(
      'Ambient is enabled (AMBIENT_ENABLED=true) and shop is not excluded.',
    )
    expect(of(diags, 'gateway-api-crds')[0]!.message).toContain('HTTPRoute v1.6.1')
    expect(of(diags, 'rbac')[0]!.message).toMatch(/^All \d+ permission\(s\) the plan needs/)

    const client = await clientFor(s)
    const {plan} = await planFrom(client)
    expect(plan.spec.steps[0]!.verify).toEqual([{check: 'preflight', checks: [...PREFLIGHT_CHECKS]}])
    const result = await preflightRunner(client, plan)(['ztunnel-ready', 'rbac'])
    expect(result).toEqual({ok: true, detail: '2 check(s) passed'})
  })
})

describe.concurrent('istio-version', () => {
  serverTest('is an error below 1.24 and a warning on 1.24', async () => {
    const old = await preflight(await cluster((s) => s.seed(istiod({version: '1.22.3'}))), ['istio-version'])
    expect(codes(old)).toEqual(['error:IstioTooOld'])
    expect(old[0]!.message).toContain('runs Istio 1.22.3; ambient mode is GA')
    await closeCurrent()
    const v124 = await preflight(await cluster((s) => s.seed(istiod({version: '1.24.2'}))), ['istio-version'])
    expect(codes(v124)).toEqual(['warning:IstioVersion124'])
  })

  serverTest(
    "follows the namespace's revision, through revision tags, and fails when no istiod serves it",
    async () => {
      const tagWebhook: KubeObject = {
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'MutatingWebhookConfiguration',
        metadata: {name: 'istio-revision-tag-prod', labels: {'istio.io/tag': 'prod', 'istio.io/rev': 'canary'}},
        webhooks: [
          {
            name: 'rev.namespace.sidecar-injector.istio.io',
            admissionReviewVersions: ['v1'],
            sideEffects: 'None',
            clientConfig: {service: {name: 'istiod-canary', namespace: ROOT}},
            namespaceSelector: {
              matchExpressions: [
                {key: 'istio.io/rev', operator: 'In', values: ['prod']},
                {key: 'istio-injection', operator: 'DoesNotExist'},
              ],
            },
          },
        ],
      }
      const s = await cluster((srv) =>
        srv.seed([
          istiod({name: 'istiod-canary', revision: 'canary', version: '1.29.0'}),
          tagWebhook,
          ns('tagged', {'istio.io/rev': 'prod'}),
          ns('orphan', {'istio.io/rev': 'gone'}),
        ]),
      )
      const tagged = await preflight(s, ['istio-version', 'ambient-enabled'], {namespace: 'tagged'})
      expect(codes(tagged)).toEqual(['ok:IstioVersion', 'ok:AmbientEnabled'])
      expect(tagged[0]!.message).toContain(
        'istiod-canary in istio-system (istio.io/rev=prod (revision tag of canary)) runs Istio 1.29.0',
      )
      expect(tagged[0]!.message).toContain('ignores istio.io/dry-run AuthorizationPolicies')
      const orphan = await preflight(s, ['istio-version'], {namespace: 'orphan'})
      expect(codes(orphan)).toEqual(['error:IstiodRevisionNotFound'])
      expect(orphan[0]!.message).toContain('no istiod of revision "gone" runs in istio-system')
    },
  )

  serverTest('is an error when no istiod runs in the root namespace', async () => {
    const s = await cluster()
    const client = await clientFor(s)
    const {plan} = await planFrom(client)
    const diags = await runPreflight(client, NAMESPACE, {
      plan,
      rootNamespace: 'istio-elsewhere',
      checks: ['istio-version'],
    })
    expect(codes(diags)).toEqual(['error:IstiodNotFound'])
    expect(diags[0]!.fix).toContain('--root-namespace')
  })
})

describe.concurrent('ambient-enabled', () => {
  serverTest(
    'is an error without PILOT_ENABLE_AMBIENT=true and a warning when the mesh config lacks HBONE metadata',
    async () => {
      const diags = await preflight(await cluster((s) => s.seed([istiod({ambient: false}), meshConfig(false)])), [
        'ambient-enabled',
      ])
      expect(codes(diags)).toEqual(['error:AmbientNotEnabled', 'warning:HboneMetadataMissing'])
      expect(diags[0]!.message).toContain('does not run with PILOT_ENABLE_AMBIENT=true (not set)')
    },
  )
})

describe.concurrent('ambient-enabled: install side effects (E17)', () => {
  serverTest(
    'warns, while ambient is not enabled yet, that the istioctl ambient profile prunes the gateways istioctl installed',
    async () => {
      const gateway: KubeObject = {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: {
          name: 'istio-ingressgateway',
          namespace: ROOT,
          labels: {
            app: 'istio-ingressgateway',
            'operator.istio.io/component': 'IngressGateways',
            'install.operator.istio.io/owning-resource': 'unknown',
          },
        },
        spec: {
          selector: {matchLabels: {app: 'istio-ingressgateway'}},
          template: {
            metadata: {labels: {app: 'istio-ingressgateway'}},
            spec: {containers: [{name: 'istio-proxy', image: 'docker.io/istio/proxyv2:1.28.1'}]},
          },
        },
      }
      const before = await preflight(await cluster((s) => s.seed([istiod({ambient: false}), gateway])), [
        'ambient-enabled',
      ])
      expect(codes(before)).toEqual(['error:AmbientNotEnabled', 'warning:AmbientProfilePrunesGateways'])
      expect(before[1]!.message).toContain('istioctl installed istio-ingressgateway in istio-system')
      expect(before[1]!.fix).toContain('components.ingressGateways: [{name: istio-ingressgateway, enabled: true}]')
      await closeCurrent()
      // Once ambient is enabled the install has happened: nothing left to warn about.
      const after = await preflight(await cluster((s) => s.seed(gateway)), ['ambient-enabled'])
      expect(codes(after)).toEqual(['ok:AmbientEnabled'])
    },
  )
})

describe.concurrent('ambient-enabled: istiod flags that change waypoint authorization (E21)', () => {
  const autoAllow = {name: 'PILOT_AUTO_ALLOW_WAYPOINT_POLICY', value: 'true'}

  serverTest(
    'PILOT_AUTO_ALLOW_WAYPOINT_POLICY is an error while sidecar clients run elsewhere, a warning when none do',
    async () => {
      const withCallers = await preflight(
        await cluster((s) =>
          s.seed([
            istiod({env: [autoAllow]}),
            ns('payments', {'istio-injection': 'enabled'}),
            sidecarPod('pay-1', 'payments', {hbone: true}),
          ]),
        ),
        ['ambient-enabled'],
      )
      expect(codes(withCallers)).toEqual(['ok:AmbientEnabled', 'error:AutoAllowWaypointPolicy'])
      expect(withCallers[1]!.message).toContain(
        'sidecar pods run in 1 other namespace(s) (payments) and would be denied',
      )
      expect(withCallers[1]!.fix).toContain('PILOT_AUTO_ALLOW_WAYPOINT_POLICY=false')
      await closeCurrent()
      const alone = await preflight(
        await cluster((s) =>
          s.seed(istiod({env: [autoAllow, {name: 'ENABLE_LAYERED_WAYPOINT_AUTHORIZATION_POLICIES', value: 'true'}]})),
        ),
        ['ambient-enabled'],
      )
      expect(codes(alone)).toEqual([
        'ok:AmbientEnabled',
        'warning:AutoAllowWaypointPolicy',
        'warning:LayeredWaypointAuthorization',
      ])
      expect(alone[1]!.message).toContain('no sidecar pod runs in another namespace now')
    },
  )
})

describe.concurrent('ambient-enabled: multicluster (E20)', () => {
  const service = (name: string, labels: Record<string, string>): KubeObject => ({
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {name, namespace: NAMESPACE, labels},
    spec: {ports: [{name: 'http', port: 80}], selector: {app: name}},
  })

  serverTest(
    'refuses a namespace set up for ambient multicluster: multi-network ambient istiod, or istio.io/global Services',
    async () => {
      const multiNetwork = await preflight(
        await cluster((s) => s.seed(istiod({env: [{name: 'AMBIENT_ENABLE_MULTI_NETWORK', value: 'true'}]}))),
        ['ambient-enabled'],
      )
      expect(codes(multiNetwork)).toEqual(['ok:AmbientEnabled', 'error:AmbientMulticluster'])
      expect(multiNetwork[1]!.message).toContain('istiod runs with AMBIENT_ENABLE_MULTI_NETWORK=true')
      expect(multiNetwork[1]!.fix).toContain('refuses multicluster namespaces')
      await closeCurrent()
      const global = await preflight(
        await cluster((s) =>
          s.seed([service('ratings', {'istio.io/global': 'true'}), service('local', {app: 'local'})]),
        ),
        ['ambient-enabled'],
      )
      expect(codes(global)).toEqual(['ok:AmbientEnabled', 'error:AmbientMulticluster'])
      expect(global[1]!.message).toContain('Service(s) ratings of shop carry istio.io/global')
      expect(global[1]!.message).not.toContain('local')
    },
  )

  serverTest(
    'warns when the install only names its cluster or spans networks (issue 21 §11), and says nothing for a default install',
    async () => {
      const named = await preflight(
        await cluster((s) => s.seed(istiod({env: [{name: 'CLUSTER_ID', value: 'cluster1'}]}))),
        ['ambient-enabled'],
      )
      expect(codes(named)).toEqual(['ok:AmbientEnabled', 'warning:PossiblyMulticluster'])
      expect(named[1]!.message).toContain('istiod names this cluster "cluster1" (CLUSTER_ID)')
      expect(named[1]!.fix).toContain('istioctl remote-clusters')
      await closeCurrent()
      // samples/multicluster/gen-eastwest-gateway.sh --ambient: a Gateway of class istio-east-west, and the
      // network on istio-system (istio.io docs/ambient/install/multicluster/multi-primary_multi-network).
      const eastWest: KubeObject = {
        apiVersion: 'gateway.networking.k8s.io/v1',
        kind: 'Gateway',
        metadata: {name: 'istio-eastwestgateway', namespace: ROOT, labels: {'topology.istio.io/network': 'network1'}},
        spec: {gatewayClassName: 'istio-east-west', listeners: [{name: 'mesh', port: 15008, protocol: 'HBONE'}]},
      }
      const networks = await preflight(
        await cluster((s) =>
          s.seed([
            istiod({env: [{name: 'CLUSTER_ID', value: 'cluster1'}]}),
            ns(ROOT, {'topology.istio.io/network': 'network1'}),
            eastWest,
          ]),
        ),
        ['ambient-enabled'],
      )
      expect(codes(networks)).toEqual(['ok:AmbientEnabled', 'warning:MultiNetworkMesh'])
      expect(networks[1]!.message).toContain(
        'istiod names this cluster "cluster1" (CLUSTER_ID); namespace istio-system sets topology.istio.io/network=network1; east-west gateway(s) in istio-system: Gateway istio-eastwestgateway',
      )
      // Upstream: multi-network multicluster is beta since 1.29 (istio.io blog "Ambient multi-network multicluster
      // support is now Beta"), and "All clusters must have identically named waypoint deployments" (istio.io
      // content/en/docs/ambient/install/multicluster/_index.md).
      expect(networks[1]!.message).toContain('beta since Istio 1.29')
      expect(networks[1]!.message).toContain('waypoints must exist with identical names in every cluster')
      expect(networks[1]!.fix).toContain('--waypoint-name')
      await closeCurrent()
      const single = await preflight(
        await cluster((s) => s.seed(istiod({env: [{name: 'CLUSTER_ID', value: 'Kubernetes'}]}))),
        ['ambient-enabled'],
      )
      expect(codes(single)).toEqual(['ok:AmbientEnabled'])
    },
  )

  serverTest(
    'refuses primary-remote, from the primary (EXTERNAL_ISTIOD) and from a remote (injection by URL, no istiod)',
    async () => {
      // istio.io content/en/docs/ambient/install/multicluster/_index.md: "Primary remote configuration is not
      // currently supported"; the chart sets EXTERNAL_ISTIOD from values.global.externalIstiod
      // (manifests/charts/istio-control/istio-discovery/templates/deployment.yaml).
      const primary = await preflight(
        await cluster((s) => s.seed(istiod({env: [{name: 'EXTERNAL_ISTIOD', value: 'true'}]}))),
        ['ambient-enabled'],
      )
      expect(codes(primary)).toEqual(['ok:AmbientEnabled', 'error:AmbientPrimaryRemote'])
      expect(primary[1]!.message).toContain('istiod runs with EXTERNAL_ISTIOD=true (it serves remote clusters)')
      expect(primary[1]!.message).toContain('Primary remote configuration is not currently supported')
      await closeCurrent()
      // A remote: no istiod, and the injection webhook calls the primary's istiod by URL
      // (values.istiodRemote.injectionURL, templates/mutatingwebhook.yaml). The API server never calls it
      // (admission webhooks are disabled on the test server), and the URL is loopback anyway.
      const remoteInjector: KubeObject = {
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'MutatingWebhookConfiguration',
        metadata: {name: 'istio-sidecar-injector', labels: {app: 'sidecar-injector'}},
        webhooks: [
          {
            name: 'rev.namespace.sidecar-injector.istio.io',
            clientConfig: {url: 'https://127.0.0.1:15017/inject/cluster/remote1/net/network1'},
            sideEffects: 'None',
            admissionReviewVersions: ['v1'],
            rules: [{operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods']}],
          },
        ],
      }
      const remote = await cluster(async (s) => {
        await s.seed(remoteInjector)
        await (await clientFor(s)).delete({apiVersion: 'apps/v1', kind: 'Deployment', namespace: ROOT, name: 'istiod'})
      })
      const diags = await preflight(remote, ['ambient-enabled'])
      expect(codes(diags)).toEqual(['error:IstiodNotFound', 'error:AmbientPrimaryRemote'])
      expect(diags[1]!.message).toContain(
        'MutatingWebhookConfiguration istio-sidecar-injector injects sidecars through an istiod outside this cluster',
      )
    },
  )
})

describe.concurrent('ztunnel-ready', () => {
  serverTest('is an error naming the node where ztunnel is not ready', async () => {
    const diags = await preflight(
      await cluster((s) =>
        s.seed([
          daemonSet('ztunnel', ZTUNNEL_LABELS, {ready: 1}),
          ...daemonSetPods('ztunnel', ZTUNNEL_LABELS, ['node-b']),
        ]),
      ),
      ['ztunnel-ready'],
    )
    expect(codes(diags)).toEqual(['error:ZtunnelNotReady'])
    expect(diags[0]!.message).toContain('has no ready pod on node(s) node-b (1/2 ready)')
  })

  serverTest(
    'warns about nodes the DaemonSet cannot run on (an untolerated taint) and errors when it is missing',
    async () => {
      const tainted = await preflight(
        await cluster((s) =>
          s.seed(
            node('gpu-1', {
              taints: [
                {key: 'nvidia.com/gpu', value: 'true', effect: 'NoExecute'},
                {key: 'dedicated', value: 'ml', effect: 'NoSchedule'},
              ],
            }),
          ),
        ),
        ['ztunnel-ready'],
      )
      // The chart tolerates every NoSchedule/NoExecute taint: the node is covered, and it has no ready pod yet.
      expect(codes(tainted)).toEqual(['error:ZtunnelNotReady'])
      expect(tainted[0]!.message).toContain('node(s) gpu-1')
      await closeCurrent()
      const narrow = daemonSet('ztunnel', ZTUNNEL_LABELS)
      narrow.spec.template.spec.tolerations = []
      // Seeding replaces the DaemonSet (generation 2); its controller has observed that.
      narrow.status.observedGeneration = 2
      const excluded = await preflight(
        await cluster((s) =>
          s.seed([
            narrow,
            node('infra-1', {taints: [{key: 'dedicated', value: 'infra', effect: 'NoSchedule'}]}),
            node('win-1', {labels: {'kubernetes.io/os': 'windows'}}),
          ]),
        ),
        ['ztunnel-ready'],
      )
      expect(codes(excluded)).toEqual(['ok:ZtunnelReady', 'warning:ZtunnelNodesNotCovered'])
      expect(excluded[1]!.message).toContain('infra-1 (taint dedicated=infra:NoSchedule is not tolerated)')
      expect(excluded[1]!.message).not.toContain('win-1')
      await closeCurrent()
      const missing = await preflight(
        await cluster(async (s) => {
          await fetch(`${s.url}/apis/apps/v1/namespaces/${ROOT}/daemonsets/ztunnel`, {
            method: 'DELETE',
            headers: {Authorization: `Bearer ${s.adminToken}`},
          })
        }),
        ['ztunnel-ready'],
      )
      expect(codes(missing)).toEqual(['error:ZtunnelNotFound'])
    },
  )
})

describe.concurrent('istio-cni-ready', () => {
  serverTest('is an error when istio-cni runs without ambient, or excludes the namespace', async () => {
    const disabled = await preflight(await cluster((s) => s.seed(cniConfigMap({AMBIENT_ENABLED: 'false'}))), [
      'istio-cni-ready',
    ])
    expect(codes(disabled)).toEqual(['error:IstioCniAmbientDisabled'])
    await closeCurrent()
    const excluded = await preflight(
      await cluster((s) => s.seed(cniConfigMap({EXCLUDED_NAMESPACES: 'kube-system,shop'}))),
      ['istio-cni-ready'],
    )
    expect(codes(excluded)).toEqual(['error:NamespaceExcludedByCni'])
    expect(excluded[0]!.message).toContain('istio-cni excludes namespace shop')
  })

  serverTest('is an error when it is not ready on every node', async () => {
    const diags = await preflight(
      await cluster((s) =>
        s.seed([
          daemonSet(
            'istio-cni-node',
            {'k8s-app': 'istio-cni-node'},
            {ready: 0, container: {name: 'install-cni', envFrom: [{configMapRef: {name: 'istio-cni-config'}}]}},
          ),
          ...daemonSetPods('istio-cni-node', {'k8s-app': 'istio-cni-node'}, ['node-a', 'node-b']),
        ]),
      ),
      ['istio-cni-ready'],
    )
    expect(codes(diags)).toEqual(['error:IstioCniNotReady'])
    expect(diags[0]!.message).toContain('fails to start')
  })
})

describe.concurrent('gateway-api-crds', () => {
  serverTest(
    "is an error when a required CRD is missing and a warning below Istio's minimum bundle version",
    async () => {
      const diags = await preflight(
        await cluster(async (s) => {
          await deleteCrd(s, 'httproutes.gateway.networking.k8s.io')
          await setBundleVersion(s, 'grpcroutes', 'v1.0.0')
        }),
        ['gateway-api-crds'],
      )
      expect(codes(diags)).toEqual(['error:GatewayApiCrdMissing', 'warning:GatewayApiCrdBelowMinimum'])
      expect(diags[0]!.message).toContain('httproutes.gateway.networking.k8s.io is not installed')
      expect(diags[1]!.message).toContain("is at v1.0.0, below Istio's minimum v1.1.0")
    },
  )

  serverTest(
    'falls back to discovery when reading CRDs is forbidden, and says the version was not checked',
    async () => {
      const s = await cluster((srv) =>
        srv.addToken('no-crds', {
          user: 'no-crds',
          permissions: [
            {
              verbs: ['get', 'list'],
              apiGroups: ['', 'apps', 'gateway.networking.k8s.io', 'admissionregistration.k8s.io'],
              resources: ['*'],
            },
          ],
        }),
      )
      const diags = await preflight(s, ['gateway-api-crds'], {token: 'no-crds'})
      expect(codes(diags)).toEqual(['warning:GatewayApiVersionUnchecked'])
    },
  )
})

describe.concurrent('waypoint-gatewayclass', () => {
  serverTest('is an error when the class is missing or has another controller', async () => {
    const missing = await preflight(
      await cluster(async (s) => {
        await fetch(`${s.url}/apis/gateway.networking.k8s.io/v1/gatewayclasses/istio-waypoint`, {
          method: 'DELETE',
          headers: {Authorization: `Bearer ${s.adminToken}`},
        })
      }),
      ['waypoint-gatewayclass'],
    )
    expect(codes(missing)).toEqual(['error:WaypointClassMissing'])
    await closeCurrent()
    const wrong = await preflight(
      await cluster(async (s) => {
        await fetch(`${s.url}/apis/gateway.networking.k8s.io/v1/gatewayclasses/istio-waypoint`, {
          method: 'DELETE',
          headers: {Authorization: `Bearer ${s.adminToken}`},
        })
        await s.seed(waypointClass('example.com/other-controller'))
      }),
      ['waypoint-gatewayclass'],
    )
    expect(codes(wrong)).toEqual(['error:WaypointClassWrongController'])
  })
})

describe.concurrent('sidecars-hbone', () => {
  serverTest(
    'is an error for a sidecar in the namespace without HBONE, a warning for one elsewhere in the mesh',
    async () => {
      const waypointPod = pod('waypoint-5f7-x', NAMESPACE, {
        labels: {
          'gateway.istio.io/managed': 'istio.io-mesh-controller',
          'gateway.networking.k8s.io/gateway-name': 'waypoint',
        },
        containers: [{name: 'istio-proxy', image: 'docker.io/istio/proxyv2:1.28.1'}],
      })
      const diags = await preflight(
        await cluster((s) =>
          s.seed([
            waypointPod,
            sidecarPod('legacy-1', NAMESPACE, {hbone: false}),
            ns('payments', {'istio-injection': 'enabled'}),
            sidecarPod('pay-1', 'payments', {hbone: false}),
            sidecarPod('pay-2', 'payments', {hbone: true}),
          ]),
        ),
        ['sidecars-hbone'],
      )
      expect(codes(diags)).toEqual(['error:SidecarsNotHbone', 'warning:MeshSidecarsNotHbone'])
      expect(diags[0]!.message).toContain('1 of 2 sidecar pod(s) in shop are not HBONE-capable')
      expect(diags[0]!.message).toContain('legacy-1')
      expect(diags[1]!.message).toContain('payments (1: pay-1)')
      const lists = current()
        .requestsMatching({verb: 'list', resource: 'pods'})
        .filter((e) => e.namespace === undefined)
      expect(lists.map((e) => e.query.labelSelector)).toEqual(['security.istio.io/tlsMode=istio'])
    },
  )
})

describe.concurrent('blockers', () => {
  serverTest("reports the plan's blockers and those that appeared since", async () => {
    const disable: KubeObject = {
      apiVersion: 'security.istio.io/v1',
      kind: 'PeerAuthentication',
      metadata: {name: 'no-mtls', namespace: NAMESPACE},
      spec: {mtls: {mode: 'DISABLE'}},
    }
    const s = await cluster((srv) => srv.seed(disable))
    const client = await clientFor(s)
    const {plan} = await planFrom(client)
    expect(plan.spec.blockers.length).toBeGreaterThan(0)
    const diags = await runPreflight(client, NAMESPACE, {plan, rootNamespace: ROOT, checks: ['blockers']})
    expect(diags.length).toBe(plan.spec.blockers.length)
    expect(diags.every((d) => d.severity === 'error' && d.message.includes('blocker recorded in the plan'))).toBe(true)
    expect(diags.some((d) => d.message.includes('PeerAuthentication shop/no-mtls'))).toBe(true)

    // A VM with a sidecar (a serviceAccount: upstream getTLSModeFromWorkloadEntry, issue 21 §6) that shows up after
    // planning is found live.
    await s.seed({
      apiVersion: 'networking.istio.io/v1',
      kind: 'WorkloadEntry',
      metadata: {name: 'vm-1', namespace: NAMESPACE},
      spec: {address: '10.0.0.5', labels: {app: 'web'}, serviceAccount: 'web-vm'},
    })
    const later = await runPreflight(client, NAMESPACE, {plan, rootNamespace: ROOT, checks: ['blockers']})
    const fresh = later.filter((d) => d.message.includes('new since the plan was made'))
    expect(fresh.length).toBeGreaterThan(0)
    expect(fresh.some((d) => d.message.includes('vm-1'))).toBe(true)

    const gone = await runPreflight(client, 'no-such-namespace', {plan, rootNamespace: ROOT, checks: ['blockers']})
    expect(codes(gone)).toEqual(['error:NamespaceNotFound'])
  })
})

describe.concurrent('network-policies', () => {
  const policy = (name: string, ingress: unknown[], extra: Record<string, unknown> = {}): KubeObject => ({
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: {name, namespace: NAMESPACE},
    spec: {podSelector: {matchLabels: {app: 'web'}}, policyTypes: ['Ingress'], ingress, ...extra},
  })
  const fromFrontend = [{podSelector: {matchLabels: {app: 'frontend'}}}]

  serverTest('passes when the rule admitting the application port admits 15008 and probes too', async () => {
    const diags = await preflight(
      await cluster((s) =>
        s.seed(
          policy('web-ingress', [
            {from: fromFrontend, ports: [{port: 8080}, {port: 15000, endPort: 15010}]},
            {from: [{ipBlock: {cidr: '169.254.7.127/32'}}], ports: [{port: 'http'}]},
          ]),
        ),
      ),
      ['network-policies'],
    )
    expect(codes(diags)).toEqual(['ok:NetworkPoliciesAdmitHbone'])
  })

  serverTest('is an error when peers are admitted on the application port only, and a warning for probes', async () => {
    const diags = await preflight(
      await cluster((s) =>
        s.seed(policy('web-ingress', [{from: fromFrontend, ports: [{port: 8080, protocol: 'TCP'}]}])),
      ),
      ['network-policies'],
    )
    expect(codes(diags)).toEqual(['error:NetworkPolicyBlocksHbone', 'warning:NetworkPolicyBlocksProbes'])
    expect(diags[0]!.message).toContain(
      'NetworkPolicy web-ingress spec.ingress[0] admits its peers on 8080/TCP but not on TCP 15008',
    )
    expect(diags[0]!.message).toContain('web-5d8f-abcde')
    expect(diags[0]!.fix).toContain(
      'Add {port: 15008, protocol: TCP} to spec.ingress[0].ports of NetworkPolicy shop/web-ingress',
    )
    expect(diags[1]!.message).toContain('kubelet probes on port 8080 (source 169.254.7.127 once ambient)')
  })

  serverTest('checks the planned waypoint too: a namespace-wide allow-list must admit it on 15008', async () => {
    const all = policy('allow-frontend', [{from: fromFrontend, ports: [{port: 8080}]}], {podSelector: {}})
    const diags = await preflight(await cluster((s) => s.seed(all)), ['network-policies'])
    expect(diags.filter((d) => d.code === 'NetworkPolicyBlocksHbone')[0]!.message).toContain(
      'planned waypoint waypoint',
    )
  })
})

describe.concurrent('rbac', () => {
  serverTest(
    'asks a SelfSubjectAccessReview for every permission the plan needs and names what is missing',
    async () => {
      const s = await cluster((srv) =>
        srv.addToken('label-only', {
          user: 'label-only',
          permissions: [
            {verbs: ['get', 'list'], apiGroups: ['*'], resources: ['*']},
            {verbs: ['patch'], apiGroups: [''], resources: ['namespaces']},
            {
              verbs: ['create', 'get', 'patch', 'delete'],
              apiGroups: ['coordination.k8s.io'],
              resources: ['leases'],
              namespaces: [NAMESPACE],
            },
          ],
        }),
      )
      const admin = await clientFor(s)
      const {plan} = await planFrom(admin)
      const needs = planAccessNeeds(plan)
      s.resetRequestLog()
      const diags = await runPreflight(await clientFor(s, 'label-only'), NAMESPACE, {
        plan,
        rootNamespace: ROOT,
        checks: ['rbac'],
      })
      // One review per distinct permission.
      expect(s.requestsMatching({resource: 'selfsubjectaccessreviews'})).toHaveLength(needs.length)
      expect(diags.every((d) => d.severity === 'error' && d.code === 'RbacDenied')).toBe(true)
      const gateways = diags.find((d) => d.message.includes('gateways.gateway.networking.k8s.io'))
      expect(gateways?.message).toBe(
        'Not allowed to create, delete, patch gateways.gateway.networking.k8s.io in namespace shop (waypoint); needed by step create-waypoint, rollback of create-waypoint.',
      )
      expect(gateways?.fix).toContain(
        'kubectl create role mesh-migrate -n shop --verb=create,delete,patch --resource=gateways.gateway.networking.k8s.io',
      )
      expect(
        diags.some((d) => d.message.startsWith('Not allowed to patch deployments.apps in namespace shop (web)')),
      ).toBe(true)
      expect(diags.some((d) => d.message.includes('namespaces'))).toBe(false)
      expect(diags.some((d) => d.message.includes('leases'))).toBe(false)

      const runner = await preflightRunner(await clientFor(s, 'label-only'), plan)(['rbac'])
      expect(runner.ok).toBe(false)
      // One line per error (issue 13 §2), each with its fix.
      expect(runner.detail).toContain('preflight error(s):\n  - rbac: Not allowed to')
      expect(runner.detail.split('\n').filter((l) => l.startsWith('  - rbac: ')).length).toBe(diags.length)
    },
  )

  serverTest(
    'derives apply = get+patch+create, delete = get+delete, label/restart = get+patch, with undo, the lock and the reads',
    async () => {
      const s = await cluster()
      const {plan} = await planFrom(await clientFor(s))
      const needs = planAccessNeeds(plan).map(
        (n) => `${n.verb} ${n.kind}${n.namespace ? ` ${n.namespace}` : ''}${n.name ? `/${n.name}` : ''}`,
      )
      for (const expected of [
        'create Gateway shop',
        'patch Gateway shop/waypoint',
        'get Gateway shop/waypoint',
        'delete Gateway shop/waypoint',
        'create AuthorizationPolicy shop',
        'delete AuthorizationPolicy shop/web-get-only',
        'patch Namespace/shop',
        'get Namespace/shop',
        'patch Deployment shop/web',
        'get Deployment shop/waypoint',
        'create Lease shop',
        'get Lease shop/mesh-migrate-lock',
        'get ConfigMap shop/mesh-migrate-record-shop',
        'create ConfigMap shop',
        'patch ConfigMap shop/mesh-migrate-record-shop',
        'patch Lease shop/mesh-migrate-lock',
        'delete Lease shop/mesh-migrate-lock',
        'list Pod shop',
        'list ReplicaSet shop',
        'list Job shop',
        'get Service shop/web',
      ])
        expect(needs, expected).toContain(expected)
      // Exactly once each.
      expect(new Set(needs).size).toBe(needs.length)
    },
  )
})

describe.concurrent('rbac: every permission of the plan (issue 21 §9)', () => {
  /** A CronJob whose pods opt in to injection themselves (E4): restart-workloads removes the label from its template. */
  const optedInCronJob: KubeObject = {
    apiVersion: 'batch/v1',
    kind: 'CronJob',
    metadata: {name: 'nightly', namespace: NAMESPACE},
    spec: {
      schedule: '0 3 * * *',
      jobTemplate: {
        spec: {
          template: {
            metadata: {labels: {app: 'nightly', 'sidecar.istio.io/inject': 'true'}},
            spec: {restartPolicy: 'OnFailure', containers: [{name: 'job', image: 'busybox'}]},
          },
        },
      },
    },
  }
  /** Everything a migration of shop needs, except patching CronJobs (it may read them). */
  const noCronJobPatch = [
    {verbs: ['get', 'list', 'watch'], apiGroups: ['*'], resources: ['*']},
    {verbs: ['patch'], apiGroups: [''], resources: ['namespaces']},
    {
      verbs: ['create', 'patch', 'delete'],
      apiGroups: [
        '',
        'apps',
        'coordination.k8s.io',
        'networking.k8s.io',
        'gateway.networking.k8s.io',
        'security.istio.io',
        'networking.istio.io',
        'telemetry.istio.io',
        'extensions.istio.io',
      ],
      resources: ['*'],
      namespaces: [NAMESPACE],
    },
    {verbs: ['create', 'patch', 'delete'], apiGroups: ['batch'], resources: ['jobs'], namespaces: [NAMESPACE]},
  ]

  serverTest(
    'a user who may not patch CronJobs fails preflight naming the resource and the verb, and apply writes nothing',
    async () => {
      const s = await cluster(async (srv) => {
        await srv.seed(optedInCronJob)
        await srv.addToken('no-cronjob-patch', {user: 'no-cronjob-patch', permissions: noCronJobPatch})
      })
      const cwd = await tempDir('mesh-migrate-rbac-cwd-')
      const admin = await kubeconfigFile(s)
      const planned = await runCli(['plan', NAMESPACE, '--kubeconfig', admin], {cwd, env: {KUBECONFIG: ''}})
      expect(planned.code, planned.stderr).toBe(0)
      const plan = planOf(await readFile(path.join(cwd, 'plans', `${NAMESPACE}.yaml`), 'utf8'))
      const restart = plan.spec.steps.find((st) => st.action === 'restart-workloads')!
      expect(restart.operations).toContainEqual({
        op: 'template-labels',
        ref: {apiVersion: 'batch/v1', kind: 'CronJob', namespace: NAMESPACE, name: 'nightly'},
        labels: {'sidecar.istio.io/inject': null},
      })
      expect(planAccessNeeds(plan)).toContainEqual(
        expect.objectContaining({verb: 'patch', kind: 'CronJob', namespace: NAMESPACE, name: 'nightly'}),
      )

      const user = await kubeconfigFile(s, {token: 'no-cronjob-patch'})
      const diags = await runPreflight(await clientFor(s, 'no-cronjob-patch'), NAMESPACE, {
        plan,
        rootNamespace: ROOT,
        checks: ['rbac'],
      })
      // The real authorizer denies exactly that one permission: one diagnostic, naming resource, verb and object.
      expect(diags).toEqual([
        expect.objectContaining({
          severity: 'error',
          code: 'RbacDenied',
          message: `Not allowed to patch cronjobs.batch in namespace ${NAMESPACE} (nightly); needed by step restart-workloads, rollback of restart-workloads.`,
        }),
      ])

      s.resetRequestLog()
      const applied = await runCli(
        ['apply', `plans/${NAMESPACE}.yaml`, '--all', '--yes', '--timeout', '1s', '--kubeconfig', user],
        {
          cwd,
          env: {KUBECONFIG: ''},
        },
      )
      expect(applied.code, applied.stderr).toBe(1)
      expect(applied.stderr).toContain('Not allowed to patch cronjobs.batch in namespace shop (nightly)')
      expect(hasStackTrace(applied.stderr)).toBe(false)
      // Before any write: the tool sent nothing but reviews, its own lock and the plan's record (the preflight step
      // recorded Running, then Failed, in ConfigMap mesh-migrate-record-<namespace>: issue 19).
      const writes = s
        .requestsMatching({user: s.userOf('no-cronjob-patch'), verb: ['create', 'update', 'patch', 'delete']})
        .filter((e) => e.group !== 'authorization.k8s.io' && e.group !== 'authentication.k8s.io')
        .filter((e) => e.resource !== 'leases')
        .filter((e) => !(e.resource === 'configmaps' && e.path.includes('configmaps') && recordWrite(e.path, e.method)))
      expect(writes).toEqual([])
      const after = planOf(await readFile(path.join(cwd, 'plans', `${NAMESPACE}.yaml`), 'utf8'))
      expect(after.status?.steps.find((st) => st.id === 'preflight')?.phase).toBe('Failed')
      expect(after.status?.steps.some((st) => st.phase === 'Applied')).toBe(false)
    },
  )
})

/** A write of the plan's record: the ConfigMap's create (POST to the collection) or a patch of mesh-migrate-record-*. */
function recordWrite(requestPath: string, method: string): boolean {
  return method === 'POST'
    ? requestPath.endsWith('/configmaps')
    : /\/configmaps\/mesh-migrate-record-[^/]+$/.test(requestPath)
}

describe.concurrent('runner', () => {
  serverTest('reports an unknown check and a forbidden read without hiding the other checks', async () => {
    const s = await cluster((srv) =>
      srv.addToken('ns-only', {
        user: 'ns-only',
        permissions: [{verbs: ['get', 'list'], apiGroups: ['*'], resources: ['*'], namespaces: [NAMESPACE]}],
      }),
    )
    const diags = await preflight(s, ['no-such-check', 'istio-version', 'network-policies'], {token: 'ns-only'})
    expect(codes(diags)).toEqual(['error:UnknownCheck', 'warning:CheckForbidden', 'ok:NoNetworkPolicies'])
    expect(diags[1]!.message).toContain('list deployments.apps in namespace istio-system failed: 403 Forbidden')
  })
})
