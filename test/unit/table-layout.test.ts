// Layout for people at a given terminal width (issue 13 §2): tables of many narrow columns (the step
// timeline) in blocks that repeat the row's name, legends and notes wrapped at item and word
// boundaries, nothing changed when piped (width Infinity).
import stringWidth from 'string-width'
import {describe, expect, it} from 'vitest'

import {buildInventory} from '../../src/planner/inventory.js'
import type {KubeObject} from '../../src/planner/model.js'
import {buildPlan} from '../../src/plan/plan-builder.js'
import type {Painter} from '../../src/ui/color.js'
import {renderTimelineMermaid} from '../../src/ui/mermaid-view.js'
import {
  fitItems,
  fitText,
  ONE_COLUMN_TEXT,
  renderColumnBlocks,
  renderTable,
  stringWidth as cellWidth,
} from '../../src/ui/table.js'
import {generatedNamespace} from '../support/generated-namespace.js'

const plain: Painter = {enabled: false, paint: (_style, text) => text}
const widest = (text: string) => Math.max(...text.split('\n').map((l) => stringWidth(l)))

describe('renderColumnBlocks', () => {
  const head = ['WORKLOAD', ...Array.from({length: 11}, (_, i) => String(i))]
  const rows = ['Deployment/details-v1', 'Deployment/productpage-v1'].map((w) => [
    w,
    ...Array.from({length: 11}, (_, i) => (i < 8 ? 'sidecar' : 'ambient')),
  ])

  it('splits columns that do not fit into blocks, each repeating the name column, every line within the width', () => {
    const text = renderColumnBlocks(head, rows, plain, {width: 80, wide: false})
    const blocks = text.split('\n\n')
    expect(blocks.length).toBeGreaterThan(1)
    expect(widest(text)).toBeLessThanOrEqual(80)
    for (const block of blocks) {
      expect(block.split('\n')[0]).toMatch(/^WORKLOAD\s/)
      expect(block).toContain('Deployment/productpage-v1')
    }
    // Every column is there once, in order, and no cell is cut.
    const columns = blocks.flatMap((b) => b.split('\n')[0]!.trim().split(/\s+/).slice(1))
    expect(columns).toEqual(head.slice(1))
    expect(text).not.toContain('…')
  })

  it('is one table when it fits, or when piped', () => {
    for (const width of [200, Number.POSITIVE_INFINITY]) {
      const text = renderColumnBlocks(head, rows, plain, {width, wide: false})
      expect(text.split('\n\n')).toHaveLength(1)
      expect(text.split('\n')[0]).toMatch(/^WORKLOAD\s+0\s+1\s.*\s10$/)
    }
  })
})

describe('fitItems and fitText', () => {
  const items = [
    '0=start',
    '1=preflight',
    '2=create-waypoint',
    '3=wait-waypoint',
    '4=create-policies',
    '5=bind-waypoint',
    '6=enable-ambient',
    '7=remove-sidecar-injection',
  ]

  it('wraps a legend between items, never inside one that fits a line', () => {
    const text = fitItems(items, {width: 40})
    expect(widest(text)).toBeLessThanOrEqual(40)
    expect(text.split('\n').flatMap((l) => l.split('  '))).toEqual(items)
  })

  it('wraps notes at word boundaries; piped text is left as it is', () => {
    const note =
      'DENY-ALL: an L7 ALLOW matches nothing at ztunnel (only traffic the waypoint admits passes). L4-only: ztunnel enforces only the L4 part.'
    const wrapped = fitText(note, {width: 50})
    expect(widest(wrapped)).toBeLessThanOrEqual(50)
    expect(wrapped.replace(/\n/g, ' ')).toBe(note)
    expect(fitText(note, {width: Number.POSITIVE_INFINITY})).toBe(note)
    expect(fitItems(items, {width: Number.POSITIVE_INFINITY})).toBe(items.join('  '))
  })
})

describe('the Mermaid timeline of a namespace with many policies', () => {
  it('puts hazards of the same kind over the same steps on one bar, saying how many', () => {
    const snapshot = {
      namespace: 'big',
      rootNamespace: 'istio-system',
      target: {manifests: ['generated']},
      objects: generatedNamespace(40) as unknown as KubeObject[],
      missingKinds: [],
      findings: [],
    }
    const plan = buildPlan({
      inventory: buildInventory(snapshot, {waypointFor: 'service'}),
      snapshot,
      options: {rootNamespace: 'istio-system', waypointName: 'waypoint', waypointFor: 'service'},
      generator: 'test',
    })
    const applyHazards = plan.spec.hazards.filter((h) => h.phase === 'apply')
    expect(applyHazards.length).toBeGreaterThan(3)
    const section = renderTimelineMermaid(plan).split('section Hazards\n')[1]!
    const bars = section.split('\n').filter((l) => l.includes(' :'))
    expect(bars.length).toBeLessThan(applyHazards.length)
    expect(section).toMatch(/^ {2}\d+ policies \S+/m)
  })
})

