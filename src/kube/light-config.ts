// The kubeconfig read without @kubernetes/client-node, for the common case: a context whose cluster is an
// https server (CA file or data, or insecure-skip-tls-verify) and whose user has a token, a tokenFile and/or
// a client certificate. Importing client-node costs more than a whole `kubectl get` (~0.5-0.8 s of CPU,
// issue 11 §3), and most kubeconfigs need none of it. Anything else — an exec plugin, an auth provider,
// a proxy, impersonation, basic auth, in-cluster config, a kubeconfig that does not load cleanly — answers
// undefined, and the caller loads it with client-node (src/kube/config.ts), which also words every error.
// yaml statically: the build bundles it (scripts/build.mjs), and a dynamic import of a bundled CommonJS module
// gives only its default export.
import {parse as parseYaml} from 'yaml'
import {existsSync, readFileSync} from 'node:fs'
import http from 'node:http'
import https from 'node:https'
import os from 'node:os'
import path from 'node:path'

import type {KubeConfigOptions} from './config.js'

/** The context's cluster and user, with file paths resolved and contents read. */
export interface LightKubeConfig {
  context: string
  server: string
  userName?: string
  /** Bearer token (inline, or read from tokenFile). */
  token?: string
  /** An http.Agent for a plain-http server, else an https.Agent with the cluster's TLS settings. */
  agent: http.Agent
}

type Entry = Record<string, unknown>
interface Named {
  name: string
  /** The folder of the kubeconfig it came from: relative paths in it are relative to that folder. */
  dir: string
  value: Entry
}

// Keys whose handling here is the same as kubectl's; any other key in the cluster or user sends the
// kubeconfig to client-node (an unknown key may change what the request must carry).
const CLUSTER_KEYS = new Set([
  'server',
  'certificate-authority',
  'certificate-authority-data',
  'insecure-skip-tls-verify',
  'tls-server-name',
  'extensions',
])
const USER_KEYS = new Set([
  'token',
  'tokenFile',
  'client-certificate',
  'client-certificate-data',
  'client-key',
  'client-key-data',
  'extensions',
])

/** kubectl's choice of files: --kubeconfig, else $KUBECONFIG's existing files (first wins), else ~/.kube/config. */
function kubeconfigFiles(opts: KubeConfigOptions, env: NodeJS.ProcessEnv): string[] {
  if (opts.kubeconfig) return existsSync(opts.kubeconfig) ? [opts.kubeconfig] : []
  if (env.KUBECONFIG) return env.KUBECONFIG.split(path.delimiter).filter((f) => f && existsSync(f))
  const defaultFile = path.join(env.HOME ?? os.homedir(), '.kube', 'config')
  return existsSync(defaultFile) ? [defaultFile] : []
}

const isEntry = (x: unknown): x is Entry => typeof x === 'object' && x !== null && !Array.isArray(x)

/** Entries of a named list (`clusters`, `users`, `contexts`), the first of a name winning across files. */
function named(docs: {doc: Entry; dir: string}[], list: string, field: string): Map<string, Named> | undefined {
  const out = new Map<string, Named>()
  for (const {doc, dir} of docs) {
    const items = doc[list] ?? []
    if (!Array.isArray(items)) return undefined
    for (const item of items) {
      if (!isEntry(item) || typeof item.name !== 'string') return undefined
      const value = item[field] ?? {}
      if (!isEntry(value)) return undefined
      if (!out.has(item.name)) out.set(item.name, {name: item.name, dir, value})
    }
  }
  return out
}

function readPath(dir: string, file: unknown): Buffer | undefined {
  if (typeof file !== 'string' || !file) return undefined
  return readFileSync(path.resolve(dir, file))
}

function fromBase64(data: unknown): Buffer | undefined {
  return typeof data === 'string' && data ? Buffer.from(data, 'base64') : undefined
}

/** What the kubeconfig files name, whatever their users need: the contexts (with their namespaces) and the current one. */
export interface KubeconfigContexts {
  current?: string
  contexts: Map<string, {namespace?: string}>
}

