// Policy migration (DOMAIN §3.1 "Re-targeting rules", §4.2, §7 E9/E14/E15/E16/E21/E22): what is created before
// the waypoint is bound, what replaces the originals after the restart, the findings, and the decisions.
import {describe, expect, it} from 'vitest'
import {parse} from 'yaml'
import type {KubeObject} from '../../src/planner/model.js'
import {MANAGED_BY_LABEL, PLAN_ANNOTATION} from '../../src/planner/plan-types.js'
import {
  COPIED_FROM_ANNOTATION,
  RETARGETABLE_KINDS,
  copyName,
  isRetargetable,
  markManaged,
} from '../../src/planner/retarget.js'
import {bookinfoBase, deployment, istio, service} from './support/classify-context.js'
import {allCreated, decisionFor, migrate, named} from './support/retarget.js'

const WAYPOINT = 'cluster.local/ns/bookinfo/sa/waypoint'
const ids = (m: ReturnType<typeof migrate>) => m.findings.map((f) => f.id)
const finding = (m: ReturnType<typeof migrate>, id: string) => {
  const f = m.findings.find((x) => x.id === id)
  if (!f) throw new Error(`no finding ${id}: ${ids(m).join(', ')}`)
  return f
}

const ratingsGetOnly = istio('AuthorizationPolicy', 'ratings-get-only', {
  selector: {matchLabels: {app: 'ratings'}},
  action: 'ALLOW',
  rules: [
    {
      from: [{source: {principals: ['cluster.local/ns/bookinfo/sa/bookinfo-reviews']}}],
      to: [{operation: {methods: ['GET'], paths: ['/ratings/*']}}],
    },
  ],
})

describe('exports kept from the first version', () => {
  it('names, stamps and kinds', () => {
    expect(copyName('a')).toBe('a-waypoint')
    expect(copyName('x'.repeat(253))).toHaveLength(253)
    expect(RETARGETABLE_KINDS.has('security.istio.io/AuthorizationPolicy')).toBe(true)
    expect(isRetargetable({apiVersion: 'telemetry.istio.io/v1', kind: 'Telemetry'})).toBe(true)
    expect(isRetargetable({apiVersion: 'networking.istio.io/v1', kind: 'VirtualService'})).toBe(false)
    const m = markManaged({apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: 'x', labels: {a: 'b'}}}, 'plan')
    expect(m.metadata.labels).toEqual({a: 'b', [MANAGED_BY_LABEL]: 'mesh-migrate'})
    expect(m.metadata.annotations?.[PLAN_ANNOTATION]).toBe('plan')
    expect(COPIED_FROM_ANNOTATION).toBe('mesh-migrate.io/copied-from')
  })
})

describe('L7 ALLOW with a selector', () => {
  const m = migrate([...bookinfoBase(), ratingsGetOnly])
  const d = decisionFor(m, 'ratings-get-only')

  it('creates the waypoint copy with the full rules and targetRefs to the Service, and a companion admitting the waypoint', () => {
    expect(d.disposition).toBe('carry')
    expect(m.createBeforeBind.map((o) => o.metadata.name)).toEqual([
      'ratings-get-only-waypoint',
      'ratings-get-only-ztunnel',
    ])
    const copy = named(m.createBeforeBind, 'ratings-get-only-waypoint')
    expect(copy.spec).toEqual({
      targetRefs: [{group: '', kind: 'Service', name: 'ratings'}],
      action: 'ALLOW',
      rules: ratingsGetOnly.spec.rules,
    })
    expect(copy.metadata.labels).toEqual({[MANAGED_BY_LABEL]: 'mesh-migrate'})
    expect(copy.metadata.annotations).toEqual({
      [COPIED_FROM_ANNOTATION]: 'ratings-get-only',
      [PLAN_ANNOTATION]: 'bookinfo',
    })
    const companion = named(m.createBeforeBind, 'ratings-get-only-ztunnel')
    expect(companion.spec).toEqual({
      selector: {matchLabels: {app: 'ratings'}},
      action: 'ALLOW',
      rules: [{from: [{source: {principals: [WAYPOINT]}}]}],
    })
  })

  it('after the restart deletes the original (stored in full) and creates its L4 projection', () => {
    expect(m.replaceAfterRestart.delete).toEqual([ratingsGetOnly])
    expect(m.replaceAfterRestart.apply).toHaveLength(1)
    const l4 = m.replaceAfterRestart.apply[0]!
    expect(l4.metadata.name).toBe('ratings-get-only-l4')
    // The `to` entry had only L7 attributes: it matches everything once they are gone, so the clause goes.
    expect(l4.spec).toEqual({
      selector: {matchLabels: {app: 'ratings'}},
      action: 'ALLOW',
      rules: [{from: [{source: {principals: ['cluster.local/ns/bookinfo/sa/bookinfo-reviews']}}]}],
    })
  })

  it('describes where each object is enforced', () => {
    expect(d.original).toMatchObject({
      role: 'original',
      scope: 'workload',
      selector: {app: 'ratings'},
      workloads: ['Deployment/ratings-v1'],
      action: 'ALLOW',
      ztunnel: 'deny-all',
      deletedIn: 'delete-sidecar-policies',
    })
    expect(d.created.map((c) => [c.role, c.scope, c.createdIn, c.ztunnel])).toEqual([
      ['waypoint-copy', 'targetRefs', 'create-policies', 'ignored'],
      ['ztunnel-companion', 'workload', 'create-policies', 'as-written'],
      ['ztunnel-l4', 'workload', 'delete-sidecar-policies', 'as-written'],
    ])
    expect(d.created[0]).toMatchObject({
      services: ['ratings'],
      workloads: [],
      targetRefs: [{group: '', kind: 'Service', name: 'ratings'}],
    })
    expect(d.created[1]).toMatchObject({workloads: ['Deployment/ratings-v1'], services: []})
  })

  it('warns that sidecar callers bypass the waypoint, and names the waypoint in the trust domain it is given', () => {
    expect(finding(m, 'retarget/bookinfo/sidecar-callers')).toMatchObject({
      code: 'WaypointBypassedBySidecarCallers',
      severity: 'warning',
    })
    const td = migrate([...bookinfoBase(), ratingsGetOnly], {trustDomain: 'example.org', waypointNamespace: 'bookinfo'})
    expect(named(td.createBeforeBind, 'ratings-get-only-ztunnel').spec.rules[0].from[0].source.principals).toEqual([
      'example.org/ns/bookinfo/sa/waypoint',
    ])
    // Issue 21 point 8: the trust domain is read (or given), so no finding asks to hand-edit principals any more.
    expect(ids(m)).not.toContain('retarget/bookinfo/trust-domain')
  })
})

