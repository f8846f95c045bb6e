// Access to ../shared/ (design docs and upstream fixtures). A user's fresh clone has no ../shared/:
// tests that need it skip, and say so once, instead of failing.
import {existsSync} from 'node:fs'
import path from 'node:path'
import {fileURLToPath} from 'node:url'
import {describe} from 'vitest'

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
export const SHARED_DIR = path.resolve(REPO_ROOT, '../shared')
export const UPSTREAM_DIR = path.join(SHARED_DIR, 'fixtures/upstream')
export const CORPUS_DIR = path.join(UPSTREAM_DIR, 'corpus')
export const CRDS_DIR = path.join(UPSTREAM_DIR, 'crds')

export const hasShared = existsSync(UPSTREAM_DIR)

let noticeShown = false
function notice(what: string): void {
  if (noticeShown) return
  noticeShown = true
  process.stderr.write(
    `\n[mesh-migrate tests] ${SHARED_DIR} is not present: skipping tests that need the upstream fixtures (${what} and others).\n`,
  )
}

/** `describe` that skips, with a visible notice, when ../shared/ is absent. */
export function describeWithShared(name: string, fn: () => void): void {
  if (hasShared) {
    describe(name, fn)
  } else {
    notice(name)
    describe.skip(`${name} (needs ../shared/)`, fn)
  }
}

export function upstream(...parts: string[]): string {
  return path.join(UPSTREAM_DIR, ...parts)
}
