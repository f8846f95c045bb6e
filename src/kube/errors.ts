// API failures turned into messages a person can act on (SPEC §7 "Errors"): what was attempted,
// the HTTP status and reason, and the next thing to try. Never a stack trace.
import {ExitCode} from '../exit-codes.js'
import {UserError} from '../errors.js'

/** A v1.Status body as kube-apiserver sends it. */
export interface StatusBody {
  kind?: string
  status?: string
  message?: string
  reason?: string
  code?: number
  details?: {
    name?: string
    group?: string
    kind?: string
    causes?: {reason?: string; message?: string; field?: string}[]
  }
}

export interface Attempt {
  /** HTTP method */
  method: string
  /** e.g. "patch namespaces/bookinfo" */
  what: string
  verb: string
  group: string
  resource: string
  namespace?: string
  /** The kind and apiVersion asked for, when known (for "this API is not installed" advice). */
  kind?: string
  apiVersion?: string
}

function credentialsRejected(context: string): string {
  return `Log in again so the kubeconfig holds valid credentials (re-run your cloud CLI's get-credentials, e.g. \`aws eks update-kubeconfig\`, \`gcloud container clusters get-credentials\`, \`az aks get-credentials\`, or renew the token / token file), and check that context "${context}" uses the user you expect: \`kubectl config view --minify --context ${context}\`.`
}

/** The RBAC verb and resource a 403 was about: the server's own words when it gives them. */
export function forbiddenWhat(body: StatusBody | undefined, attempt: Attempt): {verb: string; resource: string} {
  const m = /cannot (\S+) resource "([^"]+)"/.exec(body?.message ?? '')
  // Server-side apply is authorized as patch (and create for an object that does not exist yet).
  const verb = m?.[1] ?? ({apply: 'patch', discover: 'get'} as Record<string, string>)[attempt.verb] ?? attempt.verb
  const plural = m?.[2] ?? attempt.resource
  return {verb, resource: attempt.group ? `${plural}.${attempt.group}` : plural}
}

/** Groups served by Kubernetes itself; anything else (Istio, Gateway API, …) comes from CRDs. */
function builtinGroup(group: string): boolean {
  return (
    !group.includes('.') ||
    (group.endsWith('.k8s.io') && !group.startsWith('gateway.networking.') && !group.endsWith('.x-k8s.io'))
  )
}

function installHint(group: string): string {
  if (group === 'istio.io' || group.endsWith('.istio.io'))
    return 'Istio installs them: `istioctl install`, or the istio-base Helm chart'
  if (group.endsWith('gateway.networking.k8s.io'))
    return 'Gateway API: `kubectl apply -f` the standard-install.yaml of a gateway-api release'
  return `the CRDs come with the project that owns ${group}`
}

function notFound(body: StatusBody | undefined, attempt: Attempt): string {
  const kind = attempt.kind ?? attempt.resource
  const name = body?.details?.name
  // A missing object comes with its name in the Status details; a missing resource type does not.
  if (attempt.verb === 'discover' || !name) {
    const api = attempt.apiVersion ?? attempt.group
    if (builtinGroup(attempt.group)) {
      return `The API server does not serve ${kind} (${api || 'core'}): this Kubernetes version may not have that API (\`kubectl api-resources\` lists what it serves).`
    }
    const crd =
      attempt.verb === 'discover' || !attempt.resource
        ? `the CustomResourceDefinition for ${kind} in API group ${attempt.group}`
        : `CustomResourceDefinition ${attempt.resource}.${attempt.group}`
    return `The ${kind} API (${api}) is missing, not just the object: ${crd} is not installed in this cluster. Install it (${installHint(attempt.group)}), then re-run; \`kubectl get crd | grep ${attempt.group}\` shows what is installed.`
  }
  const resource = attempt.group ? `${attempt.resource}.${attempt.group}` : attempt.resource
  const ns = attempt.namespace
  return `The object ${resource}/${name}${ns ? ` in namespace ${ns}` : ''} does not exist (its API is served): check the name and namespace (\`kubectl get ${resource} ${name}${ns ? ` -n ${ns}` : ''}\`), or re-plan if it was deleted since the plan was made.`
}

