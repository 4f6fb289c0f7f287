/**
 * The stable refusal codes of `loopx backup-state verify` (RFC complete-state-recovery §5
 * "Verification is ordered", §7, §12). A refusal is a LoopxError carrying one of these codes, a
 * one-line message and exactly one next action; nothing is published when one is thrown. The step
 * that raises each code is noted; checks run in that order, so an input that breaks two rules is
 * refused by the earlier step.
 */

/** Step 1 — inputs: a regular archive and external manifest, digests, schema, embedded/external agreement. */
export const INPUT_CODES = {
  /** The archive or the manifest is missing, a link, or not a regular file (details.input names which). */
  notRegular: 'verify_input_not_regular',
  /** The external manifest is not JSON, or breaks the loopx_state_backup_v0 schema. */
  manifestInvalid: 'verify_manifest_invalid',
  /** The manifest's schema_version is not one this verifier reads. */
  manifestSchemaUnknown: 'verify_manifest_schema_unknown',
  /** The archive's SHA-256 or size differs from the external manifest's (refused before tar decoding). */
  archiveDigestMismatch: 'verify_archive_digest_mismatch',
  /** The bytes the gzip/tar scan consumed differ (digest or count) from the preflight's. */
  archiveWitnessMismatch: 'verify_archive_witness_mismatch',
  /** The archive holds no manifest.json. */
  embeddedManifestMissing: 'verify_embedded_manifest_missing',
  /** The embedded manifest differs from the external one (beyond the archive-dependent fields) or from its recorded digest. */
  embeddedManifestMismatch: 'verify_embedded_manifest_mismatch',
  /** The tar stream's length differs from the manifest's execution.archive_expanded_bytes. */
  expandedMismatch: 'verify_archive_expanded_mismatch',
} as const;

/** Step 2 — destination preflight (placement first: these are refused for the plan too, before anything is created). */
export const DESTINATION_CODES = {
  /** The destination already exists (a conflict: exit 4). */
  exists: 'verify_destination_exists',
  /** The destination's parent is missing, not a directory, or reached through a symbolic link. */
  parentInvalid: 'verify_destination_parent_invalid',
  /** The destination's parent is not owned by this user or is writable by others. */
  parentNotPrivate: 'verify_destination_parent_not_private',
  /**
   * The destination is (or would contain) the live runtime root, or lies inside it or inside any
   * directory that holds a runtime root's owner files — except a direct child of the root's
   * reserved `daemon/recoveries/`. Physical paths are compared (links and `..` resolved).
   */
  insideRuntimeRoot: 'verify_destination_inside_runtime_root',
  /** The destination is, lies inside, or would contain the run authority directory. */
  insideRunAuthority: 'verify_destination_inside_run_authority',
  /** The destination lies inside an existing recovery destination (one holding recovery-audit.json). */
  insideRecoveryWorkspace: 'verify_destination_inside_recovery_workspace',
} as const;

/** §12 capacity limits; each refusal names its limit (details.limit, details.observed, details.maximum). */
export const CAPACITY_CODES = {
  archiveBytes: 'verify_capacity_archive_bytes',
  expandedBytes: 'verify_capacity_expanded_bytes',
  regularFileBytes: 'verify_capacity_regular_file_bytes',
  expansionRatio: 'verify_capacity_expansion_ratio',
  manifestBytes: 'verify_capacity_manifest_bytes',
  paxHeaderBytes: 'verify_capacity_pax_header_bytes',
  paxTotalBytes: 'verify_capacity_pax_total_bytes',
  jsonDepth: 'verify_capacity_json_depth',
  members: 'verify_capacity_members',
  pathComponents: 'verify_capacity_path_components',
  pathChars: 'verify_capacity_path_chars',
  pathComponentBytes: 'verify_capacity_path_component_bytes',
  linkHops: 'verify_capacity_link_hops',
  goals: 'verify_capacity_goals',
  sqliteFiles: 'verify_capacity_sqlite_files',
  goalHistory: 'verify_capacity_goal_history',
  components: 'verify_capacity_components',
  dependencyLinks: 'verify_capacity_dependency_links',
  freeSpace: 'verify_capacity_free_space',
  /** The audit itself (a saved audit is read back only up to 16 MiB). */
  auditBytes: 'verify_capacity_audit_bytes',
} as const;

/** Step 3 — member checks, on the planned list (lexically, before anything is written) and on every tar header. */
export const MEMBER_CODES = {
  absolute: 'member_path_absolute',
  traversal: 'member_path_traversal',
  /** Empty or `.` component, NUL, backslash, control character, not valid UTF-8, or outside the archive's top-level names. */
  invalid: 'member_path_invalid',
  duplicate: 'member_duplicate',
  caseCollision: 'member_case_collision',
  unicodeCollision: 'member_unicode_collision',
  /** Character/block device, FIFO, socket, or a type flag this verifier does not know. */
  specialType: 'member_special_type',
  sparse: 'member_sparse',
  hardlinkAmbiguous: 'member_hardlink_ambiguous',
  hardlinkUnsupported: 'member_hardlink_unsupported',
  linkEscapes: 'member_link_escapes',
  /** A member whose path passes through a symbolic-link member. */
  throughLink: 'member_through_link',
  /** A member whose parent directory is not a directory member extracted before it. */
  parentMissing: 'member_parent_missing',
  /**
   * A `-wal`, `-shm` or `-journal` name beside another file or link member (compared as on a
   * case-insensitive, normalizing file system): SQLite would read it as part of that member opened
   * as a database. The producer never archives one.
   */
  sqliteSidecar: 'member_sqlite_sidecar',
  /** A tar member the manifest does not list. */
  unplanned: 'member_unplanned',
  /** A manifest member the tar does not hold. */
  missing: 'member_missing',
  /** A tar member whose type, size or link target differs from the plan. */
  planMismatch: 'member_plan_mismatch',
  /** A regular file whose SHA-256 differs from the plan. */
  digestMismatch: 'member_digest_mismatch',
} as const;

/** The gzip and tar encodings. */
export const FORMAT_CODES = {
  gzipInvalid: 'archive_gzip_invalid',
  /** Bytes after the end of the gzip stream, or non-zero bytes after the tar end-of-archive marker. */
  trailingData: 'archive_trailing_data',
  truncated: 'archive_truncated',
  /**
   * The tar stream is not a whole number of 512-byte blocks: a partial block after the
   * end-of-archive marker (only whole zero blocks may follow it). Checked when the stream ends,
   * before its length is compared with the manifest's, so no declared length can make it pass.
   */
  framingInvalid: 'tar_framing_invalid',
  /** Bad checksum, magic, numeric field or name encoding. */
  headerInvalid: 'tar_header_invalid',
  /** A header this verifier will not interpret: PAX global header, unknown PAX key, GNU long name beside PAX, … */
  headerUnsupported: 'tar_header_unsupported',
} as const;

/** Step 5 — owner verification in the disposable worker. */
export const OWNER_CODES = {
  sqliteIntegrity: 'verify_sqlite_integrity_failed',
  configurationCheckpoint: 'verify_configuration_checkpoint_invalid',
  workerTimeout: 'verify_worker_timeout',
  workerFailed: 'verify_worker_failed',
} as const;

/** `backup-state audit show`. */
export const AUDIT_CODES = {
  notFound: 'audit_not_found',
  digestMismatch: 'audit_digest_mismatch',
  invalid: 'audit_invalid',
} as const;
