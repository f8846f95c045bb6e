import {describe, expect, it} from 'vitest'
import {
  analyzeAuthorizationPolicy,
  classifyAuthorizationPolicy,
  L4_WHEN_KEYS,
} from '../../src/planner/classify/authz.js'
import {classifyObjects} from '../../src/planner/classify/index.js'
import type {KubeObject} from '../../src/planner/model.js'
import {bookinfoBase, classifyContext, deployment, istio, kubeGateway, service} from './support/classify-context.js'

const base = bookinfoBase()

function ap(
  spec: Record<string, unknown>,
  opts: {name?: string; namespace?: string; annotations?: Record<string, string>} = {},
): KubeObject {
  return istio('AuthorizationPolicy', opts.name ?? 'p', spec, opts)
}

/** An ALLOW/DENY selector policy on reviews with one rule. */
function oneRule(rule: Record<string, unknown>, action = 'ALLOW'): KubeObject {
  return ap({selector: {matchLabels: {app: 'reviews'}}, action, rules: [rule]})
}

function classify(obj: KubeObject, opts: Parameters<typeof classifyContext>[1] = {}) {
  return classifyAuthorizationPolicy(obj, classifyContext([...base, obj], opts))
}

function analyze(obj: KubeObject, opts: Parameters<typeof classifyContext>[1] = {}) {
  return analyzeAuthorizationPolicy(obj, classifyContext([...base, obj], opts))
}

