// Plan files on disk. Every write is atomic (temp file in the same directory, fsync, rename, fsync
// of the directory), so a crash or Ctrl+C at any moment leaves either the old or the new plan,
// never a half-written one (SPEC §7 "Crash safety").
import {randomBytes} from 'node:crypto'
import {open, readdir, rename, rm, stat} from 'node:fs/promises'
import path from 'node:path'

import {ExitCode} from '../exit-codes.js'
import {InvalidPlanError, UsageError, UserError} from '../errors.js'
import {InputRefused, readBoundedFile} from '../sources/input-limits.js'
import {isNamespaceName, namespaceNameProblem} from '../planner/names.js'
import {FLEET_FILE} from '../planner/plan-types.js'

const TMP_FILE = /^\..+\.tmp-(\d+)-[0-9a-f]{8}$/
const prepared = new Set<string>()

/** Whether a process with this PID runs on this host (EPERM: it does, as another user). */
function processRuns(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/**
 * Once per folder and run, before the first write into it (issue 20 §8): temp files left by killed runs (their
 * process is gone) are removed, and a folder anyone may write to is warned about — anyone could then replace a
 * reviewed plan between review and apply.
 */
async function prepareFolder(dir: string, warn: (message: string) => void): Promise<void> {
  if (prepared.has(dir)) return
  prepared.add(dir)
  const info = await stat(dir).catch(() => undefined)
  // World-writable without the sticky bit: anyone can replace (rename over) a plan in it.
  if (info && (info.mode & 0o002) !== 0 && (info.mode & 0o1000) === 0)
    warn(
      `Warning: ${dir}/ is writable by every user of this machine: anyone can replace a plan in it between review and apply. Restrict it: chmod o-w ${dir}`,
    )
  const entries = await readdir(dir).catch(() => [] as string[])
  for (const name of entries) {
    const pid = Number(TMP_FILE.exec(name)?.[1])
    if (pid > 0 && pid !== process.pid && !processRuns(pid)) await rm(path.join(dir, name), {force: true})
  }
}

/** `warn`: a line for the user (stderr), the first time a folder anyone may write to is written into. */
export async function writeFileAtomic(file: string, text: string, warn: (message: string) => void): Promise<void> {
  const dir = path.dirname(file)
  await prepareFolder(dir, warn)
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

/** A plan file (or other file the tool reads back), bounded as all input is (src/sources/input-limits.ts). */
export async function readTextFile(file: string, what = 'file'): Promise<string> {
  try {
    return readBoundedFile(file)
  } catch (error) {
    // A plan file refused for its size or type is an invalid plan like any other (exit 4, its problems listed):
    // apply, rollback and validate report it the same way.
    if (error instanceof InputRefused && what === 'plan file')
      throw new InvalidPlanError(file, [{path: '', message: error.message}])
    if (error instanceof InputRefused)
      throw new UserError(`${what} ${error.message}`, {
        exitCode: ExitCode.Usage,
        suggestion:
          'Plan files are written by the tool: restore the reviewed file, or regenerate it with `mesh-migrate plan NAMESPACE`.',
      })
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
  const info = await stat(arg).catch(() => undefined)
  if (info && !info.isDirectory())
    throw new UserError(`${arg} is not a regular file (a device, FIFO or socket): only plan files are read`, {
      exitCode: ExitCode.Usage,
      suggestion: 'Pass a plan file path, or a namespace name for plans/<namespace>.yaml.',
    })
  const isDirectory = info?.isDirectory() ?? false
  throw new UserError(isDirectory ? `${arg} is a directory, not a plan file` : `plan file ${arg} does not exist`, {
    suggestion: 'Pass a plan file path, or a namespace name for plans/<namespace>.yaml.',
  })
}

/**
 * A plan is for one namespace (issue 19 §4): PLAN given as a namespace name (resolved to plans/<namespace>.yaml) must
 * name the plan's own namespace. The problem, or undefined; a path given as PLAN names no namespace.
 */
export function namespaceMismatch(arg: string | undefined, file: string, planNamespace: string): string | undefined {
  if (arg === undefined || arg === file || !isNamespaceName(arg) || arg === planNamespace) return undefined
  return `${file} is the plan of namespace ${planNamespace}, not of namespace ${arg}: a plan acts on its own namespace only`
}

/** The plan file's name says another namespace than the plan inside (plans/default.yaml holding bookinfo's plan). */
export function fileNameMismatch(file: string, planNamespace: string): string | undefined {
  const base = path.basename(file).replace(/\.ya?ml$/, '')
  if (!isNamespaceName(base) || base === planNamespace) return undefined
  return `${file} is named for namespace ${base} but holds the plan of namespace ${planNamespace}`
}
