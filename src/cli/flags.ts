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
  description: 'The namespace (the same as the NAMESPACE or PLAN argument).',
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
): Promise<string | undefined> {
  const given = namespaceOf(arg, flag)
  if (given !== undefined || (source.manifests?.length ?? 0) > 0) return given
  const {readKubeconfigContexts} = await import('../kube/light-config.js')
  const kubeconfig = readKubeconfigContexts(source.kubeconfig ? {kubeconfig: source.kubeconfig} : {})
  const context = source.context ?? kubeconfig?.current
  const namespace = context === undefined ? undefined : kubeconfig?.contexts.get(context)?.namespace
  if (namespace !== undefined) stderr.write(`namespace ${namespace} (from context ${context})\n`)
  return namespace
}

/** namespaceOrContext, required: none anywhere is a usage error saying where a namespace can come from. */
export async function requireNamespaceOrContext(
  arg: string | undefined,
  flag: string | undefined,
  source: NamespaceSource,
  stderr: NodeJS.WritableStream,
): Promise<string> {
  const ns = await namespaceOrContext(arg, flag, source, stderr)
  if (ns === undefined)
    throw new UsageError(
      'missing the namespace',
      source.manifests?.length
        ? 'Pass it as the argument or with -n NAMESPACE.'
        : "Pass it as the argument or with -n NAMESPACE, or set the context's (kubectl config set-context --current --namespace NAMESPACE).",
    )
  return ns
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
