// The advice attached to API errors (src/kube/errors.ts): what to grant on a 403, and on a 404 whether
// an API (a CRD) is missing or only the object.
import {describe, expect, it} from 'vitest'

import {type Attempt, KubeApiError} from '../../src/kube/errors.js'

const attempt = (over: Partial<Attempt>): Attempt => ({
  method: 'GET',
  verb: 'get',
  group: '',
  resource: 'configmaps',
  what: 'do it',
  ...over,
})

describe('403 Forbidden', () => {
  it('names the verb, resource and namespace, and the kubectl auth can-i command that checks exactly that', () => {
    const error = new KubeApiError(
      403,
      {
        reason: 'Forbidden',
        message:
          'authorizationpolicies.security.istio.io is forbidden: User "bob" cannot list resource "authorizationpolicies" in API group "security.istio.io" in the namespace "shop"',
      },
      attempt({verb: 'list', group: 'security.istio.io', resource: 'authorizationpolicies', namespace: 'shop'}),
      'prod',
    )
    expect(error.suggestion).toContain(
      'Grant "list" on authorizationpolicies.security.istio.io in namespace shop to this identity (a Role and RoleBinding in shop)',
    )
    expect(error.suggestion).toContain(
      '`kubectl --context prod auth can-i list authorizationpolicies.security.istio.io -n shop`',
    )
  })

  it('for server-side apply, names the verb the server checked (patch), and cluster-wide resources without -n', () => {
    const apply = new KubeApiError(
      403,
      {
        reason: 'Forbidden',
        message:
          'gateways.gateway.networking.k8s.io "w" is forbidden: User "bob" cannot patch resource "gateways" in API group "gateway.networking.k8s.io" in the namespace "shop"',
      },
      attempt({
        method: 'PATCH',
        verb: 'apply',
        group: 'gateway.networking.k8s.io',
        resource: 'gateways',
        namespace: 'shop',
      }),
      'prod',
    )
    expect(apply.suggestion).toContain('Grant "patch" on gateways.gateway.networking.k8s.io in namespace shop')
    expect(apply.suggestion).toContain('auth can-i patch gateways.gateway.networking.k8s.io -n shop')
    // Without the server's wording, apply is still authorized as patch.
    const bare = new KubeApiError(
      403,
      undefined,
      attempt({method: 'PATCH', verb: 'apply', resource: 'namespaces'}),
      'prod',
    )
    expect(bare.suggestion).toContain(
      'Grant "patch" on namespaces (cluster-wide) to this identity (a ClusterRole and ClusterRoleBinding)',
    )
    expect(bare.suggestion).toContain('`kubectl --context prod auth can-i patch namespaces -A`')
  })
})

describe('404 NotFound', () => {
  const missingType = {
    kind: 'Status',
    reason: 'NotFound',
    message: 'the server could not find the requested resource',
    details: {},
  }

  it('a resource type the server does not serve (a missing CRD) names the CRD and says to install it', () => {
    const error = new KubeApiError(
      404,
      missingType,
      attempt({
        verb: 'list',
        group: 'security.istio.io',
        resource: 'authorizationpolicies',
        kind: 'AuthorizationPolicy',
        apiVersion: 'security.istio.io/v1',
        namespace: 'shop',
      }),
      'prod',
    )
    expect(error.suggestion).toBe(
      'The AuthorizationPolicy API (security.istio.io/v1) is missing, not just the object: CustomResourceDefinition authorizationpolicies.security.istio.io is not installed in this cluster. Install it (Istio installs them: `istioctl install`, or the istio-base Helm chart), then re-run; `kubectl get crd | grep security.istio.io` shows what is installed.',
    )
    const gateway = new KubeApiError(
      404,
      {reason: 'NotFound', message: 'the server does not serve HTTPRoute in API group "gateway.networking.k8s.io"'},
      attempt({
        verb: 'discover',
        group: 'gateway.networking.k8s.io',
        resource: '',
        kind: 'HTTPRoute',
        apiVersion: 'gateway.networking.k8s.io/v1',
      }),
      'prod',
    )
    expect(gateway.suggestion).toContain(
      'the CustomResourceDefinition for HTTPRoute in API group gateway.networking.k8s.io is not installed',
    )
    expect(gateway.suggestion).toContain('standard-install.yaml')
  })

  it('a built-in API the server does not serve is not a CRD to install', () => {
    const error = new KubeApiError(
      404,
      missingType,
      attempt({
        verb: 'list',
        group: 'policy',
        resource: 'podsecuritypolicies',
        kind: 'PodSecurityPolicy',
        apiVersion: 'policy/v1beta1',
      }),
      'prod',
    )
    expect(error.suggestion).toContain('The API server does not serve PodSecurityPolicy (policy/v1beta1)')
    expect(error.suggestion).not.toContain('CustomResourceDefinition')
  })

  it('a missing object of a served API says so, distinct from a missing API', () => {
    const error = new KubeApiError(
      404,
      {
        reason: 'NotFound',
        message: 'authorizationpolicies.security.istio.io "allow" not found',
        details: {name: 'allow', group: 'security.istio.io', kind: 'authorizationpolicies'},
      },
      attempt({
        method: 'PATCH',
        verb: 'patch',
        group: 'security.istio.io',
        resource: 'authorizationpolicies',
        kind: 'AuthorizationPolicy',
        apiVersion: 'security.istio.io/v1',
        namespace: 'shop',
      }),
      'prod',
    )
    expect(error.suggestion).toBe(
      'The object authorizationpolicies.security.istio.io/allow in namespace shop does not exist (its API is served): check the name and namespace (`kubectl get authorizationpolicies.security.istio.io allow -n shop`), or re-plan if it was deleted since the plan was made.',
    )
    expect(error.suggestion).not.toContain('install')
  })
})
