// Carrying selector-based policies to the waypoint (DOMAIN §3.1 "Re-targeting rules", SPEC §6 steps 4 and 9).
// The implementation lives in ./retarget/: objects.ts (names, stamps), authz-rules.ts (rule transformations),
// targets.ts (targetRefs and coverage), migrate.ts (the decisions), types.ts (the result).
export {
  COPIED_FROM_ANNOTATION,
  RETARGETABLE_KINDS,
  companionName,
  copyName,
  isRetargetable,
  l4PartName,
  markManaged,
} from './retarget/objects.js'
export {allowsNothing, planPolicyMigration} from './retarget/migrate.js'
export {MAX_TARGET_REFS} from './retarget/targets.js'
export {serviceAccountRewritable} from './retarget/authz-rules.js'
export type {
  PolicyDecision,
  PolicyDisposition,
  PolicyMigration,
  PolicyMigrationInput,
  PolicyPlacement,
  PolicyRole,
  TargetRef,
} from './retarget/types.js'
