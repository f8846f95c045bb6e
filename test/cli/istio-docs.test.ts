// `plan --routes httproute` on the istio.io "Migrate policies" guide (../shared/fixtures/upstream/corpus/
// istio-io-snippets/ambient-migrate-migrate-policies-*.yaml): the guide's "before" objects (snippet 1: a
// VirtualService with header routing to subsets; 4: an L4 policy; 5: a selector L7 policy) next to a minimal
// bookinfo namespace of our own, planned through the built CLI. The plan must create what the guide shows
// "after" — the version Services (2) and the HTTPRoute (3) in swap-routes, the targetRefs policy (6) in
// create-policies — and leave the L4 policy (4) as it is.
import {copyFile, mkdtemp, readFile, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import {beforeAll, expect, it} from 'vitest'
import {parseAllDocuments} from 'yaml'

import type {KubeObject} from '../../src/planner/model.js'
import type {MigrationPlan, Operation, PlanStep} from '../../src/planner/plan-types.js'
import {checkPlanText} from '../../src/plan/planfile.js'
import {runCli} from '../support/cli.js'
import {CORPUS_DIR, CRDS_DIR, describeWithShared} from '../support/shared.js'

const SNIPPETS = path.join(CORPUS_DIR, 'istio-io-snippets')
const snippet = (n: number) => path.join(SNIPPETS, `ambient-migrate-migrate-policies-${n}.yaml`)

async function objectsOf(file: string): Promise<KubeObject[]> {
  return parseAllDocuments(await readFile(file, 'utf8'))
    .map((d) => d.toJSON() as KubeObject | null)
    .filter((o): o is KubeObject => o !== null && typeof o === 'object' && typeof o.kind === 'string')
}

// What the guide leaves out: the namespace, the reviews Service, its two versions and the DestinationRule
// whose subsets snippet 1 routes to.
const BOOKINFO = `
apiVersion: v1
kind: Namespace
metadata:
  name: bookinfo
  labels:
    istio-injection: enabled
---
apiVersion: v1
kind: Service
metadata:
  name: reviews
  namespace: bookinfo
  labels: {app: reviews, service: reviews}
spec:
  selector: {app: reviews}
  ports:
  - {name: http, port: 9080}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata:
  name: reviews
  namespace: bookinfo
spec:
  host: reviews
  subsets:
  - {name: v1, labels: {version: v1}}
  - {name: v2, labels: {version: v2}}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: reviews-v1
  namespace: bookinfo
spec:
  selector:
    matchLabels: {app: reviews, version: v1}
  template:
    metadata:
      labels: {app: reviews, version: v1}
    spec:
      serviceAccountName: bookinfo-reviews
      containers:
      - {name: reviews, image: docker.io/istio/examples-bookinfo-reviews-v1:1.20.2}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: reviews-v2
  namespace: bookinfo
spec:
  selector:
    matchLabels: {app: reviews, version: v2}
  template:
    metadata:
      labels: {app: reviews, version: v2}
    spec:
      serviceAccountName: bookinfo-reviews
      containers:
      - {name: reviews, image: docker.io/istio/examples-bookinfo-reviews-v2:1.20.2}
`

type Schema = Record<string, any>

/** kube-apiserver's structural defaulting: what an object looks like once stored (e.g. backendRefs weight 1). */
function withDefaults(value: unknown, schema: Schema | undefined): unknown {
  if (!schema || value === null || typeof value !== 'object') return value
  if (Array.isArray(value)) return value.map((v) => withDefaults(v, schema.items))
  const out: Record<string, unknown> = {...(value as Record<string, unknown>)}
  for (const [key, prop] of Object.entries<Schema>(schema.properties ?? {})) {
    if (out[key] === undefined && prop.default !== undefined) out[key] = structuredClone(prop.default)
    if (out[key] !== undefined) out[key] = withDefaults(out[key], prop)
  }
  return out
}

function step(plan: MigrationPlan, id: string): PlanStep {
  const s = plan.spec.steps.find((x) => x.id === id)
  if (!s) throw new Error(`no step ${id}: ${plan.spec.steps.map((x) => x.id).join(', ')}`)
  return s
}

const appliedObjects = (s: PlanStep) =>
  s.operations.filter((o): o is Extract<Operation, {op: 'apply'}> => o.op === 'apply').map((o) => o.object)
const opText = (op: Operation) =>
  `${op.op} ${op.op === 'apply' ? `${op.object.kind}/${op.object.metadata.name}` : `${op.ref.kind}/${op.ref.name}`}`

describeWithShared('plan on the istio.io migrate-policies guide', () => {
  let plan: MigrationPlan
  let routeSpecSchema: Schema

  beforeAll(async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'mesh-migrate-istio-docs-'))
    for (const n of [1, 4, 5]) await copyFile(snippet(n), path.join(dir, path.basename(snippet(n))))
    await writeFile(path.join(dir, 'bookinfo.yaml'), BOOKINFO)
    const r = await runCli(['plan', 'bookinfo', '--manifests', dir, '--routes', 'httproute', '--out', '-'], {cwd: dir})
    expect(r.code, r.stderr).toBe(0)
    // What plan wrote is what validate accepts.
    expect(checkPlanText(r.stdout).problems).toEqual([])
    plan = checkPlanText(r.stdout).plan!
    const crd = (
      await objectsOf(path.join(CRDS_DIR, 'gateway-api-standard/gateway.networking.k8s.io_httproutes.yaml'))
    )[0]!
    routeSpecSchema = crd.spec.versions.find((v: {name: string}) => v.name === 'v1').schema.openAPIV3Schema.properties
      .spec
  }, 60_000)

  it("swap-routes creates the guide's version Services (snippet 2) and HTTPRoute (snippet 3) and deletes snippet 1", async () => {
    const swap = step(plan, 'swap-routes')
    expect(swap.operations.map(opText)).toEqual([
      'apply Service/reviews-v1',
      'apply Service/reviews-v2',
      'apply HTTPRoute/reviews',
      'delete VirtualService/reviews',
    ])
    const created = appliedObjects(swap)
    const services = await objectsOf(snippet(2))
    expect(
      created
        .filter((o) => o.kind === 'Service')
        .map((s) => ({apiVersion: s.apiVersion, name: s.metadata.name, namespace: s.metadata.namespace, spec: s.spec})),
    ).toEqual(
      services.map((s) => ({
        apiVersion: s.apiVersion,
        name: s.metadata.name,
        namespace: s.metadata.namespace,
        spec: s.spec,
      })),
    )
    const [route] = await objectsOf(snippet(3))
    const ours = created.find((o) => o.kind === 'HTTPRoute')!
    expect({apiVersion: ours.apiVersion, name: ours.metadata.name, namespace: ours.metadata.namespace}).toEqual({
      apiVersion: route!.apiVersion,
      name: route!.metadata.name,
      namespace: route!.metadata.namespace,
    })
    expect(withDefaults(ours.spec, routeSpecSchema)).toEqual(withDefaults(route!.spec, routeSpecSchema))
    // The VirtualService it deletes is snippet 1, stored in full for rollback.
    const [before] = await objectsOf(snippet(1))
    const deleted = swap.operations.find((o): o is Extract<Operation, {op: 'delete'}> => o.op === 'delete')!
    expect(deleted.object!.spec).toEqual(before!.spec)
    expect(swap.undo.operations.map(opText)).toEqual([
      'apply VirtualService/reviews',
      'delete Service/reviews-v1',
      'delete Service/reviews-v2',
      'delete HTTPRoute/reviews',
    ])
  })

  it("create-policies creates the guide's targetRefs policy (snippet 6) before the waypoint is bound; snippet 5 goes after the restart", async () => {
    const [after] = await objectsOf(snippet(6))
    const copy = appliedObjects(step(plan, 'create-policies')).find(
      (o) => o.metadata.name === `${after!.metadata.name}-waypoint`,
    )
    expect(copy).toBeDefined()
    expect({apiVersion: copy!.apiVersion, kind: copy!.kind, namespace: copy!.metadata.namespace}).toEqual({
      apiVersion: after!.apiVersion,
      kind: after!.kind,
      namespace: after!.metadata.namespace,
    })
    expect(copy!.spec).toEqual(after!.spec)
    const ids = plan.spec.steps.map((s) => s.id)
    expect(ids.indexOf('create-policies')).toBeLessThan(ids.indexOf('bind-waypoint'))
    expect(
      step(plan, 'delete-sidecar-policies')
        .operations.filter((o) => o.op === 'delete')
        .map(opText),
    ).toEqual(['delete AuthorizationPolicy/allow-get-reviews'])
  })

  it('keeps the L4 policy of snippet 4 as it is: never deleted nor rewritten', async () => {
    const [l4] = await objectsOf(snippet(4))
    const touched = plan.spec.steps
      .flatMap((s) => [...s.operations, ...s.undo.operations])
      .filter((o) => (o.op === 'apply' ? o.object.metadata.name : o.ref.name) === l4!.metadata.name)
    expect(touched).toEqual([])
    expect(plan.spec.inventory.find((i) => i.ref.name === l4!.metadata.name)).toMatchObject({
      verdict: 'L4',
      ztunnel: 'as-written',
    })
    // A waypoint now fronts reviews: its identity rule is also enforced there, and the waypoint is admitted.
    expect(appliedObjects(step(plan, 'create-policies')).map((o) => o.metadata.name)).toEqual([
      'allow-frontend-waypoint',
      'allow-frontend-ztunnel',
      'allow-get-reviews-waypoint',
      'allow-get-reviews-ztunnel',
    ])
  })
})
