// The verification gate of a GitOps hand-off (issue 22 §4, docs/gitops.md) on the real kube-apiserver: the engine
// syncs the namespace's overlay (`show --fleet -o argocd` wrote it) and records nothing, so the gate judges the plan by
// what is live: `status PLAN --by-effect --detailed-exitcode`, run with a token of the docs' read-only ServiceAccount.
// Before the sync it exits 10 naming the first step; with one patch left out of the sync, 10 naming that patch's step
// and what is missing; once everything is synced and the control plane has settled, 0 — nothing recorded, nothing
// written (the ServiceAccount can only get and list).
import {randomBytes} from 'node:crypto'
import {readdir, readFile, writeFile} from 'node:fs/promises'
import https from 'node:https'
import path from 'node:path'

import {parse, parseAllDocuments} from 'yaml'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import type {PlanStatus} from '../../src/cli/contract.js'
import type {KubeObject, ObjectRef} from '../../src/planner/model.js'
import {loadManifestFiles} from '../../src/sources/manifests.js'
import {hasStackTrace, runCli} from '../support/cli.js'
import {startTestCluster, type TestCluster} from '../support/cluster.js'
import {tokenKubeconfig} from '../support/envtest.js'
import {REPO_ROOT} from '../support/shared.js'
import {cli, workdir} from './support.js'

const RUN = randomBytes(3).toString('hex')
const NAMES = ['catalog', 'frontend', 'pay', 'shop'] as const
const N = Object.fromEntries(NAMES.map((n) => [n, `g${RUN}-${n}`])) as Record<(typeof NAMES)[number], string>
const TEAM = `gitops-gate-${RUN}`
const NS = N.catalog

async function fleetFixture(): Promise<KubeObject[]> {
  const {objects} = await loadManifestFiles([path.join(REPO_ROOT, 'examples/fleet')])
  let text = JSON.stringify(objects).replaceAll('fleet-demo', TEAM)
  for (const n of NAMES) text = text.replace(new RegExp(`(?<![\\w-])${n}(?![\\w-])`, 'g'), N[n])
  return JSON.parse(text) as KubeObject[]
}

const refOf = (doc: KubeObject): ObjectRef => ({
  apiVersion: doc.apiVersion,
  kind: doc.kind,
  name: doc.metadata.name,
  ...(doc.metadata.namespace ? {namespace: doc.metadata.namespace} : {}),
})

/** A token of the ServiceAccount (TokenRequest, as the kubelet gets one for the Job's pod). */
async function serviceAccountToken(cluster: TestCluster, namespace: string, name: string): Promise<string> {
  const {url, caPem, tokens} = cluster.envtest!
  const body = JSON.stringify({apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: {}})
  const text = await new Promise<string>((resolve, reject) => {
    const req = https.request(
      `${url}/api/v1/namespaces/${namespace}/serviceaccounts/${name}/token`,
      {
        method: 'POST',
        ca: caPem,
        headers: {Authorization: `Bearer ${tokens.admin}`, 'Content-Type': 'application/json'},
      },
      (res) => {
        let out = ''
        res.on('data', (d: Buffer) => (out += d.toString()))
        res.on('end', () => (res.statusCode === 201 ? resolve(out) : reject(new Error(`${res.statusCode} ${out}`))))
      },
    )
    req.on('error', reject)
    req.end(body)
  })
  return (JSON.parse(text) as {status: {token: string}}).status.token
}

