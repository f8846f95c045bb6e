// The build bundles our code with yaml and @oclif/core (scripts/build.mjs). What a dynamic import of a bundled
// CommonJS package gives depends on esbuild's interop (the earlier ES-module bundle gave only the default export:
// `const {stringify} = await import('yaml')` was undefined once built, while it worked from src/ under tsx), and
// the bundle evaluates them anyway: so src/ imports those packages statically.
import {readdir, readFile} from 'node:fs/promises'
import path from 'node:path'

import {describe, expect, it} from 'vitest'

import {REPO_ROOT} from '../support/shared.js'

const BUNDLED_COMMONJS = ['yaml', '@oclif/core']

async function sourceFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, {withFileTypes: true})
  const nested = await Promise.all(
    entries.map((e) => (e.isDirectory() ? sourceFiles(path.join(dir, e.name)) : [path.join(dir, e.name)])),
  )
  return nested.flat().filter((f) => f.endsWith('.ts'))
}

describe('bundled CommonJS packages are imported statically', () => {
  it('no dynamic import() of yaml or @oclif/core in src/', async () => {
    const offenders: string[] = []
    for (const file of await sourceFiles(path.join(REPO_ROOT, 'src'))) {
      const text = await readFile(file, 'utf8')
      for (const name of BUNDLED_COMMONJS) {
        const pattern = new RegExp(`(?<!typeof )import\\(\\s*['"]${name.replace('/', '\\/')}(\\/[^'"]*)?['"]\\s*\\)`)
        if (pattern.test(text)) offenders.push(`${path.relative(REPO_ROOT, file)}: import('${name}')`)
      }
    }
    expect(offenders).toEqual([])
  })
})
