// kubeconfig loading with kubectl's semantics (ECOSYSTEM §3.1, §5.6):
// --kubeconfig wins; else every file of $KUBECONFIG merged with the first file winning (kubectl's
// rule — client-node would let the last win, or throw on duplicate names); else ~/.kube/config; else
// the in-cluster service account; else a clear error instead of client-node's silent localhost:8080.
// yaml statically: the build bundles it (scripts/build.mjs), and a dynamic import of a bundled CommonJS module
// gives only its default export.
import {parse as parseYaml} from 'yaml'
import {existsSync, readFileSync} from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import type {KubeConfig} from '@kubernetes/client-node'

import {KubeConfigError} from './errors.js'

export interface KubeConfigOptions {
  kubeconfig?: string
  context?: string
}

const IN_CLUSTER_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token'

/**
 * kubectl's kubeconfig key for a bearer token in a file is `tokenFile` (client-go's AuthInfo), relative to
 * the kubeconfig's folder; client-node only knows a `token-file` key and would send no credentials. The
 * token is read when the kubeconfig is loaded, and again on a 401 (the client reloads the kubeconfig).
 */
async function applyTokenFiles(kc: KubeConfig, file: string, text: string): Promise<void> {
  const raw = parseYaml(text) as {users?: {name?: string; user?: {tokenFile?: unknown; token?: unknown}}[]} | null
  for (const entry of raw?.users ?? []) {
    const tokenFile = entry?.user?.tokenFile
    if (typeof tokenFile !== 'string' || entry.user?.token !== undefined) continue
    const user = kc.users.find((u) => u.name === entry.name)
    if (!user) continue
    const where = path.resolve(path.dirname(file), tokenFile)
    try {
      Object.assign(user, {token: readFileSync(where, 'utf8').trim()})
    } catch (error) {
      throw new KubeConfigError(
        `cannot read the token file of user "${entry.name}" in ${file}: ${describeError(error)}`,
        `Check that ${where} exists and is readable.`,
      )
    }
  }
}

function describeError(error: unknown): string {
  return error instanceof Error ? error.message.split('\n')[0]! : String(error)
}

export async function loadKubeConfig(opts: KubeConfigOptions, env: NodeJS.ProcessEnv): Promise<KubeConfig> {
  const {KubeConfig} = await import('@kubernetes/client-node')
  const kc = new KubeConfig()
  const loadFile = async (file: string): Promise<KubeConfig> => {
    const one = new KubeConfig()
    let text: string
    try {
      one.loadFromFile(file)
      text = readFileSync(file, 'utf8')
    } catch (error) {
      throw new KubeConfigError(
        `cannot read kubeconfig ${file}: ${describeError(error)}`,
        'Check that the file is a valid kubeconfig (kubectl config view --kubeconfig FILE).',
      )
    }
    if (text.includes('tokenFile')) await applyTokenFiles(one, file, text)
    return one
  }

  if (opts.kubeconfig) {
    if (!existsSync(opts.kubeconfig)) {
      throw new KubeConfigError(`kubeconfig ${opts.kubeconfig} does not exist`, 'Check the --kubeconfig path.')
    }
    const one = await loadFile(opts.kubeconfig)
    kc.loadFromOptions({
      clusters: one.clusters,
      users: one.users,
      contexts: one.contexts,
      currentContext: one.currentContext,
    })
  } else if (env.KUBECONFIG) {
    // kubectl ignores files of $KUBECONFIG that do not exist.
    const files = env.KUBECONFIG.split(path.delimiter).filter((f) => f && existsSync(f))
    if (files.length === 0) {
      throw new KubeConfigError(
        `none of the files in $KUBECONFIG exist (${env.KUBECONFIG})`,
        'Point KUBECONFIG at your kubeconfig, or pass --kubeconfig.',
      )
    }
    const configs = await Promise.all(files.map(loadFile))
    const firstWins = <T extends {name: string}>(lists: T[][]): T[] => {
      const seen = new Map<string, T>()
      for (const list of lists) for (const item of list) if (!seen.has(item.name)) seen.set(item.name, item)
      return [...seen.values()]
    }
    kc.loadFromOptions({
      clusters: firstWins(configs.map((c) => c.clusters)),
      users: firstWins(configs.map((c) => c.users)),
      contexts: firstWins(configs.map((c) => c.contexts)),
      currentContext: configs.find((c) => c.currentContext)?.currentContext ?? '',
    })
  } else {
    const home = env.HOME ?? os.homedir()
    const defaultFile = path.join(home, '.kube', 'config')
    if (existsSync(defaultFile)) {
      const one = await loadFile(defaultFile)
      kc.loadFromOptions({
        clusters: one.clusters,
        users: one.users,
        contexts: one.contexts,
        currentContext: one.currentContext,
      })
    } else if (env.KUBERNETES_SERVICE_HOST && existsSync(IN_CLUSTER_TOKEN)) {
      kc.loadFromCluster()
    } else {
      throw new KubeConfigError(
        'no kubeconfig found: $KUBECONFIG is not set, ~/.kube/config does not exist, and this is not a pod with a service account',
        'Pass --kubeconfig FILE or set KUBECONFIG; to work offline on manifest files, pass --manifests PATH.',
      )
    }
  }

  if (opts.context) {
    if (!kc.getContextObject(opts.context)) {
      const known = kc.getContexts().map((c) => c.name)
      throw new KubeConfigError(
        `context "${opts.context}" is not in the kubeconfig`,
        known.length > 0 ? `Known contexts: ${known.join(', ')}.` : 'The kubeconfig has no contexts.',
      )
    }
    kc.setCurrentContext(opts.context)
  }
  const current = kc.getCurrentContext()
  if (!current || !kc.getContextObject(current)) {
    throw new KubeConfigError(
      'the kubeconfig has no current context',
      'Pass --context NAME (kubectl config get-contexts lists them).',
    )
  }
  const cluster = kc.getCurrentCluster()
  if (!cluster || !cluster.server) {
    throw new KubeConfigError(
      `context "${current}" names no cluster with a server URL`,
      'Fix the context in your kubeconfig (kubectl config view).',
    )
  }
  if (cluster.server.startsWith('http:') && !cluster.skipTLSVerify) {
    throw new KubeConfigError(
      `cluster "${cluster.name}" uses plain http (${cluster.server}), which is only allowed with insecure-skip-tls-verify`,
      'Use the https URL of the API server.',
    )
  }
  return kc
}

/** kubectl's --request-timeout syntax: "0" = none, a bare number = seconds, or 500ms / 30s / 2m / 1h. */
export function parseRequestTimeout(value: string | undefined): number | undefined {
  if (value === undefined || value === '' || value === '0') return undefined
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(value.trim())
  if (!match)
    throw new KubeConfigError(
      `invalid --request-timeout "${value}"`,
      'Use a duration such as 30s, 1m or 500ms (0 for none).',
    )
  const n = Number(match[1])
  const unit = match[2] ?? 's'
  const ms = unit === 'ms' ? n : unit === 's' ? n * 1000 : unit === 'm' ? n * 60_000 : n * 3_600_000
  return ms === 0 ? undefined : ms
}
