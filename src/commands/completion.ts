import * as Args from '@oclif/core/args'

import {BaseCommand} from '../cli/base.js'
import {completionScript} from '../cli/completion.js'

export default class CompletionCommand extends BaseCommand {
  static override enableJsonFlag = false
  static override summary =
    'Print the shell completion script (bash, zsh, fish) that completes namespaces, contexts, plans and step ids.'
  static override description = `As kubectl completion: load it in the current shell, or save it where the shell reads completions. It asks the CLI for what to offer (namespaces of the context for plan, inventory, preflight and unlock; plan files and namespaces with plans for apply, rollback, status, show and validate; contexts for --context; the plan's step ids for --to; formats for -o). As a kubectl plugin, kubectl_complete-mesh_migrate on PATH (shipped beside kubectl-mesh_migrate) makes \`kubectl mesh-migrate <TAB>\` complete the same way (kubectl 1.26+).`

  static override examples = [
    'source <(<%= config.bin %> completion bash)',
    'source <(<%= config.bin %> completion zsh)',
    '<%= config.bin %> completion fish | source',
  ]

  static override args = {
    shell: Args.string({description: 'The shell.', options: ['bash', 'zsh', 'fish'], required: true}),
  }

  async run(): Promise<void> {
    const {args} = await this.parse(CompletionCommand)
    this.io.stdout.write(completionScript(args.shell as 'bash' | 'zsh' | 'fish', this.config.bin))
  }
}