describe('L4 projection of an ALLOW', () => {
  const project = (rules: unknown[]) => {
    const m = migrate([
      ...bookinfoBase(),
      istio('AuthorizationPolicy', 'p', {selector: {matchLabels: {app: 'ratings'}}, action: 'ALLOW', rules}),
    ])
    return {m, l4: named(m.replaceAfterRestart.apply, 'p-l4')}
  }

  it('a rule with only L7 content projects to a match-all rule: the L4 part allows everything, an error says so', () => {
    const {m, l4} = project([{to: [{operation: {methods: ['GET']}}]}, {from: [{source: {principals: ['a']}}]}])
    expect(l4.spec.rules).toEqual([{}])
    const f = finding(m, 'retarget/AuthorizationPolicy/bookinfo/p/l4-part-allows-all')
    expect(f).toMatchObject({severity: 'error', code: 'RetargetL4PartAllowsAll'})
    expect(f.fix).toContain('all denied (only the waypoint is admitted)')
  })

  it('says which other ALLOW policies an allow-all L4 part lifts for bypassing callers', () => {
    const m = migrate([
      ...bookinfoBase(),
      istio('AuthorizationPolicy', 'get-only', {
        selector: {matchLabels: {app: 'ratings'}},
        rules: [{to: [{operation: {methods: ['GET']}}]}],
      }),
      istio('AuthorizationPolicy', 'from-reviews', {
        selector: {matchLabels: {app: 'ratings'}},
        rules: [{from: [{source: {principals: ['cluster.local/ns/bookinfo/sa/reviews']}}]}],
      }),
    ])
    const f = finding(m, 'retarget/AuthorizationPolicy/bookinfo/get-only/l4-part-allows-all')
    expect(f.message).toContain('which also lifts AuthorizationPolicy bookinfo/from-reviews')
    expect(f.fix).toContain('limited to what AuthorizationPolicy bookinfo/from-reviews allow')
  })

  it('keeps L4 fields and L4 conditions, drops L7 ones, and merges rules that became equal', () => {
    const {m, l4} = project([
      {
        from: [{source: {namespaces: ['front'], requestPrincipals: ['*']}}],
        to: [{operation: {ports: ['8080'], methods: ['GET']}}],
        when: [
          {key: 'request.headers[x]', values: ['1']},
          {key: 'source.ip', values: ['10.0.0.0/8']},
        ],
      },
      {
        from: [{source: {namespaces: ['front']}}],
        to: [{operation: {ports: ['8080'], paths: ['/x']}}],
        when: [{key: 'source.ip', values: ['10.0.0.0/8']}],
      },
    ])
    expect(l4.spec.rules).toEqual([
      {
        from: [{source: {namespaces: ['front']}}],
        to: [{operation: {ports: ['8080']}}],
        when: [{key: 'source.ip', values: ['10.0.0.0/8']}],
      },
    ])
    expect(ids(m)).not.toContain('retarget/AuthorizationPolicy/bookinfo/p/l4-part-allows-all')
  })

  it('an alternative without L4 constraint takes its whole clause with it; trust domains are dropped too', () => {
    const {l4} = project([
      {
        from: [{source: {principals: ['a']}}, {source: {requestPrincipals: ['iss/sub']}}],
        to: [{operation: {ports: ['80']}}, {operation: {notPorts: ['81']}}],
      },
      {from: [{source: {namespaces: ['x'], trustDomains: ['td']}}], to: [{operation: {hosts: ['h']}}]},
    ])
    expect(l4.spec.rules).toEqual([
      {to: [{operation: {ports: ['80']}}, {operation: {notPorts: ['81']}}]},
      {from: [{source: {namespaces: ['x']}}]},
    ])
  })
})

