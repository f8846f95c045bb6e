// `apply --diff` (issue 24 §7): what a step's writes would change, as kubectl diff shows it — each write sent
// to the server as a dry run (dryRun=All: admission and defaulting run, nothing is persisted), the object
// the server would store compared with the live one, as a unified diff of their YAML.
import {stringify as yamlStringify} from 'yaml'

import type {KubeClient} from '../kube/types.js'
import type {KubeObject} from '../planner/model.js'
import type {Operation} from '../planner/plan-types.js'
import {formatRef, operationRef} from '../planner/refs.js'
import {templateLabelsPatch} from '../planner/workloads.js'
import {RESTARTED_AT} from './operations.js'

/** What the server keeps for itself, not what the write changes: kubectl diff leaves managedFields out too. */
function comparable(obj: KubeObject | undefined): string {
  if (!obj) return ''
  const {
    managedFields: _m,
    resourceVersion: _r,
    generation: _g,
    ...metadata
  } = obj.metadata as KubeObject['metadata'] & {
    managedFields?: unknown
    generation?: unknown
  }
  return yamlStringify({...obj, metadata}, {lineWidth: 0, sortMapEntries: true})
}

/** The object the server would store after `op` (undefined for a delete), computed with a dry-run write. */
async function afterWrite(
  client: KubeClient,
  op: Operation,
  live: KubeObject | undefined,
): Promise<KubeObject | undefined> {
  const dryRun = {dryRun: true}
  switch (op.op) {
    case 'apply':
      return client.apply(op.object, {...dryRun, force: true})
    case 'delete':
      return undefined
    case 'label':
      return live && client.mergePatch(op.ref, {metadata: {labels: op.labels}}, dryRun)
    case 'template-labels':
      return live && client.mergePatch(op.ref, templateLabelsPatch(live.kind, op.labels), dryRun)
    case 'restart':
      return (
        live &&
        client.mergePatch(
          op.ref,
          {spec: {template: {metadata: {annotations: {[RESTARTED_AT]: new Date().toISOString()}}}}},
          dryRun,
        )
      )
  }
}

/** The unified diff of one write: live → what the server would store; '' when it changes nothing. */
export async function operationDiff(client: KubeClient, op: Operation): Promise<string> {
  const {createTwoFilesPatch} = await import('diff')
  const ref = operationRef(op)
  const live = await client.get(ref)
  const after = await afterWrite(client, op, live)
  const [before, merged] = [comparable(live), comparable(after)]
  if (before === merged) return ''
  const name = formatRef(ref)
  return createTwoFilesPatch(`live/${name}`, `merged/${name}`, before, merged, undefined, undefined, {context: 3})
    .split('\n')
    .filter((line) => !line.startsWith('====='))
    .join('\n')
}
