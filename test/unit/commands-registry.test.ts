// oclif finds the commands in src/main.ts's registry (package.json oclif.commands, explicit strategy): a file added
// to src/commands/ without its entry there would be a command no one can run.
import {readdirSync} from 'node:fs'
import path from 'node:path'

import {describe, expect, it} from 'vitest'

import {commands} from '../../src/main.js'
import {REPO_ROOT} from '../support/shared.js'

describe('the command registry', () => {
  it('has every command file of src/commands/, by its file name', () => {
    const files = readdirSync(path.join(REPO_ROOT, 'src/commands'))
      .filter((file) => file.endsWith('.ts'))
      .map((file) => file.slice(0, -'.ts'.length))
      .sort()
    // Object.keys does not run the getters: the commands stay unloaded, as in a run.
    expect(Object.keys(commands).sort()).toEqual(files)
  })

  it('gives each id the command of its own file', () => {
    for (const id of Object.keys(commands)) {
      const getter = Object.getOwnPropertyDescriptor(commands, id)!.get!.toString()
      const required = [...getter.matchAll(/require\((['"])([^'"]+)\1\)/g)].map((m) => m[2])
      expect(required, id).toEqual([`./commands/${id}.js`])
    }
  })
})
