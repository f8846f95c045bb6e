// Issue 21 §5 and §6: WorkloadEntries (and WorkloadGroups' templates) are workloads wherever selectors are resolved,
// and only those with a sidecar identity are VMs in the mesh. Sources, istio/istio at 86c9f01:
// - pilot/pkg/serviceregistry/ambient/workloads.go workloadEntryWorkloadBuilder: a WorkloadEntry's policies are found
//   by its labels (buildWorkloadPolicies) and Kubernetes Services select it (PILOT_ENABLE_K8S_SELECT_WORKLOAD_ENTRIES,
//   on by default: pilot/pkg/features/pilot.go);
// - pilot/pkg/serviceregistry/serviceentry/conversion.go ConvertClientWorkloadEntry (spec.labels merged with
//   metadata.labels) and getTLSModeFromWorkloadEntry (security.istio.io/tlsMode, else istio when a serviceAccount is set);
// - pilot/pkg/autoregistration/controller.go workloadEntryFromGroup (template labels merged with spec.metadata.labels);
// - istio.io content/en/docs/ambient/migrate: VM workloads are a hard blocker.
import {describe, expect, it} from 'vitest'
import {classifyObjects} from '../../src/planner/classify/index.js'
import {buildInventory} from '../../src/planner/inventory.js'
import type {KubeObject} from '../../src/planner/model.js'
import {entryWorkloads} from '../../src/planner/workload-entries.js'
import {bookinfoBase, classifyContext, istio} from './support/classify-context.js'

function classify(objects: KubeObject[]) {
  const res = classifyObjects(classifyContext([...bookinfoBase(), ...objects]))
  const get = (kind: string, name: string) => res.items.find((i) => i.ref.kind === kind && i.ref.name === name)
  return {...res, get}
}

const vm = (labels: Record<string, string>, extra: Record<string, unknown> = {}) =>
  istio('WorkloadEntry', 'vm-1', {address: '10.0.0.5', labels, serviceAccount: 'ratings-vm', ...extra})

const external = (labels: Record<string, string>, extra: Record<string, unknown> = {}) =>
  istio('WorkloadEntry', 'db-1', {address: '192.0.2.1', labels, ...extra})

// One selector policy of every kind that selects `{app: 'vm-only'}`.
const SELECTOR_POLICIES: [string, string, Record<string, unknown>][] = [
  [
    'AuthorizationPolicy',
    'authz',
    {selector: {matchLabels: {app: 'vm-only'}}, rules: [{to: [{operation: {methods: ['GET']}}]}]},
  ],
  ['PeerAuthentication', 'pa', {selector: {matchLabels: {app: 'vm-only'}}, mtls: {mode: 'STRICT'}}],
  ['RequestAuthentication', 'ra', {selector: {matchLabels: {app: 'vm-only'}}, jwtRules: [{issuer: 'x'}]}],
  ['Telemetry', 'tel', {selector: {matchLabels: {app: 'vm-only'}}, accessLogging: [{providers: [{name: 'envoy'}]}]}],
  ['WasmPlugin', 'wasm', {selector: {matchLabels: {app: 'vm-only'}}, url: 'oci://x'}],
  ['Sidecar', 'sc', {workloadSelector: {labels: {app: 'vm-only'}}, egress: [{hosts: ['./*']}]}],
  ['EnvoyFilter', 'ef', {workloadSelector: {labels: {app: 'vm-only'}}, configPatches: [{applyTo: 'HTTP_FILTER'}]}],
  ['ProxyConfig', 'pc', {selector: {matchLabels: {app: 'vm-only'}}, concurrency: 2}],
  [
    'DestinationRule',
    'dr',
    {host: 'ratings', workloadSelector: {matchLabels: {app: 'vm-only'}}, trafficPolicy: {connectionPool: {}}},
  ],
]