describe('AuthorizationPolicy field table (DOMAIN §3.1)', () => {
  const sourceFields: [string, 'L4' | 'L7' | 'ignored', {identity?: boolean; peerIp?: boolean}][] = [
    ['principals', 'L4', {identity: true}],
    ['notPrincipals', 'L4', {identity: true}],
    ['namespaces', 'L4', {identity: true}],
    ['notNamespaces', 'L4', {identity: true}],
    ['serviceAccounts', 'L4', {identity: true}],
    ['notServiceAccounts', 'L4', {identity: true}],
    ['ipBlocks', 'L4', {peerIp: true}],
    ['notIpBlocks', 'L4', {peerIp: true}],
    ['trustDomains', 'ignored', {}],
    ['notTrustDomains', 'ignored', {}],
    ['requestPrincipals', 'L7', {}],
    ['notRequestPrincipals', 'L7', {}],
    ['remoteIpBlocks', 'L7', {}],
    ['notRemoteIpBlocks', 'L7', {}],
  ]
  it.each(sourceFields)('from.source.%s is %s', (fieldName, layer, keyed) => {
    const a = analyze(oneRule({from: [{source: {[fieldName]: ['x']}}]}))
    const f = a.rules[0]!.fields
    expect(f).toHaveLength(1)
    expect(f[0]!.path).toBe(`spec.rules[0].from[0].source.${fieldName}`)
    expect(f[0]!.layer).toBe(layer)
    expect(f[0]!.identity).toBe(keyed.identity === true)
    expect(f[0]!.peerIp).toBe(keyed.peerIp === true)
    expect(f[0]!.negative).toBe(fieldName.startsWith('not'))
  })

  const operationFields: [string, 'L4' | 'L7'][] = [
    ['ports', 'L4'],
    ['notPorts', 'L4'],
    ['hosts', 'L7'],
    ['notHosts', 'L7'],
    ['methods', 'L7'],
    ['notMethods', 'L7'],
    ['paths', 'L7'],
    ['notPaths', 'L7'],
  ]
  it.each(operationFields)('to.operation.%s is %s', (fieldName, layer) => {
    const a = analyze(oneRule({to: [{operation: {[fieldName]: ['8080']}}]}))
    expect(a.rules[0]!.fields.map((f) => [f.path, f.layer])).toEqual([
      [`spec.rules[0].to[0].operation.${fieldName}`, layer],
    ])
  })

  it('the L4 when keys are exactly source.ip, source.namespace, source.principal, destination.ip, destination.port', () => {
    expect([...L4_WHEN_KEYS].sort()).toEqual([
      'destination.ip',
      'destination.port',
      'source.ip',
      'source.namespace',
      'source.principal',
    ])
  })

  const whenKeys: [string, 'L4' | 'L7', RegExp][] = [
    ['source.ip', 'L4', /direct-peer IP/],
    ['source.namespace', 'L4', /source namespace/],
    ['source.principal', 'L4', /peer identity/],
    ['destination.ip', 'L4', /destination IP/],
    ['destination.port', 'L4', /destination port/],
    ['request.headers[x-user]', 'L7', /HTTP header/],
    ['request.auth.principal', 'L7', /JWT/],
    ['request.auth.audiences', 'L7', /JWT/],
    ['request.auth.presenter', 'L7', /JWT/],
    ['request.auth.claims[groups]', 'L7', /JWT/],
    ['remote.ip', 'L7', /original client IP/],
    ['connection.sni', 'L7', /not HTTP, but ztunnel does not support it/],
    ['source.serviceAccount', 'L7', /from\.source\.serviceAccounts/],
    ['source.trustDomain', 'L7', /not supported by ztunnel/],
    ['experimental.envoy.filters.network.mysql_proxy[db.table]', 'L7', /Envoy filter metadata/],
    ['destination.name', 'L7', /not one of the L4 condition keys/],
  ]
  it.each(whenKeys)('when key %s is %s', (key, layer, why) => {
    const value = key === 'destination.port' ? '8080' : 'v'
    const a = analyze(oneRule({when: [{key, values: [value]}]}))
    const f = a.rules[0]!.fields[0]!
    expect(f.path).toBe(`spec.rules[0].when[0].key=${key}`)
    expect(f.layer).toBe(layer)
    expect(f.why).toMatch(why)
  })

  it('a when condition with only notValues counts and is negative', () => {
    const a = analyze(oneRule({when: [{key: 'source.namespace', notValues: ['legacy']}]}))
    expect(a.rules[0]!.fields[0]).toMatchObject({layer: 'L4', negative: true, enforced: true})
    expect(a.ztunnelPolicy!.rules).toEqual([{when: [{key: 'source.namespace', notValues: ['legacy']}]}])
  })

  it('serviceAccounts are dropped on a known Istio < 1.25 and L4 on 1.25+', () => {
    const p = oneRule({from: [{source: {serviceAccounts: ['bookinfo/productpage']}}]})
    const old = analyze(p, {istioVersion: '1.24'})
    expect(old.rules[0]!.fields[0]).toMatchObject({layer: 'ignored', enforced: false})
    expect(old.rules[0]!.fields[0]!.why).toMatch(/1\.25/)
    expect(old.ztunnelEffect).toBe('deny-all')
    const cur = analyze(p, {istioVersion: '1.25'})
    expect(cur.rules[0]!.fields[0]).toMatchObject({layer: 'L4', enforced: true})
    expect(cur.ztunnelEffect).toBe('as-written')
  })

  it('the classification lists one reason per field with its exact path', () => {
    const {item} = classify(
      oneRule({
        from: [{source: {principals: ['cluster.local/ns/bookinfo/sa/productpage']}}],
        to: [{operation: {ports: ['9080'], notMethods: ['DELETE']}}],
      }),
    )
    expect(item.reasons).toContain(
      'spec.rules[0].from[0].source.principals: peer identity (SPIFFE principal): L4, enforced by ztunnel',
    )
    expect(item.reasons).toContain('spec.rules[0].to[0].operation.ports: destination port: L4, enforced by ztunnel')
    expect(item.reasons).toContain(
      'spec.rules[0].to[0].operation.notMethods: negative HTTP method match: L7, needs a waypoint',
    )
  })
})

