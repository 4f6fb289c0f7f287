/**
 * The one recovery contract every owner of a runtime root implements — the second face of an
 * owner, beside its live API. Backup, the verifier's disposable worker, the audit, workspace
 * reads and (later) adoption reach an owner's captured state only through it, by iterating the
 * `OWNERS` table (table.ts); nothing outside `src/owners/` names an owner's files or switches on
 * its kind.
 *
 * Failure modes every implementation keeps:
 * - `readHistorical` and `verifyOffline` read COPIES only: no lock, no lease, no write to the copy
 *   (SQLite copies are made in the given scratch directory), no network, no authority. Damaged or
 *   missing data is a finding, never an exception; they throw only when the scratch file system is
 *   out of space (`isOutOfSpace`), which says nothing about the data.
 * - Every finding carries a code, one severity of one scale, a subject (ids and root-relative
 *   names — never absolute paths or payloads) and exactly one next action. A reader collects every
 *   finding; it neither stops at the first nor drops any.
 * - `capture` reads the live owner without changing it and writes only into the given new
 *   directory. Its result is evidence: the revision interval it observed (start and end), never a
 *   claim of a point in time it did not observe. Its export is canonical (sorted, RFC 8785 JSON
 *   records), bounded (the owner's capacity limit; over it `capture` fails with a typed capacity
 *   error and writes nothing durable) and digest-bound (a header, the records, a seal chaining them).
 * - Nothing here grants execution authority: `execution_authority_granted` is always false.
 *
 * A root whose Goal state lives in a database service (PostgreSQL) is captured from ONE read-only
 * snapshot of it shared by every component of the set (`LiveSource.service`): the owners with a
 * provider there export their rows as the whole of their component (`export_items: 'in_export'`,
 * no members), and `verifyOffline` checks such an export alone (`VerifyOfflineOptions.provider`),
 * with no connection to anything.
 *
 * Adoption actions (retain_historical, import_inert, rebind, reconcile, rebuild, discard) will be
 * one more optional member of `OwnerRecovery`, keyed by the same scope.
 */
import type { PgQuery } from '../store/index.js';

/** One severity scale for every owner. `hold`: sound, but a live owner must act before execution. */
export type FindingSeverity = 'error' | 'hold' | 'warning';

export interface OwnerFinding<Code extends string = string> {
  readonly code: Code;
  readonly severity: FindingSeverity;
  /** Ids and root-relative names only. */
  readonly subject: string;
  readonly next_action: string;
}

/** The boundary a backup component of `o` covers. */
export const boundaryOf = (o: Pick<OwnerRecovery, 'scope' | 'boundary'>): 'machine' | 'goal' => o.boundary ?? o.scope;

export const hasErrors = (findings: readonly { readonly severity: string }[]): boolean =>
  findings.some((f) => f.severity === 'error');

/** What an owner's state belongs to: the whole root (`machine`) or one Goal. */
export interface OwnerScope {
  /** null: the machine scope. */
  readonly goal_id: string | null;
}

export const MACHINE: OwnerScope = { goal_id: null };
export const goalScope = (goal_id: string): OwnerScope => ({ goal_id });

/** A copied root (an inert recovery workspace's runtime root, or a capture directory). */
export interface CopiedRoot {
  /** The directory laid out as a runtime root (LAYOUT). */
  readonly root: string;
  /** Where private SQLite copies are made (default: the OS temp directory). */
  readonly scratchDir?: string;
  /** The directory that holds root-adjacent members (e.g. the configuration checkpoint); default: none. */
  readonly beside?: string;
  /**
   * A component's export records where its state is the export alone (captured from a database
   * service, no member in `root`); undefined for an owner and scope whose state is in `root`.
   * `readHistorical` reads such a component from its export.
   */
  readonly exports?: (owner: string, scope: OwnerScope) => readonly unknown[] | undefined;
}

/** A member an owner keeps in a root, root-relative (POSIX), from LAYOUT. */
export interface OwnedMember {
  readonly path: string;
  readonly kind: 'sqlite' | 'file' | 'directory';
}

/** The classification an owner gives its component when it was read back soundly. */
export type ReadableClassification = 'recovered_readable' | 'historical_only';

