// Authentication by bearer token and authorization against a per-token permission table
// shaped like RBAC rules, with the real Forbidden wording
// (k8s.io/apiserver/pkg/endpoints/handlers/responsewriters.forbiddenMessage).

/** One RBAC-like rule. Empty `namespaces` (or absent) = cluster-wide (a ClusterRoleBinding). */
export interface PermissionRule {
  verbs: string[]
  apiGroups?: string[]
  /** Resource names as RBAC writes them: "pods", "pods/status", "deployments", "*". */
  resources?: string[]
  resourceNames?: string[]
  /** Limits the rule to these namespaces (like a RoleBinding); cluster-scoped requests never match. */
  namespaces?: string[]
  /** Non-resource URLs such as "/healthz", "/version*". */
  nonResourceURLs?: string[]
}

export interface TokenUser {
  user: string
  groups?: string[]
  permissions?: PermissionRule[] | 'all'
}

export interface Identity {
  user: string
  groups: string[]
  permissions: PermissionRule[] | 'all'
  anonymous: boolean
}

export interface RequestAttributes {
  user: string
  verb: string
  resourceRequest: boolean
  apiGroup: string
  resource: string
  subresource: string
  namespace: string
  name: string
  path: string
}

export const ADMIN_TOKEN = 'admin-token'

const ANONYMOUS: Identity = {
  user: 'system:anonymous',
  groups: ['system:unauthenticated'],
  permissions: [{verbs: ['get'], nonResourceURLs: ['/version', '/healthz', '/livez', '/readyz']}],
  anonymous: true,
}

/** Discovery is open to every authenticated user (system:discovery / system:basic-user). */
const DISCOVERY_PATHS = [
  '/api',
  '/api/*',
  '/apis',
  '/apis/*',
  '/version',
  '/healthz',
  '/livez',
  '/readyz',
  '/openapi/*',
]

export class Authenticator {
  private readonly tokens: Map<string, TokenUser>

  constructor(tokens: Record<string, TokenUser>) {
    this.tokens = new Map(Object.entries(tokens))
  }

  setToken(token: string, user: TokenUser): void {
    this.tokens.set(token, user)
  }

  /** undefined = a token was sent but is not valid (401). */
  authenticate(authorization: string | undefined): Identity | undefined {
    if (!authorization) return ANONYMOUS
    const m = /^Bearer\s+(.+)$/i.exec(authorization.trim())
    if (!m) return undefined
    const u = this.tokens.get(m[1]!.trim())
    if (!u) return undefined
    return {
      user: u.user,
      groups: [...(u.groups ?? []), 'system:authenticated'],
      permissions: u.permissions ?? [],
      anonymous: false,
    }
  }
}

function matchesList(list: string[] | undefined, value: string): boolean {
  if (!list || list.length === 0) return false
  return list.includes('*') || list.includes(value)
}

function resourceMatches(list: string[] | undefined, resource: string, subresource: string): boolean {
  if (!list || list.length === 0) return false
  const combined = subresource ? `${resource}/${subresource}` : resource
  for (const r of list) {
    if (r === '*' || r === combined) return true
    if (subresource && r === `${resource}/*`) return true
    if (subresource && r === `*/${subresource}`) return true
  }
  return false
}

function pathMatches(patterns: string[] | undefined, path: string): boolean {
  return (patterns ?? []).some((p) => p === '*' || p === path || (p.endsWith('*') && path.startsWith(p.slice(0, -1))))
}

export function authorize(identity: Identity, a: RequestAttributes): {allowed: boolean; reason: string} {
  if (!a.resourceRequest && !identity.anonymous && pathMatches(DISCOVERY_PATHS, a.path))
    return {allowed: true, reason: ''}
  if (identity.permissions === 'all')
    return {allowed: true, reason: `allowed: user ${JSON.stringify(identity.user)} may do everything`}
  for (const [i, rule] of identity.permissions.entries()) {
    if (!matchesList(rule.verbs, a.verb)) continue
    if (!a.resourceRequest) {
      if (pathMatches(rule.nonResourceURLs, a.path))
        return {
          allowed: true,
          reason: `allowed by rule ${i} of the permission table of User ${JSON.stringify(identity.user)}`,
        }
      continue
    }
    if (!matchesList(rule.apiGroups, a.apiGroup)) continue
    if (!resourceMatches(rule.resources, a.resource, a.subresource)) continue
    if (rule.resourceNames?.length && !rule.resourceNames.includes(a.name)) continue
    if (rule.namespaces?.length) {
      if (!a.namespace || !(rule.namespaces.includes('*') || rule.namespaces.includes(a.namespace))) continue
    }
    return {
      allowed: true,
      reason: `allowed by rule ${i} of the permission table of User ${JSON.stringify(identity.user)}`,
    }
  }
  return {allowed: false, reason: ''}
}

/** responsewriters.forbiddenMessage */
export function forbiddenMessage(a: RequestAttributes): string {
  if (!a.resourceRequest) return `User ${JSON.stringify(a.user)} cannot ${a.verb} path ${JSON.stringify(a.path)}`
  const resource = a.subresource ? `${a.resource}/${a.subresource}` : a.resource
  if (a.namespace)
    return `User ${JSON.stringify(a.user)} cannot ${a.verb} resource ${JSON.stringify(resource)} in API group ${JSON.stringify(a.apiGroup)} in the namespace ${JSON.stringify(a.namespace)}`
  return `User ${JSON.stringify(a.user)} cannot ${a.verb} resource ${JSON.stringify(resource)} in API group ${JSON.stringify(a.apiGroup)} at the cluster scope`
}
