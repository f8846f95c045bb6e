// Public entry point of the test API server (SPEC §8). See README.md in this folder.
export {
  startApiServer,
  TestApiServer,
  UPSTREAM_CRDS_DIR,
  type ApiServerOptions,
  type KubeconfigOptions,
} from './server.js'
export {ADMIN_TOKEN, type PermissionRule, type TokenUser} from './auth/authz.js'
export type {ActiveFault, FaultEffect, FaultMatch, FaultRule, RequestFilter, RequestLogEntry, Verb} from './faults.js'
export type {SkippedCelRule} from './validation/cel.js'
export type {JsonObject, ObjectRefLike} from './types.js'