describe('ALLOW conversion (rules with any L7 attribute are dropped)', () => {
  it('L4-only ALLOW is enforced as written and kept', () => {
    const rule = {
      from: [{source: {principals: ['cluster.local/ns/bookinfo/sa/productpage']}}],
      to: [{operation: {ports: ['9080']}}],
    }
    const a = analyze(oneRule(rule))
    expect(a.ztunnelEffect).toBe('as-written')
    expect(a.ztunnelPolicy).toEqual({action: 'ALLOW', rules: [rule]})
    expect(a.l7Rules).toEqual([])
    const {item, findings} = classify(oneRule(rule))
    expect(item).toMatchObject({
      verdict: 'L4',
      action: 'keep',
      scope: 'workload',
      ztunnel: 'as-written',
      services: ['reviews'],
    })
    expect(findings).toEqual([])
  })

  it('an ALLOW whose only rule has an L7 field becomes deny-all (fail-closed) and is re-targeted', () => {
    const rule = {
      from: [{source: {principals: ['cluster.local/ns/bookinfo/sa/productpage']}}],
      to: [{operation: {methods: ['GET']}}],
    }
    const a = analyze(oneRule(rule))
    expect(a.rules[0]!.outcome).toBe('dropped')
    expect(a.ztunnelEffect).toBe('deny-all')
    expect(a.ztunnelPolicy).toEqual({action: 'ALLOW', rules: []})
    expect(a.l7Rules).toEqual([rule])
    // The principal lived in a dropped rule: what ztunnel enforces is not identity-keyed.
    expect(a.identityKeyed).toBe(false)
    const {item} = classify(oneRule(rule))
    expect(item).toMatchObject({verdict: 'L7', action: 'retarget', ztunnel: 'deny-all'})
    expect(item.reasons).toContain(
      'spec.rules[0]: ALLOW rule with L7 attributes: ztunnel drops the whole rule (it never matches)',
    )
    expect(
      item.reasons.some(
        (r) =>
          r.startsWith('spec.rules: ') &&
          r.includes('all traffic to the selected workloads is denied') &&
          r.endsWith('[fail-closed]'),
      ),
    ).toBe(true)
    expect(
      item.reasons.some((r) => r.startsWith('spec: must be carried to the waypoint with targetRefs (Service reviews)')),
    ).toBe(true)
  })

  it('an ALLOW with one L7 rule and one L4 rule is narrowed to the L4 rule', () => {
    const l4 = {from: [{source: {namespaces: ['bookinfo']}}]}
    const l7 = {to: [{operation: {paths: ['/admin']}}]}
    const a = analyze(ap({selector: {matchLabels: {app: 'reviews'}}, rules: [l7, l4]}))
    expect(a.rules.map((r) => r.outcome)).toEqual(['dropped', 'as-written'])
    expect(a.ztunnelEffect).toBe('narrowed')
    expect(a.ztunnelPolicy!.rules).toEqual([l4])
    expect(a.l7Rules).toEqual([l7])
  })

  it('ALLOW without rules is deny-all exactly as with sidecars: L4 keep', () => {
    const p = ap({selector: {matchLabels: {app: 'reviews'}}, action: 'ALLOW'})
    const a = analyze(p)
    expect(a.hasRules).toBe(false)
    expect(a.ztunnelEffect).toBe('as-written')
    const {item} = classify(p)
    expect(item).toMatchObject({verdict: 'L4', action: 'keep'})
    expect(item.reasons).toContain(
      'spec.rules: ALLOW without rules: deny-all, enforced the same way by ztunnel as by sidecars',
    )
  })

  it('an empty rule {} matches everything at ztunnel too', () => {
    const a = analyze(ap({rules: [{}]}))
    expect(a.rules[0]).toMatchObject({matchesEverything: true, outcome: 'as-written', ztunnelRule: {}})
    expect(a.ztunnelEffect).toBe('as-written')
  })

  it('an entry holding only trustDomains becomes an empty match: the ALLOW never matches', () => {
    const p = oneRule({from: [{source: {trustDomains: ['partner.example']}}]})
    const a = analyze(p)
    expect(a.rules[0]!.from[0]!.outcome).toBe('empty')
    expect(a.rules[0]!.outcome).toBe('never-matches')
    expect(a.ztunnelEffect).toBe('deny-all')
    const {item, findings} = classify(p)
    expect(item).toMatchObject({verdict: 'L7', action: 'retarget'})
    expect(findings.map((f) => f.id)).toEqual(['E22/AuthorizationPolicy/bookinfo/p/trust-domains'])
    expect(findings[0]!.code).toBe('TrustDomainsIgnoredAtZtunnel')
  })

  it('trustDomains next to principals in one entry is dropped silently: the ALLOW allows more', () => {
    const a = analyze(oneRule({from: [{source: {principals: ['*'], trustDomains: ['partner.example']}}]}))
    expect(a.rules[0]!.outcome).toBe('broadened')
    expect(a.ztunnelEffect).toBe('broadened')
    expect(a.ztunnelPolicy!.rules).toEqual([{from: [{source: {principals: ['*']}}]}])
  })

  it('a from list with a trustDomains-only entry and a principals entry loses the first alternative', () => {
    const a = analyze(
      oneRule({
        from: [{source: {trustDomains: ['partner.example']}}, {source: {principals: ['cluster.local/ns/a/sa/b']}}],
      }),
    )
    expect(a.rules[0]!.outcome).toBe('narrowed')
    expect(a.ztunnelPolicy!.rules).toEqual([{from: [{source: {principals: ['cluster.local/ns/a/sa/b']}}]}])
  })
})

