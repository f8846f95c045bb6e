// Issue 24 §1, its last part: the step description `apply` shows before its confirm prompt wraps at spaces, never
// mid-word ("deta/ils"), and keeps names and ids whole, at 80 and 200 columns (COLUMNS set in the spawned env).
// The prompt needs a terminal: the CLI runs on a pseudo-terminal made by util-linux `script` (no test of ours
// fakes isTTY), against the real kube-apiserver (envtest; the in-repo server otherwise), and the answer "n" is
// typed into it: the step is described, asked about, and cancelled with nothing written.
import {execFileSync, spawn} from 'node:child_process'
import {readFile} from 'node:fs/promises'
import path from 'node:path'
import {stripVTControlCharacters} from 'node:util'

import stringWidth from 'string-width'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {parse as parseYaml} from 'yaml'

import {BIN, runCli} from '../support/cli.js'
import {startTestCluster, type TestCluster} from '../support/cluster.js'
import {REPO, workdir} from './support.js'

const NS = 'bookinfo'
const STEP = 'create-policies'

/** util-linux script(1), which runs a command on a new pseudo-terminal; absent, the tests skip and say so. */
const SCRIPT = (() => {
  try {
    return execFileSync('script', ['--version'], {encoding: 'utf8'}).includes('util-linux')
  } catch {
    return false
  }
})()
if (!SCRIPT) process.stderr.write('\n[mesh-migrate tests] util-linux `script` not found: skipping the prompt tests.\n')

let cluster: TestCluster
let cwd: string
let description: string
let title: string

beforeAll(async () => {
  if (!SCRIPT) return
  cluster = await startTestCluster({fixture: path.join(REPO, 'examples/bookinfo'), quiet: true})
  cwd = await workdir()
  const kube = ['--kubeconfig', cluster.kubeconfigPath]
  const plan = await runCli(['plan', NS, ...kube], {cwd})
  if (plan.code !== 0) throw new Error(`plan failed: ${plan.stderr}`)
  const file = parseYaml(await readFile(path.join(cwd, 'plans', `${NS}.yaml`), 'utf8'))
  const steps = (file as {spec: {steps: {id: string; description: string}[]}}).spec.steps
  const index = steps.findIndex((s) => s.id === STEP)
  description = steps[index]!.description
  title = `Step ${index + 1}/${steps.length} ${STEP}`
  // The steps before it, so that the next step apply asks about is the one with the long description.
  const before = await runCli(['apply', NS, '--to', steps[index - 1]!.id, '--yes', '--timeout', '90s', ...kube], {cwd})
  if (before.code !== 0) throw new Error(`apply failed: ${before.stderr}`)
}, 300_000)
afterAll(() => cluster?.stop())

/** `apply NS --step` on a pseudo-terminal: waits for the prompt, answers "n", returns what the terminal showed. */
function applyOnTerminal(columns: string): Promise<{code: number | null; screen: string; asked: boolean}> {
  const command = [process.execPath, BIN, 'apply', NS, '--step', '--kubeconfig', cluster.kubeconfigPath]
    .map((word) => `'${word.replaceAll("'", `'\\''`)}'`)
    .join(' ')
  const env: NodeJS.ProcessEnv = {...process.env, COLUMNS: columns, NO_COLOR: '1'}
  delete env.CI
  return new Promise((resolve, reject) => {
    const child = spawn('script', ['-q', '-e', '-c', command, '/dev/null'], {cwd, env})
    let raw = ''
    let asked = false
    const guard = setTimeout(() => child.kill('SIGKILL'), 120_000)
    child.stdout.on('data', (d: Buffer) => {
      raw += d.toString()
      if (!asked && raw.includes(`Apply step ${STEP}?`)) {
        asked = true
        child.stdin.write('n\r')
      }
    })
    child.on('error', reject)
    child.on('close', (code) => {
      clearTimeout(guard)
      resolve({code, screen: stripVTControlCharacters(raw).replaceAll('\r\n', '\n'), asked})
    })
  })
}

describe.skipIf(!SCRIPT).each(['80', '200'])('the step shown before the confirm prompt at %s columns', (columns) => {
  it('wraps at spaces within the width, every word, name and id whole; then asks, and "n" writes nothing', async () => {
    const r = await applyOnTerminal(columns)
    expect(r.asked, r.screen).toBe(true)
    expect(r.screen).toContain(`Apply cancelled: nothing was written for step ${STEP}`)
    expect(r.code).not.toBe(0)

    const lines = r.screen.split('\n')
    const first = lines.findIndex((l) => l.startsWith(`${title}:`))
    expect(first, r.screen).toBeGreaterThanOrEqual(0)
    const end = lines.findIndex((l, i) => i > first && l.startsWith('  will '))
    const shown = lines.slice(first, end)
    expect(end, r.screen).toBeGreaterThan(first)
    for (const line of shown) expect(stringWidth(line), line).toBeLessThanOrEqual(Number(columns))
    // Joined with one space, the lines are the description exactly: every break was at a space, none inside a word.
    expect(shown.map((l) => l.trim()).join(' ')).toBe(`${title}: ${description.replace(/\s+/g, ' ')}`)
    // And so names and ids are whole on their lines (these are the ones the description names).
    for (const name of [
      'details-no-delete-waypoint',
      'productpage-ingress-only-waypoint',
      'reviews-from-productpage-ztunnel',
      'cluster.local/ns/bookinfo/sa/waypoint)',
    ])
      expect(
        shown.some((l) => l.includes(name)),
        name,
      ).toBe(true)
    // At 80 columns the description needs several lines; at 200, fewer.
    expect(shown.length).toBeGreaterThan(Number(columns) === 80 ? 6 : 2)
    if (Number(columns) === 200) expect(shown.length).toBeLessThan(7)
  }, 180_000)
})
