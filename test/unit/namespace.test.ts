import {describe, expect, it} from 'vitest'
import type {KubeObject} from '../../src/planner/model.js'
import {
  analyzeInjectionWebhooks,
  analyzeNamespace,
  injectionLabelsForIST0123,
  predictInjection,
  selectorMatches,
  type PodInjectionInput,
} from '../../src/planner/namespace.js'

function ns(name: string, labels: Record<string, string> = {}): KubeObject {
  return {apiVersion: 'v1', kind: 'Namespace', metadata: {name, labels}}
}

const state = (
  name: string,
  labels: Record<string, string>,
  webhooks?: ReturnType<typeof analyzeInjectionWebhooks>['webhooks'],
) => analyzeNamespace(name, ns(name, labels), webhooks ? {webhooks} : {})

/** MutatingWebhookConfiguration as the istiod chart renders it (DOMAIN §2.1). */
function chartWebhooks(
  opts: {revision?: string; defaultRevision?: boolean; enableNamespacesByDefault?: boolean; tag?: string} = {},
): KubeObject {
  const rev = opts.revision ?? 'default'
  const revValues = rev === 'default' ? ['default'] : [rev]
  const webhooks: unknown[] = [
    {
      name: 'rev.namespace.sidecar-injector.istio.io',
      namespaceSelector: {
        matchExpressions: [
          {key: 'istio.io/rev', operator: 'In', values: revValues},
          {key: 'istio-injection', operator: 'DoesNotExist'},
        ],
      },
      objectSelector: {matchExpressions: [{key: 'sidecar.istio.io/inject', operator: 'NotIn', values: ['false']}]},
    },
    {
      name: 'rev.object.sidecar-injector.istio.io',
      namespaceSelector: {
        matchExpressions: [
          {key: 'istio.io/rev', operator: 'DoesNotExist'},
          {key: 'istio-injection', operator: 'DoesNotExist'},
        ],
      },
      objectSelector: {
        matchExpressions: [
          {key: 'sidecar.istio.io/inject', operator: 'NotIn', values: ['false']},
          {key: 'istio.io/rev', operator: 'In', values: revValues},
        ],
      },
    },
  ]
  if (opts.defaultRevision ?? rev === 'default') {
    webhooks.push(
      {
        name: 'namespace.sidecar-injector.istio.io',
        namespaceSelector: {matchExpressions: [{key: 'istio-injection', operator: 'In', values: ['enabled']}]},
        objectSelector: {matchExpressions: [{key: 'sidecar.istio.io/inject', operator: 'NotIn', values: ['false']}]},
      },
      {
        name: 'object.sidecar-injector.istio.io',
        namespaceSelector: {
          matchExpressions: [
            {key: 'istio-injection', operator: 'DoesNotExist'},
            {key: 'istio.io/rev', operator: 'DoesNotExist'},
          ],
        },
        objectSelector: {
          matchExpressions: [
            {key: 'sidecar.istio.io/inject', operator: 'In', values: ['true']},
            {key: 'istio.io/rev', operator: 'DoesNotExist'},
          ],
        },
      },
    )
    if (opts.enableNamespacesByDefault) {
      webhooks.push({
        name: 'auto.sidecar-injector.istio.io',
        namespaceSelector: {
          matchExpressions: [
            {key: 'istio-injection', operator: 'DoesNotExist'},
            {key: 'istio.io/rev', operator: 'DoesNotExist'},
            {
              key: 'kubernetes.io/metadata.name',
              operator: 'NotIn',
              values: ['kube-system', 'kube-public', 'kube-node-lease', 'local-path-storage'],
            },
          ],
        },
        objectSelector: {
          matchExpressions: [
            {key: 'sidecar.istio.io/inject', operator: 'DoesNotExist'},
            {key: 'istio.io/rev', operator: 'DoesNotExist'},
          ],
        },
      })
    }
  }
  const labels: Record<string, string> = {'istio.io/rev': rev}
  if (opts.tag) labels['istio.io/tag'] = opts.tag
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'MutatingWebhookConfiguration',
    metadata: {
      name: opts.tag
        ? `istio-revision-tag-${opts.tag}`
        : rev === 'default'
          ? 'istio-sidecar-injector'
          : `istio-sidecar-injector-${rev}`,
      labels,
    },
    webhooks,
  }
}