describe('DENY conversion (L7 pieces blanked, empty matches skipped)', () => {
  it('a DENY made only of L7 attributes is a no-op (fail-open)', () => {
    const p = oneRule({to: [{operation: {methods: ['DELETE']}}]}, 'DENY')
    const a = analyze(p)
    expect(a.rules[0]!.outcome).toBe('never-matches')
    expect(a.ztunnelEffect).toBe('no-op')
    expect(a.ztunnelPolicy).toEqual({action: 'DENY', rules: []})
    const {item} = classify(p)
    expect(item).toMatchObject({verdict: 'L7', action: 'retarget', ztunnel: 'no-op'})
    expect(
      item.reasons.some(
        (r) => r.startsWith('spec.rules[0]: DENY rule can never fire at ztunnel') && r.includes('(fail-open)'),
      ),
    ).toBe(true)
    expect(item.reasons.some((r) => r.startsWith('spec.rules: ') && r.endsWith('[fail-open]'))).toBe(true)
  })

  it('DENY notRequestPrincipals ["*"] is a no-op at ztunnel (#61126)', () => {
    const a = analyze(ap({action: 'DENY', rules: [{from: [{source: {notRequestPrincipals: ['*']}}]}]}))
    expect(a.ztunnelEffect).toBe('no-op')
  })

  it('ports and methods in one entry: enforced on the port only, denying more than written', () => {
    const a = analyze(oneRule({to: [{operation: {ports: ['8080'], methods: ['POST']}}]}, 'DENY'))
    expect(a.rules[0]!.to[0]!.outcome).toBe('broader')
    expect(a.rules[0]!.outcome).toBe('broadened')
    expect(a.ztunnelEffect).toBe('broadened')
    expect(a.ztunnelPolicy!.rules).toEqual([{to: [{operation: {ports: ['8080']}}]}])
  })

  it('an L7-only alternative next to an L4 one is dropped: the DENY denies less', () => {
    const a = analyze(oneRule({to: [{operation: {methods: ['POST']}}, {operation: {ports: ['8080']}}]}, 'DENY'))
    expect(a.rules[0]!.to.map((m) => m.outcome)).toEqual(['empty', 'same'])
    expect(a.rules[0]!.outcome).toBe('narrowed')
    expect(a.ztunnelEffect).toBe('narrowed')
    expect(a.ztunnelPolicy!.rules).toEqual([{to: [{operation: {ports: ['8080']}}]}])
  })

  it('an L7 when condition kills the whole DENY rule even when other clauses are L4', () => {
    const a = analyze(
      oneRule(
        {to: [{operation: {ports: ['8080']}}], when: [{key: 'request.headers[x-token]', notValues: ['admin']}]},
        'DENY',
      ),
    )
    expect(a.rules[0]!.when[0]!.outcome).toBe('empty')
    expect(a.rules[0]!.outcome).toBe('never-matches')
    expect(a.ztunnelEffect).toBe('no-op')
  })

  it('a DENY with an L7-only rule and a mixed rule is both narrowed and broadened: reported as broadened', () => {
    const a = analyze(
      ap({
        action: 'DENY',
        rules: [{to: [{operation: {paths: ['/x']}}]}, {to: [{operation: {ports: ['9090'], paths: ['/y']}}]}],
      }),
    )
    expect(a.rules.map((r) => r.outcome)).toEqual(['never-matches', 'broadened'])
    expect(a.ztunnelEffect).toBe('broadened')
    expect(a.ztunnelMixed).toBe(true)
    expect(a.consequence).toMatch(/lets through some traffic .* and denies some that should pass/)
    expect(analyze(oneRule({to: [{operation: {ports: ['8080'], methods: ['POST']}}]}, 'DENY')).ztunnelMixed).toBe(false)
  })

  it('DENY without rules never matches, as with sidecars', () => {
    const a = analyze(ap({action: 'DENY'}))
    expect(a.ztunnelEffect).toBe('as-written')
    expect(classify(ap({selector: {matchLabels: {app: 'reviews'}}, action: 'DENY'})).item).toMatchObject({
      verdict: 'L4',
      action: 'keep',
    })
  })
})

