// Choose and open the object source from command flags. Sources are imported lazily: the cluster
// source pulls in @kubernetes/client-node (~0.7 s), which offline commands must never pay for.
import {UsageError, UserError} from '../errors.js'
import type {SourceSnapshot} from '../planner/model.js'
import type {ObjectSource} from './source.js'

export interface SourceFlags {
  manifests?: string[]
  kubeconfig?: string
  context?: string
  'request-timeout'?: string
}

/**
 * `io`: the command's stderr (for the "waiting" notes of a slow connection) and environment (KUBECONFIG, HOME: where
 * the kubeconfig is).
 */
export async function openSource(
  flags: SourceFlags,
  io: {stderr: NodeJS.WritableStream; env: NodeJS.ProcessEnv},
): Promise<ObjectSource> {
  if (flags.manifests && flags.manifests.length > 0) {
    if (flags.kubeconfig || flags.context) {
      throw new UsageError(
        '--manifests cannot be combined with --kubeconfig/--context',
        'Read either from manifest files or from a cluster.',
      )
    }
    const {ManifestSource} = await import('./manifests.js')
    return new ManifestSource(flags.manifests)
  }
  const {connect} = await import('../kube/http-client.js')
  const client = await connect({
    env: io.env,
    ...(flags.kubeconfig ? {kubeconfig: flags.kubeconfig} : {}),
    ...(flags.context ? {context: flags.context} : {}),
    ...(flags['request-timeout'] ? {requestTimeout: flags['request-timeout']} : {}),
    onWaiting: (message) => io.stderr.write(`${message}\n`),
  })
  const {ClusterSource} = await import('./cluster.js')
  return ClusterSource.open(client)
}

/** inventory/plan of a namespace the cluster does not have is a mistake (a typo, the wrong --context), not "nothing to migrate". */
export function requireNamespace(snapshot: SourceSnapshot): SourceSnapshot {
  const missing = snapshot.findings.find((f) => f.code === 'NamespaceNotFound')
  if (missing) {
    const fromManifests = 'manifests' in snapshot.target
    throw new UserError(missing.message.replace(/\.$/, ''), {
      suggestion:
        fromManifests && missing.fix
          ? missing.fix
          : 'Check the name (kubectl get namespaces) and the --context; to plan from files, pass --manifests.',
    })
  }
  return snapshot
}
