// The session apply, rollback, status and unlock run in (issue 12, "commands as options over a session"): find the
// plan and load it (schema, safety and digest are checked on load: exit 4), connect to the cluster once, check it
// is the plan's cluster, take the namespace's lock, turn Ctrl+C into a recorded interruption, and release the
// lock whatever happens. The commands say only what to do inside it.
// Heavy modules stay out of --help: the kube client is imported when connecting (connectCluster), the engine
// only as a type.
import path from 'node:path'

import type {ExecutionContext} from '../executor/engine.js'
import {kubernetesIdentity, NamespaceLock, whoAmI} from '../executor/lock.js'
import {checkOwner} from '../executor/ownership.js'
import {PlanState} from '../executor/plan-state.js'
import {ClusterRecord} from '../executor/record-store.js'
import {LockHeldError, UserError} from '../errors.js'
import {namespaceMismatch} from '../executor/plan-store.js'
import {specDigest} from '../plan/planfile.js'
import {type MigrationRecord, mergeRecord, recordedPlan, reviewedDigest} from '../plan/record.js'
import {InterruptedError} from '../executor/verify.js'
import type {KubeClient} from '../kube/types.js'
import type {Io} from '../ui/io.js'
import {ExitCode} from '../exit-codes.js'
import {
  checkTargetCluster,
  type ClusterFlags,
  connectCluster,
  interruptHandler,
  parseDuration,
  resolvePlanFile,
} from './plan-commands.js'
import {noNamespaceInContext} from './flags.js'

/**
 * The kube client a command works with, connected when first needed: to the current context's cluster (from the
 * flags; "waiting" notes on `stderr`), or one given ready (a unit test's in-memory client).
 */
export class ClusterConnection {
  private client?: Promise<KubeClient>

  private constructor(
    private readonly open: () => Promise<KubeClient>,
    /** The kubeconfig flags it was made from (none for a client given as it is): what a missing namespace is explained by. */
    readonly flags?: ClusterFlags,
  ) {}

  /** The current context's cluster (or --kubeconfig/--context), with its "waiting" notes on `io`'s stderr. */
  static fromFlags(flags: ClusterFlags, io: Pick<Io, 'stderr' | 'env'>): ClusterConnection {
    return new ClusterConnection(() => connectCluster(flags, io), flags)
  }

  /** A connection that is `client`, already made. */
  static of(client: KubeClient): ClusterConnection {
    return new ClusterConnection(() => Promise.resolve(client))
  }

  connect(): Promise<KubeClient> {
    this.client ??= this.open()
    return this.client
  }
}

/** How to hold the namespace while writing: the lock (none for a dry run, which writes nothing) and how long to wait for it. */
export interface LockOptions {
  /** What the lock's holder is doing, shown to other operators: `apply plans/shop.yaml`. */
  command: string
  /** `apply` or `roll back`, for the refusal when another plan owns the namespace. */
  verb: 'apply' | 'roll back'
  dryRun: boolean
  /** How long each step waits for its verification. */
  timeoutMs: number
  lockTimeoutMs: number
  /** The --lock-timeout value as typed, for the waiting message. */
  lockTimeout: string
  /** Read the plan file again once the lock is ours: the holder we waited for may have changed the record. */
  reload?: boolean
  /** --take-over: this plan replaces the one that owns the namespace (a reviewed re-plan). */
  takeOver: boolean
}

/** The flags apply and rollback share for writing: --dry-run, --timeout and --lock-timeout. */
export interface WriteFlags {
  'dry-run': 'none' | 'server'
  timeout: string
  'lock-timeout': string
  'take-over': boolean
}

/** How `apply` or `rollback` of `file` holds the namespace, from its flags. */
export function lockOptions(command: 'apply' | 'rollback', file: string, flags: WriteFlags): LockOptions {
  return {
    command: `${command} ${file}`,
    verb: command === 'apply' ? 'apply' : 'roll back',
    dryRun: flags['dry-run'] === 'server',
    timeoutMs: parseDuration(flags.timeout, '--timeout'),
    lockTimeoutMs: parseDuration(flags['lock-timeout'], '--lock-timeout'),
    lockTimeout: flags['lock-timeout'],
    // Under the lock the record may have changed (the holder apply waited for): read it again.
    reload: command === 'apply',
    takeOver: flags['take-over'],
  }
}