function injectorConfigMap(opts: {name?: string; enableNamespacesByDefault?: boolean; config?: string}): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {name: opts.name ?? 'istio-sidecar-injector', namespace: 'istio-system'},
    data: {
      values: JSON.stringify({
        global: {},
        sidecarInjectorWebhook: {enableNamespacesByDefault: opts.enableNamespacesByDefault ?? false},
      }),
      config:
        opts.config ??
        'policy: enabled\nalwaysInjectSelector: []\nneverInjectSelector: []\ntemplate: |\n  {{ .Values }}\n',
    },
  }
}

describe('selectorMatches', () => {
  it('implements matchLabels and In/NotIn/Exists/DoesNotExist', () => {
    const l = {a: '1', b: '2'}
    expect(selectorMatches(undefined, l)).toBe(true)
    expect(selectorMatches({}, l)).toBe(true)
    expect(selectorMatches({matchLabels: {a: '1'}}, l)).toBe(true)
    expect(selectorMatches({matchLabels: {a: '2'}}, l)).toBe(false)
    expect(selectorMatches({matchExpressions: [{key: 'a', operator: 'In', values: ['1', '3']}]}, l)).toBe(true)
    expect(selectorMatches({matchExpressions: [{key: 'c', operator: 'In', values: ['1']}]}, l)).toBe(false)
    expect(selectorMatches({matchExpressions: [{key: 'a', operator: 'NotIn', values: ['1']}]}, l)).toBe(false)
    expect(selectorMatches({matchExpressions: [{key: 'c', operator: 'NotIn', values: ['1']}]}, l)).toBe(true)
    expect(selectorMatches({matchExpressions: [{key: 'b', operator: 'Exists'}]}, l)).toBe(true)
    expect(selectorMatches({matchExpressions: [{key: 'b', operator: 'DoesNotExist'}]}, l)).toBe(false)
    expect(selectorMatches({matchExpressions: [{key: 'b', operator: 'Gt', values: ['1']}]}, l)).toBe(false)
  })
})

describe('IST0123 counting rule (DOMAIN §0.1 finding 1)', () => {
  it.each([
    [{'istio-injection': 'enabled', 'istio.io/dataplane-mode': 'ambient'}, true],
    [{'istio-injection': 'enabled', 'istio.io/dataplane-mode': 'none'}, true],
    [{'istio-injection': 'enabled', 'istio.io/rev': 'canary'}, true],
    [{'istio.io/rev': 'canary', 'istio.io/dataplane-mode': 'ambient'}, true],
    [{'istio-injection': 'disabled', 'istio.io/dataplane-mode': 'ambient'}, false],
    [{'istio-injection': 'disabled', 'istio.io/rev': 'x'}, false],
    [{'istio-injection': 'enabled'}, false],
    [{'istio.io/dataplane-mode': 'ambient'}, false],
    [{'istio.io/rev': ''}, false],
  ])('%j → %s', (labels, expected) => {
    expect(state('ns1', labels).state.multipleInjectionLabels).toBe(expected)
  })

  it('lists the labels as istioctl prints them and skips istio-system', () => {
    expect(
      injectionLabelsForIST0123({'istio-injection': 'enabled', 'istio.io/dataplane-mode': 'ambient', other: 'x'}),
    ).toEqual(['istio-injection=enabled', 'istio.io/dataplane-mode=ambient'])
    const sys = state('istio-system', {'istio-injection': 'enabled', 'istio.io/rev': 'x'})
    expect(sys.state.multipleInjectionLabels).toBe(false)
    expect(sys.findings.map((f) => f.code)).not.toContain('ConflictingInjectionLabels')
  })

  it('reports IST0123 as a warning naming the labels, and says the sidecar wins', () => {
    const {findings} = state('shop', {'istio-injection': 'enabled', 'istio.io/dataplane-mode': 'ambient'})
    const f = findings.find((x) => x.code === 'ConflictingInjectionLabels')!
    expect(f).toMatchObject({id: 'IST0123/shop', severity: 'warning', ref: {kind: 'Namespace', name: 'shop'}})
    expect(f.message).toContain('[istio-injection=enabled istio.io/dataplane-mode=ambient]')
    expect(f.message).toMatch(/sidecar wins/)
  })
})