describe('ports ztunnel cannot parse', () => {
  it('drops non-numeric and out-of-range values from ports (narrower) and notPorts (broader)', () => {
    const pos = analyze(oneRule({to: [{operation: {ports: ['8080', 'http', '70000']}}]}))
    expect(pos.rules[0]!.fields[0]!.droppedValues).toEqual(['http', '70000'])
    expect(pos.rules[0]!.outcome).toBe('narrowed')
    expect(pos.ztunnelPolicy!.rules).toEqual([{to: [{operation: {ports: ['8080']}}]}])
    const neg = analyze(oneRule({to: [{operation: {notPorts: ['15020', 'metrics']}}]}, 'DENY'))
    expect(neg.rules[0]!.outcome).toBe('broadened')
  })

  it('a port list with no valid port becomes an empty match', () => {
    const a = analyze(oneRule({to: [{operation: {ports: ['http']}}]}))
    expect(a.rules[0]!.to[0]!.outcome).toBe('empty')
    expect(a.ztunnelEffect).toBe('deny-all')
    // Not an L7 field: no waypoint can fix it, so it stays at ztunnel but needs a look.
    expect(classify(oneRule({to: [{operation: {ports: ['http']}}]})).item).toMatchObject({
      verdict: 'L4',
      action: 'keep-verify',
    })
  })
})

