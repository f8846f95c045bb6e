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

/**
 * A namespace shaped unlike `generatedNamespace` (issue 23 §6), for the bench: every route matches its own header
 * values (exact, prefix, regex), routes carry different retries, timeouts and weights, Services have one to three
 * ports, and the policies mix L4 (principals, namespaces, ports), L7 (paths, methods, headers), DENY and AUDIT
 * actions, PeerAuthentications and RequestAuthentications.
 */
export function variedNamespace(n: number, namespace = GENERATED_NAMESPACE): Record<string, unknown>[] {
  const docs: Record<string, unknown>[] = [
    {apiVersion: 'v1', kind: 'Namespace', metadata: {name: namespace, labels: {'istio-injection': 'enabled'}}},
  ]
  for (let i = 0; i < n; i++) docs.push(...variedService(i, n, namespace))
  return docs
}

function variedService(i: number, n: number, namespace: string): Record<string, unknown>[] {
  const app = `app-${i.toString(36)}-${['api', 'web', 'db', 'queue', 'auth'][i % 5]}`
  const peer = `app-${((i + 7) % n).toString(36)}-${['api', 'web', 'db', 'queue', 'auth'][(i + 7) % 5]}`
  const versions = Array.from({length: 1 + (i % 3)}, (_, v) => `v${v + 1}`)
  const ports = Array.from({length: 1 + (i % 3)}, (_, p) => ({
    name: ['http', 'grpc-api', 'tcp-raw'][p]!,
    port: 8000 + p * 10 + (i % 7),
    targetPort: 9000 + p,
  }))
  const header = (r: number) =>
    [{exact: `tenant-${i}-${r}`}, {prefix: `/t${i}/${r}`}, {regex: `^user-${i}-[0-9]{${1 + r}}$`}][r % 3]
  const l7 = i % 2 === 0
  const docs: Record<string, unknown>[] = [
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: {name: app, namespace, labels: {app, tier: ['front', 'back'][i % 2]!}},
      spec: {
        replicas: 1 + (i % 4),
        selector: {matchLabels: {app}},
        template: {
          metadata: {labels: {app, version: versions[0]!}, annotations: {'example.io/build': `b${i * 31}`}},
          spec: {
            serviceAccountName: `sa-${i}`,
            containers: [
              {
                name: app,
                image: `registry.example/${app}:${1 + (i % 9)}.${i % 13}`,
                ports: ports.map((p) => ({containerPort: p.targetPort})),
                env: [{name: 'INSTANCE', value: `${app}-${i}`}],
              },
            ],
          },
        },
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: {name: app, namespace, labels: {app}},
      spec: {selector: {app}, ports},
    },
    {
      apiVersion: 'networking.istio.io/v1',
      kind: 'VirtualService',
      metadata: {name: app, namespace},
      spec: {
        hosts: [app],
        http: [
          ...versions.map((v, r) => ({
            name: `route-${v}`,
            match: [{headers: {[`x-${['tenant', 'user', 'region'][r % 3]}`]: header(r + i)}}],
            route: [{destination: {host: app, subset: v, port: {number: ports[0]!.port}}}],
            retries: {attempts: 1 + ((i + r) % 5), perTryTimeout: `${1 + r}s`, retryOn: '5xx,reset'},
            timeout: `${5 + ((i * 3 + r) % 20)}s`,
          })),
          {
            route: versions.map((v, w) => ({
              destination: {host: app, subset: v},
              weight: w === 0 ? 100 - 10 * (versions.length - 1) : 10,
            })),
          },
        ],
      },
    },
    {
      apiVersion: 'networking.istio.io/v1',
      kind: 'DestinationRule',
      metadata: {name: app, namespace},
      spec: {
        host: app,
        trafficPolicy: {connectionPool: {http: {http1MaxPendingRequests: 10 + i}}},
        subsets: versions.map((v) => ({name: v, labels: {version: v}})),
      },
    },
    {
      apiVersion: 'security.istio.io/v1',
      kind: 'AuthorizationPolicy',
      metadata: {name: `${app}-${l7 ? 'l7' : 'l4'}`, namespace},
      spec: {
        selector: {matchLabels: {app}},
        action: ['ALLOW', 'ALLOW', 'DENY', 'AUDIT'][i % 4],
        rules: [
          l7
            ? {
                from: [{source: {principals: [`cluster.local/ns/${namespace}/sa/sa-${(i + 7) % n}`]}}],
                to: [{operation: {methods: [['GET', 'POST', 'PUT'][i % 3]!], paths: [`/api/${peer}/*`]}}],
                when: [{key: 'request.headers[x-tenant]', values: [`tenant-${i}`]}],
              }
            : {
                from: [{source: {namespaces: [namespace, `other-${i % 11}`]}}],
                to: [{operation: {ports: [String(ports[0]!.targetPort)]}}],
              },
        ],
      },
    },
  ]
  if (i % 10 === 0)
    docs.push({
      apiVersion: 'security.istio.io/v1',
      kind: 'PeerAuthentication',
      metadata: {name: app, namespace},
      spec: {selector: {matchLabels: {app}}, mtls: {mode: 'STRICT'}},
    })
  if (i % 15 === 0)
    docs.push({
      apiVersion: 'security.istio.io/v1',
      kind: 'RequestAuthentication',
      metadata: {name: app, namespace},
      spec: {
        selector: {matchLabels: {app}},
        jwtRules: [{issuer: `https://issuer-${i}.example`, jwksUri: `https://issuer-${i}.example/jwks`}],
      },
    })
  return docs
}

