// E23 through the built CLI: `show -o patches` of a GitOps-managed namespace's plan (the manifest changes themselves
// are tested in-process in test/unit/gitops.test.ts).
import {mkdtemp, readFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import {describe, expect, it} from 'vitest'
import {parseAllDocuments} from 'yaml'

import {manifestChanges} from '../../src/plan/gitops.js'
import {hasStackTrace, runCli} from '../support/cli.js'
import {REPO_ROOT} from '../support/shared.js'
import {planOf} from '../support/plan-file.js'

const FIXTURE = path.join(REPO_ROOT, 'test/fixtures/edge-cases/E23-gitops-managed.yaml')
const NS = 'bookinfo'

describe('show -o patches (built CLI)', () => {
  it('prints a YAML stream that parses, one document per change, with the managed objects listed first', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'mesh-migrate-gitops-'))
    const out = path.join(dir, 'bookinfo.yaml')
    expect((await runCli(['plan', NS, '--manifests', FIXTURE, '--out', out])).code).toBe(0)
    const r = await runCli(['show', out, '-o', 'patches'])
    expect(r.code, r.stderr).toBe(0)
    expect(r.stdout).toContain('#   Namespace bookinfo: Argo CD (argocd.argoproj.io/instance=bookinfo-platform)')
    expect(r.stdout).toContain('#   kubectl -n bookinfo rollout restart deployment/reviews-v1')
    const docs = parseAllDocuments(r.stdout)
    expect(docs.every((d) => d.errors.length === 0)).toBe(true)
    const objects = docs.map((d) => d.toJS()).filter((d) => d !== null)
    expect(objects).toHaveLength(8)
    expect(objects[3]).toEqual({
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: {name: 'bookinfo', labels: {'istio.io/use-waypoint': 'waypoint'}},
    })

    const json = await runCli(['show', out, '-o', 'patches', '--json'])
    expect(json.code).toBe(0)
    const written = planOf(await readFile(out, 'utf8'))
    const doc = JSON.parse(json.stdout) as {kind: string; steps: unknown[]}
    expect(doc.kind).toBe('ManifestChanges')
    expect(doc.steps.length).toBe(manifestChanges(written).length)

    const bad = await runCli(['show', out, '-o', 'diff'])
    expect(bad.code).toBe(2)
    expect(hasStackTrace(bad.stderr)).toBe(false)
  })
})
