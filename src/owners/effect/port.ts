/**
 * The effect storage port: durable rows of effects, their append-only history, and the outbox.
 * Storage only — a port never validates a request, reads a clock or decides an outcome; the effect
 * owner (journal.ts over rules.ts) does, and hands the port finished rows. Implementations:
 * memory.ts, sqlite.ts (a new provider is a new file beside them). No driver type crosses this
 * file. The conformance suite test/owners/conformance/effect-port.conformance.ts checks every
 * guarantee below against each implementation.
 *
 * - snapshot_read: one `read` returns every row it names from one consistent state.
 * - revision: every change to an effect appends exactly one history row, so the `seq` of its
 *   latest history row is the effect's revision (1 after the intent).
 * - atomic_conditional_commit: `commit` lands every row of the write — the effect, its history
 *   row, its outbox change — or none, and only when the write's precondition holds on the current
 *   rows; otherwise `conflict` and nothing is written (see ../port.ts for the outcomes).
 *   Preconditions:
 *   - `create_effect`: no effect has the operation id or the idempotency key (else `exists`). The
 *     history row is seq 1 and the effect enters the outbox at `enqueued_at`.
 *   - `update_effect`: the effect exists (`missing`) and its revision is `transition.seq - 1`
 *     (`changed`). Only the state fields change (outcome, receipt, attempt, dispatched_at, hold,
 *     reconcile_attempts, settled_at); the identity fields (ids, Goal, kind, target, intent and its
 *     digest, created_at) are fixed at creation. `outbox` adds the effect at the end of the outbox
 *     (`{ add: enqueued_at }`), takes it out (`remove`) or leaves it (`keep`).
 * - evidence: history rows are never changed or removed, by any write.
 * - idempotent repeat: committing the same write again never applies it twice — its precondition
 *   no longer holds (`exists` / `changed`) and the rows stay as the first commit left them. The
 *   owner turns such a repeat into the readback its rules give.
 * - explicit_ambiguous_commit: a commit point that failed unprovably is `ambiguous`. Readback
 *   rule: the owner reads the effect back (`read`); it shows the write's after-image (the effect
 *   and its latest history row) exactly when the write landed, otherwise the outcome stays
 *   unproved and the caller retries the same request.
 * - `failed` means provably nothing was written.
 * - "Not found" is an absent field of `read` and an empty list, never an error. Reads reject with
 *   a typed LoopxError only for a closed port (`provider_closed`) or a row that does not decode
 *   (`effect_store_corrupt`), which a commit rejects with too.
 * - Rows come back as copies; changing one changes nothing stored.
 */
import type { CommitResult } from '../port.js';
import type { EffectRecord, EffectTransition, ListEffectsFilter, OutboxEntry } from './contract.js';

/** Which rows to read; each field names rows, and an absent one reads nothing for it. */
export interface EffectQuery {
  readonly operation_id?: string;
  readonly idempotency_key?: string;
}

export interface EffectRows {
  /** The effect `operation_id` names. */
  readonly effect?: EffectRecord;
  /** Its latest history row: `seq` is the effect's revision. */
  readonly last_transition?: EffectTransition;
  /** Its outbox entry, while it awaits its first dispatch. */
  readonly queued?: OutboxEntry;
  /** The effect holding `idempotency_key`, whichever operation it is. */
  readonly key_holder?: EffectRecord;
}

export type EffectOutboxChange = { readonly add: string } | 'remove' | 'keep';

export type EffectWrite =
  | {
      readonly op: 'create_effect';
      readonly effect: EffectRecord;
      readonly transition: EffectTransition;
      readonly enqueued_at: string;
    }
  | {
      readonly op: 'update_effect';
      readonly effect: EffectRecord;
      readonly transition: EffectTransition;
      readonly outbox: EffectOutboxChange;
    };

export interface EffectPort {
  /** The registered storage provider of this implementation (`registerStoreProvider`). */
  readonly provider: string;
  read(query: EffectQuery): Promise<EffectRows>;
  /** Effects in creation order, optionally of one Goal (or run scope) and one outcome. */
  listEffects(filter?: ListEffectsFilter): Promise<EffectRecord[]>;
  /** The outbox in enqueue order. */
  listOutbox(): Promise<OutboxEntry[]>;
  /** Effects whose outcome is `unknown`, or `pending` with a `dispatched_at`, in creation order. */
  listHolds(): Promise<EffectRecord[]>;
  /** An effect's history rows in `seq` order. */
  listHistory(operationId: string): Promise<EffectTransition[]>;
  commit(write: EffectWrite): Promise<CommitResult>;
  /** Releases the store; later reads reject and commits fail with `provider_closed`. Idempotent. */
  close(): void;
}
