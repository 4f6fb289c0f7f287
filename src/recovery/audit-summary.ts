/**
 * The public summary of a recovery audit: the redacted view the daemon and `--json` callers may
 * show anyone holding the token. It drops everything private — member names, Goal ids, owner
 * subjects, readback, paths — and keeps component ids, redacted scopes, counts, digests and codes.
 * An owner kind it does not know is reported as `unknown`.
 */
import { OWNER_LIST, UNOWNED_STORES } from '../owners/index.js';
import type { AUDIT_SCHEMA, Classification, RecoveryAudit, Severity, VerificationStatus } from './audit.js';

const OWNER_LABELS: ReadonlySet<string> = new Set([
  ...OWNER_LIST.map((o) => o.name),
  ...UNOWNED_STORES.map((s) => s.name),
  'unknown',
  'backup',
]);

export interface PublicAuditSummary {
  readonly schema_version: typeof AUDIT_SCHEMA;
  readonly recovery_id: string;
  readonly backup: RecoveryAudit['backup'];
  readonly workspace: RecoveryAudit['workspace'];
  readonly phase: RecoveryAudit['phase'];
  readonly operator_state: RecoveryAudit['operator_state'];
  readonly next_action: string;
  readonly capture: RecoveryAudit['capture'];
  readonly fences: RecoveryAudit['fences'];
  readonly components: readonly {
    readonly component_id: string;
    readonly owner_kind: string;
    readonly logical_scope: string;
    readonly required: boolean;
    readonly member_count: number;
    readonly content_digest: string | null;
    readonly dependency_ids: readonly string[];
    readonly verification: VerificationStatus;
    readonly classification: Classification;
    readonly next_action: string;
  }[];
  readonly findings: readonly {
    readonly code: string;
    readonly severity: Severity;
    readonly component: string | null;
    readonly owner: string;
    readonly next_action: string;
  }[];
  readonly counts: RecoveryAudit['counts'];
  readonly measurements: RecoveryAudit['measurements'];
  readonly activation_eligible: boolean;
  readonly activation?: RecoveryAudit['activation'];
  readonly last_durable_receipt?: null;
  readonly retryable?: boolean;
  readonly execution_authority_granted: false;
}

/** The redacted view: no member names, Goal ids, subjects, readback or paths. */
export function publicSummary(a: RecoveryAudit): PublicAuditSummary {
  return {
    schema_version: a.schema_version,
    recovery_id: a.recovery_id,
    backup: a.backup,
    workspace: a.workspace,
    phase: a.phase,
    operator_state: a.operator_state,
    next_action: a.next_action,
    capture: a.capture,
    fences: a.fences,
    components: a.components.map((c) => ({
      component_id: c.component_id,
      owner_kind: OWNER_LABELS.has(c.owner_kind) ? c.owner_kind : 'unknown',
      logical_scope: c.logical_scope,
      required: c.required,
      member_count: c.member_count,
      content_digest: c.content_digest,
      dependency_ids: c.dependency_ids,
      verification: c.verification,
      classification: c.classification,
      next_action: c.next_action,
    })),
    findings: a.findings.map((f) => ({
      code: f.code,
      severity: f.severity,
      component: f.component,
      owner: f.owner,
      next_action: f.next_action,
    })),
    counts: a.counts,
    measurements: a.measurements,
    activation_eligible: a.activation_eligible,
    ...(a.activation ? { activation: a.activation } : {}),
    ...(a.retryable !== undefined ? { last_durable_receipt: null, retryable: a.retryable } : {}),
    execution_authority_granted: false,
  };
}
