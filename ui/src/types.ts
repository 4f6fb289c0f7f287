/**
 * The shapes of docs/api.md (and the schemas it refers to) that the UI reads. The audit, job and
 * workspace documents are generated from docs/schemas/ into ./generated/ (`npm run schemas:types`;
 * test/ui/schema-types.test.ts keeps them current); the rest are written here.
 */
import type { DaemonAuditList } from './generated/audit-list';
import type { LoopxStateRecoveryAuditV0PublicSummary } from './generated/audit-public';
import type { DaemonVerifyJob } from './generated/job';
import type { LoopxBackupStateWorkspaceLs } from './generated/workspace-ls';
import type { LoopxBackupStateWorkspaceShow } from './generated/workspace-show';

export interface ErrorBody {
  readonly code: string;
  readonly message: string;
  readonly next_action?: string;
  readonly details?: unknown;
}

export interface Health {
  readonly ok: true;
  readonly version: string;
  /** The root's random id; null before the root has an engine store. */
  readonly root_id: string | null;
}

// ---- backups, jobs and audits: generated from the published schemas (npm run schemas:types) ----

/** `GET /api/backups/jobs/:job_id` (daemon-job). */
export type Job = DaemonVerifyJob;
export type JobProgress = NonNullable<Job['progress']>;
export type VerifyStep = JobProgress['step'];

/** `state-recovery-audit-public-v0`: the public summary. */
export type PublicAudit = LoopxStateRecoveryAuditV0PublicSummary;
export type AuditComponent = PublicAudit['components'][number];
export type AuditFinding = PublicAudit['findings'][number];
export type Classification = AuditComponent['classification'];
export type AssetCounts = PublicAudit['counts']['assets'];

/** One audit of `GET /api/audits` (daemon-audit-list). */
export type AuditListItem = DaemonAuditList['audits'][number];

// ---- a recovery workspace read back (GET /api/audits/:id/workspace[/goals/:goal]) ----

/** `backup-workspace-ls`: what a verified workspace holds. */
export type WorkspaceListing = LoopxBackupStateWorkspaceLs;
/** `backup-workspace-show`: one Goal of a verified workspace. */
export type WorkspaceGoalDetail = LoopxBackupStateWorkspaceShow;
export type WorkspaceGoalSummary = WorkspaceListing['goals'][number];
/** A run as the workspace's engine store recorded it (never a live run). */
export type WorkspaceRun = WorkspaceListing['runs'][number];
export type WorkspaceFinding = WorkspaceListing['findings'][number];
export type TodoStatus = WorkspaceGoalDetail['todos'][number]['status'];
export type EffectOutcome = WorkspaceGoalDetail['effects'][number]['outcome'];

// ---- runs ----

export type RunStatus = 'active' | 'suspended' | 'completed' | 'failed' | 'cancelled';

/** What the run and the effect owner hold about an uncertain call (GET /api/runs/:id; docs/schemas/daemon-run.schema.json). */
export interface CallEvidence {
  readonly call_id: string;
  readonly tool: string;
  readonly turn: number;
  readonly arguments: { readonly sha256: string; readonly bytes: number; readonly fields: readonly string[] };
  readonly effect: null | {
    readonly kind: string;
    readonly target: string;
    readonly intent_digest: string;
    readonly idempotency_key: string;
    readonly attempts: number;
    readonly recorded_at: string;
    readonly dispatched_at: string | null;
    readonly hold: string | null;
    readonly reconcile_attempts: number;
    readonly history: readonly { readonly event: string; readonly outcome: string; readonly at: string; readonly reason: string | null }[];
  };
}

/** An uncertain mutating call; `evidence` in the run view only (not in an action's run summary). */
export interface UncertainCall {
  readonly call_id: string;
  readonly operation_id: string;
  readonly outcome: 'pending' | 'unknown' | null;
  readonly evidence?: CallEvidence | null;
}

export type WaitingFor =
  | { readonly kind: 'interaction'; readonly interaction_id: string; readonly prompt: string }
  | { readonly kind: 'resolution'; readonly call_ids: readonly string[]; readonly effects?: readonly UncertainCall[] };

export interface RunSummary {
  readonly run_id: string;
  readonly status: RunStatus;
  readonly completed_turns: number;
  readonly last_sequence: number;
  readonly waiting_for: WaitingFor | null;
  readonly suspend_requested: boolean;
  readonly failure: { readonly code: string; readonly message: string } | null;
}

export interface RunView extends RunSummary {
  readonly definition: { readonly id: string; readonly version: string };
  readonly turn_limit: number;
}

export interface RunEvent {
  readonly run_id: string;
  readonly sequence: number;
  readonly type: string;
  readonly at: string;
  readonly data: Readonly<Record<string, unknown>>;
}

export interface ImportReceipt {
  readonly run_id: string;
  readonly status: string;
  readonly last_sequence: number;
}

/** GET /api/owners (docs/schemas/daemon-owners.schema.json). */
export interface OwnerList {
  readonly owners: readonly {
    readonly name: string;
    readonly decides: string;
    readonly scope: 'machine' | 'goal';
    readonly required_for_goal: boolean;
    readonly classification: 'recovered_readable' | 'historical_only';
  }[];
}

/** A recovery hold (GET /api/recoveries/:id `status.holds[]`). */
export interface RecoveryHold {
  readonly hold_id: string;
  readonly owner: string;
  readonly code: string;
  readonly subject: string;
  readonly continuation: string;
  readonly retryable: boolean;
  readonly next_action: string;
}

/** The preview a plan shows before it is confirmed. */
export interface RecoveryPreview {
  readonly recovered_readable: readonly string[];
  readonly historical_only: readonly string[];
  readonly lost_or_unknown: readonly string[];
  readonly expected_holds: readonly string[];
  readonly external_systems: readonly string[];
  readonly human_actions: readonly string[];
}

/** GET /api/recoveries/:id (daemon-recovery.schema.json). */
export interface Recovery {
  readonly recovery_id: string;
  readonly audit_id: string;
  readonly goal_id: string;
  readonly destination_name: string;
  readonly created_at: string;
  readonly applying_now: boolean;
  readonly last_apply_error: ErrorBody | null;
  readonly status: {
    readonly state: 'adoption_prepared' | 'applying' | 'reconciliation_held' | 'complete' | 'abandoned' | string;
    readonly plan_digest: string;
    readonly backup_id: string;
    readonly goal: { readonly goal_id: string; readonly recovered_instance_id: string; readonly new_instance_id: string | null };
    readonly phase: { readonly completed_steps: number; readonly total_steps: number; readonly current: string | null };
    readonly fences: { readonly source_established: boolean; readonly destination_established: boolean };
    readonly holds: readonly RecoveryHold[];
    readonly preview: RecoveryPreview;
    readonly receipts: readonly {
      readonly action: string;
      readonly owner: string;
      readonly disposition: string;
      readonly result: string;
      readonly started_at: string;
      readonly done_at: string;
    }[];
    readonly next_action: string;
    readonly retryable: boolean;
  };
}

/** POST /api/audits/:id/recoveries: the plan and the destination's name. */
export interface RecoveryPlanAnswer {
  readonly recovery_id: string;
  readonly plan_digest: string;
  readonly destination_name: string;
}
