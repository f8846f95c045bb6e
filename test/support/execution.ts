// An execution of the engine for unit tests: as user "tester", no dry run, verifications polled for 20 ms at most.
import type {ExecutionContext} from '../../src/executor/engine.js'
import type {PlanState} from '../../src/executor/plan-state.js'
import type {KubeClient} from '../../src/kube/types.js'

export function testExecution(
  client: KubeClient,
  state: PlanState,
  overrides: Partial<ExecutionContext> = {},
): ExecutionContext {
  return {
    client,
    state,
    who: 'tester',
    dryRun: false,
    timeoutMs: 20,
    signal: new AbortController().signal,
    ...overrides,
  }
}
