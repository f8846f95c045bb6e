// Flags shared by several commands (kept apart from base.ts so each command imports only what it uses).
import * as Flags from '@oclif/core/flags'

import {UsageError} from '../errors.js'
import {namespaceNameProblem} from '../planner/names.js'
import {WAYPOINT_FOR_VALUES} from '../planner/waypoint.js'

export const waypointForFlag = Flags.option({
  description:
    'Traffic the waypoint handles (istio.io/waypoint-for): service (Service VIPs), workload (pod IPs, e.g. headless/StatefulSet peers) or all.',
  options: WAYPOINT_FOR_VALUES,
  default: 'service' as const,
})()

export const waypointNameFlag = Flags.string({
  description: 'Name of the waypoint Gateway (also its Deployment, Service and ServiceAccount). "none" is reserved.',
  default: 'waypoint',
})

/**
 * A kubectl-style duration (90s, 5m, 1h, 500ms, 0), checked while parsing so that a bad value is a
 * usage error (exit 2) before anything runs; the value stays a string for the code that reads it.
 */
export function durationFlag(opts: {description: string; default: string; helpGroup?: string}) {
  return Flags.string({
    ...opts,
    parse: async (value, ctx) => {
      const {parseDuration} = await import('./plan-commands.js')
      parseDuration(value, `--${ctx.token?.flag ?? 'duration'}`)
      return value
    },
  })
}

/**
 * apply/rollback --take-over: the namespace is owned by the plan whose spec was first applied (its digest); a
 * reviewed re-plan of it (another digest) takes it over only when asked (issue 20 §2).
 */
export const takeOverFlag = Flags.boolean({
  description:
    "Take the namespace over from the plan first applied to it, whose spec differs from this one's (a reviewed re-plan, plan --keep-progress).",
})

/** How commands that only talk to a cluster find it (kubectl semantics). */
export const clusterFlags = {
  kubeconfig: Flags.string({
    description: 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config).',
    helpGroup: 'CLUSTER',
  }),
  context: Flags.string({description: 'The kubeconfig context to use.', helpGroup: 'CLUSTER'}),
  'request-timeout': durationFlag({
    description: 'Timeout of a single API request, e.g. 30s, 1m (0 = none).',
    default: '0',
    helpGroup: 'CLUSTER',
  }),
}

/** `-n NAMESPACE`, as kubectl: accepted wherever a command takes a namespace (or a plan named by its namespace). */
export const namespaceFlag = Flags.string({
  char: 'n',
  description:
    "The namespace (the same as the NAMESPACE or PLAN argument). Without either: the kubeconfig context's namespace, said on stderr.",
})

/**
 * A namespace named on the command line, checked before it becomes a path or a request (issue 20 §1): a name
 * that is not an RFC 1123 label (`../x`, `a/b`) is a usage error (exit 2).
 */
export function checkNamespaceName(name: string, what = 'NAMESPACE'): string {
  const problem = namespaceNameProblem(name)
  if (problem)
    throw new UsageError(
      `${what}: ${problem}`,
      'Name a namespace as Kubernetes spells it (kubectl get namespaces lists them).',
    )
  return name
}

/**
 * The namespace from the argument or -n; both given and different is a usage error. -n is always a namespace
 * name; the argument is one unless `what` says it may be a plan file path (PLAN).
 */
export function namespaceOf(arg: string | undefined, flag: string | undefined, what = 'NAMESPACE'): string | undefined {
  if (arg !== undefined && flag !== undefined && arg !== flag) {
    throw new UsageError(
      `${what} "${arg}" and -n ${flag} disagree`,
      'Give the namespace once: as the argument or with -n.',
    )
  }
  if (flag !== undefined) checkNamespaceName(flag, '-n')
  if (arg !== undefined && what === 'NAMESPACE') checkNamespaceName(arg)
  return arg ?? flag
}

/** Where a command reads objects from: manifests, or the kubeconfig's context. */
export interface NamespaceSource {
  manifests?: string[]
  kubeconfig?: string
  context?: string
}

/** The kubeconfig context's namespace (read from the files, no cluster contacted); without one, why not. */
async function contextNamespace(
  source: NamespaceSource,
): Promise<{namespace: string; context: string} | {namespace?: undefined; why: string}> {
  const {readKubeconfigContexts} = await import('../kube/light-config.js')
  // The process's KUBECONFIG and HOME, as kubectl reads them (the cli layer is where commands meet the process).
  const kubeconfig = readKubeconfigContexts(source.kubeconfig ? {kubeconfig: source.kubeconfig} : {}, process.env)
  if (!kubeconfig) return {why: 'no kubeconfig was read'}
  const context = source.context ?? kubeconfig.current
  if (context === undefined) return {why: 'the kubeconfig has no current context'}
  const known = kubeconfig.contexts.get(context)
  if (!known) return {why: `context ${context} is not in the kubeconfig`}
  return known.namespace === undefined
    ? {why: `context ${context} has no namespace`}
    : {namespace: known.namespace, context}
}

/** How to give a namespace when the context has none: kubectl's own way of setting it included. */
const GIVE_NAMESPACE = "or set the context's (kubectl config set-context --current --namespace NAMESPACE)"

