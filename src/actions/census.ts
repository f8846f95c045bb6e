// `census` as an action (issue 23 §2): every namespace of the cluster by data-plane mode, with its waypoints and the
// progress of its plans under the plans directory — over an injected io (its notes on stderr) and kube client (the
// options' ClusterConnection). The census command parses flags, runs it and renders the report.
import {stat} from 'node:fs/promises'

import {type CensusDocument, typed} from '../cli/contract.js'
import type {ClusterConnection} from '../cli/plan-session.js'
import {UsageError} from '../errors.js'
import {type Io, writeErr} from '../ui/io.js'

export interface CensusOptions {
  cluster: ClusterConnection
  /** -l: only the namespaces this label selector matches (its syntax checked as the flag is parsed). */
  selector?: string
  /** Where the plan files are (plans/ unless --plans-dir names another). */
  plansDir: string
  /** --plans-dir was given: it must be a directory (the default one may be missing: no plans yet). */
  plansDirGiven: boolean
}

export async function census(options: CensusOptions, io: Io): Promise<CensusDocument> {
  if (options.plansDirGiven) await requireDirectory(options.plansDir)
  const client = await options.cluster.connect()
  const {readCensusInput} = await import('../census/read.js')
  const {buildCensus} = await import('../census/census.js')
  const input = await readCensusInput(client, {
    ...(options.selector ? {selector: options.selector} : {}),
    plansDir: options.plansDir,
  })
  const report = typed('Census', buildCensus(input))
  for (const note of report.notes) writeErr(io, `Note: ${note}`)
  return report
}

/** A --plans-dir that was asked for must be a directory. */
async function requireDirectory(plansDir: string): Promise<void> {
  const info = await stat(plansDir).catch(() => undefined)
  if (!info?.isDirectory())
    throw new UsageError(
      `--plans-dir ${plansDir} ${info ? 'is not a directory' : 'does not exist'}`,
      'Name the directory the plan files are in (plan --out wrote them), or leave --plans-dir out for plans/.',
    )
}
