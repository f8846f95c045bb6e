// Plan files on disk. Every write is atomic (temp file in the same directory, fsync, rename, fsync
// of the directory), so a crash or Ctrl+C at any moment leaves either the old or the new plan,
// never a half-written one (SPEC §7 "Crash safety").
import {randomBytes} from 'node:crypto'
import {open, readdir, readFile, rename, rm, stat} from 'node:fs/promises'
import path from 'node:path'

import {UsageError, UserError} from '../errors.js'
import {isNamespaceName, namespaceNameProblem} from '../planner/names.js'
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

/** Whether `file` is inside `dir` (after resolving `..`): where a name taken from input may put a file. */
export function isInside(dir: string, file: string): boolean {
  const relative = path.relative(path.resolve(dir), path.resolve(file))
  return relative !== '' && !relative.startsWith('..') && !path.isAbsolute(relative)
}

/**
 * plans/<namespace>.yaml. The namespace comes from input (an argument, a manifest, a cluster): a name that is
 * not a namespace name, or a path that would leave plans/, is refused before it becomes a file (issue 20 §1).
 */
export function defaultPlanPath(namespace: string, plansDir = PLANS_DIR): string {
  const problem = namespaceNameProblem(namespace)
  const file = path.join(plansDir, `${namespace}.yaml`)
  if (problem || !isInside(plansDir, file))
    throw new UsageError(
      `namespace ${problem ?? JSON.stringify(namespace)}: no plan file is made for it`,
      'Namespace names are RFC 1123 labels (kubectl get namespaces lists them).',
    )
  return file
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
  if (isNamespaceName(arg)) {
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
