// Small helpers for the test API server's own tests: a raw HTTP client and client-node setup.
import {KubeConfig} from '@kubernetes/client-node'
import type {TestApiServer} from '../support/apiserver/index.js'

export interface RawResponse {
  status: number
  headers: Headers
  body: any
  text: string
}

/** A fetch-based client that speaks to the server as a given token. */
export function raw(server: TestApiServer, token = 'admin-token') {
  const call = async (
    method: string,
    path: string,
    body?: unknown,
    contentType = 'application/json',
  ): Promise<RawResponse> => {
    const headers: Record<string, string> = {}
    if (token) headers.Authorization = `Bearer ${token}`
    if (body !== undefined) headers['Content-Type'] = contentType
    const r = await fetch(server.url + path, {
      method,
      headers,
      ...(body !== undefined ? {body: typeof body === 'string' ? body : JSON.stringify(body)} : {}),
    })
    const text = await r.text()
    let parsed: unknown
    try {
      parsed = text ? JSON.parse(text) : undefined
    } catch {
      parsed = undefined
    }
    return {status: r.status, headers: r.headers, body: parsed, text}
  }
  return {
    get: (path: string) => call('GET', path),
    post: (path: string, body: unknown, ct?: string) => call('POST', path, body, ct),
    put: (path: string, body: unknown, ct?: string) => call('PUT', path, body, ct),
    patch: (path: string, body: unknown, ct: string) => call('PATCH', path, body, ct),
    delete: (path: string, body?: unknown) => call('DELETE', path, body),
    call,
  }
}

export function kubeConfig(server: TestApiServer, token?: string): KubeConfig {
  const kc = new KubeConfig()
  kc.loadFromString(server.kubeconfig(token ? {token} : {}))
  return kc
}

export const deployment = (name: string, namespace = 'default', extra: Record<string, unknown> = {}) => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: {name, namespace},
  spec: {
    selector: {matchLabels: {app: name}},
    template: {
      metadata: {labels: {app: name}},
      spec: {
        containers: [
          {name: 'app', image: 'nginx:1.27', ports: [{containerPort: 80}]},
          {name: 'sidecar', image: 'busybox:1.36'},
        ],
      },
    },
    ...extra,
  },
})

export const namespace = (name: string, labels: Record<string, string> = {}) => ({
  apiVersion: 'v1',
  kind: 'Namespace',
  metadata: {name, labels},
})

/** ApiException.body is a JSON string in client-node 1.x. */
export function statusOf(err: unknown): {code: number; body: any} {
  const e = err as {code?: number; body?: unknown}
  return {code: e.code ?? 0, body: typeof e.body === 'string' ? JSON.parse(e.body) : e.body}
}