describe('L7 DENY', () => {
  const deny = istio('AuthorizationPolicy', 'details-no-delete', {
    selector: {matchLabels: {app: 'details'}},
    action: 'DENY',
    rules: [{to: [{operation: {methods: ['DELETE']}}]}],
  })

  it('gets a waypoint copy, no companion, and the original is deleted after the restart', () => {
    const m = migrate([...bookinfoBase(), deny])
    expect(m.createBeforeBind.map((o) => o.metadata.name)).toEqual(['details-no-delete-waypoint'])
    expect(named(m.createBeforeBind, 'details-no-delete-waypoint').spec).toEqual({
      targetRefs: [{group: '', kind: 'Service', name: 'details'}],
      action: 'DENY',
      rules: deny.spec.rules,
    })
    expect(m.replaceAfterRestart).toEqual({delete: [deny], apply: []})
    expect(decisionFor(m, 'details-no-delete').original.ztunnel).toBe('no-op')
  })

  it("a rule that does not depend on the peer matches the waypoint's requests as it matched the caller's: no exemption, no warning", () => {
    const m = migrate([
      ...bookinfoBase(),
      istio('AuthorizationPolicy', 'ports', {
        selector: {matchLabels: {app: 'details'}},
        action: 'DENY',
        rules: [{to: [{operation: {ports: ['5432']}}]}, {to: [{operation: {methods: ['DELETE']}}]}],
      }),
    ])
    expect(named(m.createBeforeBind, 'ports-l4').spec.rules).toEqual([{to: [{operation: {ports: ['5432']}}]}])
    expect(ids(m).filter((i) => i.includes('deny'))).toEqual([])
  })

  it('keeps at ztunnel the rules it enforces without denying more (E15 split), excluding the waypoint where they match it', () => {
    const m = migrate([
      ...bookinfoBase(),
      istio('AuthorizationPolicy', 'mixed', {
        selector: {matchLabels: {app: 'details'}},
        action: 'DENY',
        rules: [
          {from: [{source: {ipBlocks: ['1.2.3.0/24']}}]}, // as written
          {to: [{operation: {ports: ['8080'], methods: ['POST']}}]}, // broadened at ztunnel: waypoint only
          {
            from: [{source: {notPrincipals: ['cluster.local/ns/bookinfo/sa/admin']}}],
            to: [{operation: {ports: ['9000']}}],
          }, // matches the waypoint
        ],
      }),
    ])
    const l4 = named(m.createBeforeBind, 'mixed-l4')
    expect(l4.spec.rules).toEqual([
      {from: [{source: {ipBlocks: ['1.2.3.0/24'], notPrincipals: [WAYPOINT]}}]},
      {
        from: [{source: {notPrincipals: ['cluster.local/ns/bookinfo/sa/admin', WAYPOINT]}}],
        to: [{operation: {ports: ['9000']}}],
      },
    ])
    expect(m.replaceAfterRestart.delete.map((o) => o.metadata.name)).toEqual(['mixed'])
    // Until the original is deleted, sidecars and ztunnel see the waypoint as the peer for its third rule.
    expect(finding(m, 'retarget/AuthorizationPolicy/bookinfo/mixed/deny-window').severity).toBe('warning')
  })
})

describe('namespace-wide policies (E15)', () => {
  it('split: the L7 part targets the waypoint Gateway, companion and L4 part have no selector', () => {
    const m = migrate([
      ...bookinfoBase(),
      istio('AuthorizationPolicy', 'ns-allow', {
        action: 'ALLOW',
        rules: [{from: [{source: {namespaces: ['bookinfo', 'istio-system']}}], to: [{operation: {methods: ['GET']}}]}],
      }),
    ])
    expect(named(m.createBeforeBind, 'ns-allow-waypoint').spec.targetRefs).toEqual([
      {group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'waypoint'},
    ])
    expect(named(m.createBeforeBind, 'ns-allow-ztunnel').spec.selector).toBeUndefined()
    expect(named(m.replaceAfterRestart.apply, 'ns-allow-l4').spec).toEqual({
      action: 'ALLOW',
      rules: [{from: [{source: {namespaces: ['bookinfo', 'istio-system']}}]}],
    })
    const d = decisionFor(m, 'ns-allow')
    expect(d.original).toMatchObject({
      scope: 'namespace',
      workloads: [
        'Deployment/details-v1',
        'Deployment/productpage-v1',
        'Deployment/ratings-v1',
        'Deployment/reviews-v1',
        'Deployment/reviews-v2',
      ],
    })
    expect(d.created[0]!.services).toEqual(['details', 'productpage', 'ratings', 'reviews'])
    expect(d.created[1]).toMatchObject({role: 'ztunnel-companion', scope: 'namespace'})
  })

  it("with a waypoint in another namespace, targets every Service (a Gateway targetRef must be in the policy's namespace)", () => {
    const m = migrate(
      [
        ...bookinfoBase(),
        istio('AuthorizationPolicy', 'ns-deny', {action: 'DENY', rules: [{to: [{operation: {methods: ['DELETE']}}]}]}),
      ],
      {waypointNamespace: 'shared'},
    )
    expect(named(m.createBeforeBind, 'ns-deny-waypoint').spec.targetRefs.map((t: {name: string}) => t.name)).toEqual([
      'details',
      'productpage',
      'ratings',
      'reviews',
    ])
  })
})