/** The one result envelope of `readHistorical`. */
export interface HistoricalRead<T> {
  readonly owner: string;
  readonly scope: OwnerScope;
  /** The members could be opened and understood (findings may still hold errors). */
  readonly readable: boolean;
  /** Readable, and no error finding. */
  readonly ok: boolean;
  readonly schema_version: string | null;
  /** The store lineage the state belongs to (e.g. `sqlite:<hex>`), when the owner has one. */
  readonly source_identity: string | null;
  /** The owner's revision of what was read (its own CAS token, or `sha256:<hex>` of its canonical export). */
  readonly revision: string | null;
  /** The owner's position (commit cursor, or the export's record count). */
  readonly cursor: number | null;
  /** Counts for public output (no payloads). */
  readonly counts: Readonly<Record<string, number>>;
  /** The owner's own readback. History only. */
  readonly value: T;
  readonly findings: readonly OwnerFinding[];
  readonly execution_authority_granted: false;
}

/** One position of an owner: its revision and cursor, and when it was observed. */
export interface CapturePoint {
  readonly revision: string;
  /** Null where the owner has no cursor (documents). */
  readonly cursor: number | null;
  readonly at: string;
}

/** Where an owner export's records are: in the export itself, or rebuilt from the copied members. */
export type ExportItems = 'in_export' | 'from_copy';

/** The result of `capture`: evidence of what was copied and the interval it was copied in. */
export interface OwnerCapture {
  readonly owner: string;
  readonly scope: OwnerScope;
  /** The export's format, e.g. `loopx_session_export_v0`. */
  readonly export_schema: string;
  readonly source_identity: string | null;
  /** Observed before the copy began and after it ended; equal when nothing moved in between. */
  readonly start: CapturePoint;
  readonly end: CapturePoint;
  /** The revision and cursor of the state the members and export hold. */
  readonly captured: { readonly revision: string; readonly cursor: number };
  /** Root-relative members written into the capture directory. */
  readonly members: readonly string[];
  /**
   * Where the export's records are: `in_export` — `export` holds the header, every record and the
   * seal; `from_copy` — the records are the owner's canonical reading of the members it copied, so
   * `export` holds only the header and the seal, and `verifyOffline` rebuilds the records from the
   * copy and checks them against that seal.
   */
  readonly export_items: ExportItems;
  /** The canonical export: a header, the records (`in_export` only), a seal chaining them. */
  readonly export: readonly unknown[];
  /** Each record of `export`'s canonical JSON, as hashed into the chain (what a backup stores, encoded once). */
  readonly export_lines?: readonly string[];
  /** SHA-256 of the seal (which chains every record): the component's content digest. */
  readonly export_sha256: string;
  readonly record_count: number;
  /** Operations begun and not settled in the captured state (e.g. effects dispatched without an outcome). */
  readonly in_flight?: number;
  /** The service the state was read from (`postgresql`), when not the root's files. */
  readonly provider?: string;
}

/** One member as the offline verifier found it. */
export interface VerifiedMember {
  readonly path: string;
  readonly integrity: 'ok' | 'failed' | 'unreadable';
  /** SQLite members: whether the header says WAL mode. */
  readonly wal_header: boolean;
}

/** The result of `verifyOffline`: what the audit records of one owner scope. */
export interface OfflineVerification {
  readonly owner: string;
  readonly scope: OwnerScope;
  readonly members: readonly VerifiedMember[];
  /** Every member intact and read back with no error finding. */
  readonly ok: boolean;
  /** Null when the owner could not read its members at all (integrity failed first). */
  readonly readback: { readonly ok: boolean; readonly counts: Readonly<Record<string, number>> } | null;
  readonly source_identity: string | null;
  readonly revision: string | null;
  readonly cursor: number | null;
  /** Owner-specific facts the audit keeps privately (ids, statuses, counts — never payloads). */
  readonly facts: Readonly<Record<string, unknown>>;
  /** With a `from_copy` export: SHA-256 of the seal rebuilt from the copy (null when it could not be rebuilt). */
  readonly export_sha256?: string | null;
  readonly findings: readonly OwnerFinding[];
}

export interface VerifyOfflineOptions {
  /** The owner's export captured with the members (from `capture`), checked against the copy. */
  readonly export?: readonly unknown[];
  /** Where that export's records are (as `capture` said); `in_export` when not given. */
  readonly exportItems?: ExportItems;
  /** `full` runs SQLite's `integrity_check` instead of `quick_check` (the recovery verifier's check). */
  readonly integrity?: 'quick' | 'full';
  /** The service the component was captured from (`postgresql`): its export is its whole state, there are no members. */
  readonly provider?: string;
}

/**
 * A database service a root keeps its Goal state in, as a set capture reads it: one read-only
 * snapshot shared by every component (PostgreSQL: one REPEATABLE READ READ ONLY transaction held
 * open while the set is captured), and fresh reads of its current state for the end re-check.
 */
