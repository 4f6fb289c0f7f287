/**
 * The goal contract: Goal identity (`goal_id` alias, `goal_instance_id` lifetime), lifecycle and
 * the Goal's documents. The goal owner is the identity authority; the registry holds the route,
 * which this owner keeps in step only through the registry's public API.
 *
 * - Document: `loopx_goal_v0` at `goals/<goal_id>/goal.json`; documents at
 *   `goals/<goal_id>/docs/<name>`, each recorded in goal.json with its SHA-256 and size (the
 *   record, not the file, says which bytes belong to the Goal).
 * - Lifetimes: `create` mints `ginst_` + 32 random lowercase hex. A live alias (active or paused)
 *   is `goal_exists` (conflict); a retired alias gets a NEW lifetime (a new instance id, no docs;
 *   the old lifetime's document files stay on disk as history, owned by no record); an instance
 *   id is never reused. `create` on a Goal whose registration was interrupted (goal.json
 *   written, route missing) with the same title completes the registration and returns that Goal.
 * - Transitions take a GoalRef and the lifecycle the caller saw. Another lifetime's ref is
 *   `goal_instance_mismatch`; a stale expected lifecycle is `goal_lifecycle_conflict`; an
 *   expected lifecycle the transition cannot start from is `goal_transition_invalid`; anything
 *   on a retired Goal is `goal_retired` (retired is final). A transition whose target already
 *   holds is a replay: it returns the record (and repairs the route status) without writing goal.json.
 * - Each change writes goal.json atomically and durably under the Goal's lock, then mirrors the
 *   status into the registry (re-reading on `registry_revision_conflict`, a bounded number of
 *   times: `goal_registry_busy`). A registry row of another live lifetime is `goal_route_conflict`.
 * - Not found: `get` is `undefined`; mutations on a missing Goal are `goal_not_found`.
 * - Documents: names are one safe path component (`goal_doc_name_invalid`); at most 16 MiB each
 *   (`goal_doc_too_large`) and 1,024 per Goal (`goal_docs_limit`). The file is written before the
 *   record; a crash between leaves the old record authoritative. `readDoc` refuses bytes that no
 *   longer match the record (`goal_doc_digest_mismatch`, `goal_doc_missing`).
 * - Fail closed: unknown schema_version/fields are `goal_unknown_schema`; other invalid content
 *   `goal_malformed`; a link or non-regular file `goal_unreadable`.
 */
import type { OwnerFinding } from '../contract.js';

export const GOAL_SCHEMA = 'loopx_goal_v0';

export type GoalLifecycle = 'active' | 'paused' | 'retired';

export interface GoalDoc {
  readonly doc_id: string;
  readonly kind: 'goal_doc';
  readonly name: string;
  readonly sha256: string;
  readonly bytes: number;
}

export interface GoalRecord {
  readonly schema_version: typeof GOAL_SCHEMA;
  readonly goal_id: string;
  readonly goal_instance_id: string;
  readonly title: string;
  readonly lifecycle: GoalLifecycle;
  readonly created_at: string;
  readonly updated_at: string;
  /** Sorted by name. */
  readonly docs: readonly GoalDoc[];
  /** A lifetime minted by a recovery: which lineage it continues and which lifetime it superseded. Absent: the first lifetime of its lineage. */
  readonly lineage?: GoalLineage;
  /**
   * This root's own record that the lifetime was superseded, from evidence the root itself saw (a
   * receiver refused its delivery `fence_stale` with a newer fence of its own lineage). Set once,
   * never cleared: the lifetime admits no writer and no lifecycle change from then on.
   */
  readonly superseded?: GoalSupersededHere;
}

/** Evidence a root recorded of its Goal lifetime's supersession. */
export interface GoalSupersededHere {
  readonly evidence: 'receiver_fence_stale';
  /** The receiver's newest fence for the lineage (above this lifetime's generation). */
  readonly newest_fence: number;
  readonly recorded_at: string;
}

