// `npm run test-cluster` (scripts/test-cluster.ts; issue 9 part 5, issue 13 point 6): on a real
// kube-apiserver the printed KUBECONFIG works for kubectl; the in-repo fallback says truthfully that
// kubectl cannot use it; SIGHUP, SIGTERM and a closed stdout pipe stop what the script started and
// remove its kubeconfig and the folder it made for it.
import {type ChildProcess, execFile, spawn} from 'node:child_process'
import {existsSync} from 'node:fs'
import {mkdtemp, rm} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {promisify} from 'node:util'

import {afterAll, afterEach, beforeAll, describe, expect, it} from 'vitest'

import {describeWithRealApiServer} from '../support/real-apiserver.js'
import {REPO_ROOT} from '../support/shared.js'

const SCRIPT = path.join(REPO_ROOT, 'scripts/test-cluster.ts')
const run = promisify(execFile)
const kubectlOnPath = (process.env.PATH ?? '')
  .split(path.delimiter)
  .some((d) => d && existsSync(path.join(d, 'kubectl')))
if (!kubectlOnPath)
  process.stderr.write(
    '\n[mesh-migrate tests] kubectl is not on PATH: skipping the kubectl checks against `npm run test-cluster`.\n',
  )

interface Script {
  child: ChildProcess
  stdout: () => string
  stderr: () => string
  exited: Promise<{code: number | null; signal: NodeJS.Signals | null}>
}

/** The script in one node process (tsx as a loader), so signals reach it directly. */
function startScript(args: string[], opts: {closeStdout?: boolean} = {}): Script {
  const child = spawn(process.execPath, ['--import', 'tsx', SCRIPT, ...args], {
    cwd: REPO_ROOT,
    env: {...process.env, NO_COLOR: '1'},
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  if (opts.closeStdout) child.stdout!.destroy()
  else child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()))
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()))
  const exited = new Promise<{code: number | null; signal: NodeJS.Signals | null}>((resolve) =>
    child.on('exit', (code, signal) => resolve({code, signal})),
  )
  const script = {child, stdout: () => stdout, stderr: () => stderr, exited}
  started.push(script)
  return script
}

async function waitForBanner(script: Script, timeoutMs = 150_000): Promise<string> {
  const deadline = Date.now() + timeoutMs
  while (!script.stdout().includes('Ctrl+C stops the cluster')) {
    if (script.child.exitCode !== null || Date.now() > deadline)
      throw new Error(`no banner from test-cluster; stderr:\n${script.stderr()}`)
    await new Promise((r) => setTimeout(r, 200))
  }
  return script.stdout()
}

const exportedPath = (banner: string) => /^ {2}export KUBECONFIG=(.+)$/m.exec(banner)?.[1]

let dir: string
let running: Script
const started: Script[] = []
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'mesh-migrate-test-cluster-'))
})
afterEach(async () => {
  // A failed test must not leave its script (and the servers it started) behind: end it by its own PID.
  for (const script of started.splice(0)) {
    if (script.child.exitCode !== null || script.child.signalCode !== null) continue
    script.child.kill('SIGTERM')
    await script.exited
  }
}, 60_000)
afterAll(async () => {
  await rm(dir, {recursive: true, force: true})
})

