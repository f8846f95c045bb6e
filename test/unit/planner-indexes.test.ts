// The planner's lookups go through indexes (by label, by host, by name) built once per classification:
// they must answer exactly what a scan of every object answers.
import {describe, expect, it} from 'vitest'

import {findObject} from '../../src/planner/classify/objects.js'
import {labelsSubset, matchingWorkloads, servicesCovering} from '../../src/planner/classify/selection.js'
import {classifyObjects} from '../../src/planner/classify/index.js'
import type {KubeObject} from '../../src/planner/model.js'
import {classifyContext, deployment, istio, service} from './support/classify-context.js'

// A small deterministic pseudo-random generator, so the mix of labels is varied but the test repeatable.
function random(seed: number): () => number {
  return () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31
}

function labelMix(n: number): KubeObject[] {
  const next = random(7)
  const pick = <T>(xs: T[]) => xs[Math.floor(next() * xs.length)]!
  const objects: KubeObject[] = []
  for (let i = 0; i < n; i++) {
    const labels: Record<string, string> = {app: pick(['a', 'b', 'c', 'd']), version: pick(['v1', 'v2'])}
    if (next() < 0.5) labels.tier = pick(['web', 'db'])
    objects.push(deployment(`w${i}`, labels))
    const selector: Record<string, string> =
      next() < 0.3
        ? {tier: pick(['web', 'db'])}
        : {app: pick(['a', 'b', 'c', 'd']), ...(next() < 0.5 ? {version: pick(['v1', 'v2'])} : {})}
    objects.push(service(`s${i}`, selector))
  }
  return objects
}

describe('planner indexes answer what a scan answers', () => {
  const ctx = classifyContext(labelMix(40))
  const selectors: (Record<string, string> | undefined)[] = [
    undefined,
    {},
    {app: 'a'},
    {app: 'b', version: 'v2'},
    {tier: 'db'},
    {tier: 'db', app: 'c', version: 'v1'},
    {app: 'nope'},
    {unknown: 'x'},
  ]

  it('matchingWorkloads: every workload whose pod labels the selector covers, in input order', () => {
    for (const selector of selectors) {
      expect(matchingWorkloads(ctx, selector)).toEqual(ctx.workloads.filter((w) => labelsSubset(selector, w.podLabels)))
    }
  })

  it('servicesCovering: every Service with a selector that covers one of the workloads, sorted', () => {
    for (const selector of selectors) {
      const workloads = matchingWorkloads(ctx, selector)
      const scan = [
        ...new Set(
          ctx.services
            .filter(
              (s) =>
                s.selector &&
                Object.keys(s.selector).length > 0 &&
                workloads.some((w) => labelsSubset(s.selector, w.podLabels)),
            )
            .map((s) => s.ref.name),
        ),
      ].sort()
      expect(servicesCovering(ctx, workloads)).toEqual(scan)
    }
  })

  it('findObject: the first object of that kind, namespace and name', () => {
    const objects = [
      deployment('x', {app: 'x'}),
      deployment('x', {app: 'other'}, 'elsewhere'),
      service('x', {app: 'x'}),
    ]
    const c = classifyContext(objects)
    expect(findObject(c, 'apps', 'Deployment', 'bookinfo', 'x')).toBe(objects[0])
    expect(findObject(c, 'apps', 'Deployment', 'elsewhere', 'x')).toBe(objects[1])
    expect(findObject(c, '', 'Service', 'bookinfo', 'x')).toBe(objects[2])
    expect(findObject(c, 'apps', 'Deployment', 'bookinfo', 'y')).toBeUndefined()
  })

  it('DestinationRule resolution: exact host beats wildcard, the waypoint namespace beats the root, exportTo is honoured, for every Service', () => {
    const objects: KubeObject[] = []
    for (let i = 0; i < 30; i++)
      objects.push(deployment(`app${i}`, {app: `app${i}`}), service(`app${i}`, {app: `app${i}`}))
    // Even Services: an exact DR in the namespace. Every third: also an exact one in the root namespace
    // (shadowed). Services 0-9: a namespace wildcard (shadowed where an exact one exists). Service 5: an
    // exact DR exported nowhere (invisible: the wildcard wins).
    for (let i = 0; i < 30; i += 2)
      objects.push(
        istio('DestinationRule', `exact-${i}`, {
          host: `app${i}`,
          trafficPolicy: {connectionPool: {http: {http1MaxPendingRequests: 1}}},
        }),
      )
    for (let i = 0; i < 30; i += 3)
      objects.push(
        istio(
          'DestinationRule',
          `root-${i}`,
          {host: `app${i}.bookinfo.svc.cluster.local`, trafficPolicy: {loadBalancer: {simple: 'LEAST_REQUEST'}}},
          {namespace: 'istio-system'},
        ),
      )
    objects.push(
      istio('DestinationRule', 'wild', {
        host: '*.bookinfo.svc.cluster.local',
        trafficPolicy: {loadBalancer: {simple: 'RANDOM'}},
      }),
    )
    objects.push(
      istio('DestinationRule', 'hidden-5', {
        host: 'app5',
        exportTo: ['other'],
        trafficPolicy: {loadBalancer: {simple: 'RANDOM'}},
      }),
    )
    const {items} = classifyObjects(classifyContext(objects, {waypointPlanned: true}))
    const reasonsOf = (name: string, namespace = 'bookinfo') =>
      items.find((i) => i.ref.name === name && i.ref.namespace === namespace)!.reasons.join('\n')

    const notUsed = (svc: string, winner: string) =>
      `not used for ${svc}: the waypoint resolves DestinationRule ${winner} first`
    const wild = reasonsOf('wild')
    for (let i = 0; i < 30; i++) {
      // The wildcard resolves for the odd Services only: the even ones have an exact DR in the namespace.
      if (i % 2 === 0) {
        expect(wild).toContain(notUsed(`app${i}`, `bookinfo/exact-${i}`))
        expect(reasonsOf(`exact-${i}`)).not.toContain('not used for')
      } else expect(wild).not.toContain(notUsed(`app${i}`, ''))
    }
    // The root namespace comes last: its DRs lose to the namespace's exact DR or wildcard.
    for (let i = 0; i < 30; i += 3)
      expect(reasonsOf(`root-${i}`, 'istio-system')).toContain(
        notUsed(`app${i}`, i % 2 === 0 ? `bookinfo/exact-${i}` : 'bookinfo/wild'),
      )
    // Exported to another namespace only: the waypoint (in bookinfo) does not see it.
    expect(reasonsOf('hidden-5')).toContain(notUsed('app5', 'bookinfo/wild'))
    expect(wild).toMatch(/only a waypoint applies this traffic policy for [^\n]*\bapp5\b/)
  })
})
