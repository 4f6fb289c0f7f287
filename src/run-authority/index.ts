/** Public API of the per-user run authority. */
export type {
  ClaimInput,
  ImportLease,
  LifetimeSupersession,
  LifetimeSupersessionOutcome,
  LifetimeSupersessionRequest,
  RunAuthority,
  RunLease,
  RunRecord,
  RunRecordState,
} from './contract.js';
export { LocalRunAuthority, openRunAuthority, defaultAuthorityDir, type OpenAuthorityOptions } from './local.js';
export { MemoryRunAuthority, memoryRunAuthority, type MemoryAuthorityOptions } from './memory.js';
export {
  PgRunAuthority,
  openPgRunAuthority,
  runLeaseLost,
  revokeRunLeases,
  DEFAULT_LEASE_MS,
  RUN_AUTHORITY_COMPONENT,
  RUN_AUTHORITY_PG_MIGRATIONS,
  type PgAuthorityOptions,
} from './postgres.js';
export { pgRunLeaseFacts, type RunLeaseFact, type RunLeaseFacts } from './lease-facts.js';
export { deriveRunSubkey, SUBKEY_DOMAIN } from './claims.js';
export { ConfinedDir, validateAncestry } from './confined-dir.js';
export { rootDirectoryIdentity, ROOT_IS_COPY, type RebindOutcome, type RootDirectoryIdentity } from './roots.js';
export { recordNextAction } from './next-action.js';
export { goalLifetimeSuperseded, leaseRequired, runIdInvalid, rootAuthorityMismatch } from './errors.js';
export { goalIdentityMismatch, rootRolledBack, type WorkHead, type WorkMark } from './work-marks.js';
export { authorityRolledBack } from './lifetimes.js';
export { isRunId } from './leases.js';
export { recoverActivationDisabled, type ActivationSetting } from './activation.js';
