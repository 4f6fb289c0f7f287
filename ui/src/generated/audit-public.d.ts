/* Generated from docs/schemas/state-recovery-audit-public-v0.schema.json by `npm run schemas:types` (json-schema-to-typescript). Do not edit. */

/**
 * stdout of `loopx backup-state verify --execute … --json` and of `loopx backup-state audit show D --public --json`: the redacted view of the private audit (state-recovery-audit-v0.schema.json) — counts, component ids, redacted scopes, digests and codes; no member name, Goal id, owner subject, readback or path.
 */
export interface LoopxStateRecoveryAuditV0PublicSummary {
  schema_version: "loopx_state_recovery_audit_v0";
  /**
   * The private audit's content address.
   */
  recovery_id: string;
  backup: Backup;
  workspace: Workspace;
  /**
   * Every audit of a loopx_state_backup_v0 archive is `held`.
   */
  phase: "audited" | "held";
  /**
   * `audit_held` for every v0 archive.
   */
  operator_state: "restored_inert" | "audit_held";
  next_action: string;
  capture: Capture;
  fences: Fences;
  /**
   * @maxItems 512
   */
  components: {
    /**
     * `configuration`, `database-<sha256(archive path)[0..12]>` (one per SQLite file), `goal-<sha256(goal_id)[0..12]>` (one per Goal), or `unclassified` (the bytes no owner reads). Never a path or a Goal id. v1 archives: the producer's ids — `<owner>` for a machine component, `<owner>-<keyed tag>` for a Goal's — keyed per archive, so two verifications of one archive agree.
     */
    component_id: string;
    /**
     * The owner of a component or finding, by its name in the producer's OWNERS table (`config`, `registry`, `goal`, `work`, `session`, `effect`, `quota`, `scheduler`, …), `engine` (the run kernel's store, kept as history), `unknown` (bytes no owner of this producer reads) or `backup` (the backup as a whole). A pattern, not a closed list: an owner added later is a new name, not a new schema; a consumer shows a name it does not know as it is.
     */
    owner_kind: string;
    /**
     * `machine`, or `goal:<sha256(goal_id)[0..12]>` — never a Goal id.
     */
    logical_scope: string;
    required: boolean;
    member_count: number;
    content_digest: string | null;
    /**
     * Items: `configuration`, `database-<sha256(archive path)[0..12]>` (one per SQLite file), `goal-<sha256(goal_id)[0..12]>` (one per Goal), or `unclassified` (the bytes no owner reads). Never a path or a Goal id. v1 archives: the producer's ids — `<owner>` for a machine component, `<owner>-<keyed tag>` for a Goal's — keyed per archive, so two verifications of one archive agree.
     */
    dependency_ids: string[];
    verification: "verified" | "invalid" | "missing" | "ambiguous" | "unsupported" | "unknown";
    /**
     * recovered and readable / historical only / unknown or unrecoverable (docs/backup-guide.md).
     */
    classification: "recovered_readable" | "historical_only" | "unknown_unrecoverable";
    next_action: string;
  }[];
  /**
   * As in the private audit, without subjects.
   */
  findings: {
    code: string;
    /**
     * `hold` keeps the audit held; `error` is an owner's error finding; `warning` is informational.
     */
    severity: "error" | "hold" | "warning";
    component: string | null;
    /**
     * The owner of a component or finding, by its name in the producer's OWNERS table (`config`, `registry`, `goal`, `work`, `session`, `effect`, `quota`, `scheduler`, …), `engine` (the run kernel's store, kept as history), `unknown` (bytes no owner of this producer reads) or `backup` (the backup as a whole). A pattern, not a closed list: an owner added later is a new name, not a new schema; a consumer shows a name it does not know as it is.
     */
    owner: string;
    next_action: string;
  }[];
  counts: Counts;
  measurements: Measurements;
  activation_eligible: boolean;
  execution_authority_granted: false;
  activation?: Activation;
  /**
   * v1: the last durable owner receipt of this recovery (none before adoption).
   */
  last_durable_receipt?: null;
  /**
   * v1: whether this step may be run again (verify always may, into a new destination).
   */
  retryable?: boolean;
}
/**
 * The backup verified: its manifest's identity and the digests of the three inputs the verifier bound (archive, external manifest, embedded manifest).
 */