export class PlanSession {
  private constructor(
    readonly file: string,
    public state: PlanState,
    readonly cluster: ClusterConnection,
    private readonly note: (message: string) => void,
  ) {}

  /**
   * Resolve PLAN (a path, a namespace, or the one plan under plans/ that fits) and load it. `planArg` comes from
   * planOrContext: the argument, -n, or the context's namespace.
   */
  static async open(
    planArg: string | undefined,
    opts: {unfinishedOnly: boolean; cluster: ClusterConnection; note: (message: string) => void; allowEdited?: boolean},
  ): Promise<PlanSession> {
    const file = await resolvePlanFile(planArg, {
      unfinishedOnly: opts.unfinishedOnly,
      ...(planArg === undefined && opts.cluster.flags
        ? {noNamespace: await noNamespaceInContext(opts.cluster.flags)}
        : {}),
    })
    const session = await PlanSession.load(file, opts.cluster, opts.note, {allowEdited: opts.allowEdited ?? false})
    session.checkNamespace(planArg)
    return session
  }

  /** PLAN given as a namespace must be the plan's namespace (exit 4, naming both): nothing is read or written. */
  checkNamespace(planArg: string | undefined): void {
    const problem = namespaceMismatch(planArg, this.file, this.namespace)
    if (problem)
      throw new UserError(problem, {
        exitCode: ExitCode.Invalid,
        suggestion: `Use the plan of namespace ${planArg} (\`mesh-migrate plan ${planArg}\` makes one), or name this one by its namespace: \`${this.namespace}\` (rename the file to plans/${this.namespace}.yaml).`,
      })
  }

  /**
   * A plan file already chosen, sharing a connection with other plans' sessions (status lists several).
   * `allowEdited`: a plan whose spec was edited after its first apply is loaded (its problems said as a warning) for
   * what works from the cluster's record: status, rollback (issue 19 §5).
   */
  static async load(
    file: string,
    cluster: ClusterConnection,
    note: (message: string) => void,
    opts: {allowEdited?: boolean} = {},
  ): Promise<PlanSession> {
    const state = await PlanState.load(file, {...opts, warn: note})
    if (state.edited)
      note(
        `Warning: ${file} is not a valid plan: ${state.edited.map((p) => `${p.path ? `${p.path}: ` : ''}${p.message}`).join('; ')}. Its progress is read from the record in the cluster (or its status); it cannot be applied.`,
      )
    return new PlanSession(file, state, cluster, note)
  }

  get namespace(): string {
    return this.state.namespace
  }

  private checked?: Promise<KubeClient>
  private readonly noted = new Set<string>()

  /** The record is read again under the lock: what it said about the file is said once. */
  private noteOnce(message: string): void {
    if (this.noted.has(message)) return
    this.noted.add(message)
    this.note(message)
  }

  /** Connect, and check that the current context is the cluster the plan was made for (exit 3 when not); once. */
  connectToPlanCluster(allowOtherCluster: boolean, say: (message: string) => void = this.note): Promise<KubeClient> {
    this.checked ??= this.cluster.connect().then(async (client) => {
      await checkTargetCluster(client, this.state, allowOtherCluster, say)
      return client
    })
    return this.checked
  }

