// The finding catalogue (src/planner/findings/catalogue.ts) is complete and consistent: every code emitted
// anywhere in src/ is in it, its names follow one style, and docs/findings.md is generated from it.
import {readdir, readFile} from 'node:fs/promises'
import path from 'node:path'

import {describe, expect, it} from 'vitest'

import {
  canonicalFindingCode,
  FINDING_CATALOGUE,
  findingIdSpellings,
  type FindingCode,
  isFindingCode,
} from '../../src/planner/findings/catalogue.js'
import {finding, renderFinding} from '../../src/planner/findings/finding.js'
import {idMatcher} from '../../src/plan/plan-builder.js'
import {gitOpsManagedObjects} from '../../src/plan/gitops.js'
import type {Finding} from '../../src/planner/model.js'
import type {MigrationPlan} from '../../src/planner/plan-types.js'
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
    // The catalogue's builders: finding('Code', ref, args, at) and renderFinding('Code', args).
    for (const m of text.matchAll(/\b(?:finding|renderFinding)\(\s*'(\w+)',/g))
      found.set(m[1]!, path.relative(REPO_ROOT, file))
    for (const m of text.matchAll(/\bcode: *([^,\n}]+)/g)) {
      const expr = m[1]!
      if (expr.startsWith('{')) continue // a JSON schema property, not an emitted code
      for (const lit of expr.matchAll(/'([A-Za-z0-9-]+)'/g)) found.set(lit[1]!, path.relative(REPO_ROOT, file))
    }
    // The DaemonSet checks name their codes componentDiag(spec, 'NotReady', …): ZtunnelNotReady and IstioCniNotReady.
    for (const m of text.matchAll(/\bcomponentDiag\(\s*spec,\s*'(\w+)'/g)) {
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

  it('names every code in one style, and keeps the old codes as aliases', () => {
    const codes = Object.keys(FINDING_CATALOGUE)
    expect(codes.filter((c) => !/^[A-Z][A-Za-z0-9]+$/.test(c))).toEqual([])
    const aliases = Object.values(FINDING_CATALOGUE).flatMap((s) => (s.alias ? [s.alias] : []))
    expect(aliases.length).toBe(35)
    expect(new Set([...codes, ...aliases]).size).toBe(codes.length + aliases.length)
    expect(canonicalFindingCode('E5')).toBe('OptedOutWorkloadCaptured')
    expect(canonicalFindingCode('mixed-proxy')).toBe('MixedProxyPods')
    expect(canonicalFindingCode('IST0118')).toBe('PortNameNoProtocol')
    expect(canonicalFindingCode('ClientSideRoutingLost')).toBe('ClientSideRoutingLost')
    expect(canonicalFindingCode('NoSuchFinding')).toBeUndefined()
  })

  it('accepts an id under its old prefix and under the code that replaced it (--accept-lost/--accept-hazard)', () => {
    expect(findingIdSpellings('PortNameNoProtocol/web/8080')).toEqual([
      'PortNameNoProtocol/web/8080',
      'IST0118/web/8080',
    ])
    expect(findingIdSpellings('retarget/AuthorizationPolicy/web/x')).toEqual(['retarget/AuthorizationPolicy/web/x'])
    const accepts = idMatcher(['PortNameNoProtocol/web/*', 'E11/DestinationRule/shop/reviews'])
    expect(accepts('IST0118/web/8080')).toBe(true)
    expect(accepts('IST0118/api/8080')).toBe(false)
    expect(accepts('E11/DestinationRule/shop/reviews')).toBe(true)
    expect(idMatcher(['IST0118/web/8080'])('IST0118/web/8080')).toBe(true)
  })

  it('reads a plan written with the old codes through their aliases (show -o patches and E23)', () => {
    const ref = {apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'shop', name: 'web'}
    const old = {
      id: 'E23/Deployment/web',
      code: 'E23',
      severity: 'warning',
      message: 'Deployment shop/web is managed by Argo CD (app shop): label changes are reverted by the next sync.',
      ref,
    } as unknown as Finding
    const plan = {spec: {blockers: [], findings: [old]}} as unknown as MigrationPlan
    expect([...gitOpsManagedObjects(plan).values()]).toEqual(['Argo CD (app shop)'])
    const unrelated = {spec: {blockers: [], findings: [{...old, code: 'E22'}]}} as unknown as MigrationPlan
    expect(gitOpsManagedObjects(unrelated).size).toBe(0)
  })

  it('renders a finding from its template, and refuses a severity the catalogue does not list', () => {
    const f = finding(
      'PortNameNoProtocol',
      {apiVersion: 'v1', kind: 'Service', namespace: 'shop', name: 'web'},
      {variant: 'blocker', service: 'web', port: 8080, id: 'IST0118/web/8080'},
      {id: 'IST0118/web/8080', severity: 'blocker'},
    )
    expect(f.code).toBe('PortNameNoProtocol')
    expect(f.message).toContain('Port 8080 of Service web')
    expect(f.fix).toContain('--accept-hazard IST0118/web/8080')
    expect(() => renderFinding('IstioTooOld', {who: 'istiod', v: '1.23'}, 'warning' as 'error')).toThrow(
      /severity warning is not catalogued/,
    )
  })

  it('gives edge cases and Istio codes in their formats, and a fix for what a person must act on', () => {
    for (const [code, s] of Object.entries(FINDING_CATALOGUE) as [
      FindingCode,
      (typeof FINDING_CATALOGUE)[FindingCode],
    ][]) {
      if (s.edgeCase) expect(s.edgeCase, code).toMatch(/^E\d{1,2}(, E\d{1,2})*$/)
      if (s.istio) expect(s.istio, code).toMatch(/^IST\d{4}$/)
      const texts = s.variants ? Object.values(s.variants) : [s]
      if (s.severity.includes('blocker'))
        expect(
          texts.some((t) => t.fix),
          `${code} is a blocker without a fix`,
        ).toBe(true)
      for (const t of texts) expect(t.message, code).toBeTruthy()
      if (/^E\d+$/.test(code)) expect(s.edgeCase?.split(', '), code).toContain(code)
      if (/^IST\d+$/.test(code)) expect(s.istio, code).toBe(code)
    }
  })

  it('is what docs/findings.md says (regenerate with npm run findings-doc)', async () => {
    const doc = await readFile(path.join(REPO_ROOT, 'docs/findings.md'), 'utf8')
    expect(doc).toBe(renderFindingsDoc())
  })
})