describe('CUSTOM, AUDIT, targetRefs', () => {
  it('CUSTOM is not sent to ztunnel: retarget, ext_authz silently stops (E16)', () => {
    const p = ap({
      selector: {matchLabels: {app: 'reviews'}},
      action: 'CUSTOM',
      provider: {name: 'ext-authz'},
      rules: [{to: [{operation: {paths: ['/headers']}}]}],
    })
    const a = analyze(p)
    expect(a.sentToZtunnel).toBe(false)
    expect(a.ztunnelEffect).toBe('ignored')
    expect(a.ztunnelPolicy).toBeUndefined()
    expect(a.rules[0]!.outcome).toBe('not-sent')
    const {item, findings} = classify(p)
    expect(item).toMatchObject({verdict: 'L7', action: 'retarget', ztunnel: 'ignored'})
    expect(
      item.reasons.some(
        (r) => r.startsWith('spec.action: CUSTOM is not sent to ztunnel') && r.includes('security regression'),
      ),
    ).toBe(true)
    expect(findings.map((f) => [f.id, f.severity])).toEqual([['E16/AuthorizationPolicy/bookinfo/p/custom', 'error']])
  })

  it('AUDIT is not sent to ztunnel: retarget with a warning', () => {
    const {item, findings} = classify(ap({selector: {matchLabels: {app: 'reviews'}}, action: 'AUDIT', rules: [{}]}))
    expect(item).toMatchObject({verdict: 'L7', action: 'retarget', ztunnel: 'ignored'})
    expect(findings.map((f) => [f.id, f.severity])).toEqual([['E16/AuthorizationPolicy/bookinfo/p/audit', 'warning']])
  })

  it('targetRefs policies are already waypoint policies: keep, ignored by ztunnel', () => {
    const p = ap({
      targetRefs: [{kind: 'Service', group: '', name: 'reviews'}],
      rules: [{to: [{operation: {methods: ['GET']}}]}],
    })
    const a = analyze(p)
    expect(a.scope).toBe('targetRefs')
    expect(a.ztunnelEffect).toBe('ignored')
    const {item, findings} = classify(p)
    expect(item).toMatchObject({
      verdict: 'L7',
      action: 'keep',
      scope: 'targetRefs',
      ztunnel: 'ignored',
      services: ['reviews'],
    })
    expect(item.reasons[0]).toMatch(/^spec\.targetRefs\[0\]: attached to the waypoint of Service reviews/)
    expect(findings).toEqual([])
  })

  it('targetRefs to an ingress Gateway is unaffected by the migration', () => {
    const gw = kubeGateway('ingress', 'istio')
    const p = ap({targetRefs: [{kind: 'Gateway', group: 'gateway.networking.k8s.io', name: 'ingress'}], rules: [{}]})
    const {item} = classifyAuthorizationPolicy(p, classifyContext([...base, gw, p]))
    expect(item).toMatchObject({verdict: 'unaffected', action: 'keep'})
  })

  it('targetRefs naming another namespace never attaches', () => {
    const p = ap({targetRefs: [{kind: 'Service', group: '', name: 'reviews', namespace: 'other'}]})
    const {item} = classify(p)
    expect(item.reasons[0]).toMatch(/^spec\.targetRefs\[0\]\.namespace: points at namespace other/)
  })
})