describe('the GitOps verification gate: status --by-effect after the engine synced the overlay', () => {
  let cluster: TestCluster
  let cwd: string
  let kube: string
  /** The gate's kubeconfig: the docs' read-only ServiceAccount (the tool's own on the in-repo server). */
  let gateKube: string
  let overlay: string[]

  beforeAll(async () => {
    cluster = await startTestCluster({fixture: await fleetFixture(), quiet: true})
    cwd = await workdir()
    kube = cluster.kubeconfigPath
    const accept = [
      '--accept-lost',
      `E11/destination/${N.shop}`,
      '--accept-lost',
      `*/VirtualService/${N.frontend}/shop-timeout`,
    ]
    const plan = await cli(['plan', '-l', `team=${TEAM}`, ...accept], cwd, kube)
    expect(plan.code, plan.stderr).toBe(0)
    const show = await runCli(['show', '--fleet', '-o', 'argocd', '--repo-url', 'https://git.example/platform.git'], {
      cwd,
    })
    expect(show.code, show.stderr).toBe(0)
    const dir = path.join(cwd, 'gitops', NS)
    overlay = (await readdir(dir))
      .filter((f) => f !== 'kustomization.yaml')
      .sort()
      .map((f) => path.join(dir, f))
    gateKube = kube
    if (cluster.envtest) {
      // The ServiceAccount, Role and ClusterRole of docs/gitops.md, as given there.
      const doc = await readFile(path.join(REPO_ROOT, 'docs/gitops.md'), 'utf8')
      const section = doc.slice(doc.indexOf('### The verification gate'))
      const rbac = [...section.matchAll(/```yaml\n([\s\S]*?)```/g)][1]![1]!.replaceAll('NAMESPACE', NS)
      for (const d of parseAllDocuments(rbac)) await cluster.api.create(d.toJS() as KubeObject)
      const token = await serviceAccountToken(cluster, NS, 'mesh-migrate-gate')
      gateKube = path.join(cwd, 'gate.kubeconfig')
      await writeFile(
        gateKube,
        tokenKubeconfig(cluster.envtest.url, token, {caPem: cluster.envtest.caPem, user: 'gate'}),
      )
    }
  }, 240_000)
  afterAll(async () => {
    if (cluster?.envtest)
      for (const kind of ['ClusterRoleBinding'] as const)
        await cluster.api
          .delete({apiVersion: 'rbac.authorization.k8s.io/v1', kind, name: `mesh-migrate-gate-${NS}`})
          .catch(() => undefined)
    await cluster?.stop()
  })

  /** Syncs these overlay files as Argo CD does, in sync-wave order: new objects applied, patches merged, removals pruned. */
  async function sync(files: string[]): Promise<void> {
    const engine = cluster.api.as({userAgent: 'argocd-application-controller', fieldManager: 'argocd-controller'})
    for (const file of files) {
      const doc = parse(await readFile(file, 'utf8')) as KubeObject & {$patch?: string}
      if (doc.$patch === 'delete') await engine.delete(refOf(doc))
      else if (/^\d+-.+-add-/.test(path.basename(file)))
        await engine.patch(refOf(doc), doc, {type: 'apply', force: true})
      else await engine.patch(refOf(doc), {metadata: doc.metadata, ...(doc.spec ? {spec: doc.spec} : {})})
    }
  }

  /** The gate as the Job runs it; `until`: re-run (as the Job's backoffLimit does) until it holds, for the rollouts. */
  async function gate(until: (r: {code: number | null; plan: PlanStatus}) => boolean = () => true) {
    const deadline = Date.now() + 90_000
    for (;;) {
      const planBefore = await readFile(path.join(cwd, `plans/${NS}.yaml`), 'utf8')
      const json = await cli(
        ['status', `plans/${NS}.yaml`, '--by-effect', '--detailed-exitcode', '-o', 'json'],
        cwd,
        gateKube,
      )
      expect(hasStackTrace(json.stderr)).toBe(false)
      expect(await readFile(path.join(cwd, `plans/${NS}.yaml`), 'utf8')).toBe(planBefore)
      const plan = (JSON.parse(json.stdout) as {plans: PlanStatus[]}).plans[0]!
      const result = {code: json.code, plan}
      if (until(result) || Date.now() > deadline) {
        const text = await cli(['status', `plans/${NS}.yaml`, '--by-effect', '--detailed-exitcode'], cwd, gateKube)
        return {...result, text}
      }
      await new Promise((r) => setTimeout(r, 1000))
    }
  }

  const firstMissing = (plan: PlanStatus) => plan.steps.find((s) => s.effect === 'missing')

  it('before the sync: exit 10, naming the first step and what is missing', async () => {
    const r = await gate()
    expect(r.code, r.text.stderr).toBe(10)
    expect(firstMissing(r.plan)?.id).toBe('create-waypoint')
    expect(r.text.code).toBe(10)
    expect(r.text.stdout).toContain(`the first is create-waypoint: Gateway ${NS}/waypoint is missing`)
  }, 120_000)

  it('one patch left out of the sync: exit 10, naming its step and the label; with it synced: 0, nothing recorded', async () => {
    const bind = (f: string) => /-bind-waypoint-labels-namespace-/.test(path.basename(f))
    expect(overlay.filter(bind)).toHaveLength(1)
    await sync(overlay.filter((f) => !bind(f)))
    await cluster.waitForIdle()
    const partial = await gate((r) => firstMissing(r.plan)?.id === 'bind-waypoint')
    expect(partial.code, partial.text.stderr).toBe(10)
    expect(firstMissing(partial.plan)?.effectDetail).toContain(
      `Namespace ${NS}: label istio.io/use-waypoint is absent, the step sets "waypoint"`,
    )
    expect(partial.text.stdout).toMatch(
      /the first is bind-waypoint: Namespace \S+: label istio.io\/use-waypoint is absent/,
    )

    await sync(overlay.filter(bind))
    await cluster.waitForIdle()
    const done = await gate((r) => r.code === 0)
    expect(done.code, `${done.text.stdout}\n${done.text.stderr}`).toBe(0)
    expect(done.plan.notLive).toBe(0)
    expect(done.plan.steps.every((s) => s.effect === (s.id === 'preflight' ? 'n/a' : 'live'))).toBe(true)
    expect(done.text.code).toBe(0)
    expect(done.text.stdout).toContain("Every step's effect is live in the cluster and verified")
    // Nothing was recorded: by the record the plan has not started, and plain status says so (10).
    expect(done.plan.state).toBe('not-started')
    const byRecord = await cli(['status', `plans/${NS}.yaml`, '--detailed-exitcode'], cwd, kube)
    expect(byRecord.code, byRecord.stderr).toBe(10)
  }, 240_000)
})
