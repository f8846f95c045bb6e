// The API server of the cluster tier (test/cluster): a real kube-apiserver when one is available
// (test/support/envtest.ts), else the in-repo test API server — behind one small interface, so the
// tests read the same either way.
//
// On the real server each `startClusterServer()` is a server of its own (~5 s): these tests list
// cluster-wide (Nodes, DaemonSets, webhooks, every namespace) and seed cluster-scoped objects, and a
// bare kube-apiserver has no namespace controller to empty a deleted namespace, so a shared server
// would carry one file's objects into the next. The tool's requests go through the fault proxy
// (test/support/fault-proxy.ts), which keeps the request log and injects faults; `url` is the
// proxy's. What the in-repo server did without HTTP is done through the API as an administrator:
// - seed: create (or replace) each object, Namespaces and their `default` ServiceAccount first
//   (the ServiceAccount admission plugin refuses pods without it), `status` through /status, and a
//   Ready Node's `node.kubernetes.io/not-ready` taint lifted as the node lifecycle controller would;
// - addToken: a ServiceAccount with a TokenRequest token, granted the rules with Roles/ClusterRoles,
//   so 403s come from the real authorizer (the user is `system:serviceaccount:test-users:NAME`).
import {writeFile} from 'node:fs/promises'

import type {KubeObject} from '../../src/planner/model.js'
import {loadManifestFiles} from '../../src/sources/manifests.js'
import {
  ADMIN_TOKEN,
  type RequestFilter,
  type RequestLogEntry,
  startApiServer,
  type TestApiServer,
} from '../support/apiserver/index.js'
import type {PermissionRule} from '../support/apiserver/auth/authz.js'
import type {Faults} from '../support/apiserver/faults.js'
import {ensureCrds, waitForCrds} from '../support/cluster.js'
import {ApiError, type ClusterApi, clusterApiFromKubeconfigText, isConflict} from '../support/control-plane/index.js'
import {type Envtest, envtestAssets, runEnvtest, startEnvtest, tokenKubeconfig} from '../support/envtest.js'
import {type FaultProxy, startFaultProxy} from '../support/fault-proxy.js'

export interface ClusterServer {
  /** Where the tool connects (the fault proxy on the real server). */
  url: string
  real: boolean
  /** The server's gitVersion (/version). */
  version: string
  /** The administrator's bearer token at `url` (for raw requests). */
  adminToken: string
  readonly requests: readonly RequestLogEntry[]
  requestsMatching(filter?: RequestFilter): RequestLogEntry[]
  resetRequestLog(): void
  readonly faults: Faults
  /** Creates or replaces objects as an administrator (status included). */
  seed(objects: KubeObject | KubeObject[]): Promise<void>
  /** A token for a user with exactly these permissions. */
  addToken(token: string, user: {user: string; permissions: PermissionRule[]}): Promise<void>
  /** What the in-repo server calls the user of `token` (the real server: its ServiceAccount). */
  userOf(token: string): string
  kubeconfig(opts?: {token?: string; context?: string}): string
  writeKubeconfig(file: string, opts?: {token?: string; context?: string}): Promise<void>
  close(): Promise<void>
}

export interface ClusterServerOptions {
  /** CRDs: the upstream Istio and Gateway API ones (default), none, or these files. */
  crds?: 'upstream' | 'none' | string[]
}

/** A real server when the run has one (its globalSetup found the binaries and said so), else the in-repo one. */
export async function startClusterServer(opts: ClusterServerOptions = {}): Promise<ClusterServer> {
  if (runEnvtest()) return startReal((await envtestAssets())!, opts)
  return inRepo(opts)
}

async function inRepo(opts: ClusterServerOptions): Promise<ClusterServer> {
  const crds = opts.crds ?? 'upstream'
  const server: TestApiServer = await startApiServer({
    quiet: true,
    ...(crds === 'none' ? {crdFiles: 'builtin' as const} : crds === 'upstream' ? {} : {crdFiles: crds}),
  })
  return {
    url: server.url,
    real: false,
    version: 'v1.32.0',
    adminToken: ADMIN_TOKEN,
    get requests() {
      return server.requests
    },
    requestsMatching: (f) => server.requestsMatching(f),
    resetRequestLog: () => server.resetRequestLog(),
    faults: server.faults,
    seed: async (objects) => void server.seed(objects as never),
    addToken: async (token, user) => server.addToken(token, user),
    userOf: (token) => (token === ADMIN_TOKEN ? 'admin' : token),
    kubeconfig: (o) => server.kubeconfig(o),
    writeKubeconfig: (file, o) => server.writeKubeconfig(file, o),
    close: () => server.close(),
  }
}

const TEST_USERS_NS = 'test-users'

