import type {Interfaces} from '@oclif/core'

import type {Io} from '../ui/io.js'
import {BaseCommand, outputFlag, sourceFlags} from '../cli/base.js'
import {typed, type VersionDocument} from '../cli/contract.js'
import {connectCluster} from '../cli/plan-commands.js'
import {UserError} from '../errors.js'
import type {KubeClient} from '../kube/types.js'
import type {KubeObject} from '../planner/model.js'
import {REVISION_LABEL} from '../planner/vocab.js'
import {istioMinorFromImage} from '../sources/kinds.js'

export default class VersionCommand extends BaseCommand {
  static override summary = 'Client, Node and (when a cluster is reachable) Kubernetes and Istio versions.'
  static override description = `Like kubectl version: the client's version and the Node.js running it, then the cluster of the current context (or --context): its Kubernetes version and the Istio version plans are made for (the default revision's istiod in --root-namespace). No reachable cluster is not an error: the cluster part says why it is missing.`

  static override examples = ['<%= config.bin %> version', '<%= config.bin %> version -o json --context admin']

  static override flags = {
    output: outputFlag,
    kubeconfig: sourceFlags.kubeconfig,
    context: sourceFlags.context,
    'request-timeout': sourceFlags['request-timeout'],
    'root-namespace': sourceFlags['root-namespace'],
  }

  async run(): Promise<VersionDocument | undefined> {
    const {flags} = await this.parse(VersionCommand)
    const doc = typed('Version', {
      client: {version: this.config.version},
      node: {version: process.version},
      cluster: await readCluster(flags, this.io),
    })
    if (doc.cluster.error) this.note(`Note: no cluster version: ${doc.cluster.error}`)
    return this.emit(doc, flags.output, () => renderVersion(doc))
  }
}

type VersionFlags = Interfaces.InferredFlags<typeof VersionCommand.flags>

/** The cluster's versions, or why there are none (no kubeconfig, unreachable, forbidden). */
async function readCluster(flags: VersionFlags, io: Io): Promise<VersionDocument['cluster']> {
  let client: KubeClient
  try {
    client = await connectCluster(flags, io)
  } catch (error) {
    if (error instanceof UserError) return {error: error.message}
    throw error
  }
  const where = {context: client.context, server: client.server}
  try {
    const kubernetes = await client.serverVersion()
    const istio = await istioOf(client, flags['root-namespace'])
    return {...where, ...(kubernetes ? {kubernetes} : {}), ...(istio ? {istio} : {})}
  } catch (error) {
    if (error instanceof UserError) return {...where, error: error.message}
    throw error
  }
}

/** The Istio version plans are made for: the default revision's istiod image in the root namespace. */
async function istioOf(client: KubeClient, rootNamespace: string): Promise<VersionDocument['cluster']['istio']> {
  const resource = await client.resourceFor('apps/v1', 'Deployment')
  if (!resource) return undefined
  const istiods = await client.list(resource, {namespace: rootNamespace, labelSelector: 'app=istiod'})
  const revision = (d: KubeObject) => d.metadata.labels?.[REVISION_LABEL] ?? 'default'
  const chosen = istiods.find((d) => revision(d) === 'default') ?? istiods[0]
  if (!chosen) return undefined
  const containers: {name?: string; image?: string}[] = chosen.spec?.template?.spec?.containers ?? []
  const image = (containers.find((c) => c.name === 'discovery') ?? containers[0])?.image
  const version = istioMinorFromImage(image)
  return version && image ? {version, revision: revision(chosen), image} : undefined
}

function renderVersion(doc: VersionDocument): string {
  const c = doc.cluster
  return [
    `Client Version: ${doc.client.version}`,
    `Node Version: ${doc.node.version}`,
    ...(c.context ? [`Context: ${c.context} (${c.server})`] : []),
    ...(c.kubernetes ? [`Kubernetes Version: ${c.kubernetes}`] : []),
    ...(c.istio ? [`Istio Version: ${c.istio.version} (revision ${c.istio.revision}, ${c.istio.image})`] : []),
    ...(c.context && !c.istio && !c.error ? ['Istio Version: none found (no istiod)'] : []),
  ].join('\n')
}