describe('analyzeNamespace state', () => {
  it('istio-injection=enabled: sidecar mode with the exact label', () => {
    const {state: s} = state('shop', {'istio-injection': 'enabled', team: 'a'})
    expect(s).toEqual({
      name: 'shop',
      labels: {'istio-injection': 'enabled', team: 'a'},
      sidecarLabels: [{key: 'istio-injection', value: 'enabled'}],
      injection: 'enabled',
      mode: 'sidecar',
      multipleInjectionLabels: false,
    })
  })

  it('istio.io/rev: revision injection, revision recorded', () => {
    const {state: s} = state('shop', {'istio.io/rev': 'canary'})
    expect(s.injection).toBe('enabled')
    expect(s.revision).toBe('canary')
    expect(s.sidecarLabels).toEqual([{key: 'istio.io/rev', value: 'canary'}])
    expect(s.mode).toBe('sidecar')
  })

  it('istio-injection beats istio.io/rev; both recorded exactly (E2)', () => {
    const {state: s, findings} = state('shop', {'istio-injection': 'disabled', 'istio.io/rev': 'canary'})
    expect(s.injection).toBe('disabled')
    expect(s.revision).toBe('canary')
    expect(s.sidecarLabels).toEqual([
      {key: 'istio-injection', value: 'disabled'},
      {key: 'istio.io/rev', value: 'canary'},
    ])
    const e2 = findings.find((f) => f.code === 'InjectionAndRevisionLabels')!
    expect(e2.id).toBe('E2/shop')
    expect(e2.message).toMatch(/istio-injection wins/)
    expect(e2.message).toMatch(/owns waypoints/)
  })

  it('istio-injection=disabled (or any other value) matches no webhook', () => {
    expect(state('a', {'istio-injection': 'disabled'}).state.injection).toBe('disabled')
    expect(state('a', {'istio-injection': 'yes'}).state.injection).toBe('disabled')
    expect(state('a', {'istio-injection': 'disabled', 'istio.io/dataplane-mode': 'ambient'}).state.mode).toBe('ambient')
  })

  it('an empty istio.io/rev is no injection, with a finding', () => {
    const {state: s, findings} = state('a', {'istio.io/rev': ''})
    expect(s.injection).toBe('none')
    expect(findings.find((f) => f.id === 'E1/a/empty')?.severity).toBe('warning')
  })

  it('mode: ambient, both, none; dataplane-mode and use-waypoint recorded', () => {
    const amb = state('a', {'istio.io/dataplane-mode': 'ambient', 'istio.io/use-waypoint': 'waypoint'}).state
    expect(amb).toMatchObject({mode: 'ambient', injection: 'none', dataplaneMode: 'ambient', useWaypoint: 'waypoint'})
    expect(state('a', {'istio.io/rev': 'x', 'istio.io/dataplane-mode': 'ambient'}).state.mode).toBe('both')
    expect(state('a', {'istio-injection': 'enabled', 'istio.io/dataplane-mode': 'ambient'}).state.mode).toBe('both')
    expect(state('a', {}).state.mode).toBe('none')
    expect(state('a', {'istio-injection': 'enabled', 'istio.io/dataplane-mode': 'none'}).state.mode).toBe('sidecar')
  })

  it('reports dataplane-mode=none next to injection, and unknown dataplane-mode values', () => {
    const none = state('a', {'istio-injection': 'enabled', 'istio.io/dataplane-mode': 'none'}).findings
    expect(none.map((f) => f.code)).toEqual(
      expect.arrayContaining(['ConflictingInjectionLabels', 'DataplaneNoneWithInjection']),
    )
    const odd = state('a', {'istio.io/dataplane-mode': 'sidecar'}).findings
    expect(odd.map((f) => f.code)).toContain('DataplaneModeUnknown')
  })

  it('E1: a revision-labelled namespace gets an info finding naming the revision, or the tag and its revision', () => {
    const plain = state('a', {'istio.io/rev': '1-24'}).findings.find((f) => f.id === 'E1/a')!
    expect(plain.severity).toBe('info')
    expect(plain.message).toContain('revision "1-24"')
    const {webhooks} = analyzeInjectionWebhooks([chartWebhooks({revision: '1-24', tag: 'prod'})])
    expect(webhooks.tags).toEqual({prod: '1-24'})
    const tagged = state('a', {'istio.io/rev': 'prod'}, webhooks).findings.find((f) => f.id === 'E1/a')!
    expect(tagged.message).toContain('revision tag "prod" (→ revision 1-24)')
  })

  it('without a Namespace object: unlabelled, with a finding', () => {
    const {state: s, findings} = analyzeNamespace('ghost', undefined)
    expect(s).toMatchObject({name: 'ghost', labels: {}, sidecarLabels: [], injection: 'none', mode: 'none'})
    expect(findings).toEqual([
      expect.objectContaining({
        id: 'namespace-missing/ghost',
        ref: {apiVersion: 'v1', kind: 'Namespace', name: 'ghost'},
      }),
    ])
  })

  it('does not mutate the Namespace object and is JSON-serialisable', () => {
    const obj = ns('a', {'istio-injection': 'enabled'})
    const {state: s} = analyzeNamespace('a', obj)
    s.labels.extra = 'x'
    expect(obj.metadata.labels).toEqual({'istio-injection': 'enabled'})
    expect(JSON.parse(JSON.stringify(s))).toEqual(s)
  })
})