describe('identity-keyed L4 policies behind the waypoint (E21)', () => {
  const allow = istio('AuthorizationPolicy', 'reviews-from-productpage', {
    selector: {matchLabels: {app: 'reviews'}},
    action: 'ALLOW',
    rules: [
      {
        from: [{source: {principals: ['cluster.local/ns/bookinfo/sa/bookinfo-productpage']}}],
        to: [{operation: {ports: ['9080']}}],
      },
    ],
  })

  it('ALLOW: waypoint copy and companion; the original stays at ztunnel (it still protects traffic that bypasses the waypoint)', () => {
    const m = migrate([...bookinfoBase(), allow])
    const d = decisionFor(m, 'reviews-from-productpage')
    expect(d.disposition).toBe('carry-keep')
    expect(m.createBeforeBind.map((o) => o.metadata.name)).toEqual([
      'reviews-from-productpage-waypoint',
      'reviews-from-productpage-ztunnel',
    ])
    expect(named(m.createBeforeBind, 'reviews-from-productpage-waypoint').spec.rules).toEqual(allow.spec.rules)
    expect(named(m.createBeforeBind, 'reviews-from-productpage-ztunnel').spec.rules).toEqual([
      {from: [{source: {principals: [WAYPOINT]}}]},
    ])
    expect(m.replaceAfterRestart).toEqual({delete: [], apply: []})
    expect(d.original.deletedIn).toBeUndefined()
    // The pods are reached by pod IP only through ztunnel, which keeps the original: no pod-IP finding.
    expect(ids(m).filter((i) => i.includes('pod-addressed'))).toEqual([])
  })

  it("IP-keyed ALLOWs are treated the same way (the peer IP becomes the waypoint's)", () => {
    const m = migrate([
      ...bookinfoBase(),
      istio('AuthorizationPolicy', 'by-ip', {
        selector: {matchLabels: {app: 'reviews'}},
        action: 'ALLOW',
        rules: [{from: [{source: {ipBlocks: ['10.1.0.0/16']}}]}],
      }),
    ])
    expect(decisionFor(m, 'by-ip').disposition).toBe('carry-keep')
    expect(m.createBeforeBind.map((o) => o.metadata.name)).toEqual(['by-ip-waypoint', 'by-ip-ztunnel'])
  })

  it('without a waypoint, or for pods no Service fronts, nothing changes', () => {
    expect(
      decisionFor(migrate([...bookinfoBase(), allow], {waypointPlanned: false}), 'reviews-from-productpage')
        .disposition,
    ).toBe('keep')
    const m = migrate([
      deployment('worker', {app: 'worker'}),
      istio('AuthorizationPolicy', 'w', {
        selector: {matchLabels: {app: 'worker'}},
        rules: [{from: [{source: {namespaces: ['x']}}]}],
      }),
    ])
    expect(decisionFor(m, 'w').disposition).toBe('keep')
    expect(m.createBeforeBind).toEqual([])
  })

  it('DENY: waypoint copy, original kept; a blocker when it matches the waypoint, with the exempted manifest', () => {
    const harmless = migrate([
      ...bookinfoBase(),
      istio('AuthorizationPolicy', 'no-evil', {
        selector: {matchLabels: {app: 'reviews'}},
        action: 'DENY',
        rules: [{from: [{source: {principals: ['cluster.local/ns/evil/sa/x']}}]}],
      }),
    ])
    expect(decisionFor(harmless, 'no-evil').disposition).toBe('carry-keep')
    expect(harmless.createBeforeBind.map((o) => o.metadata.name)).toEqual(['no-evil-waypoint'])
    expect(ids(harmless).filter((i) => i.includes('deny'))).toEqual([])

    const onlyProductpage = istio('AuthorizationPolicy', 'only-productpage', {
      selector: {matchLabels: {app: 'reviews'}},
      action: 'DENY',
      rules: [{from: [{source: {notPrincipals: ['cluster.local/ns/bookinfo/sa/bookinfo-productpage']}}]}],
    })
    const m = migrate([...bookinfoBase(), onlyProductpage])
    const f = finding(m, 'retarget/AuthorizationPolicy/bookinfo/only-productpage/deny-matches-waypoint')
    expect(f).toMatchObject({severity: 'blocker', code: 'DenyMatchesWaypoint'})
    const fixed = parse(f.fix!.slice(f.fix!.indexOf('\n') + 1))
    expect(fixed.metadata).toEqual({name: 'only-productpage', namespace: 'bookinfo'})
    expect(fixed.spec.rules).toEqual([
      {from: [{source: {notPrincipals: ['cluster.local/ns/bookinfo/sa/bookinfo-productpage', WAYPOINT]}}]},
    ])
    // Once applied, the policy no longer matches the waypoint.
    const again = migrate([...bookinfoBase(), {...onlyProductpage, spec: fixed.spec}])
    expect(ids(again)).not.toContain('retarget/AuthorizationPolicy/bookinfo/only-productpage/deny-matches-waypoint')
  })

  it('DENY keyed on IPs may match the waypoint (its pod IP is unknown): a warning', () => {
    const m = migrate([
      ...bookinfoBase(),
      istio('AuthorizationPolicy', 'ip-deny', {
        selector: {matchLabels: {app: 'reviews'}},
        action: 'DENY',
        rules: [{from: [{source: {notIpBlocks: ['10.1.2.3/32']}}]}],
      }),
    ])
    expect(finding(m, 'retarget/AuthorizationPolicy/bookinfo/ip-deny/deny-matches-waypoint').severity).toBe('warning')
  })

  it('DENY on namespaces matches the waypoint when it lives in one of them', () => {
    const m = migrate([
      ...bookinfoBase(),
      istio('AuthorizationPolicy', 'ns-deny', {
        selector: {matchLabels: {app: 'reviews'}},
        action: 'DENY',
        rules: [{from: [{source: {namespaces: ['bookinfo']}}], to: [{operation: {ports: ['5432']}}]}],
      }),
    ])
    expect(finding(m, 'retarget/AuthorizationPolicy/bookinfo/ns-deny/deny-matches-waypoint').severity).toBe('blocker')
  })
})