/**
 * A Goal's lineage across lifetimes. `lineage_id` is stable (the first lifetime's instance id);
 * `generation` is 1 for the first lifetime and one more for each recovery, and is the delivery
 * fence the Goal's deliveries carry, so a receiver can refuse an older lifetime's sends.
 */
export interface GoalLineage {
  readonly lineage_id: string;
  readonly generation: number;
  readonly supersedes: { readonly goal_instance_id: string; readonly recovery_id: string } | null;
}

/** What `adoptLifetime` needs: the recovered Goal's title, lifecycle and documents, and the lifetime it supersedes. */
export interface AdoptLifetimeRequest {
  readonly goal_id: string;
  readonly title: string;
  readonly lifecycle: GoalLifecycle;
  readonly docs: readonly { readonly name: string; readonly bytes: Uint8Array }[];
  readonly recovery_id: string;
  /** The recovered lifetime's record (its lineage continues). */
  readonly supersedes: GoalRecord;
}

/** The exact pair every durable attachment to a Goal carries. */
export interface GoalRef {
  readonly goal_id: string;
  readonly goal_instance_id: string;
}

/**
 * Whether a ref may still act for its Goal: `current` (this lifetime, registered, not retired),
 * `goal_instance_mismatch` (another lifetime holds the alias), `goal_not_registered` (no such Goal,
 * or its route is missing), `retired`, `invalid` (not a well-formed GoalRef).
 */
export type BindingMatch = 'current' | 'goal_instance_mismatch' | 'goal_not_registered' | 'retired' | 'invalid';

export interface CreateGoalOptions {
  /** A registered project; default `default` (registered on first use). */
  readonly projectId?: string;
}

export interface GoalStore {
  create(goalId: string, title: string, options?: CreateGoalOptions): GoalRecord;
  get(goalId: string): GoalRecord | undefined;
  /** Sorted by goal_id. */
  list(): GoalRecord[];
  pause(ref: GoalRef, expected: GoalLifecycle): GoalRecord;
  resume(ref: GoalRef, expected: GoalLifecycle): GoalRecord;
  retire(ref: GoalRef, expected: GoalLifecycle): GoalRecord;
  addDoc(goalId: string, name: string, content: string | Uint8Array): GoalDoc;
  /** `undefined` when the Goal has no document of that name. */
  readDoc(goalId: string, name: string): Uint8Array | undefined;
  checkBinding(ref: GoalRef): BindingMatch;
  /** Record, once, that this lifetime was superseded (see `GoalRecord.superseded`); a repeat returns the record. Another lifetime's ref is `goal_instance_mismatch`. */
  recordSuperseded(ref: GoalRef, evidence: Omit<GoalSupersededHere, 'recorded_at'>): GoalRecord;
  /**
   * A recovery's new lifetime of a Goal in an empty root (`rebind`): a NEW instance id, the same
   * alias, title and documents, its lineage one generation on, the superseded lifetime recorded.
   * The same recovery again returns the lifetime it made (readback); any other Goal of that id
   * already here is `goal_adoption_conflict`.
   */
  adoptLifetime(request: AdoptLifetimeRequest): { readonly goal: GoalRecord; readonly replayed: boolean };
}

export type GoalFindingCode =
  | 'goal_unknown_schema'
  | 'goal_malformed'
  | 'goal_unreadable'
  | 'goal_id_mismatch'
  | 'goal_doc_missing'
  | 'goal_doc_digest_mismatch';

/** Subjects are relative member names — never an absolute path or a payload. */
export type GoalFinding = OwnerFinding<GoalFindingCode>;

/** Readback of a copied root: no locks, no writes, no authority. `ok` means no finding. */
export interface GoalHistoricalRead {
  readonly ok: boolean;
  /** Every goal.json that decoded, sorted by goal_id. */
  readonly goals: readonly GoalRecord[];
  readonly findings: readonly GoalFinding[];
}
