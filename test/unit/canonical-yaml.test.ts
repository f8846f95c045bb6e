// The direct canonical-YAML emitter writes exactly what `yaml`'s document model writes with the same
// options (it replaces it for speed only): plans, and strings that take every quoting branch.
import path from 'node:path'

import {describe, expect, it} from 'vitest'

import {emitCanonicalYaml, toCanonicalYaml, toCanonicalYamlWithDocumentModel} from '../../src/planner/canonical.js'
import {buildInventory} from '../../src/planner/inventory.js'
import {buildPlan} from '../../src/plan/plan-builder.js'
import type {KubeObject} from '../../src/planner/model.js'
import {loadManifestFiles} from '../../src/sources/manifests.js'
import {generatedNamespace} from '../support/generated-namespace.js'
import {REPO_ROOT} from '../support/shared.js'

function planOf(namespace: string, objects: KubeObject[]) {
  const snapshot = {
    namespace,
    rootNamespace: 'istio-system',
    target: {manifests: ['x']},
    objects,
    missingKinds: [],
    findings: [],
  }
  return buildPlan({
    inventory: buildInventory(snapshot, {waypointFor: 'service'}),
    snapshot,
    options: {rootNamespace: 'istio-system', waypointName: 'waypoint', waypointFor: 'service'},
    generator: 'test',
  })
}

describe('direct canonical YAML emitter', () => {
  it('writes the example plan and a generated plan byte for byte as the document model does', async () => {
    const bookinfo = planOf('bookinfo', (await loadManifestFiles([path.join(REPO_ROOT, 'examples/bookinfo')])).objects)
    const generated = planOf('big', generatedNamespace(5) as unknown as KubeObject[])
    for (const plan of [bookinfo, generated]) {
      const direct = emitCanonicalYaml(plan)
      expect(direct).toBeDefined()
      expect(direct).toBe(toCanonicalYamlWithDocumentModel(plan))
    }
  })

  it('quotes, escapes and indents every kind of scalar as yaml does', () => {
    const odd = {
      a: {
        b: 'x\ny',
        c: ['x\ny\n', 'p\n\n  q', ' lead\nx', 'trail \nx'],
        e: "it's",
        f: 'yes',
        g: 'n',
        '0': 1,
        '10': 2,
        z: [[1, [2, []]], {}, [{a: 1, b: {c: 'x\ny'}}]],
        h: `${'x'.repeat(100)}\n${'y\n\nz '.repeat(30)}`,
        i: -0,
        j: 1.5,
        k: null,
        l: '#x',
        m: 'a #b',
        n: 'ok: x',
        p: 'é—ü',
        q: '12:30',
        r: '0x1f',
        s: '.5',
        t: '2001-01-01',
        u: 'a\\b',
        v: `it's "x"`,
        w: '- x',
        x: '-x',
        y: ':x',
        yy: 'x:',
        zz: '~',
        '- k': 1,
        'a b': 2,
        '': 3,
        Y: 4,
        d: 'a "q" b',
        dd: 'x"y',
        on: 'off',
        big: 1e21,
        neg: -3,
        t2: true,
        f2: false,
        e1: '',
        deep: {x: {y: {z: ['q\nr', {s: 'u\nv'}]}}},
      },
    }
    expect(emitCanonicalYaml(odd)).toBe(toCanonicalYamlWithDocumentModel(odd))
  })

  it('leaves what it does not handle to the document model, with the same result', () => {
    for (const odd of [{o: '---x'}, {t: 'a\tb'}, {'x\ny': 1}, {c: 'bell\u0007'}, {d: new Date(0)}]) {
      expect(emitCanonicalYaml(odd)).toBeUndefined()
      expect(toCanonicalYaml(odd)).toBe(toCanonicalYamlWithDocumentModel(odd))
    }
  })
})