describeWithRealApiServer('npm run test-cluster on a real kube-apiserver', () => {
  it('serves HTTPS with a token: kubectl get pods -n bookinfo works with the printed KUBECONFIG; SIGHUP stops everything and removes it', async () => {
    const kubeconfig = path.join(dir, 'real/kubeconfig')
    running = startScript(['--kubeconfig-out', kubeconfig])
    const banner = await waitForBanner(running)
    expect(banner).toMatch(
      /Test cluster ready: kube-apiserver v1\.\d+\.\d+ at https:\/\/127\.0\.0\.1:\d+ \(HTTPS, bearer token/,
    )
    expect(exportedPath(banner)).toBe(kubeconfig)
    expect(banner).toContain('kubectl works with it too')
    expect(banner).toContain(`removes ${kubeconfig}`)
    expect(existsSync(kubeconfig)).toBe(true)
    const url = /at (https:\/\/127\.0\.0\.1:\d+)/.exec(banner)![1]!

    if (kubectlOnPath) {
      const pods = await run(
        'kubectl',
        [
          'get',
          'pods',
          '-n',
          'bookinfo',
          '--no-headers',
          '-o',
          'custom-columns=NAME:.metadata.name,READY:.status.containerStatuses[*].ready',
        ],
        {env: {...process.env, KUBECONFIG: kubeconfig}},
      )
      const lines = pods.stdout.trim().split('\n')
      expect(lines.map((l) => l.split(/\s+/)[0]!.replace(/-[a-z0-9]+-[a-z0-9]+$/, '')).sort()).toEqual([
        'details-v1',
        'productpage-v1',
        'ratings-v1',
        'reviews-v1',
        'reviews-v2',
        'reviews-v3',
      ])
      const whoami = await run('kubectl', ['auth', 'whoami', '-o', 'jsonpath={.status.userInfo.username}'], {
        env: {...process.env, KUBECONFIG: kubeconfig},
      })
      expect(whoami.stdout).toBe('admin')
    }

    running.child.kill('SIGHUP')
    expect(await running.exited).toEqual({code: 0, signal: null})
    expect(running.stderr()).toContain('SIGHUP: stopping the test cluster')
    expect(existsSync(kubeconfig)).toBe(false)
    // The folder was made for the kubeconfig: it goes too.
    expect(existsSync(path.dirname(kubeconfig))).toBe(false)
    // The API server it started is gone.
    await expect(fetch(`${url}/readyz`)).rejects.toThrow()
  }, 240_000)
})

describe('npm run test-cluster on the in-repo server (--in-repo, as without KUBEBUILDER_ASSETS)', () => {
  it('says what it runs and that kubectl cannot use it — which is true; SIGTERM removes the kubeconfig', async () => {
    const kubeconfig = path.join(dir, 'in-repo/kubeconfig')
    running = startScript(['--in-repo', '--kubeconfig-out', kubeconfig])
    const banner = await waitForBanner(running)
    expect(running.stderr()).toContain('--in-repo: starting the in-repo test API server (test/support/apiserver)')
    expect(banner).toMatch(
      /Test cluster ready: the in-repo test API server at http:\/\/127\.0\.0\.1:\d+ \(plain http; not a real kube-apiserver\)/,
    )
    expect(banner).toContain('kubectl cannot use it: kubectl sends no credentials to a plain-http server')
    expect(exportedPath(banner)).toBe(kubeconfig)
    if (kubectlOnPath) {
      const r = await run('kubectl', ['get', 'pods', '-n', 'bookinfo'], {
        env: {...process.env, KUBECONFIG: kubeconfig},
      }).catch((e: {code: number; stderr: string}) => e)
      expect('code' in r && r.code).not.toBe(0)
      // No credentials reached the server: it refuses the anonymous discovery requests.
      expect(r.stderr).toContain('Forbidden')
    }
    running.child.kill('SIGTERM')
    expect(await running.exited).toEqual({code: 0, signal: null})
    expect(existsSync(kubeconfig)).toBe(false)
  }, 120_000)

  it('stdout piped to a reader that went away (EPIPE): stops and removes the kubeconfig instead of crashing', async () => {
    const kubeconfig = path.join(dir, 'piped/kubeconfig')
    running = startScript(['--in-repo', '--kubeconfig-out', kubeconfig], {closeStdout: true})
    expect(await running.exited).toEqual({code: 0, signal: null})
    expect(running.stderr()).toMatch(/stdout closed \(EPIPE\): stopping the test cluster/)
    expect(existsSync(kubeconfig)).toBe(false)
  }, 120_000)
})