  /**
   * Read the plan's record in the cluster and make it the plan's status (src/plan/record.ts, mergeRecord): the
   * cluster is the truth, the file's status a copy. Says where they disagreed; another plan's record is refused
   * (exit 5). From here on every step transition is written to the cluster first (unless `readOnly`). A plan edited
   * after its first apply takes the steps that ran from the record, or is refused (exit 4) unless only its progress
   * is wanted (`progressOnly`: status).
   */
  async adoptRecord(client: KubeClient, opts: {readOnly?: boolean; progressOnly?: boolean} = {}): Promise<void> {
    const store = ClusterRecord.of(client, this.state.plan)
    const record = await store.read()
    if (this.state.edited && record?.plan.specDigest === this.state.plan.status?.specDigest)
      return this.adoptEditedRecord(store, record!, opts)
    if (this.state.edited && !opts.progressOnly) refuseEditedWithoutRecord(this.state, store.ref, record)
    const merged = mergeRecord(this.state.plan, reviewedDigest(this.state.plan), record)
    if (merged.use === 'other-plan') {
      const {plan, updated} = merged.record
      if (path.normalize(plan.file) === path.normalize(this.file))
        // The same file with another spec: edited after the first apply, or re-planned (issue 20 §2: a plan's identity
        // is its digest, never its path).
        throw new LockHeldError(
          `${this.file} is not the plan first applied to namespace ${this.namespace}: its spec digest is ${specDigest(this.state.plan).slice(0, 19)}…, the record in the cluster (ConfigMap ${store.ref.namespace}/${store.ref.name}, last written by ${updated.by} at ${updated.at}) is ${plan.specDigest.slice(0, 19)}…; the spec was edited after the first apply, or re-planned`,
          `Restore the reviewed plan (\`git checkout -- ${this.file}\`) and use that; or re-plan from the record with \`mesh-migrate plan ${this.namespace} --keep-progress\` and review that.`,
        )
      throw new LockHeldError(
        `namespace ${this.namespace} is being migrated by another plan: ${plan.file} (its record in the cluster, ConfigMap ${store.ref.namespace}/${store.ref.name}: digest ${plan.specDigest.slice(0, 19)}…, last written by ${updated.by} at ${updated.at}); ${this.file} is a different plan (digest ${specDigest(this.state.plan).slice(0, 19)}…)`,
        `Finish that plan (\`mesh-migrate apply ${plan.file}\`) or undo it (\`mesh-migrate rollback ${plan.file} --confirm ${this.namespace}\`) from the reviewed copy of it, then use ${this.file}; or re-plan from it with \`mesh-migrate plan ${this.namespace} --keep-progress\`.`,
      )
    }
    if (merged.use === 'record') {
      if (merged.differences.length > 0)
        this.noteOnce(
          `${this.file}: its status differs from the record in the cluster (ConfigMap ${store.ref.namespace}/${store.ref.name}); using the cluster's:\n${merged.differences.map((d) => `  - ${d}`).join('\n')}`,
        )
      this.state.plan.status = merged.status
    } else if (merged.use === 'file' && merged.note) this.noteOnce(`${this.file}: ${merged.note}.`)
    if (!opts.readOnly) this.state.cluster = store
  }

  /**
   * A plan edited after its first apply, whose reviewed spec the cluster's record is of (issue 19 §5): the steps that
   * ran are the record's (`appliedSteps`, with the undo data each step observed), its progress the record's; the
   * file keeps its edited spec (only its status is rewritten). Without those steps in the record a rollback is
   * refused (exit 4); status still shows the record's progress.
   */
  private adoptEditedRecord(
    store: ClusterRecord,
    record: MigrationRecord,
    opts: {readOnly?: boolean; progressOnly?: boolean},
  ): void {
    const {plan, problems} = recordedPlan(this.state.plan, record)
    if (problems.length > 0 && !opts.progressOnly)
      throw new UserError(
        `${this.file} was edited after its first apply, and its rollback cannot be taken from the record in the cluster (ConfigMap ${store.ref.namespace}/${store.ref.name}):\n${problems.map((p) => `  - ${p}`).join('\n')}`,
        {
          exitCode: ExitCode.Invalid,
          suggestion: `Restore the reviewed plan (\`git checkout -- ${this.file}\`), then \`mesh-migrate rollback ${this.file} --confirm ${this.namespace}\`.`,
        },
      )
    if (problems.length > 0) {
      this.noteOnce(`${this.file}: the record in the cluster is used for progress only: ${problems.join('; ')}`)
      this.state.plan.status = {...this.state.plan.status!, steps: record.steps}
      return
    }
    this.noteOnce(
      `${this.file}: using the record in the cluster (ConfigMap ${store.ref.namespace}/${store.ref.name}, last written by ${record.updated.by} at ${record.updated.at}): its progress, and each step as it ran.`,
    )
    this.state.fileSpec ??= this.state.plan.spec
    this.state.plan = plan
    if (!opts.readOnly) this.state.cluster = store
  }

