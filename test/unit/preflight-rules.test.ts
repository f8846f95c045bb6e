// The pure rules behind preflight: NetworkPolicy evaluation (E25), DaemonSet node coverage, versions.
import {describe, expect, it} from 'vitest'

import type {KubeObject} from '../../src/planner/model.js'
import {chooseIstiod, compareBundleVersions, istioVersionFromImage} from '../../src/preflight/checks/index.js'
import {nodeExclusion} from '../../src/preflight/daemonset.js'
import {analyzeNetworkPolicies, cidrContains, type PodEndpoint} from '../../src/planner/network-policy.js'

const netpol = (name: string, spec: Record<string, unknown>): KubeObject => ({
  apiVersion: 'networking.k8s.io/v1',
  kind: 'NetworkPolicy',
  metadata: {name, namespace: 'ns'},
  spec: {podSelector: {}, ...spec},
})
const web: PodEndpoint = {
  name: 'web-1',
  labels: {app: 'web'},
  ports: [
    {name: 'http', containerPort: 8080},
    {name: 'hbone-ish', containerPort: 15008},
  ],
  probes: [{container: 'web', kind: 'readiness', port: 'http'}],
}
const kinds = (policies: KubeObject[], pods: PodEndpoint[] = [web]) =>
  analyzeNetworkPolicies(policies, pods).map(
    (i) => `${i.kind}:${i.policies.join(',')}${i.rule === undefined ? '' : `[${i.rule}]`}`,
  )
const peers = [{namespaceSelector: {matchLabels: {team: 'a'}}}]

