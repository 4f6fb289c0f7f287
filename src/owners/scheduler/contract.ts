/**
 * The scheduler owner's contract: Goal timers and their cadence (`scheduler.db` in a runtime
 * root), and the automations/ and skills/ directories, which are plain data.
 *
 * Failure modes — what each operation guarantees (the storage side is port.ts):
 * - Every write is atomic and durable when it resolves. A store that cannot confirm a write
 *   rejects with `store_outcome_unproved` (retry the same request: it applies at most once).
 * - `createTimer` with a `timer_id` is idempotent: the same creation request returns the existing
 *   timer (`replayed`); a different one fails with `timer_identity_mismatch`.
 * - Every change to a timer names its `reset_token`; a stale token fails with
 *   `timer_reset_token_stale` and changes nothing. `resetTimer` mints a new token (an identity
 *   reset), fencing whoever acted under the old one.
 * - `ackFire` acknowledges exactly one occurrence (`due_at` must be the timer's `next_due_at`)
 *   and advances to the first occurrence after the fire time: missed occurrences are skipped,
 *   never replayed. Acknowledging the same occurrence again is a readback (`replayed`); any
 *   other `due_at` fails with `timer_due_mismatch`. A disabled timer cannot fire.
 * - "Not found" is `undefined` from `getTimer`; a write naming a missing timer fails with
 *   `timer_not_found`.
 * - Automations and skills are listed by name only: nothing in them is read, loaded or executed,
 *   and every listed entry is disabled data.
 */
import type { OwnerFinding } from '../contract.js';

export const CADENCE_FREQUENCIES = ['MINUTELY', 'HOURLY', 'DAILY'] as const;
export type CadenceFrequency = (typeof CADENCE_FREQUENCIES)[number];

export interface Cadence {
  readonly freq: CadenceFrequency;
  readonly interval: number;
  /** The period in milliseconds. */
  readonly ms: number;
  /** Canonical text, e.g. `FREQ=MINUTELY;INTERVAL=5`. */
  readonly text: string;
}

export interface Timer {
  readonly timer_id: string;
  readonly goal_id: string;
  /** Canonical cadence, e.g. `FREQ=MINUTELY;INTERVAL=5`. */
  readonly cadence: string;
  readonly next_due_at: string;
  readonly enabled: boolean;
  readonly reset_token: string;
  /** The last occurrence acknowledged by `ackFire`, or null. */
  readonly last_fired_due_at: string | null;
  readonly created_at: string;
  readonly updated_at: string;
}

export interface CreateTimerRequest {
  readonly timer_id?: string;
  readonly goal_id: string;
  readonly cadence: string;
  /** The first occurrence (ISO-8601 instant). */
  readonly next_due_at: string;
  /** Default true. */
  readonly enabled?: boolean;
}

export interface AckFireRequest {
  readonly reset_token: string;
  /** The occurrence being acknowledged: the timer's current `next_due_at`. */
  readonly due_at: string;
}

export interface ResetTimerRequest {
  readonly expected_reset_token: string;
  readonly next_due_at: string;
  /** A new cadence; omitted: keep the current one. */
  readonly cadence?: string;
}

export interface TimerWriteResult {
  readonly timer: Timer;
  readonly replayed: boolean;
}

/**
 * The scheduler owner's live API (scheduler.ts), over any storage port (port.ts). Every method
 * answers with a Promise; a refusal is a rejection with a typed SchedulerError.
 */
export interface SchedulerStore {
  createTimer(request: CreateTimerRequest): Promise<TimerWriteResult>;
  getTimer(timerId: string): Promise<Timer | undefined>;
  /** Timers in creation order, optionally of one Goal. */
  listTimers(goalId?: string): Promise<Timer[]>;
  /** Enabled timers whose `next_due_at` is at or before `at`, earliest first. */
  dueTimers(at: string): Promise<Timer[]>;
  ackFire(timerId: string, request: AckFireRequest): Promise<TimerWriteResult>;
  setEnabled(timerId: string, enabled: boolean, expectedResetToken: string): Promise<Timer>;
  resetTimer(timerId: string, request: ResetTimerRequest): Promise<Timer>;
  /** Releases the store's port; later calls are refused (`provider_closed`). */
  close(): void;
}

export interface SchedulerStoreOptions {
  /** Clock for recorded timestamps and fire times (tests inject one). */
  readonly now?: () => Date;
}

/** Subjects are `<kind>:<id>` — ids and names only, never paths. */
export type SchedulerFinding = OwnerFinding;

export interface DataDirectoryEntry {
  readonly name: string;
  /** Always true: loopx never enables, loads or executes these; a current owner must. */
  readonly disabled: true;
}

export interface DataDirectoryListing {
  readonly kind: 'automations' | 'skills';
  /** Directory entries, sorted by name. */
  readonly entries: readonly DataDirectoryEntry[];
  readonly findings: readonly SchedulerFinding[];
}
