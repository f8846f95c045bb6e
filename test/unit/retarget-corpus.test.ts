// The policy migration over the istio.io snippets (../shared/fixtures/upstream/corpus/istio-io-snippets): the
// migrate-policies guide's before/after pairs, the getting-started waypoint admission, and the authorization
// task policies, on the upstream bookinfo manifests.
import {readFileSync} from 'node:fs'
import path from 'node:path'
import {expect, it} from 'vitest'
import type {KubeObject} from '../../src/planner/model.js'
import {COPIED_FROM_ANNOTATION} from '../../src/planner/retarget.js'
import {CORPUS_DIR, describeWithShared} from '../support/shared.js'
import {deployment, service, yamlObjects} from './support/classify-context.js'
import {decisionFor, migrate, named} from './support/retarget.js'

function load(rel: string): KubeObject[] {
  return yamlObjects(readFileSync(path.join(CORPUS_DIR, rel), 'utf8')).filter((o) => o && typeof o.kind === 'string')
}
const snippet = (n: string) => load(`istio-io-snippets/${n}.yaml`)
const only = (objects: KubeObject[]) => {
  expect(objects).toHaveLength(1)
  return objects[0]!
}

describeWithShared('istio.io migrate-policies guide', () => {
  const bookinfo = () => load('bookinfo/platform/kube/bookinfo.yaml')

  it('snippet 5 (selector L7 ALLOW) becomes the copy of snippet 6: targetRefs Service reviews, same action and rules; named <name>-waypoint', () => {
    const before = only(snippet('ambient-migrate-migrate-policies-5'))
    const after = only(snippet('ambient-migrate-migrate-policies-6'))
    const m = migrate([...bookinfo(), before])
    const copy = named(m.createBeforeBind, 'allow-get-reviews-waypoint')
    // The guide edits the policy in place (same name); the plan needs both side by side until the restart, so the
    // copy is named after the original and says so in an annotation.
    expect(copy.spec).toEqual(after.spec)
    expect({apiVersion: copy.apiVersion, kind: copy.kind, namespace: copy.metadata.namespace}).toEqual({
      apiVersion: after.apiVersion,
      kind: after.kind,
      namespace: after.metadata.namespace,
    })
    expect(copy.metadata.annotations?.[COPIED_FROM_ANNOTATION]).toBe(after.metadata.name)
    expect(m.replaceAfterRestart.delete).toEqual([before])
    // Its only rule is L7: the L4 part left at ztunnel allows every request — said as an error.
    expect(named(m.replaceAfterRestart.apply, 'allow-get-reviews-l4').spec.rules).toEqual([{}])
    expect(m.findings.map((f) => f.id)).toContain(
      'retarget/AuthorizationPolicy/bookinfo/allow-get-reviews/l4-part-allows-all',
    )
  })

  it('without a selector the copy is snippet 7 (targetRefs the waypoint Gateway)', () => {
    const before = only(snippet('ambient-migrate-migrate-policies-5'))
    delete before.spec.selector
    const m = migrate([...bookinfo(), before])
    expect(named(m.createBeforeBind, 'allow-get-reviews-waypoint').spec).toEqual(
      only(snippet('ambient-migrate-migrate-policies-7')).spec,
    )
  })

  it('snippet 4 (L4) stays as it is without a waypoint; with one it is kept and the waypoint gets admitted', () => {
    const l4 = only(snippet('ambient-migrate-migrate-policies-4'))
    const alone = migrate([...bookinfo(), l4], {waypointPlanned: false})
    expect(decisionFor(alone, 'allow-frontend').disposition).toBe('keep')
    expect(alone.createBeforeBind).toEqual([])
    expect(alone.replaceAfterRestart).toEqual({delete: [], apply: []})

    const withL7 = migrate([...bookinfo(), l4, only(snippet('ambient-migrate-migrate-policies-5'))])
    expect(decisionFor(withL7, 'allow-frontend').disposition).toBe('carry-keep')
    expect(withL7.replaceAfterRestart.delete.map((o) => o.metadata.name)).toEqual(['allow-get-reviews'])
    // The principal the guide's bypass-prevention DENY names as the waypoint (snippet 8).
    const waypoint = only(snippet('ambient-migrate-migrate-policies-8')).spec.rules[0].from[0].source.notPrincipals[0]
    expect(named(withL7.createBeforeBind, 'allow-frontend-ztunnel').spec.rules).toEqual([
      {from: [{source: {principals: [waypoint]}}]},
    ])
  })

  it('the bypass-prevention DENYs (snippets 8, 9) exclude the waypoint already: no blocker', () => {
    for (const n of ['ambient-migrate-migrate-policies-8', 'ambient-migrate-migrate-policies-9']) {
      const m = migrate([...bookinfo(), only(snippet(n)), only(snippet('ambient-migrate-migrate-policies-5'))])
      expect(decisionFor(m, 'deny-waypoint-bypass').disposition).toBe('carry-keep')
      expect(m.findings.map((f) => f.id).filter((i) => i.includes('deny-waypoint-bypass/deny'))).toEqual([])
    }
  })
})

