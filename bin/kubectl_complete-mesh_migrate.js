#!/usr/bin/env node
// kubectl's plugin completion (kubectl 1.26+): with this on PATH as kubectl_complete-mesh_migrate, `kubectl
// mesh-migrate <TAB>` runs it with the words typed after the plugin's name, and reads candidates in cobra's
// __complete format, which is what `mesh-migrate __complete` prints.
import {createRequire} from 'node:module'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const {flush, handle, run} = createRequire(import.meta.url)('../dist/cli.cjs')
try {
  await run(['__complete', ...process.argv.slice(2)], root)
  await flush()
} catch (error) {
  await handle(error)
}
