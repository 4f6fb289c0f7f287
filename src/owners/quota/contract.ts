/**
 * The quota owner's contract: the spend ledger (`quota.db` in a runtime root). Each debit is
 * keyed by its settlement identity (`effect_id`, e.g. `<settlement effect_id>#quota_spend`).
 *
 * Failure modes — what each operation guarantees (the storage side is port.ts):
 * - Every write is atomic and durable when it resolves. A ledger that cannot confirm a write
 *   rejects with `store_outcome_unproved` (retry the same request: it debits at most once).
 * - `spend` never debits twice: the same `effect_id` with the same request digest returns the
 *   original entry with status `replayed` — also after the entry was voided; the same
 *   `effect_id` with a different request fails with `quota_spend_conflict` (kind conflict) and
 *   writes nothing.
 * - `void` marks an entry voided (it stays in the ledger as history). Voiding a voided entry is a
 *   readback (`replayed`); voiding a missing one fails with `quota_spend_not_found`.
 * - `total` sums only `written` entries whose `created_at` lies in [since, until).
 * - "Not found" is `undefined` from `get`.
 * - The ledger decides no policy and reads no clock for decisions; `created_at` is a recorded
 *   fact, and windows are given by the caller.
 */

export type SpendStatus = 'written' | 'voided';

export interface SpendRequest {
  /** The settlement identity of this debit. */
  readonly effect_id: string;
  readonly goal_id: string;
  readonly goal_instance_id: string;
  /** A positive integer in `unit` (e.g. turns, tokens, slots). */
  readonly amount: number;
  /** Lowercase name of the unit, e.g. `turn`, `token`, `slot`. */
  readonly unit: string;
}

export interface SpendEntry {
  readonly effect_id: string;
  readonly goal_id: string;
  readonly goal_instance_id: string;
  readonly amount: number;
  readonly unit: string;
  /** sha256 hex of the canonical JSON of the request (see `spendDigest`). */
  readonly request_digest: string;
  readonly status: SpendStatus;
  readonly created_at: string;
  readonly voided_at: string | null;
  /** Public-safe code, e.g. `turn_failed`. */
  readonly void_reason: string | null;
}

export interface SpendResult {
  /** `written`: this call debited. `replayed`: the original entry, nothing debited. */
  readonly status: 'written' | 'replayed';
  readonly entry: SpendEntry;
}

export interface VoidResult {
  readonly status: 'voided' | 'replayed';
  readonly entry: SpendEntry;
}

export interface QuotaGoal {
  readonly goal_id: string;
  /** Only this Goal lifetime; omitted: every lifetime of the alias. */
  readonly goal_instance_id?: string;
}

/** [since, until) as ISO-8601 instants; `until` omitted: open-ended. */
export interface QuotaWindow {
  readonly since: string;
  readonly until?: string;
}

export interface QuotaTotal {
  readonly goal_id: string;
  readonly goal_instance_id: string | null;
  readonly since: string;
  readonly until: string | null;
  /** Sum of written amounts per unit. */
  readonly totals: Readonly<Record<string, number>>;
  /** How many written entries were summed. */
  readonly entries: number;
}

export interface ListSpendsFilter {
  readonly goal_id?: string;
  readonly status?: SpendStatus;
}

/**
 * The quota owner's live API (quota.ts), over any storage port (port.ts). Every method answers
 * with a Promise; a refusal is a rejection with a typed QuotaError.
 */
export interface QuotaLedger {
  spend(request: SpendRequest): Promise<SpendResult>;
  void(effectId: string, reason: string): Promise<VoidResult>;
  get(effectId: string): Promise<SpendEntry | undefined>;
  /** Entries in creation order. */
  list(filter?: ListSpendsFilter): Promise<SpendEntry[]>;
  total(goal: string | QuotaGoal, window: QuotaWindow): Promise<QuotaTotal>;
  /** Releases the ledger's port; later calls are refused (`provider_closed`). */
  close(): void;
}

export interface QuotaLedgerOptions {
  /** Clock for recorded timestamps (tests inject one). */
  readonly now?: () => Date;
}
