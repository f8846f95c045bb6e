// `npm run schemas`: the JSON Schemas of every machine-readable output (schemas/*.json), generated from
// the TypeScript types in src/cli/contract.ts by ts-json-schema-generator, and the plan file's schema
// (the one `validate` enforces, src/planner/plan-schema.ts). test/cli/schemas.test.ts fails when the
// committed files differ from what this writes, so a changed type cannot ship with a stale schema.
import {writeFileSync} from 'node:fs'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

import {createGenerator} from 'ts-json-schema-generator'

import {PLAN_FILE_SCHEMA, PLAN_FILE_V1ALPHA2_SCHEMA, PLAN_SCHEMA} from '../src/planner/plan-schema.js'
import {RECORD_SCHEMA} from '../src/plan/record.js'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
export const SCHEMA_DIR = path.join(ROOT, 'schemas')
export const SCHEMA_BASE_URL = 'https://mesh-migrate.io/schemas'

/** Output document type (src/cli/contract.ts) → schema file name. */
export const OUTPUT_SCHEMAS: Record<string, string> = {
  InventoryDocument: 'inventory',
  FleetDocument: 'fleet-plan',
  CensusDocument: 'census',
  PreflightReport: 'preflight-report',
  StatusReport: 'status-report',
  ValidationReport: 'validation-report',
  Timeline: 'timeline',
  ManifestChanges: 'manifest-changes',
  ApplyResult: 'apply-result',
  RollbackResult: 'rollback-result',
  FleetApplyResult: 'fleet-apply-result',
  UnlockResult: 'unlock-result',
  VersionDocument: 'version',
  ErrorDocument: 'error',
}

/** File name → schema text, as committed. */
export function generateSchemas(): Record<string, string> {
  const generator = createGenerator({
    path: path.join(ROOT, 'src/cli/contract.ts'),
    tsconfig: path.join(ROOT, 'tsconfig.json'),
    skipTypeCheck: true,
    additionalProperties: true, // consumers must ignore fields they do not know (docs/contract.md)
    sortProps: true,
    expose: 'export',
    topRef: true,
    jsDoc: 'extended',
  })
  const out: Record<string, string> = {}
  for (const [type, name] of Object.entries(OUTPUT_SCHEMAS)) {
    const schema = {$id: `${SCHEMA_BASE_URL}/${name}-v1alpha1.json`, ...generator.createSchema(type)}
    out[`${name}.json`] = `${JSON.stringify(schema, null, 2)}\n`
  }
  out['migration-plan.json'] = `${JSON.stringify(PLAN_SCHEMA, null, 2)}\n`
  out['migration-plan-file.json'] = `${JSON.stringify(PLAN_FILE_SCHEMA, null, 2)}\n`
  out['migration-plan-file-v1alpha2.json'] = `${JSON.stringify(PLAN_FILE_V1ALPHA2_SCHEMA, null, 2)}\n`
  // The plan's record in the cluster (ConfigMap mesh-migrate-record-<plan name>, src/plan/record.ts).
  out['migration-record.json'] = `${JSON.stringify(RECORD_SCHEMA, null, 2)}\n`
  return out
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  for (const [file, text] of Object.entries(generateSchemas())) writeFileSync(path.join(SCHEMA_DIR, file), text)
  process.stdout.write(`Wrote ${Object.keys(OUTPUT_SCHEMAS).length + 3} schemas to schemas/.\n`)
}
