// The upstream `istioctl analyze` inputs for injection labels and port names, run through the
// manifest source and the namespace/workload/service analysis, compared with the analyzer's
// expected messages (../shared/fixtures/upstream/corpus/analyzer-testdata/EXPECTED.json).
import {canonicalFindingCode} from '../../src/planner/findings/catalogue.js'
import {readFileSync} from 'node:fs'
import path from 'node:path'
import {expect, it} from 'vitest'
import type {Finding, KubeObject} from '../../src/planner/model.js'
import {analyzeInjectionWebhooks, analyzeNamespace} from '../../src/planner/namespace.js'
import {formatRef} from '../../src/planner/refs.js'
import {analyzeServices, servicePortFindings} from '../../src/planner/services.js'
import {analyzeWorkloads} from '../../src/planner/workloads.js'
import {loadManifestFiles} from '../../src/sources/manifests.js'
import {CORPUS_DIR, describeWithShared} from '../support/shared.js'

const TESTDATA = path.join(CORPUS_DIR, 'analyzer-testdata')

interface ExpectedCase {
  name: string
  inputFiles: string[]
  expected: {code: string; resource: string}[]
}

function expectedCase(name: string): ExpectedCase {
  const all = JSON.parse(readFileSync(path.join(TESTDATA, 'EXPECTED.json'), 'utf8')) as {cases: ExpectedCase[]}
  const found = all.cases.find((c) => c.name === name)
  if (!found) throw new Error(`EXPECTED.json has no case ${name}`)
  return found
}

/** The analyzer's resources for `code`, sorted, duplicates kept (the upstream comparison is a multiset). */
function expectedResources(c: ExpectedCase, code: string): string[] {
  return c.expected
    .filter((m) => m.code === code)
    .map((m) => m.resource)
    .sort()
}

interface Analysis {
  objects: KubeObject[]
  findings: Finding[]
  workloads: ReturnType<typeof analyzeWorkloads>['workloads']
  namespaces: Map<string, ReturnType<typeof analyzeNamespace>['state']>
}

