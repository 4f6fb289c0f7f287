/**
 * Public API of recovery: M1 `backup-state verify` and its audit (RFC complete-state-recovery §5,
 * §7, §9, §10, §12).
 *
 *   planVerify(inputs)        step 1–3 on the inputs (digests, manifests, destination, planned
 *                             members); writes nothing; returns the public plan
 *   executeVerify(inputs)     the whole ordered verification; creates only the new destination D
 *                             (0700) with D/workspace/ and D/recovery-audit.json; on any refusal D
 *                             is not published
 *   executeVerifyIsolated(inputs)
 *                             the same in a disposable child process (verify-child.ts), for the
 *                             daemon: the archive is decoded there, never in the caller
 *   showAudit(destination)    reads an audit back byte-identically and re-checks its content address
 *   publicSummary(audit)      the redacted view printed on stdout / served over HTTP
 *
 * Every refusal is a LoopxError with a code of ./codes.ts. Nothing here grants execution authority.
 */
export * from './codes.js';
export { RECOVERY_LIMITS, type RecoveryLimitName } from './limits.js';
export type { ProtectedPlaces } from './destination.js';
export {
  planVerify,
  executeVerify,
  verifyFailed,
  type VerifyInputs,
  type VerifyPlan,
  type VerifyOutcome,
  type VerifyOptions,
  type VerifyProgress,
} from './verify.js';
export { executeVerifyIsolated, type IsolatedVerifyOutcome } from './verify-process.js';
export {
  showAudit,
  AUDIT_FILE,
  WORKSPACE_DIR,
  AUDIT_SCHEMA,
  SETTLED_BY_RECOVERY,
  type RecoveryAudit,
} from './audit.js';
export { publicSummary, type PublicAuditSummary } from './audit-summary.js';
export {
  planAdoption,
  readPlan,
  publicPlan,
  PLAN_SCHEMA,
  PLAN_SEAL_FILE,
  RECOVERY_DIR,
  type AdoptionPlan,
  type DestinationStore,
  type PlannedStep,
  type PlanPreview,
} from './adopt-plan.js';
export {
  applyAdoption,
  abortAdoption,
  resolveHold,
  settlementFrom,
  type AdoptionHost,
  type AdoptionRunOptions,
  type HoldSettlement,
} from './adopt-apply.js';
export {
  recoveryStatus,
  RECOVERY_STATES,
  type RecoveryState,
  type RecoveryStatus,
  type RecoveryHold,
} from './adopt-status.js';
export { RECOVER_REFUSALS } from './adopt-codes.js';
export { refuseHeldRecovery, refuseRecoveryInProgress } from './adopt-guard.js';
export { servedExports } from './served-exports.js';