describe('renderTable at 80 columns (census shape)', () => {
  const head = ['NAMESPACE', 'MODE', 'PODS (S/A/N)', 'OUTSIDE-MESH', 'SIDECAR-IN-AMBIENT', 'WAYPOINTS', 'PLANS']
  const rows = [
    ['bookinfo', 'sidecar', '6 (6/0/0)', '0', '0', '-', 'plans/bookinfo.yaml\n0/10 not-started\nnext: preflight'],
    ['istio-system', 'none', '5 (0/0/0, 5 control-plane)', '0', '0', '-', '-'],
    ['kube-node-lease', 'ambient', '0 (0/0/0)', '0', '0', 'waypoint', '-'],
  ]
  const text = renderTable(head, rows, plain, {width: 80, wide: false})

  it('keeps every word whole (issue 24 §1): a row with a long name runs past the edge rather than break it', () => {
    const cells = text.split('\n').flatMap((l) => l.trim().split(/\s{2,}/))
    for (const word of [
      'bookinfo',
      'sidecar',
      'istio-system',
      'kube-node-lease',
      'ambient',
      'waypoint',
      'plans/bookinfo.yaml',
    ])
      expect(cells).toContain(word)
    // The columns' longest words do not fit in 80 together: the rows run past the edge, by no more than that
    // takes (the plan file's path, the last column's longest word, ends the widest line).
    const row = text.split('\n').find((l) => l.includes('plans/bookinfo.yaml'))!
    expect(widest(text)).toBe(row.indexOf('plans/bookinfo.yaml') + 'plans/bookinfo.yaml'.length)
    expect(widest(text.split('\n').slice(0, 3).join('\n'))).toBeLessThanOrEqual(80)
    // Headers break after their hyphens, never inside a word.
    expect(text).toMatch(/SIDECAR-/)
    expect(text).not.toMatch(/SIDECA\n|AMBIEN\n/)
  })

  it('-o wide keeps every word of every cell (nothing cut)', () => {
    const wide = renderTable(head, rows, plain, {width: 80, wide: true})
    expect(wide).not.toContain('…')
    expect(wide.replace(/\s+/g, '')).toContain('next:preflight')
  })
})

describe('cell width', () => {
  it('is the length of plain ASCII and string-width elsewhere (wide, combining, emoji, ANSI codes, controls)', () => {
    for (const text of ['', 'Deployment/svc-1', 'a ~ b | {x: 1}', '\u001B[1mbold\u001B[22m', 'tab\there'])
      expect(cellWidth(text), JSON.stringify(text)).toBe(stringWidth(text))
    for (const text of ['sidecar → ambient', '日本語のサービス', 'é', 'e\u0301', '👍🏽 ok', '—'])
      expect(cellWidth(text), text).toBe(stringWidth(text))
    expect(cellWidth('日本')).toBe(4)
    expect(cellWidth('a\u00adb')).toBe(stringWidth('a\u00adb'))
    expect(cellWidth('e\u0301')).toBe(1)
  })

  it('lays a table of wide characters out by their columns, not their length', () => {
    const table = renderTable(
      ['NAME', 'NOTE'],
      [
        ['日本語', 'x'],
        ['abc', 'y'],
      ],
      plain,
      {width: Infinity, wide: false},
    )
    const [, first, second] = table.split('\n')
    expect(first!.indexOf('x') + 3).toBe(second!.indexOf('y')) // 3 wide characters are 6 columns, 3 more than 'abc'
  })

  it('takes the length for exactly the characters string-width gives one column', () => {
    let checked = 0
    for (let c = 0; c <= 0x2fff; c++) {
      const ch = String.fromCodePoint(c)
      if (!ONE_COLUMN_TEXT.test(ch)) continue
      expect(stringWidth(ch), `U+${c.toString(16)}`).toBe(1)
      checked++
    }
    expect(checked).toBeGreaterThan(200)
  })
})