  /**
   * Run `body` holding the namespace: Ctrl+C asks it to stop after the request in flight; the lock is taken (and
   * the plan file re-read when asked), another plan owning the namespace is refused before any write, and the
   * caller's identities are recorded. An interruption is reported with `interrupted` and exit 130 and returns
   * false; the lock is released in every case. Ctrl+C comes from `io`, unless `signal` is given: a Ctrl+C handled by
   * the caller (the fleet's one handler for every namespace it runs) instead of one of the session's own.
   */
  async holding(
    client: KubeClient,
    opts: LockOptions,
    interrupted: string,
    body: (ctx: ExecutionContext) => Promise<void>,
    {io, signal}: {io: Io; signal?: AbortSignal | undefined},
  ): Promise<boolean> {
    const interrupt = signal ? {signal, dispose: () => undefined} : interruptHandler(io, this.note)
    let lock: NamespaceLock | undefined
    try {
      if (!opts.dryRun) {
        lock = await this.acquire(client, opts)
        if (opts.reload) this.state = await PlanState.load(this.file, {warn: this.note})
      }
      // Under the lock: the record as the holder before us left it (a dry run only reads it).
      await this.adoptRecord(client, {readOnly: opts.dryRun})
      // Another plan's objects carry the same plan name: never write over what another plan applied.
      await checkOwner(client, this.state, opts.verb, opts.takeOver)
      this.state.localUser = whoAmI()
      // A dry run records nothing, so it does not ask the server who we are.
      const who = (opts.dryRun ? undefined : await kubernetesIdentity(client)) ?? this.state.localUser
      await body({
        // Every write checks the lock right before it is sent (fencing): a holder whose lock was broken stops.
        client: lock ? lock.fenced(client) : client,
        state: this.state,
        who,
        dryRun: opts.dryRun,
        timeoutMs: opts.timeoutMs,
        signal: interrupt.signal,
        takeOver: opts.takeOver,
        ...(lock ? {lock} : {}),
      })
      return true
    } catch (error) {
      if (!(error instanceof InterruptedError)) throw error
      await lock?.release().catch(() => undefined)
      lock = undefined
      io.setExitCode(ExitCode.Interrupted)
      this.note(interrupted)
      return false
    } finally {
      interrupt.dispose()
      await lock?.release().catch(() => undefined)
    }
  }

  private acquire(client: KubeClient, opts: LockOptions): Promise<NamespaceLock> {
    return NamespaceLock.acquire(client, {
      namespace: this.namespace,
      command: opts.command,
      plan: this.file,
      timeoutMs: opts.lockTimeoutMs,
      onWait: (holder) =>
        this.note(`Namespace ${this.namespace} is locked by ${holder}; waiting up to ${opts.lockTimeout}…`),
      onTakeover: (holder) => this.note(`Taking over an expired lock left by ${holder}.`),
    })
  }
}

/** Rollback of a plan edited after its first apply needs the cluster's record of the reviewed plan (exit 4). */
function refuseEditedWithoutRecord(
  state: PlanState,
  ref: {namespace?: string; name: string},
  record?: MigrationRecord,
): void {
  const why = record
    ? `the record in the cluster (ConfigMap ${ref.namespace}/${ref.name}) is of another plan (${record.plan.file}, digest ${record.plan.specDigest.slice(0, 19)}…)`
    : `there is no record of it in the cluster (ConfigMap ${ref.namespace}/${ref.name})`
  throw new UserError(
    `${state.file} was edited after its first apply, and ${why}: what its steps did cannot be undone from an edited spec`,
    {
      exitCode: ExitCode.Invalid,
      suggestion: `Restore the reviewed plan (\`git checkout -- ${state.file}\`), then \`mesh-migrate rollback ${state.file} --confirm ${state.namespace}\`.`,
    },
  )
}
