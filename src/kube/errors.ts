// API failures turned into messages a person can act on (SPEC §7 "Errors"): what was attempted,
// the HTTP status and reason, and the next thing to try. Never a stack trace.
import {UserError} from '../errors.js'

/** A v1.Status body as kube-apiserver sends it. */
export interface StatusBody {
  kind?: string
  status?: string
  message?: string
  reason?: string
  code?: number
  details?: {name?: string; group?: string; kind?: string; causes?: {reason?: string; message?: string; field?: string}[]}
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
}

function credentialsRejected(context: string): string {
  return `Log in again so the kubeconfig holds valid credentials (re-run your cloud CLI's get-credentials, e.g. \`aws eks update-kubeconfig\`, \`gcloud container clusters get-credentials\`, \`az aks get-credentials\`, or renew the token / token file), and check that context "${context}" uses the user you expect: \`kubectl config view --minify --context ${context}\`.`
}

function nextStep(status: number, reason: string | undefined, attempt: Attempt, context: string): string {
  switch (status) {
    case 401:
      return `Your credentials for context "${context}" were rejected: log in again (refresh the token / re-run your cloud CLI's get-credentials).`
    case 403:
      return `Grant "${attempt.verb}" on ${attempt.group ? `${attempt.resource}.${attempt.group}` : attempt.resource}${attempt.namespace ? ` in namespace ${attempt.namespace}` : ' (cluster-wide)'} to this identity (a Role/ClusterRole and binding), or run with a context that has it. \`mesh-migrate preflight NAMESPACE\` lists every permission a plan needs.`
    case 404:
      return reason === 'NotFound' && attempt.group && attempt.group !== 'apps' ? `If the ${attempt.group} API is missing, install its CRDs (Istio: istioctl install / the istio-base chart; Gateway API: the standard-install.yaml of gateway-api).` : 'Check the name and namespace.'
    case 409:
      return reason === 'AlreadyExists' ? 'Something else created it first; re-run the command (it is idempotent) or inspect the object.' : 'Someone changed the object at the same time; re-run the command (it re-reads the object first).'
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

  constructor(status: number, body: StatusBody | undefined, attempt: Attempt, context: string, extra: {credentialsReloaded?: boolean; user?: string} = {}) {
    const reason = body?.reason
    const serverMessage = body?.message ?? `HTTP ${status}`
    const rejected = status === 401 && extra.credentialsReloaded
    super(
      rejected
        ? `${attempt.what} failed: 401 ${reason ?? 'Unauthorized'}: the API server rejected the credentials of context "${context}"${extra.user ? ` (user "${extra.user}")` : ''}, also after loading them again from the kubeconfig`
        : `${attempt.what} failed: ${status}${reason ? ` ${reason}` : ''}: ${serverMessage}`,
      {
        exitCode: 1,
        suggestion: rejected ? credentialsRejected(context) : nextStep(status, reason, attempt, context),
      },
    )
    this.status = status
    if (reason !== undefined) this.reason = reason
    if (body !== undefined) this.body = body
    this.attempt = attempt
  }
}

/** The API server could not be reached, or the connection dropped before an answer. */
export class KubeConnectionError extends UserError {
  readonly attempt: Attempt

  constructor(attempt: Attempt, server: string, cause: unknown) {
    const detail = cause instanceof Error ? cause.message : String(cause)
    const timedOut = cause instanceof Error && (cause.name === 'AbortError' || cause.name === 'TimeoutError')
    super(`${attempt.what} failed: ${timedOut ? 'the request timed out' : `no answer from ${server}`} (${detail})`, {
      exitCode: 1,
      suggestion: timedOut
        ? 'Raise --request-timeout, or check the API server\'s health.'
        : 'Check that the cluster is reachable (VPN, kubeconfig server URL) and retry; commands that write are safe to re-run.',
      cause,
    })
    this.attempt = attempt
  }
}

/** A missing or unusable kubeconfig: no fallback to localhost:8080 (ECOSYSTEM §5.6). */
export class KubeConfigError extends UserError {
  constructor(message: string, suggestion: string) {
    super(message, {exitCode: 1, suggestion})
  }
}

/**
 * Whether a failed write may have been applied anyway: the connection dropped after the request was
 * sent, or the server answered 5xx (a timeout, a proxy) after processing it. The client does not resend
 * such a create (it is not idempotent); a caller that must know reads the object back.
 */
export function writeMayHaveApplied(error: unknown): boolean {
  return error instanceof KubeConnectionError || (error instanceof KubeApiError && error.status >= 500)
}
