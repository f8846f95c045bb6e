#!/usr/bin/env node
// kubectl plugin entry point: with this file on PATH, `kubectl mesh-migrate plan NS` runs it (kubectl
// maps "-" in the command to "_" in the file name). Same CLI as bin/run.js; help and examples say
// "kubectl mesh-migrate" so that what they show can be pasted.
import {readFileSync} from 'node:fs'
import module, {createRequire} from 'node:module'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
// Node keeps what V8 compiles of the bundle between runs (Node >= 22.1), as in bin/run.js.
module.enableCompileCache?.()
// oclif and the commands, bundled by scripts/build.mjs.
const {flush, handle, run} = createRequire(import.meta.url)('../dist/cli.cjs')
const pjson = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'))
try {
  await run(process.argv.slice(2), {root, pjson: {...pjson, oclif: {...pjson.oclif, bin: 'kubectl mesh-migrate'}}})
  await flush()
} catch (error) {
  await handle(error)
}
