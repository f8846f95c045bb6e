// Functions stay short (docs/architecture.md: "functions well under 120 lines"). Parses every file under src/
// with the TypeScript compiler API and lists each function, method, accessor, constructor or arrow function
// longer than MAX_LINES, counted from its first to its last line (comments and blank lines included, as a
// reader sees it).
import {readdir, readFile} from 'node:fs/promises'
import path from 'node:path'

import ts from 'typescript'
import {describe, expect, it} from 'vitest'

import {REPO_ROOT} from '../support/shared.js'

const MAX_LINES = 120

interface LongFunction {
  id: string
  at: string
  lines: number
}

type FunctionNode = ts.FunctionLikeDeclaration

function isFunction(node: ts.Node): node is FunctionNode {
  return (
    ts.isFunctionDeclaration(node) ||
    ts.isMethodDeclaration(node) ||
    ts.isConstructorDeclaration(node) ||
    ts.isGetAccessorDeclaration(node) ||
    ts.isSetAccessorDeclaration(node) ||
    ts.isArrowFunction(node) ||
    ts.isFunctionExpression(node)
  )
}

/** `name`, `Class.method`, or for an anonymous function the variable or property it is assigned to. */
function nameOf(node: FunctionNode): string {
  let own = node.name && !ts.isComputedPropertyName(node.name) ? node.name.getText() : undefined
  if (ts.isConstructorDeclaration(node)) own = 'constructor'
  const parent = node.parent
  if (!own && (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent)))
    own = parent.name.getText()
  const owner = ts.isClassLike(parent) ? parent.name?.getText() : undefined
  return `${owner ? `${owner}.` : ''}${own ?? '<anonymous>'}`
}

/** Every function with a body in a source file: its name, first line (1-based) and length in lines. */
function functionsIn(source: ts.SourceFile): {name: string; line: number; lines: number}[] {
  const found: {name: string; line: number; lines: number}[] = []
  const visit = (node: ts.Node): void => {
    if (isFunction(node) && node.body) {
      const first = source.getLineAndCharacterOfPosition(node.getStart(source)).line
      const last = source.getLineAndCharacterOfPosition(node.getEnd()).line
      found.push({name: nameOf(node), line: first + 1, lines: last - first + 1})
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
  return found
}

async function longFunctions(): Promise<LongFunction[]> {
  const dir = path.join(REPO_ROOT, 'src')
  const files = (await readdir(dir, {recursive: true})).filter((f) => f.endsWith('.ts')).sort()
  const found: LongFunction[] = []
  for (const file of files) {
    const rel = `src/${file.split(path.sep).join('/')}`
    const source = ts.createSourceFile(rel, await readFile(path.join(dir, file), 'utf8'), ts.ScriptTarget.Latest, true)
    for (const f of functionsIn(source))
      if (f.lines > MAX_LINES) found.push({id: `${rel} ${f.name}`, at: `${rel}:${f.line}`, lines: f.lines})
  }
  return found
}

describe(`functions in src/ are at most ${MAX_LINES} lines`, () => {
  it('no function is longer (as formatted by prettier, which CI checks)', async () => {
    const tooLong = (await longFunctions()).map((f) => `${f.at} ${f.id.split(' ')[1]}: ${f.lines} lines`)
    expect(tooLong, `split these functions (at most ${MAX_LINES} lines each)`).toEqual([])
  })

  it('the measure sees functions of every form, by the name a reader looks for', () => {
    const body = (n: number) => Array.from({length: n}, (_, i) => `  const v${i} = ${i}`).join('\n')
    const text = [
      `function plain() {\n${body(MAX_LINES - 1)}\n}`,
      `export const arrow = async () => {\n${body(MAX_LINES)}\n}`,
      `class Context {\n  workload() {\n${body(MAX_LINES)}\n  }\n}`,
    ].join('\n')
    const seen = functionsIn(ts.createSourceFile('x.ts', text, ts.ScriptTarget.Latest, true)).map(
      (f) => `${f.name} ${f.lines}`,
    )
    expect(seen).toEqual([`plain ${MAX_LINES + 1}`, `arrow ${MAX_LINES + 2}`, `Context.workload ${MAX_LINES + 2}`])
  })
})
