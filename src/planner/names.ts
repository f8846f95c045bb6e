// Kubernetes names, the one place they are checked (issue 20 §1). Every name read from input — a
// namespace or object in manifests or a plan file, a namespace argument — is checked here before it
// becomes a path (plans/<namespace>.yaml) or a request URL. The rules are the API server's
// (k8s.io/apimachinery/pkg/util/validation): RFC 1123 label for namespaces, RFC 1035 label for
// Services, RFC 1123 subdomain for the built-in kinds the planner reads or writes, and for custom
// resources and kinds it does not know, what any name must be to be a URL path segment (apimachinery's path.IsValidPathSegmentName).
// Pure: no I/O.
import {groupOf} from './refs.js'

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/
const DNS1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/

export type NameRule = 'rfc1123-label' | 'rfc1035-label' | 'rfc1123-subdomain' | 'path-segment'

/** What each rule allows, for messages. */
const RULE_TEXT: Record<NameRule, string> = {
  'rfc1123-label':
    'an RFC 1123 label: at most 63 characters, lowercase letters, digits and "-", starting and ending with a letter or digit',
  'rfc1035-label':
    'an RFC 1035 label: at most 63 characters, lowercase letters, digits and "-", starting with a letter and ending with a letter or digit',
  'rfc1123-subdomain':
    'an RFC 1123 subdomain: at most 253 characters, lowercase letters, digits, "-" and ".", each part starting and ending with a letter or digit',
  'path-segment': 'a name that can be part of an API path: not "." or "..", without "/" or "%", at most 253 characters',
}

/** The rule of each kind the planner reads or writes (`group/Kind`, core group empty); other kinds: path-segment. */
const KIND_RULES: Record<string, NameRule> = {
  '/Namespace': 'rfc1123-label',
  '/Service': 'rfc1035-label',
  '/Pod': 'rfc1123-subdomain',
  '/ServiceAccount': 'rfc1123-subdomain',
  '/ConfigMap': 'rfc1123-subdomain',
  '/Secret': 'rfc1123-subdomain',
  'apps/Deployment': 'rfc1123-subdomain',
  'apps/StatefulSet': 'rfc1123-subdomain',
  'apps/DaemonSet': 'rfc1123-subdomain',
  'apps/ReplicaSet': 'rfc1123-subdomain',
  'batch/Job': 'rfc1123-subdomain',
  'batch/CronJob': 'rfc1123-subdomain',
  'networking.k8s.io/NetworkPolicy': 'rfc1123-subdomain',
  'coordination.k8s.io/Lease': 'rfc1123-subdomain',
  'gateway.networking.k8s.io/Gateway': 'rfc1123-subdomain',
  'gateway.networking.k8s.io/HTTPRoute': 'rfc1123-subdomain',
  'gateway.networking.k8s.io/GRPCRoute': 'rfc1123-subdomain',
  'gateway.networking.k8s.io/TCPRoute': 'rfc1123-subdomain',
  'gateway.networking.k8s.io/TLSRoute': 'rfc1123-subdomain',
}

export function nameRuleOf(apiVersion: string, kind: string): NameRule {
  // Custom resources (Istio's included) are held to what every name must be: a manifest corpus may carry names a
  // CRD's own validation decides on, and only a path-safe name matters to this tool.
  return KIND_RULES[`${groupOf(apiVersion)}/${kind}`] ?? 'path-segment'
}

function follows(name: string, rule: NameRule): boolean {
  switch (rule) {
    case 'rfc1123-label':
      return name.length <= 63 && DNS1123_LABEL.test(name)
    case 'rfc1035-label':
      return name.length <= 63 && DNS1035_LABEL.test(name)
    case 'rfc1123-subdomain':
      return name.length <= 253 && DNS1123_SUBDOMAIN.test(name)
    case 'path-segment':
      return name.length > 0 && name.length <= 253 && name !== '.' && name !== '..' && !/[/%]/.test(name)
  }
}

/** Undefined when `name` is valid under `rule`, else why not (for messages: `"x" is not …`). */
export function nameProblem(name: unknown, rule: NameRule): string | undefined {
  if (typeof name !== 'string') return `${JSON.stringify(name)} is not a name (a string)`
  return follows(name, rule) ? undefined : `${JSON.stringify(name)} is not ${RULE_TEXT[rule]}`
}

/** Undefined when `name` is a valid namespace name (RFC 1123 label), else why not. */
export function namespaceNameProblem(name: unknown): string | undefined {
  return nameProblem(name, 'rfc1123-label')
}

export function isNamespaceName(name: unknown): name is string {
  return namespaceNameProblem(name) === undefined
}

/** Undefined when the object's name suits its kind and its namespace (if any) is a valid namespace name. */
export function objectNameProblem(ref: {
  apiVersion: string
  kind: string
  name?: unknown
  namespace?: unknown
}): string | undefined {
  const name = nameProblem(ref.name, nameRuleOf(ref.apiVersion, ref.kind))
  if (name) return `${ref.kind} name ${name}`
  if (ref.namespace === undefined) return undefined
  const ns = namespaceNameProblem(ref.namespace)
  return ns ? `${ref.kind} namespace ${ns}` : undefined
}