/** How the namespaces of a generated fleet share their routing (issue 22 §5's bench and its unit test). */
export type FleetShape = 'exported' | 'local' | 'mixed'

/**
 * `n` generated namespaces (fleet-0 …) of `services` services each. `exported`: as generated (VirtualServices and
 * DestinationRules without exportTo, so visible in every namespace); `local`: every one with `exportTo: ['.']`;
 * `mixed`: namespaces in turn as generated, local, exported to the next namespace only, local with a route to the
 * previous namespace's Service and a policy naming a principal of another namespace, and local with a wildcard host
 * over another namespace's Services and a waypoint of another namespace (istio.io/use-waypoint-namespace).
 */
export function generatedFleet(n: number, shape: FleetShape, services = 3): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = []
  for (let i = 0; i < n; i++) {
    const kind = shape === 'mixed' ? (['exported', 'local', 'next', 'cross', 'wild'] as const)[i % 5] : shape
    for (const o of generatedNamespace(services, `fleet-${i}`) as GeneratedObject[]) {
      shapeObject(o, kind, i, n)
      out.push(o)
    }
  }
  return out
}

type GeneratedObject = {kind: string; metadata: {name: string; labels?: Record<string, string>}; spec: any} // eslint-disable-line @typescript-eslint/no-explicit-any

function shapeObject(o: GeneratedObject, kind: string, i: number, n: number): void {
  const routing = o.kind === 'VirtualService' || o.kind === 'DestinationRule'
  const other = (k: number) => `fleet-${(i + k) % n}`
  if (routing && kind !== 'exported') o.spec.exportTo = kind === 'next' ? ['.', other(1)] : ['.']
  if (kind === 'cross' && o.kind === 'VirtualService')
    o.spec.http[1].route[0].destination = {host: `svc-0.${other(n - 1)}.svc.cluster.local`}
  if (kind === 'cross' && o.kind === 'AuthorizationPolicy')
    o.spec.rules[0].from[0].source.principals.push(`cluster.local/ns/${other(4)}/sa/svc-1`)
  if (kind === 'wild' && o.kind === 'VirtualService' && o.metadata.name === 'svc-0')
    o.spec.hosts = [`*.${other(2)}.svc.cluster.local`]
  if (kind === 'wild' && o.kind === 'Namespace')
    o.metadata.labels = {
      ...o.metadata.labels,
      'istio.io/use-waypoint': 'waypoint',
      'istio.io/use-waypoint-namespace': other(3),
    }
}
