// The Job controller (pkg/controller/job, reduced to NonIndexed jobs without failures): runs up to
// `parallelism` pods until `completions` have succeeded, then Complete. How long a pod runs is the
// kubelet's `jobRunMs`; a classic sidecar keeps the pod running, so such a Job never completes (E10).
import {
  findCondition,
  isControlledBy,
  isTerminating,
  keyOf,
  now,
  sameCounters,
  setCondition,
  splitKey,
  type Condition,
} from '../meta.js'
import {WorkQueue} from '../queue.js'
import type {Controller, ControllerContext} from './context.js'
import type {PodFactory} from './pods.js'

export class JobController implements Controller {
  readonly queue: WorkQueue

  constructor(
    private readonly ctx: ControllerContext,
    private readonly pods: PodFactory,
  ) {
    this.queue = new WorkQueue('job', (key) => this.reconcile(key), {
      workers: ctx.options.workers,
      onError: (q, k, e) => ctx.report(`${q} ${k}`, e),
    })
    ctx.state.on('jobs', (j, old) => this.queue.add(keyOf(j ?? old!)))
    ctx.state.on('pods', (pod, old) => {
      for (const p of [pod, old]) {
        const owner = p?.metadata.ownerReferences?.find((o) => o.controller && o.kind === 'Job')
        if (owner) this.queue.add(`${p!.metadata.namespace}/${owner.name}`)
      }
    })
    ctx.state.on('nodes', () => this.enqueueAll())
  }

  enqueueAll(): void {
    for (const j of this.ctx.state.list('jobs')) this.queue.add(keyOf(j))
  }

  private async reconcile(key: string): Promise<void> {
    const {namespace, name} = splitKey(key)
    const job = this.ctx.state.get('jobs', namespace, name)
    if (!job || isTerminating(job)) return
    if (findCondition(job, 'Complete')?.status === 'True' || job.spec?.suspend === true) return
    const completions: number = job.spec?.completions ?? 1
    const parallelism: number = job.spec?.parallelism ?? 1
    const pods = this.ctx.state.ownedBy('pods', job.metadata.uid).filter((p) => isControlledBy(p, job))
    const succeeded = pods.filter((p) => p.status?.phase === 'Succeeded').length
    const active = this.ctx.activePods(pods)
    const toStart = Math.max(0, Math.min(parallelism, completions - succeeded) - active.length)
    for (let i = 0; i < toStart; i++) {
      if (
        !(await this.pods.create(
          this.pods.fromTemplate(job, job.spec?.template, {generateName: `${job.metadata.name}-`}),
        ))
      )
        break
    }
    const current = this.ctx.state.ownedBy('pods', job.metadata.uid).filter((p) => isControlledBy(p, job))
    const counters = {
      active: this.ctx.activePods(current).length,
      ready: current.filter((p) => this.ctx.podReady(p)).length,
      succeeded: current.filter((p) => p.status?.phase === 'Succeeded').length,
      failed: current.filter((p) => p.status?.phase === 'Failed').length,
      terminating: current.filter(isTerminating).length,
    }
    const status: Record<string, unknown> = {
      ...counters,
      startTime: job.status?.startTime ?? now(),
      uncountedTerminatedPods: {},
    }
    let conditions = (job.status?.conditions as Condition[] | undefined) ?? []
    if (counters.succeeded >= completions) {
      conditions = setCondition(
        conditions,
        {
          type: 'SuccessCriteriaMet',
          status: 'True',
          reason: 'CompletionsReached',
          message: 'Reached expected number of succeeded pods',
        },
        {},
      )
      conditions = setCondition(
        conditions,
        {
          type: 'Complete',
          status: 'True',
          reason: 'CompletionsReached',
          message: 'Reached expected number of succeeded pods',
        },
        {},
      )
      status.completionTime = now()
      status.active = null
    }
    status.conditions = conditions.length > 0 ? conditions : null
    const old = job.status ?? {}
    if (
      sameCounters(old, counters) &&
      old.startTime &&
      (conditions.length === 0 || findCondition(job, 'Complete')?.status === 'True')
    )
      return
    await this.ctx.state.patch(
      {apiVersion: 'batch/v1', kind: 'Job', namespace: namespace!, name},
      {status},
      {subresource: 'status'},
    )
  }
}