/** The contexts of kubectl's kubeconfig files (for the context's namespace and completion); undefined when unreadable. */
export function readKubeconfigContexts(
  opts: KubeConfigOptions,
  env: NodeJS.ProcessEnv,
): KubeconfigContexts | undefined {
  try {
    const docs = kubeconfigFiles(opts, env).map((file) => ({
      doc: parseYaml(readFileSync(file, 'utf8')) as unknown,
      dir: path.dirname(path.resolve(file)),
    }))
    if (docs.length === 0 || !docs.every((d): d is {doc: Entry; dir: string} => isEntry(d.doc))) return undefined
    const contexts = named(docs, 'contexts', 'context')
    if (!contexts) return undefined
    const current = docs.map((d) => d.doc['current-context']).find((c): c is string => typeof c === 'string' && !!c)
    const out = new Map<string, {namespace?: string}>()
    for (const [name, {value}] of contexts)
      out.set(name, typeof value.namespace === 'string' && value.namespace ? {namespace: value.namespace} : {})
    return {...(current ? {current} : {}), contexts: out}
  } catch {
    return undefined
  }
}

/** The kubeconfig of `opts` when it needs nothing but tokens, client certificates and CAs; else undefined. */
export async function loadLightKubeConfig(
  opts: KubeConfigOptions,
  env: NodeJS.ProcessEnv,
): Promise<LightKubeConfig | undefined> {
  const files = kubeconfigFiles(opts, env)
  if (files.length === 0) return undefined
  try {
    const docs = files.map((file) => ({
      doc: parseYaml(readFileSync(file, 'utf8')) as unknown,
      dir: path.dirname(path.resolve(file)),
    }))
    if (!docs.every((d): d is {doc: Entry; dir: string} => isEntry(d.doc))) return undefined
    const [clusters, users, contexts] = [
      named(docs, 'clusters', 'cluster'),
      named(docs, 'users', 'user'),
      named(docs, 'contexts', 'context'),
    ]
    if (!clusters || !users || !contexts) return undefined
    const current = docs.map((d) => d.doc['current-context']).find((c) => typeof c === 'string' && c)
    const contextName = opts.context ?? (current as string | undefined)
    const context = contextName === undefined ? undefined : contexts.get(contextName)?.value
    if (!contextName || !context || typeof context.cluster !== 'string') return undefined
    const cluster = clusters.get(context.cluster)
    const user = typeof context.user === 'string' ? users.get(context.user) : undefined
    if (typeof context.user === 'string' && context.user && !user) return undefined
    if (!cluster || Object.keys(cluster.value).some((k) => !CLUSTER_KEYS.has(k))) return undefined
    if (user && Object.keys(user.value).some((k) => !USER_KEYS.has(k))) return undefined
    const c = cluster.value
    const server = typeof c.server === 'string' ? c.server.replace(/\/+$/, '') : ''
    const insecure = c['insecure-skip-tls-verify'] === true
    // Plain http only with insecure-skip-tls-verify; refusing it otherwise is the client-node path's error.
    if (!server.startsWith('https://') && !(server.startsWith('http://') && insecure)) return undefined
    const u = user?.value ?? {}
    const token =
      typeof u.token === 'string' && u.token
        ? u.token
        : readPath(user?.dir ?? '', u.tokenFile)
            ?.toString('utf8')
            .trim()
    const agent = server.startsWith('http://')
      ? new http.Agent({keepAlive: true})
      : new https.Agent({
          keepAlive: true,
          rejectUnauthorized: !insecure,
          ...optional(
            'ca',
            fromBase64(c['certificate-authority-data']) ?? readPath(cluster.dir, c['certificate-authority']),
          ),
          ...optional(
            'cert',
            fromBase64(u['client-certificate-data']) ?? readPath(user?.dir ?? '', u['client-certificate']),
          ),
          ...optional('key', fromBase64(u['client-key-data']) ?? readPath(user?.dir ?? '', u['client-key'])),
          ...optional(
            'servername',
            typeof c['tls-server-name'] === 'string' && c['tls-server-name'] ? c['tls-server-name'] : undefined,
          ),
        })
    return {context: contextName, server, ...(user ? {userName: user.name} : {}), ...(token ? {token} : {}), agent}
  } catch {
    // Unreadable or malformed: client-node's loader says what is wrong with it.
    return undefined
  }
}

function optional<K extends string, V>(key: K, value: V | undefined): Partial<Record<K, V>> {
  return value === undefined ? {} : ({[key]: value} as Record<K, V>)
}
