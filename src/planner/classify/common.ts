// Helpers shared by the per-kind classifiers, split by concern; this module re-exports them so that
// importers outside classify/ (plan-builder, which another change is rewriting) keep their import path.
// Inside the planner import from the module that owns the helper.
export {isRecord} from '../json.js'
// Re-exported for modules another change is rewriting (plan-builder, planfile, engine); import from vocab.ts instead.
export {USE_WAYPOINT_NAMESPACE_LABEL} from '../vocab.js'
export * from './results.js'
export * from './objects.js'
export * from './selection.js'
export * from './hosts.js'
export * from './waypoints.js'
