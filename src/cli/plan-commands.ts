// What apply, rollback, status and unlock share: finding the plan, connecting to its cluster,
// checking that it is the cluster the plan was made for, and handling Ctrl+C.
import {PlanFilesInvalidError, StalePlanError, UsageError} from '../errors.js'
import type {PlanState} from '../executor/plan-state.js'
import {listPlanFiles, PLANS_DIR, readTextFile, resolvePlanArg} from '../executor/plan-store.js'
import {KubeApiError} from '../kube/errors.js'
import type {KubeClient} from '../kube/types.js'
import {checkPlanText} from '../plan/planfile.js'
import {mayHaveWritten} from '../plan/rollback.js'
import type {Io} from '../ui/io.js'
import {ExitCode} from '../exit-codes.js'

/**
 * SPEC §2: PLAN is a path or a namespace (plans/<ns>.yaml); omitted (and the context without a namespace:
 * `noNamespace` says why, in the errors), the one unfinished plan under plans/ (several or none is an error that
 * lists the candidates).
 */
export async function resolvePlanFile(
  arg: string | undefined,
  opts: {unfinishedOnly: boolean; noNamespace?: {why: string; suggestion: string}},
): Promise<string> {
  if (arg) return resolvePlanArg(arg)
  // Without PLAN, -n or a namespace in the context: the errors say so, and what to pass.
  const none = opts.noNamespace
  const pass = none ? ` No PLAN, no -n, and ${none.why}: ${none.suggestion}` : ''
  const files = await listPlanFiles()
  const candidates: string[] = []
  // A plan that does not pass the checks may be the one meant: choosing among the others would be a guess.
  const invalid: string[] = []
  for (const file of files) {
    let checked: ReturnType<typeof checkPlanText>
    try {
      checked = checkPlanText(await readTextFile(file, 'plan file'))
    } catch (error) {
      invalid.push(`${file} (${(error as Error).message})`)
      continue
    }
    const plan = checked.plan
    if (!plan || checked.problems.length > 0) {
      const first = checked.problems[0]
      invalid.push(
        `${file} (${checked.problems.length} problem${checked.problems.length === 1 ? '' : 's'}${first ? `, first: ${first.path ? `${first.path}: ` : ''}${first.message}` : ''})`,
      )
      continue
    }
    const phases = plan.spec.steps.map((s) => plan.status?.steps.find((x) => x.id === s.id)?.phase ?? 'Pending')
    const finished = phases.every((p) => p === 'Applied')
    const started = phases.some((p) => mayHaveWritten(p))
    if (opts.unfinishedOnly ? !finished : started) candidates.push(file)
  }
  if (invalid.length > 0) {
    throw new PlanFilesInvalidError(
      `cannot choose a plan under ${PLANS_DIR}/: ${invalid.length} plan file${invalid.length === 1 ? ' is' : 's are'} not valid:\n${invalid.map((i) => `  - ${i}`).join('\n')}`,
      `Name the plan to use (a path or a namespace), or fix or remove the invalid file${invalid.length === 1 ? '' : 's'} (\`mesh-migrate validate ${PLANS_DIR}/*.yaml\` lists every problem).${pass}`,
    )
  }
  if (candidates.length === 1) return candidates[0]!
  if (candidates.length === 0) {
    throw new UsageError(
      `no ${opts.unfinishedOnly ? 'unfinished' : 'applied'} plan under ${PLANS_DIR}/`,
      files.length > 0
        ? `Name one: ${files.join(', ')}.${pass}`
        : `Create one with \`mesh-migrate plan NAMESPACE\`.${pass}`,
    )
  }
  throw new UsageError(
    `several plans under ${PLANS_DIR}/ could be meant: ${candidates.join(', ')}`,
    `Name the plan (a path or a namespace).${pass}`,
  )
}

export interface ClusterFlags {
  kubeconfig?: string
  context?: string
  'request-timeout'?: string
}

/** `io`: the command's stderr (for "waiting" notes) and environment (KUBECONFIG, HOME: where the kubeconfig is). */
export async function connectCluster(
  flags: ClusterFlags,
  io: {stderr: NodeJS.WritableStream; env: NodeJS.ProcessEnv},
): Promise<KubeClient> {
  const {connect} = await import('../kube/http-client.js')
  return connect({
    env: io.env,
    ...(flags.kubeconfig ? {kubeconfig: flags.kubeconfig} : {}),
    ...(flags.context ? {context: flags.context} : {}),
    ...(flags['request-timeout'] ? {requestTimeout: flags['request-timeout']} : {}),
    onWaiting: (message) => io.stderr.write(`${message}\n`),
  })
}