function nextStep(status: number, body: StatusBody | undefined, attempt: Attempt, context: string): string {
  const reason = body?.reason
  switch (status) {
    case 401:
      return `Your credentials for context "${context}" were rejected: log in again (refresh the token / re-run your cloud CLI's get-credentials).`
    case 403: {
      const {verb, resource} = forbiddenWhat(body, attempt)
      const ns = attempt.namespace
      return `Grant "${verb}" on ${resource}${ns ? ` in namespace ${ns}` : ' (cluster-wide)'} to this identity (${ns ? `a Role and RoleBinding in ${ns}` : 'a ClusterRole and ClusterRoleBinding'}), or run with a context that has it; check with \`kubectl --context ${context} auth can-i ${verb} ${resource} ${ns ? `-n ${ns}` : '-A'}\`. \`mesh-migrate preflight NAMESPACE\` lists every permission a plan needs.`
    }
    case 404:
      return notFound(body, attempt)
    case 409:
      return reason === 'AlreadyExists'
        ? 'Something else created it first; re-run the command (it is idempotent) or inspect the object.'
        : 'Someone changed the object at the same time; re-run the command (it re-reads the object first).'
    case 422:
      return 'The server rejected the object (schema/CEL validation or an admission webhook); the message says which field.'
    case 429:
    case 500:
    case 502:
    case 503:
    case 504:
      return 'The API server is overloaded or unavailable; retry in a moment.'
    default:
      return 'Check the API server and retry.'
  }
}

export class KubeApiError extends UserError {
  readonly status: number
  readonly reason?: string
  readonly body?: StatusBody
  readonly attempt: Attempt
  /** The server's Retry-After (seconds) on a 429 or 503: when to come back. */
  retryAfterSeconds?: number

  constructor(
    status: number,
    body: StatusBody | undefined,
    attempt: Attempt,
    context: string,
    extra: {credentialsReloaded?: boolean; user?: string} = {},
  ) {
    const reason = body?.reason
    const serverMessage = body?.message ?? `HTTP ${status}`
    const rejected = status === 401 && extra.credentialsReloaded
    super(
      rejected
        ? `${attempt.what} failed: 401 ${reason ?? 'Unauthorized'}: the API server rejected the credentials of context "${context}"${extra.user ? ` (user "${extra.user}")` : ''}, also after loading them again from the kubeconfig`
        : `${attempt.what} failed: ${status}${reason ? ` ${reason}` : ''}: ${serverMessage}`,
      {
        exitCode: ExitCode.Failure,
        suggestion: rejected ? credentialsRejected(context) : nextStep(status, body, attempt, context),
      },
    )
    this.status = status
    if (reason !== undefined) this.reason = reason
    if (body !== undefined) this.body = body
    this.attempt = attempt
  }
}

/** A kind whose API the server does not serve (no CRD, or an unknown version): a 404 before any request is sent. */
export function apiNotServed(ref: {apiVersion: string; kind: string}, group: string, context: string): KubeApiError {
  const message = `the server does not serve ${ref.kind} in API group "${group || 'core'}" (${ref.apiVersion})`
  const attempt: Attempt = {
    method: 'GET',
    verb: 'discover',
    group,
    resource: '',
    kind: ref.kind,
    apiVersion: ref.apiVersion,
    what: `find the API for ${ref.kind} (${ref.apiVersion})`,
  }
  return new KubeApiError(404, {reason: 'NotFound', message}, attempt, context)
}

/** The API server could not be reached, or the connection dropped before an answer. */
export class KubeConnectionError extends UserError {
  readonly attempt: Attempt

  constructor(attempt: Attempt, server: string, cause: unknown) {
    const detail = cause instanceof Error ? cause.message : String(cause)
    const timedOut = cause instanceof Error && (cause.name === 'AbortError' || cause.name === 'TimeoutError')
    // The server accepted the connection (or did not) but never completed it: kubectl's "TLS handshake timeout".
    const notConnected = cause instanceof Error && cause.name === 'ConnectTimeoutError'
    // Through a kubeconfig's proxy-url, the proxy that never opened the tunnel (ConnectTimeoutError.proxy).
    const proxy = notConnected ? (cause as {proxy?: string}).proxy : undefined
    super(
      `${attempt.what} failed: ${timedOut ? 'the request timed out' : proxy ? `the proxy ${proxy} did not answer` : notConnected ? `${server} did not answer` : `no answer from ${server}`} (${detail})`,
      {
        exitCode: ExitCode.Failure,
        suggestion: proxy
          ? `Check the kubeconfig's proxy-url (something listens at ${proxy} but does not answer as an HTTP proxy) and that the proxy is running; then retry.`
          : notConnected
            ? "Check the kubeconfig's server URL and port (something listens there but is not answering as an API server), the VPN or proxy in between, and the API server's health; then retry."
            : timedOut
              ? "Raise --request-timeout, or check the API server's health."
              : 'Check that the cluster is reachable (VPN, kubeconfig server URL) and retry; commands that write are safe to re-run.',
        cause,
      },
    )
    this.attempt = attempt
  }
}

