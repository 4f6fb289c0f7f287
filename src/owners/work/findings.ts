/** Findings of the work owner's offline readers: data, never exceptions; every one carries one next action. */
import type { OwnerFinding } from '../contract.js';

export type WorkFindingCode =
  | 'work_db_unreadable'
  | 'work_db_not_sqlite'
  | 'work_db_too_large'
  | 'work_db_integrity_failed'
  | 'work_db_wal_sidecar_present'
  | 'work_store_schema_unknown'
  | 'work_store_unrecognized'
  | 'work_store_metadata_invalid'
  | 'work_store_goal_mismatch'
  | 'work_store_foreign_incarnation'
  | 'provider_protocol_violation'
  | 'work_history_capacity_exceeded'
  | 'work_head_invalid'
  | 'work_receipt_invalid'
  | 'work_receipt_mismatch'
  | 'work_event_invalid'
  | 'work_operation_duplicate'
  | 'work_projection_mismatch'
  | 'retained_prefix_record_invalid'
  | 'retained_prefix_schema_unknown'
  | 'retained_prefix_goal_mismatch'
  | 'retained_prefix_interval_invalid'
  | 'retained_prefix_capacity_exceeded'
  | 'retained_prefix_chain_broken'
  | 'retained_prefix_cursor_gap'
  | 'retained_prefix_seal_missing'
  | 'retained_prefix_seal_mismatch'
  | 'retained_prefix_trailing_records'
  | 'retained_prefix_head_mismatch';

/** Subjects are a component id, cursor or field name — never a path or a payload. */
export type WorkFinding = OwnerFinding<WorkFindingCode>;

export const finding = (
  code: WorkFindingCode,
  subject: string,
  next_action: string,
  severity: 'error' | 'warning' = 'error',
): WorkFinding => ({
  code,
  severity,
  subject,
  next_action,
});

export const hasErrors = (findings: readonly WorkFinding[]): boolean => findings.some((f) => f.severity === 'error');