/** A server URL reduced to what identifies the endpoint: scheme, host, port (default ports dropped), path. */
export function normalizeServer(server: string): string {
  try {
    const url = new URL(server)
    return `${url.protocol}//${url.host.toLowerCase()}${url.pathname.replace(/\/+$/, '')}`
  } catch {
    return server.trim().replace(/\/+$/, '').toLowerCase()
  }
}

/**
 * The plan must run against the cluster it was made from (kube-system's uid), unless overridden. When
 * either side has no uid (kube-system was not readable when planning, or is not now: 403), the API
 * server URL is compared instead, with a warning.
 */
export async function checkTargetCluster(
  client: KubeClient,
  state: PlanState,
  allowOther: boolean,
  note: (m: string) => void,
): Promise<void> {
  const target = state.plan.spec.target
  if (!('clusterID' in target)) {
    note(
      `The plan was made from manifests (${target.manifests.join(', ')}); every step re-checks its preconditions against context ${client.context}.`,
    )
    return
  }
  let current = ''
  let forbidden = false
  try {
    current = (await client.get({apiVersion: 'v1', kind: 'Namespace', name: 'kube-system'}))?.metadata.uid ?? ''
  } catch (error) {
    // Without read access to kube-system the uid cannot be compared; anything else (unreachable
    // cluster, bad credentials) is a real failure, not "another cluster".
    if (!(error instanceof KubeApiError && error.status === 403)) throw error
    forbidden = true
  }
  const recorded = target.clusterID
  if (recorded && current) {
    if (recorded === current) return
  } else {
    if (normalizeServer(target.server) === normalizeServer(client.server)) {
      const why = !recorded
        ? 'the plan recorded no kube-system uid (it was not readable when planning)'
        : forbidden
          ? `reading namespace kube-system is forbidden for context ${client.context}`
          : 'namespace kube-system has no uid'
      note(
        `Warning: cannot confirm the cluster by its kube-system uid: ${why}. The API server URL matches the plan's (${client.server}), so this is taken to be the plan's cluster.`,
      )
      return
    }
  }
  const currentDesc = current
    ? ` (uid ${current})`
    : forbidden
      ? ' (kube-system not readable: forbidden)'
      : ' (no kube-system uid)'
  if (allowOther) {
    note(
      `Warning: the plan was made for cluster ${recorded || '(unknown)'} (context ${target.context}, ${target.server}); this is ${current || 'an unidentified cluster'} (context ${client.context}, ${client.server}). Proceeding because of --allow-other-cluster.`,
    )
    return
  }
  throw new StalePlanError(
    `the plan was made for another cluster: context ${target.context} (${target.server}, kube-system uid ${recorded || 'unknown'}); the current context ${client.context} is ${client.server}${currentDesc}${!recorded || !current ? ', and the server URLs differ' : ''}`,
    'Switch to the right context (--context), or re-plan against this cluster; --allow-other-cluster overrides the check.',
  )
}

/**
 * Ctrl+C: the first press asks the running step to stop after the request in flight (the step is
 * recorded as Interrupted and the lock released, then exit 130); a second press exits at once.
 */
export function interruptHandler(io: Io, note: (m: string) => void): {signal: AbortSignal; dispose: () => void} {
  const controller = new AbortController()
  const onSignal = () => {
    if (controller.signal.aborted) {
      io.stderr.write('\nInterrupted again: exiting now. Re-run the command to see what was recorded.\n')
      io.exitNow(ExitCode.Interrupted)
    }
    note(
      '\nInterrupting: finishing the request in flight, recording the step as Interrupted, releasing the lock… (Ctrl+C again to exit now)',
    )
    controller.abort()
  }
  return {signal: controller.signal, dispose: io.onInterrupt(onSignal)}
}

/** kubectl-style durations for --timeout / --lock-timeout: 90s, 5m, 1h, 0. */
export function parseDuration(value: string, flag: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(value.trim())
  if (!match) throw new UsageError(`${flag} "${value}" is not a duration`, 'Use e.g. 90s, 5m, 1h.')
  const n = Number(match[1])
  const unit = match[2] ?? 's'
  return unit === 'ms' ? n : unit === 's' ? n * 1000 : unit === 'm' ? n * 60_000 : n * 3_600_000
}
