// Build step: compile the plan JSON Schemas to standalone validation code (ajv standalone), so that
// validate/show/apply do not pay for ajv's schema compiler at every start (SPEC §8 "cold start").
// src/plan/planfile.ts loads dist/planner/plan-schema.validator.cjs when it exists and compiles the
// schema at run time otherwise (development through tsx).
import {writeFileSync} from 'node:fs'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

import {Ajv} from 'ajv'
import standaloneCode from 'ajv/dist/standalone/index.js'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
// The build compiles into a temporary directory first (scripts/build.mjs) and names it here.
const out = path.resolve(root, process.argv[2] ?? 'dist')
const {PLAN_SCHEMA, PLAN_FILE_SCHEMA, PLAN_FILE_V1ALPHA2_SCHEMA} = await import(
  path.join(out, 'planner/plan-schema.js')
)
// The expanded plan (v1alpha1, JSON outputs), the plan file (v1alpha3) and the plan file as v1alpha2 wrote it.
for (const [schema, file] of [
  [PLAN_SCHEMA, 'plan-schema.validator.cjs'],
  [PLAN_FILE_SCHEMA, 'plan-file-schema.validator.cjs'],
  [PLAN_FILE_V1ALPHA2_SCHEMA, 'plan-file-v1alpha2-schema.validator.cjs'],
]) {
  const ajv = new Ajv({allErrors: true, strict: false, code: {source: true}})
  const validate = ajv.compile(schema)
  writeFileSync(
    path.join(out, 'planner', file),
    standaloneCode.default ? standaloneCode.default(ajv, validate) : standaloneCode(ajv, validate),
  )
}
