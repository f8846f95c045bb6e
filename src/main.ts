// The CLI, as scripts/build.mjs bundles it into dist/cli.cjs: oclif's runtime and every command and hook.
// bin/run.js and bin/kubectl-mesh_migrate.js run oclif from here, and oclif finds the commands and the hook here
// (package.json `oclif.commands` and `oclif.hooks`: the explicit strategy), so that one bundle is all node loads
// (and, on Node >= 22.1, what Node's compile cache keeps).
/* eslint-disable @typescript-eslint/no-require-imports -- a require() is what keeps a command lazy, see below */
export {execute} from '@oclif/core/execute'
export {flush} from '@oclif/core/flush'
export {handle} from '@oclif/core/handle'
export {run} from '@oclif/core/run'
/** The help (package.json oclif.helpClass): commands in workflow order. */
export {WorkflowHelp} from './cli/help.js'
/** The `command_not_found` hook (package.json oclif.hooks). */
export {default as commandNotFound} from './hooks/not-found.js'

/**
 * Every command, by id (test/unit/commands-registry.test.ts checks that each file in src/commands/ is here).
 * Each is required when oclif asks for it: esbuild evaluates a required module, and what only it imports, on
 * first use, so a run evaluates the code of its own command, not of all ten (the table and progress libraries
 * alone cost ~35 ms). Only the bundle runs this file: src/ under tsx has no require().
 */
export const commands = {
  get __complete() {
    return (require('./commands/__complete.js') as typeof import('./commands/__complete.js')).default
  },
  get apply() {
    return (require('./commands/apply.js') as typeof import('./commands/apply.js')).default
  },
  get completion() {
    return (require('./commands/completion.js') as typeof import('./commands/completion.js')).default
  },
  get census() {
    return (require('./commands/census.js') as typeof import('./commands/census.js')).default
  },
  get inventory() {
    return (require('./commands/inventory.js') as typeof import('./commands/inventory.js')).default
  },
  get plan() {
    return (require('./commands/plan.js') as typeof import('./commands/plan.js')).default
  },
  get preflight() {
    return (require('./commands/preflight.js') as typeof import('./commands/preflight.js')).default
  },
  get rollback() {
    return (require('./commands/rollback.js') as typeof import('./commands/rollback.js')).default
  },
  get show() {
    return (require('./commands/show.js') as typeof import('./commands/show.js')).default
  },
  get status() {
    return (require('./commands/status.js') as typeof import('./commands/status.js')).default
  },
  get unlock() {
    return (require('./commands/unlock.js') as typeof import('./commands/unlock.js')).default
  },
  get version() {
    return (require('./commands/version.js') as typeof import('./commands/version.js')).default
  },
  get validate() {
    return (require('./commands/validate.js') as typeof import('./commands/validate.js')).default
  },
}
