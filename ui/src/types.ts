/** The shapes of docs/api.md (and the schemas it refers to) that the UI reads. */

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

// ---- backups, jobs and audits ----

export type VerifyStep = 'inputs' | 'destination' | 'members' | 'extract' | 'owners' | 'audit';

export interface JobProgress {
  readonly step: VerifyStep;
  readonly done: number;
  readonly total: number;
}

export interface Job {
  readonly job_id: string;
  readonly upload_id: string | null;
  readonly backup_id: string | null;
  readonly state: 'running' | 'audited' | 'held' | 'refused';
  readonly progress: JobProgress | null;
  readonly recovery_id: string | null;
  readonly error: { readonly code: string; readonly message: string; readonly next_action: string | null } | null;
}

export type Classification = 'recovered_readable' | 'historical_only' | 'unknown_unrecoverable';

export interface AssetCounts {
  readonly recovered_readable: number;
  readonly historical_only: number;
  readonly unknown_unrecoverable: number;
}

export interface AuditListItem {
  readonly recovery_id: string;
  readonly backup_id: string;
  readonly phase: 'audited' | 'held';
  readonly operator_state: string;
  readonly created_at: string;
  readonly assets: AssetCounts;
  readonly execution_authority_granted: false;
}

export interface AuditComponent {
  readonly component_id: string;
  readonly owner_kind: string;
  readonly logical_scope: string;
  readonly required: boolean;
  readonly member_count: number;
  readonly content_digest: string;
  readonly dependency_ids: readonly string[];
  readonly verification: string;
  readonly classification: Classification;
  readonly next_action: string;
}

export interface AuditFinding {
  readonly code: string;
  readonly severity: 'error' | 'hold' | 'warning';
  readonly component: string | null;
  readonly owner: string;
  readonly next_action: string;
}

/** `state-recovery-audit-public-v0`: the public summary. */
export interface PublicAudit {
  readonly schema_version: 'loopx_state_recovery_audit_v0';
  readonly recovery_id: string;
  readonly backup: {
    readonly schema_version: string;
    readonly backup_id: string;
    readonly archive_sha256: string;
    readonly external_manifest_sha256: string;
    readonly embedded_manifest_sha256: string;
    readonly producer_version: string;
    readonly created_at: string;
  };
  readonly workspace: { readonly isolation: 'inert'; readonly registered: false; readonly directory: string };
  readonly phase: 'audited' | 'held';
  readonly operator_state: string;
  readonly next_action: string;
  readonly capture: { readonly requested_profile: null; readonly achieved_profile: string; readonly producer_claim: string };
  readonly fences: { readonly source_established: boolean; readonly destination_established: boolean };
  readonly components: readonly AuditComponent[];
  readonly findings: readonly AuditFinding[];
  readonly counts: {
    readonly components: { readonly required: number; readonly optional: number };
    readonly verification: Readonly<Record<string, number>>;
    readonly assets: AssetCounts;
    readonly members: {
      readonly total: number;
      readonly files: number;
      readonly directories: number;
      readonly symlinks: number;
      readonly sqlite_files: number;
    };
    readonly findings: { readonly error: number; readonly hold: number; readonly warning: number };
    readonly dependency_links: number;
  };
  readonly measurements: {
    readonly archive_bytes: number;
    readonly expanded_bytes: number;
    readonly regular_file_bytes: number;
    readonly durations_ms: { readonly archive_processing: number; readonly owner_read: number; readonly total: number };
  };
  readonly activation_eligible: false;
  readonly execution_authority_granted: false;
}

// ---- a recovery workspace read back (GET /api/audits/:id/workspace[/goals/:goal]) ----

export interface WorkspaceFinding {
  readonly code: string;
  readonly severity: string;
  readonly subject: string;
  readonly next_action: string;
}

/** A run as the workspace's engine store recorded it (never a live run). */
export interface WorkspaceRun {
  readonly run_id: string;
  readonly lifecycle: string;
  readonly last_sequence: number;
  readonly completed_turns: number;
  readonly definition_id: string;
}

export type TodoStatus = 'open' | 'done' | 'blocked' | 'deferred';
export type EffectOutcome = 'committed' | 'absent' | 'unknown' | 'rejected' | 'superseded' | 'pending';

export interface WorkspaceGoalSummary {
  readonly goal_id: string;
  readonly goal_instance_id: string;
  readonly title: string;
  readonly lifecycle: string;
  readonly work_readable: boolean;
  readonly todos_by_status: Readonly<Record<string, number>>;
  readonly committed_transactions: number;
}

/** `backup-workspace-ls`: what a verified workspace holds. */
export interface WorkspaceListing {
  readonly recovery_id: string;
  readonly backup_id: string;
  readonly operator_state: string;
  readonly execution_authority_granted: false;
  readonly goals: readonly WorkspaceGoalSummary[];
  readonly runs_readable: boolean;
  readonly runs: readonly WorkspaceRun[];
  readonly sessions: number;
  readonly effects_by_outcome: Readonly<Record<string, number>>;
  readonly findings: readonly WorkspaceFinding[];
}

/** `backup-workspace-show`: one Goal of a verified workspace. */
export interface WorkspaceGoalDetail {
  readonly recovery_id: string;
  readonly execution_authority_granted: false;
  readonly goal: {
    readonly goal_id: string;
    readonly goal_instance_id: string;
    readonly title: string;
    readonly lifecycle: string;
    readonly docs: readonly { readonly name: string; readonly sha256: string; readonly bytes: number }[];
  };
  readonly work: {
    readonly readable: boolean;
    readonly store_identity: string | null;
    readonly head_cursor: number | null;
    readonly committed_transactions: number;
    readonly handoff_mode: string | null;
  };
  readonly todos: readonly {
    readonly todo_id: string;
    readonly title: string;
    readonly status: TodoStatus;
    readonly priority: number;
    readonly note: string | null;
    readonly todo_revision: number;
  }[];
  readonly sessions: readonly {
    readonly session_id: string;
    readonly run_id: string | null;
    readonly status: string;
    readonly session_generation: number;
    readonly execution_generation: number;
  }[];
  readonly runs: readonly WorkspaceRun[];
  readonly effects: readonly {
    readonly operation_id: string;
    readonly kind: string;
    readonly target: string;
    readonly outcome: EffectOutcome;
    readonly hold: string | null;
    readonly attempt: number;
  }[];
  readonly findings: readonly WorkspaceFinding[];
}

// ---- runs ----

export type RunStatus = 'active' | 'suspended' | 'completed' | 'failed' | 'cancelled';

export type WaitingFor =
  | { readonly kind: 'interaction'; readonly interaction_id: string; readonly prompt: string }
  | { readonly kind: 'resolution'; readonly call_ids: readonly string[] };

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