export interface Backup {
  schema_version: "loopx_state_backup_v0" | "loopx_state_backup_v1";
  backup_id: string;
  /**
   * SHA-256, lowercase hex.
   */
  archive_sha256: string;
  /**
   * SHA-256, lowercase hex.
   */
  external_manifest_sha256: string;
  /**
   * SHA-256, lowercase hex.
   */
  embedded_manifest_sha256: string;
  producer_version: string;
  /**
   * UTC, toISOString form.
   */
  created_at: string;
  /**
   * Present when the backup was read from a repository (backup-state verify --repo): which one, by id (never its URL), and whether the backup was encrypted there.
   */
  repository?: {
    repository_id: string;
    /**
     * whether the backup was stored encrypted in the repository (false: it was readable there by anyone who could read the repository)
     */
    encrypted: boolean;
  };
}
export interface Workspace {
  isolation: "inert";
  registered: false;
  /**
   * Relative to the destination: D/workspace/ holds the archive's top (configuration-backup.json, manifest.json, runtime-root/).
   */
  directory: "workspace";
}
export interface Capture {
  /**
   * null for v0 archives (they request none).
   */
  requested_profile: null | ("online" | "quiescent" | "crash_consistent");
  /**
   * As the producer recorded it; never recomputed upward, and lowered (with capture_profile_overclaimed) where it claims more than its weakest required component.
   */
  achieved_profile: "legacy_best_effort" | "online" | "quiescent" | "crash_consistent";
  /**
   * The manifest's capture.profile, as the producer claimed it.
   */
  producer_claim: "legacy_best_effort_online" | "online" | "quiescent" | "crash_consistent";
}
export interface Fences {
  source_established: false;
  destination_established: false;
}
export interface Counts {
  components: {
    required: number;
    optional: number;
    /**
     * Per owner kind present among the components.
     */
    by_owner: {
      config?: RequiredOptional;
      registry?: RequiredOptional;
      goal?: RequiredOptional;
      work?: RequiredOptional;
      session?: RequiredOptional;
      effect?: RequiredOptional;
      quota?: RequiredOptional;
      scheduler?: RequiredOptional;
      engine?: RequiredOptional;
      unknown?: RequiredOptional;
      backup?: RequiredOptional;
    };
  };
  verification: {
    verified: number;
    invalid: number;
    missing: number;
    ambiguous: number;
    unsupported: number;
    unknown: number;
  };
  /**
   * Components per classification.
   */
  assets: {
    recovered_readable: number;
    historical_only: number;
    unknown_unrecoverable: number;
  };
  members: {
    /**
     * Every archive member, the embedded manifest.json included.
     */
    total: number;
    /**
     * Regular files, manifest.json included.
     */
    files: number;
    directories: number;
    symlinks: number;
    sqlite_files: number;
  };
  findings: {
    error: number;
    hold: number;
    warning: number;
  };
  dependency_links: number;
}
export interface RequiredOptional {
  required: number;
  optional: number;
}
export interface Measurements {
  archive_bytes: number;
  expanded_bytes: number;
  /**
   * Regular-file bytes extracted, the embedded manifest.json included (as the plan counts them).
   */
  regular_file_bytes: number;
  durations_ms: {
    /**
     * Steps 1–4: inputs, destination, planned members, extraction.
     */
    archive_processing: number;
    /**
     * Step 5: the owner worker.
     */
    owner_read: number;
    /**
     * Up to the audit's construction (publication not included).
     */
    total: number;
  };
}
/**
 * v1: the Goals (by logical scope) a one-Goal adoption may start from.
 */
export interface Activation {
  /**
   * Items: `machine`, or `goal:<sha256(goal_id)[0..12]>` — never a Goal id.
   */
  eligible_scopes: string[];
}
