// A plan is reviewed as a diff and identified by its digest: two engineers planning the same namespace must get
// the same bytes whatever their locale. localeCompare ordered names by the user's locale (Estonian sorts z
// between s and t); names are ordered by code point (src/planner/order.ts).
import {spawnSync} from 'node:child_process'
import {mkdtemp, readFile, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import {describe, expect, it} from 'vitest'

import {runCli} from '../support/cli.js'
import {generatedNamespaceYaml} from '../support/generated-namespace.js'

const ESTONIAN = {LC_ALL: 'et_EE.UTF-8', LANG: 'et_EE.UTF-8'}

/** Whether this node's ICU orders differently in Estonian: without it the test could not fail. */
function estonianCollation(): boolean {
  const probe = spawnSync(
    process.execPath,
    ['-e', "process.stdout.write(['t', 'z'].sort((a, b) => a.localeCompare(b)).join(''))"],
    {env: {...process.env, ...ESTONIAN}, encoding: 'utf8'},
  )
  return probe.stdout === 'zt'
}

const canFail = estonianCollation()
if (!canFail)
  process.stderr.write('\n[mesh-migrate tests] this node has no Estonian collation (ICU): skipping the locale test.\n')

describe.skipIf(!canFail)('plans do not depend on the locale', () => {
  it('plans the same bytes with LC_ALL=et_EE.UTF-8 as with C.UTF-8, names in code-point order', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'mesh-migrate-locale-'))
    // Services svc-s, svc-t and svc-z: Estonian collation puts svc-z before svc-t.
    const yaml = generatedNamespaceYaml(3)
      .replaceAll(/svc-0\b/g, 'svc-t')
      .replaceAll(/svc-1\b/g, 'svc-z')
      .replaceAll(/svc-2\b/g, 'svc-s')
    await writeFile(path.join(dir, 'ns.yaml'), yaml)
    const plans: string[] = []
    for (const [name, locale] of [
      ['c', {LC_ALL: 'C.UTF-8', LANG: 'C.UTF-8'}],
      ['et', ESTONIAN],
    ] as const) {
      const out = path.join(dir, `${name}.yaml`)
      const result = await runCli(['plan', 'big', '--manifests', dir + '/ns.yaml', '--out', out], {env: locale})
      expect(result.code, result.stderr).toBeLessThanOrEqual(3)
      plans.push(await readFile(out, 'utf8'))
    }
    expect(plans[1]).toBe(plans[0])
    const at = (name: string) => plans[0]!.indexOf(`name: ${name}`)
    expect(at('svc-s')).toBeGreaterThan(0)
    expect([at('svc-s') < at('svc-t'), at('svc-t') < at('svc-z')]).toEqual([true, true])
  })
})