/** A missing or unusable kubeconfig: no fallback to localhost:8080 (ECOSYSTEM §5.6). */
export class KubeConfigError extends UserError {
  constructor(message: string, suggestion: string) {
    super(message, {exitCode: ExitCode.Failure, suggestion})
  }
}

/** "forbidden: cannot list services in namespace shop": what a 403 refused, in RBAC terms. */
export function forbiddenSummary(error: KubeApiError): string {
  const {verb, resource} = forbiddenWhat(error.body, error.attempt)
  const ns = error.attempt.namespace
  return `forbidden: cannot ${verb} ${resource}${ns ? ` in namespace ${ns}` : ' (cluster-wide)'}`
}

/**
 * Connection failures after which the request never reached the server (refused, no route, a DNS answer that
 * will come): resending is safe whatever the method.
 */
const NOT_SENT_CODES = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN'])
/**
 * Connections that dropped, maybe after the server got the request ("socket hang up" is ECONNRESET): resent only
 * when resending does no harm. Other connection failures (TLS verification, an unknown host name, a server that
 * let the connection time out) are not passing: retrying them only delays the error.
 */
const DROPPED_CODES = new Set([
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'ECONNABORTED',
  'ERR_STREAM_PREMATURE_CLOSE',
  'UND_ERR_SOCKET',
])
/** HTTP statuses of a passing fault: 429 (API priority and fairness: not processed) and the gateway/server 5xx. */
const PASSING_STATUS = new Set([429, 500, 502, 503, 504])

/** The errno-style code of an error or of the errors it wraps (node-fetch's FetchError, an AbortError's cause). */
function errorCode(error: unknown): string | undefined {
  for (let e = error, depth = 0; e instanceof Error && depth < 4; e = e.cause, depth++) {
    const code = (e as NodeJS.ErrnoException).code
    if (typeof code === 'string') return code
    if (/socket hang up/i.test(e.message)) return 'ECONNRESET'
  }
  return undefined
}

/**
 * Whether a failed request is a passing fault worth sending again (a restarting or overloaded API server), and
 * when: `retryAfterMs` is the server's Retry-After. `resendable`: resending cannot do harm (reads, apply, merge
 * patches of absolute values, deletes, reviews); a create that may have been applied is left to its caller, who
 * reads it back (writeMayHaveApplied). 401, 403, 404, 409, 422 and the like are answers, never retried here.
 */
export function passingFault(error: unknown, resendable: boolean): {retryAfterMs?: number} | undefined {
  if (error instanceof KubeApiError) {
    if (!PASSING_STATUS.has(error.status)) return undefined
    // 429 means the request was not processed: resending is always safe. A 5xx may come after a write was applied.
    if (error.status !== 429 && !resendable) return undefined
    return error.retryAfterSeconds ? {retryAfterMs: error.retryAfterSeconds * 1000} : {}
  }
  if (!(error instanceof KubeConnectionError)) return undefined
  const cause = error.cause
  if (cause instanceof Error && cause.name === 'ConnectTimeoutError') return undefined
  const code = errorCode(cause)
  if (code !== undefined && NOT_SENT_CODES.has(code)) return {}
  if (!resendable) return undefined
  // --request-timeout passed without an answer: a slow server, asked again when asking again is harmless.
  const timedOut = cause instanceof Error && (cause.name === 'AbortError' || cause.name === 'TimeoutError')
  return timedOut || (code !== undefined && DROPPED_CODES.has(code)) ? {} : undefined
}

/**
 * Whether a failed write may have been applied anyway: the connection dropped after the request was
 * sent, or the server answered 5xx (a timeout, a proxy) after processing it. The client does not resend
 * such a create (it is not idempotent); a caller that must know reads the object back.
 */
export function writeMayHaveApplied(error: unknown): boolean {
  return error instanceof KubeConnectionError || (error instanceof KubeApiError && error.status >= 500)
}