/** Everything this module does, for every namespace of the input: what `inventory` would run per namespace. */
async function analyze(files: string[]): Promise<Analysis> {
  const {objects, findings: sourceFindings} = await loadManifestFiles(
    files.map((f) => path.join(TESTDATA, f.replace(/^testdata\//, ''))),
  )
  const {webhooks, findings} = analyzeInjectionWebhooks(objects)
  findings.push(...sourceFindings)
  const names = new Set<string>()
  for (const o of objects) {
    if (o.kind === 'Namespace') names.add(o.metadata.name)
    else if (o.metadata.namespace) names.add(o.metadata.namespace)
  }
  const namespaces = new Map<string, ReturnType<typeof analyzeNamespace>['state']>()
  const workloads: Analysis['workloads'] = []
  for (const name of [...names].sort()) {
    const nsObject = objects.find((o) => o.kind === 'Namespace' && o.metadata.name === name)
    const ns = analyzeNamespace(name, nsObject, {webhooks})
    namespaces.set(name, ns.state)
    findings.push(...ns.findings)
    const w = analyzeWorkloads(objects, ns.state, {webhooks})
    workloads.push(...w.workloads)
    findings.push(...w.findings)
    const s = analyzeServices(objects, name, w.workloads)
    findings.push(...s.findings, ...servicePortFindings(s.services, {waypointPlanned: false, waypointFor: 'service'}))
  }
  return {objects, findings, workloads, namespaces}
}

/** Our findings of `code` as the analyzer names resources ("Kind ns/name", "Namespace name"). */
/** Our findings of `code`, named by its code or by the old code it replaced (the IST/E numbers of this corpus). */
function resources(a: Analysis, code: string, kind?: string): string[] {
  const ours = canonicalFindingCode(code) ?? code
  return a.findings
    .filter((f) => f.code === ours && f.ref && (kind === undefined || f.ref.kind === kind))
    .map((f) => formatRef(f.ref!))
    .sort()
}

describeWithShared('istioctl analyze corpus: injection labels', () => {
  it('injection.yaml: IST0123 for busted, multi-ns-1/2/3 (not not-conflict-ns-1/2); IST0103 for default/noninjectedpod', async () => {
    const c = expectedCase('istioInjection')
    expect(c.inputFiles).toEqual(['testdata/injection.yaml'])
    const a = await analyze(c.inputFiles)
    expect(expectedResources(c, 'IST0123')).toEqual([
      'Namespace busted',
      'Namespace multi-ns-1',
      'Namespace multi-ns-2',
      'Namespace multi-ns-3',
    ])
    expect(resources(a, 'IST0123')).toEqual(expectedResources(c, 'IST0123'))
    for (const n of ['not-conflict-ns-1', 'not-conflict-ns-2'])
      expect(a.namespaces.get(n)!.multipleInjectionLabels).toBe(false)
    expect(resources(a, 'IST0103')).toEqual(expectedResources(c, 'IST0103'))
    // What the labels mean for the data plane.
    const mode = (n: string) => a.namespaces.get(n)!.mode
    expect([
      mode('default'),
      mode('ambient'),
      mode('foo'),
      mode('bar'),
      mode('multi-ns-2'),
      mode('not-conflict-ns-1'),
    ]).toEqual(['sidecar', 'ambient', 'none', 'none', 'both', 'ambient'])
    expect(a.namespaces.get('busted')).toMatchObject({
      injection: 'enabled',
      revision: 'canary',
      sidecarLabels: [
        {key: 'istio-injection', value: 'enabled'},
        {key: 'istio.io/rev', value: 'canary'},
      ],
    })
    expect(a.namespaces.get('not-conflict-ns-2')).toMatchObject({injection: 'disabled', revision: 'test'})
    expect(resources(a, 'E2')).toEqual(['Namespace busted', 'Namespace multi-ns-1', 'Namespace not-conflict-ns-2'])
    // Pods: the injected one has a sidecar; the opted-out ones are captured at once when ambient is set; hostNetwork is left alone.
    const proxy = (n: string) => a.workloads.find((w) => w.ref.name === n)!
    expect(proxy('injectedpod').proxy).toBe('sidecar')
    expect(proxy('podinjectiondisabled-label-and-anno').traits).toContain('inject-opt-out')
    expect(proxy('noninjectedpodhostnetwork').traits).toEqual(['bare-pod', 'host-network'])
    expect(resources(a, 'E5', 'Pod').filter((r) => r.startsWith('Pod default/'))).toEqual([
      'Pod default/noninjectedpod',
      'Pod default/podinjectiondisabled',
      'Pod default/podinjectiondisabled-label',
      'Pod default/podinjectiondisabled-label-and-anno',
    ])
  })

  it('with enableNamespacesByDefault (common/sidecar-injector-enabled-nsbydefault.yaml): E3 / IST0148', async () => {
    const c = expectedCase('istioInjectionEnableNamespacesByDefault')
    const a = await analyze(c.inputFiles)
    expect(a.findings.find((f) => f.id === 'E3/injection-enabled-by-default')?.message).toContain(
      'sidecarInjectorWebhook.enableNamespacesByDefault=true in ConfigMap istio-system/istio-sidecar-injector',
    )
    expect(expectedResources(c, 'IST0148')).toEqual(['Namespace bar'])
    // Two deliberate differences from the analyzer, both from the auto webhook's selectors (DOMAIN §2.1):
    // it has no dataplane-mode term, so the ambient-labelled `ambient` is injected too; and it does not
    // exclude istio-system (the analyzer never looks at istio-system).
    expect(resources(a, 'E3', 'Namespace')).toEqual(['Namespace ambient', 'Namespace bar', 'Namespace istio-system'])
    expect(a.namespaces.get('bar')!.injection).toBe('enabled')
    expect(a.namespaces.get('ambient')!.mode).toBe('both')
    expect(a.namespaces.get('foo')!.injection).toBe('disabled')
    expect(resources(a, 'IST0123')).toEqual(expectedResources(c, 'IST0123'))
    // istio-system is injected by default here too (see above), and its istiod pod has no proxy and no
    // opt-out label in this fixture; the analyzer never looks at istio-system.
    expect(resources(a, 'IST0103').filter((r) => !r.includes(' istio-system/'))).toEqual(
      expectedResources(c, 'IST0103'),
    )
    expect(resources(a, 'IST0103')).toContain('Pod istio-system/istiod-canary-1234567890-12345')
  })

  it('common/sidecar-injector-configmap.yaml does not enable injection by default', async () => {
    const a = await analyze(['common/sidecar-injector-configmap.yaml'])
    expect(a.findings.map((f) => f.code)).not.toContain('E3')
  })

  it('injection-with-mismatched-sidecar.yaml: classic and native sidecars detected, nobody missing a proxy', async () => {
    const c = expectedCase('istioInjectionProxyImageMismatch')
    const a = await analyze(['injection-with-mismatched-sidecar.yaml'])
    const states = Object.fromEntries(a.workloads.map((w) => [`${w.ref.namespace}/${w.ref.name}`, w.proxy]))
    expect(states).toEqual({
      'enabled-namespace/details-v1-pod-old': 'sidecar',
      'enabled-namespace/details-v1-pod-new': 'sidecar',
      'enabled-namespace/details-v1-pod-new-native': 'sidecar-native',
      'enabled-namespace/details-v1-pod-old-pre': 'sidecar',
      'enabled-namespace/details-v1-pod-old-pre-2': 'sidecar',
      'enabled-namespace/details-v1-pod-old-pre-3': 'sidecar',
      'enabled-namespace/details-v1-pod-overwritten-sidecar': 'sidecar',
      'enabled-namespace-native/details-v1-pod-old-native': 'sidecar-native',
      'default/details-v2-pod-old': 'sidecar',
      'revision-namespace/revision-details-v1-pod-old': 'sidecar',
      'revision-namespace/revision-details-v1-pod-new': 'sidecar',
      'revision-namespace/revision-details-v1-pod-overwritten-sidecar': 'sidecar',
    })
    // The namespaces IST0158 looks at are the injected ones.
    for (const r of expectedResources(c, 'IST0158'))
      expect(a.namespaces.get(r.replace('Namespace ', ''))!.injection).toBe('enabled')
    expect(a.namespaces.get('default')!.injection).toBe('none')
    expect(resources(a, 'IST0103')).toEqual([])
    const overwritten = a.workloads.find((w) => w.ref.name === 'details-v1-pod-overwritten-sidecar')!
    expect(overwritten.lostAnnotations.map((l) => l.key)).toEqual(['sidecar.istio.io/proxyImage'])
  })

  it('image-auto.yaml: IST0146 for the gateway Deployment nothing injects, IST0147 for the pod', async () => {
    const c = expectedCase('Detect `image: auto` in non-injected pods')
    const a = await analyze(c.inputFiles)
    expect(resources(a, 'IST0146')).toEqual(expectedResources(c, 'IST0146'))
    expect(resources(a, 'IST0147')).toEqual(expectedResources(c, 'IST0147'))
    const gw = a.workloads.find((w) => w.ref.name === 'non-injected-gateway-deployment')!
    expect(gw).toMatchObject({proxy: 'none', predicted: true})
    expect(gw.traits).toEqual(['injected-gateway'])
    // The webhook objects of the file are evaluated: the pod opting in by label is injectable.
    expect(a.namespaces.get('injected')!.injection).toBe('enabled')
    expect(a.namespaces.get('non-injected')!.injection).toBe('none')
  })

  it('webhook.yaml: old-style injector webhooks (sidecar-injector.istio.io) are read and evaluated', async () => {
    const a = await analyze(['webhook.yaml'])
    const {webhooks} = analyzeInjectionWebhooks(a.objects)
    expect(webhooks.webhooks.map((w) => `${w.configuration}:${w.name}`)).toEqual([
      'istio-sidecar-injector-missing-overlap:sidecar-injector.istio.io',
      'istio-sidecar-injector-overlap:sidecar-injector.istio.io',
    ])
    expect(webhooks.enabledByDefault).toBe(false)
    expect(webhooks.tags).toEqual({})
    const ns = (labels: Record<string, string>) =>
      analyzeNamespace('x', {apiVersion: 'v1', kind: 'Namespace', metadata: {name: 'x', labels}}, {webhooks}).state
    expect(ns({'istio-injection': 'enabled'}).injection).toBe('enabled')
    expect(ns({}).injection).toBe('none')
    // No revision webhook is installed: istio.io/rev injects nothing here.
    expect(ns({'istio.io/rev': 'canary'}).injection).toBe('none')
  })
})

describeWithShared('istioctl analyze corpus: Service port names', () => {
  it.each([
    ['portNameNotFollowConvention', 'IST0118'],
    ['namedPort', 'IST0118'],
    ['unnamedPortInSystemNamespace', 'IST0118'],
    ['ExternalNameServiceTypeInvalidPortName', 'IST0150'],
    ['ExternalNameServiceTypeValidPortName', 'IST0150'],
  ])('%s: %s as the analyzer reports it', async (name, code) => {
    const c = expectedCase(name)
    const a = await analyze(c.inputFiles)
    expect(resources(a, code)).toEqual(expectedResources(c, code))
    // ExternalName Services get IST0150 instead of IST0118, never both.
    expect(resources(a, code === 'IST0118' ? 'IST0150' : 'IST0118')).toEqual(
      expectedResources(c, code === 'IST0118' ? 'IST0150' : 'IST0118'),
    )
  })

  it('service-no-port-name.yaml: the flagged ports block the plan once a waypoint is planned', async () => {
    const a = await analyze(['service-no-port-name.yaml'])
    const {services} = analyzeServices(a.objects, 'my-namespace1', [])
    const f = servicePortFindings(services, {waypointPlanned: true, waypointFor: 'service'})
    expect(f.map((x) => [x.id, x.severity])).toEqual([
      ['IST0118/my-namespace1/my-service1/8080', 'blocker'],
      ['IST0118/my-namespace1/my-service1/8081', 'blocker'],
    ])
  })

  it('the analyzer expectations exist (guards the transcription)', () => {
    expect(expectedResources(expectedCase('portNameNotFollowConvention'), 'IST0118')).toEqual([
      'Service my-namespace1/my-service1',
      'Service my-namespace1/my-service1',
      'Service my-namespace2/my-service2',
    ])
  })
})
