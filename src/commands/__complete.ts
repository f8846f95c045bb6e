import {Command} from '@oclif/core/command'

import {processIo} from '../cli/base.js'
import {completions, NO_FILE_COMPLETION} from '../cli/completion.js'
import {PLANS_DIR} from '../executor/plan-store.js'

/** cobra's `__complete` protocol, for the completion scripts and kubectl's plugin completion (hidden). */
export default class CompleteCommand extends Command {
  static override hidden = true
  static override strict = false
  static override summary = 'Print completion candidates for the words typed (used by the completion scripts).'

  async run(): Promise<void> {
    const found = await completions(this.argv, this.config, {
      plansDir: PLANS_DIR,
      contexts: contextsOf,
      namespaces: namespacesOf,
    })
    processIo().stdout.write(`${[...found, `:${NO_FILE_COMPLETION}`].join('\n')}\n`)
  }
}

/** The contexts of the kubeconfig files (--kubeconfig, $KUBECONFIG, ~/.kube/config). */
async function contextsOf(opts: {kubeconfig?: string}): Promise<string[]> {
  const {readKubeconfigContexts} = await import('../kube/light-config.js')
  return [...(readKubeconfigContexts(opts, process.env)?.contexts.keys() ?? [])].sort()
}

/** The namespaces of the context, asked with a short timeout: completion must never hang a shell. */
async function namespacesOf(opts: {kubeconfig?: string; context?: string}): Promise<string[]> {
  try {
    const {connect} = await import('../kube/http-client.js')
    const client = await connect({...opts, requestTimeout: '3s', retries: 0, env: process.env})
    const resource = await client.resourceFor('v1', 'Namespace')
    if (!resource) return []
    return (await client.list(resource)).map((n) => n.metadata.name).sort()
  } catch {
    return []
  }
}
