// Istio's CRD validation corpus (pkg/config/validation/testdata/crds): every `*-valid.yaml`
// document must be accepted, every `*-invalid.yaml` document rejected with its upstream
// `_err` text. Upstream checks these with a validator built from the same apiextensions code
// as kube-apiserver (schema, list types, CEL) — they are CRD-level errors, not webhook ones.
// Two kinds of documents need a note:
//  - `field: null` documents: upstream's validator does not prune nulls, but kube-apiserver
//    drops non-nullable nulls without defaults before validating (apiextensions
//    PruneNonNullableNullsWithoutDefaults), so the real server answers "Required value" for
//    a required field set to null, and accepts an optional one. We assert the real answer.
//  - `addresses: [1.2.3.4, 001:db8::]` in serviceentry-valid.yaml: the YAML 1.2 parser used
//    here reads `001:db8::` as a one-key map, go-yaml (kubectl) as a string; the document is
//    sent as kubectl would send it.
import {readdirSync, readFileSync} from 'node:fs'
import path from 'node:path'
import {afterAll, beforeAll, expect, it} from 'vitest'
import {parseAllDocuments} from 'yaml'
import {startApiServer, type TestApiServer} from '../support/apiserver/index.js'
import {CORPUS_DIR, describeWithShared, hasShared} from '../support/shared.js'
import {raw} from './helpers.js'

interface Case {
  file: string
  name: string
  expectError?: string
  doc: Record<string, any>
}

function cases(): Case[] {
  if (!hasShared) return []
  const dir = path.join(CORPUS_DIR, 'validation-testdata')
  const out: Case[] = []
  for (const file of readdirSync(dir).sort()) {
    for (const d of parseAllDocuments(readFileSync(path.join(dir, file), 'utf8'))) {
      const doc = d.toJS() as Record<string, any> | null
      if (!doc) continue
      const expectError = doc._err as string | undefined
      delete doc._err
      out.push({
        file,
        name: doc.metadata?.name ?? '(unnamed)',
        doc,
        ...(expectError !== undefined ? {expectError} : {}),
      })
    }
  }
  return out
}

/** Reads a flow-sequence IPv6 entry the way go-yaml does (see the note at the top). */
function asKubectlReadsIt(doc: Record<string, any>): Record<string, any> {
  const addresses = doc.spec?.addresses
  if (Array.isArray(addresses)) {
    doc.spec.addresses = addresses.map((a: unknown) => {
      if (a && typeof a === 'object' && !Array.isArray(a)) {
        const keys = Object.keys(a)
        if (keys.length === 1 && (a as Record<string, unknown>)[keys[0]!] === null) return `${keys[0]}:`
      }
      return a
    })
  }
  return doc
}

const NULL_CASES: Record<string, string> = {
  // wasm-invalid.yaml: `spec: null` and `spec: {url: null}`; spec and spec.url are required.
  nil: 'WasmPlugin.extensions.istio.io "nil" is invalid: [spec: Required value, <nil>: Invalid value: "null": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation]',
  'nested-nil':
    'WasmPlugin.extensions.istio.io "nested-nil" is invalid: [spec.url: Required value, <nil>: Invalid value: "null": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation]',
}

let server: TestApiServer
beforeAll(async () => {
  server = await startApiServer({quiet: true})
})
afterAll(() => server?.close())

describeWithShared('Istio validation corpus against the CRD schemas and CEL rules', () => {
  const all = cases()

  it('covers every document of the corpus', () => {
    expect(all.length).toBeGreaterThan(100)
    expect(all.filter((c) => c.file.includes('-invalid')).every((c) => c.expectError !== undefined)).toBe(true)
  })

  it.each(all.map((c) => [`${c.file} ${c.name}`, c] as const))('%s', async (_label, c) => {
    const doc = asKubectlReadsIt(structuredClone(c.doc))
    const r = server.core.registry.byKind(doc.apiVersion, doc.kind)
    expect(r, `${doc.apiVersion} ${doc.kind} is served`).toBeDefined()
    delete doc.metadata?.namespace
    const res = await raw(server).post(
      `/apis/${r!.rt.group}/${r!.version.name}/namespaces/default/${r!.rt.plural}?dryRun=All`,
      doc,
    )
    if (c.file.includes('-valid')) {
      expect(res.status, res.text).toBe(201)
      return
    }
    expect(res.status, res.text).toBe(422)
    if (NULL_CASES[c.name]) expect(res.body.message).toBe(NULL_CASES[c.name])
    else expect(res.body.message).toContain(c.expectError)
  })
})
