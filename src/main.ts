// The CLI's runtime, bundled with the commands (scripts/build.mjs): bin/run.js and bin/kubectl-mesh_migrate.js load
// oclif from here, so that oclif and the commands share one copy, read from a few files instead of ~110 (issue 11 §3).
export {execute} from '@oclif/core/execute'
export {flush} from '@oclif/core/flush'
export {handle} from '@oclif/core/handle'
export {run} from '@oclif/core/run'
