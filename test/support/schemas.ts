// Validates a command's JSON output against the committed schema of its kind (schemas/*.json,
// docs/contract.md), with ajv as a consumer would.
import {readFileSync} from 'node:fs'
import path from 'node:path'

import {Ajv, type ValidateFunction} from 'ajv'

import {REPO_ROOT} from './shared.js'

const FILE_OF_KIND: Record<string, string> = {
  Inventory: 'inventory.json',
  MigrationPlan: 'migration-plan.json',
  FleetPlan: 'fleet-plan.json',
  Census: 'census.json',
  PreflightReport: 'preflight-report.json',
  StatusReport: 'status-report.json',
  ValidationReport: 'validation-report.json',
  Timeline: 'timeline.json',
  ManifestChanges: 'manifest-changes.json',
  ApplyResult: 'apply-result.json',
  RollbackResult: 'rollback-result.json',
  FleetApplyResult: 'fleet-apply-result.json',
  UnlockResult: 'unlock-result.json',
  Version: 'version.json',
  Error: 'error.json',
}

const ajv = new Ajv({allErrors: true, strict: false})
const validators = new Map<string, ValidateFunction>()

/** The schema problems of one output document ([] when valid); its kind picks the schema. */
export function schemaProblems(text: string, expectedKind: string): string[] {
  const doc = JSON.parse(text) as {apiVersion?: string; kind?: string}
  if (doc.apiVersion !== 'mesh-migrate.io/v1alpha1') return [`apiVersion is ${String(doc.apiVersion)}`]
  if (doc.kind !== expectedKind) return [`kind is ${String(doc.kind)}, expected ${expectedKind}`]
  const file = FILE_OF_KIND[expectedKind]!
  let validate = validators.get(file)
  if (!validate) {
    validate = ajv.compile(JSON.parse(readFileSync(path.join(REPO_ROOT, 'schemas', file), 'utf8')))
    validators.set(file, validate)
  }
  return validate(doc) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message ?? ''}`)
}