function rbacName(user: string): string {
  return `test-${user.toLowerCase().replace(/[^a-z0-9-]/g, '-')}`
}

async function startReal(dir: string, opts: ClusterServerOptions): Promise<ClusterServer> {
  const env: Envtest = await startEnvtest({assets: dir})
  let proxy: FaultProxy | undefined
  try {
    const api = await clusterApiFromKubeconfigText(env.kubeconfig('admin'), {
      userAgent: 'mesh-migrate-test-harness',
      fieldManager: 'mesh-migrate-test-harness',
    })
    const crds = opts.crds ?? 'upstream'
    if (crds === 'upstream') await ensureCrds(api)
    else if (crds !== 'none') await createCrds(api, crds)
    proxy = await startFaultProxy({target: env.url, ca: env.caPem})
    const p = proxy
    const tokens = new Map<string, {token: string; user: string}>([
      [ADMIN_TOKEN, {token: env.tokens.admin, user: 'admin'}],
    ])
    const real = (token?: string) => {
      const t = tokens.get(token ?? ADMIN_TOKEN)
      if (!t) throw new Error(`no token ${token} on the test server (addToken first)`)
      return t.token
    }
    const kubeconfig = (o: {token?: string; context?: string} = {}) =>
      tokenKubeconfig(p.url, real(o.token), {
        context: o.context ?? 'test-apiserver',
        user: tokens.get(o.token ?? ADMIN_TOKEN)!.user,
      })
    return {
      url: p.url,
      real: true,
      version: env.version,
      adminToken: env.tokens.admin,
      get requests() {
        return p.requests
      },
      requestsMatching: (f) => p.requestsMatching(f),
      resetRequestLog: () => p.resetRequestLog(),
      faults: p.faults,
      seed: (objects) => seedReal(api, Array.isArray(objects) ? objects : [objects]),
      addToken: async (token, user) =>
        void tokens.set(token, {
          token: await grantedToken(api, user.user, user.permissions),
          user: `system:serviceaccount:${TEST_USERS_NS}:${rbacName(user.user)}`,
        }),
      userOf: (token) => tokens.get(token)?.user ?? token,
      kubeconfig,
      writeKubeconfig: (file, o) => writeFile(file, kubeconfig(o), {mode: 0o600}),
      close: async () => {
        await p.close()
        await env.stop()
      },
    }
  } catch (error) {
    await proxy?.close()
    await env.stop()
    throw error
  }
}

