import type {Interfaces} from '@oclif/core'
import * as Args from '@oclif/core/args'

import {namespaceInventory, type InventoryRequest} from '../actions/inventory.js'
import {openSource} from '../sources/open.js'
import {stdoutPainter} from '../ui/color.js'
import {BaseCommand, EXIT_CODES_HELP, outputFlag, sourceFlags} from '../cli/base.js'
import type {InventoryDocument} from '../cli/contract.js'
import {namespaceFlag, requireNamespaceOrContext, waypointForFlag} from '../cli/flags.js'

export default class InventoryCommand extends BaseCommand {
  static override summary = "List every object that affects a namespace's data plane, with its L4/L7 verdict and why."
  static override description = `Reads the namespace's Istio and Gateway API objects (and the root namespace's and other namespaces' config that applies to it), its workloads and Services, and classifies each object: L4 (ztunnel enforces it as is), L7 (needs a waypoint), inert, unaffected or blocker, with field-level reasons.

EXIT CODES
${EXIT_CODES_HELP}`

  static override examples = [
    '<%= config.bin %> inventory bookinfo --manifests examples/bookinfo',
    '<%= config.bin %> inventory bookinfo --context prod -o json',
  ]

  static override args = {namespace: Args.string({description: 'The namespace to migrate (or -n NAMESPACE).'})}
  static override flags = {
    namespace: namespaceFlag,
    ...sourceFlags,
    output: outputFlag,
    'waypoint-for': waypointForFlag,
  }

  async run(): Promise<InventoryDocument | undefined> {
    const o = this.validate(await this.complete())
    const source = await openSource(o.flags, this.io)
    const inventory = await namespaceInventory(source, o.request)
    // The table view is imported only when it is shown (its table stack costs start-up for -o json).
    return this.emit(inventory, o.flags.output, async () =>
      (await import('../ui/inventory-view.js')).renderInventory(inventory, stdoutPainter(this.io)),
    )
  }

  /** Flags → options: the namespace (argument, -n, or the kubeconfig context's: read from the file, no connection). */
  private async complete(): Promise<InventoryInput> {
    const {args, flags} = await this.parse(InventoryCommand)
    return {namespace: await requireNamespaceOrContext(args.namespace, flags.namespace, flags, this.io.stderr), flags}
  }

  /** What to read and classify (the source flags oclif has checked already). */
  private validate({namespace, flags}: InventoryInput): InventoryOptions {
    return {
      flags,
      request: {
        namespace,
        rootNamespace: flags['root-namespace'],
        waypointFor: flags['waypoint-for'],
        ...(flags['istio-version'] ? {istioVersion: flags['istio-version']} : {}),
      },
    }
  }
}

type InventoryFlags = Interfaces.InferredFlags<typeof InventoryCommand.flags>
interface InventoryInput {
  namespace: string
  flags: InventoryFlags
}
interface InventoryOptions {
  flags: InventoryFlags
  request: InventoryRequest
}