describe('E22: when source.serviceAccount', () => {
  const saPolicy = (
    action = 'ALLOW',
    when: unknown = {key: 'source.serviceAccount', values: ['bookinfo-productpage', 'other/sa']},
    extra: Record<string, unknown> = {},
  ) =>
    istio('AuthorizationPolicy', 'by-sa', {
      selector: {matchLabels: {app: 'reviews'}},
      action,
      rules: [{to: [{operation: {ports: ['9080']}}], when: [when], ...extra}],
    })

  it('on >= 1.25 is rewritten as from.source.serviceAccounts, created before the switch; the original goes after the restart', () => {
    const m = migrate([...bookinfoBase(), saPolicy()], {istioVersion: '1.26', waypointPlanned: false})
    const d = decisionFor(m, 'by-sa')
    expect(d.disposition).toBe('rewrite')
    expect(m.createBeforeBind.map((o) => o.metadata.name)).toEqual(['by-sa-l4'])
    expect(named(m.createBeforeBind, 'by-sa-l4').spec.rules).toEqual([
      {
        to: [{operation: {ports: ['9080']}}],
        from: [{source: {serviceAccounts: ['bookinfo/bookinfo-productpage', 'other/sa']}}],
      },
    ])
    expect(m.replaceAfterRestart.delete.map((o) => o.metadata.name)).toEqual(['by-sa'])
    expect(d.created[0]).toMatchObject({ztunnel: 'as-written', createdIn: 'create-policies'})
  })

  it('ANDs the condition into every from alternative, intersects values and unions notValues', () => {
    const m = migrate(
      [
        ...bookinfoBase(),
        istio('AuthorizationPolicy', 'by-sa', {
          selector: {matchLabels: {app: 'reviews'}},
          rules: [
            {
              from: [{source: {ipBlocks: ['10.0.0.0/8']}}, {source: {serviceAccounts: ['a', 'b']}}],
              when: [
                {key: 'source.serviceAccount', values: ['b', 'c']},
                {key: 'source.serviceAccount', notValues: ['d']},
              ],
            },
          ],
        }),
      ],
      {istioVersion: '1.26', waypointPlanned: false},
    )
    expect(named(m.createBeforeBind, 'by-sa-l4').spec.rules).toEqual([
      {
        from: [
          {
            source: {
              ipBlocks: ['10.0.0.0/8'],
              serviceAccounts: ['bookinfo/b', 'bookinfo/c'],
              notServiceAccounts: ['bookinfo/d'],
            },
          },
          {source: {serviceAccounts: ['bookinfo/b'], notServiceAccounts: ['bookinfo/d']}},
        ],
      },
    ])
  })

  it('with an unknown version, says it assumes >= 1.25; on 1.24 the policy needs the waypoint instead', () => {
    const unknown = migrate([...bookinfoBase(), saPolicy()], {waypointPlanned: false})
    expect(finding(unknown, 'retarget/AuthorizationPolicy/bookinfo/by-sa/e22-version').severity).toBe('warning')
    const old = migrate([...bookinfoBase(), saPolicy()], {istioVersion: '1.24'})
    expect(decisionFor(old, 'by-sa').disposition).toBe('carry')
    expect(old.createBeforeBind.map((o) => o.metadata.name)).toEqual(['by-sa-waypoint', 'by-sa-ztunnel'])
  })

  it('cannot put serviceAccounts next to principals (CRD rule): carried to the waypoint, with the reason', () => {
    const m = migrate(
      [
        ...bookinfoBase(),
        saPolicy('ALLOW', {key: 'source.serviceAccount', values: ['x']}, {from: [{source: {principals: ['p']}}]}),
      ],
      {istioVersion: '1.26'},
    )
    expect(decisionFor(m, 'by-sa').disposition).toBe('carry')
    expect(finding(m, 'retarget/AuthorizationPolicy/bookinfo/by-sa/e22-not-rewritten').message).toContain('principals')
  })

  it('behind a waypoint the rewrite is identity-keyed: waypoint copy and companion too (E21); a rewritten DENY excludes the waypoint', () => {
    const m = migrate([...bookinfoBase(), saPolicy()], {istioVersion: '1.26'})
    expect(m.createBeforeBind.map((o) => o.metadata.name)).toEqual(['by-sa-waypoint', 'by-sa-ztunnel', 'by-sa-l4'])
    expect(named(m.createBeforeBind, 'by-sa-waypoint').spec.rules).toEqual(saPolicy().spec.rules)
    const deny = migrate(
      [...bookinfoBase(), saPolicy('DENY', {key: 'source.serviceAccount', notValues: ['bookinfo-productpage']})],
      {istioVersion: '1.26'},
    )
    expect(named(deny.createBeforeBind, 'by-sa-l4').spec.rules).toEqual([
      {
        to: [{operation: {ports: ['9080']}}],
        from: [{source: {notServiceAccounts: ['bookinfo/bookinfo-productpage', 'bookinfo/waypoint']}}],
      },
    ])
  })
})

describe('E16: dry-run', () => {
  const dry = istio(
    'AuthorizationPolicy',
    'dry',
    {selector: {matchLabels: {app: 'ratings'}}, action: 'ALLOW', rules: [{to: [{operation: {methods: ['GET']}}]}]},
    {annotations: {'istio.io/dry-run': 'true'}},
  )

  it('>= 1.29: copied to the waypoint keeping the annotation (waypoints honour dry-run), no companion', () => {
    const m = migrate([...bookinfoBase(), dry], {istioVersion: '1.29'})
    expect(m.createBeforeBind.map((o) => o.metadata.name)).toEqual(['dry-waypoint'])
    expect(named(m.createBeforeBind, 'dry-waypoint').metadata.annotations?.['istio.io/dry-run']).toBe('true')
    expect(m.replaceAfterRestart.delete.map((o) => o.metadata.name)).toEqual(['dry'])
    expect(decisionFor(m, 'dry').created[0]).toMatchObject({dryRun: true})
  })

  it('<= 1.28 or unknown: ztunnel enforces it, the plan does not carry it', () => {
    for (const v of ['1.28', undefined]) {
      const m = migrate([...bookinfoBase(), dry], v ? {istioVersion: v} : {})
      expect(decisionFor(m, 'dry').disposition).toBe('blocked')
      expect(m.createBeforeBind).toEqual([])
    }
  })
})

describe('CUSTOM and AUDIT', () => {
  it('CUSTOM: copy with the provider, original deleted after the restart, provider reachability finding', () => {
    const custom = istio('AuthorizationPolicy', 'ext-authz', {
      selector: {matchLabels: {app: 'productpage'}},
      action: 'CUSTOM',
      provider: {name: 'opa'},
      rules: [{to: [{operation: {paths: ['/admin']}}]}],
    })
    const m = migrate([...bookinfoBase(), custom])
    expect(named(m.createBeforeBind, 'ext-authz-waypoint').spec).toEqual({
      targetRefs: [{group: '', kind: 'Service', name: 'productpage'}],
      action: 'CUSTOM',
      provider: {name: 'opa'},
      rules: custom.spec.rules,
    })
    expect(m.createBeforeBind).toHaveLength(1)
    expect(m.replaceAfterRestart.delete).toEqual([custom])
    expect(finding(m, 'retarget/AuthorizationPolicy/bookinfo/ext-authz/custom-provider').message).toContain('opa')
    expect(decisionFor(m, 'ext-authz').original.ztunnel).toBe('ignored')
  })

  it('AUDIT: copy, original deleted, provider note', () => {
    const m = migrate([
      ...bookinfoBase(),
      istio('AuthorizationPolicy', 'audit', {selector: {matchLabels: {app: 'details'}}, action: 'AUDIT', rules: [{}]}),
    ])
    expect(named(m.createBeforeBind, 'audit-waypoint').spec).toMatchObject({action: 'AUDIT', rules: [{}]})
    expect(m.replaceAfterRestart.delete.map((o) => o.metadata.name)).toEqual(['audit'])
    expect(finding(m, 'retarget/AuthorizationPolicy/bookinfo/audit/audit-provider').severity).toBe('info')
  })
})

