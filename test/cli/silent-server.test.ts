// Issue 24 §2 for the kubeconfigs that go through client-node's credentials and agent (src/kube/transport.ts's
// ClientNodeTransport): an exec credential plugin, and a proxy-url. A loopback listener that accepts connections
// and never answers must not hang the command: a "Waiting for" notice within 15 s, Error/Next within a minute.
// (The plain token kubeconfig over node:https is tested in kubectl-feel.test.ts.)
import {spawn} from 'node:child_process'
import {chmod, mkdtemp, writeFile} from 'node:fs/promises'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'

import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {BIN, hasStackTrace} from '../support/cli.js'

const WIDTHS = ['80', '200'] as const

/** A loopback listener that accepts connections and never answers: no TLS handshake, no HTTP, no CONNECT reply. */
async function blackHole(): Promise<{server: net.Server; port: number; accepted: net.Socket[]}> {
  const accepted: net.Socket[] = []
  const server = net.createServer((socket) => accepted.push(socket))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {server, port: (server.address() as net.AddressInfo).port, accepted}
}

let silentServer: Awaited<ReturnType<typeof blackHole>>
let silentProxy: Awaited<ReturnType<typeof blackHole>>
let execConfig: string
let proxyConfig: string

function kubeconfig(cluster: string, user: string): string {
  return [
    'apiVersion: v1',
    'kind: Config',
    `clusters: [{name: silent, cluster: ${cluster}}]`,
    `users: [{name: admin, user: ${user}}]`,
    'contexts: [{name: admin, context: {cluster: silent, user: admin}}]',
    'current-context: admin',
    '',
  ].join('\n')
}

beforeAll(async () => {
  silentServer = await blackHole()
  silentProxy = await blackHole()
  const dir = await mkdtemp(path.join(os.tmpdir(), 'mesh-migrate-silent-'))
  const plugin = path.join(dir, 'credential-plugin.sh')
  await writeFile(
    plugin,
    `#!/bin/sh\nprintf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"t0ken"}}'\n`,
  )
  await chmod(plugin, 0o755)
  execConfig = path.join(dir, 'exec-kubeconfig')
  await writeFile(
    execConfig,
    kubeconfig(
      `{server: "https://127.0.0.1:${silentServer.port}", insecure-skip-tls-verify: true}`,
      `{exec: {apiVersion: client.authentication.k8s.io/v1, command: ${JSON.stringify(plugin)}, interactiveMode: Never}}`,
    ),
  )
  proxyConfig = path.join(dir, 'proxy-kubeconfig')
  // The server itself is a loopback port nothing listens on: a request that bypassed the proxy would be
  // refused at once, and the test would see that error instead of the proxy's timeout.
  await writeFile(
    proxyConfig,
    kubeconfig(
      `{server: "https://127.0.0.1:9", insecure-skip-tls-verify: true, proxy-url: "http://127.0.0.1:${silentProxy.port}"}`,
      '{token: t0ken}',
    ),
  )
})

afterAll(async () => {
  for (const hole of [silentServer, silentProxy]) {
    for (const socket of hole.accepted) socket.destroy()
    await new Promise((resolve) => hole.server.close(resolve))
  }
})

/** Run the CLI, noting when (ms after start) the first stderr text containing `marker` came. */
function runTimed(args: string[], env: NodeJS.ProcessEnv, marker: string) {
  return new Promise<{code: number | null; stdout: string; stderr: string; markerAt?: number; endedAt: number}>(
    (resolve, reject) => {
      const started = Date.now()
      const child = spawn(process.execPath, [BIN, ...args], {env: {...process.env, NO_COLOR: '1', ...env}})
      let stdout = ''
      let stderr = ''
      let markerAt: number | undefined
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()))
      child.stderr.on('data', (d: Buffer) => {
        stderr += d.toString()
        if (markerAt === undefined && stderr.includes(marker)) markerAt = Date.now() - started
      })
      // A hang fails the assertions below (ended after a minute) instead of the test's own timeout.
      const guard = setTimeout(() => child.kill('SIGKILL'), 75_000)
      child.on('error', reject)
      child.on('close', (code) => {
        clearTimeout(guard)
        resolve({code, stdout, stderr, ...(markerAt === undefined ? {} : {markerAt}), endedAt: Date.now() - started})
      })
    },
  )
}

describe.each(WIDTHS)('a silent server behind client-node credentials, at %s columns', (columns) => {
  it('exec credential plugin: says what it waits for within 15 s, fails with Error/Next within a minute', async () => {
    const r = await runTimed(['inventory', 'bookinfo'], {KUBECONFIG: execConfig, COLUMNS: columns}, 'Waiting for')
    expect(r.code, r.stderr).toBe(1)
    expect(r.markerAt, r.stderr).toBeLessThan(15_000)
    expect(r.endedAt).toBeLessThan(60_000)
    const server = `https://127.0.0.1:${silentServer.port}`
    expect(r.stderr).toContain(
      `Waiting for the API server ${server} (context admin): no answer for 5s to GET /api (read API discovery (/api))`,
    )
    // The plugin ran and its credentials were used: the connection was made, the TLS handshake never finished.
    expect(silentServer.accepted.length).toBeGreaterThan(0)
    expect(r.stderr).toContain(
      `Error: read API discovery (/api) failed: ${server} did not answer (TLS handshake with 127.0.0.1:${silentServer.port} timed out after 10s)`,
    )
    expect(r.stderr).toMatch(/^Next: Check the kubeconfig's server URL and port/m)
    expect(hasStackTrace(r.stderr)).toBe(false)
    expect(r.stdout).toBe('')
  }, 90_000)

  it('proxy-url: says what it waits for within 15 s, fails with Error/Next naming the proxy within a minute', async () => {
    const r = await runTimed(['inventory', 'bookinfo'], {KUBECONFIG: proxyConfig, COLUMNS: columns}, 'Waiting for')
    expect(r.code, r.stderr).toBe(1)
    expect(r.markerAt, r.stderr).toBeLessThan(15_000)
    expect(r.endedAt).toBeLessThan(60_000)
    expect(r.stderr).toContain(
      'Waiting for the API server https://127.0.0.1:9 (context admin): no answer for 5s to GET /api (read API discovery (/api))',
    )
    expect(silentProxy.accepted.length).toBeGreaterThan(0)
    const proxy = `127.0.0.1:${silentProxy.port}`
    expect(r.stderr).toContain(
      `Error: read API discovery (/api) failed: the proxy ${proxy} did not answer (CONNECT to 127.0.0.1:9 through the proxy ${proxy} timed out after 10s)`,
    )
    expect(r.stderr).toMatch(/^Next: Check the kubeconfig's proxy-url/m)
    expect(hasStackTrace(r.stderr)).toBe(false)
    expect(r.stdout).toBe('')
  }, 90_000)
})