/**
 * The namespace from the argument or -n; without either, the kubeconfig context's namespace, as kubectl, helm and
 * istioctl take it — said on `stderr`, since a migration must never pick its namespace silently. Undefined when
 * none is given and the context has none (or objects come from manifests, which have no context).
 */
export async function namespaceOrContext(
  arg: string | undefined,
  flag: string | undefined,
  source: NamespaceSource,
  stderr: NodeJS.WritableStream,
  what = 'NAMESPACE',
): Promise<string | undefined> {
  const given = namespaceOf(arg, flag, what)
  if (given !== undefined || (source.manifests?.length ?? 0) > 0) return given
  const taken = await contextNamespace(source)
  // The kubeconfig's namespace becomes a path (plans/<namespace>.yaml) and requests: checked as one given here.
  if (taken.namespace !== undefined) checkNamespaceName(taken.namespace, `the namespace of context ${taken.context}`)
  if (taken.namespace !== undefined) stderr.write(`namespace ${taken.namespace} (from context ${taken.context})\n`)
  return taken.namespace
}

/** namespaceOrContext, required: none anywhere is a usage error saying where a namespace can come from. */
export async function requireNamespaceOrContext(
  arg: string | undefined,
  flag: string | undefined,
  source: NamespaceSource,
  stderr: NodeJS.WritableStream,
): Promise<string> {
  const ns = await namespaceOrContext(arg, flag, source, stderr)
  if (ns !== undefined) return ns
  if (source.manifests?.length)
    throw new UsageError('missing the namespace', 'Pass it as the argument or with -n NAMESPACE.')
  throw new UsageError(
    `missing the namespace: ${(await noNamespaceInContext(source)).why}`,
    `Pass it as the argument or with -n NAMESPACE, ${GIVE_NAMESPACE}.`,
  )
}

/**
 * PLAN — a plan file, or a namespace meaning plans/<namespace>.yaml — from the argument or -n; without either, the
 * context's namespace, said on `stderr` (namespaceOrContext). Undefined when the context has none either: the
 * command then does what it does without PLAN, and says why in its errors (noNamespaceInContext).
 */
export function planOrContext(
  arg: string | undefined,
  flag: string | undefined,
  source: NamespaceSource,
  stderr: NodeJS.WritableStream,
): Promise<string | undefined> {
  return namespaceOrContext(arg, flag, {...source, manifests: []}, stderr, 'PLAN')
}

/**
 * For a command left without PLAN (planOrContext gave none): why the context gave no namespace, and what to pass,
 * for its error message and Next.
 */
export async function noNamespaceInContext(source: NamespaceSource): Promise<{why: string; suggestion: string}> {
  const taken = await contextNamespace(source)
  return {
    why: taken.namespace === undefined ? taken.why : `context ${taken.context} has a namespace`,
    suggestion: `pass PLAN (a plan file, or a namespace for plans/<namespace>.yaml) or -n NAMESPACE, ${GIVE_NAMESPACE}.`,
  }
}

/** planOrContext, required: none anywhere is a usage error (`missing`) saying why the context gave none. */
export async function requirePlanOrContext(
  arg: string | undefined,
  flag: string | undefined,
  source: NamespaceSource,
  missing: string,
  stderr: NodeJS.WritableStream,
): Promise<string> {
  const plan = await planOrContext(arg, flag, source, stderr)
  if (plan !== undefined) return plan
  const none = await noNamespaceInContext(source)
  throw new UsageError(`${missing}: no PLAN, no -n, and ${none.why}`, upperFirst(none.suggestion))
}

function upperFirst(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1)
}

// Kubernetes label selector syntax (k8s.io/apimachinery/pkg/labels): key, !key, key=v, key==v, key!=v,
// key in (v1,v2), key notin (v1,v2); keys are [prefix/]name, values names or empty.
const NAME = '[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?'
const KEY = `(?:[a-z0-9](?:[-a-z0-9.]{0,251}[a-z0-9])?/)?${NAME}`
const VALUE = `(?:${NAME})?`
const REQUIREMENT = new RegExp(
  `^(?:!\\s*${KEY}|${KEY}(?:\\s*(?:==|=|!=)\\s*${VALUE}|\\s+(?:in|notin)\\s*\\(\\s*${VALUE}(?:\\s*,\\s*${VALUE})*\\s*\\))?)$`,
)

/** The requirements of a selector, or a message saying which one is malformed. */
export function labelSelectorProblem(selector: string): string | undefined {
  // Commas inside "in (a,b)" do not separate requirements.
  const parts = selector.split(/,(?![^(]*\))/).map((p) => p.trim())
  const bad = parts.find((p) => !REQUIREMENT.test(p))
  return bad === undefined
    ? undefined
    : `"${bad}" is not a label selector requirement (key, !key, key=value, key!=value, key in (a,b), key notin (a,b))`
}

/** `-l SELECTOR`, checked while parsing: a malformed selector is a usage error (exit 2) before anything runs. */
export function labelSelectorFlag(description: string) {
  return Flags.string({
    char: 'l',
    description,
    parse: async (value) => {
      const problem = labelSelectorProblem(value)
      if (problem) throw new UsageError(problem)
      return value
    },
  })
}

export const selectorFlag = labelSelectorFlag(
  'Only namespaces matching this label selector (e.g. team=payments,env!=dev).',
)