describe('RequestAuthentication, WasmPlugin, Telemetry', () => {
  const ra = istio('RequestAuthentication', 'jwt', {
    selector: {matchLabels: {app: 'productpage'}},
    jwtRules: [{issuer: 'iss', jwksUri: 'https://example.com/jwks'}],
  })
  const requireJwt = istio('AuthorizationPolicy', 'require-jwt', {
    selector: {matchLabels: {app: 'productpage'}},
    rules: [{from: [{source: {requestPrincipals: ['iss/sub']}}]}],
  })

  it('selector RequestAuthentication → targetRefs Service copy; namespace-wide → Gateway copy; originals deleted after the restart', () => {
    const m = migrate([...bookinfoBase(), ra, istio('RequestAuthentication', 'ns-jwt', {jwtRules: [{issuer: 'x'}]})])
    expect(named(m.createBeforeBind, 'jwt-waypoint').spec).toEqual({
      jwtRules: ra.spec.jwtRules,
      targetRefs: [{group: '', kind: 'Service', name: 'productpage'}],
    })
    expect(named(m.createBeforeBind, 'ns-jwt-waypoint').spec.targetRefs).toEqual([
      {group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'waypoint'},
    ])
    expect(m.replaceAfterRestart.delete.map((o) => o.metadata.name)).toEqual(['jwt', 'ns-jwt'])
  })

  it('an AuthorizationPolicy reading the JWT needs a RequestAuthentication at the waypoint', () => {
    const without = migrate([...bookinfoBase(), requireJwt])
    expect(finding(without, 'retarget/AuthorizationPolicy/bookinfo/require-jwt/request-authentication')).toMatchObject({
      severity: 'error',
      code: 'RetargetNeedsRequestAuthentication',
    })
    const withRa = migrate([...bookinfoBase(), requireJwt, ra])
    expect(ids(withRa)).not.toContain('retarget/AuthorizationPolicy/bookinfo/require-jwt/request-authentication')
    const withTargetRefsRa = migrate([
      ...bookinfoBase(),
      requireJwt,
      istio('RequestAuthentication', 'jwt-tr', {
        targetRefs: [{kind: 'Service', group: '', name: 'productpage'}],
        jwtRules: [{issuer: 'i'}],
      }),
    ])
    expect(ids(withTargetRefsRa)).not.toContain(
      'retarget/AuthorizationPolicy/bookinfo/require-jwt/request-authentication',
    )
  })

  it('selector WasmPlugin and Telemetry → targetRefs copies; namespace-wide Telemetry stays (waypoints apply it)', () => {
    const m = migrate([
      ...bookinfoBase(),
      istio('WasmPlugin', 'filter', {selector: {matchLabels: {app: 'reviews'}}, url: 'oci://x', phase: 'AUTHN'}),
      istio('Telemetry', 'logs', {
        selector: {matchLabels: {app: 'reviews'}},
        accessLogging: [{providers: [{name: 'envoy'}]}],
      }),
      istio('Telemetry', 'ns-metrics', {metrics: [{providers: [{name: 'prometheus'}]}]}),
    ])
    expect(named(m.createBeforeBind, 'filter-waypoint').spec).toEqual({
      url: 'oci://x',
      phase: 'AUTHN',
      targetRefs: [{group: '', kind: 'Service', name: 'reviews'}],
    })
    expect(named(m.createBeforeBind, 'logs-waypoint').spec).toEqual({
      accessLogging: [{providers: [{name: 'envoy'}]}],
      targetRefs: [{group: '', kind: 'Service', name: 'reviews'}],
    })
    expect(decisionFor(m, 'ns-metrics').disposition).toBe('keep')
    // Sorted by kind, then name.
    expect(m.replaceAfterRestart.delete.map((o) => o.metadata.name)).toEqual(['logs', 'filter'])
  })
})

