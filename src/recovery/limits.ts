/**
 * The verifier's bounds: RFC complete-state-recovery §12 "M1 capacity-default decision", frozen
 * for the local POSIX File/SQLite inert-inspection profile. The archive, path, inventory and
 * history bounds are the producer's (src/backup/limits.ts) — one table, so a backup this producer
 * publishes is always within what the verifier accepts. Each is enforced before publication with
 * the code in codes.ts.
 */
import { BACKUP_LIMITS } from '../backup/index.js';

const MiB = 1024 * 1024;

export const RECOVERY_LIMITS = {
  ...BACKUP_LIMITS,
  /** One PAX extended header's data. */
  paxHeaderBytes: 128 * 1024,
  /** All PAX extended headers of one archive. */
  paxTotalBytes: 16 * MiB,
  /** Nesting of any JSON document read (manifests, checkpoint, saved audit). */
  jsonDepth: 64,
  /** Symbolic-link resolution hops. */
  linkHops: 40,
  /** Components one audit may emit (1 configuration + 128 databases + 128 Goals + 1 remainder). */
  components: 258,
  dependencyLinks: 128,
  /**
   * Components of a v1 inventory: every owner boundary once per root and the Goal boundaries once
   * per Goal (6 + 2 × 128 — a root on PostgreSQL exports each Goal's work as a component of its
   * own), the unowned run kernel, the remainder. Also what the owner-verification worker takes.
   */
  v1Components: 2 * BACKUP_LIMITS.goals + 16,
  /** Each v1 Goal component links to three others at most. */
  v1DependencyLinks: 4 * BACKUP_LIMITS.goals + 16,
  /** Free space the destination must have beyond the regular-file bytes. */
  freeSpaceMarginBytes: 16 * MiB,
  /** The disposable owner-verification worker. */
  workerTimeoutMs: 90_000,
  workerOldSpaceMib: 512,
  sqliteHardHeapBytes: 64 * MiB,
  /** Characters the worker may print (its one JSON answer). */
  workerOutputChars: 2 * MiB,
  /** A saved audit read back by `audit show`. */
  savedAuditBytes: 16 * MiB,
} as const;

export type RecoveryLimitName = keyof typeof RECOVERY_LIMITS;
