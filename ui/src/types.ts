/**
 * The shapes of docs/api.md (and the schemas it refers to) that the UI reads. The audit, job,
 * workspace and recovery documents are generated from docs/schemas/ into ./generated/ (`npm run
 * schemas:types`; test/ui/schema-types.test.ts keeps them current); the rest are written here.
 */
import type { DaemonAuditList } from './generated/audit-list';
import type { LoopxStateRecoveryAuditV0PublicSummary } from './generated/audit-public';
import type { DaemonVerifyJob } from './generated/job';
import type { DaemonRecovery } from './generated/recovery';
import type { DaemonRun, Evidence } from './generated/run';
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

export type RunStatus = DaemonRun['status'];

/** What the run and the effect owner hold about an uncertain call (GET /api/runs/:id; daemon-run). */
export type CallEvidence = Evidence;

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
  readonly failure: { readonly code: string; readonly message: string; readonly next_action?: string } | null;
  readonly usage?: { readonly input_tokens: number; readonly output_tokens: number; readonly estimated: boolean };
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

// ---- recoveries: generated from the published schema (npm run schemas:types) ----

/** `GET /api/recoveries/:id` and the answers of its apply, resolve and abort routes (daemon-recovery). */
export type Recovery = DaemonRecovery;
/** Its state read back from the plan, the journal and the owners (recover-status). */
export type RecoveryStatus = Recovery['status'];
export type RecoveryHold = RecoveryStatus['holds'][number];
/** The preview a plan shows before it is confirmed. */
export type RecoveryPreview = RecoveryStatus['preview'];
export type RecoveryReceipt = RecoveryStatus['receipts'][number];

/** POST /api/audits/:id/recoveries: the plan and the destination's name. */
export interface RecoveryPlanAnswer {
  readonly recovery_id: string;
  readonly plan_digest: string;
  readonly destination_name: string;
}
