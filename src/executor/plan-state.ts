// The plan file as the record of execution: load and check it, and write each state change
// atomically (status only; spec is never rewritten by apply/rollback).
import {InvalidPlanError, UserError} from '../errors.js'
import type {
  FleetOrderOverride,
  MigrationPlan,
  PlanProblem,
  PlanStep,
  StepPhase,
  StepStatus,
} from '../planner/plan-types.js'
import {checkPlanText, renderPlanFile, specDigest} from '../plan/planfile.js'
import {isEditedAfterApply} from '../plan/record.js'
import {readTextFile, writeFileAtomic} from './plan-store.js'

export class PlanState {
  /** Recorded with every step next to `by` (the Kubernetes identity): who ran the command, where. */
  localUser?: string
  /**
   * The plan's record in the cluster (record-store.ts), attached once it has been read and merged
   * (PlanSession.adoptRecord): every step transition is written there before the plan file.
   */
  cluster?: {write(plan: MigrationPlan, file: string, by: string): Promise<void>}

  /**
   * The spec the plan file holds when it is not the spec that runs (a plan edited after its first apply, rolled back
   * from the cluster's record): the file keeps it, only its status is rewritten.
   */
  fileSpec?: MigrationPlan['spec']

  private constructor(
    readonly file: string,
    public plan: MigrationPlan,
    /** Warnings about the plan's folder when the file is written (the command's stderr). */
    private readonly warn: (message: string) => void,
    /** `allowEdited`: the file's problems when its spec was edited after the first apply (issue 19 §5). */
    readonly edited?: PlanProblem[],
  ) {}

  /**
   * Read and check a plan (schema, safety, digest): anything wrong is exit 4 before any write. `allowEdited`: a plan
   * whose spec was edited after its first apply is still loaded (status, show, rollback and plan --keep-progress work
   * from the cluster's record), its problems kept in `edited`. `warn`: where a warning about the plan's folder goes
   * when the state is saved (a state only read, by completion or preflight --plan, is never saved).
   */
  static async load(
    file: string,
    opts: {allowEdited?: boolean; warn?: (message: string) => void} = {},
  ): Promise<PlanState> {
    const warn = opts.warn ?? (() => undefined)
    const text = await readTextFile(file, 'plan file')
    const checked = checkPlanText(text)
    if (opts.allowEdited && checked.problems.length > 0 && isEditedAfterApply(checked.plan))
      return new PlanState(file, checked.plan!, warn, checked.problems)
    if (!checked.plan || checked.problems.length > 0) throw new InvalidPlanError(file, checked.problems)
    return new PlanState(file, checked.plan, warn)
  }

  get namespace(): string {
    return this.plan.metadata.namespace
  }

  status(id: string): StepStatus | undefined {
    return this.plan.status?.steps.find((s) => s.id === id)
  }

  phase(step: PlanStep): StepPhase {
    return this.status(step.id)?.phase ?? 'Pending'
  }

  /**
   * Before the first write: record the digest of the reviewed spec. An edit made before the first
   * apply is accepted here (and recorded); after it, any edit is exit 4 (checked on load).
   */
  async begin(): Promise<void> {
    const digest = specDigest(this.plan)
    if (!this.plan.status) this.plan.status = {specDigest: digest, steps: []}
    else if (!this.plan.status.steps.some((s) => s.phase !== 'Pending' && s.phase !== 'RolledBack'))
      this.plan.status.specDigest = digest
    await this.save()
  }

  async record(
    id: string,
    update: Omit<Partial<StepStatus>, 'id'> & {phase: StepPhase; by: string},
  ): Promise<StepStatus> {
    this.plan.status ??= {specDigest: specDigest(this.plan), steps: []}
    const steps = this.plan.status.steps
    const index = steps.findIndex((s) => s.id === id)
    const previous = index === -1 ? undefined : steps[index]
    const next: StepStatus = {
      id,
      phase: update.phase,
      at: update.at ?? new Date().toISOString(),
      by: update.by,
      ...(this.localUser ? {localUser: this.localUser} : {}),
      ...((update.observed ?? previous?.observed) ? {observed: update.observed ?? previous?.observed} : {}),
      ...(update.message ? {message: update.message} : {}),
      ...((update.attempts ?? previous?.attempts) !== undefined
        ? {attempts: update.attempts ?? previous?.attempts}
        : {}),
    }
    if (index === -1) {
      // Keep status.steps in spec order so the file reads top to bottom.
      const order = this.plan.spec.steps.map((s) => s.id)
      steps.push(next)
      steps.sort((a, b) => order.indexOf(a.id) - order.indexOf(b.id))
    } else {
      steps[index] = next
    }
    // The cluster first: a crash between the two leaves the file behind the record, and the record wins.
    await this.cluster?.write(this.plan, this.file, update.by)
    // The record in the cluster is now this plan's: the plan it replaced (plan --keep-progress) is no longer there to
    // take over, and a further re-plan must replace this one (keep-progress.ts carryProgress).
    if (this.cluster && this.plan.status.replaces !== undefined) delete this.plan.status.replaces
    await this.save()
    return next
  }

  /** `apply --ignore-fleet-order`: who applied ahead of the fleet's order, kept with the record (issue 22). */
  async recordFleetOrderOverride(override: Omit<FleetOrderOverride, 'localUser'>): Promise<void> {
    this.plan.status ??= {specDigest: specDigest(this.plan), steps: []}
    const entry: FleetOrderOverride = {...override, ...(this.localUser ? {localUser: this.localUser} : {})}
    this.plan.status.fleetOrderOverrides = [...(this.plan.status.fleetOrderOverrides ?? []), entry]
    await this.save()
  }

  async save(): Promise<void> {
    try {
      const plan = this.fileSpec ? {...this.plan, spec: this.fileSpec} : this.plan
      await writeFileAtomic(this.file, renderPlanFile(plan), this.warn)
    } catch (error) {
      throw new UserError(`cannot write ${this.file}: ${(error as Error).message}`, {
        suggestion:
          'The step ran but its record could not be saved; fix the file system problem and re-run the same command: it re-checks the cluster and records the result.',
        cause: error,
      })
    }
  }
}
