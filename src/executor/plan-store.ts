// Plan files on disk. Every write is atomic (temp file in the same directory, fsync, rename, fsync
// of the directory), so a crash or Ctrl+C at any moment leaves either the old or the new plan,
// never a half-written one (SPEC §7 "Crash safety").
import {randomBytes} from 'node:crypto'
import {open, readdir, readFile, rename, rm, stat} from 'node:fs/promises'
import path from 'node:path'

import {UserError} from '../errors.js'
import {FLEET_FILE} from '../planner/plan-types.js'

export async function writeFileAtomic(file: string, text: string): Promise<void> {
  const dir = path.dirname(file)
  const tmp = path.join(dir, `.${path.basename(file)}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`)
  const handle = await open(tmp, 'w', 0o644)
  try {
    await handle.writeFile(text, 'utf8')
    await handle.sync()
  } finally {
    await handle.close()
  }
  try {
    await rename(tmp, file)
  } catch (error) {
    await rm(tmp, {force: true})
    throw error
  }
  // The rename is durable only once the directory entry is on disk.
  const dirHandle = await open(dir, 'r').catch(() => undefined)
  if (dirHandle) {
    await dirHandle.sync().catch(() => undefined)
    await dirHandle.close()
  }
}

export async function readTextFile(file: string, what = 'file'): Promise<string> {
  try {
    return await readFile(file, 'utf8')
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'ENOENT')
      throw new UserError(`${what} ${file} does not exist`, {
        suggestion: 'Check the path, or create the plan with `mesh-migrate plan NAMESPACE`.',
      })
    if (code === 'EISDIR') throw new UserError(`${file} is a directory, not a ${what}`)
    if (code === 'EACCES') throw new UserError(`cannot read ${file}: permission denied`)
    throw error
  }
}

export const PLANS_DIR = 'plans'

const NAMESPACE_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/

/** plans/<namespace>.yaml */
export function defaultPlanPath(namespace: string, plansDir = PLANS_DIR): string {
  return path.join(plansDir, `${namespace}.yaml`)
}

/** The `plan` command that re-plans into `file` (with --out when it is not the namespace's default plan file). */
export function replanCommand(namespace: string, file: string, flags = ''): string {
  const out = path.normalize(file) === path.normalize(defaultPlanPath(namespace)) ? '' : ` --out ${file}`
  return `mesh-migrate plan ${namespace}${out}${flags ? ` ${flags}` : ''}`
}

/** The plan files directly under plans/ (plans/examples/ and other sub-folders are not live plans). */
export async function listPlanFiles(plansDir = PLANS_DIR): Promise<string[]> {
  const entries = await readdir(plansDir, {withFileTypes: true}).catch(() => [])
  return (
    entries
      // plans/fleet.yaml is the fleet overview (plan -A), not a namespace's plan.
      .filter((e) => e.isFile() && /\.ya?ml$/.test(e.name) && !e.name.startsWith('.') && e.name !== FLEET_FILE)
      .map((e) => path.join(plansDir, e.name))
      .sort()
  )
}

/**
 * SPEC §2: PLAN is a path, or a namespace name meaning plans/<namespace>.yaml. Existing paths win,
 * so a file called like a namespace in the working directory is still found.
 */
export async function resolvePlanArg(arg: string, plansDir = PLANS_DIR): Promise<string> {
  // A regular file only: a directory called like the namespace (a kustomize base, say) must not shadow plans/<ns>.yaml.
  const exists = async (p: string) =>
    await stat(p)
      .then((s) => s.isFile())
      .catch(() => false)
  if (await exists(arg)) return arg
  if (NAMESPACE_NAME.test(arg)) {
    const candidate = defaultPlanPath(arg, plansDir)
    if (await exists(candidate)) return candidate
    throw new UserError(`no plan for namespace "${arg}": ${candidate} does not exist`, {
      suggestion: `Create it with \`mesh-migrate plan ${arg}\`, or pass the path of a plan file.`,
    })
  }
  const isDirectory = await stat(arg)
    .then((s) => s.isDirectory())
    .catch(() => false)
  throw new UserError(isDirectory ? `${arg} is a directory, not a plan file` : `plan file ${arg} does not exist`, {
    suggestion: 'Pass a plan file path, or a namespace name for plans/<namespace>.yaml.',
  })
}

/**
 * A plan is for one namespace (issue 19 §4): PLAN given as a namespace name (resolved to plans/<namespace>.yaml) must
 * name the plan's own namespace. The problem, or undefined; a path given as PLAN names no namespace.
 */
export function namespaceMismatch(arg: string | undefined, file: string, planNamespace: string): string | undefined {
  if (arg === undefined || arg === file || !NAMESPACE_NAME.test(arg) || arg === planNamespace) return undefined
  return `${file} is the plan of namespace ${planNamespace}, not of namespace ${arg}: a plan acts on its own namespace only`
}

/** The plan file's name says another namespace than the plan inside (plans/default.yaml holding bookinfo's plan). */
export function fileNameMismatch(file: string, planNamespace: string): string | undefined {
  const base = path.basename(file).replace(/\.ya?ml$/, '')
  if (!NAMESPACE_NAME.test(base) || base === planNamespace) return undefined
  return `${file} is named for namespace ${base} but holds the plan of namespace ${planNamespace}`
}