describe('selectors match WorkloadEntries too (issue 21 §5; ambient/workloads.go buildWorkloadPolicies by labels)', () => {
  it.each(SELECTOR_POLICIES)(
    '%s selecting only a VM with a sidecar is enforced by it: unaffected, not "no workload"',
    (kind, name, spec) => {
      const r = classify([vm({app: 'vm-only'}), istio(kind, name, spec)])
      const i = r.get(kind, name)!
      expect(i).toMatchObject({verdict: 'unaffected', action: 'keep'})
      const text = i.reasons.join('\n')
      expect(text).toContain('only VM workload(s) WorkloadEntry vm-1 with a sidecar')
      expect(text).not.toContain('matches no workload')
      expect(r.findings.filter((f) => f.ref?.name === name && f.ref.kind === kind)).toEqual([])
    },
  )

  it.each(SELECTOR_POLICIES)(
    '%s selecting only an endpoint without a proxy enforces nothing, and says why',
    (kind, name, spec) => {
      const r = classify([external({app: 'vm-only'}), istio(kind, name, spec)])
      const i = r.get(kind, name)!
      expect(i).toMatchObject({verdict: 'inert', action: 'no-effect'})
      expect(i.reasons.join('\n')).toContain('WorkloadEntry db-1 (no serviceAccount and no tlsMode label: no proxy)')
    },
  )

  it('a WorkloadEntry is matched by its metadata.labels merged over spec.labels (conversion.go ConvertClientWorkloadEntry)', () => {
    const we = istio(
      'WorkloadEntry',
      'vm-1',
      {address: '10.0.0.5', labels: {app: 'spec'}, serviceAccount: 'sa'},
      {labels: {app: 'vm-only', tier: 'db'}},
    )
    expect(entryWorkloads([we], 'bookinfo')[0]!.labels).toEqual({app: 'vm-only', tier: 'db'})
    const r = classify([we, istio(...SELECTOR_POLICIES[0]!)])
    expect(r.get('AuthorizationPolicy', 'authz')).toMatchObject({verdict: 'unaffected', action: 'keep'})
  })

  it("a WorkloadGroup's template and metadata labels are matched: it registers VMs with sidecars (autoregistration workloadEntryFromGroup)", () => {
    const wg = istio('WorkloadGroup', 'ratings-vms', {
      metadata: {labels: {app: 'vm-only'}},
      template: {labels: {tier: 'x'}, serviceAccount: 'sa'},
    })
    expect(entryWorkloads([wg], 'bookinfo')[0]).toMatchObject({labels: {app: 'vm-only', tier: 'x'}, sidecar: true})
    const r = classify([wg, istio(...SELECTOR_POLICIES[1]!)])
    expect(r.get('PeerAuthentication', 'pa')).toMatchObject({verdict: 'unaffected', action: 'keep'})
    expect(r.get('PeerAuthentication', 'pa')!.reasons.join('\n')).toContain('WorkloadGroup ratings-vms')
  })

  it('a selector matching no pod and no entry is still "matches no workload"', () => {
    const r = classify([vm({app: 'other'}), istio(...SELECTOR_POLICIES[0]!)])
    expect(r.get('AuthorizationPolicy', 'authz')).toMatchObject({verdict: 'inert', action: 'no-effect'})
    expect(r.get('AuthorizationPolicy', 'authz')!.reasons.join('\n')).toContain('matches no workload of the namespace')
  })

  it('a policy selecting pods is classified for the pods as before, whatever VMs it also selects', () => {
    const r = classify([
      vm({app: 'ratings'}),
      istio('AuthorizationPolicy', 'p', {
        selector: {matchLabels: {app: 'ratings'}},
        rules: [{to: [{operation: {methods: ['GET']}}]}],
      }),
    ])
    expect(r.get('AuthorizationPolicy', 'p')).toMatchObject({verdict: 'L7', action: 'retarget'})
  })

  it('a Service whose selector matches only WorkloadEntries has endpoints: no ServiceWithoutWorkloads (PILOT_ENABLE_K8S_SELECT_WORKLOAD_ENTRIES)', () => {
    const objects: KubeObject[] = [
      {apiVersion: 'v1', kind: 'Namespace', metadata: {name: 'vms', labels: {'istio-injection': 'enabled'}}},
      {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: {name: 'db', namespace: 'vms'},
        spec: {selector: {app: 'db'}, ports: [{port: 5432, name: 'tcp'}]},
      },
      {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: {name: 'nothing', namespace: 'vms'},
        spec: {selector: {app: 'nothing'}, ports: [{port: 80, name: 'http'}]},
      },
      {...external({app: 'db'}), metadata: {name: 'db-1', namespace: 'vms'}},
    ]
    const inv = buildInventory(
      {
        namespace: 'vms',
        rootNamespace: 'istio-system',
        target: {manifests: []},
        objects,
        missingKinds: [],
        findings: [],
      },
      {waypointFor: 'service'},
    )
    expect(inv.services.find((s) => s.ref.name === 'db')).toMatchObject({
      workloads: [],
      entryWorkloads: ['WorkloadEntry/db-1'],
    })
    expect(inv.findings.filter((f) => f.code === 'ServiceWithoutWorkloads').map((f) => f.ref?.name)).toEqual([
      'nothing',
    ])
  })
})