describe('injection webhooks', () => {
  it('evaluates installed webhooks: a revision that no webhook serves injects nothing', () => {
    const {webhooks} = analyzeInjectionWebhooks([
      chartWebhooks(),
      chartWebhooks({revision: 'canary', defaultRevision: false}),
    ])
    expect(webhooks.webhooks).toHaveLength(6)
    expect(state('a', {'istio.io/rev': 'canary'}, webhooks).state.injection).toBe('enabled')
    expect(state('a', {'istio.io/rev': 'default'}, webhooks).state.injection).toBe('enabled')
    const pidgeon = state('a', {'istio.io/rev': 'pidgeon'}, webhooks)
    expect(pidgeon.state.injection).toBe('none')
    expect(pidgeon.findings.find((f) => f.id === 'E1/a/unknown-revision')?.severity).toBe('warning')
    expect(state('a', {'istio-injection': 'enabled'}, webhooks).state.injection).toBe('enabled')
    expect(state('a', {}, webhooks).state.injection).toBe('none')
    expect(webhooks.enabledByDefault).toBe(false)
  })

  it('E3 from the auto webhook: unlabelled namespaces are injected, kube-system is not, and removing labels does not help', () => {
    const {webhooks, findings} = analyzeInjectionWebhooks([chartWebhooks({enableNamespacesByDefault: true})])
    expect(webhooks.enabledByDefault).toBe(true)
    expect(findings).toEqual([
      expect.objectContaining({
        id: 'E3/injection-enabled-by-default',
        code: 'InjectionEnabledByDefault',
        severity: 'warning',
      }),
    ])
    expect(findings[0]!.message).toContain('auto.sidecar-injector.istio.io')
    const bar = state('bar', {}, webhooks)
    expect(bar.state.injection).toBe('enabled')
    expect(bar.state.mode).toBe('sidecar')
    expect(bar.findings.find((f) => f.id === 'E3/bar')?.fix).toMatch(/istio-injection=disabled/)
    // An ambient label alone does not stop the auto webhook: the sidecar wins.
    expect(state('amb', {'istio.io/dataplane-mode': 'ambient'}, webhooks).state.mode).toBe('both')
    expect(state('off', {'istio-injection': 'disabled'}, webhooks).state.injection).toBe('disabled')
    expect(state('kube-system', {}, webhooks).state.injection).toBe('none')
  })

  it('E3 from the injector ConfigMap values when no webhook objects are present', () => {
    const {webhooks, findings} = analyzeInjectionWebhooks([injectorConfigMap({enableNamespacesByDefault: true})])
    expect(webhooks.webhooks).toEqual([])
    expect(webhooks.enabledByDefault).toBe(true)
    expect(webhooks.enabledByDefaultEvidence[0]).toContain('ConfigMap istio-system/istio-sidecar-injector')
    expect(findings.map((f) => f.id)).toEqual(['E3/injection-enabled-by-default'])
    expect(state('bar', {}, webhooks).state.injection).toBe('enabled')
    expect(state('kube-public', {}, webhooks).state.injection).toBe('none')
    // A revision's ConfigMap does not enable the default revision's auto webhook.
    expect(
      analyzeInjectionWebhooks([
        injectorConfigMap({name: 'istio-sidecar-injector-canary', enableNamespacesByDefault: true}),
      ]).webhooks.enabledByDefault,
    ).toBe(false)
    expect(
      analyzeInjectionWebhooks([injectorConfigMap({enableNamespacesByDefault: false})]).webhooks.enabledByDefault,
    ).toBe(false)
  })

  it('reads policy and never/always selectors from the injector config', () => {
    const {webhooks} = analyzeInjectionWebhooks([
      injectorConfigMap({
        config:
          'policy: disabled\nneverInjectSelector:\n- matchLabels: {batch: "true"}\nalwaysInjectSelector:\n- matchLabels: {mesh: "yes"}\n',
      }),
    ])
    expect(webhooks.injectorConfigs.default).toMatchObject({
      policy: 'disabled',
      neverInjectSelector: [{matchLabels: {batch: 'true'}}],
      alwaysInjectSelector: [{matchLabels: {mesh: 'yes'}}],
    })
  })

  it('an unreadable injector config is reported, not fatal', () => {
    const cm = injectorConfigMap({config: 'policy: [unclosed\n'})
    const {findings} = analyzeInjectionWebhooks([cm])
    expect(findings.map((f) => f.code)).toEqual(['InjectorConfigUnreadable'])
  })

  it('ignores webhooks that are not Istio injectors', () => {
    const other: KubeObject = {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'MutatingWebhookConfiguration',
      metadata: {name: 'vault'},
      webhooks: [{name: 'vault.hashicorp.com'}],
    }
    expect(analyzeInjectionWebhooks([other]).webhooks.webhooks).toEqual([])
  })
})

