// Bounded input (issue 20 §7): manifests and plan files come from pull requests and GitOps repositories. A device
// (`--manifests /dev/zero`), a FIFO or a huge file must be refused before it is read, and a document nested or
// aliased without bound before it exhausts the stack or the heap. The limits are documented in docs/contract.md
// ("Untrusted input"); the size limit is overridable with MESH_MIGRATE_MAX_INPUT_BYTES.
import {closeSync, constants, fstatSync, openSync, readFileSync} from 'node:fs'

import {DEFAULT_MAX_INPUT_BYTES} from '../planner/input-limits.js'

export const MAX_INPUT_ENV = 'MESH_MIGRATE_MAX_INPUT_BYTES'

export function maxInputBytes(): number {
  const raw = process.env[MAX_INPUT_ENV]
  const n = raw === undefined || raw === '' ? NaN : Number(raw)
  return Number.isSafeInteger(n) && n > 0 ? n : DEFAULT_MAX_INPUT_BYTES
}

/** Why an input was refused before or while it was read. */
export class InputRefused extends Error {}

/**
 * A regular file's text, read through one descriptor (the checks and the read see the same file): anything else,
 * or a file over the limit, is refused with a message saying which limit.
 */
export function readBoundedFile(file: string): string {
  // Non-blocking: opening a FIFO for reading would otherwise wait for a writer, forever.
  const fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK)
  try {
    const stat = fstatSync(fd)
    if (stat.isDirectory()) {
      // As readFile reports it, so that callers keep their "is a directory" message.
      const error: NodeJS.ErrnoException = new Error(`EISDIR: ${file} is a directory`)
      error.code = 'EISDIR'
      throw error
    }
    if (!stat.isFile())
      throw new InputRefused(
        `${file} is not a regular file (${stat.isFIFO() ? 'a FIFO' : stat.isCharacterDevice() || stat.isBlockDevice() ? 'a device' : stat.isSocket() ? 'a socket' : 'not a file'}): only files are read`,
      )
    const limit = maxInputBytes()
    if (stat.size > limit)
      throw new InputRefused(
        `${file} is ${stat.size} bytes, over the input limit of ${limit} bytes (set ${MAX_INPUT_ENV} to raise it)`,
      )
    return readFileSync(fd, 'utf8')
  } finally {
    closeSync(fd)
  }
}