describeWithShared('istio.io getting started: ztunnel admission of the waypoint', () => {
  it('the companion admits exactly the principal the guide adds to productpage-ztunnel (snippet 3)', () => {
    const objects = [
      ...load('bookinfo/platform/kube/bookinfo.yaml'),
      only(snippet('ambient-getting-started-enforce-auth-policies-1')),
    ]
    const m = migrate(objects, {namespace: 'default'})
    const guide = only(snippet('ambient-getting-started-enforce-auth-policies-3')).spec.rules[0].from[0].source
      .principals as string[]
    const companion = named(m.createBeforeBind, 'productpage-ztunnel-ztunnel')
    expect(guide).toContain(companion.spec.rules[0].from[0].source.principals[0])
    expect(companion.spec.selector).toEqual(
      only(snippet('ambient-getting-started-enforce-auth-policies-1')).spec.selector,
    )
    // The guide's own targetRefs policy (snippet 2) is already in ambient form.
    const done = migrate([...objects, only(snippet('ambient-getting-started-enforce-auth-policies-2'))], {
      namespace: 'default',
    })
    expect(decisionFor(done, 'productpage-waypoint').disposition).toBe('keep')
  })
})

describeWithShared('istio.io authorization tasks', () => {
  const httpbin = (ns: string) => [
    deployment('httpbin', {app: 'httpbin', version: 'v1'}, ns),
    service('httpbin', {app: 'httpbin'}, ns),
  ]

  it('HTTP policies (authz-http 2-5) are carried with their rules; the L4 part keeps the principal', () => {
    const objects = [
      ...load('bookinfo/platform/kube/bookinfo.yaml'),
      ...[2, 3, 4, 5].map((i) => only(snippet(`tasks-security-authorization-authz-http-${i}`))),
    ]
    const m = migrate(objects, {namespace: 'default'})
    for (const name of ['productpage-viewer', 'details-viewer', 'reviews-viewer', 'ratings-viewer']) {
      expect(decisionFor(m, name).disposition).toBe('carry')
      expect(named(m.createBeforeBind, `${name}-waypoint`).spec.rules).toEqual(
        objects.find((o) => o.metadata.name === name)!.spec.rules,
      )
    }
    expect(named(m.replaceAfterRestart.apply, 'ratings-viewer-l4').spec.rules).toEqual([
      {from: [{source: {principals: ['cluster.local/ns/default/sa/bookinfo-reviews']}}]},
    ])
    expect(named(m.createBeforeBind, 'details-viewer-waypoint').spec.targetRefs).toEqual([
      {group: '', kind: 'Service', name: 'details'},
    ])
  })

  it('allow-nothing (authz-http 1) needs nothing: ztunnel enforces it as sidecars did', () => {
    const m = migrate(
      [
        ...load('bookinfo/platform/kube/bookinfo.yaml'),
        only(snippet('tasks-security-authorization-authz-http-1')),
        only(snippet('tasks-security-authorization-authz-http-2')),
      ],
      {namespace: 'default'},
    )
    expect(decisionFor(m, 'allow-nothing').disposition).toBe('keep')
  })

  it('DENY tasks (authz-deny 1-2) get waypoint copies; the ALLOW on paths (3) an allow-all L4 part', () => {
    for (const i of [1, 2]) {
      const deny = only(snippet(`tasks-security-authorization-authz-deny-${i}`))
      const m = migrate([...httpbin('foo'), deny], {namespace: 'foo'})
      expect(named(m.createBeforeBind, 'deny-method-get-waypoint').spec).toEqual({
        targetRefs: [{group: '', kind: 'Service', name: 'httpbin'}],
        action: 'DENY',
        rules: deny.spec.rules,
      })
      expect(m.replaceAfterRestart.delete).toEqual([deny])
    }
    const m = migrate([...httpbin('foo'), only(snippet('tasks-security-authorization-authz-deny-3'))], {
      namespace: 'foo',
    })
    expect(named(m.replaceAfterRestart.apply, 'allow-path-ip-l4').spec.rules).toEqual([{}])
  })

  it('CUSTOM (authz-custom 2) keeps its provider on the waypoint', () => {
    const custom = only(snippet('tasks-security-authorization-authz-custom-2'))
    const m = migrate([...httpbin('foo'), custom], {namespace: 'foo'})
    expect(named(m.createBeforeBind, 'ext-authz-waypoint').spec).toEqual({
      targetRefs: [{group: '', kind: 'Service', name: 'httpbin'}],
      action: 'CUSTOM',
      provider: {name: 'sample-ext-authz-grpc'},
      rules: custom.spec.rules,
    })
    expect(m.findings.map((f) => f.code)).toContain('RetargetCustomProvider')
  })

  it('JWT (authz-jwt 1-3): the RequestAuthentication is carried with the policies that need it', () => {
    const ra = only(snippet('tasks-security-authorization-authz-jwt-1'))
    const ap = only(snippet('tasks-security-authorization-authz-jwt-3'))
    const m = migrate([...httpbin('foo'), ra, ap], {namespace: 'foo'})
    expect(named(m.createBeforeBind, 'jwt-example-waypoint').spec).toEqual({
      jwtRules: ra.spec.jwtRules,
      targetRefs: [{group: '', kind: 'Service', name: 'httpbin'}],
    })
    expect(m.findings.map((f) => f.code)).not.toContain('RetargetNeedsRequestAuthentication')
    const without = migrate([...httpbin('foo'), only(snippet('tasks-security-authorization-authz-jwt-2'))], {
      namespace: 'foo',
    })
    expect(without.findings.map((f) => f.code)).toContain('RetargetNeedsRequestAuthentication')
  })

  it('TCP (authz-tcp 1-2): deny-all is kept; the identity ALLOW gets a companion once a waypoint fronts mongodb', () => {
    const mongo = [deployment('mongodb', {app: 'mongodb'}, 'default'), service('mongodb', {app: 'mongodb'}, 'default')]
    const m = migrate(
      [
        ...mongo,
        only(snippet('tasks-security-authorization-authz-tcp-1')),
        only(snippet('tasks-security-authorization-authz-tcp-2')),
      ],
      {namespace: 'default'},
    )
    expect(decisionFor(m, 'deny-all').disposition).toBe('keep')
    expect(decisionFor(m, 'bookinfo-ratings-v2').disposition).toBe('carry-keep')
    expect(m.createBeforeBind.map((o) => o.metadata.name)).toEqual([
      'bookinfo-ratings-v2-waypoint',
      'bookinfo-ratings-v2-ztunnel',
    ])
    expect(named(m.createBeforeBind, 'bookinfo-ratings-v2-ztunnel').spec.rules[0].from[0].source.principals).toEqual([
      'cluster.local/ns/default/sa/waypoint',
    ])
  })
})