describe('NetworkPolicies and HBONE (TCP 15008)', () => {
  it('a rule restricted to application ports blocks its peers; a port range or named port covering 15008 does not', () => {
    expect(kinds([netpol('app-only', {ingress: [{from: peers, ports: [{port: 8080}]}]})])).toContain(
      'hbone-blocked:app-only[0]',
    )
    expect(
      kinds([netpol('range', {ingress: [{from: peers, ports: [{port: 8080}, {port: 15000, endPort: 15010}]}]})]),
    ).not.toContain('hbone-blocked:range[0]')
    expect(
      kinds([netpol('range-below', {ingress: [{from: peers, ports: [{port: 15009, endPort: 15020}]}]})]),
    ).toContain('hbone-blocked:range-below[0]')
    // A named port admits 15008 only if the pod names its container port 15008 that way.
    expect(kinds([netpol('named', {ingress: [{from: peers, ports: [{port: 'hbone-ish'}]}]})])).not.toContain(
      'hbone-blocked:named[0]',
    )
    expect(
      kinds(
        [netpol('named', {ingress: [{from: peers, ports: [{port: 'hbone-ish'}]}]})],
        [{...web, ports: [{name: 'hbone-ish', containerPort: 9000}]}],
      ),
    ).toContain('hbone-blocked:named[0]')
    // UDP 15008 is not HBONE.
    expect(
      kinds([netpol('udp', {ingress: [{from: peers, ports: [{port: 15008, protocol: 'UDP'}, {port: 8080}]}]})]),
    ).toContain('hbone-blocked:udp[0]')
  })

  it('empty ports admit every port; deny-all admits nothing before or after; egress-only policies do not count', () => {
    expect(kinds([netpol('all-ports', {ingress: [{from: peers}]})])).toEqual(['probe-blocked:all-ports'])
    expect(kinds([netpol('allow-all', {ingress: [{}]})])).toEqual([])
    expect(kinds([netpol('deny-all', {policyTypes: ['Ingress']})])).toEqual(['probe-blocked:deny-all'])
    expect(kinds([netpol('egress', {policyTypes: ['Egress'], egress: [{ports: [{port: 53}]}]})])).toEqual([])
    // Without policyTypes every policy affects ingress.
    expect(kinds([netpol('implicit', {ingress: [{from: peers, ports: [{port: 8080}]}], egress: [{}]})])).toContain(
      'hbone-blocked:implicit[0]',
    )
  })

  it('another rule admitting 15008 from everywhere, or from the same peers, covers a restricted rule', () => {
    expect(
      kinds([
        netpol('a', {ingress: [{from: peers, ports: [{port: 8080}]}]}),
        netpol('b', {ingress: [{ports: [{port: 15008}]}]}),
      ]),
    ).not.toContain('hbone-blocked:a[0]')
    expect(
      kinds([
        netpol('a', {
          ingress: [
            {from: peers, ports: [{port: 8080}]},
            {from: peers, ports: [{port: 15008}]},
          ],
        }),
      ]),
    ).not.toContain('hbone-blocked:a[0]')
    const other = [{namespaceSelector: {matchLabels: {team: 'b'}}}]
    expect(
      kinds([
        netpol('a', {
          ingress: [
            {from: peers, ports: [{port: 8080}]},
            {from: other, ports: [{port: 15008}]},
          ],
        }),
      ]),
    ).toContain('hbone-blocked:a[0]')
  })

  it('only policies whose podSelector selects the pod apply', () => {
    const other = netpol('db-only', {
      podSelector: {matchLabels: {app: 'db'}},
      ingress: [{from: peers, ports: [{port: 5432}]}],
    })
    expect(kinds([other])).toEqual([])
    const expr = netpol('expr', {
      podSelector: {matchExpressions: [{key: 'app', operator: 'In', values: ['web', 'api']}]},
      ingress: [{from: peers, ports: [{port: 8080}]}],
    })
    expect(kinds([expr])).toContain('hbone-blocked:expr[0]')
  })

  it('kubelet probes need the probe port admitted from 169.254.7.127 (or its IPv6 twin), honouring except', () => {
    const probeRule = (cidr: string, except?: string[]) =>
      netpol('p', {
        ingress: [
          {from: peers, ports: [{port: 8080}, {port: 15008}]},
          {from: [{ipBlock: {cidr, ...(except ? {except} : {})}}], ports: [{port: 8080}]},
        ],
      })
    expect(kinds([probeRule('169.254.7.127/32')])).toEqual([])
    expect(kinds([probeRule('169.254.0.0/16')])).toEqual([])
    expect(kinds([probeRule('fd16:9254:7127:1337::/64')])).toEqual([])
    expect(kinds([probeRule('169.254.0.0/16', ['169.254.7.0/24'])])).toEqual(['probe-blocked:p'])
    expect(kinds([probeRule('10.0.0.0/8')])).toContain('probe-blocked:p')
    // A probe-only rule carries no mesh traffic, so it needs no 15008.
    expect(kinds([probeRule('10.0.0.0/8')])).toContain('hbone-blocked:p[1]')
    expect(kinds([probeRule('169.254.7.127/32')])).not.toContain('hbone-blocked:p[1]')
  })

  it('CIDR containment for IPv4 and IPv6', () => {
    expect(cidrContains('169.254.0.0/16', '169.254.7.127')).toBe(true)
    expect(cidrContains('169.254.7.128/25', '169.254.7.127')).toBe(false)
    expect(cidrContains('0.0.0.0/0', '169.254.7.127')).toBe(true)
    expect(cidrContains('::/0', 'fd16:9254:7127:1337:ffff:ffff:ffff:ffff')).toBe(true)
    expect(cidrContains('fd16:9254:7127:1337::/64', 'fd16:9254:7127:1337:ffff:ffff:ffff:ffff')).toBe(true)
    expect(cidrContains('fd16:9254:7127:1338::/64', 'fd16:9254:7127:1337:ffff:ffff:ffff:ffff')).toBe(false)
    expect(cidrContains('10.0.0.0/8', 'fd16::1')).toBe(false)
  })
})