describe('only WorkloadEntries with a sidecar are VMs in the mesh (issue 21 §6; conversion.go getTLSModeFromWorkloadEntry)', () => {
  const se = (location: string) =>
    istio('ServiceEntry', 'db', {
      hosts: ['db.example.com'],
      location,
      resolution: 'STATIC',
      ports: [{number: 5432, name: 'tcp', protocol: 'TCP'}],
      workloadSelector: {labels: {role: 'db'}},
    })

  it.each([
    ['MESH_EXTERNAL, no serviceAccount', 'MESH_EXTERNAL', {}, 'no serviceAccount and no tlsMode label: no proxy'],
    [
      'MESH_EXTERNAL, tlsMode disabled next to a serviceAccount',
      'MESH_EXTERNAL',
      {serviceAccount: 'db', labels: {role: 'db', 'security.istio.io/tlsMode': 'disabled'}},
      'security.istio.io/tlsMode=disabled: no proxy',
    ],
    ['MESH_INTERNAL, no serviceAccount', 'MESH_INTERNAL', {}, 'no serviceAccount and no tlsMode label: no proxy'],
  ])('%s: an endpoint ambient reaches as sidecars did, kept (no VM blocker)', (_name, location, extra, why) => {
    const r = classify([se(location), external({role: 'db'}, extra)])
    const i = r.get('WorkloadEntry', 'db-1')!
    expect(i).toMatchObject({verdict: 'L4', action: 'keep'})
    expect(i.reasons.join('\n')).toContain(why)
    expect(i.reasons.join('\n')).toContain(`endpoint of ${location} ServiceEntry db`)
    expect(r.findings.filter((f) => f.code === 'VmWorkloadUnsupported')).toEqual([])
  })

  it.each([
    ['a serviceAccount', {serviceAccount: 'db'}, 'serviceAccount db'],
    ['tlsMode istio', {labels: {role: 'db', 'security.istio.io/tlsMode': 'istio'}}, 'security.istio.io/tlsMode=istio'],
  ])('with %s it is a VM with a sidecar: blocker, even behind a MESH_EXTERNAL ServiceEntry', (_name, extra, why) => {
    const r = classify([se('MESH_EXTERNAL'), external({role: 'db'}, extra)])
    expect(r.get('WorkloadEntry', 'db-1')).toMatchObject({verdict: 'blocker', action: 'blocker'})
    expect(r.get('WorkloadEntry', 'db-1')!.reasons.join('\n')).toContain(`with a sidecar (${why})`)
    expect(r.findings.filter((f) => f.code === 'VmWorkloadUnsupported').map((f) => f.id)).toEqual([
      'vm/WorkloadEntry/bookinfo/db-1',
    ])
  })

  it('a WorkloadGroup registers VMs with sidecars: blocker', () => {
    const r = classify([istio('WorkloadGroup', 'vms', {template: {serviceAccount: 'sa'}})])
    expect(r.get('WorkloadGroup', 'vms')).toMatchObject({verdict: 'blocker', action: 'blocker'})
  })
})