export interface LiveService {
  readonly provider: string;
  /** The store identity of the service's installation the snapshot read (`postgresql:<hex>`), when it has one. */
  readonly source_identity: string | null;
  /** Runs `fn` in the set's one snapshot (one statement sequence at a time). */
  snapshot<T>(fn: (q: PgQuery) => Promise<T>): Promise<T>;
  /** Runs `fn` in a fresh read-only transaction: the service's state now. */
  current<T>(fn: (q: PgQuery) => Promise<T>): Promise<T>;
}

/** Where one Goal's work lives when the Goal chose it (`goal create --work-provider`): the root's files, or a schema of a service, its rows under `store_key`. */
export type GoalWorkSource =
  | { readonly provider: string }
  | { readonly provider: string; readonly service: LiveService; readonly store_key: string };

/** The live side `capture` reads: a runtime root, and the service its Goal state lives in when it is not the root's files. */
export interface LiveSource {
  readonly root: string;
  readonly service?: LiveService;
  /** Goal id → where that Goal's work lives, for each Goal that chose (the work owner reads it before `service`). */
  readonly goalWork?: ReadonlyMap<string, GoalWorkSource>;
}

/** Whether `o` keeps its state in `live`'s service rather than in its members of the root. */
export const servedBy = (
  o: Pick<OwnerRecovery, 'providers'>,
  live: LiveSource,
): live is LiveSource & { service: LiveService } =>
  live.service !== undefined && (o.providers ?? []).includes(live.service.provider);

/**
 * Whether `o`'s state for `scope` is read from a service rather than from its members of the root:
 * where the Goal chose to keep it, if `o` lets a Goal choose and the Goal did, else the root's service.
 */
export function servedAt(
  o: Pick<OwnerRecovery, 'providers' | 'placedPerGoal'>,
  live: LiveSource,
  scope: OwnerScope,
): boolean {
  const own = o.placedPerGoal === true && scope.goal_id !== null ? live.goalWork?.get(scope.goal_id) : undefined;
  return own !== undefined ? 'service' in own : servedBy(o, live);
}

export interface OwnerRecovery<T = unknown> {
  readonly name: string;
  /** One sentence for operators: what this owner decides. */
  readonly decides: string;
  /** `machine`: one state per root; `goal`: one per Goal. */
  readonly scope: 'machine' | 'goal';
  /** The members it owns in a root for a scope (from LAYOUT). */
  members(scope: OwnerScope): readonly OwnedMember[];
  /** Whether a Goal's recovery requires this owner's state (it is then in every Goal's required closure). */
  readonly requiredForGoal: boolean;
  /**
   * Set where audits of `loopx_state_backup_v0` archives recorded this owner as optional before it
   * joined the required closure: those audits keep saying so, so that they stay identical.
   */
  readonly optionalInV0Audits?: true;
  /**
   * The boundary one backup component of this owner covers: `machine` (one per root) or `goal` (one
   * per Goal). Defaults to `scope`; an owner that keeps every Goal's state in one place of the root
   * (the goal owner's `goals/`) may still be captured Goal by Goal.
   */
  readonly boundary?: 'machine' | 'goal';
  /** Services (besides the root's files) this owner keeps its state in on a root that chose one (`postgresql`). */
  readonly providers?: readonly string[];
  /** Whether a Goal may keep this owner's state apart from its root's store (`LiveSource.goalWork` says where). */
  readonly placedPerGoal?: boolean;
  /**
   * Its captured cursor is a Goal's recovery point: how much of the Goal's work a recovery keeps
   * (the recovery drill's RPO figure reads it from the plan). One owner of the table says so.
   */
  readonly recoveryPoint?: true;
  /** Owners (earlier in the OWNERS table) whose state this owner's state refers to: a component depends on theirs. */
  readonly dependsOn: readonly string[];
  /** What a sound copy of its state is to a recovery. */
  readonly classification: ReadableClassification;
  /** Names what `verifyOffline` checks, as recorded in audits. */
  readonly verificationProfile: string;
  capture(live: LiveSource, scope: OwnerScope, into: string): Promise<OwnerCapture>;
  /**
   * The live owner's revision and cursor now, in the domain of `capture`'s start and end, read
   * without changing anything (a backup re-checks every component with it at the end of a set);
   * null when the owner holds no state there (its store was never created: a confirmed absence).
   */
  observe(live: LiveSource, scope: OwnerScope): Promise<CapturePoint | null>;
  verifyOffline(copy: CopiedRoot, scope: OwnerScope, options?: VerifyOfflineOptions): OfflineVerification;
  readHistorical(copy: CopiedRoot, scope: OwnerScope): HistoricalRead<T>;
}
