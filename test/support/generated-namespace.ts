// The generated namespace of issue 11 and the benchmark: N services, each a Deployment, a Service, a
// VirtualService with a header match and retries, a DestinationRule with a subset and an
// AuthorizationPolicy (~5 objects per service). Used by `npm run bench` and by the plan-size tests.
import {stringify} from 'yaml'

export const GENERATED_NAMESPACE = 'big'

/** The objects of a namespace with `n` services (plus the Namespace itself). */
export function generatedNamespace(n: number, namespace = GENERATED_NAMESPACE): Record<string, unknown>[] {
  const docs: Record<string, unknown>[] = [
    {apiVersion: 'v1', kind: 'Namespace', metadata: {name: namespace, labels: {'istio-injection': 'enabled'}}},
  ]
  for (let i = 0; i < n; i++) {
    const app = `svc-${i}`
    const labels = {app, version: 'v1'}
    docs.push(
      {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: {name: app, namespace, labels: {app}},
        spec: {
          replicas: 1,
          selector: {matchLabels: labels},
          template: {
            metadata: {labels},
            spec: {
              serviceAccountName: app,
              containers: [{name: app, image: `example/${app}:1`, ports: [{containerPort: 8080}]}],
            },
          },
        },
      },
      {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: {name: app, namespace, labels: {app}},
        spec: {selector: {app}, ports: [{name: 'http', port: 8080, targetPort: 8080}]},
      },
      {
        apiVersion: 'networking.istio.io/v1',
        kind: 'VirtualService',
        metadata: {name: app, namespace},
        spec: {
          hosts: [app],
          http: [
            {
              match: [{headers: {'x-canary': {exact: 'true'}}}],
              route: [{destination: {host: app, subset: 'v1'}}],
              retries: {attempts: 3, perTryTimeout: '2s'},
            },
            {route: [{destination: {host: app, subset: 'v1'}}], retries: {attempts: 2, perTryTimeout: '1s'}},
          ],
        },
      },
      {
        apiVersion: 'networking.istio.io/v1',
        kind: 'DestinationRule',
        metadata: {name: app, namespace},
        spec: {host: app, subsets: [{name: 'v1', labels: {version: 'v1'}}]},
      },
      {
        apiVersion: 'security.istio.io/v1',
        kind: 'AuthorizationPolicy',
        metadata: {name: `${app}-allow`, namespace},
        spec: {
          selector: {matchLabels: {app}},
          action: 'ALLOW',
          rules: [
            {
              from: [{source: {principals: [`cluster.local/ns/${namespace}/sa/svc-${(i + 1) % n}`]}}],
              to: [{operation: {methods: ['GET']}}],
            },
          ],
        },
      },
    )
  }
  return docs
}

/** The same as one multi-document YAML file. */
export function generatedNamespaceYaml(n: number, namespace = GENERATED_NAMESPACE): string {
  return generatedNamespace(n, namespace)
    .map((d) => stringify(d))
    .join('---\n')
}