describe('DaemonSet node coverage', () => {
  const node = (name: string, labels: Record<string, string> = {}, taints: unknown[] = []): KubeObject => ({
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {name, labels: {'kubernetes.io/os': 'linux', ...labels}},
    spec: {taints},
  })
  const template = (spec: Record<string, unknown>) => ({spec})

  it('honours nodeSelector, required node affinity (In, NotIn, Gt, matchFields) and tolerations', () => {
    expect(nodeExclusion(template({nodeSelector: {'kubernetes.io/os': 'linux'}}), node('a'))).toBeUndefined()
    expect(
      nodeExclusion(
        template({nodeSelector: {'kubernetes.io/os': 'linux'}}),
        node('w', {'kubernetes.io/os': 'windows'}),
      ),
    ).toBe('nodeSelector kubernetes.io/os=linux does not match')
    const affinity = (terms: unknown[]) =>
      template({affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: terms}}}})
    expect(
      nodeExclusion(
        affinity([{matchExpressions: [{key: 'pool', operator: 'In', values: ['general']}]}]),
        node('a', {pool: 'gpu'}),
      ),
    ).toBe('required node affinity does not match')
    expect(
      nodeExclusion(
        affinity([
          {matchExpressions: [{key: 'pool', operator: 'In', values: ['general']}]},
          {matchFields: [{key: 'metadata.name', operator: 'In', values: ['a']}]},
        ]),
        node('a', {pool: 'gpu'}),
      ),
    ).toBeUndefined()
    expect(
      nodeExclusion(
        affinity([{matchExpressions: [{key: 'cores', operator: 'Gt', values: ['8']}]}]),
        node('a', {cores: '16'}),
      ),
    ).toBeUndefined()
    expect(
      nodeExclusion(
        affinity([{matchExpressions: [{key: 'cores', operator: 'Gt', values: ['8']}]}]),
        node('a', {cores: '4'}),
      ),
    ).toBe('required node affinity does not match')
    const taint = {key: 'dedicated', value: 'ml', effect: 'NoSchedule'}
    expect(nodeExclusion(template({}), node('t', {}, [taint]))).toBe('taint dedicated=ml:NoSchedule is not tolerated')
    expect(
      nodeExclusion(
        template({tolerations: [{key: 'dedicated', operator: 'Equal', value: 'ml'}]}),
        node('t', {}, [taint]),
      ),
    ).toBeUndefined()
    expect(
      nodeExclusion(
        template({tolerations: [{key: 'dedicated', operator: 'Equal', value: 'other'}]}),
        node('t', {}, [taint]),
      ),
    ).toBeDefined()
    // PreferNoSchedule never keeps a pod away; the controller tolerates cordoned and not-ready nodes itself.
    expect(nodeExclusion(template({}), node('t', {}, [{key: 'x', effect: 'PreferNoSchedule'}]))).toBeUndefined()
    expect(
      nodeExclusion(
        template({}),
        node('t', {}, [
          {key: 'node.kubernetes.io/unschedulable', effect: 'NoSchedule'},
          {key: 'node.kubernetes.io/not-ready', effect: 'NoExecute'},
        ]),
      ),
    ).toBeUndefined()
  })
})

describe('versions', () => {
  it('reads the Istio version from istiod image tags', () => {
    expect(istioVersionFromImage('docker.io/istio/pilot:1.28.1-distroless')).toMatchObject({
      major: 1,
      minor: 28,
      patch: 1,
    })
    expect(istioVersionFromImage('gcr.io/istio-release/pilot:1.24.0')).toMatchObject({minor: 24})
    expect(istioVersionFromImage('registry:5000/istio/pilot')).toBeUndefined()
    expect(istioVersionFromImage('docker.io/istio/pilot@sha256:abcd')).toBeUndefined()
    expect(istioVersionFromImage('docker.io/istio/pilot:latest')).toBeUndefined()
  })

  it('compares Gateway API bundle versions semantically', () => {
    expect(compareBundleVersions('v1.6.1', 'v1.6.0')).toBeGreaterThan(0)
    expect(compareBundleVersions('v1.10.0', 'v1.6.0')).toBeGreaterThan(0)
    expect(compareBundleVersions('v1.0.0', 'v1.1.0')).toBeLessThan(0)
    expect(compareBundleVersions('v1.6.0-rc1', 'v1.6.0')).toBeLessThan(0)
    expect(compareBundleVersions('v0.0.0-dev', 'v1.1.0')).toBeLessThan(0)
  })

  it("chooses the istiod of the namespace's revision, a tag's revision, or the default one", () => {
    const d = (name: string, rev?: string): KubeObject => ({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: {name, labels: {app: 'istiod', ...(rev ? {'istio.io/rev': rev} : {})}},
    })
    const all = [
      d('istiod'),
      d('istiod-1-28', '1-28'),
      {apiVersion: 'apps/v1', kind: 'Deployment', metadata: {name: 'prometheus'}},
    ]
    expect(chooseIstiod(all, {}, {}).istiod?.metadata.name).toBe('istiod')
    expect(chooseIstiod(all, {'istio.io/rev': '1-28'}, {}).istiod?.metadata.name).toBe('istiod-1-28')
    expect(chooseIstiod(all, {'istio.io/rev': 'stable'}, {stable: '1-28'}).istiod?.metadata.name).toBe('istiod-1-28')
    expect(chooseIstiod(all, {}, {default: '1-28'}).istiod?.metadata.name).toBe('istiod-1-28')
    expect(chooseIstiod(all, {'istio.io/rev': 'gone'}, {}).istiod).toBeUndefined()
    expect(chooseIstiod([d('istiod-1-28', '1-28')], {}, {}).istiod?.metadata.name).toBe('istiod-1-28')
    expect(chooseIstiod(all, {}, {}).candidates).toHaveLength(2)
  })
})