describe('dry-run (istio.io/dry-run)', () => {
  const p = ap(
    {selector: {matchLabels: {app: 'reviews'}}, rules: [{to: [{operation: {methods: ['GET']}}]}]},
    {annotations: {'istio.io/dry-run': 'true'}},
  )

  it('Istio <= 1.28: ztunnel enforces it — blocker', () => {
    const a = analyze(p, {istioVersion: '1.28'})
    expect(a).toMatchObject({dryRun: true, dryRunAtZtunnel: 'enforced', sentToZtunnel: true, ztunnelEffect: 'deny-all'})
    const {item, findings} = classify(p, {istioVersion: '1.28'})
    expect(item).toMatchObject({verdict: 'blocker', action: 'blocker'})
    expect(item.reasons).toContain(
      'metadata.annotations[istio.io/dry-run]: ztunnel on Istio <= 1.28 does not read the dry-run annotation: the policy is ENFORCED once the pods are ambient',
    )
    expect(findings.find((f) => f.id === 'E16/AuthorizationPolicy/bookinfo/p/dry-run')?.severity).toBe('blocker')
  })

  it('Istio >= 1.29: not sent unless the flag — no effect', () => {
    const a = analyze(p, {istioVersion: '1.29'})
    expect(a).toMatchObject({dryRunAtZtunnel: 'not-sent', sentToZtunnel: false, ztunnelEffect: 'ignored'})
    const {item, findings} = classify(p, {istioVersion: '1.30.1'})
    expect(item).toMatchObject({verdict: 'inert', action: 'no-effect', ztunnel: 'ignored'})
    expect(item.reasons.some((r) => r.includes('must be carried'))).toBe(false)
    expect(findings.find((f) => f.id === 'E16/AuthorizationPolicy/bookinfo/p/dry-run')?.severity).toBe('warning')
  })

  it('unknown version: says both and blocks for a person to decide', () => {
    const {item} = classify(p)
    expect(item).toMatchObject({verdict: 'blocker', action: 'manual'})
    const why = item.reasons.find((r) => r.startsWith('metadata.annotations[istio.io/dry-run]'))!
    expect(why).toMatch(/<= 1\.28 ztunnel ENFORCES/)
    expect(why).toMatch(/>= 1\.29 they are not sent/)
  })

  it('only ParseBool-true values count', () => {
    expect(analyze(ap({}, {annotations: {'istio.io/dry-run': 'yes'}})).dryRun).toBe(false)
    expect(analyze(ap({}, {annotations: {'istio.io/dry-run': 'True'}})).dryRun).toBe(true)
  })
})

describe('scope and root namespace (E14)', () => {
  it('selector-less policy in the namespace: namespace scope, all Services', () => {
    const {item} = classify(ap({action: 'DENY', rules: [{to: [{operation: {paths: ['/admin']}}]}]}))
    expect(item).toMatchObject({
      verdict: 'L7',
      action: 'retarget',
      scope: 'namespace',
      ztunnel: 'no-op',
      services: ['details', 'productpage', 'ratings', 'reviews'],
    })
  })

  it('mesh-wide L7 policy in the root namespace is a blocker with E14', () => {
    const p = ap({rules: [{to: [{operation: {methods: ['GET']}}]}]}, {name: 'foo', namespace: 'istio-system'})
    const res = classifyObjects(classifyContext([...base, p]))
    const item = res.items.find((i) => i.ref.name === 'foo')!
    expect(item).toMatchObject({verdict: 'blocker', action: 'blocker', scope: 'mesh', ztunnel: 'deny-all'})
    expect(item.ref.namespace).toBe('istio-system')
    const f = res.findings.find((x) => x.id === 'E14/AuthorizationPolicy/istio-system/foo')!
    expect(f).toMatchObject({code: 'RootNamespaceL7Policy', severity: 'blocker'})
    expect(f.message).toMatch(/every namespace/)
  })

  it('mesh-wide L4 policy in the root namespace is kept', () => {
    const p = ap(
      {rules: [{from: [{source: {namespaces: ['istio-system', 'bookinfo']}}]}]},
      {name: 'mesh-allow', namespace: 'istio-system'},
    )
    const item = classifyObjects(classifyContext([...base, p])).items.find((i) => i.ref.name === 'mesh-allow')!
    expect(item).toMatchObject({verdict: 'L4', action: 'keep', scope: 'mesh'})
  })

  it('root selector policy matching pods here is inventoried; L7 content is a blocker', () => {
    const p = ap(
      {selector: {matchLabels: {app: 'ratings'}}, rules: [{to: [{operation: {methods: ['GET']}}]}]},
      {name: 'root-ratings', namespace: 'istio-system'},
    )
    const item = classifyObjects(classifyContext([...base, p])).items.find((i) => i.ref.name === 'root-ratings')!
    expect(item).toMatchObject({verdict: 'blocker', action: 'blocker', scope: 'workload', services: ['ratings']})
  })

  it('selector matching no workload: no effect; matching only gateway pods: unaffected', () => {
    expect(
      classify(ap({selector: {matchLabels: {app: 'nothing'}}, rules: [{to: [{operation: {methods: ['GET']}}]}]})).item,
    ).toMatchObject({verdict: 'inert', action: 'no-effect'})
    const gw = deployment('ingress', {istio: 'ingressgateway'})
    const p = ap({selector: {matchLabels: {istio: 'ingressgateway'}}, rules: [{to: [{operation: {methods: ['GET']}}]}]})
    expect(classifyAuthorizationPolicy(p, classifyContext([...base, gw, p])).item).toMatchObject({
      verdict: 'unaffected',
      action: 'keep',
    })
  })

  it('services are the Services whose selector covers a selected workload', () => {
    const extra = [
      deployment('reviews-v3', {app: 'reviews', version: 'v3'}),
      service('reviews-v3', {app: 'reviews', version: 'v3'}),
    ]
    const p = ap({selector: {matchLabels: {version: 'v3'}}, rules: [{}]})
    const a = analyzeAuthorizationPolicy(p, classifyContext([...base, ...extra, p]))
    expect(a.workloads).toEqual(['reviews-v3'])
    expect(a.services).toEqual(['reviews', 'reviews-v3'])
  })
})