describe('predictInjection (webhook selectors + injectRequired)', () => {
  const pod = (over: Partial<PodInjectionInput> = {}): PodInjectionInput => ({
    namespace: 'shop',
    labels: {},
    annotations: {},
    hostNetwork: false,
    ...over,
  })
  const nsState = (labels: Record<string, string>, name = 'shop') => analyzeNamespace(name, ns(name, labels)).state
  const installed = analyzeInjectionWebhooks([
    chartWebhooks(),
    chartWebhooks({revision: 'canary', defaultRevision: false}),
  ]).webhooks

  // Each case runs against the chart's table (no webhook objects) and against the rendered webhooks:
  // both must agree, which is what makes the table trustworthy for manifests.
  describe.each([
    ['selector table', undefined],
    ['installed webhooks', installed],
  ])('%s', (_name, webhooks) => {
    const predict = (p: PodInjectionInput, labels: Record<string, string>) =>
      predictInjection(p, nsState(labels), webhooks).injected

    it('namespace injection, pod opt-out by label', () => {
      expect(predict(pod(), {'istio-injection': 'enabled'})).toBe(true)
      expect(predict(pod({labels: {'sidecar.istio.io/inject': 'false'}}), {'istio-injection': 'enabled'})).toBe(false)
      expect(predict(pod(), {'istio.io/rev': 'canary'})).toBe(true)
      expect(predict(pod({labels: {'sidecar.istio.io/inject': 'false'}}), {'istio.io/rev': 'canary'})).toBe(false)
    })

    it('the pod label beats the deprecated annotation, both ways', () => {
      const labels = {'istio-injection': 'enabled'}
      expect(predict(pod({annotations: {'sidecar.istio.io/inject': 'false'}}), labels)).toBe(false)
      expect(
        predict(
          pod({labels: {'sidecar.istio.io/inject': 'false'}, annotations: {'sidecar.istio.io/inject': 'true'}}),
          labels,
        ),
      ).toBe(false)
      expect(
        predict(
          pod({labels: {'sidecar.istio.io/inject': 'true'}, annotations: {'sidecar.istio.io/inject': 'false'}}),
          labels,
        ),
      ).toBe(true)
    })

    it('hostNetwork is never injected', () => {
      expect(predict(pod({hostNetwork: true}), {'istio-injection': 'enabled'})).toBe(false)
    })

    it('pod-level opt-in works only in namespaces without injection labels', () => {
      expect(predict(pod({labels: {'sidecar.istio.io/inject': 'true'}}), {})).toBe(true)
      expect(predict(pod({labels: {'istio.io/rev': 'canary'}}), {})).toBe(true)
      expect(predict(pod({labels: {'sidecar.istio.io/inject': 'true'}}), {'istio-injection': 'disabled'})).toBe(false)
      expect(predict(pod({labels: {'istio.io/rev': 'canary'}}), {'istio-injection': 'disabled'})).toBe(false)
      // The annotation alone does not pass the object selector.
      expect(predict(pod({annotations: {'sidecar.istio.io/inject': 'true'}}), {})).toBe(false)
      expect(predict(pod(), {})).toBe(false)
      expect(predict(pod(), {'istio.io/dataplane-mode': 'ambient'})).toBe(false)
    })

    it('kube-system is never injected', () => {
      expect(
        predictInjection(
          pod({namespace: 'kube-system'}),
          nsState({'istio-injection': 'enabled'}, 'kube-system'),
          webhooks,
        ).injected,
      ).toBe(false)
    })
  })

  it('never/always-inject selectors and the injection policy', () => {
    const {webhooks} = analyzeInjectionWebhooks([
      injectorConfigMap({
        config: 'policy: enabled\nneverInjectSelector:\n- matchLabels: {batch: "true"}\nalwaysInjectSelector: []\n',
      }),
    ])
    const labels = {'istio-injection': 'enabled'}
    expect(predictInjection(pod({labels: {batch: 'true'}}), nsState(labels), webhooks)).toEqual({
      injected: false,
      reason: 'neverInjectSelector of ConfigMap istio-system/istio-sidecar-injector',
    })
    // An explicit label wins over the selectors.
    expect(
      predictInjection(pod({labels: {batch: 'true', 'sidecar.istio.io/inject': 'true'}}), nsState(labels), webhooks)
        .injected,
    ).toBe(true)
    const disabled = analyzeInjectionWebhooks([injectorConfigMap({config: 'policy: disabled\n'})]).webhooks
    expect(predictInjection(pod(), nsState(labels), disabled).injected).toBe(false)
    expect(
      predictInjection(pod({annotations: {'sidecar.istio.io/inject': 'true'}}), nsState(labels), disabled).injected,
    ).toBe(true)
  })

  it('the auto webhook (E3) injects pods without injection labels, not pods that say false', () => {
    const {webhooks} = analyzeInjectionWebhooks([chartWebhooks({enableNamespacesByDefault: true})])
    expect(predictInjection(pod(), nsState({}), webhooks).injected).toBe(true)
    expect(
      predictInjection(pod({annotations: {'sidecar.istio.io/inject': 'false'}}), nsState({}), webhooks).injected,
    ).toBe(false)
    expect(predictInjection(pod({labels: {'sidecar.istio.io/inject': 'false'}}), nsState({}), webhooks).injected).toBe(
      false,
    )
    const tableOnly = analyzeInjectionWebhooks([injectorConfigMap({enableNamespacesByDefault: true})]).webhooks
    expect(predictInjection(pod(), nsState({}), tableOnly)).toEqual({
      injected: true,
      reason: 'injection enabled by default (auto webhook)',
    })
  })

  it('says why', () => {
    expect(predictInjection(pod(), nsState({'istio-injection': 'enabled'})).reason).toBe(
      'namespace istio-injection=enabled',
    )
    expect(predictInjection(pod({labels: {'sidecar.istio.io/inject': 'true'}}), nsState({})).reason).toBe(
      'pod label sidecar.istio.io/inject=true',
    )
    expect(predictInjection(pod({hostNetwork: true}), nsState({'istio-injection': 'enabled'})).reason).toMatch(
      /hostNetwork/,
    )
  })
})