async function createCrds(api: ClusterApi, files: string[]): Promise<void> {
  const {objects} = await loadManifestFiles(files)
  const crds = objects.filter((o) => o.kind === 'CustomResourceDefinition')
  for (const crd of crds) await api.create(crd)
  await waitForCrds(
    api,
    crds.map((c) => ({apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', name: c.metadata.name})),
  )
}

async function objectPath(api: ClusterApi, ref: ReturnType<typeof refOf>): Promise<string> {
  const res = await api.resource(ref.apiVersion, ref.kind)
  if (!res) throw new Error(`the server does not serve ${ref.kind} (${ref.apiVersion})`)
  const base = res.group ? `/apis/${ref.apiVersion}` : `/api/${ref.apiVersion}`
  return `${base}${res.namespaced ? `/namespaces/${ref.namespace}` : ''}/${res.plural}/${ref.name}`
}

const refOf = (o: KubeObject) => ({
  apiVersion: o.apiVersion,
  kind: o.kind,
  name: o.metadata.name,
  ...(o.metadata.namespace ? {namespace: o.metadata.namespace} : {}),
})

async function ensureNamespace(api: ClusterApi, name: string, declared?: KubeObject): Promise<void> {
  const ref = {apiVersion: 'v1', kind: 'Namespace', name}
  const existing = await api.get(ref)
  if (existing && declared)
    await api.patch(ref, {
      metadata: {labels: declared.metadata.labels ?? {}, annotations: declared.metadata.annotations ?? {}},
    })
  if (!existing)
    await api.create(
      declared
        ? {
            apiVersion: 'v1',
            kind: 'Namespace',
            metadata: {name, labels: declared.metadata.labels ?? {}, annotations: declared.metadata.annotations ?? {}},
          }
        : {apiVersion: 'v1', kind: 'Namespace', metadata: {name}},
    )
  // No ServiceAccount controller on a bare server: pods need their namespace's `default` ServiceAccount.
  if (!(await api.get({apiVersion: 'v1', kind: 'ServiceAccount', namespace: name, name: 'default'}))) {
    await api
      .create({apiVersion: 'v1', kind: 'ServiceAccount', metadata: {name: 'default', namespace: name}})
      .catch((e: unknown) => {
        if (!isConflict(e)) throw e
      })
  }
}

async function seedReal(api: ClusterApi, objects: KubeObject[]): Promise<void> {
  const namespaces = new Map<string, KubeObject | undefined>()
  for (const o of objects) {
    if (o.kind === 'Namespace') namespaces.set(o.metadata.name, o)
    else if (o.metadata.namespace && !namespaces.has(o.metadata.namespace))
      namespaces.set(o.metadata.namespace, undefined)
  }
  for (const [name, declared] of namespaces) await ensureNamespace(api, name, declared)
  for (const o of objects) {
    if (o.kind === 'Namespace') continue
    const {status, ...body} = structuredClone(o)
    const ref = refOf(o)
    let live: KubeObject
    try {
      live = await api.create(body as KubeObject)
    } catch (error) {
      if (!isConflict(error)) throw error
      const current = (await api.get(ref))!
      if (o.kind === 'Pod') {
        // A pod's spec is immutable: replaced as a kubelet-less cluster can, deleted at once and created again.
        await api.delete(ref, {gracePeriodSeconds: 0, preconditions: {uid: current.metadata.uid!}})
        live = await api.create(body as KubeObject)
      } else {
        // Replaced, as the in-repo seed did (a PUT with the live resourceVersion).
        live = await api.request('PUT', await objectPath(api, ref), `replace ${o.kind}/${o.metadata.name}`, {
          body: {...body, metadata: {...body.metadata, resourceVersion: current.metadata.resourceVersion}},
        })
      }
    }
    if (status !== undefined)
      await api.patch(ref, {status}, {subresource: 'status'}).catch((e: unknown) => {
        // Kinds without a status subresource keep what the create stored.
        if (!(e instanceof ApiError && e.status === 404)) throw e
      })
    if (o.kind === 'Node') await liftNotReadyTaint(api, ref, live)
  }
}

/** What the node lifecycle controller does for a Ready Node (TaintNodesByCondition tainted it at creation). */
async function liftNotReadyTaint(api: ClusterApi, ref: ReturnType<typeof refOf>, created: KubeObject): Promise<void> {
  const node = (await api.get(ref)) ?? created
  const ready = (node.status?.conditions ?? []).some(
    (c: {type: string; status: string}) => c.type === 'Ready' && c.status === 'True',
  )
  const taints: {key: string}[] = node.spec?.taints ?? []
  if (!ready || !taints.some((t) => t.key === 'node.kubernetes.io/not-ready')) return
  await api.patch(ref, {
    metadata: {resourceVersion: node.metadata.resourceVersion},
    spec: {taints: taints.filter((t) => t.key !== 'node.kubernetes.io/not-ready')},
  })
}

/** A ServiceAccount token whose only grants are `rules` (namespaced rules as Roles, the rest as a ClusterRole). */
async function grantedToken(api: ClusterApi, user: string, rules: PermissionRule[]): Promise<string> {
  await ensureNamespace(api, TEST_USERS_NS)
  const name = rbacName(user)
  await api.create({apiVersion: 'v1', kind: 'ServiceAccount', metadata: {name, namespace: TEST_USERS_NS}})
  const subject = {kind: 'ServiceAccount', name, namespace: TEST_USERS_NS}
  const toRule = (r: PermissionRule) => ({
    verbs: r.verbs,
    apiGroups: r.apiGroups ?? ['*'],
    resources: r.resources ?? ['*'],
    ...(r.resourceNames ? {resourceNames: r.resourceNames} : {}),
  })
  const clusterRules = rules.filter((r) => !r.namespaces).map(toRule)
  if (clusterRules.length > 0) {
    await api.create({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: {name},
      rules: clusterRules,
    } as KubeObject)
    await api.create({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: {name},
      roleRef: {apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name},
      subjects: [subject],
    } as KubeObject)
  }
  const byNamespace = new Map<string, ReturnType<typeof toRule>[]>()
  for (const r of rules)
    for (const ns of r.namespaces ?? []) byNamespace.set(ns, [...(byNamespace.get(ns) ?? []), toRule(r)])
  for (const [ns, nsRules] of byNamespace) {
    await ensureNamespace(api, ns)
    await api.create({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: {name, namespace: ns},
      rules: nsRules,
    } as KubeObject)
    await api.create({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: {name, namespace: ns},
      roleRef: {apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name},
      subjects: [subject],
    } as KubeObject)
  }
  const review = await api.request<{status: {token: string}}>(
    'POST',
    `/api/v1/namespaces/${TEST_USERS_NS}/serviceaccounts/${name}/token`,
    `token for ${name}`,
    {
      body: {apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: {expirationSeconds: 3600}},
    },
  )
  return review.status.token
}