describe('identity-keyed L4 policies meeting a waypoint (E21)', () => {
  const byPrincipal = oneRule({from: [{source: {principals: ['cluster.local/ns/bookinfo/sa/productpage']}}]})

  it('keep without a planned waypoint, keep-verify with one', () => {
    expect(classify(byPrincipal).item.action).toBe('keep')
    const {item, findings} = classify(byPrincipal, {waypointPlanned: true})
    expect(item).toMatchObject({verdict: 'L4', action: 'keep-verify'})
    expect(item.reasons).toContain(
      "spec.rules[0].from[0].source.principals: keyed on the caller's identity: once a waypoint fronts reviews, the destination ztunnel sees the waypoint's identity for proxied traffic (waypoints do not impersonate clients, E21)",
    )
    expect(findings.map((f) => f.id)).toEqual(['E21/AuthorizationPolicy/bookinfo/p'])
  })

  it.each([
    ['namespaces', {from: [{source: {namespaces: ['bookinfo']}}]}],
    ['serviceAccounts', {from: [{source: {serviceAccounts: ['productpage']}}]}],
    ['source.principal', {when: [{key: 'source.principal', values: ['cluster.local/ns/x/sa/y']}]}],
    ['source.namespace', {when: [{key: 'source.namespace', values: ['x']}]}],
    ['ipBlocks', {from: [{source: {ipBlocks: ['10.0.0.0/8']}}]}],
  ])('%s keys the policy on the caller', (_name, rule) => {
    expect(classify(oneRule(rule), {waypointPlanned: true}).item.action).toBe('keep-verify')
  })

  it('port-only policies do not depend on the caller', () => {
    const a = analyze(oneRule({to: [{operation: {ports: ['9080']}}]}))
    expect(a.identityKeyed || a.peerIpKeyed).toBe(false)
    expect(classify(oneRule({to: [{operation: {ports: ['9080']}}]}), {waypointPlanned: true}).item.action).toBe('keep')
  })
})

describe('when: source.serviceAccount (E22)', () => {
  const p = oneRule({when: [{key: 'source.serviceAccount', values: ['bookinfo/productpage']}]})
  it('suggests from.source.serviceAccounts on >= 1.25 (or unknown)', () => {
    const f = classify(p).findings.find((x) => x.id === 'E22/AuthorizationPolicy/bookinfo/p/source-service-account')!
    expect(f.fix).toMatch(/from\.source\.serviceAccounts/)
    expect(classify(p).item).toMatchObject({verdict: 'L7', action: 'retarget'})
  })
  it('on < 1.25 points at principals instead', () => {
    const f = classify(p, {istioVersion: '1.24'}).findings.find(
      (x) => x.code === 'ServiceAccountConditionNeedsWaypoint',
    )!
    expect(f.fix).toMatch(/principals/)
  })
})
