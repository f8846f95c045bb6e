// The finding catalogue (src/planner/findings/catalogue.ts) is complete and consistent: every code emitted
// anywhere in src/ is in it, its names follow one style, and docs/findings.md is generated from it.
import {readdir, readFile} from 'node:fs/promises'
import path from 'node:path'

import {describe, expect, it} from 'vitest'

import {codeForName, FINDING_CATALOGUE, type FindingCode, isFindingCode} from '../../src/planner/findings/catalogue.js'
import {renderFindingsDoc} from '../../src/planner/findings/doc.js'
import {REPO_ROOT} from '../support/shared.js'

async function sourceFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, {withFileTypes: true})
  const nested = await Promise.all(
    entries.map((e) => (e.isDirectory() ? sourceFiles(path.join(dir, e.name)) : [path.join(dir, e.name)])),
  )
  return nested.flat().filter((f) => f.endsWith('.ts'))
}

/** Every string literal in a `code:` position, including both arms of `code: cond ? 'A' : 'B'` and `${prefix}Suffix` templates. */
async function emittedCodes(): Promise<Map<string, string>> {
  const found = new Map<string, string>()
  for (const file of await sourceFiles(path.join(REPO_ROOT, 'src'))) {
    if (file.endsWith(path.join('findings', 'catalogue.ts'))) continue
    const text = await readFile(file, 'utf8')
    for (const m of text.matchAll(/\bcode: *([^,\n}]+)/g)) {
      const expr = m[1]!
      if (expr.startsWith('{')) continue // a JSON schema property, not an emitted code
      for (const lit of expr.matchAll(/'([A-Za-z0-9-]+)'/g)) found.set(lit[1]!, path.relative(REPO_ROOT, file))
    }
    // The DaemonSet checks name their codes `${spec.codePrefix}NotReady` for ztunnel and istio-cni.
    for (const m of text.matchAll(/\bcode: *`\$\{spec\.codePrefix\}(\w+)`/g)) {
      for (const prefix of ['Ztunnel', 'IstioCni']) found.set(`${prefix}${m[1]}`, path.relative(REPO_ROOT, file))
    }
  }
  return found
}

describe('finding catalogue', () => {
  it('has every code emitted in src/', async () => {
    const emitted = await emittedCodes()
    expect(emitted.size).toBeGreaterThan(140)
    const missing = [...emitted].filter(([code]) => !isFindingCode(code)).map(([code, file]) => `${code} (${file})`)
    expect(missing).toEqual([])
    const stale = Object.keys(FINDING_CATALOGUE).filter(
      (code) => !emitted.has(code) && code !== 'RootL7DenyOutsideWaypoint',
    ) // emitted through ROOT_DENY_CODE
    expect(stale).toEqual([])
  })

  it('names every code in one style, once', () => {
    const names = Object.values(FINDING_CATALOGUE).map((s) => s.name)
    expect(names.filter((n) => !/^[A-Z][A-Za-z0-9]+$/.test(n))).toEqual([])
    expect(new Set(names).size).toBe(names.length)
  })

  it('keeps the codes users already see, and resolves one-style names to them', () => {
    for (const code of [
      'E5',
      'IST0118',
      'ServiceUsesOwnWaypoint',
      'mixed-proxy',
      'native-sidecar-unknown',
      'ClientSideRoutingLost',
    ] as const)
      expect(isFindingCode(code)).toBe(true)
    expect(codeForName('OptedOutWorkloadCaptured')).toBe('E5')
    expect(codeForName('MixedProxyPods')).toBe('mixed-proxy')
    expect(codeForName('ClientSideRoutingLost')).toBe('ClientSideRoutingLost')
    expect(codeForName('NoSuchFinding')).toBeUndefined()
  })

  it('gives edge cases and Istio codes in their formats, and a fix for what a person must act on', () => {
    for (const [code, s] of Object.entries(FINDING_CATALOGUE) as [
      FindingCode,
      (typeof FINDING_CATALOGUE)[FindingCode],
    ][]) {
      if (s.edgeCase) expect(s.edgeCase, code).toMatch(/^E\d{1,2}(, E\d{1,2})*$/)
      if (s.istio) expect(s.istio, code).toMatch(/^IST\d{4}$/)
      if (s.severity.includes('blocker')) expect(s.fix, `${code} is a blocker without a fix`).toBeTruthy()
      if (/^E\d+$/.test(code)) expect(s.edgeCase?.split(', '), code).toContain(code)
      if (/^IST\d+$/.test(code)) expect(s.istio, code).toBe(code)
    }
  })

  it('is what docs/findings.md says (regenerate with npm run findings-doc)', async () => {
    const doc = await readFile(path.join(REPO_ROOT, 'docs/findings.md'), 'utf8')
    expect(doc).toBe(renderFindingsDoc())
  })
})
