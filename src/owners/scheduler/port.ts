/**
 * The scheduler storage port: the durable rows of Goal timers. Storage only — a port never parses
 * a cadence, mints a reset token, reads a clock or decides a fire; the scheduler owner
 * (scheduler.ts over rules.ts) does, and hands the port finished rows. Implementations:
 * memory.ts, sqlite.ts (a new provider is a new file beside them). No driver type crosses this
 * file. The conformance suite test/owners/conformance/scheduler-port.conformance.ts checks every
 * guarantee below against each implementation.
 *
 * - atomic_conditional_commit: `commit` lands the row or nothing, and only when the write's
 *   precondition holds on the current row; otherwise `conflict` and nothing is written (see
 *   port.ts for the outcomes). Preconditions:
 *   - `insert_timer`: no timer has the id (else `exists`).
 *   - `update_timer`: the timer exists (`missing`) and is field for field the `expected` row the
 *     decision read (`changed`) — so the reset-token fence and acknowledge-once hold against any
 *     writer in between. The stored row becomes `timer`, which keeps the id, Goal, creation
 *     digest and creation time of `expected` (those never change).
 * - idempotent repeat: committing the same write again never applies it twice (`exists` /
 *   `changed`), and the row stays as the first commit left it.
 * - explicit_ambiguous_commit: a commit point that failed unprovably is `ambiguous`. Readback
 *   rule: the owner reads the timer back (`get`); it shows the write's after-image exactly when
 *   the write landed, otherwise the outcome stays unproved and the caller retries the same request.
 * - `failed` means provably nothing was written.
 * - `list` returns timers in creation order; `due(at)` the enabled timers whose `next_due_at` is
 *   at or before `at` (canonical ISO-8601 instants compare as text), earliest first, ties in
 *   creation order. Each reads one consistent state.
 * - "Not found" is `undefined` from `get` and an empty list, never an error. Reads reject with a
 *   typed LoopxError only for a closed port (`provider_closed`) or a row that does not decode
 *   (`scheduler_store_corrupt`).
 * - Rows come back as copies; changing one changes nothing stored.
 */
import type { CommitResult } from '../port.js';
import type { Timer } from './contract.js';

/** A timer as stored: with the digest of the request that created it (its creation identity). */
export interface StoredTimer extends Timer {
  readonly create_digest: string;
}

export type SchedulerWrite =
  | { readonly op: 'insert_timer'; readonly timer: StoredTimer }
  | { readonly op: 'update_timer'; readonly expected: StoredTimer; readonly timer: StoredTimer };

export interface SchedulerPort {
  /** The registered storage provider of this implementation (`registerStoreProvider`). */
  readonly provider: string;
  get(timerId: string): Promise<StoredTimer | undefined>;
  /** Timers in creation order, optionally of one Goal. */
  list(goalId?: string): Promise<StoredTimer[]>;
  /** Enabled timers due at or before `at` (a canonical instant), earliest first. */
  due(at: string): Promise<StoredTimer[]>;
  commit(write: SchedulerWrite): Promise<CommitResult>;
  /** Releases the store; later reads reject and commits fail with `provider_closed`. Idempotent. */
  close(): void;
}