describe('non-equivalences', () => {
  const v1Only = (action: string) =>
    istio('AuthorizationPolicy', 'v1-only', {
      selector: {matchLabels: {app: 'reviews', version: 'v1'}},
      action,
      rules: [{to: [{operation: {methods: ['GET']}}]}],
    })

  it('selector covering part of a Service: warning for an ALLOW restricting the other pods, error when they have ALLOWs of their own', () => {
    const alone = migrate([...bookinfoBase(), v1Only('ALLOW')])
    const f = finding(alone, 'retarget/AuthorizationPolicy/bookinfo/v1-only/partial-coverage/reviews')
    expect(f).toMatchObject({severity: 'warning', code: 'RetargetWidensToService'})
    expect(f.message).toContain('reviews-v2')
    expect(named(alone.createBeforeBind, 'v1-only-waypoint').spec.targetRefs).toEqual([
      {group: '', kind: 'Service', name: 'reviews'},
    ])
    expect(named(alone.createBeforeBind, 'v1-only-ztunnel').spec.selector).toEqual({
      matchLabels: {app: 'reviews', version: 'v1'},
    })

    const v2Allow = istio('AuthorizationPolicy', 'v2-allow', {
      selector: {matchLabels: {version: 'v2'}},
      rules: [{from: [{source: {namespaces: ['bookinfo']}}]}],
    })
    const guarded = migrate([...bookinfoBase(), v1Only('ALLOW'), v2Allow])
    expect(finding(guarded, 'retarget/AuthorizationPolicy/bookinfo/v1-only/partial-coverage/reviews').severity).toBe(
      'error',
    )
  })

  it('DENY over part of a Service denies more: a warning', () => {
    const m = migrate([...bookinfoBase(), v1Only('DENY')])
    expect(finding(m, 'retarget/AuthorizationPolicy/bookinfo/v1-only/partial-coverage/reviews').message).toContain(
      'denies more',
    )
  })

  it('pods reached by pod IP (headless Service, StatefulSet): the waypoint never sees it; an error for a DENY', () => {
    const sts: KubeObject = {...deployment('db', {app: 'db'}), kind: 'StatefulSet'}
    const headless = service('db-headless', {app: 'db'})
    headless.spec.clusterIP = 'None'
    const m = migrate([
      sts,
      service('db', {app: 'db'}),
      headless,
      istio('AuthorizationPolicy', 'db-deny', {
        selector: {matchLabels: {app: 'db'}},
        action: 'DENY',
        rules: [{to: [{operation: {methods: ['DELETE']}}]}],
      }),
    ])
    const f = finding(m, 'retarget/AuthorizationPolicy/bookinfo/db-deny/pod-addressed')
    expect(f.severity).toBe('error')
    expect(f.message).toContain('headless Service db-headless')
    // The headless Service is never a target.
    expect(named(m.createBeforeBind, 'db-deny-waypoint').spec.targetRefs).toEqual([
      {group: '', kind: 'Service', name: 'db'},
    ])
  })

  it('only a headless Service, or no Service: blocker, nothing created', () => {
    const headless = service('h', {app: 'h'})
    headless.spec.clusterIP = 'None'
    const m = migrate([
      deployment('h', {app: 'h'}),
      headless,
      istio('AuthorizationPolicy', 'h-get', {
        selector: {matchLabels: {app: 'h'}},
        rules: [{to: [{operation: {methods: ['GET']}}]}],
      }),
    ])
    expect(finding(m, 'no-service/AuthorizationPolicy/bookinfo/h-get')).toMatchObject({
      severity: 'blocker',
      code: 'RetargetNoService',
    })
    expect(m.createBeforeBind).toEqual([])
    expect(m.replaceAfterRestart.delete).toEqual([])
    expect(decisionFor(m, 'h-get').disposition).toBe('blocked')
  })

  it('pods behind several Services: one targetRef per Service', () => {
    const m = migrate([...bookinfoBase(), service('reviews-v1', {app: 'reviews', version: 'v1'}), v1Only('ALLOW')])
    expect(named(m.createBeforeBind, 'v1-only-waypoint').spec.targetRefs).toEqual([
      {group: '', kind: 'Service', name: 'reviews'},
      {group: '', kind: 'Service', name: 'reviews-v1'},
    ])
    expect(finding(m, 'retarget/AuthorizationPolicy/bookinfo/v1-only/several-services').severity).toBe('info')
  })

  it('more than 16 Services: the copy targets the waypoint Gateway; impossible across namespaces (blocker)', () => {
    const many = Array.from({length: 17}, (_, i) => service(`s${String(i).padStart(2, '0')}`, {app: 'multi'}))
    const p = istio('AuthorizationPolicy', 'multi', {
      selector: {matchLabels: {app: 'multi'}},
      rules: [{to: [{operation: {methods: ['GET']}}]}],
    })
    const m = migrate([deployment('multi', {app: 'multi'}), ...many, p])
    expect(named(m.createBeforeBind, 'multi-waypoint').spec.targetRefs).toEqual([
      {group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'waypoint'},
    ])
    expect(finding(m, 'retarget/AuthorizationPolicy/bookinfo/multi/gateway-target').severity).toBe('warning')
    const sixteen = migrate([deployment('multi', {app: 'multi'}), ...many.slice(0, 16), p])
    expect(named(sixteen.createBeforeBind, 'multi-waypoint').spec.targetRefs).toHaveLength(16)
    const remote = migrate([deployment('multi', {app: 'multi'}), ...many, p], {waypointNamespace: 'shared'})
    expect(finding(remote, 'no-service/AuthorizationPolicy/bookinfo/multi').severity).toBe('blocker')
    expect(remote.createBeforeBind).toEqual([])
  })
})

