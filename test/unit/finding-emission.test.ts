// Every finding the tool emits comes from the catalogue (issue 23 §3): the planner runs over the repository's
// fixtures, the example and the upstream corpora (../shared/fixtures/upstream), and each finding's code must be
// catalogued, its severity one the catalogue lists for it, and its message and fix the catalogue's wording
// of that code with the `{arg}`s filled in. tsc already refuses an uncatalogued literal code at a call site;
// this checks what actually comes out, including codes that reach a finding through a variable.
import {existsSync, readdirSync} from 'node:fs'
import path from 'node:path'

import {describe, expect, it} from 'vitest'

import {buildInventory} from '../../src/planner/inventory.js'
import type {Finding, KubeObject, SourceSnapshot} from '../../src/planner/model.js'
import {buildPlan} from '../../src/plan/plan-builder.js'
import {FINDING_CATALOGUE, type FindingCode, isFindingCode} from '../../src/planner/findings/catalogue.js'
import {ManifestError} from '../../src/errors.js'
import {loadManifestFiles} from '../../src/sources/manifests.js'
import {CORPUS_DIR, hasShared, REPO_ROOT} from '../support/shared.js'

/**
 * Codes some of whose wordings are still composed at the emission site (not yet moved into the catalogue's
 * templates). Empty: every planner and source finding is rendered from the catalogue; keep it so (a code listed
 * here whose emitted texts all read as the catalogue's fails the test).
 */
const COMPOSED_AT_SITE = new Set<FindingCode>([])

function pattern(template: string): RegExp {
  const parts = template.split(/\{\w+\}/).map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
  return new RegExp(`^${parts.join('[\\s\\S]*')}$`)
}

const wordings = (code: FindingCode) => {
  const s = FINDING_CATALOGUE[code]
  return s.variants ? Object.values(s.variants) : [{message: s.message ?? '', fix: s.fix}]
}

/** Whether the finding reads as one wording of its code (allowing what the plan adds: acceptance, the route's object). */
function fromCatalogue(f: Finding): boolean {
  const message = f.message.replace(/ \(accepted with --accept-(lost|hazard)\)$/, '')
  const fix = f.fix?.replace(/ ?To go ahead without it, re-run plan with --accept-lost \S+\.$/, '')
  return wordings(f.code).some(
    (w) =>
      (pattern(w.message).test(message) || pattern(`{object}: ${w.message}`).test(message)) &&
      (!fix || (w.fix !== undefined && pattern(w.fix).test(fix))),
  )
}

function namespacesOf(objects: KubeObject[]): string[] {
  const names = objects.flatMap((o) => (o.kind === 'Namespace' ? [o.metadata.name] : []))
  const used = objects.flatMap((o) => (o.metadata.namespace ? [o.metadata.namespace] : []))
  return [...new Set([...names, ...used])].sort().slice(0, 6)
}

async function findingsOf(source: string): Promise<Finding[]> {
  // The corpora hold deliberately invalid YAML too (istio-io-snippets/invalid): those are refused, not planned.
  const loaded = await loadManifestFiles([source], {defaultNamespace: 'default'}).catch((error: unknown) => {
    if (error instanceof ManifestError) return undefined
    throw error
  })
  if (!loaded) return []
  const out = [...loaded.findings]
  for (const namespace of namespacesOf(loaded.objects)) {
    const snapshot: SourceSnapshot = {
      namespace,
      rootNamespace: 'istio-system',
      target: {manifests: [source]},
      objects: loaded.objects,
      missingKinds: [],
      findings: [],
    }
    for (const waypointFor of ['service', 'all'] as const) {
      const inventory = buildInventory(snapshot, {waypointFor})
      const plan = buildPlan({
        inventory,
        snapshot,
        options: {rootNamespace: 'istio-system', waypointName: 'waypoint', waypointFor},
        generator: 'mesh-migrate/test',
      })
      out.push(...inventory.findings, ...plan.spec.findings, ...plan.spec.blockers)
    }
  }
  return out
}

function sources(): string[] {
  const local = ['test/fixtures/edge-cases', 'test/fixtures/verdicts'].flatMap((dir) =>
    readdirSync(path.join(REPO_ROOT, dir)).map((f) => path.join(REPO_ROOT, dir, f)),
  )
  local.push(path.join(REPO_ROOT, 'examples/bookinfo'))
  if (!hasShared) {
    console.warn('finding-emission: ../shared is absent; the upstream corpora are not planned')
    return local
  }
  const upstream = readdirSync(CORPUS_DIR).flatMap((dir) =>
    readdirSync(path.join(CORPUS_DIR, dir), {recursive: true, encoding: 'utf8'})
      .filter((f) => /\.ya?ml$/.test(f))
      .map((f) => path.join(CORPUS_DIR, dir, f)),
  )
  return [...local, ...upstream.filter((f) => existsSync(f))]
}

describe('emitted findings', () => {
  it('are catalogued, with a catalogued severity and the catalogue wording', async () => {
    const emitted = new Map<string, Finding>()
    for (const source of sources()) for (const f of await findingsOf(source)) emitted.set(`${f.code} ${f.message}`, f)
    const findings = [...emitted.values()]
    const codes = new Set(findings.map((f) => f.code))
    expect(codes.size).toBeGreaterThan(50)
    expect([...codes].filter((c) => !isFindingCode(c))).toEqual([])
    expect(
      findings
        .filter((f) => !FINDING_CATALOGUE[f.code].severity.includes(f.severity))
        .map((f) => `${f.code} ${f.severity}`),
    ).toEqual([])
    // A value that was missing when the template was filled ("undefined behaviour" is the wording of E26).
    const text = (f: Finding) => `${f.message} ${f.fix ?? ''}`.replaceAll('undefined behaviour', '')
    expect(findings.filter((f) => /\bundefined\b|\bNaN\b|\[object Object\]/.test(text(f)))).toEqual([])
    const composed = new Set(findings.filter((f) => !fromCatalogue(f)).map((f) => f.code))
    expect([...composed].filter((c) => !COMPOSED_AT_SITE.has(c)).sort()).toEqual([])
    // Listed, emitted here, and every emitted text is the catalogue's: take it off the list.
    expect([...COMPOSED_AT_SITE].filter((c) => codes.has(c) && !composed.has(c))).toEqual([])
  }, 120_000)
})
