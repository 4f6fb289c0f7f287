/**
 * The quota storage port: the durable rows of the spend ledger, one per settlement identity
 * (`effect_id`). Storage only — a port never validates a request, computes a digest, reads a
 * clock or decides a replay; the quota owner (quota.ts over rules.ts) does, and hands the port
 * finished entries. Implementations: memory.ts, sqlite.ts (a new provider is a new file beside
 * them). No driver type crosses this file. The conformance suite
 * test/owners/conformance/quota-port.conformance.ts checks every guarantee below against each one.
 *
 * - atomic_conditional_commit: `commit` lands the entry or nothing, and only when the write's
 *   precondition holds on the current rows; otherwise `conflict` and nothing is written (see
 *   port.ts for the outcomes). Preconditions:
 *   - `insert_spend`: no entry has the effect id (else `exists`) — an effect id debits once.
 *   - `void_spend`: the entry exists (`missing`), is `written` and has the same request digest
 *     (`changed`); the stored entry becomes the given one (status `voided`, its void time and
 *     reason). An entry is never deleted.
 * - idempotent repeat: committing the same write again never applies it twice (`exists` /
 *   `changed`), and the entry stays as the first commit left it.
 * - explicit_ambiguous_commit: a commit point that failed unprovably is `ambiguous`. Readback
 *   rule: the owner reads the entry back (`get`); it shows the write's after-image exactly when
 *   the write landed, otherwise the outcome stays unproved and the caller retries the same request.
 * - `failed` means provably nothing was written.
 * - `sumWritten` sums, per unit, the amounts of the `written` entries of the Goal (and of the
 *   lifetime, when given) whose `created_at` lies in [since, until) — `until` null: open-ended.
 *   `list` returns entries in creation order. Both read one consistent state.
 * - "Not found" is `undefined` from `get` and an empty list or sum, never an error. Reads reject
 *   with a typed LoopxError only for a closed port (`provider_closed`) or a row that does not
 *   decode (`quota_store_corrupt`).
 * - Entries come back as copies; changing one changes nothing stored.
 */
import type { CommitResult } from '../port.js';
import type { ListSpendsFilter, SpendEntry } from './contract.js';

/** A normalized total query: instants are canonical ISO-8601, null means "any" / open-ended. */
export interface SpendQuery {
  readonly goal_id: string;
  readonly goal_instance_id: string | null;
  readonly since: string;
  readonly until: string | null;
}

export interface SpendSums {
  /** Sum of written amounts per unit. */
  readonly totals: Readonly<Record<string, number>>;
  /** How many written entries were summed. */
  readonly entries: number;
}

export type QuotaWrite =
  | { readonly op: 'insert_spend'; readonly entry: SpendEntry }
  | { readonly op: 'void_spend'; readonly entry: SpendEntry };

export interface QuotaPort {
  /** The registered storage provider of this implementation (`registerStoreProvider`). */
  readonly provider: string;
  get(effectId: string): Promise<SpendEntry | undefined>;
  list(filter: ListSpendsFilter): Promise<SpendEntry[]>;
  sumWritten(query: SpendQuery): Promise<SpendSums>;
  commit(write: QuotaWrite): Promise<CommitResult>;
  /** Releases the store; later reads reject and commits fail with `provider_closed`. Idempotent. */
  close(): void;
}