describe('root namespace (E14)', () => {
  it('an L7 mesh-wide policy is a blocker whose fix holds the GatewayClass istio-waypoint manifest and the L4 part; no plan operation', () => {
    const root = istio(
      'AuthorizationPolicy',
      'global-get',
      {action: 'ALLOW', rules: [{from: [{source: {namespaces: ['bookinfo']}}], to: [{operation: {methods: ['GET']}}]}]},
      {namespace: 'istio-system'},
    )
    const m = migrate([...bookinfoBase(), root])
    expect(decisionFor(m, 'global-get').disposition).toBe('blocked')
    expect(m.createBeforeBind).toEqual([])
    expect(m.replaceAfterRestart).toEqual({delete: [], apply: []})
    const f = finding(m, 'retarget-root/AuthorizationPolicy/istio-system/global-get')
    expect(f).toMatchObject({severity: 'blocker', code: 'RootPolicyNeedsWaypointCopy'})
    const docs = f
      .fix!.slice(f.fix!.indexOf('\n') + 1)
      .split(/^---$/m)
      .map((t) => parse(t))
    expect(docs[0]).toEqual({
      apiVersion: 'security.istio.io/v1',
      kind: 'AuthorizationPolicy',
      metadata: {name: 'global-get-waypoint', namespace: 'istio-system'},
      spec: {
        targetRefs: [{group: 'gateway.networking.k8s.io', kind: 'GatewayClass', name: 'istio-waypoint'}],
        action: 'ALLOW',
        rules: root.spec.rules,
      },
    })
    expect(docs[1].spec.rules).toEqual([
      {from: [{source: {namespaces: ['bookinfo']}}]},
      {from: [{source: {principals: [WAYPOINT]}}]},
    ])
  })

  it('an L7 root selector policy: the fix is a Service-targeted copy for this namespace (a GatewayClass copy would apply to every waypoint)', () => {
    const root = istio(
      'AuthorizationPolicy',
      'root-sel',
      {selector: {matchLabels: {app: 'ratings'}}, action: 'DENY', rules: [{to: [{operation: {methods: ['DELETE']}}]}]},
      {namespace: 'istio-system'},
    )
    const m = migrate([...bookinfoBase(), root])
    const f = finding(m, 'retarget-root/AuthorizationPolicy/istio-system/root-sel')
    const doc = parse(f.fix!.slice(f.fix!.indexOf('\n') + 1))
    expect(doc.metadata).toEqual({name: 'root-sel-waypoint', namespace: 'bookinfo'})
    expect(doc.spec.targetRefs).toEqual([{group: '', kind: 'Service', name: 'ratings'}])
  })

  it('an L4 identity-keyed root policy is carried into the namespace (E21), the original untouched', () => {
    const root = istio(
      'AuthorizationPolicy',
      'mesh-ns',
      {action: 'ALLOW', rules: [{from: [{source: {namespaces: ['bookinfo', 'istio-system']}}]}]},
      {namespace: 'istio-system'},
    )
    const m = migrate([...bookinfoBase(), root])
    const d = decisionFor(m, 'mesh-ns')
    expect(d.disposition).toBe('carry-keep')
    expect(m.createBeforeBind.map((o) => [o.metadata.namespace, o.metadata.name])).toEqual([
      ['bookinfo', 'mesh-ns-waypoint'],
      ['bookinfo', 'mesh-ns-ztunnel'],
    ])
    expect(named(m.createBeforeBind, 'mesh-ns-waypoint').metadata.annotations?.[COPIED_FROM_ANNOTATION]).toBe(
      'istio-system/mesh-ns',
    )
    expect(d.created[1]).toMatchObject({scope: 'namespace', role: 'ztunnel-companion'})
    expect(m.replaceAfterRestart.delete).toEqual([])
  })
})

describe('waypoint traffic type', () => {
  it('a workload-only waypoint never serves the Services the copies target: blocker; all: pod traffic escapes the copies', () => {
    const workload = migrate([...bookinfoBase(), ratingsGetOnly], {waypointFor: 'workload'})
    expect(finding(workload, 'retarget/bookinfo/waypoint-for-workload')).toMatchObject({
      severity: 'blocker',
      code: 'RetargetNeedsServiceWaypoint',
    })
    const all = migrate([...bookinfoBase(), ratingsGetOnly], {waypointFor: 'all'})
    expect(finding(all, 'retarget/bookinfo/waypoint-for-all').severity).toBe('warning')
    expect(ids(migrate([...bookinfoBase(), ratingsGetOnly])).filter((i) => i.includes('waypoint-for'))).toEqual([])
  })
})

describe('bookkeeping', () => {
  it('a created name that exists and is not ours is a blocker', () => {
    const taken = istio('AuthorizationPolicy', 'ratings-get-only-waypoint', {
      targetRefs: [{kind: 'Service', group: '', name: 'ratings'}],
      action: 'ALLOW',
      rules: [{}],
    })
    const m = migrate([...bookinfoBase(), ratingsGetOnly, taken])
    expect(
      finding(m, 'retarget/AuthorizationPolicy/bookinfo/ratings-get-only/name-taken/ratings-get-only-waypoint')
        .severity,
    ).toBe('blocker')
    const ours = {
      ...taken,
      metadata: {
        ...taken.metadata,
        labels: {[MANAGED_BY_LABEL]: 'mesh-migrate'},
        annotations: {[PLAN_ANNOTATION]: 'bookinfo'},
      },
    }
    expect(ids(migrate([...bookinfoBase(), ratingsGetOnly, ours])).filter((i) => i.includes('name-taken'))).toEqual([])
  })

  it('originals managed by GitOps: warning that the next sync undoes the change; labels are not copied', () => {
    const managed = {
      ...ratingsGetOnly,
      metadata: {...ratingsGetOnly.metadata, labels: {'argocd.argoproj.io/instance': 'shop'}},
    }
    const m = migrate([...bookinfoBase(), managed])
    expect(finding(m, 'retarget/AuthorizationPolicy/bookinfo/ratings-get-only/gitops').message).toContain('Argo CD')
    for (const o of allCreated(m)) expect(o.metadata.labels).toEqual({[MANAGED_BY_LABEL]: 'mesh-migrate'})
  })

  it('is deterministic and independent of input order', () => {
    const objects = [
      ...bookinfoBase(),
      ratingsGetOnly,
      istio('AuthorizationPolicy', 'a-deny', {
        selector: {matchLabels: {app: 'details'}},
        action: 'DENY',
        rules: [{to: [{operation: {methods: ['DELETE']}}]}],
      }),
    ]
    const a = migrate(objects)
    expect(migrate(objects)).toEqual(a)
    expect(migrate([...objects].reverse())).toEqual(a)
    expect(a.decisions.map((d) => d.ref.name)).toEqual(['a-deny', 'ratings-get-only'])
    expect(a.createBeforeBind.map((o) => o.metadata.name)).toEqual([
      'a-deny-waypoint',
      'ratings-get-only-waypoint',
      'ratings-get-only-ztunnel',
    ])
  })

  it('decisions carry the finding ids about their policy', () => {
    const m = migrate([
      ...bookinfoBase(),
      istio('AuthorizationPolicy', 'v1', {
        selector: {matchLabels: {version: 'v1', app: 'reviews'}},
        rules: [{to: [{operation: {methods: ['GET']}}]}],
      }),
    ])
    expect(decisionFor(m, 'v1').findings).toEqual([
      'retarget/AuthorizationPolicy/bookinfo/v1/l4-part-allows-all',
      'retarget/AuthorizationPolicy/bookinfo/v1/partial-coverage/reviews',
    ])
  })
})
