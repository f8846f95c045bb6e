import {describe, expect, it} from 'vitest'
import {classifyObjects} from '../../src/planner/classify/index.js'
import type {KubeObject} from '../../src/planner/model.js'
import {bookinfoBase, classifyContext, deployment, istio} from './support/classify-context.js'

function pa(
  name: string,
  spec: Record<string, unknown>,
  opts: {namespace?: string; created?: string} = {},
): KubeObject {
  const o = istio('PeerAuthentication', name, spec, {
    namespace: opts.namespace ?? 'bookinfo',
    apiVersion: 'security.istio.io/v1beta1',
  })
  if (opts.created) o.metadata.creationTimestamp = opts.created
  return o
}

function run(objects: KubeObject[], opts: Parameters<typeof classifyContext>[1] = {}) {
  const res = classifyObjects(classifyContext([...bookinfoBase(), ...objects], opts))
  const byName = (name: string) => res.items.find((i) => i.ref.kind === 'PeerAuthentication' && i.ref.name === name)
  return {...res, byName}
}

describe('PeerAuthentication (DOMAIN §3.2, E18)', () => {
  it('mesh-wide STRICT is kept and warns about out-of-mesh callers', () => {
    const r = run([pa('default', {mtls: {mode: 'STRICT'}}, {namespace: 'istio-system'})])
    expect(r.byName('default')).toMatchObject({
      verdict: 'L4',
      action: 'keep',
      scope: 'mesh',
      ref: {namespace: 'istio-system'},
    })
    const f = r.findings.find((x) => x.id === 'E18/PeerAuthentication/istio-system/default/strict')!
    expect(f).toMatchObject({code: 'StrictRejectsOutOfMeshCallers', severity: 'warning'})
    expect(f.fix).toMatch(/portLevelMtls/)
  })

  it('names the workloads scraped by Prometheus in the STRICT warning', () => {
    const scraped = deployment('metrics-app', {app: 'metrics-app'}, 'bookinfo', {
      annotations: {'prometheus.io/scrape': 'true'},
    })
    const r = run([scraped, pa('default', {mtls: {mode: 'STRICT'}})])
    expect(r.findings.find((x) => x.code === 'StrictRejectsOutOfMeshCallers')!.message).toMatch(
      /prometheus\.io\/scrape=true: metrics-app/,
    )
  })

  it('PERMISSIVE and UNSET are kept without findings', () => {
    const r = run([pa('ns', {mtls: {mode: 'PERMISSIVE'}}), pa('wl', {selector: {matchLabels: {app: 'reviews'}}})])
    expect(r.byName('ns')).toMatchObject({verdict: 'L4', action: 'keep', scope: 'namespace'})
    expect(r.byName('wl')).toMatchObject({verdict: 'L4', action: 'keep', scope: 'workload', services: ['reviews']})
    expect(r.findings.filter((f) => f.ref?.kind === 'PeerAuthentication')).toEqual([])
  })

  it('DISABLE in force for the namespace is a blocker', () => {
    const r = run([pa('off', {mtls: {mode: 'DISABLE'}})])
    expect(r.byName('off')).toMatchObject({verdict: 'blocker', action: 'blocker'})
    expect(r.findings.find((f) => f.id === 'E18/PeerAuthentication/bookinfo/off/disable')).toMatchObject({
      severity: 'blocker',
      code: 'PeerAuthenticationDisable',
    })
  })

  it('workload-selector DISABLE matching pods is a blocker', () => {
    const r = run([pa('overwrite-example', {selector: {matchLabels: {app: 'ratings'}}, mtls: {mode: 'DISABLE'}})])
    expect(r.byName('overwrite-example')).toMatchObject({verdict: 'blocker', action: 'blocker', services: ['ratings']})
  })

  it('mesh DISABLE overridden by a namespace STRICT is not in force here', () => {
    const r = run([
      pa('default', {mtls: {mode: 'DISABLE'}}, {namespace: 'istio-system'}),
      pa('ns', {mtls: {mode: 'STRICT'}}),
    ])
    expect(r.byName('default')).toMatchObject({verdict: 'inert', action: 'keep'})
    expect(r.byName('default')!.reasons.join('\n')).toMatch(/overridden for every workload of bookinfo/)
    expect(r.byName('ns')).toMatchObject({verdict: 'L4', action: 'keep'})
    expect(r.findings.map((f) => f.id)).toContain('E18/PeerAuthentication/bookinfo/ns/strict')
    expect(r.findings.map((f) => f.id)).not.toContain('E18/PeerAuthentication/istio-system/default/disable')
  })

  it('a workload UNSET policy inherits: the namespace policy still decides', () => {
    const r = run([
      pa('ns', {mtls: {mode: 'DISABLE'}}),
      pa('wl', {selector: {matchLabels: {app: 'reviews'}}, mtls: {mode: 'UNSET'}}),
    ])
    expect(r.byName('ns')).toMatchObject({verdict: 'blocker'})
  })

  it('the oldest namespace-wide policy wins', () => {
    const r = run([
      pa('newer', {mtls: {mode: 'DISABLE'}}, {created: '2025-02-01T00:00:00Z'}),
      pa('older', {mtls: {mode: 'STRICT'}}, {created: '2024-01-01T00:00:00Z'}),
    ])
    expect(r.byName('newer')).toMatchObject({verdict: 'inert'})
    expect(r.byName('older')).toMatchObject({verdict: 'L4', action: 'keep'})
  })

  it('a workload policy whose selector matches nothing has no effect', () => {
    const r = run([pa('httpbin', {selector: {matchLabels: {app: 'httpbin'}}, mtls: {mode: 'DISABLE'}})])
    expect(r.byName('httpbin')).toMatchObject({verdict: 'inert', action: 'no-effect'})
  })

  it('portLevelMtls on a workload policy is honoured; a port-level DISABLE blocks', () => {
    const ok = run([
      pa('wl', {
        selector: {matchLabels: {app: 'reviews'}},
        mtls: {mode: 'STRICT'},
        portLevelMtls: {'9080': {mode: 'PERMISSIVE'}},
      }),
    ])
    expect(ok.byName('wl')).toMatchObject({verdict: 'L4', action: 'keep'})
    expect(
      ok
        .byName('wl')!
        .reasons.find((r) => r.startsWith('spec.portLevelMtls[9080].mode: PERMISSIVE: honoured by ztunnel')),
    ).toBeDefined()
    const off = run([
      pa('httpbin', {
        selector: {matchLabels: {app: 'reviews'}},
        mtls: {mode: 'STRICT'},
        portLevelMtls: {80: {mode: 'DISABLE'}},
      }),
    ])
    expect(off.byName('httpbin')).toMatchObject({verdict: 'blocker', action: 'blocker'})
    expect(off.findings.find((f) => f.code === 'PeerAuthenticationDisable')!.message).toMatch(/port\(s\) 80/)
  })

  it('portLevelMtls without a selector is ignored', () => {
    const r = run([pa('ns', {mtls: {mode: 'STRICT'}, portLevelMtls: {'9080': {mode: 'DISABLE'}}})])
    expect(r.byName('ns')).toMatchObject({verdict: 'L4', action: 'keep'})
    expect(r.byName('ns')!.reasons).toContain(
      'spec.portLevelMtls: ignored: portLevelMtls needs a workload selector (outside the root namespace)',
    )
  })

  it('root-namespace selector policies are not used by ztunnel; their portLevelMtls is reported (E18)', () => {
    const r = run([
      pa(
        'root-wl',
        {
          selector: {matchLabels: {app: 'reviews'}},
          mtls: {mode: 'STRICT'},
          portLevelMtls: {'9080': {mode: 'PERMISSIVE'}},
        },
        {namespace: 'istio-system'},
      ),
    ])
    expect(r.byName('root-wl')).toMatchObject({verdict: 'inert', action: 'keep', scope: 'workload'})
    expect(
      r.findings.find((f) => f.id === 'E18/PeerAuthentication/istio-system/root-wl/root-port-level'),
    ).toMatchObject({severity: 'warning'})
  })

  it('root-namespace selector policies that match nothing here are not inventoried', () => {
    const r = run([
      pa(
        'gw',
        {selector: {matchLabels: {istio: 'ingressgateway'}}, mtls: {mode: 'DISABLE'}},
        {namespace: 'istio-system'},
      ),
    ])
    expect(r.byName('gw')).toBeUndefined()
  })
})
