// Issue 20 §8: a kubeconfig credential (exec) plugin that fails is reported as the plugin's failure, not as an
// unreachable server, and what it printed (which may hold tokens) is never echoed, in text or JSON.
import {chmod, mkdtemp, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import {describe, expect, it} from 'vitest'

import {hasStackTrace, runCli} from '../support/cli.js'

async function kubeconfigWithFailingPlugin(): Promise<{dir: string; kubeconfig: string; plugin: string}> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'mesh-migrate-plugin-'))
  const plugin = path.join(dir, 'plugin.sh')
  await writeFile(plugin, '#!/bin/sh\necho "SECRET-TOKEN-abc123" >&2\necho "SECRET-TOKEN-abc123"\nexit 1\n')
  await chmod(plugin, 0o755)
  const kubeconfig = path.join(dir, 'kubeconfig')
  await writeFile(
    kubeconfig,
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters:',
      '- name: c',
      // Loopback, a port nothing listens on: the plugin fails before any request anyway.
      '  cluster: {server: "https://127.0.0.1:9", insecure-skip-tls-verify: true}',
      'users:',
      '- name: u',
      '  user:',
      '    exec: {apiVersion: client.authentication.k8s.io/v1, command: ' +
        JSON.stringify(plugin) +
        ', interactiveMode: Never}',
      'contexts:',
      '- name: x',
      '  context: {cluster: c, user: u}',
      'current-context: x',
      '',
    ].join('\n'),
  )
  return {dir, kubeconfig, plugin}
}

describe('a failing credential plugin', () => {
  it('is named as the cause, exit 1, and its output is never shown (text and JSON)', async () => {
    const {dir, kubeconfig, plugin} = await kubeconfigWithFailingPlugin()
    for (const output of [[], ['-o', 'json']]) {
      const r = await runCli(['inventory', 'default', '--kubeconfig', kubeconfig, ...output], {cwd: dir})
      expect(r.code, r.stderr).toBe(1)
      expect(hasStackTrace(r.stderr)).toBe(false)
      const all = r.stdout + r.stderr
      expect(all).toContain(`credential plugin \`${plugin}\` (user u, context x) failed`)
      expect(all).not.toContain('SECRET-TOKEN')
      expect(all).not.toMatch(/no answer from|unreachable/)
    }
  }, 60_000)
})
