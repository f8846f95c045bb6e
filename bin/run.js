#!/usr/bin/env node
// Production entry point: compiled commands from dist/ and the shipped oclif manifest.
import {existsSync, readFileSync} from 'node:fs'
import module, {createRequire} from 'node:module'
import os from 'node:os'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')

/**
 * `mesh-migrate --help`: loading oclif alone costs more than node itself (issue 11 §3 bounds --help at
 * 2× bare node), so the root help oclif rendered at build time (dist/root-help.txt, 80 columns, see
 * scripts/build.mjs) is printed as it is, when nothing could make oclif render it differently: the
 * width oclif would use is 80, no theme or user plugin is configured. Colour is oclif's own decision
 * (ansis), applied as oclif applies it (bold section headers). Anything else goes to oclif.
 */
function printPrerenderedRootHelp(argv) {
  if (argv.length !== 1 || (argv[0] !== '--help' && argv[0] !== '-h')) return false
  const env = process.env
  const width = env.OCLIF_COLUMNS || (!process.stdout.isTTY ? 80 : process.stdout.getWindowSize()[0] < 1 ? 80 : process.stdout.getWindowSize()[0])
  // oclif's settings for this CLI could change the help; where it keeps caches cannot.
  const setting = (k) => (k.startsWith('MESH_MIGRATE_') && k !== 'MESH_MIGRATE_CACHE_DIR') || k.startsWith('OCLIF_')
  if (Number(width) !== 80 || Object.keys(env).some(setting)) return false
  const home = env.HOME || os.homedir()
  const dataDir = path.join(env.XDG_DATA_HOME || path.join(home, '.local/share'), 'mesh-migrate')
  const configDir = path.join(env.XDG_CONFIG_HOME || path.join(home, '.config'), 'mesh-migrate')
  if (process.platform === 'win32' || existsSync(path.join(dataDir, 'package.json')) || existsSync(path.join(configDir, 'theme.json'))) return false
  let text
  try {
    text = readFileSync(path.join(root, 'dist/root-help.txt'), 'utf8')
  } catch {
    return false
  }
  const pjson = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'))
  const ansis = createRequire(createRequire(import.meta.url).resolve('@oclif/core/package.json'))('ansis')
  const userAgent = `${pjson.name}/${pjson.version} ${process.platform}-${process.arch} node-${process.version}`
  text = text.replace('{{userAgent}}', userAgent).replaceAll(/^([A-Z]+)$/gm, (header) => ansis.bold(header))
  process.stdout.write(text)
  return true
}

if (!printPrerenderedRootHelp(process.argv.slice(2))) {
  // oclif's check of its own engines loads all of semver (~50 files) on every run; npm checks ours (>=20.19).
  process.env.OCLIF_DISABLE_ENGINE_WARNING ??= '1'
  // Node keeps what V8 compiles of the bundle between runs (Node >= 22.1; as tsc, eslint and prettier do).
  module.enableCompileCache?.()
  // oclif and the commands, bundled by scripts/build.mjs.
  const {execute} = createRequire(import.meta.url)('../dist/cli.cjs')
  await execute({dir: import.meta.url})
}
